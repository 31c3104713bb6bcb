//go:build linux && cgo

// The seccomp user-notification supervisor. A classic BPF filter, installed on every
// thread of the process (TSYNC), hands the calls that can change the pages behind a
// virtual range (munmap, mremap, madvise with an advice that can drop or replace
// pages, mmap with MAP_FIXED, brk other than brk(0), shmdt, shmat with SHM_REMAP,
// remap_file_pages, process_madvise) to this thread before the kernel does anything.
//
// For a thread of this process the supervisor makes the call itself and answers with
// its result: seq odd -> the call -> its ranges published in the broadcast ring (the
// reader's design) -> seq even -> answer. Publishing after the pages are gone and
// before the caller is released is what closes both races: a lookup that starts after
// the call returned sees the record, and a registration made while the call was in
// flight (of the old pages) is older than the record, so the record invalidates it.
// Answering SECCOMP_USER_NOTIF_FLAG_CONTINUE instead would publish before the pages
// go, and a registration between the record and the unmap would outlive both. The
// supervisor's own calls pass the filter because they are made from one instruction
// whose address the filter knows (ptl_sc_syscall6). The filter is installed with
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: once the supervisor has received a
// notification, no signal but a fatal one interrupts the caller, so a call made for
// it is never restarted and made twice. Calls of other processes (children started
// under the inherited filter) are answered CONTINUE: this process caches none of
// their memory.
//
// The supervisor runs no Go code, allocates nothing (its buffers and the ring are
// static) and makes no call the filter stops: it would wait for itself. Its stack is
// mapped by pthread_create before the filter exists. Once installed, the filter cannot
// be removed and every filtered call of the process waits for this thread, so the
// thread never stops; closing the listener would make the filtered calls fail with
// ENOSYS.

#include "seccomp.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if __has_include(<linux/seccomp.h>)
#include <linux/seccomp.h>
_Static_assert(SECCOMP_SET_MODE_FILTER == PTL_SECCOMP_SET_MODE_FILTER, "seccomp.h");
_Static_assert(SECCOMP_RET_USER_NOTIF == PTL_SECCOMP_RET_USER_NOTIF, "seccomp.h");
_Static_assert(SECCOMP_RET_ALLOW == PTL_SECCOMP_RET_ALLOW, "seccomp.h");
#ifdef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
_Static_assert(SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV == PTL_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, "seccomp.h");
#endif
#ifdef SECCOMP_FILTER_FLAG_TSYNC_ESRCH
_Static_assert(SECCOMP_FILTER_FLAG_TSYNC_ESRCH == PTL_SECCOMP_FILTER_FLAG_TSYNC_ESRCH, "seccomp.h");
_Static_assert(SECCOMP_FILTER_FLAG_NEW_LISTENER == PTL_SECCOMP_FILTER_FLAG_NEW_LISTENER, "seccomp.h");
#endif
#ifdef SECCOMP_IOCTL_NOTIF_RECV
_Static_assert(SECCOMP_IOCTL_NOTIF_RECV == PTL_SECCOMP_IOCTL_NOTIF_RECV, "seccomp.h");
_Static_assert(SECCOMP_IOCTL_NOTIF_SEND == PTL_SECCOMP_IOCTL_NOTIF_SEND, "seccomp.h");
_Static_assert(sizeof(struct seccomp_notif) == PTL_SECCOMP_NOTIF_SIZE, "seccomp.h");
_Static_assert(offsetof(struct seccomp_notif, data) == PTL_SECCOMP_NOTIF_DATA, "seccomp.h");
_Static_assert(sizeof(struct seccomp_notif_resp) == PTL_SECCOMP_RESP_SIZE, "seccomp.h");
_Static_assert(offsetof(struct seccomp_notif_resp, flags) == PTL_SECCOMP_RESP_FLAGS, "seccomp.h");
_Static_assert(offsetof(struct seccomp_notif_resp, val) == PTL_SECCOMP_RESP_VAL, "seccomp.h");
_Static_assert(offsetof(struct seccomp_notif_resp, error) == PTL_SECCOMP_RESP_ERROR, "seccomp.h");
_Static_assert(offsetof(struct seccomp_notif, pid) == PTL_SECCOMP_NOTIF_PID, "seccomp.h");
#endif
#ifdef SECCOMP_IOCTL_NOTIF_SET_FLAGS
_Static_assert(SECCOMP_IOCTL_NOTIF_SET_FLAGS == PTL_SECCOMP_IOCTL_NOTIF_SET_FLAGS, "seccomp.h");
#endif
_Static_assert(offsetof(struct seccomp_data, args) == PTL_SECCOMP_DATA_ARGS, "seccomp.h");
_Static_assert(offsetof(struct seccomp_data, instruction_pointer) == PTL_SECCOMP_DATA_IP, "seccomp.h");
_Static_assert(sizeof(struct seccomp_data) == PTL_SECCOMP_DATA_SIZE, "seccomp.h");
#endif

