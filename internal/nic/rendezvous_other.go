//go:build !linux

package nic

import (
	"context"
	"fmt"
)

// Off Linux there is no node-wide rendezvous: pids are claimed in this OS process
// only, and only the processes of this OS process can be reached.

// listener is absent off Linux.
type listener struct{}

func listenPID(pid PID) (*listener, error) { return nil, nil }

func (l *listener) Close() error            { return nil }
func (l *listener) poll(p *Process)         {}
func (l *listener) wait(pending []int) bool { return false }
func (l *listener) pendingFDs() []int       { return nil }
func (l *listener) dropPending()            {}

// nodeConn is absent off Linux.
type nodeConn struct{}

// dialNode: another OS process cannot be reached off Linux.
func (ni *NI) dialNode(ctx context.Context, pid PID) (*nodeConn, error) {
	return nil, fmt.Errorf("%w: pid %d is not in this OS process (no node-wide rendezvous on this platform: %w)",
		errUnreachable, pid, ErrNotSupported)
}

func (c *nodeConn) close() {}

func (c *nodeConn) exchange(ctx context.Context, ni *NI, pid PID, req *connectRequest) (connectReply, error) {
	return connectReply{}, errUnreachable
}
