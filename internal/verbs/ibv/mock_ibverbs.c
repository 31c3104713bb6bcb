//go:build linux && cgo && !noibverbs && ibvmock

// A software model of the libibverbs calls the provider makes, linked instead of
// rdma-core when the package is built with the ibvmock tag, so the conformance suite
// exercises the provider's Go and C code on machines without an HCA. One device,
// "mock0", with one active InfiniBand port; RC queue pairs of one process connect to
// each other by number. Work runs synchronously when posted, in order per queue pair:
// a SEND (or WRITE with immediate) waits while the peer has no receive posted (as RNR
// retry does), an operation towards a destroyed or failed peer completes with
// RETRY_EXC_ERR, errors move the queue pair to ERR, which flushes everything queued
// (always with a completion), and destroying a queue pair removes its entries from the
// completion queues, as mlx5 does. It follows the verbs semantics the provider relies
// on; it is not rdma-core and proves nothing about a real HCA's timing.

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#undef ibv_reg_mr
#undef ibv_query_port

#define MOCK_MAXMR 8192
#define MOCK_MAXQP 1024
#define MOCK_MAXWR 1024
#define MOCK_MAXSGE 16
#define MOCK_MAXINLINE 512

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device mock_dev = {.node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB, .name = "mock0"};

struct ibv_device **ibv_get_device_list(int *num) {
	struct ibv_device **l = calloc(2, sizeof *l);
	if (l == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = &mock_dev;
	if (num)
		*num = 1;
	return l;
}

void ibv_free_device_list(struct ibv_device **l) { free(l); }

const char *ibv_get_device_name(struct ibv_device *d) { return d->name; }

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int m_req_notify(struct ibv_cq *cq, int solicited);

struct ibv_context *ibv_open_device(struct ibv_device *d) {
	struct ibv_context *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->device = d;
	c->ops.post_send = m_post_send;
	c->ops.post_recv = m_post_recv;
	c->ops.poll_cq = m_poll_cq;
	c->ops.req_notify_cq = m_req_notify;
	c->cmd_fd = -1;
	c->async_fd = -1;
	return c;
}

int ibv_close_device(struct ibv_context *c) {
	free(c);
	return 0;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
	(void)c;
	memset(a, 0, sizeof *a);
	a->max_mr = MOCK_MAXMR - 1;
	a->max_mr_size = 1ull << 40;
	a->max_qp = MOCK_MAXQP - 1;
	a->max_qp_wr = MOCK_MAXWR;
	a->max_sge = MOCK_MAXSGE;
	a->max_cqe = 1 << 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->phys_port_cnt = 1;
	return 0;
}

int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *compat) {
	(void)c;
	if (port != 1)
		return EINVAL;
	struct ibv_port_attr *a = (struct ibv_port_attr *)compat; // the inline wrapper passes the full struct
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->lid = 1;
	a->max_msg_sz = 1u << 31;
	a->phys_state = 5;
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid) {
	(void)c;
	if (port != 1 || index != 0)
		return -1;
	memset(gid, 0, sizeof *gid);
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	gid->raw[15] = 1;
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c) {
	struct ibv_pd *p = calloc(1, sizeof *p);
	if (p)
		p->context = c;
	return p;
}

int ibv_dealloc_pd(struct ibv_pd *p) {
	free(p);
	return 0;
}

/* Memory regions: keys are slot << 8 | generation, so a deregistered key is dead. */

struct mmr {
	struct ibv_mr mr;
	int used;
	int access;
	uint8_t gen;
};
static struct mmr mrtab[MOCK_MAXMR];

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned int access) {
	(void)iova;
	if (len == 0) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&mu);
	for (int i = 1; i < MOCK_MAXMR; i++) {
		struct mmr *m = &mrtab[i];
		if (m->used)
			continue;
		m->used = 1;
		m->access = (int)access;
		m->gen++;
		memset(&m->mr, 0, sizeof m->mr);
		m->mr.context = pd->context;
		m->mr.pd = pd;
		m->mr.addr = addr;
		m->mr.length = len;
		m->mr.handle = (uint32_t)i;
		m->mr.lkey = m->mr.rkey = ((uint32_t)i << 8) | m->gen;
		pthread_mutex_unlock(&mu);
		return &m->mr;
	}
	pthread_mutex_unlock(&mu);
	errno = ENOMEM;
	return NULL;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
	return ibv_reg_mr_iova2(pd, addr, len, (uintptr_t)addr, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr) {
	pthread_mutex_lock(&mu);
	mrtab[mr->handle].used = 0;
	pthread_mutex_unlock(&mu);
	return 0;
}

