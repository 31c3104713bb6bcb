/*
 * goapi.h: the functions libgoportals.so (capi/golib) exports to the shim, as
 * one X-macro list. The shim turns the list into a table of function pointers
 * filled by dlsym; check.c compares each entry with the prototype cgo
 * generated, so the two sides cannot drift apart silently.
 *
 * Handles cross as slot numbers; GOPTL_NO_SLOT stands for PTL_EQ_NONE,
 * PTL_CT_NONE and "not triggered". ptl_process_t crosses as its 8 bytes in a
 * uint64_t and user pointers as uint64_t.
 */
#ifndef GOPORTALS_GOAPI_H
#define GOPORTALS_GOAPI_H

#include <stdint.h>
#include "portals4.h"
#include "portals4_goportals.h"

#define GOPTL_NO_SLOT ((uint32_t)0xffffffffu)

/* The shim's function that frees the slot of a handle if the handle still
 * names that slot's live object (the Go library calls it when the engine
 * unlinks an entry itself). */
#ifndef GOPTL_RELEASE_FN
#define GOPTL_RELEASE_FN
typedef void (*goptl_release_fn)(uint32_t handle);
#endif

#define GOPTL_FUNCS(X)                                                                         \
    X(int, goptl_Init, (int ownPMI, goptl_release_fn release))                                 \
    X(void, goptl_Fini, (int last))                                                            \
    X(void, goptl_Exit, (void))                                                                \
    X(int, goptl_NIInit, (uint32_t slot, ptl_interface_t iface, unsigned int options,          \
                          ptl_pid_t pid, ptl_ni_limits_t *desired, ptl_ni_limits_t *actual,    \
                          uint32_t *got))                                                      \
    X(int, goptl_NIFini, (uint32_t slot, int *gone))                                           \
    X(int, goptl_NIStatus, (uint32_t slot, int sr, ptl_sr_value_t *status))                    \
    X(int, goptl_SetMap, (uint32_t slot, ptl_size_t size, ptl_process_t *mapping))             \
    X(int, goptl_GetMap, (uint32_t slot, ptl_size_t size, ptl_process_t *mapping,              \
                          ptl_size_t *actual))                                                 \
    X(int, goptl_PTAlloc, (uint32_t slot, unsigned int options, uint32_t eqSlot,               \
                           ptl_pt_index_t req, ptl_pt_index_t *idx))                           \
    X(int, goptl_PTFree, (uint32_t slot, ptl_pt_index_t idx))                                  \
    X(int, goptl_PTEnable, (uint32_t slot, ptl_pt_index_t idx))                                \
    X(int, goptl_PTDisable, (uint32_t slot, ptl_pt_index_t idx))                               \
    X(int, goptl_GetUid, (uint32_t slot, ptl_uid_t *uid))                                      \
    X(int, goptl_GetId, (uint32_t slot, int phys, ptl_process_t *id))                          \
    X(int, goptl_MDBind, (uint32_t niSlot, ptl_md_t *md, uint32_t eqSlot, uint32_t ctSlot,     \
                          uint32_t slot))                                                      \
    X(int, goptl_MDRelease, (uint32_t slot))                                                   \
    X(int, goptl_MEAppend, (uint32_t niSlot, ptl_pt_index_t idx, ptl_me_t *me,                 \
                            uint32_t ctSlot, int list, uint64_t userPtr, uint32_t slot,        \
                            uint32_t handle))                                                  \
    X(int, goptl_LEAppend, (uint32_t niSlot, ptl_pt_index_t idx, ptl_le_t *le,                 \
                            uint32_t ctSlot, int list, uint64_t userPtr, uint32_t slot,        \
                            uint32_t handle))                                                  \
    X(int, goptl_MEUnlink, (uint32_t slot, uint32_t handle, int le))                           \
    X(int, goptl_MESearch, (uint32_t niSlot, ptl_pt_index_t idx, ptl_me_t *me,                 \
                            uint32_t ctSlot, int sop, uint64_t userPtr))                       \
    X(int, goptl_LESearch, (uint32_t niSlot, ptl_pt_index_t idx, ptl_le_t *le,                 \
                            uint32_t ctSlot, int sop, uint64_t userPtr))                       \
    X(int, goptl_EQAlloc, (uint32_t niSlot, ptl_size_t count, uint32_t slot))                  \
    X(int, goptl_EQFree, (uint32_t slot))                                                      \
    X(int, goptl_EQGet, (uint32_t slot, ptl_event_t *ev, int wait))                            \
    X(int, goptl_EQPoll, (uint32_t *slots, unsigned int size, ptl_time_t timeout,              \
                          ptl_event_t *ev, unsigned int *which))                               \
    X(int, goptl_CTAlloc, (uint32_t niSlot, uint32_t slot))                                    \
    X(int, goptl_CTFree, (uint32_t slot))                                                      \
    X(int, goptl_CTCancelTriggered, (uint32_t slot))                                           \
    X(int, goptl_CTGet, (uint32_t slot, ptl_ct_event_t *ev))                                   \
    X(int, goptl_CTValueAddr, (uint32_t slot, uintptr_t *addr))                               \
    X(int, goptl_CTWait, (uint32_t slot, ptl_size_t test, ptl_ct_event_t *ev))                 \
    X(int, goptl_CTPoll, (uint32_t *slots, ptl_size_t *tests, unsigned int size,               \
                          ptl_time_t timeout, ptl_ct_event_t *ev, unsigned int *which))        \
    X(int, goptl_CTSet, (uint32_t slot, ptl_size_t success, ptl_size_t failure, int inc))      \
    X(int, goptl_TriggeredCTSet, (uint32_t slot, ptl_size_t success, ptl_size_t failure,       \
                                  int inc, uint32_t trig, ptl_size_t threshold))               \
    X(int, goptl_Put, (uint32_t mdSlot, ptl_size_t loff, ptl_size_t length, int ack,           \
                       uint64_t target, ptl_pt_index_t idx, ptl_match_bits_t match,            \
                       ptl_size_t roff, uint64_t userPtr, ptl_hdr_data_t hdr, uint32_t trig,   \
                       ptl_size_t threshold))                                                  \
    X(int, goptl_Get, (uint32_t mdSlot, ptl_size_t loff, ptl_size_t length, uint64_t target,   \
                       ptl_pt_index_t idx, ptl_match_bits_t match, ptl_size_t roff,            \
                       uint64_t userPtr, uint32_t trig, ptl_size_t threshold))                 \
    X(int, goptl_Atomic, (uint32_t mdSlot, ptl_size_t loff, ptl_size_t length, int ack,        \
                          uint64_t target, ptl_pt_index_t idx, ptl_match_bits_t match,         \
                          ptl_size_t roff, uint64_t userPtr, ptl_hdr_data_t hdr, int aop,      \
                          int dt, uint32_t trig, ptl_size_t threshold))                        \
    X(int, goptl_FetchAtomic, (uint32_t getSlot, ptl_size_t goff, uint32_t putSlot,            \
                               ptl_size_t poff, ptl_size_t length, uint64_t target,            \
                               ptl_pt_index_t idx, ptl_match_bits_t match, ptl_size_t roff,    \
                               uint64_t userPtr, ptl_hdr_data_t hdr, int swap, void *operand,  \
                               int aop, int dt, uint32_t trig, ptl_size_t threshold))          \
    X(int, goptl_Bundle, (uint32_t slot, int end))                                             \
    X(int, goptl_AtomicSync, (void))                                                           \
    X(int, goptl_CacheStats, (uint32_t slot, goportals_cache_stats_t *stats))

#endif
