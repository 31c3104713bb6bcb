/*
 * ptl_local.c: the C ABI in one process. Every operation targets the process
 * itself (rank 0 of a job of one, or any rank under ptlrun: each rank talks to
 * itself), so it runs with no launcher.
 */
#include "ptltest.h"
#include <stdint.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <portals4_goportals.h>

/* Timeouts of the waits (ms): long enough never to be the cause of a pass. */
#define WAIT_MS 20000

static ptl_handle_ni_t ni;   /* logical, matching */
static ptl_process_t self;   /* this process on ni */
static ptl_handle_eq_t eq;   /* events of the test's PT and MDs */
static ptl_pt_index_t pt;

/* next_event waits for the next event of kind on q, skipping up to 8 others. */
static int next_event(ptl_handle_eq_t q, ptl_event_kind_t kind, ptl_event_t *ev)
{
    for (int i = 0; i < 9; i++) {
        unsigned int which = 99;
        int rc = PtlEQPoll(&q, 1, WAIT_MS, ev, &which);
        if (rc != PTL_OK)
            return rc;
        if (which != 0)
            return PTL_FAIL;
        if (ev->type == kind)
            return PTL_OK;
    }
    return PTL_FAIL;
}

/* map_self gives a logical NI without a map (a process started without a
 * launcher) the map of one rank, itself; an NI whose job already mapped it is
 * left alone. */
static int map_self(ptl_handle_ni_t h, ptl_process_t phys)
{
    ptl_size_t n = 0;
    int rc = PtlGetMap(h, 0, NULL, &n);
    if (rc == PTL_NO_SPACE || (rc == PTL_OK && n == 0))
        return PtlSetMap(h, 1, &phys);
    return rc;
}

static int test_before_init(void)
{
    ptl_handle_ni_t h;
    EXPECT_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &h),
              PTL_NO_INIT);
    /* Every call, the unsupported ones too, answers NO_INIT before PtlInit. */
    EXPECT_RC(PtlTriggeredMEAppend(0, 0, NULL, 0, NULL, NULL, 0, 0), PTL_NO_INIT);
    EXPECT_RC(PtlTriggeredMEUnlink(0, 0, 0), PTL_NO_INIT);
    CHECK(PtlHandleIsEqual(PTL_EQ_NONE, PTL_EQ_NONE), "PtlHandleIsEqual(x, x) is false");
    CHECK(!PtlHandleIsEqual(PTL_EQ_NONE, PTL_CT_NONE), "PTL_EQ_NONE equals PTL_CT_NONE");
    return 0;
}

static int test_init(void)
{
    OK(PtlInit());
    OK(PtlInit()); /* nested: needs one more PtlFini */
    PtlFini();
    return 0;
}

static int test_ni(void)
{
    ptl_ni_limits_t want, got;
    memset(&want, 0, sizeof want);
    want.max_entries = 64;
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, &got, &ni));
    CHECK(got.max_pt_index > 0 && got.max_eqs > 0 && got.max_cts > 0 && got.max_msg_size > 0,
          "limits look empty: max_pt_index %d max_eqs %d max_cts %d", got.max_pt_index, got.max_eqs,
          got.max_cts);
    /* Clients cut long atomics into pieces of max_atomic_size bytes (Sandia
     * OpenSHMEM does): a piece must hold whole elements of every datatype, up to
     * PTL_LONG_DOUBLE_COMPLEX (32 bytes). */
    CHECK(got.max_atomic_size >= 32 && got.max_atomic_size % 32 == 0,
          "max_atomic_size %" PRIu64 " is not a multiple of 32 bytes", (uint64_t)got.max_atomic_size);
    CHECK(got.max_fetch_atomic_size % 32 == 0 || got.max_fetch_atomic_size < 32,
          "max_fetch_atomic_size %" PRIu64 " is not a multiple of 32 bytes", (uint64_t)got.max_fetch_atomic_size);
    ptl_handle_ni_t again;
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, &want, NULL, &again));
    CHECK(PtlHandleIsEqual(ni, again), "a second NIInit with the same options gave another handle");
    OK(PtlNIFini(again));
    ptl_handle_ni_t back;
    OK(PtlNIHandle(ni, &back));
    CHECK(PtlHandleIsEqual(back, ni), "PtlNIHandle(ni) is not ni");
    EXPECT_RC(PtlNIHandle(PTL_INVALID_HANDLE, &back), PTL_ARG_INVALID);
    EXPECT_RC(PtlNIHandle(PTL_EQ_NONE, &back), PTL_ARG_INVALID);
    ptl_process_t phys;
    OK(PtlGetPhysId(ni, &phys));
    OK(map_self(ni, phys));
    OK(PtlGetId(ni, &self));
    ptl_uid_t uid;
    OK(PtlGetUid(ni, &uid));
    ptl_size_t n = 0;
    OK(PtlGetMap(ni, 0, NULL, &n));
    CHECK(n >= 1 && self.rank < n, "map of %" PRIu64 " entries, own rank %u", n, self.rank);
    ptl_process_t *map = calloc(n, sizeof *map);
    OK(PtlGetMap(ni, n, map, &n));
    CHECK(map[self.rank].phys.nid == phys.phys.nid && map[self.rank].phys.pid == phys.phys.pid,
          "map[%u] is %u/%u, PtlGetPhysId says %u/%u", self.rank, map[self.rank].phys.nid,
          map[self.rank].phys.pid, phys.phys.nid, phys.phys.pid);
    /* The map is fixed by now: setting the same one again changes nothing. */
    int rc = PtlSetMap(ni, n, map);
    CHECK(rc == PTL_OK || rc == PTL_IGNORED, "PtlSetMap with the current map returned %s", rc_name(rc));
    ptl_process_t again0;
    ptl_size_t n2 = 0;
    OK(PtlGetMap(ni, 1, &again0, &n2));
    CHECK(n2 == n && again0.phys.nid == map[0].phys.nid && again0.phys.pid == map[0].phys.pid,
          "the map changed after PtlSetMap with the same entries");
    free(map);
    ptl_sr_value_t v = -1;
    OK(PtlNIStatus(ni, PTL_SR_DROP_COUNT, &v));
    CHECK(v == 0, "drop count %d on a fresh NI", v);
    EXPECT_RC(PtlNIStatus(PTL_INVALID_HANDLE, PTL_SR_DROP_COUNT, &v), PTL_ARG_INVALID);
    OK(PtlStartBundle(ni));
    OK(PtlEndBundle(ni));
    return 0;
}

