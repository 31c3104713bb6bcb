/*
 * portals4_goportals.h: what libportals.so.4 offers beyond portals4.h. Nothing
 * here is part of Portals 4; programs that use it run only on goportals.
 */
#ifndef PORTALS4_GOPORTALS_H
#define PORTALS4_GOPORTALS_H

#include <stdint.h>
#include "portals4.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The counters of an NI's pin cache. */
typedef struct {
    uint64_t hits;          /* lookups served by a cached registration */
    uint64_t misses;        /* lookups that registered memory */
    uint64_t evictions;     /* unused registrations dropped for the limits */
    uint64_t invalidations; /* registrations dropped because their pages changed */
    uint64_t stale_in_use;  /* registrations invalidated while a transfer used them */
    uint64_t fallbacks;     /* per-operation (uncached) registrations */
    uint64_t stale_hits;    /* hits whose page frames had changed (counted only with
                               PTL_CHECK_PFN=1); nonzero is a coherence bug */
    uint64_t entries;       /* registrations cached now */
    uint64_t pinned_bytes;  /* bytes they pin */
} goportals_cache_stats_t;

/* goportals_cache_stats fills *stats with the pin cache counters of ni. */
int goportals_cache_stats(ptl_handle_ni_t ni_handle, goportals_cache_stats_t *stats);

/* goportals_go_calls returns how many calls the calling thread has made from
 * libportals.so.4 into the Go library so far: each is one C-to-Go transition.
 * Calls the shim answers in C (handle checks, PtlHandleIsEqual, PtlNIHandle, a
 * PtlCTGet that finds a new value, a satisfied PtlCTWait or PtlCTPoll) add
 * nothing, so a program can count what a sequence of calls costs. */
uint64_t goportals_go_calls(void);

#ifdef __cplusplus
}
#endif

#endif /* PORTALS4_GOPORTALS_H */
