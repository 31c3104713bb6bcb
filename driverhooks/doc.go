// Package driverhooks is the notifier channel that keeps the pin cache coherent: a
// userfaultfd monitor that learns of munmap, mremap, MAP_FIXED and madvise before they
// return, explicit invalidation hooks, the invalidated flag checked by every lookup, and
// the page-frame oracle used to prove there are no stale hits.
//
// driverhooks imports nothing of goportals.
package driverhooks
