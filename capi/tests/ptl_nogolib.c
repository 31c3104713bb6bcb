/*
 * ptl_nogolib.c: the shim without its Go library. Run with PTL_GOLIB naming a
 * file that does not exist: PtlInit must fail with PTL_FAIL (and say why on
 * standard error), every other call must answer PTL_NO_INIT, nothing crashes.
 */
#include "ptltest.h"

static int test_init_fails(void)
{
    EXPECT_RC(PtlInit(), PTL_FAIL);
    EXPECT_RC(PtlInit(), PTL_FAIL); /* and again, without crashing */
    return 0;
}

static int test_calls_refused(void)
{
    ptl_handle_ni_t ni;
    ptl_ct_event_t v;
    ptl_event_t ev;
    EXPECT_RC(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni),
              PTL_NO_INIT);
    EXPECT_RC(PtlCTGet(PTL_CT_NONE, &v), PTL_NO_INIT);
    EXPECT_RC(PtlEQGet(PTL_EQ_NONE, &ev), PTL_NO_INIT);
    EXPECT_RC(PtlPut(PTL_INVALID_HANDLE, 0, 0, PTL_NO_ACK_REQ, ptl_rank(0), 0, 0, 0, NULL, 0), PTL_NO_INIT);
    EXPECT_RC(PtlAtomicSync(), PTL_NO_INIT);
    PtlFini(); /* without a PtlInit: nothing to do */
    CHECK(PtlHandleIsEqual(PTL_INVALID_HANDLE, PTL_INVALID_HANDLE), "PtlHandleIsEqual needs no library");
    return 0;
}

int main(void)
{
    RUN(test_init_fails);
    RUN(test_calls_refused);
    return test_summary();
}
