//go:build linux && cgo

// The userfaultfd reader thread. It runs no Go code, allocates nothing after start and
// takes no lock: the Go scavenger's madvise may hold the only P while it waits for this
// thread to read its event (design.md section 2), so the reader must not need one.
//
// Loop: poll -> seq odd -> read a batch of events -> publish the ranges into the
// broadcast ring -> seq even. A kernel thread blocked in munmap/madvise/mremap is
// released by the read, i.e. while seq is odd, so a lookup that starts after that call
// returned sees either an odd seq (and waits) or an even seq whose ring holds the event.

#include "reader.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PTL_BATCH 64

static uint64_t ptl_u64(const unsigned char *p) {
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static void ptl_publish(struct ptl_reader *r, uint64_t start, uint64_t end) {
	uint64_t i = r->head;
	struct ptl_slot *s = &r->ring[i & r->mask];
	__atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&s->end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, i + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->head, i + 1, __ATOMIC_RELEASE);
}

static void ptl_error(struct ptl_reader *r, int err) {
	__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->last_errno, (int64_t)err, __ATOMIC_RELAXED);
}

// ptl_unprotect resolves a write-protect fault (none is expected: no page is ever
// protected) by clearing protection on the page, which also wakes the faulting thread.
static void ptl_unprotect(struct ptl_reader *r, uint64_t addr) {
	struct {
		uint64_t start, len, mode;
	} wp = {addr & ~(uint64_t)4095, 4096, 0};
	if (ioctl(r->uffd, r->abi.ioctl_wp, &wp) != 0) {
		ptl_error(r, errno);
	}
	__atomic_add_fetch(&r->pagefaults, 1, __ATOMIC_RELAXED);
}

static void ptl_handle(struct ptl_reader *r, const unsigned char *m) {
	uint32_t ev = m[0];
	const unsigned char *a = m + r->abi.arg_off;
	__atomic_add_fetch(&r->events, 1, __ATOMIC_RELAXED);
	if (ev == r->abi.ev_remove || ev == r->abi.ev_unmap) {
		ptl_publish(r, ptl_u64(a), ptl_u64(a + 8));
	} else if (ev == r->abi.ev_remap) {
		uint64_t from = ptl_u64(a), len = ptl_u64(a + 16);
		ptl_publish(r, from, from + len);
	} else if (ev == r->abi.ev_pagefault) {
		ptl_unprotect(r, ptl_u64(a + 8));
	} else {
		// An event we did not ask for: publish "everything" so caches flush.
		ptl_publish(r, 0, ~(uint64_t)0);
	}
}

static void *ptl_reader_main(void *arg) {
	struct ptl_reader *r = arg;
	unsigned char buf[PTL_BATCH * 64];
	size_t msz = r->abi.msg_size;
	if (msz == 0 || msz > 64) {
		msz = 32;
	}
	for (;;) {
		struct pollfd p[2] = {{r->uffd, POLLIN, 0}, {r->stopfd, POLLIN, 0}};
		int n = poll(p, 2, -1);
		if (n < 0) {
			if (errno != EINTR) {
				ptl_error(r, errno);
				usleep(1000);
			}
			continue;
		}
		if (p[0].revents & (POLLIN | POLLERR)) {
			__atomic_add_fetch(&r->seq, 1, __ATOMIC_SEQ_CST); // odd: read in flight
			ssize_t got = read(r->uffd, buf, msz * PTL_BATCH);
			if (got < 0) {
				if (errno != EAGAIN && errno != EINTR) {
					ptl_error(r, errno);
				}
			} else {
				for (ssize_t off = 0; off + (ssize_t)msz <= got; off += (ssize_t)msz) {
					ptl_handle(r, buf + off);
				}
			}
			__atomic_add_fetch(&r->seq, 1, __ATOMIC_SEQ_CST); // even: all published
		}
		if (p[1].revents & POLLIN) {
			// Stop only when no event is pending: drain first, then leave.
			if (!(p[0].revents & POLLIN)) {
				return NULL;
			}
		}
	}
}

struct ptl_reader *ptl_reader_new(int uffd, int stopfd, uint64_t slots, struct ptl_uffd_abi abi) {
	struct ptl_reader *r = calloc(1, sizeof *r + slots * sizeof(struct ptl_slot));
	if (r == NULL) {
		return NULL;
	}
	r->uffd = uffd;
	r->stopfd = stopfd;
	r->abi = abi;
	r->mask = slots - 1;
	return r;
}

int ptl_reader_start(struct ptl_reader *r) {
	sigset_t all, old;
	sigfillset(&all);
	// The thread inherits the mask: it takes no signal meant for the process.
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&r->tid, NULL, ptl_reader_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err == 0) {
		r->started = 1;
	}
	return err;
}

int ptl_reader_stop(struct ptl_reader *r) {
	if (!r->started) {
		return 0;
	}
	uint64_t one = 1;
	if (write(r->stopfd, &one, sizeof one) != (ssize_t)sizeof one) {
		return errno;
	}
	int err = pthread_join(r->tid, NULL);
	r->started = 0;
	return err;
}

void ptl_reader_free(struct ptl_reader *r) { free(r); }
