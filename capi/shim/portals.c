/*
 * libportals.so.4: the Portals 4 C ABI of goportals.
 *
 * This shim holds no Go code. At the first PtlInit it loads libgoportals.so
 * (the Go library, built with -buildmode=c-shared) with dlopen and looks up the
 * functions of goapi.h. It owns the handle namespace: a handle is
 * type << 29 | generation << 20 | slot (3, 9 and 20 bits), and the slot table
 * below records, for each live slot, its type, its generation and its NI, so
 * handle checks, PtlNIHandle and PtlHandleIsEqual are
 * answered here without entering Go. Counting events are read here too, in the
 * cell where the engine keeps each counter's value (see "Counter values"):
 * PtlCTGet of a changed value and satisfied PtlCTWait and PtlCTPoll calls stay
 * in C. Every other call is forwarded with slot numbers. The Go library keeps
 * the Go object of each slot.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portals4.h"
#include "portals4_goportals.h"
#include "goapi.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- Layouts portals4.h promises ----------------------------------------- */

_Static_assert(sizeof(ptl_process_t) == 8, "ptl_process_t is 8 bytes");
_Static_assert(sizeof(ptl_event_t) == 80, "ptl_event_t is 80 bytes");
_Static_assert(offsetof(ptl_event_t, initiator) == 56, "ptl_event_t.initiator");
_Static_assert(offsetof(ptl_event_t, type) == 72, "ptl_event_t.type");
_Static_assert(offsetof(ptl_event_t, atomic_type) == 76, "ptl_event_t.atomic_type");
_Static_assert(offsetof(ptl_ni_limits_t, max_cts) < offsetof(ptl_ni_limits_t, max_eqs),
               "max_cts before max_eqs");
_Static_assert(sizeof(ptl_ni_limits_t) == 96, "ptl_ni_limits_t is 96 bytes");
_Static_assert(sizeof(ptl_md_t) == 32, "ptl_md_t is 32 bytes");
_Static_assert(sizeof(ptl_me_t) == 64, "ptl_me_t is 64 bytes");
_Static_assert(sizeof(ptl_le_t) == 32, "ptl_le_t is 32 bytes");
_Static_assert(sizeof(ptl_ct_event_t) == 16, "ptl_ct_event_t is 16 bytes");
_Static_assert(offsetof(ptl_ct_event_t, success) == 0 && offsetof(ptl_ct_event_t, failure) == 8,
               "ptl_ct_event_t: success, then failure (the engine's counter cell)");
_Static_assert(sizeof(ptl_handle_any_t) == 4, "handles are 32 bits");

/* ---- Handles ---------------------------------------------------------------- */

enum htype { T_EQ = 1, T_CT = 2, T_NI = 3, T_MD = 4, T_LE = 5, T_ME = 6 };

#define TYPE_SHIFT 29
#define GEN_SHIFT 20
#define GEN_MASK 0x1ffu
#define SLOT_BITS 20
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
/* Slot 0xfffff is never handed out: with type 1 or 2 and generation 0x1ff it
 * would spell PTL_EQ_NONE or PTL_CT_NONE. */
#define MAX_SLOTS (CHUNK_SIZE * CHUNK_SIZE - 1)

/* A slot word: bit 0 live, bits 1-3 type, bits 4-12 the slot's generation
 * (bumped at each release, so a stale handle is refused rather than naming
 * the slot's next object), bits 32-63 the NI handle. */
static _Atomic(_Atomic uint64_t *) chunks[CHUNK_SIZE];

static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
/* Released slots wait in a FIFO ring and a fresh slot is preferred while fewer
 * than FREE_MIN wait: a slot comes back into use only after FREE_MIN others
 * were released after it, so a stale handle names a live object again only
 * after 512 (the generations) * FREE_MIN releases, not after 512. */
#define FREE_MIN 65536u
static uint32_t *free_slots; /* ring of released slots, oldest at free_head */
static uint32_t free_head, n_free, cap_free;
static uint32_t next_slot;

static inline _Atomic uint64_t *cell(uint32_t slot)
{
    if (slot >= MAX_SLOTS)
        return NULL;
    _Atomic uint64_t *c = atomic_load_explicit(&chunks[slot >> CHUNK_BITS], memory_order_acquire);
    return c ? &c[slot & (CHUNK_SIZE - 1)] : NULL;
}

static inline uint32_t word_gen(uint64_t w) { return (uint32_t)(w >> 4) & GEN_MASK; }

/* mkhandle is the handle of the object in slot (of type t, at the slot's
 * current generation). */
static inline uint32_t mkhandle(enum htype t, uint32_t slot)
{
    return ((uint32_t)t << TYPE_SHIFT) | (word_gen(atomic_load(cell(slot))) << GEN_SHIFT) | slot;
}

/* slot_alloc returns a free slot with its chunk present, or -1. */
static int64_t slot_alloc(void)
{
    int64_t s = -1;
    pthread_mutex_lock(&slot_mu);
    if (n_free < FREE_MIN && next_slot < MAX_SLOTS) {
        uint32_t ci = next_slot >> CHUNK_BITS;
        if (atomic_load(&chunks[ci]) == NULL) {
            _Atomic uint64_t *c = calloc(CHUNK_SIZE, sizeof *c);
            if (c)
                atomic_store_explicit(&chunks[ci], c, memory_order_release);
        }
        if (atomic_load(&chunks[ci]) != NULL)
            s = next_slot++;
    }
    if (s < 0 && n_free > 0) {
        s = free_slots[free_head];
        free_head = (free_head + 1) % cap_free;
        n_free--;
    }
    pthread_mutex_unlock(&slot_mu);
    return s;
}

/* release_locked kills slot, bumps its generation and queues it as free.
 * Called with slot_mu held. */
