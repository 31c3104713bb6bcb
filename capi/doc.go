// Package capi holds the Portals 4 C ABI of goportals and its tests; it has no
// Go API of its own. The pieces:
//
//   - include/portals4.h: the header C programs compile against, with the
//     numeric values and structure layouts of the Portals 4 reference
//     implementation's header;
//   - shim/: libportals.so.4, a C library that loads the Go library at the
//     first PtlInit, owns the handle tables and forwards each call;
//   - golib/: libgoportals.so, the Go library (-buildmode=c-shared) over
//     package portals/ptl;
//   - tests/: C tests and the C put-latency benchmark; bench/putlat: the same
//     benchmark through the Go API;
//   - Makefile: `make -C capi PREFIX=DIR install`.
//
// The Go tests of this package build and install everything into a temporary
// prefix, compile the C tests with pkg-config and run them (see README.md for
// the limits of a Go c-shared library inside a C process).
package capi