static int test_pt(void)
{
    ptl_pt_index_t idx;
    EXPECT_RC(PtlPTAlloc(ni, 0, 0x12345678, PTL_PT_ANY, &idx), PTL_ARG_INVALID);
    OK(PtlEQAlloc(ni, 256, &eq));
    OK(PtlPTAlloc(ni, 0, eq, PTL_PT_ANY, &pt));
    EXPECT_RC(PtlPTAlloc(ni, 0, eq, pt, &idx), PTL_PT_IN_USE);
    /* Each of these enters the Go library once, and goportals_go_calls says so. */
    uint64_t mark = goportals_go_calls();
    OK(PtlPTDisable(ni, pt));
    OK(PtlPTEnable(ni, pt));
    OK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &idx));
    OK(PtlPTFree(ni, idx));
    CHECK(goportals_go_calls() - mark == 4, "4 calls into Go counted as %" PRIu64, goportals_go_calls() - mark);
    return 0;
}

/* test_stale_handle: a released handle stays invalid while its slot goes
 * through many bind/release cycles (the generation field wraps at 512: a slot
 * reused most-recently-freed-first would give the stale handle back). */
static int test_stale_handle(void)
{
    static char buf[8];
    ptl_md_t d = {.start = buf, .length = sizeof buf, .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
    ptl_handle_md_t old, h;
    ptl_handle_ni_t owner;
    OK(PtlMDBind(ni, &d, &old));
    OK(PtlMDRelease(old));
    for (int i = 0; i < 2048; i++) {
        OK(PtlMDBind(ni, &d, &h));
        CHECK(!PtlHandleIsEqual(h, old), "cycle %d: the released handle %#x is handed out again", i, old);
        EXPECT_RC(PtlNIHandle(old, &owner), PTL_ARG_INVALID);
        OK(PtlMDRelease(h));
    }
    return 0;
}

/* rss_kb is the resident size of the process. */
static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* USE_ONCE_LOOPS exceeds the number of handle slots (2^20 - 1): entries that
 * unlink themselves must give their slot back. */
#define USE_ONCE_LOOPS 1200000L

/* test_use_once_slots: an entry the engine unlinks (use-once, with and without
 * its AUTO_UNLINK event) gives back its handle: an append/put/wait loop longer
 * than the handle table never runs out of slots and does not grow; the handle
 * of a consumed entry is then invalid (PTL_ARG_INVALID, as in the reference). */
static int test_use_once_slots(void)
{
    static char buf[8], src[8];
    ptl_handle_ct_t ct;
    ptl_handle_md_t md;
    ptl_handle_me_t h, first = 0;
    ptl_pt_index_t idx;
    ptl_ct_event_t v;
    OK(PtlCTAlloc(ni, &ct));
    OK(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, &idx));
    ptl_md_t d = {.start = src, .length = sizeof src, .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
    OK(PtlMDBind(ni, &d, &md));
    ptl_me_t m = {.start = buf, .length = sizeof buf, .ct_handle = ct, .uid = PTL_UID_ANY,
                  .options = PTL_ME_OP_PUT | PTL_ME_USE_ONCE | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_UNLINK_DISABLE,
                  .match_id = {.rank = PTL_RANK_ANY}};
    long base = 0;
    for (long i = 0; i < USE_ONCE_LOOPS; i++) {
        int rc = PtlMEAppend(ni, idx, &m, PTL_PRIORITY_LIST, NULL, &h);
        CHECK(rc == PTL_OK, "append %ld: %s", i, rc_name(rc));
        if (i == 0)
            first = h;
        rc = PtlPut(md, 0, sizeof src, PTL_NO_ACK_REQ, self, idx, 0, 0, NULL, 0);
        CHECK(rc == PTL_OK, "put %ld: %s", i, rc_name(rc));
        rc = PtlCTWait(ct, (ptl_size_t)i + 1, &v);
        CHECK(rc == PTL_OK && v.failure == 0, "wait %ld: %s, failure %" PRIu64, i, rc_name(rc), (uint64_t)v.failure);
        if (i == 0)
            EXPECT_RC(PtlMEUnlink(first), PTL_ARG_INVALID);
        if (i == 100000)
            base = rss_kb();
    }
    long grown = rss_kb() - base;
    /* Keeping each entry costs some 240 bytes: 260 MB over the loop. */
    CHECK(grown < 64 * 1024, "the process grew by %ld kB over %ld consumed entries", grown, USE_ONCE_LOOPS - 100000);
    OK(PtlMDRelease(md));
    OK(PtlPTFree(ni, idx));
    OK(PtlCTFree(ct));
    return 0;
}

static int test_eq(void)
{
    ptl_handle_eq_t q;
    ptl_event_t ev;
    unsigned int which;
    OK(PtlEQAlloc(ni, 8, &q));
    EXPECT_RC(PtlEQGet(q, &ev), PTL_EQ_EMPTY);
    EXPECT_RC(PtlEQPoll(&q, 1, 0, &ev, &which), PTL_EQ_EMPTY);
    ptl_handle_ni_t owner;
    OK(PtlNIHandle(q, &owner));
    CHECK(PtlHandleIsEqual(owner, ni), "the EQ's NI is not ni");
    OK(PtlEQFree(q));
    EXPECT_RC(PtlEQGet(q, &ev), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQFree(q), PTL_ARG_INVALID);
    return 0;
}

/* bind binds buf to an MD reporting to eq and ct. */
static int bind(void *buf, ptl_size_t len, ptl_handle_ct_t ct, unsigned int opts, ptl_handle_md_t *md)
{
    ptl_md_t d = {.start = buf, .length = len, .options = opts, .eq_handle = eq, .ct_handle = ct};
    return PtlMDBind(ni, &d, md);
}

/* expose appends a persistent ME over buf at match bits bits. */
static int expose(void *buf, ptl_size_t len, ptl_match_bits_t bits, ptl_handle_ct_t ct, unsigned int opts,
                  ptl_handle_me_t *me)
{
    ptl_me_t e;
    memset(&e, 0, sizeof e);
    e.start = buf, e.length = len, e.ct_handle = ct, e.uid = PTL_UID_ANY;
    e.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | opts;
    e.match_id.rank = PTL_RANK_ANY;
    e.match_bits = bits;
    return PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, (void *)(uintptr_t)0xE0, me);
}