static void release_locked(_Atomic uint64_t *c, uint32_t slot)
{
    atomic_store(c, (uint64_t)((word_gen(atomic_load(c)) + 1) & GEN_MASK) << 4);
    if (n_free == cap_free) {
        uint32_t ncap = cap_free ? cap_free * 2 : 256;
        uint32_t *nf = malloc(ncap * sizeof *nf);
        if (!nf) /* the slot is lost, not reused: safe */
            return;
        for (uint32_t i = 0; i < n_free; i++)
            nf[i] = free_slots[(free_head + i) % cap_free];
        free(free_slots);
        free_slots = nf, cap_free = ncap, free_head = 0;
    }
    free_slots[(free_head + n_free) % cap_free] = slot;
    n_free++;
}

/* slot_release kills slot, bumps its generation and makes it free again. */
static void slot_release(uint32_t slot)
{
    _Atomic uint64_t *c = cell(slot);
    if (!c)
        return;
    pthread_mutex_lock(&slot_mu);
    release_locked(c, slot);
    pthread_mutex_unlock(&slot_mu);
}

/* handle_release releases the slot of handle h if h still names the live
 * object of that slot, and does nothing otherwise: the Go library calls it
 * when the engine unlinks an entry itself (use-once, min_free), which may race
 * with an explicit unlink or a teardown sweep; a released, reused slot is left
 * alone. */
static void handle_release(uint32_t h)
{
    _Atomic uint64_t *c = cell(h & SLOT_MASK);
    if (!c)
        return;
    pthread_mutex_lock(&slot_mu);
    uint64_t w = atomic_load(c);
    if ((w & 1) && ((w >> 1) & 7) == (h >> TYPE_SHIFT) && word_gen(w) == ((h >> GEN_SHIFT) & GEN_MASK))
        release_locked(c, h & SLOT_MASK);
    pthread_mutex_unlock(&slot_mu);
}

/* slot_set makes slot live with type t and NI ni, keeping its generation. */
static void slot_set(uint32_t slot, enum htype t, ptl_handle_ni_t ni)
{
    _Atomic uint64_t *c = cell(slot);
    uint64_t gen = (uint64_t)word_gen(atomic_load(c)) << 4;
    atomic_store(c, 1u | ((uint64_t)t << 1) | gen | ((uint64_t)ni << 32));
}

/* live_word returns the word of handle h when h names a live object, else 0. */
static inline uint64_t live_word(ptl_handle_any_t h)
{
    _Atomic uint64_t *c = cell(h & SLOT_MASK);
    if (!c)
        return 0;
    uint64_t w = atomic_load_explicit(c, memory_order_acquire);
    if (!(w & 1) || ((w >> 1) & 7) != (h >> TYPE_SHIFT) || word_gen(w) != ((h >> GEN_SHIFT) & GEN_MASK))
        return 0;
    return w;
}

/* resolve checks that h is a live handle of type t and returns its slot. */
static inline int resolve(ptl_handle_any_t h, enum htype t, uint32_t *slot)
{
    if ((h >> TYPE_SHIFT) != (uint32_t)t || !live_word(h))
        return 0;
    *slot = h & SLOT_MASK;
    return 1;
}

/* resolve_opt is resolve for an optional EQ or CT: none maps to GOPTL_NO_SLOT. */
static inline int resolve_opt(ptl_handle_any_t h, ptl_handle_any_t none, enum htype t, uint32_t *slot)
{
    if (h == none) {
        *slot = GOPTL_NO_SLOT;
        return 1;
    }
    return resolve(h, t, slot);
}

/* sweep releases every slot of NI ni (every slot when all is set). */
static void sweep(ptl_handle_ni_t ni, int all)
{
    for (uint32_t s = 0; s < MAX_SLOTS; s++) {
        _Atomic uint64_t *c = cell(s);
        if (!c) {
            s |= CHUNK_SIZE - 1; /* skip the absent chunk */
            continue;
        }
        uint64_t w = atomic_load(c);
        if ((w & 1) && (all || (uint32_t)(w >> 32) == ni))
            slot_release(s);
    }
}

/* ---- Counter values ----------------------------------------------------------- */

/* The engine keeps each counting event's value outside the Go heap, laid out as
 * ptl_ct_event_t (success, then failure: two 64-bit words, each written
 * atomically), in memory that stays mapped for the life of the process. The
 * shim learns the address once, at PtlCTAlloc, and keeps it beside the slot:
 * PtlCTGet, PtlCTWait and PtlCTPoll then read the value without entering Go.
 * seen is the value the last PtlCTGet of the slot returned: a PtlCTGet that
 * finds the same value again drives a round of progress in Go (see PtlCTGet). */
struct ctside {
    _Atomic uintptr_t addr; /* 0: unknown (the slot's counter is read in Go) */
    _Atomic uint64_t seen_success, seen_failure;
};

static _Atomic(struct ctside *) ctchunks[CHUNK_SIZE];

/* ctside_of returns the side record of slot, creating its chunk when create is
 * set (NULL when that fails or the chunk is absent). */
static struct ctside *ctside_of(uint32_t slot, int create)
{
    if (slot >= MAX_SLOTS)
        return NULL;
    _Atomic(struct ctside *) *pc = &ctchunks[slot >> CHUNK_BITS];
    struct ctside *c = atomic_load_explicit(pc, memory_order_acquire);
    if (!c && create) {
        pthread_mutex_lock(&slot_mu);
        if (!(c = atomic_load(pc))) {
            c = calloc(CHUNK_SIZE, sizeof *c);
            if (c)
                atomic_store_explicit(pc, c, memory_order_release);
        }
        pthread_mutex_unlock(&slot_mu);
    }
    return c ? &c[slot & (CHUNK_SIZE - 1)] : NULL;
}

/* ct_value reads the counter whose cell address is addr. The two words are read
 * one after the other, as Go's Counter.Get reads them without its lock. */
static inline ptl_ct_event_t ct_value(uintptr_t addr)
{
    const _Atomic uint64_t *w = (const _Atomic uint64_t *)addr;
    ptl_ct_event_t v;
    v.success = atomic_load_explicit(&w[0], memory_order_acquire);
    v.failure = atomic_load_explicit(&w[1], memory_order_acquire);
    return v;
}