#if defined(__x86_64__) && !defined(__ILP32__)
#define PTL_SC_ARCH PTL_AUDIT_ARCH_X86_64

// ptl_sc_syscall6 makes system call nr with six arguments and returns the kernel's
// raw result (-errno on failure). Its syscall instruction is the only one the filter
// lets through unexamined: the kernel reports the address after it,
// ptl_sc_syscall_ret, as the instruction pointer of the call.
__asm__(".text\n"
        ".p2align 4\n"
        ".globl ptl_sc_syscall6\n"
        ".hidden ptl_sc_syscall6\n"
        ".type ptl_sc_syscall6, @function\n"
        "ptl_sc_syscall6:\n"
        "\tmovq %rdi, %rax\n"
        "\tmovq %rsi, %rdi\n"
        "\tmovq %rdx, %rsi\n"
        "\tmovq %rcx, %rdx\n"
        "\tmovq %r8, %r10\n"
        "\tmovq %r9, %r8\n"
        "\tmovq 8(%rsp), %r9\n"
        "\tsyscall\n"
        ".globl ptl_sc_syscall_ret\n"
        ".hidden ptl_sc_syscall_ret\n"
        "ptl_sc_syscall_ret:\n"
        "\tret\n"
        ".size ptl_sc_syscall6, .-ptl_sc_syscall6\n");
__attribute__((visibility("hidden"))) long ptl_sc_syscall6(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                                                          uint64_t a4, uint64_t a5);
__attribute__((visibility("hidden"))) extern const char ptl_sc_syscall_ret[];
#else
// Other architectures have no filter yet: ptl_seccomp_filter returns -1 and
// ptl_seccomp_open ENOSYS, so what follows only has to compile.
#define PTL_SC_ARCH 0
static long ptl_sc_syscall6(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5) {
	long r = syscall(nr, a0, a1, a2, a3, a4, a5);
	return r == -1 ? -errno : r;
}
static const char ptl_sc_syscall_ret[1];
#endif

// System call numbers this libc may not name yet (the same on x86_64 and arm64).
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

// PTL_SC_NOTIF_MAX and PTL_SC_RESP_MAX bound the kernel's structures (GET_NOTIF_SIZES).
#define PTL_SC_NOTIF_MAX 256
#define PTL_SC_RESP_MAX 64

// PTL_SC_BACKOFF_NS is how long the supervisor waits after an unexpected error.
#define PTL_SC_BACKOFF_NS 1000000L

static struct {
	// seq is odd while a record is in flight, even when every notification received
	// so far has been published. Alone on its cache line: lookups load it.
	uint64_t seq;
	uint64_t pad0[7];
	uint64_t head; // next slot to write
	uint64_t notifs, flushes, errors, stale_ids, foreign;
	int64_t last_errno;
	uint64_t by_kind[PTL_SC_KINDS];

	// The supervisor's own, written before it starts or by it alone.
	int state; // 0 closed, 1 running
	int listener;
	int open_err;
	int sync_wake_up, sync_errno;
	uint32_t notif_size, resp_size;
	uint64_t page_size;
	sem_t ready;
	pthread_t tid;

	struct ptl_slot ring[PTL_SECCOMP_SLOTS] __attribute__((aligned(PTL_CACHE_LINE)));
} ptl_sc __attribute__((aligned(PTL_CACHE_LINE)));

static pthread_mutex_t ptl_sc_mu = PTHREAD_MUTEX_INITIALIZER;
static int ptl_sc_skip_sync; // under ptl_sc_mu

static unsigned char ptl_sc_notif[PTL_SC_NOTIF_MAX] __attribute__((aligned(8)));
static unsigned char ptl_sc_resp[PTL_SC_RESP_MAX] __attribute__((aligned(8)));