static int test_put_get(void)
{
    char win[64], src[32], back[32];
    ptl_handle_me_t me;
    ptl_handle_md_t md, gmd;
    ptl_event_t ev;
    memset(win, 0, sizeof win);
    for (int i = 0; i < 32; i++)
        src[i] = (char)(i * 7 + 1);
    OK(expose(win, sizeof win, 0x11, PTL_CT_NONE, 0, &me));
    OK(next_event(eq, PTL_EVENT_LINK, &ev));
    OK(bind(src, sizeof src, PTL_CT_NONE, 0, &md));
    OK(PtlPut(md, 0, 32, PTL_ACK_REQ, self, pt, 0x11, 8, (void *)(uintptr_t)0xAB, 0xFEED));
    OK(next_event(eq, PTL_EVENT_PUT, &ev));
    CHECK(ev.mlength == 32 && ev.rlength == 32 && ev.remote_offset == 8, "PUT event lengths %" PRIu64 "/%" PRIu64
          " offset %" PRIu64, ev.mlength, ev.rlength, ev.remote_offset);
    CHECK(ev.match_bits == 0x11 && ev.hdr_data == 0xFEED, "PUT event match %" PRIx64 " hdr %" PRIx64,
          ev.match_bits, ev.hdr_data);
    CHECK(ev.user_ptr == (void *)(uintptr_t)0xE0, "PUT event user_ptr %p, want the ME's", ev.user_ptr);
    CHECK(ev.start == win + 8, "PUT event start %p, want %p", ev.start, (void *)(win + 8));
    CHECK(ev.initiator.rank == self.rank && ev.pt_index == pt && ev.ni_fail_type == PTL_NI_OK,
          "PUT event initiator %u pt %u fail %d", ev.initiator.rank, ev.pt_index, ev.ni_fail_type);
    CHECK(memcmp(win + 8, src, 32) == 0, "the window does not hold the data put");
    OK(next_event(eq, PTL_EVENT_ACK, &ev));
    CHECK(ev.user_ptr == (void *)(uintptr_t)0xAB && ev.mlength == 32, "ACK event user_ptr %p mlength %" PRIu64,
          ev.user_ptr, ev.mlength);
    memset(back, 0, sizeof back);
    OK(bind(back, sizeof back, PTL_CT_NONE, 0, &gmd));
    OK(PtlGet(gmd, 0, 32, self, pt, 0x11, 8, (void *)(uintptr_t)0xCD));
    OK(next_event(eq, PTL_EVENT_REPLY, &ev));
    CHECK(ev.user_ptr == (void *)(uintptr_t)0xCD && memcmp(back, src, 32) == 0, "REPLY wrong or data differs");
    /* A put outside the MD is refused. */
    EXPECT_RC(PtlPut(md, 16, 32, PTL_NO_ACK_REQ, self, pt, 0x11, 0, NULL, 0), PTL_ARG_INVALID);
    EXPECT_RC(PtlPut(PTL_INVALID_HANDLE, 0, 1, PTL_NO_ACK_REQ, self, pt, 0x11, 0, NULL, 0), PTL_ARG_INVALID);
    ptl_handle_ni_t owner;
    OK(PtlNIHandle(md, &owner));
    CHECK(PtlHandleIsEqual(owner, ni), "the MD's NI is not ni");
    OK(PtlMDRelease(md));
    OK(PtlMDRelease(gmd));
    EXPECT_RC(PtlMDRelease(md), PTL_ARG_INVALID);
    OK(PtlMEUnlink(me));
    EXPECT_RC(PtlMEUnlink(me), PTL_ARG_INVALID);
    return 0;
}