/* ct_addr returns the cell address of the (live) counter in slot, or 0. */
static inline uintptr_t ct_addr(uint32_t slot)
{
    struct ctside *cs = ctside_of(slot, 0);
    return cs ? atomic_load_explicit(&cs->addr, memory_order_acquire) : 0;
}

static inline int ct_reached(ptl_ct_event_t v, ptl_size_t test) { return v.success >= test || v.failure > 0; }

/* ---- The Go library ----------------------------------------------------------- */

static struct {
#define X(ret, name, params) ret(*name) params;
    GOPTL_FUNCS(X)
#undef X
} go;

/* go_calls counts, per thread, the calls this thread made into the Go library
 * (goportals_go_calls): each is one C-to-Go transition, the cost the shim
 * avoids where it can answer in C. GO(fn) is go.fn, counted. */
static _Thread_local uint64_t go_calls;
#define GO(fn) (go_calls++, go.fn)

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static void *golib;
static _Atomic int init_count;

static void say(const char *fn, const char *msg) { fprintf(stderr, "libportals: %s: %s\n", fn, msg); }

/* golib_path writes the Go library's path: $PTL_GOLIB, else libgoportals.so
 * next to this library. */
static void golib_path(char *buf, size_t n)
{
    const char *env = getenv("PTL_GOLIB");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return;
    }
    Dl_info info;
    if (dladdr((void *)&PtlInit, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            snprintf(buf, n, "%.*s/libgoportals.so", (int)(slash - info.dli_fname), info.dli_fname);
            return;
        }
    }
    snprintf(buf, n, "libgoportals.so");
}

static int load_golib(void)
{
    char path[4096];
    golib_path(path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "libportals: PtlInit: cannot load the Go library: %s\n", dlerror());
        return 0;
    }
#define X(ret, name, params) go.name = (ret(*) params)dlsym(h, #name);
    GOPTL_FUNCS(X)
#undef X
    golib = h;
    return 1;
}

/* Missing entry points: a Go library older than the shim leaves a NULL. */
#define NEED(fn, ptlname)                                                 \
    do {                                                                  \
        if (!go.fn) {                                                     \
            say(ptlname, "not provided by the loaded Go library");        \
            return PTL_FAIL;                                              \
        }                                                                 \
    } while (0)

#define INIT_OR_RETURN()                                                           \
    do {                                                                           \
        if (atomic_load_explicit(&init_count, memory_order_acquire) <= 0)          \
            return PTL_NO_INIT;                                                    \
    } while (0)

/* program_speaks_pmi reports whether the process contains a PMI client of its
 * own: PMI-1 or PMI-2 entry points (Sandia OpenSHMEM's pmi-simple, a
 * launcher's libpmi) or an MPI (MPICH's libmpich holds its PMI client without
 * exporting PMI_Init). A PMI launcher gives each rank one connection, which
 * that client holds: the Go library must then not open it too (its requests
 * and answers would interleave with the program's), and such programs give
 * their logical NIs a map with PtlSetMap. Only symbols in the global scope are
 * seen: a client linked statically without -rdynamic is not, and
 * PTL_CAPI_PMI=program (read in Go) says it then. */
static int program_speaks_pmi(void)
{
    static const char *const marks[] = {"PMI_Init", "PMI2_Init", "MPI_Init", "PMPI_Init"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (dlsym(RTLD_DEFAULT, marks[i]) != NULL)
            return 1;
    return 0;
}

/* at_exit ends the process's join of its job: the Go library keeps it across
 * the last PtlFini, because a launcher admits one join per rank and programs
 * call PtlInit again after PtlFini. */
static void at_exit(void)
{
    if (go.goptl_Exit && atomic_load(&init_count) <= 0)
        go.goptl_Exit();
}

EXPORT int PtlInit(void)
{
    static int exit_hooked;
    int rc;
    pthread_mutex_lock(&init_mu);
    if (!golib && !load_golib()) {
        pthread_mutex_unlock(&init_mu);
        return PTL_FAIL;
    }
    if (!go.goptl_Init) {
        say("PtlInit", "not provided by the loaded Go library");
        pthread_mutex_unlock(&init_mu);
        return PTL_FAIL;
    }
    rc = GO(goptl_Init)(program_speaks_pmi(), handle_release);
    if (rc == PTL_OK) {
        atomic_fetch_add(&init_count, 1);
        if (!exit_hooked)
            exit_hooked = atexit(at_exit) == 0;
    }
    pthread_mutex_unlock(&init_mu);
    return rc;
}

EXPORT void PtlFini(void)
{
    pthread_mutex_lock(&init_mu);
    int n = atomic_load(&init_count);
    if (n > 0) {
        atomic_store(&init_count, n - 1);
        if (go.goptl_Fini)
            GO(goptl_Fini)(n == 1);
        if (n == 1)
            sweep(0, 1);
    }
    pthread_mutex_unlock(&init_mu);
}

/* ---- Network interfaces ------------------------------------------------------- */

EXPORT int PtlNIInit(ptl_interface_t iface, unsigned int options, ptl_pid_t pid,
                     const ptl_ni_limits_t *desired, ptl_ni_limits_t *actual, ptl_handle_ni_t *ni_handle)
{
    INIT_OR_RETURN();
    NEED(goptl_NIInit, "PtlNIInit");
    if (!ni_handle)
        return PTL_ARG_INVALID;
    int64_t s = slot_alloc();
    if (s < 0)
        return PTL_NO_SPACE;
    uint32_t got = (uint32_t)s;
    ptl_ni_limits_t want;
    if (desired)
        want = *desired;
    int rc = GO(goptl_NIInit)((uint32_t)s, iface, options, pid, desired ? &want : NULL, actual, &got);
    if (rc != PTL_OK || got != (uint32_t)s)
        slot_release((uint32_t)s);
    if (rc != PTL_OK)
        return rc;
    ptl_handle_ni_t h = mkhandle(T_NI, got);
    if (got == (uint32_t)s)
        slot_set(got, T_NI, h);
    *ni_handle = h;
    return PTL_OK;
}

EXPORT int PtlNIFini(ptl_handle_ni_t ni_handle)
{
    uint32_t s;
    int gone = 0;
    INIT_OR_RETURN();
    NEED(goptl_NIFini, "PtlNIFini");
    if (!resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    int rc = GO(goptl_NIFini)(s, &gone);
    if (rc == PTL_OK && gone)
        sweep(ni_handle, 0);
    return rc;
}

EXPORT int PtlNIStatus(ptl_handle_ni_t ni_handle, ptl_sr_index_t status_register, ptl_sr_value_t *status)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_NIStatus, "PtlNIStatus");
    if (!resolve(ni_handle, T_NI, &s) || !status)
        return PTL_ARG_INVALID;
    return GO(goptl_NIStatus)(s, (int)status_register, status);
}