// ---- the filter ----------------------------------------------------------------------

// Jump targets of the program builder: 0 is the next instruction.
enum { L_NEXT, L_ALLOW, L_NOTIFY, L_NR, L_BRK, L_MMAP, L_SHMAT, L_MADV, L_PMADV, L_ADVICE, L_COUNT };

struct ptl_sc_asm {
	struct ptl_bpf_insn *prog;
	uint8_t jt[PTL_SECCOMP_PROG_MAX], jf[PTL_SECCOMP_PROG_MAX];
	int at[L_COUNT];
	int n;
};

static void ptl_emit(struct ptl_sc_asm *a, uint16_t code, uint32_t k, int jt, int jf) {
	if (a->n < PTL_SECCOMP_PROG_MAX) {
		a->prog[a->n] = (struct ptl_bpf_insn){code, 0, 0, k};
		a->jt[a->n] = (uint8_t)jt;
		a->jf[a->n] = (uint8_t)jf;
	}
	a->n++;
}

static void ptl_label(struct ptl_sc_asm *a, int l) { a->at[l] = a->n; }

// ptl_load_arg loads the low 32 bits of argument i (little endian only).
static void ptl_load_arg(struct ptl_sc_asm *a, int i, int high) {
	ptl_emit(a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_ARGS + 8 * i + (high ? 4 : 0), 0, 0);
}

// The madvise advice values that neither drop nor replace the pages of a range
// (include/uapi/asm-generic/mman-common.h): NORMAL RANDOM SEQUENTIAL WILLNEED
// DONTFORK DOFORK MERGEABLE UNMERGEABLE HUGEPAGE NOHUGEPAGE DONTDUMP DODUMP
// WIPEONFORK KEEPONFORK COLD POPULATE_READ POPULATE_WRITE GUARD_REMOVE. Every other
// value, known (DONTNEED, FREE, REMOVE, PAGEOUT, DONTNEED_LOCKED, COLLAPSE,
// HWPOISON, SOFT_OFFLINE, GUARD_INSTALL) or added by a later kernel, is notified.
static const uint32_t ptl_harmless_advice[] = {0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 103};

