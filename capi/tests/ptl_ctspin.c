/*
 * ptl_ctspin.c: counting events read in place by the shim.
 *
 * The shim answers PtlCTGet, a satisfied PtlCTWait and a satisfied PtlCTPoll
 * from the counter's value in memory outside the Go heap, without entering Go
 * (goportals_go_calls counts the calls that do enter it). A PtlCTGet that finds
 * the value unchanged drives a round of progress, so a program that spins on
 * PtlCTGet alone completes operations; the Go test runs this program with
 * GOMAXPROCS=1 and PTL_PROGRESS_GOROUTINE=0, alone (puts to itself) and under
 * ptlrun -np 2 (ping-pong), where nothing else drives the engine.
 */
#define _GNU_SOURCE
#include "ptltest.h"
#include <portals4_goportals.h>
#include <pthread.h>
#include <time.h>

#define PT_INDEX 11
#define DATA_BITS 0x5ULL
#define BAR_BITS 0xBA77ULL
#define ROUNDS 200
/* A spin that has not seen its value after this many PtlCTGet calls is stuck:
 * the calls did not drive progress. */
#define SPIN_LIMIT 50000000L

static ptl_handle_ni_t ni;
static ptl_process_t self, peer;
static int nranks;
static ptl_pt_index_t pt;
static ptl_handle_eq_t eq;

/* calls_since returns how many calls into Go the thread made since *mark, and
 * moves the mark. */
static uint64_t calls_since(uint64_t *mark)
{
    uint64_t now = goportals_go_calls(), d = now - *mark;
    *mark = now;
    return d;
}

static int test_get_reads_in_place(void)
{
    ptl_handle_ct_t ct;
    ptl_ct_event_t v, set = {.success = 5, .failure = 0}, inc = {.success = 2, .failure = 0};
    uint64_t mark;
    OK(PtlCTAlloc(ni, &ct));
    OK(PtlCTSet(ct, set));
    mark = goportals_go_calls();
    OK(PtlCTGet(ct, &v));
    CHECK(v.success == 5 && v.failure == 0, "PtlCTGet = {%" PRIu64 ", %" PRIu64 "}, want {5, 0}",
          (uint64_t)v.success, (uint64_t)v.failure);
    CHECK(calls_since(&mark) == 0, "PtlCTGet of a changed value entered Go");
    /* The same value again: the caller polls, so the call drives progress in Go. */
    OK(PtlCTGet(ct, &v));
    CHECK(v.success == 5, "PtlCTGet again = %" PRIu64 ", want 5", (uint64_t)v.success);
    CHECK(calls_since(&mark) == 1, "PtlCTGet of an unchanged value did not drive progress");
    OK(PtlCTInc(ct, inc));
    calls_since(&mark);
    OK(PtlCTGet(ct, &v));
    CHECK(v.success == 7 && v.failure == 0, "after PtlCTInc: %" PRIu64, (uint64_t)v.success);
    CHECK(calls_since(&mark) == 0, "PtlCTGet after PtlCTInc entered Go");
    OK(PtlCTFree(ct));
    return 0;
}

static int test_satisfied_waits_stay_in_c(void)
{
    ptl_handle_ct_t ct[2];
    ptl_ct_event_t v, set = {.success = 7, .failure = 0}, fail = {.success = 0, .failure = 1}, zero = {0, 0};
    ptl_size_t tests[2] = {100, 7};
    unsigned int which = 99;
    uint64_t mark;
    OK(PtlCTAlloc(ni, &ct[0]));
    OK(PtlCTAlloc(ni, &ct[1]));
    OK(PtlCTSet(ct[1], set));
    mark = goportals_go_calls();
    OK(PtlCTWait(ct[1], 7, &v));
    CHECK(v.success == 7, "PtlCTWait = %" PRIu64 ", want 7", (uint64_t)v.success);
    OK(PtlCTPoll(ct, tests, 2, 0, &v, &which));
    CHECK(which == 1 && v.success == 7, "PtlCTPoll: which %u success %" PRIu64 ", want 1 and 7", which,
          (uint64_t)v.success);
    CHECK(calls_since(&mark) == 0, "a satisfied PtlCTWait or PtlCTPoll entered Go");
    /* A failure ends every wait. */
    OK(PtlCTInc(ct[0], fail));
    calls_since(&mark);
    OK(PtlCTWait(ct[0], 1000, &v));
    CHECK(v.failure == 1 && v.success == 0, "PtlCTWait after a failure: {%" PRIu64 ", %" PRIu64 "}",
          (uint64_t)v.success, (uint64_t)v.failure);
    tests[0] = 1000, tests[1] = 1000;
    OK(PtlCTPoll(ct, tests, 2, 0, &v, &which));
    CHECK(which == 0 && v.failure == 1, "PtlCTPoll after a failure: which %u", which);
    CHECK(calls_since(&mark) == 0, "a wait ended by a failure entered Go");
    /* Unsatisfied: the poll runs in Go and times out. */
    OK(PtlCTSet(ct[0], zero));
    EXPECT_RC(PtlCTPoll(ct, tests, 2, 1, &v, &which), PTL_CT_NONE_REACHED);
    CHECK(calls_since(&mark) == 2, "an unsatisfied PtlCTPoll did not run in Go");
    OK(PtlCTFree(ct[0]));
    OK(PtlCTFree(ct[1]));
    return 0;
}

