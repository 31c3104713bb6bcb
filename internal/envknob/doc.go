// Package envknob is the one place goportals reads its PTL_* environment
// variables. Each variable is a Name registered here with its default, the values
// it accepts, a one-line description and the package that reads it; the packages
// read them only through Lookup and Get, never through os.Getenv, so the table
// that All returns (and that the README prints, checked by a test) is the whole
// list.
//
// What a value means, and the error a bad one gives, stays with the package that
// reads it (regcache validates its sizes, driverhooks its backend names, and so
// on): envknob only names, documents and reads. A bad value fails loudly in that
// package, naming the variable and the values it accepts.
//
// Variables that a test re-executes itself with to mark the child process (for
// example driverhooks' PTL_SECCOMP_CHILD) are private to that test and are not
// knobs; variables a person sets to change how tests run are, and are registered
// with Test set.
//
// envknob imports only the standard library.
package envknob