// findmr returns the region of key in pd covering [addr, addr+len) with the rights
// need, or NULL.
static struct mmr *findmr(struct ibv_pd *pd, uint32_t key, uint64_t addr, uint64_t len, int need) {
	uint32_t i = key >> 8;
	if (i == 0 || i >= MOCK_MAXMR)
		return NULL;
	struct mmr *m = &mrtab[i];
	if (!m->used || m->mr.lkey != key || m->mr.pd != pd)
		return NULL;
	uint64_t base = (uint64_t)(uintptr_t)m->mr.addr;
	if (addr < base || addr + len > base + m->mr.length || addr + len < addr)
		return NULL;
	if ((m->access & need) != need)
		return NULL;
	return m;
}

/* Completion queues and channels. */

struct mch {
	struct ibv_comp_channel ch;
	struct ibv_cq *last;
};

struct mcq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	int cap, head, n;
	int armed;
};

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c) {
	struct mch *m = calloc(1, sizeof *m);
	if (m == NULL)
		return NULL;
	m->ch.context = c;
	m->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (m->ch.fd < 0) {
		free(m);
		return NULL;
	}
	return &m->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch) {
	close(ch->fd);
	free(ch);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_ctx, struct ibv_comp_channel *ch, int vec) {
	(void)vec;
	if (cqe <= 0 || cqe > (1 << 16)) {
		errno = EINVAL;
		return NULL;
	}
	struct mcq *q = calloc(1, sizeof *q);
	if (q == NULL)
		return NULL;
	q->ring = calloc((size_t)cqe, sizeof *q->ring);
	if (q->ring == NULL) {
		free(q);
		return NULL;
	}
	q->cap = cqe;
	q->cq.context = c;
	q->cq.channel = ch;
	q->cq.cq_context = cq_ctx;
	q->cq.cqe = cqe;
	return &q->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq) {
	struct mcq *q = (struct mcq *)cq;
	pthread_mutex_lock(&mu);
	if (cq->channel && ((struct mch *)cq->channel)->last == cq)
		((struct mch *)cq->channel)->last = NULL;
	pthread_mutex_unlock(&mu);
	free(q->ring);
	free(q);
	return 0;
}

static int overruns;

static void cq_push(struct ibv_cq *cq, const struct ibv_wc *wc) {
	struct mcq *q = (struct mcq *)cq;
	if (q->n == q->cap) {
		overruns++;
		return;
	}
	q->ring[(q->head + q->n) % q->cap] = *wc;
	q->n++;
	if (q->armed && cq->channel) {
		uint64_t one = 1;
		q->armed = 0;
		((struct mch *)cq->channel)->last = cq;
		if (write(cq->channel->fd, &one, sizeof one) != sizeof one) {
			overruns++;
		}
	}
}

static int m_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
	struct mcq *q = (struct mcq *)cq;
	pthread_mutex_lock(&mu);
	int k = 0;
	while (k < n && q->n > 0) {
		wc[k++] = q->ring[q->head];
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
	pthread_mutex_unlock(&mu);
	return k;
}

static int m_req_notify(struct ibv_cq *cq, int solicited) {
	(void)solicited;
	pthread_mutex_lock(&mu);
	((struct mcq *)cq)->armed = 1;
	pthread_mutex_unlock(&mu);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx) {
	uint64_t v;
	if (read(ch->fd, &v, sizeof v) != sizeof v)
		return -1; // errno from read: EAGAIN when nothing is pending
	pthread_mutex_lock(&mu);
	*cq = ((struct mch *)ch)->last;
	pthread_mutex_unlock(&mu);
	if (*cq == NULL) {
		errno = EAGAIN;
		return -1;
	}
	*cq_ctx = (*cq)->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n) {
	(void)cq;
	(void)n;
}

