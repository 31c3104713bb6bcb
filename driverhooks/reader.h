// The userfaultfd reader: a pthread that never enters Go. See reader.c.
#ifndef PTL_READER_H
#define PTL_READER_H

#include <stdint.h>
#include <pthread.h>

// PTL_CACHE_LINE is the alignment of the reader state and of its ring.
#define PTL_CACHE_LINE 64

// PTL_MSG_MAX is the largest message the reader accepts (the stride of its read
// buffer); struct uffd_msg is 32 bytes.
#define PTL_MSG_MAX 64

// The kernel ABI the reader needs, filled in by Go from internal/uffd so that the
// constants live in one place. ptl_reader_new refuses an ABI it cannot parse.
struct ptl_uffd_abi {
	uint32_t msg_size;     // sizeof(struct uffd_msg)
	uint32_t arg_off;      // offset of the union arg
	uint32_t ev_pagefault; // UFFD_EVENT_*
	uint32_t ev_remap;
	uint32_t ev_remove;
	uint32_t ev_unmap;
	unsigned long ioctl_wp; // UFFDIO_WRITEPROTECT
};

// One published invalidation [start, end). seq is index+1 once the slot holds the
// event of that index, 0 while it is being written. Go mirrors it (ringSlot).
struct ptl_slot {
	uint64_t seq;
	uint64_t start;
	uint64_t end;
	uint64_t pad;
};

// The reader's state. Its first two cache lines are shared with Go, which mirrors
// them (readerShared); the rest is the reader's own.
struct ptl_reader {
	// seq is odd while a read is in flight, even when every event read so far has
	// been published in the ring. Alone on its cache line: lookups load it.
	uint64_t seq;
	uint64_t pad0[7];
	// head is the index of the next slot to write (slots [head-size, head) are valid).
	uint64_t head;
	uint64_t events;     // events read
	uint64_t pagefaults; // write-protect faults resolved (should stay 0)
	uint64_t errors;     // unexpected poll/read/ioctl errors
	int64_t last_errno;
	uint64_t pad1[3];
	// stop is set by ptl_reader_stop before it signals stopfd: the reader honours
	// it even when poll keeps failing.
	uint32_t stop;
	int uffd;
	int stopfd;
	int started;
	pthread_t tid;
	struct ptl_uffd_abi abi;
	uint64_t page_size; // sysconf(_SC_PAGESIZE)
	uint64_t mask;      // slots - 1
	struct ptl_slot ring[] __attribute__((aligned(PTL_CACHE_LINE)));
};

// Offsets and sizes of the shared declarations, for the test that compares them
// with Go's mirror.
struct ptl_reader_layout {
	uint64_t slot_size, slot_seq, slot_start, slot_end;
	uint64_t seq, head, events, pagefaults, errors, last_errno, ring;
	uint64_t align, msg_max;
};

// ptl_reader_new returns a stopped reader, or NULL with errno set: EINVAL for an ABI
// the reader cannot parse or a slot count that is not a power of two, ENOMEM.
struct ptl_reader *ptl_reader_new(int uffd, int stopfd, uint64_t slots, struct ptl_uffd_abi abi);
int ptl_reader_start(struct ptl_reader *r);
int ptl_reader_stop(struct ptl_reader *r);
void ptl_reader_free(struct ptl_reader *r);
void ptl_reader_layout(struct ptl_reader_layout *l);

#endif
