// Package tests holds the conformance suite runner that executes the Portals 4
// declarative test corpus against package portals, and Go-native conformance tests.
//
// # The script interpreter
//
// ParseFile reads a script (encoding/xml, keeping each element's line and its
// attributes in document order) and checks every element and attribute name, so a
// broken script fails with its file and line before anything runs. A value that
// its attribute's symbol table lacks reads as the reference harness reads it (strtol:
// its leading number, else 0); Script.UnknownSymbols lists such values, which the
// runner reports as warnings, or as failures with Options.Strict. Run interprets it
// in this process as one rank of a job: like the reference interpreter (its run.c),
// every element starts from a copy of its parent's parameter record (defaults: NI
// options MATCH|PHYSICAL, desired max_msg_size 32 KiB, eq_count 10, time 10 ms,
// atom_op SUM, type UINT8, length 1), attributes set fields, scoped elements
// (ptl, ptl_ni, ptl_pt, ptl_md, ptl_le, ptl_me, ptl_eq, ptl_ct, with count=) allocate,
// run their children and free in reverse order, each MD/LE/ME gets a zeroed buffer of
// the NI's actual max_msg_size, and the handles an element allocates are pushed on
// object stacks that descendants name as md[0], ct[1]. Numbers parse as C's strtoull
// (automatic base, saturating); data values (md_data, operand, ...) are read in the
// element's final type, whatever the attribute order. Control elements: repeat,
// threads (goroutines, $thread_id), msleep, if/else, ifdef, arg_check, barrier and
// ompi_rt (through the launcher's bootstrap), get_time, set and check.
//
// Each call element makes its PtlXxx call through package portals/ptl, the one-for-one
// mirror of portals4.h over the Go API (ptl_init is ptl.Init, which under the
// launcher joins the job through the same shared bootstrap connection the runner
// uses for barriers and ompi_rt), and compares the Portals code of its error
// (portals.ErrnoOf) with ret=; check compares event fields, counter values, limits,
// ids and buffer contents. The first mismatch fails the test with its line. A call
// that panics is caught and reported with the panicking file and line in portals.
// Constructs with no Go counterpart (C pointers, raw numeric handles) make the test a
// skip with the reason; PTL_INVALID_HANDLE maps to a zero-value handle, which the API
// documents as naming no object.
//
// # The runner
//
// Discover lists scripts (the process count comes from the nearest enclosing folder
// named test_nN); RunCase runs one in fresh processes under internal/bootstrap's
// Launch with a timeout, each rank being a program that calls ChildMain when IsChild
// (cmd/ptltest is that program and the command-line front end).
//
// # Native conformance tests
//
// The _test files also hold two-rank scenarios written against the Go API for what
// the corpus does not cover (matching order across the priority and overflow lists,
// recovery from flow control, chains of triggered operations); each rank is this test
// binary re-executed under bootstrap.Launch.
package tests