static int test_iovec(void)
{
    char a[8] = "ABCDEFGH", b[8] = "12345678", win[16];
    ptl_iovec_t iov[2] = {{a, 8}, {b, 8}};
    ptl_handle_me_t me;
    ptl_handle_md_t md;
    ptl_event_t ev;
    memset(win, 0, sizeof win);
    OK(expose(win, sizeof win, 0x12, PTL_CT_NONE, 0, &me));
    OK(next_event(eq, PTL_EVENT_LINK, &ev));
    ptl_md_t d = {.start = iov, .length = 2, .options = PTL_IOVEC, .eq_handle = eq, .ct_handle = PTL_CT_NONE};
    OK(PtlMDBind(ni, &d, &md));
    OK(PtlPut(md, 4, 8, PTL_NO_ACK_REQ, self, pt, 0x12, 0, NULL, 0));
    OK(next_event(eq, PTL_EVENT_PUT, &ev));
    CHECK(memcmp(win, "EFGH1234", 8) == 0, "gathered put gave %.8s", win);
    OK(PtlMDRelease(md));
    OK(PtlMEUnlink(me));
    return 0;
}

static int test_raw_md_all_of_memory(void)
{
    /* A descriptor over all of memory (start NULL, length PTL_SIZE_MAX), as
     * OpenSHMEM binds: local offsets are addresses. */
    char win[16], src[16] = "all of memory!", back[16];
    ptl_handle_md_t md;
    ptl_handle_me_t me;
    ptl_event_t ev;
    memset(win, 0, sizeof win);
    memset(back, 0, sizeof back);
    ptl_md_t d = {.start = NULL, .length = PTL_SIZE_MAX, .options = 0, .eq_handle = eq,
                  .ct_handle = PTL_CT_NONE};
    OK(PtlMDBind(ni, &d, &md));
    OK(expose(win, sizeof win, 0x21, PTL_CT_NONE, 0, &me));
    OK(next_event(eq, PTL_EVENT_LINK, &ev));
    OK(PtlPut(md, (ptl_size_t)(uintptr_t)src, sizeof src, PTL_ACK_REQ, self, pt, 0x21, 0, NULL, 0));
    OK(next_event(eq, PTL_EVENT_ACK, &ev));
    CHECK(memcmp(win, src, sizeof src) == 0, "put over all of memory left \"%.16s\"", win);
    OK(PtlGet(md, (ptl_size_t)(uintptr_t)back, sizeof back, self, pt, 0x21, 0, NULL));
    OK(next_event(eq, PTL_EVENT_REPLY, &ev));
    CHECK(memcmp(back, src, sizeof src) == 0, "get over all of memory brought \"%.16s\"", back);
    OK(PtlMEUnlink(me));
    OK(PtlMDRelease(md));
    return 0;
}

static int test_atomics(void)
{
    int64_t win[2] = {5, 100}, opnd = 7, res = 0, cmp = 100, nv = 42;
    ptl_handle_me_t me;
    ptl_handle_md_t omd, rmd, cmd, nmd;
    ptl_event_t ev;
    OK(expose(win, sizeof win, 0x13, PTL_CT_NONE, 0, &me));
    OK(next_event(eq, PTL_EVENT_LINK, &ev));
    OK(bind(&opnd, 8, PTL_CT_NONE, 0, &omd));
    OK(bind(&res, 8, PTL_CT_NONE, 0, &rmd));
    OK(PtlAtomic(omd, 0, 8, PTL_ACK_REQ, self, pt, 0x13, 0, NULL, 0, PTL_SUM, PTL_INT64_T));
    OK(next_event(eq, PTL_EVENT_ACK, &ev));
    OK(PtlAtomicSync());
    CHECK(win[0] == 12, "SUM gave %" PRId64 ", want 12", win[0]);
    OK(PtlFetchAtomic(rmd, 0, omd, 0, 8, self, pt, 0x13, 0, NULL, 0, PTL_PROD, PTL_INT64_T));
    OK(next_event(eq, PTL_EVENT_REPLY, &ev));
    CHECK(res == 12 && win[0] == 84, "PROD fetched %" PRId64 " left %" PRId64, res, win[0]);
    /* Compare-and-swap at offset 8: 100 == 100, so 42 goes in and 100 comes back. */
    OK(bind(&nv, 8, PTL_CT_NONE, 0, &nmd));
    OK(bind(&cmp, 8, PTL_CT_NONE, 0, &cmd));
    OK(PtlSwap(rmd, 0, nmd, 0, 8, self, pt, 0x13, 8, NULL, 0, &cmp, PTL_CSWAP, PTL_INT64_T));
    OK(next_event(eq, PTL_EVENT_REPLY, &ev));
    CHECK(res == 100 && win[1] == 42, "CSWAP fetched %" PRId64 " left %" PRId64, res, win[1]);
    OK(PtlMDRelease(omd));
    OK(PtlMDRelease(rmd));
    OK(PtlMDRelease(nmd));
    OK(PtlMDRelease(cmd));
    OK(PtlMEUnlink(me));
    return 0;
}

