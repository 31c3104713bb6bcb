/*
 * ptl_callcost.c: the cost of one call through the C ABI, in one process:
 * PtlCTGet of a counter that does not change (a poll: the shim runs a round of
 * the engine's progress in Go) and PtlEQGet on an empty queue (which also runs
 * the engine's progress once). It prints the fastest of 5 batches per call, in ns;
 * capi's Go test measures the same calls through portals/ptl in its own
 * process and reports the ratio. Usage: ptl_callcost [calls per batch]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <portals4.h>

#define DIE(call)                                                                \
    do {                                                                         \
        int rc_ = (call);                                                        \
        if (rc_ != PTL_OK) {                                                     \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, rc_); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    ptl_handle_ni_t ni;
    ptl_handle_ct_t ct;
    ptl_handle_eq_t eq;
    ptl_ct_event_t v;
    ptl_event_t ev;
    DIE(PtlInit());
    DIE(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni));
    DIE(PtlCTAlloc(ni, &ct));
    DIE(PtlEQAlloc(ni, 16, &eq));
    double best_ct = 1e30, best_eq = 1e30;
    for (int b = 0; b < 5; b++) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            if (PtlCTGet(ct, &v) != PTL_OK)
                return 1;
        double t1 = now();
        for (long i = 0; i < n; i++)
            if (PtlEQGet(eq, &ev) != PTL_EQ_EMPTY)
                return 1;
        double t2 = now();
        if ((t1 - t0) / n < best_ct)
            best_ct = (t1 - t0) / n;
        if ((t2 - t1) / n < best_eq)
            best_eq = (t2 - t1) / n;
    }
    printf("callcost api=c ctget_ns=%.1f eqget_ns=%.1f\n", best_ct, best_eq);
    DIE(PtlEQFree(eq));
    DIE(PtlCTFree(ct));
    DIE(PtlNIFini(ni));
    PtlFini();
    return 0;
}