EXPORT int PtlNIHandle(ptl_handle_any_t handle, ptl_handle_ni_t *ni_handle)
{
    INIT_OR_RETURN();
    uint32_t t = handle >> TYPE_SHIFT;
    uint64_t w;
    if (!ni_handle || t < T_EQ || t > T_ME || !(w = live_word(handle)))
        return PTL_ARG_INVALID;
    *ni_handle = (ptl_handle_ni_t)(w >> 32);
    return PTL_OK;
}

EXPORT int PtlSetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, const ptl_process_t *mapping)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_SetMap, "PtlSetMap");
    if (!resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_SetMap)(s, map_size, (ptl_process_t *)mapping);
}

EXPORT int PtlGetMap(ptl_handle_ni_t ni_handle, ptl_size_t map_size, ptl_process_t *mapping,
                     ptl_size_t *actual_map_size)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_GetMap, "PtlGetMap");
    if (!resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_GetMap)(s, map_size, mapping, actual_map_size);
}

/* ---- Portal table ------------------------------------------------------------- */

EXPORT int PtlPTAlloc(ptl_handle_ni_t ni_handle, unsigned int options, ptl_handle_eq_t eq_handle,
                      ptl_pt_index_t pt_index_req, ptl_pt_index_t *pt_index)
{
    uint32_t s, q;
    INIT_OR_RETURN();
    NEED(goptl_PTAlloc, "PtlPTAlloc");
    if (!resolve(ni_handle, T_NI, &s) || !resolve_opt(eq_handle, PTL_EQ_NONE, T_EQ, &q) || !pt_index)
        return PTL_ARG_INVALID;
    return GO(goptl_PTAlloc)(s, options, q, pt_index_req, pt_index);
}

#define PT_CALL(name, fn)                                            \
    EXPORT int name(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index) \
    {                                                                \
        uint32_t s;                                                  \
        INIT_OR_RETURN();                                            \
        NEED(fn, #name);                                             \
        if (!resolve(ni_handle, T_NI, &s))                           \
            return PTL_ARG_INVALID;                                  \
        return GO(fn)(s, pt_index);                                  \
    }
PT_CALL(PtlPTFree, goptl_PTFree)
PT_CALL(PtlPTDisable, goptl_PTDisable)
PT_CALL(PtlPTEnable, goptl_PTEnable)

/* ---- Identities --------------------------------------------------------------- */

EXPORT int PtlGetUid(ptl_handle_ni_t ni_handle, ptl_uid_t *uid)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_GetUid, "PtlGetUid");
    if (!resolve(ni_handle, T_NI, &s) || !uid)
        return PTL_ARG_INVALID;
    return GO(goptl_GetUid)(s, uid);
}

EXPORT int PtlGetId(ptl_handle_ni_t ni_handle, ptl_process_t *id)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_GetId, "PtlGetId");
    if (!resolve(ni_handle, T_NI, &s) || !id)
        return PTL_ARG_INVALID;
    return GO(goptl_GetId)(s, 0, id);
}

EXPORT int PtlGetPhysId(ptl_handle_ni_t ni_handle, ptl_process_t *id)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_GetId, "PtlGetPhysId");
    if (!resolve(ni_handle, T_NI, &s) || !id)
        return PTL_ARG_INVALID;
    return GO(goptl_GetId)(s, 1, id);
}

/* ---- Memory descriptors ------------------------------------------------------- */

EXPORT int PtlMDBind(ptl_handle_ni_t ni_handle, const ptl_md_t *md, ptl_handle_md_t *md_handle)
{
    uint32_t s, q, c;
    INIT_OR_RETURN();
    NEED(goptl_MDBind, "PtlMDBind");
    if (!md || !md_handle || !resolve(ni_handle, T_NI, &s) ||
        !resolve_opt(md->eq_handle, PTL_EQ_NONE, T_EQ, &q) || !resolve_opt(md->ct_handle, PTL_CT_NONE, T_CT, &c))
        return PTL_ARG_INVALID;
    int64_t slot = slot_alloc();
    if (slot < 0)
        return PTL_NO_SPACE;
    ptl_md_t copy = *md;
    int rc = GO(goptl_MDBind)(s, &copy, q, c, (uint32_t)slot);
    if (rc != PTL_OK) {
        slot_release((uint32_t)slot);
        return rc;
    }
    slot_set((uint32_t)slot, T_MD, ni_handle);
    *md_handle = mkhandle(T_MD, (uint32_t)slot);
    return PTL_OK;
}

EXPORT int PtlMDRelease(ptl_handle_md_t md_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_MDRelease, "PtlMDRelease");
    if (!resolve(md_handle, T_MD, &s))
        return PTL_ARG_INVALID;
    int rc = GO(goptl_MDRelease)(s);
    if (rc == PTL_OK)
        slot_release(s);
    return rc;
}

/* ---- List and match entries ----------------------------------------------------- */

