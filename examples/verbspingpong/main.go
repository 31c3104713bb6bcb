// Command verbspingpong is the two-process demo of the foundation layer: under
// cmd/ptlrun, rank 0 and rank 1 open the soft verbs provider, exchange queue pair
// addresses and memory keys through the bootstrap, and then move data one-sidedly:
// an 8-byte SEND ping-pong (latency), a stream of 1 MiB RDMA WRITEs (bandwidth), and
// an RDMA READ that checks the bytes came back intact.
//
//	go run ./cmd/ptlrun -np 2 -prefix go run ./examples/verbspingpong
//
// It is replaced as the main demo by the put/get demo once the Portals API exists.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
)

func main() {
	iters := flag.Int("iters", 100000, "ping-pong round trips")
	writes := flag.Int("writes", 2000, "1 MiB writes for the bandwidth run")
	flag.Parse()
	if err := run(*iters, *writes); err != nil {
		fmt.Fprintln(os.Stderr, "verbspingpong:", err)
		os.Exit(1)
	}
}

const size = 1 << 20

type endpoint struct {
	ctx *soft.Context
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
	buf []byte
	mr  verbs.MR
}

func run(iters, writes int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	boot, err := bootstrap.Open(ctx)
	if err != nil {
		return err
	}
	defer boot.Close()
	if boot.Size() != 2 {
		return fmt.Errorf("run me with exactly two ranks (ptlrun -np 2), not %d", boot.Size())
	}
	me, peer := boot.Rank(), 1-boot.Rank()

	ep, err := open()
	if err != nil {
		return err
	}
	defer ep.ctx.Close()

	// Publish the queue pair address and this rank's buffer (address, rkey).
	var region [12]byte
	binary.LittleEndian.PutUint64(region[0:], ep.mr.Addr())
	binary.LittleEndian.PutUint32(region[8:], ep.mr.RKey())
	if err := errors.Join(boot.Put("qp", ep.qp.Address()), boot.Put("mr", region[:])); err != nil {
		return err
	}
	if err := boot.Fence(ctx); err != nil {
		return err
	}
	addr, err := boot.Get(ctx, peer, "qp")
	if err != nil {
		return err
	}
	preg, err := boot.Get(ctx, peer, "mr")
	if err != nil {
		return err
	}
	if err := ep.qp.Connect(addr); err != nil {
		return err
	}
	raddr, rkey := binary.LittleEndian.Uint64(preg[0:]), binary.LittleEndian.Uint32(preg[8:])

	// Ping-pong: rank 0 sends, rank 1 echoes; both poll their completion queue.
	lat, err := ep.pingPong(me == 0, iters)
	if err != nil {
		return err
	}
	if me == 0 {
		fmt.Printf("SEND/RECV 8 B ping-pong: %d round trips, one-way latency %.3f us\n", iters, lat.Seconds()*1e6)
	}
	if err := boot.Barrier(ctx); err != nil {
		return err
	}

	// One-sided: rank 0 writes into rank 1's buffer and reads it back; rank 1 only waits.
	if me == 0 {
		for i := range ep.buf {
			ep.buf[i] = byte(i * 31)
		}
		bw, err := ep.stream(verbs.OpRDMAWrite, raddr, rkey, writes)
		if err != nil {
			return err
		}
		fmt.Printf("RDMA WRITE 1 MiB x %d: %.0f MB/s\n", writes, bw)
		want := bytes.Clone(ep.buf)
		clear(ep.buf)
		if _, err := ep.stream(verbs.OpRDMARead, raddr, rkey, 1); err != nil {
			return err
		}
		if !bytes.Equal(ep.buf, want) {
			return errors.New("RDMA READ returned different bytes than were written")
		}
		fmt.Printf("RDMA READ 1 MiB: verified byte for byte\n")
	}
	return boot.Barrier(ctx)
}

func open() (*endpoint, error) {
	c, err := soft.Open()
	if err != nil {
		return nil, err
	}
	ep := &endpoint{ctx: c, buf: make([]byte, size)}
	if ep.pd, err = c.AllocPD(); err == nil {
		if ep.cq, err = c.CreateCQ(256); err == nil {
			if ep.qp, err = ep.pd.CreateQP(verbs.QPAttr{SendCQ: ep.cq, RecvCQ: ep.cq}); err == nil {
				ep.mr, err = ep.pd.RegMR(ep.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
			}
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return ep, nil
}

// pingPong runs iters 8-byte round trips and returns the one-way latency.
func (ep *endpoint) pingPong(initiator bool, iters int) (time.Duration, error) {
	recv := []verbs.RecvWR{{SG: []verbs.SGE{{Addr: ep.mr.Addr(), Length: 8, LKey: ep.mr.LKey()}}}}
	send := []verbs.SendWR{{Opcode: verbs.OpSend, SG: []verbs.SGE{{Addr: ep.mr.Addr() + 64, Length: 8, LKey: ep.mr.LKey()}}}}
	for i := 0; i < 32; i++ {
		if err := ep.qp.PostRecv(recv); err != nil {
			return 0, err
		}
	}
	var wc [8]verbs.WorkCompletion
	awaitRecv := func() error {
		deadline := time.Now().Add(30 * time.Second)
		for n := 0; ; n++ {
			k, err := ep.cq.Poll(wc[:])
			if err != nil {
				return err
			}
			for _, w := range wc[:k] {
				if w.Status != verbs.StatusSuccess {
					return fmt.Errorf("completion: %v", w.Status)
				}
				if w.Opcode == verbs.WCRecv {
					return ep.qp.PostRecv(recv)
				}
			}
			if n%4096 == 0 && time.Now().After(deadline) {
				return errors.New("peer stopped answering")
			}
		}
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		if initiator {
			if err := ep.qp.PostSend(send); err != nil {
				return 0, err
			}
			if err := awaitRecv(); err != nil {
				return 0, err
			}
		} else {
			if err := awaitRecv(); err != nil {
				return 0, err
			}
			if err := ep.qp.PostSend(send); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start) / time.Duration(2*iters), nil
}

// stream posts n transfers of the whole buffer with 16 outstanding and returns MB/s.
func (ep *endpoint) stream(op verbs.Opcode, raddr uint64, rkey uint32, n int) (float64, error) {
	wr := []verbs.SendWR{{Opcode: op, Flags: verbs.SendSignaled, RemoteAddr: raddr, RKey: rkey,
		SG: []verbs.SGE{{Addr: ep.mr.Addr(), Length: size, LKey: ep.mr.LKey()}}}}
	var wc [16]verbs.WorkCompletion
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	posted, done := 0, 0
	for done < n {
		for posted < n && posted-done < len(wc) {
			if err := ep.qp.PostSend(wr); err != nil {
				return 0, err
			}
			posted++
		}
		k, err := ep.cq.Poll(wc[:])
		if err != nil {
			return 0, err
		}
		for _, w := range wc[:k] {
			if w.Status != verbs.StatusSuccess {
				return 0, fmt.Errorf("%v completion: %v", op, w.Status)
			}
		}
		done += k
		if k == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	return float64(n) * size / time.Since(start).Seconds() / 1e6, nil
}
