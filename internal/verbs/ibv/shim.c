//go:build linux && cgo && !noibverbs

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <arpa/inet.h>
#include "shim.h"

struct ibv_device **ptl_get_devices(int *num, int *err) {
	*num = 0;
	*err = 0;
	errno = 0;
	struct ibv_device **l = ibv_get_device_list(num);
	if (l == NULL) {
		*err = errno;
		*num = 0;
	}
	return l;
}

int ptl_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
	memset(attr, 0, sizeof *attr);
	return ibv_query_port(ctx, port, attr);
}

int ptl_odp_rc_caps(struct ibv_context *ctx, uint32_t *rc_caps) {
	struct ibv_device_attr_ex ex;
	memset(&ex, 0, sizeof ex);
	*rc_caps = 0;
	int rc = ibv_query_device_ex(ctx, NULL, &ex);
	if (rc != 0)
		return rc;
	if (ex.odp_caps.general_caps & IBV_ODP_SUPPORT)
		*rc_caps = ex.odp_caps.per_transport_caps.rc_odp_caps;
	return 0;
}

struct ibv_mr *ptl_reg_mr(struct ibv_pd *pd, uint64_t addr, uint64_t len, int access, int *err) {
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, (void *)(uintptr_t)addr, (size_t)len, access);
	*err = mr ? 0 : (errno ? errno : EINVAL);
	return mr;
}

struct ibv_comp_channel *ptl_create_channel(struct ibv_context *ctx, int *err) {
	errno = 0;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	if (ch == NULL) {
		*err = errno ? errno : ENOMEM;
		return NULL;
	}
	int fl = fcntl(ch->fd, F_GETFL);
	if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		*err = errno;
		ibv_destroy_comp_channel(ch);
		return NULL;
	}
	*err = 0;
	return ch;
}

int ptl_req_notify(struct ibv_cq *cq) { return ibv_req_notify_cq(cq, 0); }

int ptl_get_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *cq_ctx;
	if (ibv_get_cq_event(ch, &cq, &cq_ctx) != 0)
		return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
	ibv_ack_cq_events(cq, 1);
	return 1;
}

int ptl_poll(struct ibv_cq *cq, int n, ptl_wc *out) {
	struct ibv_wc wc[32];
	int got = 0;
	while (got < n) {
		int want = n - got < 32 ? n - got : 32;
		int k = ibv_poll_cq(cq, want, wc);
		if (k < 0)
			return got > 0 ? got : k;
		for (int i = 0; i < k; i++) {
			ptl_wc *o = &out[got + i];
			o->wr_id = wc[i].wr_id;
			o->status = wc[i].status;
			o->opcode = wc[i].opcode;
			o->byte_len = wc[i].byte_len;
			o->imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
			o->qp_num = wc[i].qp_num;
			o->flags = wc[i].wc_flags;
		}
		got += k;
		if (k < want)
			break;
	}
	return got;
}

void ptl_build_send(const ptl_send *wr, int n, const struct ibv_sge *sge, struct ibv_send_wr *out) {
	memset(out, 0, sizeof(*out) * (size_t)n);
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &out[i];
		w->wr_id = wr[i].wr_id;
		w->next = i + 1 < n ? &out[i + 1] : NULL;
		w->sg_list = wr[i].num_sge ? (struct ibv_sge *)&sge[wr[i].sge_off] : NULL;
		w->num_sge = (int)wr[i].num_sge;
		w->opcode = (enum ibv_wr_opcode)wr[i].opcode;
		w->send_flags = wr[i].flags;
		switch (w->opcode) {
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			w->imm_data = htonl(wr[i].imm);
			break;
		default:
			break;
		}
		switch (w->opcode) {
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			w->wr.atomic.remote_addr = wr[i].remote_addr;
			w->wr.atomic.rkey = wr[i].rkey;
			w->wr.atomic.compare_add = wr[i].compare_add;
			w->wr.atomic.swap = wr[i].swap;
			break;
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			w->wr.rdma.remote_addr = wr[i].remote_addr;
			w->wr.rdma.rkey = wr[i].rkey;
			break;
		default:
			break;
		}
	}
}

#define PTL_CHAIN 64

int ptl_post_send(struct ibv_qp *qp, const ptl_send *wr, int n, const struct ibv_sge *sge, int *bad) {
	struct ibv_send_wr chain[PTL_CHAIN];
	for (int base = 0; base < n; base += PTL_CHAIN) {
		int k = n - base < PTL_CHAIN ? n - base : PTL_CHAIN;
		ptl_build_send(wr + base, k, sge, chain);
		struct ibv_send_wr *b = NULL;
		int rc = ibv_post_send(qp, chain, &b);
		if (rc != 0) {
			*bad = base + (b ? (int)(b - chain) : 0);
			return rc;
		}
	}
	*bad = n;
	return 0;
}

int ptl_post_recv(struct ibv_qp *qp, const ptl_recv *wr, int n, const struct ibv_sge *sge, int *bad) {
	struct ibv_recv_wr chain[PTL_CHAIN];
	for (int base = 0; base < n; base += PTL_CHAIN) {
		int k = n - base < PTL_CHAIN ? n - base : PTL_CHAIN;
		memset(chain, 0, sizeof(chain[0]) * (size_t)k);
		for (int i = 0; i < k; i++) {
			const ptl_recv *r = &wr[base + i];
			chain[i].wr_id = r->wr_id;
			chain[i].next = i + 1 < k ? &chain[i + 1] : NULL;
			chain[i].sg_list = r->num_sge ? (struct ibv_sge *)&sge[r->sge_off] : NULL;
			chain[i].num_sge = (int)r->num_sge;
		}
		struct ibv_recv_wr *b = NULL;
		int rc = ibv_post_recv(qp, chain, &b);
		if (rc != 0) {
			*bad = base + (b ? (int)(b - chain) : 0);
			return rc;
		}
	}
	*bad = n;
	return 0;
}

struct ibv_qp *ptl_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
	uint32_t max_send, uint32_t max_recv, uint32_t max_sge, uint32_t max_inline,
	struct ibv_qp_cap *cap, int *err) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 0;
	a.cap.max_send_wr = max_send;
	a.cap.max_recv_wr = max_recv;
	a.cap.max_send_sge = max_sge;
	a.cap.max_recv_sge = max_sge;
	a.cap.max_inline_data = max_inline;
	errno = 0;
	struct ibv_qp *qp = ibv_create_qp(pd, &a);
	if (qp == NULL) {
		*err = errno ? errno : ENOMEM;
		return NULL;
	}
	*cap = a.cap;
	*err = 0;
	return qp;
}

int ptl_qp_to_init(struct ibv_qp *qp, uint8_t port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_ATOMIC;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int ptl_qp_to_rtr(struct ibv_qp *qp, uint8_t port, enum ibv_mtu mtu, uint32_t dest_qpn, uint32_t rq_psn,
	uint16_t dlid, int global, const uint8_t *dgid, uint8_t sgid_index, uint8_t max_dest_rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = max_dest_rd_atomic;
	a.min_rnr_timer = 12; // 0.64 ms
	a.ah_attr.dlid = dlid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = port;
	if (global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = sgid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int ptl_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t max_rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;  // 4.096 us * 2^14 = 67 ms per try
	a.retry_cnt = 7;
	a.rnr_retry = 7; // retry forever while the peer has no receive posted
	a.sq_psn = sq_psn;
	a.max_rd_atomic = max_rd_atomic;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int ptl_qp_to_err(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}