/* Queue pairs. */

struct pwr {
	struct ibv_send_wr wr;
	struct ibv_sge sge[MOCK_MAXSGE];
	uint8_t inl[MOCK_MAXINLINE];
	uint32_t inl_len;
	int inlined;
};

struct rwr {
	uint64_t id;
	struct ibv_sge sge[MOCK_MAXSGE];
	int num_sge;
};

struct mqp {
	struct ibv_qp qp;
	uint32_t dest;
	struct pwr *sq;
	int sq_head, sq_n, sq_cap;
	struct rwr *rq;
	int rq_head, rq_n, rq_cap;
	uint32_t max_sge, max_inline;
};
static struct mqp *qptab[MOCK_MAXQP];

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
	if (a->qp_type != IBV_QPT_RC || a->cap.max_send_wr == 0 || a->cap.max_send_wr > MOCK_MAXWR ||
	    a->cap.max_recv_wr == 0 || a->cap.max_recv_wr > MOCK_MAXWR || a->cap.max_send_sge > MOCK_MAXSGE ||
	    a->cap.max_recv_sge > MOCK_MAXSGE || a->cap.max_inline_data > MOCK_MAXINLINE) {
		errno = EINVAL;
		return NULL;
	}
	struct mqp *q = calloc(1, sizeof *q);
	if (q == NULL)
		return NULL;
	q->sq_cap = (int)a->cap.max_send_wr;
	q->rq_cap = (int)a->cap.max_recv_wr;
	q->sq = calloc((size_t)q->sq_cap, sizeof *q->sq);
	q->rq = calloc((size_t)q->rq_cap, sizeof *q->rq);
	if (q->sq == NULL || q->rq == NULL) {
		free(q->sq);
		free(q->rq);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->max_sge = a->cap.max_send_sge > a->cap.max_recv_sge ? a->cap.max_send_sge : a->cap.max_recv_sge;
	q->max_inline = a->cap.max_inline_data;
	pthread_mutex_lock(&mu);
	for (int i = 1; i < MOCK_MAXQP; i++) {
		if (qptab[i] == NULL) {
			qptab[i] = q;
			q->qp.qp_num = (uint32_t)i;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	if (q->qp.qp_num == 0) {
		free(q->sq);
		free(q->rq);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->qp.context = pd->context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_context = a->qp_context;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	return &q->qp;
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op) {
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static void send_done(struct mqp *q, const struct pwr *p, enum ibv_wc_status st, uint32_t len) {
	if (st == IBV_WC_SUCCESS && !(p->wr.send_flags & IBV_SEND_SIGNALED))
		return;
	struct ibv_wc wc = {.wr_id = p->wr.wr_id, .status = st, .opcode = wc_opcode(p->wr.opcode),
		.byte_len = len, .qp_num = q->qp.qp_num};
	cq_push(q->qp.send_cq, &wc);
}

static void recv_done(struct mqp *q, const struct rwr *r, enum ibv_wc_status st, enum ibv_wc_opcode op,
	uint32_t len, int imm, uint32_t imm_be) {
	struct ibv_wc wc = {.wr_id = r->id, .status = st, .opcode = op, .byte_len = len, .qp_num = q->qp.qp_num};
	if (imm) {
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = imm_be;
	}
	cq_push(q->qp.recv_cq, &wc);
}

// enter_err moves q to ERR and flushes everything queued, with a completion each.
static void enter_err(struct mqp *q) {
	q->qp.state = IBV_QPS_ERR;
	while (q->sq_n > 0) {
		struct pwr *p = &q->sq[q->sq_head];
		struct ibv_wc wc = {.wr_id = p->wr.wr_id, .status = IBV_WC_WR_FLUSH_ERR, .opcode = wc_opcode(p->wr.opcode),
			.qp_num = q->qp.qp_num};
		cq_push(q->qp.send_cq, &wc);
		q->sq_head = (q->sq_head + 1) % q->sq_cap;
		q->sq_n--;
	}
	while (q->rq_n > 0) {
		struct rwr *r = &q->rq[q->rq_head];
		recv_done(q, r, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0);
		q->rq_head = (q->rq_head + 1) % q->rq_cap;
		q->rq_n--;
	}
}

// gather copies the local bytes of p into a new buffer; NULL (and *ok 0) on a
// protection error.
static uint8_t *gather(struct mqp *q, struct pwr *p, uint64_t *len, int *ok) {
	*ok = 1;
	if (p->inlined) {
		*len = p->inl_len;
		uint8_t *b = malloc(p->inl_len ? p->inl_len : 1);
		memcpy(b, p->inl, p->inl_len);
		return b;
	}
	uint64_t n = 0;
	for (int i = 0; i < p->wr.num_sge; i++) {
		struct ibv_sge *s = &p->sge[i];
		if (!findmr(q->qp.pd, s->lkey, s->addr, s->length, 0)) {
			*ok = 0;
			return NULL;
		}
		n += s->length;
	}
	uint8_t *b = malloc(n ? n : 1);
	uint64_t off = 0;
	for (int i = 0; i < p->wr.num_sge; i++) {
		memcpy(b + off, (void *)(uintptr_t)p->sge[i].addr, p->sge[i].length);
		off += p->sge[i].length;
	}
	*len = n;
	return b;
}

// local_writable checks that sges can receive bytes, returning their capacity or -1.
static int64_t local_writable(struct ibv_pd *pd, const struct ibv_sge *sge, int n) {
	int64_t cap = 0;
	for (int i = 0; i < n; i++) {
		if (!findmr(pd, sge[i].lkey, sge[i].addr, sge[i].length, IBV_ACCESS_LOCAL_WRITE))
			return -1;
		cap += sge[i].length;
	}
	return cap;
}

static void scatter(const struct ibv_sge *sge, int n, const uint8_t *b, uint64_t len) {
	uint64_t off = 0;
	for (int i = 0; i < n && off < len; i++) {
		uint64_t k = len - off < sge[i].length ? len - off : sge[i].length;
		memcpy((void *)(uintptr_t)sge[i].addr, b + off, k);
		off += k;
	}
}

enum { RUN_DONE, RUN_WAIT };

// run executes the request at the head of q's send queue.
static int run(struct mqp *q, struct pwr *p) {
	struct mqp *peer = q->dest < MOCK_MAXQP ? qptab[q->dest] : NULL;
	if (peer == NULL || peer->qp.state == IBV_QPS_ERR || peer->qp.state < IBV_QPS_RTR ||
	    peer->dest != q->qp.qp_num) {
		send_done(q, p, IBV_WC_RETRY_EXC_ERR, 0);
		return -1;
	}
	enum ibv_wr_opcode op = p->wr.opcode;
	int needs_recv = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	if (needs_recv && peer->rq_n == 0)
		return RUN_WAIT;
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM: {
		uint64_t len;
		int ok;
		uint8_t *b = gather(q, p, &len, &ok);
		if (!ok) {
			send_done(q, p, IBV_WC_LOC_PROT_ERR, 0);
			return -1;
		}
		struct rwr *r = &peer->rq[peer->rq_head];
		int64_t cap = local_writable(peer->qp.pd, r->sge, r->num_sge);
		peer->rq_head = (peer->rq_head + 1) % peer->rq_cap;
		peer->rq_n--;
		if (cap < 0 || (uint64_t)cap < len) {
			recv_done(peer, r, cap < 0 ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0);
			enter_err(peer);
			free(b);
			send_done(q, p, cap < 0 ? IBV_WC_REM_OP_ERR : IBV_WC_REM_INV_REQ_ERR, 0);
			return -1;
		}
		scatter(r->sge, r->num_sge, b, len);
		free(b);
		recv_done(peer, r, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)len, op == IBV_WR_SEND_WITH_IMM, p->wr.imm_data);
		send_done(q, p, IBV_WC_SUCCESS, (uint32_t)len);
		return RUN_DONE;
	}
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		uint64_t len;
		int ok;
		uint8_t *b = gather(q, p, &len, &ok);
		if (!ok) {
			send_done(q, p, IBV_WC_LOC_PROT_ERR, 0);
			return -1;
		}
		if (!findmr(peer->qp.pd, p->wr.wr.rdma.rkey, p->wr.wr.rdma.remote_addr, len, IBV_ACCESS_REMOTE_WRITE)) {
			free(b);
			send_done(q, p, IBV_WC_REM_ACCESS_ERR, 0);
			return -1;
		}
		memcpy((void *)(uintptr_t)p->wr.wr.rdma.remote_addr, b, len);
		free(b);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			struct rwr *r = &peer->rq[peer->rq_head];
			peer->rq_head = (peer->rq_head + 1) % peer->rq_cap;
			peer->rq_n--;
			recv_done(peer, r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)len, 1, p->wr.imm_data);
		}
		send_done(q, p, IBV_WC_SUCCESS, (uint32_t)len);
		return RUN_DONE;
	}
	case IBV_WR_RDMA_READ: {
		int64_t cap = local_writable(q->qp.pd, p->sge, p->wr.num_sge);
		if (cap < 0) {
			send_done(q, p, IBV_WC_LOC_PROT_ERR, 0);
			return -1;
		}
		if (!findmr(peer->qp.pd, p->wr.wr.rdma.rkey, p->wr.wr.rdma.remote_addr, (uint64_t)cap, IBV_ACCESS_REMOTE_READ)) {
			send_done(q, p, IBV_WC_REM_ACCESS_ERR, 0);
			return -1;
		}
		scatter(p->sge, p->wr.num_sge, (const uint8_t *)(uintptr_t)p->wr.wr.rdma.remote_addr, (uint64_t)cap);
		send_done(q, p, IBV_WC_SUCCESS, (uint32_t)cap);
		return RUN_DONE;
	}
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP: {
		if (p->wr.num_sge != 1 || p->sge[0].length != 8 || local_writable(q->qp.pd, p->sge, 1) < 0) {
			send_done(q, p, IBV_WC_LOC_PROT_ERR, 0);
			return -1;
		}
		uint64_t ra = p->wr.wr.atomic.remote_addr;
		if (!findmr(peer->qp.pd, p->wr.wr.atomic.rkey, ra, 8, IBV_ACCESS_REMOTE_ATOMIC)) {
			send_done(q, p, IBV_WC_REM_ACCESS_ERR, 0);
			return -1;
		}
		if (ra % 8 != 0) {
			send_done(q, p, IBV_WC_REM_INV_REQ_ERR, 0);
			return -1;
		}
		uint64_t *w = (uint64_t *)(uintptr_t)ra, old = *w;
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			*w = old + p->wr.wr.atomic.compare_add;
		else if (old == p->wr.wr.atomic.compare_add)
			*w = p->wr.wr.atomic.swap;
		memcpy((void *)(uintptr_t)p->sge[0].addr, &old, 8);
		send_done(q, p, IBV_WC_SUCCESS, 8);
		return RUN_DONE;
	}
	default:
		send_done(q, p, IBV_WC_LOC_QP_OP_ERR, 0);
		return -1;
	}
}

