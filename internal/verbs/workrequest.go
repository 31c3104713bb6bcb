package verbs

// Opcode is the operation of a send work request, like ibv_wr_opcode.
type Opcode uint8

const (
	// OpSend sends the gathered bytes; the peer consumes one posted receive.
	OpSend Opcode = iota
	// OpSendWithImm is OpSend carrying a 32-bit immediate value.
	OpSendWithImm
	// OpRDMAWrite writes the gathered bytes to RemoteAddr in the peer's region RKey.
	OpRDMAWrite
	// OpRDMAWriteWithImm is OpRDMAWrite that also consumes a posted receive at the
	// peer, which completes with the immediate value.
	OpRDMAWriteWithImm
	// OpRDMARead reads from RemoteAddr in the peer's region RKey into the local SGEs.
	OpRDMARead
	// OpAtomicFetchAdd adds CompareAdd to the 8-byte word at RemoteAddr and returns
	// the old value into the single 8-byte local SGE.
	OpAtomicFetchAdd
	// OpAtomicCmpSwap replaces the 8-byte word at RemoteAddr with Swap when it equals
	// CompareAdd, and returns the old value into the single 8-byte local SGE.
	OpAtomicCmpSwap
)

var opcodeNames = [...]string{"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM",
	"RDMA_READ", "ATOMIC_FETCH_AND_ADD", "ATOMIC_CMP_AND_SWP"}

// String returns the ibverbs-style name of the opcode.
func (o Opcode) String() string {
	if int(o) < len(opcodeNames) {
		return opcodeNames[o]
	}
	return "UNKNOWN_OPCODE"
}

// SendFlags modify a send work request, like ibv_send_flags.
type SendFlags uint8

const (
	// SendSignaled asks for a completion even on success. Without it only errors
	// produce completions.
	SendSignaled SendFlags = 1 << iota
	// SendFence waits for earlier RDMA READs and atomics on the queue pair to finish first.
	SendFence
	// SendInline copies the payload at post time, so the buffers need no lkey and may be
	// reused as soon as PostSend returns. Limited to DeviceAttr.MaxInline bytes.
	SendInline
	// SendSolicited marks the message as solicited (carried for completeness).
	SendSolicited
)

// SGE is one scatter-gather element: Length bytes at Addr inside the local
// region whose local key is LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a work request for the send queue, like ibv_send_wr (without the
// linked list: PostSend takes a slice).
type SendWR struct {
	// ID is returned in the work completion.
	ID     uint64
	Opcode Opcode
	Flags  SendFlags
	// SG gathers the local bytes (or scatters the READ / atomic results).
	SG []SGE
	// Imm is the immediate value of the *WithImm opcodes.
	Imm uint32
	// RemoteAddr and RKey name the target bytes of RDMA and atomic opcodes.
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd and Swap are the atomic operands.
	CompareAdd uint64
	Swap       uint64
}

// RecvWR is a work request for the receive queue: incoming SEND payloads are
// scattered into SG.
type RecvWR struct {
	ID uint64
	SG []SGE
}

// TotalLength returns the sum of the SGE lengths.
func TotalLength(sg []SGE) uint64 {
	var n uint64
	for i := range sg {
		n += uint64(sg[i].Length)
	}
	return n
}