static int test_ct(void)
{
    ptl_handle_ct_t c, c2;
    ptl_ct_event_t v;
    unsigned int which;
    OK(PtlCTAlloc(ni, &c));
    OK(PtlCTAlloc(ni, &c2));
    OK(PtlCTGet(c, &v));
    CHECK(v.success == 0 && v.failure == 0, "new CT is %" PRIu64 "/%" PRIu64, v.success, v.failure);
    OK(PtlCTSet(c, (ptl_ct_event_t){5, 0}));
    OK(PtlCTInc(c, (ptl_ct_event_t){2, 0}));
    OK(PtlCTWait(c, 7, &v));
    CHECK(v.success == 7, "CTWait saw %" PRIu64, v.success);
    ptl_handle_ct_t cs[2] = {c2, c};
    ptl_size_t tests[2] = {1, 7};
    OK(PtlCTPoll(cs, tests, 2, WAIT_MS, &v, &which));
    CHECK(which == 1 && v.success == 7, "CTPoll which %u success %" PRIu64, which, v.success);
    tests[1] = 100;
    EXPECT_RC(PtlCTPoll(cs, tests, 2, 0, &v, &which), PTL_CT_NONE_REACHED);
    /* Triggered counter operations fire when c reaches 10. */
    OK(PtlTriggeredCTInc(c2, (ptl_ct_event_t){3, 0}, c, 10));
    OK(PtlTriggeredCTSet(c2, (ptl_ct_event_t){50, 0}, c, 12));
    OK(PtlCTGet(c2, &v));
    CHECK(v.success == 0, "triggered inc fired early: %" PRIu64, v.success);
    OK(PtlCTInc(c, (ptl_ct_event_t){3, 0}));
    OK(PtlCTWait(c2, 3, &v));
    CHECK(v.success == 3, "triggered inc gave %" PRIu64, v.success);
    /* Cancel the pending set, then reach its threshold: nothing happens. */
    OK(PtlCTCancelTriggered(c));
    OK(PtlCTInc(c, (ptl_ct_event_t){5, 0}));
    OK(PtlCTGet(c2, &v));
    CHECK(v.success == 3, "a cancelled triggered set fired: %" PRIu64, v.success);
    ptl_handle_ni_t owner;
    OK(PtlNIHandle(c, &owner));
    CHECK(PtlHandleIsEqual(owner, ni), "the CT's NI is not ni");
    OK(PtlCTFree(c));
    OK(PtlCTFree(c2));
    EXPECT_RC(PtlCTGet(c, &v), PTL_ARG_INVALID);
    return 0;
}

static int test_triggered_ops(void)
{
    int64_t win[4] = {0, 0, 10, 20}, one = 1, res = 0, nv = 99;
    char msg[8] = "trigger!", back[8];
    ptl_handle_me_t me;
    ptl_handle_md_t pmd, gmd, omd, rmd, nmd;
    ptl_handle_ct_t trig, done;
    ptl_ct_event_t v;
    ptl_event_t ev;
    OK(PtlCTAlloc(ni, &trig));
    OK(PtlCTAlloc(ni, &done));
    OK(expose(win, sizeof win, 0x14, PTL_CT_NONE, PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE, &me));
    OK(bind(msg, 8, done, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_SUCCESS_DISABLE, &pmd));
    OK(bind(back, 8, done, PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_SUCCESS_DISABLE, &gmd));
    OK(bind(&one, 8, done, PTL_MD_EVENT_CT_ACK | PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_SUCCESS_DISABLE, &omd));
    OK(bind(&res, 8, done, PTL_MD_EVENT_CT_REPLY | PTL_MD_EVENT_SUCCESS_DISABLE, &rmd));
    OK(bind(&nv, 8, done, PTL_MD_EVENT_SUCCESS_DISABLE, &nmd));
    /* Chain: each stage fires when trig reaches its threshold. */
    OK(PtlTriggeredPut(pmd, 0, 8, PTL_CT_ACK_REQ, self, pt, 0x14, 0, NULL, 0, trig, 1));
    OK(PtlTriggeredGet(gmd, 0, 8, self, pt, 0x14, 0, NULL, trig, 2));
    OK(PtlTriggeredAtomic(omd, 0, 8, PTL_CT_ACK_REQ, self, pt, 0x14, 16, NULL, 0, PTL_SUM, PTL_INT64_T, trig, 3));
    OK(PtlTriggeredFetchAtomic(rmd, 0, omd, 0, 8, self, pt, 0x14, 24, NULL, 0, PTL_SUM, PTL_INT64_T, trig, 4));
    OK(PtlCTGet(done, &v));
    CHECK(v.success == 0, "triggered operations ran before their trigger: %" PRIu64, v.success);
    for (int i = 1; i <= 4; i++) {
        OK(PtlCTInc(trig, (ptl_ct_event_t){1, 0}));
        OK(PtlCTWait(done, (ptl_size_t)i, &v));
        CHECK(v.failure == 0, "stage %d failed", i);
    }
    CHECK(memcmp(win, "trigger!", 8) == 0 && memcmp(back, "trigger!", 8) == 0, "triggered put/get data wrong");
    CHECK(win[2] == 11 && res == 20 && win[3] == 21, "triggered atomics: %" PRId64 " %" PRId64 " %" PRId64,
          win[2], res, win[3]);
    /* Triggered swap: SWAP 99 into win[3], old value into res. */
    OK(PtlTriggeredSwap(rmd, 0, nmd, 0, 8, self, pt, 0x14, 24, NULL, 0, NULL, PTL_SWAP, PTL_INT64_T, trig, 5));
    OK(PtlCTInc(trig, (ptl_ct_event_t){1, 0}));
    OK(PtlCTWait(done, 5, &v));
    CHECK(res == 21 && win[3] == 99, "triggered swap fetched %" PRId64 " left %" PRId64, res, win[3]);
    EXPECT_RC(PtlTriggeredPut(pmd, 0, 8, PTL_NO_ACK_REQ, self, pt, 0x14, 0, NULL, 0, PTL_CT_NONE, 1),
              PTL_ARG_INVALID);
    (void)ev;
    OK(PtlMDRelease(pmd));
    OK(PtlMDRelease(gmd));
    OK(PtlMDRelease(omd));
    OK(PtlMDRelease(rmd));
    OK(PtlMDRelease(nmd));
    OK(PtlMEUnlink(me));
    OK(PtlCTFree(trig));
    OK(PtlCTFree(done));
    return 0;
}