int ptl_seccomp_filter(struct ptl_bpf_insn *prog) {
#if PTL_SC_ARCH == 0
	(void)prog;
	return -1;
#else
	struct ptl_sc_asm a = {.prog = prog};
	ptl_emit(&a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_ARCH, 0, 0);
	// A call of another ABI (i386 through int 0x80): its numbers differ, notify it.
	ptl_emit(&a, PTL_BPF_JEQ_K, PTL_SC_ARCH, L_NEXT, L_NOTIFY);
	// The supervisor's own calls.
	uint64_t ip = (uint64_t)(uintptr_t)ptl_sc_syscall_ret;
	ptl_emit(&a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_IP, 0, 0);
	ptl_emit(&a, PTL_BPF_JEQ_K, (uint32_t)ip, L_NEXT, L_NR);
	ptl_emit(&a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_IP + 4, 0, 0);
	ptl_emit(&a, PTL_BPF_JEQ_K, (uint32_t)(ip >> 32), L_ALLOW, L_NR);
	ptl_label(&a, L_NR);
	ptl_emit(&a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_NR, 0, 0);
#ifdef __x86_64__
	ptl_emit(&a, PTL_BPF_JGE_K, PTL_X32_SYSCALL_BIT, L_NOTIFY, L_NEXT);
#endif
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_munmap, L_NOTIFY, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_mremap, L_NOTIFY, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_shmdt, L_NOTIFY, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_remap_file_pages, L_NOTIFY, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_brk, L_BRK, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_mmap, L_MMAP, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_madvise, L_MADV, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_process_madvise, L_PMADV, L_NEXT);
	ptl_emit(&a, PTL_BPF_JEQ_K, SYS_shmat, L_SHMAT, L_ALLOW);
	// brk(0) asks for the break and changes nothing.
	ptl_label(&a, L_BRK);
	ptl_load_arg(&a, 0, 0);
	ptl_emit(&a, PTL_BPF_JEQ_K, 0, L_NEXT, L_NOTIFY);
	ptl_load_arg(&a, 0, 1);
	ptl_emit(&a, PTL_BPF_JEQ_K, 0, L_ALLOW, L_NOTIFY);
	ptl_label(&a, L_MMAP);
	ptl_load_arg(&a, 3, 0);
	ptl_emit(&a, PTL_BPF_JSET_K, PTL_MAP_FIXED, L_NOTIFY, L_ALLOW);
	ptl_label(&a, L_SHMAT);
	ptl_load_arg(&a, 2, 0);
	ptl_emit(&a, PTL_BPF_JSET_K, PTL_SHM_REMAP, L_NOTIFY, L_ALLOW);
	ptl_label(&a, L_PMADV);
	ptl_load_arg(&a, 3, 0);
	ptl_emit(&a, PTL_BPF_JEQ_K, 0xffffffffU, L_ADVICE, L_ADVICE); // an unconditional jump
	ptl_label(&a, L_MADV);
	ptl_load_arg(&a, 2, 0);
	ptl_label(&a, L_ADVICE);
	for (size_t i = 0; i < sizeof ptl_harmless_advice / sizeof ptl_harmless_advice[0]; i++) {
		ptl_emit(&a, PTL_BPF_JEQ_K, ptl_harmless_advice[i], L_ALLOW, L_NEXT);
	}
	ptl_emit(&a, PTL_BPF_RET_K, PTL_SECCOMP_RET_USER_NOTIF, 0, 0);
	ptl_label(&a, L_ALLOW);
	ptl_emit(&a, PTL_BPF_RET_K, PTL_SECCOMP_RET_ALLOW, 0, 0);
	ptl_label(&a, L_NOTIFY);
	ptl_emit(&a, PTL_BPF_RET_K, PTL_SECCOMP_RET_USER_NOTIF, 0, 0);
	if (a.n > PTL_SECCOMP_PROG_MAX) {
		return -1;
	}
	// Resolve the jumps: offsets count from the next instruction and must go forward.
	for (int i = 0; i < a.n; i++) {
		uint16_t c = prog[i].code;
		if (c != PTL_BPF_JEQ_K && c != PTL_BPF_JGE_K && c != PTL_BPF_JSET_K) {
			continue;
		}
		int t[2] = {a.jt[i], a.jf[i]};
		uint8_t off[2];
		for (int j = 0; j < 2; j++) {
			int to = t[j] == L_NEXT ? i + 1 : a.at[t[j]];
			if (to <= i || to - i - 1 > 255) {
				return -1;
			}
			off[j] = (uint8_t)(to - i - 1);
		}
		prog[i].jt = off[0];
		prog[i].jf = off[1];
	}
	return a.n;
#endif
}

// ---- the supervisor --------------------------------------------------------------

static uint64_t ptl_sc_u64(const unsigned char *p) {
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static void ptl_sc_error(int err) {
	__atomic_add_fetch(&ptl_sc.errors, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ptl_sc.last_errno, (int64_t)err, __ATOMIC_RELAXED);
}

static void ptl_sc_publish(uint64_t start, uint64_t end) {
	uint64_t i = ptl_sc.head;
	struct ptl_slot *s = &ptl_sc.ring[i & (PTL_SECCOMP_SLOTS - 1)];
	__atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&s->end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, i + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ptl_sc.head, i + 1, __ATOMIC_RELEASE);
}

static void ptl_sc_flush(void) {
	__atomic_add_fetch(&ptl_sc.flushes, 1, __ATOMIC_RELAXED);
	ptl_sc_publish(0, ~(uint64_t)0);
}

// ptl_sc_range publishes the pages of [addr, addr+len), the way the kernel rounds them.
static void ptl_sc_range(uint64_t addr, uint64_t len) {
	uint64_t ps = ptl_sc.page_size;
	uint64_t start = addr & ~(ps - 1), end = addr + len;
	if (end < addr || end + ps - 1 < end) {
		end = ~(uint64_t)0;
	} else {
		end = (end + ps - 1) & ~(ps - 1);
	}
	ptl_sc_publish(start, end);
}

static void ptl_sc_count(int kind) { __atomic_add_fetch(&ptl_sc.by_kind[kind], 1, __ATOMIC_RELAXED); }

// ptl_sc_page_up rounds x up to a page (the last page for an address past it).
static uint64_t ptl_sc_page_up(uint64_t x) {
	uint64_t ps = ptl_sc.page_size;
	return x + ps - 1 < x ? ~(uint64_t)0 : (x + ps - 1) & ~(ps - 1);
}

