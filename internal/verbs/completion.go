package verbs

import "strconv"

// Status is the outcome of a work request, like ibv_wc_status.
type Status uint8

const (
	// StatusSuccess: the operation completed.
	StatusSuccess Status = iota
	// StatusLocalLengthError: an incoming SEND did not fit the posted receive buffers
	// (the sender then sees StatusRemoteInvalidRequest).
	StatusLocalLengthError
	// StatusLocalQPOperationError: the queue pair could not run the request.
	StatusLocalQPOperationError
	// StatusLocalProtectionError: an SGE names an unknown lkey, exceeds its region, or
	// lacks local write where the request writes local memory.
	StatusLocalProtectionError
	// StatusWorkRequestFlushed: the queue pair entered the error state (or was closed)
	// before the request ran.
	StatusWorkRequestFlushed
	// StatusRemoteInvalidRequest: the peer refused the request as malformed
	// (too long, unsupported opcode, misaligned atomic).
	StatusRemoteInvalidRequest
	// StatusRemoteAccessError: the rkey is unknown or deregistered, the range is out
	// of the region's bounds, or the region lacks the access right.
	StatusRemoteAccessError
	// StatusRemoteOperationError: the peer failed to run a valid request.
	StatusRemoteOperationError
	// StatusRetryExceeded: the peer stopped answering (it exited or was killed).
	StatusRetryExceeded
	// StatusRNRRetryExceeded: the peer had no receive posted for too long.
	StatusRNRRetryExceeded
	// StatusGeneralError: any other failure.
	StatusGeneralError
)

var statusNames = [...]string{"success", "local length error", "local QP operation error",
	"local protection error", "work request flushed", "remote invalid request",
	"remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "general error"}

// String returns the ibv_wc_status_str-style text of s.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// WCOpcode says what a completion completes, like ibv_wc_opcode.
type WCOpcode uint8

const (
	// WCSend completes a SEND or SEND_WITH_IMM.
	WCSend WCOpcode = iota
	// WCRDMAWrite completes an RDMA WRITE (with or without immediate).
	WCRDMAWrite
	// WCRDMARead completes an RDMA READ.
	WCRDMARead
	// WCCompSwap completes an atomic compare and swap.
	WCCompSwap
	// WCFetchAdd completes an atomic fetch and add.
	WCFetchAdd
	// WCRecv completes a posted receive consumed by a SEND.
	WCRecv
	// WCRecvRDMAWithImm completes a posted receive consumed by an RDMA WRITE with immediate.
	WCRecvRDMAWithImm
)

// WCFlags qualify a completion.
type WCFlags uint8

const (
	// WCWithImm: Imm holds the sender's immediate value.
	WCWithImm WCFlags = 1 << iota
)

// WorkCompletion reports one finished work request, like ibv_wc.
type WorkCompletion struct {
	// ID is the ID of the work request.
	ID     uint64
	Status Status
	Opcode WCOpcode
	Flags  WCFlags
	// ByteLen is the number of bytes received (receives) or transferred.
	ByteLen uint32
	// Imm is the immediate value when Flags has WCWithImm.
	Imm uint32
	// QPNum is the local queue pair the request was posted to.
	QPNum uint32
}

// OpcodeOf returns the completion opcode that a send work request of opcode o produces.
func OpcodeOf(o Opcode) WCOpcode {
	switch o {
	case OpRDMAWrite, OpRDMAWriteWithImm:
		return WCRDMAWrite
	case OpRDMARead:
		return WCRDMARead
	case OpAtomicFetchAdd:
		return WCFetchAdd
	case OpAtomicCmpSwap:
		return WCCompSwap
	default:
		return WCSend
	}
}