EXPORT int PtlMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me, ptl_list_t ptl_list,
                       void *user_ptr, ptl_handle_me_t *me_handle)
{
    uint32_t s, c;
    INIT_OR_RETURN();
    NEED(goptl_MEAppend, "PtlMEAppend");
    if (!me || !me_handle || !resolve(ni_handle, T_NI, &s) || !resolve_opt(me->ct_handle, PTL_CT_NONE, T_CT, &c))
        return PTL_ARG_INVALID;
    int64_t slot = slot_alloc();
    if (slot < 0)
        return PTL_NO_SPACE;
    ptl_me_t copy = *me;
    /* Live before the append: the engine may unlink the entry (and the Go
     * library free its handle) as soon as it is appended. */
    slot_set((uint32_t)slot, T_ME, ni_handle);
    ptl_handle_me_t h = mkhandle(T_ME, (uint32_t)slot);
    int rc = GO(goptl_MEAppend)(s, pt_index, &copy, c, ptl_list, (uint64_t)(uintptr_t)user_ptr, (uint32_t)slot, h);
    if (rc != PTL_OK) {
        handle_release(h);
        return rc;
    }
    *me_handle = h;
    return PTL_OK;
}

EXPORT int PtlLEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le, ptl_list_t ptl_list,
                       void *user_ptr, ptl_handle_le_t *le_handle)
{
    uint32_t s, c;
    INIT_OR_RETURN();
    NEED(goptl_LEAppend, "PtlLEAppend");
    if (!le || !le_handle || !resolve(ni_handle, T_NI, &s) || !resolve_opt(le->ct_handle, PTL_CT_NONE, T_CT, &c))
        return PTL_ARG_INVALID;
    int64_t slot = slot_alloc();
    if (slot < 0)
        return PTL_NO_SPACE;
    ptl_le_t copy = *le;
    /* Live before the append: the engine may unlink the entry (and the Go
     * library free its handle) as soon as it is appended. */
    slot_set((uint32_t)slot, T_LE, ni_handle);
    ptl_handle_le_t h = mkhandle(T_LE, (uint32_t)slot);
    int rc = GO(goptl_LEAppend)(s, pt_index, &copy, c, ptl_list, (uint64_t)(uintptr_t)user_ptr, (uint32_t)slot, h);
    if (rc != PTL_OK) {
        handle_release(h);
        return rc;
    }
    *le_handle = h;
    return PTL_OK;
}

static int unlink_entry(ptl_handle_any_t h, enum htype t, const char *name)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_MEUnlink, name);
    if (!resolve(h, t, &s))
        return PTL_ARG_INVALID;
    int rc = GO(goptl_MEUnlink)(s, h, t == T_LE);
    if (rc == PTL_OK)
        handle_release(h);
    return rc;
}

EXPORT int PtlMEUnlink(ptl_handle_me_t me_handle) { return unlink_entry(me_handle, T_ME, "PtlMEUnlink"); }
EXPORT int PtlLEUnlink(ptl_handle_le_t le_handle) { return unlink_entry(le_handle, T_LE, "PtlLEUnlink"); }

EXPORT int PtlMESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_me_t *me,
                       ptl_search_op_t ptl_search_op, void *user_ptr)
{
    uint32_t s, c;
    INIT_OR_RETURN();
    NEED(goptl_MESearch, "PtlMESearch");
    if (!me || !resolve(ni_handle, T_NI, &s) || !resolve_opt(me->ct_handle, PTL_CT_NONE, T_CT, &c))
        return PTL_ARG_INVALID;
    ptl_me_t copy = *me;
    return GO(goptl_MESearch)(s, pt_index, &copy, c, ptl_search_op, (uint64_t)(uintptr_t)user_ptr);
}

EXPORT int PtlLESearch(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, const ptl_le_t *le,
                       ptl_search_op_t ptl_search_op, void *user_ptr)
{
    uint32_t s, c;
    INIT_OR_RETURN();
    NEED(goptl_LESearch, "PtlLESearch");
    if (!le || !resolve(ni_handle, T_NI, &s) || !resolve_opt(le->ct_handle, PTL_CT_NONE, T_CT, &c))
        return PTL_ARG_INVALID;
    ptl_le_t copy = *le;
    return GO(goptl_LESearch)(s, pt_index, &copy, c, ptl_search_op, (uint64_t)(uintptr_t)user_ptr);
}

/* ---- Event queues --------------------------------------------------------------- */

EXPORT int PtlEQAlloc(ptl_handle_ni_t ni_handle, ptl_size_t count, ptl_handle_eq_t *eq_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_EQAlloc, "PtlEQAlloc");
    if (!eq_handle || !resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    int64_t slot = slot_alloc();
    if (slot < 0)
        return PTL_NO_SPACE;
    int rc = GO(goptl_EQAlloc)(s, count, (uint32_t)slot);
    if (rc != PTL_OK) {
        slot_release((uint32_t)slot);
        return rc;
    }
    slot_set((uint32_t)slot, T_EQ, ni_handle);
    *eq_handle = mkhandle(T_EQ, (uint32_t)slot);
    return PTL_OK;
}

EXPORT int PtlEQFree(ptl_handle_eq_t eq_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_EQFree, "PtlEQFree");
    if (!resolve(eq_handle, T_EQ, &s))
        return PTL_ARG_INVALID;
    int rc = GO(goptl_EQFree)(s);
    if (rc == PTL_OK)
        slot_release(s);
    return rc;
}

EXPORT int PtlEQGet(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_EQGet, "PtlEQGet");
    if (!event || !resolve(eq_handle, T_EQ, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_EQGet)(s, event, 0);
}

EXPORT int PtlEQWait(ptl_handle_eq_t eq_handle, ptl_event_t *event)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_EQGet, "PtlEQWait");
    if (!event || !resolve(eq_handle, T_EQ, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_EQGet)(s, event, 1);
}

/* A small array of slots on the stack, a large one on the heap. */
#define SLOTS_ON_STACK 32

EXPORT int PtlEQPoll(const ptl_handle_eq_t *eq_handles, unsigned int size, ptl_time_t timeout, ptl_event_t *event,
                     unsigned int *which)
{
    uint32_t stack[SLOTS_ON_STACK], *slots = stack;
    INIT_OR_RETURN();
    NEED(goptl_EQPoll, "PtlEQPoll");
    if (!eq_handles || size == 0 || !event || !which)
        return PTL_ARG_INVALID;
    if (size > SLOTS_ON_STACK && !(slots = malloc(size * sizeof *slots)))
        return PTL_NO_SPACE;
    int rc = PTL_OK;
    for (unsigned int i = 0; i < size; i++)
        if (!resolve(eq_handles[i], T_EQ, &slots[i]))
            rc = PTL_ARG_INVALID;
    if (rc == PTL_OK)
        rc = GO(goptl_EQPoll)(slots, size, timeout, event, which);
    if (slots != stack)
        free(slots);
    return rc;
}

