/*
 * ptl_putlat.c: put latency through the C ABI, two ranks (ptlrun -np 2).
 *
 * Ping-pong of 8-byte puts without acknowledgment: each rank's entry counts
 * arrivals on a counting event, rank 0 puts and waits for the answer, rank 1
 * waits and answers. The one-way latency is half the round trip (printed as
 * the mean and as half the median round trip). capi/bench/
 * putlat does the same through the Go API; capi's Go test runs both in one job
 * and reports the ratio. Usage: ptl_putlat [iterations]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <portals4.h>
#include <portals4_goportals.h>

#define PT_INDEX 9
#define BAR_BITS 0xBA77ULL
#define DATA_BITS 0x1ULL
#define WARMUP 1000

#define DIE(call)                                                         \
    do {                                                                  \
        int rc_ = (call);                                                 \
        if (rc_ != PTL_OK) {                                              \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, rc_); \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 20000;
    ptl_handle_ni_t ni;
    ptl_handle_eq_t q;
    ptl_handle_ct_t ct, bct;
    ptl_handle_me_t me, bme;
    ptl_handle_md_t md, bmd;
    ptl_pt_index_t pt;
    ptl_process_t self, peer;
    ptl_ct_event_t v;
    ptl_event_t ev;
    char buf[8], src[8] = "latency", bbuf[8];

    DIE(PtlInit());
    DIE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni));
    DIE(PtlGetId(ni, &self));
    memset(&peer, 0, sizeof peer);
    peer.rank = 1 - self.rank;
    DIE(PtlEQAlloc(ni, 64, &q));
    DIE(PtlPTAlloc(ni, 0, q, PT_INDEX, &pt));
    DIE(PtlCTAlloc(ni, &ct));
    DIE(PtlCTAlloc(ni, &bct));

    ptl_me_t e;
    memset(&e, 0, sizeof e);
    e.start = buf, e.length = sizeof buf, e.ct_handle = ct, e.uid = PTL_UID_ANY;
    e.options = PTL_ME_OP_PUT | PTL_ME_EVENT_CT_COMM | PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE;
    e.match_id.rank = PTL_RANK_ANY;
    e.match_bits = DATA_BITS;
    DIE(PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &me));
    e.start = bbuf, e.ct_handle = bct, e.match_bits = BAR_BITS;
    DIE(PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &bme));
    ptl_md_t d = {.start = src, .length = 8, .options = 0, .eq_handle = PTL_EQ_NONE, .ct_handle = PTL_CT_NONE};
    DIE(PtlMDBind(ni, &d, &md));
    d.eq_handle = q, d.options = PTL_MD_EVENT_SEND_DISABLE;
    DIE(PtlMDBind(ni, &d, &bmd));

    /* Start together: put to the peer's barrier entry until it is there. */
    for (;;) {
        unsigned int which;
        DIE(PtlPut(bmd, 0, 1, PTL_ACK_REQ, peer, pt, BAR_BITS, 0, NULL, 0));
        DIE(PtlEQPoll(&q, 1, 20000, &ev, &which));
        if (ev.type == PTL_EVENT_ACK && ev.ni_fail_type == PTL_NI_OK)
            break;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    DIE(PtlCTWait(bct, 1, &v));

    double t0 = 0, prev = 0;
    uint64_t calls0 = 0;
    double *rts = calloc((size_t)iters, sizeof *rts); /* rank 0's round trips, one by one */
    if (!rts)
        return 1;
    for (long i = 0; i < WARMUP + iters; i++) {
        if (i == WARMUP) {
            t0 = prev = now();
            calls0 = goportals_go_calls();
        }
        if (self.rank == 0) {
            DIE(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, peer, pt, DATA_BITS, 0, NULL, 0));
            DIE(PtlCTWait(ct, (ptl_size_t)i + 1, &v));
            if (i >= WARMUP) {
                double t = now();
                rts[i - WARMUP] = t - prev;
                prev = t;
            }
        } else {
            DIE(PtlCTWait(ct, (ptl_size_t)i + 1, &v));
            DIE(PtlPut(md, 0, 8, PTL_NO_ACK_REQ, peer, pt, DATA_BITS, 0, NULL, 0));
        }
    }
    double dt = now() - t0;
    double calls = (double)(goportals_go_calls() - calls0) / (double)iters;
    if (self.rank == 0) {
        qsort(rts, (size_t)iters, sizeof *rts, cmp_double);
        printf("putlat api=c bytes=8 iters=%ld oneway_us=%.3f median_oneway_us=%.3f go_calls_per_round_trip=%.2f\n",
               iters, dt / (double)iters / 2 * 1e6, rts[iters / 2] / 2 * 1e6, calls);
    }
    free(rts);

    /* Leave together, so no put is left in flight toward a finished rank. */
    DIE(PtlPut(bmd, 0, 1, PTL_ACK_REQ, peer, pt, BAR_BITS, 0, NULL, 0));
    DIE(PtlCTWait(bct, 2, &v));
    for (;;) {
        unsigned int which;
        DIE(PtlEQPoll(&q, 1, 20000, &ev, &which));
        if (ev.type == PTL_EVENT_ACK)
            break;
    }
    DIE(PtlMDRelease(md));
    DIE(PtlMDRelease(bmd));
    /* An entry stays in use until the last transfer into it completes. */
    for (int k = 0; k < 2; k++) {
        int rc;
        while ((rc = PtlMEUnlink(k ? bme : me)) == PTL_IN_USE) {
            unsigned int which;
            PtlEQPoll(&q, 1, 1, &ev, &which);
        }
        DIE(rc);
    }
    DIE(PtlCTFree(ct));
    DIE(PtlCTFree(bct));
    DIE(PtlPTFree(ni, pt));
    DIE(PtlEQFree(q));
    DIE(PtlNIFini(ni));
    PtlFini();
    return 0;
}