// ptl_sc_perform makes call nr with arguments a for a thread of this process and
// publishes what it changed; seq is odd meanwhile. It returns the raw result.
static long ptl_sc_perform(int32_t nr, const uint64_t *a) {
	long r;
	switch (nr) {
	case SYS_munmap:
		ptl_sc_count(PTL_SC_MUNMAP);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_range(a[0], a[1]);
		return r;
	case SYS_mremap:
		// The old range moves or shrinks; with MREMAP_FIXED whatever was mapped at
		// the new address is replaced too.
		ptl_sc_count(PTL_SC_MREMAP);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_range(a[0], a[1]);
		if (a[3] & PTL_MREMAP_FIXED) {
			ptl_sc_range(a[4], a[2]);
		}
		return r;
	case SYS_madvise:
		ptl_sc_count(PTL_SC_MADVISE);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_range(a[0], a[1]);
		return r;
	case SYS_mmap:
		ptl_sc_count(PTL_SC_MMAP_FIXED);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_range(a[0], a[1]);
		return r;
	case SYS_remap_file_pages:
		ptl_sc_count(PTL_SC_OTHER);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_range(a[0], a[1]);
		return r;
	case SYS_brk: {
		// Every brk of this process but brk(0) comes here, one at a time, so the
		// break before and after the call bound exactly what a shrink released.
		ptl_sc_count(PTL_SC_BRK);
		uint64_t old = (uint64_t)ptl_sc_syscall6(SYS_brk, 0, 0, 0, 0, 0, 0);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if ((uint64_t)r < old) {
			ptl_sc_publish(ptl_sc_page_up((uint64_t)r), ptl_sc_page_up(old));
		}
		return r;
	}
	case SYS_shmdt:
	case SYS_shmat:
		// The segment's size is not in the arguments.
		ptl_sc_count(PTL_SC_SHM);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_flush();
		return r;
	default:
		// process_madvise: its ranges are in the caller's memory, maybe of another
		// process.
		ptl_sc_count(PTL_SC_OTHER);
		r = ptl_sc_syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		ptl_sc_flush();
		return r;
	}
}

// ptl_sc_known reports whether the supervisor makes call nr itself.
static int ptl_sc_known(int32_t nr) {
	switch (nr) {
	case SYS_munmap:
	case SYS_mremap:
	case SYS_madvise:
	case SYS_mmap:
	case SYS_remap_file_pages:
	case SYS_brk:
	case SYS_shmdt:
	case SYS_shmat:
	case SYS_process_madvise:
		return 1;
	}
	return 0;
}

static void ptl_sc_backoff(void) {
	struct timespec ts = {0, PTL_SC_BACKOFF_NS};
	nanosleep(&ts, NULL);
}

static void ptl_sc_answer(int fd, int64_t val, int32_t error, uint32_t flags) {
	memset(ptl_sc_resp, 0, ptl_sc.resp_size);
	memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_ID, ptl_sc_notif + PTL_SECCOMP_NOTIF_ID, 8);
	memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_VAL, &val, sizeof val);
	memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_ERROR, &error, sizeof error);
	memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_FLAGS, &flags, sizeof flags);
	__atomic_add_fetch(&ptl_sc.notifs, 1, __ATOMIC_RELAXED);
	if (ioctl(fd, PTL_SECCOMP_IOCTL_NOTIF_SEND, ptl_sc_resp) != 0) {
		if (errno == ENOENT) {
			// The caller was killed, or (a call answered CONTINUE) a signal
			// interrupted it and it asks again.
			__atomic_add_fetch(&ptl_sc.stale_ids, 1, __ATOMIC_RELAXED);
		} else {
			ptl_sc_error(errno);
		}
	}
}

