// The seccomp user-notification supervisor: a pthread that never enters Go. See
// seccomp.c.
#ifndef PTL_SECCOMP_H
#define PTL_SECCOMP_H

#include <stdint.h>

#include "reader.h" // struct ptl_slot, PTL_CACHE_LINE: the ring is the reader's design

// ---- Kernel ABI -------------------------------------------------------------------
// Defined here rather than taken from the installed headers, which may be older than
// the kernel (SECCOMP_IOCTL_NOTIF_SET_FLAGS is missing from many). Each group names
// the uapi header it comes from; seccomp.c checks them against the installed headers
// where those define them.

// include/uapi/linux/seccomp.h
#define PTL_SECCOMP_SET_MODE_FILTER 1
#define PTL_SECCOMP_GET_NOTIF_SIZES 3
#define PTL_SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#define PTL_SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#define PTL_SECCOMP_FILTER_FLAG_TSYNC_ESRCH (1UL << 4)
#define PTL_SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#define PTL_SECCOMP_RET_USER_NOTIF 0x7fc00000U
#define PTL_SECCOMP_RET_ALLOW 0x7fff0000U
#define PTL_SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#define PTL_SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
// _IOWR('!', 0, struct seccomp_notif), _IOWR('!', 1, struct seccomp_notif_resp),
// _IOW('!', 4, __u64).
#define PTL_SECCOMP_IOCTL_NOTIF_RECV 0xc0502100UL
#define PTL_SECCOMP_IOCTL_NOTIF_SEND 0xc0182101UL
#define PTL_SECCOMP_IOCTL_NOTIF_SET_FLAGS 0x40082104UL

// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
#define PTL_SECCOMP_DATA_NR 0
#define PTL_SECCOMP_DATA_ARCH 4
#define PTL_SECCOMP_DATA_IP 8
#define PTL_SECCOMP_DATA_ARGS 16
#define PTL_SECCOMP_DATA_SIZE 64
// struct seccomp_notif: __u64 id; __u32 pid; __u32 flags; struct seccomp_data data.
#define PTL_SECCOMP_NOTIF_ID 0
#define PTL_SECCOMP_NOTIF_PID 8
#define PTL_SECCOMP_NOTIF_DATA 16
#define PTL_SECCOMP_NOTIF_SIZE 80
// struct seccomp_notif_resp: __u64 id; __s64 val; __s32 error; __u32 flags.
#define PTL_SECCOMP_RESP_ID 0
#define PTL_SECCOMP_RESP_VAL 8
#define PTL_SECCOMP_RESP_ERROR 16
#define PTL_SECCOMP_RESP_FLAGS 20
#define PTL_SECCOMP_RESP_SIZE 24
// struct seccomp_notif_sizes: three __u16.

// include/uapi/linux/filter.h and bpf_common.h: classic BPF opcodes.
#define PTL_BPF_LD_W_ABS 0x20   // BPF_LD | BPF_W | BPF_ABS
#define PTL_BPF_JEQ_K 0x15      // BPF_JMP | BPF_JEQ | BPF_K
#define PTL_BPF_JGE_K 0x35      // BPF_JMP | BPF_JGE | BPF_K
#define PTL_BPF_JSET_K 0x45     // BPF_JMP | BPF_JSET | BPF_K
#define PTL_BPF_RET_K 0x06      // BPF_RET | BPF_K

// include/uapi/linux/audit.h
#define PTL_AUDIT_ARCH_X86_64 0xc000003eU
#define PTL_AUDIT_ARCH_AARCH64 0xc00000b7U
// arch/x86/include/uapi/asm/unistd.h: x32 system calls carry this bit.
#define PTL_X32_SYSCALL_BIT 0x40000000U

// include/uapi/asm-generic/mman-common.h, include/uapi/linux/mman.h, shm.h
#define PTL_MAP_FIXED 0x10
#define PTL_MREMAP_FIXED 2
#define PTL_SHM_REMAP 040000
// ---- end of kernel ABI -------------------------------------------------------------

// PTL_SECCOMP_SLOTS is the size of the broadcast ring (a power of two).
#define PTL_SECCOMP_SLOTS (1 << 13)

// PTL_SECCOMP_PROG_MAX bounds the filter program.
#define PTL_SECCOMP_PROG_MAX 96

// What a notification was, for the counters (ptl_seccomp_stats.by_kind).
enum {
	PTL_SC_MUNMAP,
	PTL_SC_MREMAP,
	PTL_SC_MADVISE,
	PTL_SC_MMAP_FIXED,
	PTL_SC_BRK,
	PTL_SC_SHM, // shmdt, shmat(SHM_REMAP): flush
	PTL_SC_OTHER, // process_madvise, remap_file_pages, a call of another ABI
	PTL_SC_KINDS
};

// One classic BPF instruction (struct sock_filter).
struct ptl_bpf_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

// The counters of the supervisor, copied by ptl_seccomp_stats.
struct ptl_seccomp_stats {
	uint64_t seq, head;
	uint64_t notifs;    // notifications answered
	uint64_t flushes;   // "everything" published
	uint64_t errors;    // unexpected ioctl errors
	int64_t last_errno;
	uint64_t stale_ids; // answers refused with ENOENT (the caller is gone)
	uint64_t foreign;   // calls of other processes (started under the inherited filter), let run
	uint64_t by_kind[PTL_SC_KINDS];
	int sync_wake_up;   // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP accepted
	int sync_errno;     // why not
	int listener;
};

// ptl_seccomp_open installs the filter on every thread of the process and starts the
// supervisor, once per process: later calls return the first call's result. It
// returns 0 or an errno.
int ptl_seccomp_open(void);

// ptl_seccomp_filter writes the filter program for the native architecture (x86_64
// only so far) into
// prog (at least PTL_SECCOMP_PROG_MAX instructions) and returns its length, or -1
// when this architecture is not supported.
int ptl_seccomp_filter(struct ptl_bpf_insn *prog);

// ptl_seccomp_seq, ptl_seccomp_head and ptl_seccomp_ring give Go the shared words.
uint64_t *ptl_seccomp_seq(void);
uint64_t *ptl_seccomp_head(void);
struct ptl_slot *ptl_seccomp_ring(void);

void ptl_seccomp_stats(struct ptl_seccomp_stats *st);

// ptl_seccomp_supervisor_ip is the instruction pointer the kernel reports for the
// supervisor's own calls, which the filter lets through.
uint64_t ptl_seccomp_supervisor_ip(void);

// ptl_seccomp_skip_sync_wake_up makes a later ptl_seccomp_open leave the listener
// without SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, to measure what it saves (tests only).
void ptl_seccomp_skip_sync_wake_up(void);

#endif