static int test_reused_cell_starts_at_zero(void)
{
    ptl_handle_ct_t a, b;
    ptl_ct_event_t v, set = {.success = 9, .failure = 3};
    OK(PtlCTAlloc(ni, &a));
    OK(PtlCTSet(a, set));
    OK(PtlCTGet(a, &v));
    CHECK(v.success == 9 && v.failure == 3, "PtlCTGet = {%" PRIu64 ", %" PRIu64 "}", (uint64_t)v.success,
          (uint64_t)v.failure);
    OK(PtlCTFree(a));
    EXPECT_RC(PtlCTGet(a, &v), PTL_ARG_INVALID);
    EXPECT_RC(PtlCTWait(a, 0, &v), PTL_ARG_INVALID);
    /* The next counter may take the freed one's cell: it starts at zero. */
    OK(PtlCTAlloc(ni, &b));
    OK(PtlCTGet(b, &v));
    CHECK(v.success == 0 && v.failure == 0, "a new counter reads {%" PRIu64 ", %" PRIu64 "}",
          (uint64_t)v.success, (uint64_t)v.failure);
    OK(PtlCTWait(b, 0, &v));
    EXPECT_RC(PtlCTGet(b, NULL), PTL_ARG_INVALID);
    OK(PtlCTFree(b));
    return 0;
}

struct waiter {
    ptl_handle_ct_t ct;
    ptl_handle_eq_t eq;
    _Atomic int started;
    int ct_rc, eq_rc;
};

static void *wait_ct(void *arg)
{
    struct waiter *w = arg;
    ptl_ct_event_t v;
    w->started = 1;
    w->ct_rc = PtlCTWait(w->ct, 1000, &v);
    return NULL;
}

static void *wait_eq(void *arg)
{
    struct waiter *w = arg;
    ptl_event_t ev;
    w->started = 1;
    w->eq_rc = PtlEQWait(w->eq, &ev);
    return NULL;
}

/* pause_ms sleeps: a waiter that has started has entered its wait by then. */
static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* test_free_interrupts_waits: freeing a counter or a queue while another thread
 * waits on it ends the wait with PTL_INTERRUPTED (the wait spins in Go first). */
static int test_free_interrupts_waits(void)
{
    struct waiter w = {.started = 0};
    pthread_t th;
    OK(PtlCTAlloc(ni, &w.ct));
    CHECK(pthread_create(&th, NULL, wait_ct, &w) == 0, "pthread_create");
    while (!w.started)
        pause_ms(1);
    pause_ms(100);
    OK(PtlCTFree(w.ct));
    pthread_join(th, NULL);
    CHECK(w.ct_rc == PTL_INTERRUPTED, "PtlCTWait on a counter freed meanwhile returned %s", rc_name(w.ct_rc));
    w.started = 0;
    OK(PtlEQAlloc(ni, 8, &w.eq));
    CHECK(pthread_create(&th, NULL, wait_eq, &w) == 0, "pthread_create");
    while (!w.started)
        pause_ms(1);
    pause_ms(100);
    OK(PtlEQFree(w.eq));
    pthread_join(th, NULL);
    CHECK(w.eq_rc == PTL_INTERRUPTED, "PtlEQWait on a queue freed meanwhile returned %s", rc_name(w.eq_rc));
    return 0;
}

/* barrier_put puts one byte into the peer's barrier entry and waits for the
 * acknowledgment; with retry set it repeats (after a pause) while the peer has
 * no entry yet. */