static int test_search(void)
{
    char ovf[64], src[16] = "unexpected-data";
    ptl_handle_me_t ome;
    ptl_handle_md_t md;
    ptl_event_t ev;
    ptl_me_t e;
    memset(&e, 0, sizeof e);
    e.start = ovf, e.length = sizeof ovf, e.ct_handle = PTL_CT_NONE, e.uid = PTL_UID_ANY;
    e.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL;
    e.match_id.rank = PTL_RANK_ANY;
    e.ignore_bits = ~(ptl_match_bits_t)0;
    OK(PtlMEAppend(ni, pt, &e, PTL_OVERFLOW_LIST, (void *)(uintptr_t)0x0F, &ome));
    OK(next_event(eq, PTL_EVENT_LINK, &ev));
    OK(bind(src, sizeof src, PTL_CT_NONE, 0, &md));
    OK(PtlPut(md, 0, 16, PTL_NO_ACK_REQ, self, pt, 0x77, 0, NULL, 5));
    OK(next_event(eq, PTL_EVENT_PUT, &ev));
    CHECK(ev.ptl_list == PTL_OVERFLOW_LIST && ev.user_ptr == (void *)(uintptr_t)0x0F,
          "the unexpected put landed on list %d, user_ptr %p", ev.ptl_list, ev.user_ptr);
    /* The header waits in the unexpected list: search it, then take it. */
    ptl_me_t s;
    memset(&s, 0, sizeof s);
    s.ct_handle = PTL_CT_NONE, s.uid = PTL_UID_ANY, s.options = PTL_ME_OP_PUT;
    s.match_id.rank = PTL_RANK_ANY;
    s.match_bits = 0x77;
    OK(PtlMESearch(ni, pt, &s, PTL_SEARCH_ONLY, (void *)(uintptr_t)0x5E));
    OK(next_event(eq, PTL_EVENT_SEARCH, &ev));
    CHECK(ev.ni_fail_type == PTL_NI_OK && ev.user_ptr == (void *)(uintptr_t)0x5E && ev.hdr_data == 5,
          "SEARCH event fail %d user_ptr %p hdr %" PRIu64, ev.ni_fail_type, ev.user_ptr, ev.hdr_data);
    /* Deleting reports the header as an overflow event that locates its data. */
    OK(PtlMESearch(ni, pt, &s, PTL_SEARCH_DELETE, NULL));
    OK(next_event(eq, PTL_EVENT_PUT_OVERFLOW, &ev));
    CHECK(ev.ni_fail_type == PTL_NI_OK && ev.mlength == 16 && ev.start != NULL &&
              memcmp(ev.start, "unexpected-data", 16) == 0,
          "SEARCH_DELETE overflow event: fail %d mlength %" PRIu64, ev.ni_fail_type, ev.mlength);
    OK(PtlMESearch(ni, pt, &s, PTL_SEARCH_ONLY, NULL));
    OK(next_event(eq, PTL_EVENT_SEARCH, &ev));
    CHECK(ev.ni_fail_type == PTL_NI_NO_MATCH, "the deleted header is still there");
    OK(PtlMEUnlink(ome));
    OK(PtlMDRelease(md));
    return 0;
}