static void ptl_sc_serve(int fd) {
	long self = ptl_sc_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	for (;;) {
		memset(ptl_sc_notif, 0, ptl_sc.notif_size); // RECV wants a zeroed buffer
		if (ioctl(fd, PTL_SECCOMP_IOCTL_NOTIF_RECV, ptl_sc_notif) != 0) {
			int e = errno;
			if (e != EINTR && e != ENOENT) { // ENOENT: the caller left before we took it
				ptl_sc_error(e);
				ptl_sc_backoff();
			}
			continue;
		}
		const unsigned char *d = ptl_sc_notif + PTL_SECCOMP_NOTIF_DATA;
		int32_t nr;
		uint32_t arch, tid;
		uint64_t a[6];
		memcpy(&nr, d + PTL_SECCOMP_DATA_NR, sizeof nr);
		memcpy(&arch, d + PTL_SECCOMP_DATA_ARCH, sizeof arch);
		memcpy(&tid, ptl_sc_notif + PTL_SECCOMP_NOTIF_PID, sizeof tid);
		for (int i = 0; i < 6; i++) {
			a[i] = ptl_sc_u64(d + PTL_SECCOMP_DATA_ARGS + 8 * i);
		}
		// tgkill(self, tid, 0) succeeds only for a thread of this process.
		if (ptl_sc_syscall6(SYS_tgkill, (uint64_t)self, tid, 0, 0, 0, 0) != 0) {
			__atomic_add_fetch(&ptl_sc.foreign, 1, __ATOMIC_RELAXED);
			ptl_sc_answer(fd, 0, 0, PTL_SECCOMP_USER_NOTIF_FLAG_CONTINUE);
			continue;
		}
		__atomic_add_fetch(&ptl_sc.seq, 1, __ATOMIC_SEQ_CST); // odd: a call in flight
		if (arch != PTL_SC_ARCH || !ptl_sc_known(nr)) {
			// A call of another ABI (i386 int 0x80, x32): its numbers differ and it
			// cannot be made from here. Flush and let it run; a registration made
			// before it runs is not covered (no Go code makes such calls).
			ptl_sc_count(PTL_SC_OTHER);
			ptl_sc_flush();
			__atomic_add_fetch(&ptl_sc.seq, 1, __ATOMIC_SEQ_CST);
			ptl_sc_answer(fd, 0, 0, PTL_SECCOMP_USER_NOTIF_FLAG_CONTINUE);
			continue;
		}
		long r = ptl_sc_perform(nr, a);
		__atomic_add_fetch(&ptl_sc.seq, 1, __ATOMIC_SEQ_CST); // even: done and published
		if (r < 0 && r >= -4095) {
			ptl_sc_answer(fd, 0, (int32_t)r, 0);
		} else {
			ptl_sc_answer(fd, r, 0, 0);
		}
	}
}

static void *ptl_sc_main(void *arg) {
	(void)arg;
	struct ptl_bpf_insn prog[PTL_SECCOMP_PROG_MAX];
	int n = ptl_seccomp_filter(prog);
	struct {
		unsigned short len;
		struct ptl_bpf_insn *filter;
	} fprog = {(unsigned short)n, prog};
	int fd = -1;
	if (n < 0) {
		ptl_sc.open_err = ENOSYS;
	} else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		ptl_sc.open_err = errno;
	} else {
		// TSYNC puts the filter (and no_new_privs) on every thread; TSYNC_ESRCH
		// makes a thread it cannot sync an error instead of a thread id, which
		// NEW_LISTENER requires; WAIT_KILLABLE_RECV (5.19) keeps a caller whose
		// call the supervisor makes from being interrupted and asking again.
		long r = syscall(SYS_seccomp, PTL_SECCOMP_SET_MODE_FILTER,
		                 PTL_SECCOMP_FILTER_FLAG_NEW_LISTENER | PTL_SECCOMP_FILTER_FLAG_TSYNC |
		                     PTL_SECCOMP_FILTER_FLAG_TSYNC_ESRCH | PTL_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
		                 &fprog);
		if (r < 0) {
			ptl_sc.open_err = errno;
		} else {
			fd = (int)r;
		}
	}
	if (fd < 0) {
		sem_post(&ptl_sc.ready);
		return NULL;
	}
	ptl_sc.listener = fd;
	// Without it every answer costs a scheduler round trip (about 200 us here).
	if (ptl_sc_skip_sync) {
		ptl_sc.sync_errno = ECANCELED;
	} else if (ioctl(fd, PTL_SECCOMP_IOCTL_NOTIF_SET_FLAGS, PTL_SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0) {
		ptl_sc.sync_wake_up = 1;
	} else {
		ptl_sc.sync_errno = errno;
	}
	sem_post(&ptl_sc.ready);
	ptl_sc_serve(fd);
	return NULL;
}

