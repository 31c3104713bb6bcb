package verbs

import "context"

// Provider is one implementation of the verbs interface (soft, loopback, ibv).
type Provider interface {
	// Name is the provider's short name ("soft", "loopback", "ibv").
	Name() string
	// Devices lists the devices the provider can open. No devices is not an error.
	Devices() ([]Device, error)
}

// Device is an RDMA device (or a provider's virtual one), like ibv_device.
type Device interface {
	// Name is the device name, e.g. "soft0" or "mlx5_0".
	Name() string
	// Open returns a new context on the device, like ibv_open_device.
	Open() (Context, error)
}

// DeviceAttr are a device's limits and capabilities, like ibv_device_attr.
type DeviceAttr struct {
	// MaxMR is the number of memory regions a context may register at once.
	MaxMR int
	// MaxMRSize is the largest region in bytes.
	MaxMRSize uint64
	// MaxQP, MaxQPWR, MaxSGE and MaxCQE bound queue pairs, their depths, the SGEs
	// per work request and the entries per completion queue.
	MaxQP, MaxQPWR, MaxSGE, MaxCQE int
	// MaxInline is the largest payload SendInline accepts.
	MaxInline int
	// MaxMsgSize is the largest SEND or RDMA transfer.
	MaxMsgSize uint64
	// Atomics reports support for OpAtomicFetchAdd and OpAtomicCmpSwap.
	Atomics bool
	// PageSize is the registration granularity.
	PageSize int
}

// Context is an open device, like ibv_context. Closing it destroys every object
// created under it.
type Context interface {
	// Device returns the device the context was opened on.
	Device() Device
	// Attr returns the device's limits.
	Attr() DeviceAttr
	// AllocPD allocates a protection domain.
	AllocPD() (PD, error)
	// CreateCQ creates a completion queue with room for at least entries completions.
	CreateCQ(entries int) (CQ, error)
	// Close destroys the context and everything under it; outstanding work is flushed.
	Close() error
}

// PD is a protection domain: memory regions and queue pairs of one PD may be used
// together, like ibv_pd.
type PD interface {
	// RegMR registers (pins) mem with the given rights. The region keeps mem
	// referenced until Dereg, so Go memory stays alive while registered.
	RegMR(mem []byte, access Access) (MR, error)
	// CreateQP creates a reliable-connected queue pair.
	CreateQP(attr QPAttr) (QP, error)
	// Close deallocates the PD; it fails with ErrBusy while regions or queue pairs remain.
	Close() error
}

// MR is a registered memory region, like ibv_mr.
type MR interface {
	// LKey names the region in local SGEs.
	LKey() uint32
	// RKey names the region to peers for RDMA and atomics.
	RKey() uint32
	// Addr is the virtual address of the first byte.
	Addr() uint64
	// Len is the length in bytes.
	Len() int
	// Access is the set of rights granted.
	Access() Access
	// Dereg deregisters and unpins the region. Its keys are never honoured again.
	Dereg() error
}

// CQ is a completion queue, like ibv_cq.
type CQ interface {
	// Poll moves up to len(wc) completions into wc and returns how many. It never
	// blocks and allocates nothing; it drives the provider's progress when the
	// provider needs that. Size queues for the work that can be outstanding: a
	// provider may treat an overrun as fatal (loopback) or grow the queue (soft).
	Poll(wc []WorkCompletion) (int, error)
	// Wait blocks until at least one completion is ready to Poll, ctx ends (its error
	// is returned) or the queue is closed.
	Wait(ctx context.Context) error
	// Close destroys the queue; it fails with ErrBusy while queue pairs use it.
	Close() error
}

// QPState is the state of a queue pair.
type QPState uint8

const (
	// QPInit: created, not connected.
	QPInit QPState = iota
	// QPReady: connected (ready to send and receive, RTS in ibverbs).
	QPReady
	// QPError: failed; posted work completes flushed.
	QPError
	// QPClosed: destroyed.
	QPClosed
)

var qpStateNames = [...]string{"init", "ready", "error", "closed"}

// String names the state.
func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "unknown"
}

// QPAttr are the creation attributes of a queue pair, like ibv_qp_init_attr.
type QPAttr struct {
	// SendCQ and RecvCQ receive the completions of the two queues (may be the same CQ).
	SendCQ, RecvCQ CQ
	// MaxSendWR and MaxRecvWR bound the outstanding work requests (0: provider default).
	MaxSendWR, MaxRecvWR int
	// MaxSGE bounds the SGEs per work request (0: provider default).
	MaxSGE int
}

// Address is a queue pair's opaque connection address, exchanged out of band
// (through internal/bootstrap) and passed to the peer's Connect.
type Address []byte

// QP is a reliable-connected queue pair, like an RC ibv_qp.
type QP interface {
	// Num is the queue pair number.
	Num() uint32
	// Address is what the peer needs to Connect to this queue pair.
	Address() Address
	// Connect connects to the peer queue pair at remote (INIT to RTS). Each side
	// connects to the other's address.
	Connect(remote Address) error
	// PostSend queues send work requests in order. On a synchronous error, the
	// requests before the failing one were posted and the error says which failed.
	// A SEND completes only once the peer consumed a receive for it; atomics work
	// on host-endian 8-byte words.
	PostSend(wr []SendWR) error
	// PostRecv queues receive work requests.
	PostRecv(wr []RecvWR) error
	// State returns the current state.
	State() QPState
	// Close destroys the queue pair; outstanding work completes flushed.
	Close() error
}
