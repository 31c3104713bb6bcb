// Command golib is the Go half of libportals.so.4, the Portals 4 C ABI of
// goportals. It is built with -buildmode=c-shared into libgoportals.so, which
// the C shim (capi/shim) loads with dlopen at the first PtlInit.
//
// Each exported goptl_* function is one PtlXxx call forwarded to package
// portals/ptl, with the C structures of capi/include/portals4.h translated to
// their Go counterparts. Handles are slot numbers the shim allocates: the shim
// checks a handle's type and liveness in C, then passes the slot; this package
// keeps the Go object of each slot (table.go). A panic inside a call is
// recovered and returned as PTL_FAIL with a message on standard error.
//
// Memory given by C (ptl_md_t.start, ptl_me_t.start, I/O vectors) becomes a Go
// slice over the same bytes, so transfers go straight to and from the C
// program's buffers; a range that cannot be a slice (start NULL with length
// PTL_SIZE_MAX, the "all of memory" descriptor) is bound as a raw address range.
//
// Counting events are read by the shim in C, at the address goptl_CTValueAddr
// gives once per counter. The waits a C thread calls spin here without yielding
// before they use the engine's waits (wait.go): a yield on a C thread's locked
// goroutine costs two context switches. PtlInit leaves the launcher's PMI
// connection to a program that speaks PMI itself (pmi.go).
//
// The package must not import internal engine packages: it speaks only to
// portals and portals/ptl.
package main