/* ---- Counting events ------------------------------------------------------------ */

EXPORT int PtlCTAlloc(ptl_handle_ni_t ni_handle, ptl_handle_ct_t *ct_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTAlloc, "PtlCTAlloc");
    if (!ct_handle || !resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    int64_t slot = slot_alloc();
    if (slot < 0)
        return PTL_NO_SPACE;
    int rc = GO(goptl_CTAlloc)(s, (uint32_t)slot);
    if (rc != PTL_OK) {
        slot_release((uint32_t)slot);
        return rc;
    }
    /* Where the value lives; without it (an older Go library, no memory for the
     * side record) the counter is read in Go, as every call did before. */
    uintptr_t addr = 0;
    struct ctside *cs = ctside_of((uint32_t)slot, 1);
    if (cs) {
        if (!go.goptl_CTValueAddr || GO(goptl_CTValueAddr)((uint32_t)slot, &addr) != PTL_OK)
            addr = 0;
        atomic_store_explicit(&cs->seen_success, 0, memory_order_relaxed);
        atomic_store_explicit(&cs->seen_failure, 0, memory_order_relaxed);
        atomic_store_explicit(&cs->addr, addr, memory_order_release);
    }
    slot_set((uint32_t)slot, T_CT, ni_handle);
    *ct_handle = mkhandle(T_CT, (uint32_t)slot);
    return PTL_OK;
}

EXPORT int PtlCTFree(ptl_handle_ct_t ct_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTFree, "PtlCTFree");
    if (!resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    int rc = GO(goptl_CTFree)(s);
    if (rc == PTL_OK) {
        struct ctside *cs = ctside_of(s, 0);
        if (cs) /* the cell now belongs to the NI's next counter */
            atomic_store_explicit(&cs->addr, 0, memory_order_release);
        slot_release(s);
    }
    return rc;
}

EXPORT int PtlCTCancelTriggered(ptl_handle_ct_t ct_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTCancelTriggered, "PtlCTCancelTriggered");
    if (!resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_CTCancelTriggered)(s);
}

EXPORT int PtlCTGet(ptl_handle_ct_t ct_handle, ptl_ct_event_t *event)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTGet, "PtlCTGet");
    if (!event || !resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    /* Read in place. A value that differs from what the last PtlCTGet of this
     * counter returned is news: it is returned without entering Go. The same
     * value again means the caller is polling for a change: then, as for Go
     * callers, the call drives one round of the NI's progress (in Go) and reads
     * again, so a program that spins on PtlCTGet completes operations by itself
     * even without the progress goroutine (PTL_PROGRESS_GOROUTINE=0) and with
     * GOMAXPROCS=1. */
    struct ctside *cs = ctside_of(s, 0);
    uintptr_t addr = cs ? atomic_load_explicit(&cs->addr, memory_order_acquire) : 0;
    if (addr) {
        ptl_ct_event_t v = ct_value(addr);
        if (v.success != atomic_load_explicit(&cs->seen_success, memory_order_relaxed) ||
            v.failure != atomic_load_explicit(&cs->seen_failure, memory_order_relaxed)) {
            atomic_store_explicit(&cs->seen_success, v.success, memory_order_relaxed);
            atomic_store_explicit(&cs->seen_failure, v.failure, memory_order_relaxed);
            *event = v;
            return PTL_OK;
        }
    }
    int rc = GO(goptl_CTGet)(s, event);
    if (rc == PTL_OK && cs) {
        atomic_store_explicit(&cs->seen_success, event->success, memory_order_relaxed);
        atomic_store_explicit(&cs->seen_failure, event->failure, memory_order_relaxed);
    }
    return rc;
}

EXPORT int PtlCTWait(ptl_handle_ct_t ct_handle, ptl_size_t test, ptl_ct_event_t *event)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTWait, "PtlCTWait");
    if (!event || !resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    /* A wait that is already satisfied is answered here; otherwise the wait
     * runs in Go, where it drives progress and spins without crossing back. */
    uintptr_t addr = ct_addr(s);
    if (addr) {
        ptl_ct_event_t v = ct_value(addr);
        if (ct_reached(v, test)) {
            *event = v;
            return PTL_OK;
        }
    }
    return GO(goptl_CTWait)(s, test, event);
}

EXPORT int PtlCTPoll(const ptl_handle_ct_t *ct_handles, const ptl_size_t *tests, unsigned int size,
                     ptl_time_t timeout, ptl_ct_event_t *event, unsigned int *which)
{
    uint32_t stack[SLOTS_ON_STACK], *slots = stack;
    INIT_OR_RETURN();
    NEED(goptl_CTPoll, "PtlCTPoll");
    if (!ct_handles || !tests || size == 0 || !event || !which)
        return PTL_ARG_INVALID;
    if (size > SLOTS_ON_STACK && !(slots = malloc(size * sizeof *slots)))
        return PTL_NO_SPACE;
    int rc = PTL_OK;
    for (unsigned int i = 0; i < size; i++)
        if (!resolve(ct_handles[i], T_CT, &slots[i]))
            rc = PTL_ARG_INVALID;
    /* The first counter that already meets its test answers here, in the order
     * the Go poll checks them; otherwise the poll runs in Go. */
    for (unsigned int i = 0; rc == PTL_OK && i < size; i++) {
        uintptr_t addr = ct_addr(slots[i]);
        if (!addr)
            break; /* read in Go, keeping the order */
        ptl_ct_event_t v = ct_value(addr);
        if (ct_reached(v, tests[i])) {
            *event = v;
            *which = i;
            if (slots != stack)
                free(slots);
            return PTL_OK;
        }
    }
    if (rc == PTL_OK)
        rc = GO(goptl_CTPoll)(slots, (ptl_size_t *)tests, size, timeout, event, which);
    if (slots != stack)
        free(slots);
    return rc;
}

