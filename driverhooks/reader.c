//go:build linux && cgo

// The userfaultfd reader thread. It runs no Go code, allocates nothing after start and
// takes no lock: the Go scavenger's madvise may hold the only P while it waits for this
// thread to read its event, so the reader must not need one.
//
// Loop: poll -> seq odd -> read a batch of events -> publish the ranges into the
// broadcast ring -> seq even. A kernel thread blocked in munmap/madvise/mremap is
// released by the read, i.e. while seq is odd, so a lookup that starts after that call
// returned sees either an odd seq (and waits) or an even seq whose ring holds the event.

#include "reader.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PTL_BATCH 64

// PTL_BACKOFF_US is how long the reader waits before retrying after an error that
// may persist (a failing poll, a descriptor that is not open).
#define PTL_BACKOFF_US 1000

static uint64_t ptl_u64(const unsigned char *p) {
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static int ptl_stopping(struct ptl_reader *r) { return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) != 0; }

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
	} wp = {addr & ~(r->page_size - 1), r->page_size, 0};
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

// ptl_read_batch reads and publishes one batch of events with seq odd meanwhile. It
// returns 1 if it read events, 0 if none were pending, -1 on an error (recorded).
static int ptl_read_batch(struct ptl_reader *r, unsigned char *buf) {
	size_t msz = r->abi.msg_size;
	int ret = 1;
	__atomic_add_fetch(&r->seq, 1, __ATOMIC_SEQ_CST); // odd: read in flight
	ssize_t got = read(r->uffd, buf, msz * PTL_BATCH);
	if (got < 0) {
		ret = 0;
		if (errno != EAGAIN && errno != EINTR) {
			ptl_error(r, errno);
			ret = -1;
		}
	} else if (got == 0) {
		ret = 0;
	} else {
		for (ssize_t off = 0; off + (ssize_t)msz <= got; off += (ssize_t)msz) {
			ptl_handle(r, buf + off);
		}
		if ((size_t)got % msz != 0) {
			// A partial message: the kernel's messages are not the size we were
			// told. What it described is lost, so every cache must flush.
			ptl_error(r, EPROTO);
			ptl_publish(r, 0, ~(uint64_t)0);
		}
	}
	__atomic_add_fetch(&r->seq, 1, __ATOMIC_SEQ_CST); // even: all published
	return ret;
}

// ptl_drain reads without waiting until nothing is pending (or reading fails), at
// most limit batches.
static void ptl_drain(struct ptl_reader *r, unsigned char *buf, int limit) {
	for (int i = 0; i < limit && ptl_read_batch(r, buf) > 0; i++) {
	}
}

static void *ptl_reader_main(void *arg) {
	struct ptl_reader *r = arg;
	unsigned char buf[PTL_BATCH * PTL_MSG_MAX];
	for (;;) {
		struct pollfd p[2] = {{r->uffd, POLLIN, 0}, {r->stopfd, POLLIN, 0}};
		int n = poll(p, 2, -1);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			// poll may keep failing (EINVAL past RLIMIT_NOFILE, ENOMEM): read what
			// is pending without it, so no unmapping thread waits for good, and
			// still honour the stop flag.
			ptl_error(r, errno);
			ptl_drain(r, buf, PTL_BATCH);
			if (ptl_stopping(r)) {
				return NULL;
			}
			usleep(PTL_BACKOFF_US);
			continue;
		}
		short ue = p[0].revents, se = p[1].revents;
		if (ue & POLLNVAL) {
			// The userfaultfd is not open: nothing can be read from it again.
			ptl_error(r, EBADF);
			if (ptl_stopping(r)) {
				return NULL;
			}
			usleep(PTL_BACKOFF_US);
			continue;
		}
		if (ue & (POLLIN | POLLERR | POLLHUP)) {
			if (ptl_read_batch(r, buf) < 0 && !(ue & POLLIN)) {
				usleep(PTL_BACKOFF_US); // an error condition, not an event: do not spin
			}
		}
		if ((se & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) || ptl_stopping(r)) {
			// Stop only when no event is pending: drain first, then leave.
			if (!(ue & POLLIN)) {
				ptl_drain(r, buf, PTL_BATCH);
				return NULL;
			}
			if (se & POLLNVAL) {
				ptl_error(r, EBADF); // the stop descriptor is gone; the flag still works
			}
		}
	}
}

struct ptl_reader *ptl_reader_new(int uffd, int stopfd, uint64_t slots, struct ptl_uffd_abi abi) {
	// The reader reads the event code at offset 0 and three words of the argument.
	if (abi.msg_size == 0 || abi.msg_size % 8 != 0 || abi.msg_size > PTL_MSG_MAX ||
	    (uint64_t)abi.arg_off + 24 > abi.msg_size || abi.arg_off == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (slots == 0 || (slots & (slots - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0 || (ps & (ps - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (slots > (SIZE_MAX - sizeof(struct ptl_reader)) / sizeof(struct ptl_slot)) {
		errno = ENOMEM;
		return NULL;
	}
	size_t size = sizeof(struct ptl_reader) + slots * sizeof(struct ptl_slot);
	void *p = NULL;
	int err = posix_memalign(&p, PTL_CACHE_LINE, size);
	if (err != 0) {
		errno = err;
		return NULL;
	}
	memset(p, 0, size);
	struct ptl_reader *r = p;
	r->uffd = uffd;
	r->stopfd = stopfd;
	r->abi = abi;
	r->page_size = (uint64_t)ps;
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

// ptl_reader_stop sets the stop flag, wakes the reader through stopfd and joins it.
// The reader also leaves on the flag alone when it cannot poll (it retries every
// PTL_BACKOFF_US then), so a failed wake-up does not keep it running.
int ptl_reader_stop(struct ptl_reader *r) {
	if (!r->started) {
		return 0;
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	int werr = 0;
	uint64_t one = 1;
	if (write(r->stopfd, &one, sizeof one) != (ssize_t)sizeof one && errno != EAGAIN) {
		werr = errno; // EAGAIN: the counter is already set, the reader wakes anyway
	}
	int err = pthread_join(r->tid, NULL);
	r->started = 0;
	return err != 0 ? err : werr;
}

void ptl_reader_free(struct ptl_reader *r) { free(r); }

void ptl_reader_layout(struct ptl_reader_layout *l) {
	l->slot_size = sizeof(struct ptl_slot);
	l->slot_seq = offsetof(struct ptl_slot, seq);
	l->slot_start = offsetof(struct ptl_slot, start);
	l->slot_end = offsetof(struct ptl_slot, end);
	l->seq = offsetof(struct ptl_reader, seq);
	l->head = offsetof(struct ptl_reader, head);
	l->events = offsetof(struct ptl_reader, events);
	l->pagefaults = offsetof(struct ptl_reader, pagefaults);
	l->errors = offsetof(struct ptl_reader, errors);
	l->last_errno = offsetof(struct ptl_reader, last_errno);
	l->ring = offsetof(struct ptl_reader, ring);
	l->align = _Alignof(struct ptl_reader);
	l->msg_max = PTL_MSG_MAX;
}