int ptl_seccomp_open(void) {
	pthread_mutex_lock(&ptl_sc_mu);
	if (ptl_sc.state == 1) {
		pthread_mutex_unlock(&ptl_sc_mu);
		return 0;
	}
	struct ptl_bpf_insn probe[PTL_SECCOMP_PROG_MAX];
	if (ptl_seccomp_filter(probe) < 0) {
		pthread_mutex_unlock(&ptl_sc_mu);
		return ENOSYS;
	}
	struct {
		uint16_t notif, resp, data;
	} sizes = {0, 0, 0};
	if (syscall(SYS_seccomp, PTL_SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
		int e = errno;
		pthread_mutex_unlock(&ptl_sc_mu);
		return e;
	}
	if (sizes.notif < PTL_SECCOMP_NOTIF_SIZE || sizes.notif > PTL_SC_NOTIF_MAX ||
	    sizes.resp < PTL_SECCOMP_RESP_SIZE || sizes.resp > PTL_SC_RESP_MAX || sizes.data < PTL_SECCOMP_DATA_SIZE) {
		pthread_mutex_unlock(&ptl_sc_mu);
		return EPROTO;
	}
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0 || (ps & (ps - 1)) != 0) {
		pthread_mutex_unlock(&ptl_sc_mu);
		return EINVAL;
	}
	ptl_sc.notif_size = sizes.notif;
	ptl_sc.resp_size = sizes.resp;
	ptl_sc.page_size = (uint64_t)ps;
	ptl_sc.open_err = 0;
	ptl_sc.listener = -1;
	if (sem_init(&ptl_sc.ready, 0, 0) != 0) {
		int e = errno;
		pthread_mutex_unlock(&ptl_sc_mu);
		return e;
	}
	// The supervisor is created (its stack mapped) before the filter exists, with
	// every signal blocked: it takes no signal meant for the process.
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&ptl_sc.tid, &attr, ptl_sc_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		sem_destroy(&ptl_sc.ready);
		pthread_mutex_unlock(&ptl_sc_mu);
		return err;
	}
	while (sem_wait(&ptl_sc.ready) != 0 && errno == EINTR) {
	}
	err = ptl_sc.open_err;
	if (err != 0) {
		// No filter: joining (which may unmap the stack) is safe.
		pthread_join(ptl_sc.tid, NULL);
	} else {
		ptl_sc.state = 1;
	}
	pthread_mutex_unlock(&ptl_sc_mu);
	return err;
}

void ptl_seccomp_skip_sync_wake_up(void) {
	pthread_mutex_lock(&ptl_sc_mu);
	ptl_sc_skip_sync = 1;
	pthread_mutex_unlock(&ptl_sc_mu);
}

uint64_t ptl_seccomp_supervisor_ip(void) { return (uint64_t)(uintptr_t)ptl_sc_syscall_ret; }

uint64_t *ptl_seccomp_seq(void) { return &ptl_sc.seq; }
uint64_t *ptl_seccomp_head(void) { return &ptl_sc.head; }
struct ptl_slot *ptl_seccomp_ring(void) { return ptl_sc.ring; }

void ptl_seccomp_stats(struct ptl_seccomp_stats *st) {
	memset(st, 0, sizeof *st);
	st->seq = __atomic_load_n(&ptl_sc.seq, __ATOMIC_ACQUIRE);
	st->head = __atomic_load_n(&ptl_sc.head, __ATOMIC_ACQUIRE);
	st->notifs = __atomic_load_n(&ptl_sc.notifs, __ATOMIC_RELAXED);
	st->flushes = __atomic_load_n(&ptl_sc.flushes, __ATOMIC_RELAXED);
	st->errors = __atomic_load_n(&ptl_sc.errors, __ATOMIC_RELAXED);
	st->last_errno = __atomic_load_n(&ptl_sc.last_errno, __ATOMIC_RELAXED);
	st->stale_ids = __atomic_load_n(&ptl_sc.stale_ids, __ATOMIC_RELAXED);
	st->foreign = __atomic_load_n(&ptl_sc.foreign, __ATOMIC_RELAXED);
	for (int i = 0; i < PTL_SC_KINDS; i++) {
		st->by_kind[i] = __atomic_load_n(&ptl_sc.by_kind[i], __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&ptl_sc_mu);
	st->sync_wake_up = ptl_sc.sync_wake_up;
	st->sync_errno = ptl_sc.sync_errno;
	st->listener = ptl_sc.state == 1 ? ptl_sc.listener : -1;
	pthread_mutex_unlock(&ptl_sc_mu);
}
