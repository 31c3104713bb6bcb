// Package regcache is the LRU pin cache: it keeps registrations of address ranges
// alive across operations, looks them up by containment in an interval index, bounds
// them by count, bytes and RLIMIT_MEMLOCK, and drops them when driverhooks reports that
// the pages behind a range changed.
//
// regcache imports driverhooks; it never imports md or portals.
package regcache
