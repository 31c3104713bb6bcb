/*
 * ptltest.h: a tiny test runner for the C ABI tests.
 *
 * Each test is a function returning 0 (pass) or 1 (fail); CHECK and EXPECT_RC
 * record the first failure's reason. RUN prints "PASS name" or
 * "FAIL name (reason)" and test_summary prints the closing line the Go runner
 * prints, "N passed, M failed, K skipped", and returns the exit status.
 */
#ifndef PTLTEST_H
#define PTLTEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <portals4.h>

static int t_passed, t_failed, t_skipped;
static char t_reason[512];
static const char *t_prefix = "";

static void t_set_reason(const char *file, int line, const char *fmt, ...)
{
    int n = snprintf(t_reason, sizeof t_reason, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof t_reason)
        vsnprintf(t_reason + n, sizeof t_reason - (size_t)n, fmt, ap);
    va_end(ap);
}

static const char *rc_name(int rc)
{
    static const char *names[] = {"PTL_OK", "PTL_ARG_INVALID", "PTL_CT_NONE_REACHED", "PTL_EQ_DROPPED",
                                  "PTL_EQ_EMPTY", "PTL_FAIL", "PTL_IGNORED", "PTL_IN_USE", "PTL_INTERRUPTED",
                                  "PTL_LIST_TOO_LONG", "PTL_NO_INIT", "PTL_NO_SPACE", "PTL_PID_IN_USE",
                                  "PTL_PT_FULL", "PTL_PT_EQ_NEEDED", "PTL_PT_IN_USE"};
    return rc >= 0 && rc < PTL_STATUS_LAST ? names[rc] : "unknown";
}

/* CHECK fails the test when cond is false. */
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            t_set_reason(__FILE__, __LINE__, __VA_ARGS__);      \
            return 1;                                           \
        }                                                       \
    } while (0)

/* EXPECT_RC fails the test when call does not return want. */
#define EXPECT_RC(call, want)                                                                      \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != (want)) {                                                                       \
            t_set_reason(__FILE__, __LINE__, "%s returned %s, want %s", #call, rc_name(rc_),       \
                         rc_name(want));                                                           \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#define OK(call) EXPECT_RC(call, PTL_OK)

static void t_run(const char *name, int (*fn)(void))
{
    t_reason[0] = 0;
    if (fn() == 0) {
        t_passed++;
        printf("%sPASS %s\n", t_prefix, name);
    } else {
        t_failed++;
        printf("%sFAIL %s (%s)\n", t_prefix, name, t_reason);
    }
    fflush(stdout);
}

#define RUN(fn) t_run(#fn, fn)

static int test_summary(void)
{
    printf("%s%d passed, %d failed, %d skipped\n", t_prefix, t_passed, t_failed, t_skipped);
    fflush(stdout);
    return t_failed ? 1 : 0;
}

/* ptl_rank builds a ptl_process_t of a rank. */
static inline ptl_process_t ptl_rank(ptl_rank_t r)
{
    ptl_process_t p;
    memset(&p, 0, sizeof p);
    p.rank = r;
    return p;
}

#endif
