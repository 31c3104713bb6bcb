// The userfaultfd reader: a pthread that never enters Go. See reader.c.
#ifndef PTL_READER_H
#define PTL_READER_H

#include <stdint.h>
#include <pthread.h>

// The kernel ABI the reader needs, filled in by Go from internal/uffd so that the
// constants live in one place.
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
// event of that index, 0 while it is being written.
struct ptl_slot {
	uint64_t seq;
	uint64_t start;
	uint64_t end;
	uint64_t pad;
};

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
	int uffd;
	int stopfd;
	int started;
	pthread_t tid;
	struct ptl_uffd_abi abi;
	uint64_t mask; // slots - 1
	struct ptl_slot ring[];
};

struct ptl_reader *ptl_reader_new(int uffd, int stopfd, uint64_t slots, struct ptl_uffd_abi abi);
int ptl_reader_start(struct ptl_reader *r);
int ptl_reader_stop(struct ptl_reader *r);
void ptl_reader_free(struct ptl_reader *r);

#endif