// progress runs q's send queue from its head while it can.
static void progress(struct mqp *q) {
	while (q->qp.state == IBV_QPS_RTS && q->sq_n > 0) {
		struct pwr *p = &q->sq[q->sq_head];
		int r = run(q, p);
		if (r == RUN_WAIT)
			return;
		q->sq_head = (q->sq_head + 1) % q->sq_cap;
		q->sq_n--;
		if (r < 0)
			enter_err(q);
	}
}

// progress_peers runs the queue pairs connected to qpn.
static void progress_peers(uint32_t qpn) {
	for (int i = 1; i < MOCK_MAXQP; i++)
		if (qptab[i] && qptab[i]->dest == qpn)
			progress(qptab[i]);
}

static int m_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	struct mqp *q = (struct mqp *)qp;
	int rc = 0;
	pthread_mutex_lock(&mu);
	for (; wr; wr = wr->next) {
		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
			rc = EINVAL;
			break;
		}
		if (q->sq_n == q->sq_cap) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge) {
			rc = EINVAL;
			break;
		}
		struct pwr *p = &q->sq[(q->sq_head + q->sq_n) % q->sq_cap];
		memset(p, 0, sizeof *p);
		p->wr = *wr;
		p->wr.next = NULL;
		memcpy(p->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		p->wr.sg_list = p->sge;
		if (wr->send_flags & IBV_SEND_INLINE) {
			uint32_t n = 0;
			for (int i = 0; i < wr->num_sge; i++)
				n += wr->sg_list[i].length;
			if (n > q->max_inline) {
				rc = EINVAL;
				break;
			}
			for (int i = 0, off = 0; i < wr->num_sge; i++) {
				memcpy(p->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
				off += (int)wr->sg_list[i].length;
			}
			p->inl_len = n;
			p->inlined = 1;
		}
		q->sq_n++;
		if (qp->state == IBV_QPS_ERR)
			enter_err(q);
	}
	if (rc && bad)
		*bad = wr;
	progress(q);
	pthread_mutex_unlock(&mu);
	return rc;
}