/* test_le runs a non-matching NI: list entries, a put into one, a search. */
static int test_le(void)
{
    ptl_handle_ni_t nm;
    ptl_handle_eq_t q;
    ptl_pt_index_t p;
    ptl_handle_le_t le;
    ptl_handle_md_t md;
    ptl_process_t me;
    ptl_event_t ev;
    char win[16], src[8] = "listent";
    memset(win, 0, sizeof win);
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_NO_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &nm));
    CHECK(!PtlHandleIsEqual(nm, ni), "matching and non-matching NIs share a handle");
    ptl_process_t phys;
    OK(PtlGetPhysId(nm, &phys));
    OK(map_self(nm, phys));
    OK(PtlGetId(nm, &me));
    OK(PtlEQAlloc(nm, 64, &q));
    OK(PtlPTAlloc(nm, 0, q, PTL_PT_ANY, &p));
    ptl_le_t l = {.start = win, .length = sizeof win, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                  .options = PTL_LE_OP_PUT | PTL_LE_EVENT_LINK_DISABLE};
    OK(PtlLEAppend(nm, p, &l, PTL_PRIORITY_LIST, (void *)(uintptr_t)0x1E, &le));
    EXPECT_RC(PtlMEUnlink(le), PTL_ARG_INVALID); /* an LE handle is not an ME handle */
    ptl_md_t d = {.start = src, .length = 8, .options = 0, .eq_handle = q, .ct_handle = PTL_CT_NONE};
    OK(PtlMDBind(nm, &d, &md));
    OK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, me, p, 0, 0, NULL, 0));
    unsigned int which;
    for (;;) {
        OK(PtlEQPoll(&q, 1, WAIT_MS, &ev, &which));
        if (ev.type == PTL_EVENT_PUT)
            break;
    }
    CHECK(memcmp(win, "listent", 8) == 0 && ev.user_ptr == (void *)(uintptr_t)0x1E, "LE put data or event wrong");
    ptl_le_t s = {.start = NULL, .length = 0, .ct_handle = PTL_CT_NONE, .uid = PTL_UID_ANY,
                  .options = PTL_LE_OP_PUT};
    OK(PtlLESearch(nm, p, &s, PTL_SEARCH_ONLY, NULL));
    do /* the put's SEND may come after its PUT: the queue is shared */
        OK(PtlEQWait(q, &ev));
    while (ev.type == PTL_EVENT_SEND);
    CHECK(ev.type == PTL_EVENT_SEARCH && ev.ni_fail_type == PTL_NI_NO_MATCH, "LESearch event %d fail %d", ev.type,
          ev.ni_fail_type);
    OK(PtlLEUnlink(le));
    OK(PtlMDRelease(md));
    OK(PtlPTFree(nm, p));
    OK(PtlEQFree(q));
    OK(PtlNIFini(nm));
    EXPECT_RC(PtlEQFree(q), PTL_ARG_INVALID);
    return 0;
}

