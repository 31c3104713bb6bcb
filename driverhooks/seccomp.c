//go:build linux && cgo

// The seccomp user-notification supervisor. A classic BPF filter, installed on every
// thread of the process (TSYNC), hands the calls that can change the pages behind a
// virtual range (munmap, mremap, madvise with an advice that can drop or replace
// pages, mmap with MAP_FIXED, brk that shrinks, shmdt, shmat with SHM_REMAP,
// remap_file_pages, process_madvise) to this thread before the kernel does anything.
// The supervisor records the range in the broadcast ring (the reader's design: seq odd
// while a record is in flight, even when published) and only then answers
// SECCOMP_USER_NOTIF_FLAG_CONTINUE, so a lookup that starts after the call returned
// sees the record: there is no window.
//
// The supervisor runs no Go code, allocates nothing (its buffers and the ring are
// static) and makes none of the filtered calls: it would wait for itself. Its stack is
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
#endif
#ifdef SECCOMP_IOCTL_NOTIF_SET_FLAGS
_Static_assert(SECCOMP_IOCTL_NOTIF_SET_FLAGS == PTL_SECCOMP_IOCTL_NOTIF_SET_FLAGS, "seccomp.h");
#endif
_Static_assert(offsetof(struct seccomp_data, args) == PTL_SECCOMP_DATA_ARGS, "seccomp.h");
_Static_assert(sizeof(struct seccomp_data) == PTL_SECCOMP_DATA_SIZE, "seccomp.h");
#endif

#if defined(__x86_64__) && !defined(__ILP32__)
#define PTL_SC_ARCH PTL_AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PTL_SC_ARCH PTL_AUDIT_ARCH_AARCH64
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
	uint64_t notifs, flushes, errors, stale_ids;
	int64_t last_errno;
	uint64_t by_kind[PTL_SC_KINDS];

	// The supervisor's own, written before it starts or by it alone.
	int state; // 0 closed, 1 running
	int listener;
	int open_err;
	int sync_wake_up, sync_errno;
	uint32_t notif_size, resp_size;
	uint64_t page_size;
	uint64_t brk_hi; // the highest break seen or asked for
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
enum { L_NEXT, L_ALLOW, L_NOTIFY, L_BRK, L_MMAP, L_SHMAT, L_MADV, L_PMADV, L_ADVICE, L_COUNT };

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
#ifndef PTL_SC_ARCH
	(void)prog;
	return -1;
#else
	struct ptl_sc_asm a = {.prog = prog};
	ptl_emit(&a, PTL_BPF_LD_W_ABS, PTL_SECCOMP_DATA_ARCH, 0, 0);
	// A call of another ABI (i386 through int 0x80): its numbers differ, notify it.
	ptl_emit(&a, PTL_BPF_JEQ_K, PTL_SC_ARCH, L_NEXT, L_NOTIFY);
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
	// brk(0) asks for the break and changes nothing (the supervisor uses it).
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

