/*
 * ptl_ownpmi.c: a program with a PMI client of its own, run under
 * mpiexec.hydra -n 2 (compiled with -rdynamic, so that its PMI_Init is in the
 * process's global symbol scope, as a PMI library's is).
 *
 * hydra gives each rank one PMI connection; a program that speaks PMI itself
 * (Sandia OpenSHMEM's pmi-simple, an MPI) owns it. PtlInit must then leave it
 * alone: the library starts as a lone process (a logical NI's map is the
 * process itself until the program sets one with PtlSetMap), and the
 * launcher's PMI variables are still there for the program afterwards.
 */
#define _GNU_SOURCE
#include "ptltest.h"

#ifdef OWN_MPI
/* MPI_Init marks the program as an MPI, whose PMI client (MPICH's) exports no
 * PMI_Init; it is never called here. */
int MPI_Init(int *argc, char ***argv);
int MPI_Init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}
#else
/* PMI_Init marks the program as a PMI client; it is never called here. Built
 * without -rdynamic it is invisible to the library: PTL_CAPI_PMI=program then
 * says it. */
int PMI_Init(int *spawned);
int PMI_Init(int *spawned)
{
    if (spawned)
        *spawned = 0;
    return 0;
}
#endif

static char fd_before[64];

static int test_pmi_left_to_program(void)
{
    ptl_handle_ni_t ni;
    ptl_process_t self;
    ptl_size_t n = 0;
    OK(PtlInit());
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &ni));
    OK(PtlGetId(ni, &self));
    OK(PtlGetMap(ni, 0, NULL, &n));
    CHECK(n == 1 && self.rank == 0, "the library joined the job through PMI: map of %" PRIu64 ", rank %u",
          (uint64_t)n, self.rank);
    const char *fd = getenv("PMI_FD");
    CHECK(fd && strcmp(fd, fd_before) == 0, "PMI_FD was %s before PtlInit, %s after", fd_before, fd ? fd : "unset");
    OK(PtlNIFini(ni));
    PtlFini();
    return 0;
}

int main(void)
{
    const char *fd = getenv("PMI_FD"), *rank = getenv("PMI_RANK");
    if (!fd) {
        printf("SKIP test_pmi_left_to_program (not under a PMI launcher: PMI_FD unset)\n0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    snprintf(fd_before, sizeof fd_before, "%s", fd);
    static char prefix[32];
    if (rank && strcmp(rank, "0") != 0) {
        snprintf(prefix, sizeof prefix, "rank%s: ", rank);
        t_prefix = prefix;
    }
    RUN(test_pmi_left_to_program);
    return test_summary();
}