static int barrier_put(int retry)
{
    static char one = 1;
    ptl_handle_md_t bmd;
    ptl_md_t d = {.start = &one, .length = 1, .options = PTL_MD_EVENT_SEND_DISABLE, .eq_handle = eq,
                  .ct_handle = PTL_CT_NONE};
    int rc = PtlMDBind(ni, &d, &bmd);
    for (int k = 0; rc == PTL_OK && k < 400; k++) {
        ptl_event_t ev;
        unsigned int which;
        rc = PtlPut(bmd, 0, 1, PTL_ACK_REQ, peer, pt, BAR_BITS, 0, NULL, 0);
        while (rc == PTL_OK && (rc = PtlEQPoll(&eq, 1, 20000, &ev, &which)) == PTL_OK && ev.type != PTL_EVENT_ACK)
            ;
        if (rc != PTL_OK || ev.ni_fail_type == PTL_NI_OK)
            break;
        if (!retry) {
            rc = PTL_FAIL;
            break;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    int rrc = PtlMDRelease(bmd);
    return rc != PTL_OK ? rc : rrc;
}

/* spin_until spins on PtlCTGet alone until ct's successes reach n and adds the
 * calls it took to *spins. */
static int spin_until(ptl_handle_ct_t ct, ptl_size_t n, long *spins)
{
    ptl_ct_event_t v;
    for (long i = 0; i < SPIN_LIMIT; i++) {
        int rc = PtlCTGet(ct, &v);
        if (rc != PTL_OK)
            return rc;
        if (v.failure != 0)
            return PTL_FAIL;
        if (v.success >= n) {
            *spins += i + 1;
            return PTL_OK;
        }
    }
    return PTL_CT_NONE_REACHED;
}

/* test_spin_on_get_completes: ping-pong of puts (to itself when alone), each
 * side waiting by spinning on PtlCTGet only. */
static int test_spin_on_get_completes(void)
{
    ptl_handle_ct_t ct, bct;
    ptl_handle_me_t me, bme;
    ptl_handle_md_t md;
    ptl_ct_event_t v;
    char buf[8], bbuf[8], src[8] = "spin";
    long spins = 0, s = 0;
    OK(PtlCTAlloc(ni, &ct));
    OK(PtlCTAlloc(ni, &bct));
    ptl_me_t e;
    memset(&e, 0, sizeof e);
    e.start = buf, e.length = sizeof buf, e.ct_handle = ct, e.uid = PTL_UID_ANY;
    e.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    e.match_id.rank = PTL_RANK_ANY;
    e.match_bits = DATA_BITS;
    OK(PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &me));
    e.start = bbuf, e.ct_handle = bct, e.match_bits = BAR_BITS;
    OK(PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &bme));
    ptl_md_t d = {.start = src, .length = sizeof src, .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
    OK(PtlMDBind(ni, &d, &md));

    /* Start together: each side's barrier put lands in the other's entry. */
    if (nranks > 1) {
        OK(barrier_put(1));
        EXPECT_RC(spin_until(bct, 1, &s), PTL_OK);
    }
    uint64_t mark = goportals_go_calls();
    for (ptl_size_t i = 0; i < ROUNDS; i++) {
        if (self.rank == 0 || nranks == 1) {
            OK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, peer, pt, DATA_BITS, 0, NULL, 0));
            EXPECT_RC(spin_until(ct, i + 1, &spins), PTL_OK);
        } else {
            EXPECT_RC(spin_until(ct, i + 1, &spins), PTL_OK);
            OK(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, peer, pt, DATA_BITS, 0, NULL, 0));
        }
    }
    uint64_t calls = calls_since(&mark);
    CHECK(memcmp(buf, src, sizeof src) == 0, "the puts did not land: %.8s", buf);
    printf("%sctspin: %d round trips, %.2f PtlCTGet and %.2f calls into Go per round trip\n", t_prefix, ROUNDS,
           (double)spins / ROUNDS, (double)calls / ROUNDS);
    /* Leave together: the peer's last put has landed when its barrier put does. */
    if (nranks > 1) {
        OK(barrier_put(0));
        EXPECT_RC(spin_until(bct, 2, &s), PTL_OK);
    }
    OK(PtlCTGet(ct, &v));
    CHECK(v.success == ROUNDS, "arrivals %" PRIu64 ", want %d", (uint64_t)v.success, ROUNDS);
    OK(PtlMDRelease(md));
    for (int k = 0; k < 2; k++) {
        int rc;
        long tries = 0;
        while ((rc = PtlMEUnlink(k ? bme : me)) == PTL_IN_USE && tries++ < SPIN_LIMIT)
            PtlCTGet(ct, &v);
        OK(rc);
    }
    OK(PtlCTFree(ct));
    OK(PtlCTFree(bct));
    return 0;
}

int main(void)
{
    if (PtlInit() != PTL_OK) {
        printf("FAIL PtlInit\n0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    if (PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni) != PTL_OK ||
        PtlGetId(ni, &self) != PTL_OK) {
        printf("FAIL PtlNIInit\n0 passed, 1 failed, 0 skipped\n");
        return 1;
    }
    ptl_size_t n = 0;
    if (PtlGetMap(ni, 0, NULL, &n) != PTL_OK || n == 0)
        n = 1;
    nranks = (int)n;
    peer = ptl_rank(nranks > 1 ? 1 - self.rank : self.rank);
    t_prefix = self.rank == 0 ? "" : "rank1: ";
    if (PtlEQAlloc(ni, 64, &eq) != PTL_OK || PtlPTAlloc(ni, 0, eq, PT_INDEX, &pt) != PTL_OK) {
        printf("%sFAIL setup\n%s0 passed, 1 failed, 0 skipped\n", t_prefix, t_prefix);
        return 1;
    }
    RUN(test_get_reads_in_place);
    RUN(test_satisfied_waits_stay_in_c);
    RUN(test_reused_cell_starts_at_zero);
    RUN(test_free_interrupts_waits);
    RUN(test_spin_on_get_completes);
    PtlPTFree(ni, pt);
    PtlEQFree(eq);
    PtlNIFini(ni);
    PtlFini();
    return test_summary();
}
