/*
 * ptl_fork.c: two processes with no launcher. The program forks before
 * PtlInit; each process brings up a physical NI, and the two swap their
 * PtlGetPhysId results through pipes. The child then puts to the parent by
 * physical id; afterwards both build a logical NI from the swapped ids with
 * PtlSetMap and the child puts to rank 0.
 *
 * The parent prints its results and the closing line; the child's results are
 * printed with the prefix "child: ", and its exit status is one more test of
 * the parent.
 */
#define _GNU_SOURCE
#include "ptltest.h"
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 10000
#define PT_INDEX 3

static int is_child;
static int rd, wr; /* pipe ends to and from the other process */

static int send_all(const void *p, size_t n) { return write(wr, p, n) == (ssize_t)n ? 0 : -1; }
static int recv_all(void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(rd, (char *)p + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static ptl_handle_ni_t phys_ni, log_ni;
static ptl_process_t self_phys, other_phys;

static int wait_kind(ptl_handle_eq_t q, ptl_event_kind_t kind, ptl_event_t *ev)
{
    for (int i = 0; i < 9; i++) {
        unsigned int which;
        int rc = PtlEQPoll(&q, 1, WAIT_MS, ev, &which);
        if (rc != PTL_OK)
            return rc;
        if (ev->type == kind)
            return PTL_OK;
    }
    return PTL_FAIL;
}

static int test_swap_phys_ids(void)
{
    OK(PtlInit());
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_PHYSICAL, PTL_PID_ANY, NULL, NULL, &phys_ni));
    OK(PtlGetPhysId(phys_ni, &self_phys));
    CHECK(send_all(&self_phys, sizeof self_phys) == 0, "pipe write");
    CHECK(recv_all(&other_phys, sizeof other_phys) == 0, "pipe read");
    CHECK(self_phys.phys.nid != other_phys.phys.nid || self_phys.phys.pid != other_phys.phys.pid,
          "both processes have the physical id %u/%u", self_phys.phys.nid, self_phys.phys.pid);
    return 0;
}

/* put_to_parent: the parent exposes a buffer, says so through the pipe, and
 * the child puts into it addressed by target. */
static int put_to_parent(ptl_handle_ni_t ni, ptl_process_t target, const char *msg, int logical)
{
    char win[32], src[32];
    ptl_handle_eq_t q;
    ptl_pt_index_t pt;
    ptl_event_t ev;
    char token = 'r';
    memset(win, 0, sizeof win);
    memset(src, 0, sizeof src);
    snprintf(src, sizeof src, "%s", msg);
    OK(PtlEQAlloc(ni, 64, &q));
    OK(PtlPTAlloc(ni, 0, q, PT_INDEX, &pt));
    if (!is_child) {
        ptl_handle_me_t me;
        ptl_me_t e;
        memset(&e, 0, sizeof e);
        e.start = win, e.length = sizeof win, e.ct_handle = PTL_CT_NONE, e.uid = PTL_UID_ANY;
        e.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE;
        if (logical)
            e.match_id.rank = PTL_RANK_ANY; /* a logical NI matches initiators by rank */
        else
            e.match_id.phys.nid = PTL_NID_ANY, e.match_id.phys.pid = PTL_PID_ANY;
        e.match_bits = 0xF0;
        OK(PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, NULL, &me));
        CHECK(send_all(&token, 1) == 0, "pipe write");
        OK(wait_kind(q, PTL_EVENT_PUT, &ev));
        CHECK(memcmp(win, src, sizeof win) == 0, "received \"%.32s\", want \"%s\"", win, msg);
        CHECK(recv_all(&token, 1) == 0, "pipe read"); /* the child saw its ACK */
        OK(PtlMEUnlink(me));
    } else {
        ptl_handle_md_t md;
        CHECK(recv_all(&token, 1) == 0, "pipe read");
        /* By rank: over a descriptor covering all of memory (start NULL, length
         * PTL_SIZE_MAX), whose offsets are addresses, as OpenSHMEM binds. */
        ptl_md_t d = {.start = src, .length = sizeof src, .options = 0, .eq_handle = q, .ct_handle = PTL_CT_NONE};
        ptl_size_t off = 0;
        if (logical) {
            d.start = NULL, d.length = PTL_SIZE_MAX;
            off = (ptl_size_t)(uintptr_t)src;
        }
        OK(PtlMDBind(ni, &d, &md));
        OK(PtlPut(md, off, sizeof src, PTL_ACK_REQ, target, pt, 0xF0, 0, NULL, 0));
        OK(wait_kind(q, PTL_EVENT_ACK, &ev));
        CHECK(ev.ni_fail_type == PTL_NI_OK, "ACK reports failure %d", ev.ni_fail_type);
        CHECK(send_all(&token, 1) == 0, "pipe write");
        OK(PtlMDRelease(md));
    }
    OK(PtlPTFree(ni, pt));
    OK(PtlEQFree(q));
    return 0;
}

static int test_put_by_phys_id(void)
{
    return put_to_parent(phys_ni, other_phys, "by physical id", 0);
}

static int test_logical_from_set_map(void)
{
    ptl_process_t map[2], id;
    map[0] = is_child ? other_phys : self_phys;
    map[1] = is_child ? self_phys : other_phys;
    OK(PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, NULL, NULL, &log_ni));
    OK(PtlSetMap(log_ni, 2, map));
    OK(PtlGetId(log_ni, &id));
    CHECK(id.rank == (ptl_rank_t)is_child, "rank %u, want %d", id.rank, is_child);
    return put_to_parent(log_ni, ptl_rank(0), "by rank after PtlSetMap", 1);
}

static int test_fini(void)
{
    OK(PtlNIFini(log_ni));
    OK(PtlNIFini(phys_ni));
    PtlFini();
    return 0;
}

static int run_all(void)
{
    RUN(test_swap_phys_ids);
    if (!t_failed)
        RUN(test_put_by_phys_id);
    if (!t_failed)
        RUN(test_logical_from_set_map);
    if (!t_failed)
        RUN(test_fini);
    return t_failed;
}

int main(void)
{
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
        perror("pipe");
        return 2;
    }
    fflush(stdout);
    pid_t pid = fork(); /* before PtlInit: each process gets its own Go runtime */
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        is_child = 1;
        t_prefix = "child: ";
        rd = to_child[0], wr = to_parent[1];
        close(to_child[1]), close(to_parent[0]);
        run_all();
        return test_summary();
    }
    rd = to_parent[0], wr = to_child[1];
    close(to_child[0]), close(to_parent[1]);
    run_all();
    /* A failed parent closes its pipe ends, so a waiting child sees EOF. */
    close(rd), close(wr);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        t_failed++;
        printf("FAIL child_exit (status %d)\n", status);
    } else {
        t_passed++;
        printf("PASS child_exit\n");
    }
    return test_summary();
}
