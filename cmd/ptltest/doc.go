// Command ptltest runs Portals 4 declarative conformance test scripts (the XML
// tests of the Portals 4 reference implementation) against goportals.
//
// Usage:
//
//	ptltest [-np N] [-timeout D] [-j N] [-v] [-strict] [-junit FILE] PATH...
//
// PATH is a test file or a folder searched recursively for *.xml files; a folder
// that holds none is an error. Each test runs on the number of processes of the
// nearest enclosing folder named test_nN (else 1), unless -np (at least 1) is given;
// every test runs in fresh processes — ptltest starts itself once per rank under the
// launcher (internal/bootstrap) — and under a per-test timeout, so a hang is a
// failure and not a stuck run. -j runs that many tests at once. ptltest prints one
// line per test, "PASS|FAIL|SKIP name (reason)", then "N passed, N failed, N
// skipped", and exits with status 1 when a test failed (2 for a usage error). -junit
// writes a JUnit XML report; -v passes each rank's trace of calls and checks to
// standard error.
//
// A script that is not well-formed, or that uses an unknown element or attribute,
// fails with its file and line. A word that its attribute's symbol table lacks
// (atom_op="XOR") reads as the reference's harness reads it, with strtol — its
// leading number, else 0 — and ptltest prints "WARN file:line: unknown symbol ..."
// before the test's result line; -strict fails such a test instead, without running
// it. A script using a construct with no Go counterpart (C pointers, numeric handles,
// PtlNIHandle) is skipped with the reason.
package main