/* test_bad_args: NULL and foreign arguments are refused, never dereferenced. */
static int test_bad_args(void)
{
    ptl_handle_md_t md;
    ptl_handle_me_t me;
    ptl_handle_le_t le;
    ptl_handle_eq_t q;
    ptl_handle_ct_t ct;
    ptl_size_t n;
    unsigned int which;
    ptl_ct_event_t v;
    ptl_event_t ev;
    ptl_size_t test = 1;
    EXPECT_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, NULL),
              PTL_ARG_INVALID);
    EXPECT_RC(PtlGetId(ni, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlGetPhysId(ni, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlGetUid(ni, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlNIStatus(ni, PTL_SR_DROP_COUNT, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlNIHandle(ni, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlGetMap(ni, 4, NULL, &n), PTL_ARG_INVALID);
    EXPECT_RC(PtlSetMap(ni, 4, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlPTAlloc(ni, 0, PTL_EQ_NONE, PTL_PT_ANY, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlMDBind(ni, NULL, &md), PTL_ARG_INVALID);
    EXPECT_RC(PtlMEAppend(ni, pt, NULL, PTL_PRIORITY_LIST, NULL, &me), PTL_ARG_INVALID);
    EXPECT_RC(PtlLEAppend(ni, pt, NULL, PTL_PRIORITY_LIST, NULL, &le), PTL_ARG_INVALID);
    EXPECT_RC(PtlMESearch(ni, pt, NULL, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlLESearch(ni, pt, NULL, PTL_SEARCH_ONLY, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQAlloc(ni, 4, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlCTAlloc(ni, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQGet(eq, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQWait(eq, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQPoll(NULL, 1, 0, &ev, &which), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQPoll(&eq, 0, 0, &ev, &which), PTL_ARG_INVALID);
    EXPECT_RC(PtlCTPoll(NULL, &test, 1, 0, &v, &which), PTL_ARG_INVALID);
    OK(PtlCTAlloc(ni, &ct));
    EXPECT_RC(PtlCTGet(ct, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlCTWait(ct, 1, NULL), PTL_ARG_INVALID);
    EXPECT_RC(PtlCTPoll(&ct, NULL, 1, 0, &v, &which), PTL_ARG_INVALID);
    /* A handle of one kind where another is expected. */
    EXPECT_RC(PtlCTFree(eq), PTL_ARG_INVALID);
    EXPECT_RC(PtlEQFree(ct), PTL_ARG_INVALID);
    EXPECT_RC(PtlMDRelease(ni), PTL_ARG_INVALID);
    EXPECT_RC(PtlNIFini(ct), PTL_ARG_INVALID);
    EXPECT_RC(PtlSwap(ct, 0, ct, 0, 8, self, pt, 0, 0, NULL, 0, NULL, PTL_SWAP, PTL_INT64_T), PTL_ARG_INVALID);
    EXPECT_RC(PtlTriggeredCTInc(ct, (ptl_ct_event_t){1, 0}, eq, 1), PTL_ARG_INVALID);
    /* A handle value that was never issued. */
    EXPECT_RC(PtlCTGet(ct ^ 0x00055555u, &v), PTL_ARG_INVALID);
    OK(PtlCTFree(ct));
    (void)q;
    return 0;
}

static int test_unsupported(void)
{
    ptl_handle_me_t me;
    EXPECT_RC(PtlTriggeredMEAppend(ni, pt, NULL, PTL_PRIORITY_LIST, NULL, &me, PTL_CT_NONE, 0), PTL_FAIL);
    EXPECT_RC(PtlTriggeredMEUnlink(PTL_INVALID_HANDLE, PTL_CT_NONE, 0), PTL_FAIL);
    return 0;
}

/* test_threads: four threads bind, put to the process itself and wait on
 * their own counters at the same time. */
enum { THREADS = 4, THREAD_PUTS = 200 };

struct thread_arg {
    int id, rc;
    char win[16];
};

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    ptl_handle_ct_t ct;
    ptl_handle_me_t h;
    ptl_handle_md_t md;
    ptl_ct_event_t v;
    char src[16];
    memset(src, 'a' + a->id, sizeof src);
    a->rc = PtlCTAlloc(ni, &ct);
    if (a->rc == PTL_OK) {
        ptl_me_t e;
        memset(&e, 0, sizeof e);
        e.start = a->win, e.length = sizeof a->win, e.ct_handle = ct, e.uid = PTL_UID_ANY;
        e.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
        e.match_id.rank = PTL_RANK_ANY;
        e.match_bits = 0x7000 + (ptl_match_bits_t)a->id;
        a->rc = PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &h);
    }
    if (a->rc == PTL_OK) {
        ptl_md_t d = {.start = src, .length = sizeof src, .options = 0, .eq_handle = PTL_EQ_NONE,
                      .ct_handle = PTL_CT_NONE};
        a->rc = PtlMDBind(ni, &d, &md);
    }
    for (int i = 0; a->rc == PTL_OK && i < THREAD_PUTS; i++) {
        a->rc = PtlPut(md, 0, sizeof src, PTL_NO_ACK_REQ, self, pt, 0x7000 + (ptl_match_bits_t)a->id, 0, NULL, 0);
        if (a->rc == PTL_OK)
            a->rc = PtlCTWait(ct, (ptl_size_t)i + 1, &v);
    }
    if (a->rc == PTL_OK && memcmp(a->win, src, sizeof src) != 0)
        a->rc = PTL_FAIL;
    if (a->rc == PTL_OK)
        a->rc = PtlMDRelease(md);
    while (a->rc == PTL_OK && (a->rc = PtlMEUnlink(h)) == PTL_IN_USE) {
        ptl_event_t ev;
        PtlEQGet(eq, &ev);
        a->rc = PTL_OK;
    }
    if (a->rc == PTL_OK)
        a->rc = PtlCTFree(ct);
    return NULL;
}

static int test_threads(void)
{
    pthread_t th[THREADS];
    struct thread_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].id = i;
        CHECK(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++)
        CHECK(args[i].rc == PTL_OK, "thread %d: %s", i, rc_name(args[i].rc));
    return 0;
}

static int test_fini(void)
{
    OK(PtlPTFree(ni, pt));
    OK(PtlEQFree(eq));
    OK(PtlNIFini(ni));
    EXPECT_RC(PtlNIFini(ni), PTL_ARG_INVALID);
    PtlFini();
    ptl_handle_ni_t h;
    EXPECT_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &h),
              PTL_NO_INIT);
    return 0;
}

/* test_reinit: after the last PtlFini the library starts again (the Go
 * runtime stays loaded) with fresh handles. */
static int test_reinit(void)
{
    ptl_handle_ni_t h;
    ptl_handle_eq_t q;
    OK(PtlInit());
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &h));
    OK(PtlEQAlloc(h, 4, &q));
    EXPECT_RC(PtlEQFree(eq), PTL_ARG_INVALID); /* a handle of the previous session */
    OK(PtlEQFree(q));
    OK(PtlNIFini(h));
    PtlFini();
    return 0;
}

int main(void)
{
    RUN(test_before_init);
    RUN(test_init);
    if (t_failed)
        return test_summary();
    RUN(test_ni);
    RUN(test_pt);
    RUN(test_stale_handle);
    RUN(test_use_once_slots);
    RUN(test_eq);
    RUN(test_put_get);
    RUN(test_iovec);
    RUN(test_raw_md_all_of_memory);
    RUN(test_atomics);
    RUN(test_ct);
    RUN(test_triggered_ops);
    RUN(test_search);
    RUN(test_le);
    RUN(test_bad_args);
    RUN(test_unsupported);
    RUN(test_threads);
    RUN(test_fini);
    RUN(test_reinit);
    return test_summary();
}
