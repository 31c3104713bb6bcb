// C side of the ibv provider: the calls that are macros or inline functions in
// <infiniband/verbs.h>, and the loops that turn a batch of work requests or
// completions into one cgo call.
#ifndef PTL_IBV_SHIM_H
#define PTL_IBV_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>

// Flat, pointer-free forms of the Go work requests and completions. Go fills arrays of
// them (Go memory holding no Go pointers, as the cgo rules allow) and C builds the
// linked ibv_send_wr / ibv_recv_wr chains from them.
typedef struct {
	uint64_t wr_id;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t rkey;
	uint32_t imm;       // host order; converted to network order here
	uint32_t sge_off;   // first SGE in the SGE array
	uint32_t num_sge;
	uint32_t opcode;    // enum ibv_wr_opcode
	uint32_t flags;     // enum ibv_send_flags
} ptl_send;

typedef struct {
	uint64_t wr_id;
	uint32_t sge_off;
	uint32_t num_sge;
} ptl_recv;

typedef struct {
	uint64_t wr_id;
	uint32_t status;    // enum ibv_wc_status
	uint32_t opcode;    // enum ibv_wc_opcode
	uint32_t byte_len;
	uint32_t imm;       // host order
	uint32_t qp_num;
	uint32_t flags;     // wc_flags
} ptl_wc;

// Device list: NULL with errno ENOSYS (no RDMA in the kernel) becomes zero devices.
struct ibv_device **ptl_get_devices(int *num, int *err);

int ptl_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
int ptl_odp_rc_caps(struct ibv_context *ctx, uint32_t *rc_caps);

struct ibv_mr *ptl_reg_mr(struct ibv_pd *pd, uint64_t addr, uint64_t len, int access, int *err);

// Completion channel made non-blocking; its fd is watched by Go's poller.
struct ibv_comp_channel *ptl_create_channel(struct ibv_context *ctx, int *err);
int ptl_req_notify(struct ibv_cq *cq);
// Returns 1 when an event was taken (and acknowledged), 0 when none is pending, -errno.
int ptl_get_event(struct ibv_comp_channel *ch);

int ptl_poll(struct ibv_cq *cq, int n, ptl_wc *out);

// Post n requests as one chain per 64; *bad is the index of the first request not
// posted when the result is non-zero (an errno).
int ptl_post_send(struct ibv_qp *qp, const ptl_send *wr, int n, const struct ibv_sge *sge, int *bad);
int ptl_post_recv(struct ibv_qp *qp, const ptl_recv *wr, int n, const struct ibv_sge *sge, int *bad);

// Build the chain only (for tests of the translation without a device).
void ptl_build_send(const ptl_send *wr, int n, const struct ibv_sge *sge, struct ibv_send_wr *out);

struct ibv_qp *ptl_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
	uint32_t max_send, uint32_t max_recv, uint32_t max_sge, uint32_t max_inline,
	struct ibv_qp_cap *cap, int *err);
int ptl_qp_to_init(struct ibv_qp *qp, uint8_t port);
int ptl_qp_to_rtr(struct ibv_qp *qp, uint8_t port, enum ibv_mtu mtu, uint32_t dest_qpn, uint32_t rq_psn,
	uint16_t dlid, int global, const uint8_t *dgid, uint8_t sgid_index, uint8_t max_dest_rd_atomic);
int ptl_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t max_rd_atomic);
int ptl_qp_to_err(struct ibv_qp *qp);

#endif