static int m_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
	struct mqp *q = (struct mqp *)qp;
	int rc = 0;
	pthread_mutex_lock(&mu);
	for (; wr; wr = wr->next) {
		if (qp->state == IBV_QPS_RESET) {
			rc = EINVAL;
			break;
		}
		if (q->rq_n == q->rq_cap) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_sge) {
			rc = EINVAL;
			break;
		}
		struct rwr *r = &q->rq[(q->rq_head + q->rq_n) % q->rq_cap];
		r->id = wr->wr_id;
		r->num_sge = wr->num_sge;
		memcpy(r->sge, wr->sg_list, sizeof(struct ibv_sge) * (size_t)wr->num_sge);
		q->rq_n++;
		if (qp->state == IBV_QPS_ERR)
			enter_err(q);
	}
	if (rc && bad)
		*bad = wr;
	progress_peers(qp->qp_num);
	pthread_mutex_unlock(&mu);
	return rc;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
	struct mqp *q = (struct mqp *)qp;
	int rc = 0;
	pthread_mutex_lock(&mu);
	if (mask & IBV_QP_STATE) {
		enum ibv_qp_state cur = qp->state, next = a->qp_state;
		int legal = next == IBV_QPS_ERR || next == IBV_QPS_RESET || (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) ||
			    (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) || (cur == IBV_QPS_RTR && next == IBV_QPS_RTS);
		if (!legal) {
			rc = EINVAL;
		} else {
			if (next == IBV_QPS_RTR) {
				if (!(mask & IBV_QP_DEST_QPN) || a->ah_attr.port_num != 1) {
					rc = EINVAL;
					goto out;
				}
				q->dest = a->dest_qp_num;
			}
			qp->state = next;
			if (next == IBV_QPS_ERR)
				enter_err(q);
			if (next == IBV_QPS_RTS)
				progress(q);
		}
	}
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

// cq_clean removes the entries of qpn from cq, as mlx5 does when a queue pair is destroyed.
static void cq_clean(struct ibv_cq *cq, uint32_t qpn) {
	struct mcq *q = (struct mcq *)cq;
	int k = 0;
	for (int i = 0; i < q->n; i++) {
		struct ibv_wc wc = q->ring[(q->head + i) % q->cap];
		if (wc.qp_num != qpn)
			q->ring[(q->head + k++) % q->cap] = wc;
	}
	q->n = k;
}

int ibv_destroy_qp(struct ibv_qp *qp) {
	struct mqp *q = (struct mqp *)qp;
	pthread_mutex_lock(&mu);
	qptab[qp->qp_num] = NULL;
	cq_clean(qp->send_cq, qp->qp_num);
	if (qp->recv_cq != qp->send_cq)
		cq_clean(qp->recv_cq, qp->qp_num);
	progress_peers(qp->qp_num);
	pthread_mutex_unlock(&mu);
	free(q->sq);
	free(q->rq);
	free(q);
	return 0;
}