static void ptl_sc_handle(const unsigned char *n) {
	const unsigned char *d = n + PTL_SECCOMP_NOTIF_DATA;
	int32_t nr;
	uint32_t arch;
	memcpy(&nr, d + PTL_SECCOMP_DATA_NR, sizeof nr);
	memcpy(&arch, d + PTL_SECCOMP_DATA_ARCH, sizeof arch);
	uint64_t a[6];
	for (int i = 0; i < 6; i++) {
		a[i] = ptl_sc_u64(d + PTL_SECCOMP_DATA_ARGS + 8 * i);
	}
#ifdef PTL_SC_ARCH
	if (arch != PTL_SC_ARCH) {
		nr = -1;
	}
#endif
	switch (nr) {
	case SYS_munmap:
		ptl_sc_count(PTL_SC_MUNMAP);
		ptl_sc_range(a[0], a[1]);
		break;
	case SYS_mremap:
		// The old range moves or shrinks; with MREMAP_FIXED whatever was mapped at
		// the new address is replaced too.
		ptl_sc_count(PTL_SC_MREMAP);
		ptl_sc_range(a[0], a[1]);
		if (a[3] & PTL_MREMAP_FIXED) {
			ptl_sc_range(a[4], a[2]);
		}
		break;
	case SYS_madvise:
		ptl_sc_count(PTL_SC_MADVISE);
		ptl_sc_range(a[0], a[1]);
		break;
	case SYS_mmap:
		ptl_sc_count(PTL_SC_MMAP_FIXED);
		ptl_sc_range(a[0], a[1]);
		break;
	case SYS_brk: {
		// The arguments give the new break, not the old one: the pages between the
		// new break and the highest break ever seen (or asked for) may go. brk(0)
		// passes the filter, so asking is allowed here.
		ptl_sc_count(PTL_SC_BRK);
		uint64_t cur = (uint64_t)syscall(SYS_brk, 0);
		uint64_t hi = ptl_sc.brk_hi > cur ? ptl_sc.brk_hi : cur;
		if (a[0] < hi) {
			uint64_t ps = ptl_sc.page_size;
			ptl_sc_publish((a[0] + ps - 1) & ~(ps - 1), (hi + ps - 1) & ~(ps - 1));
		}
		ptl_sc.brk_hi = a[0] > hi ? a[0] : hi;
		break;
	}
	case SYS_shmdt:
	case SYS_shmat:
		// The segment's size is not in the arguments.
		ptl_sc_count(PTL_SC_SHM);
		ptl_sc_flush();
		break;
	default:
		// process_madvise (ranges in the caller's memory, maybe another process's),
		// remap_file_pages, or a call of another ABI.
		ptl_sc_count(PTL_SC_OTHER);
		ptl_sc_flush();
		break;
	}
}

static void ptl_sc_backoff(void) {
	struct timespec ts = {0, PTL_SC_BACKOFF_NS};
	nanosleep(&ts, NULL);
}

static void ptl_sc_serve(int fd) {
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
		__atomic_add_fetch(&ptl_sc.seq, 1, __ATOMIC_SEQ_CST); // odd: a record in flight
		ptl_sc_handle(ptl_sc_notif);
		__atomic_add_fetch(&ptl_sc.seq, 1, __ATOMIC_SEQ_CST); // even: published
		__atomic_add_fetch(&ptl_sc.notifs, 1, __ATOMIC_RELAXED);
		memset(ptl_sc_resp, 0, ptl_sc.resp_size);
		memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_ID, ptl_sc_notif + PTL_SECCOMP_NOTIF_ID, 8);
		uint32_t flags = PTL_SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		memcpy(ptl_sc_resp + PTL_SECCOMP_RESP_FLAGS, &flags, sizeof flags);
		if (ioctl(fd, PTL_SECCOMP_IOCTL_NOTIF_SEND, ptl_sc_resp) != 0) {
			if (errno == ENOENT) {
				// A signal interrupted the caller; it restarts the call and is
				// notified again.
				__atomic_add_fetch(&ptl_sc.stale_ids, 1, __ATOMIC_RELAXED);
			} else {
				ptl_sc_error(errno);
			}
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
		// NEW_LISTENER requires.
		long r = syscall(SYS_seccomp, PTL_SECCOMP_SET_MODE_FILTER,
		                 PTL_SECCOMP_FILTER_FLAG_NEW_LISTENER | PTL_SECCOMP_FILTER_FLAG_TSYNC |
		                     PTL_SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
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
	ptl_sc.brk_hi = (uint64_t)syscall(SYS_brk, 0);
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
	for (int i = 0; i < PTL_SC_KINDS; i++) {
		st->by_kind[i] = __atomic_load_n(&ptl_sc.by_kind[i], __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&ptl_sc_mu);
	st->sync_wake_up = ptl_sc.sync_wake_up;
	st->sync_errno = ptl_sc.sync_errno;
	st->listener = ptl_sc.state == 1 ? ptl_sc.listener : -1;
	pthread_mutex_unlock(&ptl_sc_mu);
}