EXPORT int PtlCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTSet, "PtlCTSet");
    if (!resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_CTSet)(s, new_ct.success, new_ct.failure, 0);
}

EXPORT int PtlCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CTSet, "PtlCTInc");
    if (!resolve(ct_handle, T_CT, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_CTSet)(s, increment.success, increment.failure, 1);
}

EXPORT int PtlTriggeredCTInc(ptl_handle_ct_t ct_handle, ptl_ct_event_t increment, ptl_handle_ct_t trig_ct_handle,
                             ptl_size_t threshold)
{
    uint32_t s, t;
    INIT_OR_RETURN();
    NEED(goptl_TriggeredCTSet, "PtlTriggeredCTInc");
    if (!resolve(ct_handle, T_CT, &s) || !resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return GO(goptl_TriggeredCTSet)(s, increment.success, increment.failure, 1, t, threshold);
}

EXPORT int PtlTriggeredCTSet(ptl_handle_ct_t ct_handle, ptl_ct_event_t new_ct, ptl_handle_ct_t trig_ct_handle,
                             ptl_size_t threshold)
{
    uint32_t s, t;
    INIT_OR_RETURN();
    NEED(goptl_TriggeredCTSet, "PtlTriggeredCTSet");
    if (!resolve(ct_handle, T_CT, &s) || !resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return GO(goptl_TriggeredCTSet)(s, new_ct.success, new_ct.failure, 0, t, threshold);
}

/* ---- Data movement ---------------------------------------------------------------- */

static inline uint64_t pid64(ptl_process_t p)
{
    uint64_t v;
    memcpy(&v, &p, sizeof v);
    return v;
}

static inline int put(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                      ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                      ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, uint32_t trig,
                      ptl_size_t threshold)
{
    uint32_t s;
    if (!resolve(md_handle, T_MD, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_Put)(s, local_offset, length, ack_req, pid64(target_id), pt_index, match_bits, remote_offset,
                        (uint64_t)(uintptr_t)user_ptr, hdr_data, trig, threshold);
}

EXPORT int PtlPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                  ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                  ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data)
{
    INIT_OR_RETURN();
    NEED(goptl_Put, "PtlPut");
    return put(md_handle, local_offset, length, ack_req, target_id, pt_index, match_bits, remote_offset, user_ptr,
               hdr_data, GOPTL_NO_SLOT, 0);
}

EXPORT int PtlTriggeredPut(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                           ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                           ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                           ptl_hdr_data_t hdr_data, ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    uint32_t t;
    INIT_OR_RETURN();
    NEED(goptl_Put, "PtlTriggeredPut");
    if (!resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return put(md_handle, local_offset, length, ack_req, target_id, pt_index, match_bits, remote_offset, user_ptr,
               hdr_data, t, threshold);
}

static int get(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target_id,
               ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
               uint32_t trig, ptl_size_t threshold)
{
    uint32_t s;
    if (!resolve(md_handle, T_MD, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_Get)(s, local_offset, length, pid64(target_id), pt_index, match_bits, remote_offset,
                        (uint64_t)(uintptr_t)user_ptr, trig, threshold);
}

EXPORT int PtlGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_process_t target_id,
                  ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr)
{
    INIT_OR_RETURN();
    NEED(goptl_Get, "PtlGet");
    return get(md_handle, local_offset, length, target_id, pt_index, match_bits, remote_offset, user_ptr,
               GOPTL_NO_SLOT, 0);
}

EXPORT int PtlTriggeredGet(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                           ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                           ptl_size_t remote_offset, void *user_ptr, ptl_handle_ct_t trig_ct_handle,
                           ptl_size_t threshold)
{
    uint32_t t;
    INIT_OR_RETURN();
    NEED(goptl_Get, "PtlTriggeredGet");
    if (!resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return get(md_handle, local_offset, length, target_id, pt_index, match_bits, remote_offset, user_ptr, t,
               threshold);
}

static int atomic_op(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                     ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                     ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation,
                     ptl_datatype_t datatype, uint32_t trig, ptl_size_t threshold)
{
    uint32_t s;
    if (!resolve(md_handle, T_MD, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_Atomic)(s, local_offset, length, ack_req, pid64(target_id), pt_index, match_bits, remote_offset,
                           (uint64_t)(uintptr_t)user_ptr, hdr_data, operation, datatype, trig, threshold);
}

EXPORT int PtlAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length, ptl_ack_req_t ack_req,
                     ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                     ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation,
                     ptl_datatype_t datatype)
{
    INIT_OR_RETURN();
    NEED(goptl_Atomic, "PtlAtomic");
    return atomic_op(md_handle, local_offset, length, ack_req, target_id, pt_index, match_bits, remote_offset,
                     user_ptr, hdr_data, operation, datatype, GOPTL_NO_SLOT, 0);
}

EXPORT int PtlTriggeredAtomic(ptl_handle_md_t md_handle, ptl_size_t local_offset, ptl_size_t length,
                              ptl_ack_req_t ack_req, ptl_process_t target_id, ptl_pt_index_t pt_index,
                              ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr,
                              ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype,
                              ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    uint32_t t;
    INIT_OR_RETURN();
    NEED(goptl_Atomic, "PtlTriggeredAtomic");
    if (!resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return atomic_op(md_handle, local_offset, length, ack_req, target_id, pt_index, match_bits, remote_offset,
                     user_ptr, hdr_data, operation, datatype, t, threshold);
}

static int fetch(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                 ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                 ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                 int swap, const void *operand, ptl_op_t operation, ptl_datatype_t datatype, uint32_t trig,
                 ptl_size_t threshold)
{
    uint32_t g, p;
    if (!resolve(get_md_handle, T_MD, &g) || !resolve(put_md_handle, T_MD, &p))
        return PTL_ARG_INVALID;
    return GO(goptl_FetchAtomic)(g, local_get_offset, p, local_put_offset, length, pid64(target_id), pt_index,
                                match_bits, remote_offset, (uint64_t)(uintptr_t)user_ptr, hdr_data, swap,
                                (void *)operand, operation, datatype, trig, threshold);
}

EXPORT int PtlFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                          ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id,
                          ptl_pt_index_t pt_index, ptl_match_bits_t match_bits, ptl_size_t remote_offset,
                          void *user_ptr, ptl_hdr_data_t hdr_data, ptl_op_t operation, ptl_datatype_t datatype)
{
    INIT_OR_RETURN();
    NEED(goptl_FetchAtomic, "PtlFetchAtomic");
    return fetch(get_md_handle, local_get_offset, put_md_handle, local_put_offset, length, target_id, pt_index,
                 match_bits, remote_offset, user_ptr, hdr_data, 0, NULL, operation, datatype, GOPTL_NO_SLOT, 0);
}

EXPORT int PtlTriggeredFetchAtomic(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                                   ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
                                   ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                                   ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                                   ptl_op_t operation, ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle,
                                   ptl_size_t threshold)
{
    uint32_t t;
    INIT_OR_RETURN();
    NEED(goptl_FetchAtomic, "PtlTriggeredFetchAtomic");
    if (!resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return fetch(get_md_handle, local_get_offset, put_md_handle, local_put_offset, length, target_id, pt_index,
                 match_bits, remote_offset, user_ptr, hdr_data, 0, NULL, operation, datatype, t, threshold);
}

EXPORT int PtlSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset, ptl_handle_md_t put_md_handle,
                   ptl_size_t local_put_offset, ptl_size_t length, ptl_process_t target_id, ptl_pt_index_t pt_index,
                   ptl_match_bits_t match_bits, ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data,
                   const void *operand, ptl_op_t operation, ptl_datatype_t datatype)
{
    INIT_OR_RETURN();
    NEED(goptl_FetchAtomic, "PtlSwap");
    return fetch(get_md_handle, local_get_offset, put_md_handle, local_put_offset, length, target_id, pt_index,
                 match_bits, remote_offset, user_ptr, hdr_data, 1, operand, operation, datatype, GOPTL_NO_SLOT, 0);
}

EXPORT int PtlTriggeredSwap(ptl_handle_md_t get_md_handle, ptl_size_t local_get_offset,
                            ptl_handle_md_t put_md_handle, ptl_size_t local_put_offset, ptl_size_t length,
                            ptl_process_t target_id, ptl_pt_index_t pt_index, ptl_match_bits_t match_bits,
                            ptl_size_t remote_offset, void *user_ptr, ptl_hdr_data_t hdr_data, const void *operand,
                            ptl_op_t operation, ptl_datatype_t datatype, ptl_handle_ct_t trig_ct_handle,
                            ptl_size_t threshold)
{
    uint32_t t;
    INIT_OR_RETURN();
    NEED(goptl_FetchAtomic, "PtlTriggeredSwap");
    if (!resolve(trig_ct_handle, T_CT, &t))
        return PTL_ARG_INVALID;
    return fetch(get_md_handle, local_get_offset, put_md_handle, local_put_offset, length, target_id, pt_index,
                 match_bits, remote_offset, user_ptr, hdr_data, 1, operand, operation, datatype, t, threshold);
}

EXPORT int PtlAtomicSync(void)
{
    INIT_OR_RETURN();
    NEED(goptl_AtomicSync, "PtlAtomicSync");
    return GO(goptl_AtomicSync)();
}

/* ---- Not provided --------------------------------------------------------------- */

/* unsupported says once per function that it is not provided. */
static int unsupported(_Atomic int *said, const char *fn, const char *why)
{
    if (!atomic_exchange(said, 1))
        say(fn, why);
    return PTL_FAIL;
}

EXPORT int PtlTriggeredMEAppend(ptl_handle_ni_t ni_handle, ptl_pt_index_t pt_index, ptl_me_t *me_init,
                                ptl_list_t ptl_list, void *user_ptr, ptl_handle_me_t *me_handle_p,
                                ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    static _Atomic int said;
    INIT_OR_RETURN();
    (void)ni_handle, (void)pt_index, (void)me_init, (void)ptl_list, (void)user_ptr, (void)me_handle_p;
    (void)trig_ct_handle, (void)threshold;
    return unsupported(&said, "PtlTriggeredMEAppend",
                       "not supported by goportals (an extension of the reference implementation, outside the "
                       "Portals 4 specification); returning PTL_FAIL");
}

EXPORT int PtlTriggeredMEUnlink(ptl_handle_me_t me_handle, ptl_handle_ct_t trig_ct_handle, ptl_size_t threshold)
{
    static _Atomic int said;
    INIT_OR_RETURN();
    (void)me_handle, (void)trig_ct_handle, (void)threshold;
    return unsupported(&said, "PtlTriggeredMEUnlink",
                       "not supported by goportals (an extension of the reference implementation, outside the "
                       "Portals 4 specification); returning PTL_FAIL");
}

/* ---- Bundles and handles -------------------------------------------------------- */

EXPORT int PtlStartBundle(ptl_handle_ni_t ni_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_Bundle, "PtlStartBundle");
    if (!resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_Bundle)(s, 0);
}

EXPORT int PtlEndBundle(ptl_handle_ni_t ni_handle)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_Bundle, "PtlEndBundle");
    if (!resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_Bundle)(s, 1);
}

EXPORT int PtlHandleIsEqual(ptl_handle_any_t handle1, ptl_handle_any_t handle2) { return handle1 == handle2; }

/* ---- goportals extensions (portals4_goportals.h) ------------------------------- */

EXPORT int goportals_cache_stats(ptl_handle_ni_t ni_handle, goportals_cache_stats_t *stats)
{
    uint32_t s;
    INIT_OR_RETURN();
    NEED(goptl_CacheStats, "goportals_cache_stats");
    if (!stats || !resolve(ni_handle, T_NI, &s))
        return PTL_ARG_INVALID;
    return GO(goptl_CacheStats)(s, stats);
}

EXPORT uint64_t goportals_go_calls(void) { return go_calls; }
