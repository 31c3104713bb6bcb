package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/internal/bootstrap"
	portals "github.com/goportals/goportals/internal/nic"
)

// The portal table index and match bits of the transfer tests' entry.
const (
	xferPT   portals.PTIndex   = 0
	xferBits portals.MatchBits = 0x7074_6c62
)

// bench is one rank's setup for the transfer tests. Every rank exposes recv (the
// largest message size) through one match entry whose counting event counts the
// operations that land in it, and binds src, from which it puts and whose
// counting event counts ACKs; rank 0 also binds dst, into which gets and fetching
// atomics bring data, with a counting event of REPLYs. Counts only grow, so each
// counter has a running total of what was waited for.
type bench struct {
	boot bootstrap.Bootstrap
	proc *portals.Process
	ni   *portals.NI
	rank int
	peer portals.ProcessID

	recv, src, dst       []byte
	recvME               *portals.ME // nil while recv is unlinked
	recvCT, srcCT, dstCT *portals.CT
	srcMD, dstMD         *portals.MD
	recvN, srcN, dstN    uint64 // what each counter was last waited up to
	opened               bool   // an operation went to the peer (see firstOp)
}

// pattern is the data rank r sends in round seed: recv and src start with round
// 0, and a sender refills src for each message size (seed = size), so a receiver
// can tell this size's data from an earlier one's. Only the owner writes its
// memory, and only before it hands it to the engine (binding, or an operation),
// so the race detector sees every access ordered.
func pattern(r, seed, n int) []byte {
	b := make([]byte, n)
	fillPattern(b, r, seed)
	return b
}

func fillPattern(b []byte, r, seed int) {
	for i := range b {
		b[i] = byte(i*7 + 13*r + seed%251 + 1)
	}
}

// openBench joins the job, opens the NI (collectively), and links and binds the
// memory. It returns once every rank is ready for traffic.
func openBench(ctx context.Context, x *xferTest) (b *bench, err error) {
	b = &bench{}
	if b.boot, err = bootstrap.Open(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close(ctx, false))
		}
	}()
	if b.boot.Size() < 2 {
		return b, fmt.Errorf("the transfer tests need two ranks, the job has %d", b.boot.Size())
	}
	b.rank = b.boot.Rank()
	b.peer = portals.ProcessID{Rank: portals.Rank(1 - min(b.rank, 1))}
	if b.proc, err = portals.NewProcess(b.boot, nil); err != nil {
		return b, err
	}
	if b.ni, err = b.proc.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil); err != nil {
		return b, err
	}
	sizes, _ := x.sizes()
	maxSize := max(8, sizes[len(sizes)-1])
	if _, err = b.ni.PTAlloc(0, nil, xferPT); err != nil {
		return b, err
	}
	if b.recvCT, err = b.ni.CTAlloc(); err != nil {
		return b, err
	}
	b.recv = pattern(b.rank, 0, maxSize)
	if err = b.link(); err != nil {
		return b, err
	}
	if b.srcCT, err = b.ni.CTAlloc(); err != nil {
		return b, err
	}
	b.src = pattern(b.rank, 0, maxSize)
	if b.srcMD, err = b.ni.MDBind(portals.MDSpec{Start: b.src, CT: b.srcCT, Options: portals.MDEventCTAck}); err != nil {
		return b, err
	}
	if x.needDst && b.rank == 0 {
		if b.dstCT, err = b.ni.CTAlloc(); err != nil {
			return b, err
		}
		b.dst = make([]byte, maxSize)
		if b.dstMD, err = b.ni.MDBind(portals.MDSpec{Start: b.dst, CT: b.dstCT, Options: portals.MDEventCTReply}); err != nil {
			return b, err
		}
	}
	return b, b.barrier(ctx)
}

// link exposes recv through the match entry, unless it is linked.
func (b *bench) link() (err error) {
	if b.recvME == nil {
		b.recvME, err = b.ni.MEAppend(xferPT, portals.MESpec{Start: b.recv, CT: b.recvCT, UID: portals.UIDAny,
			MatchID: portals.ProcessID{Rank: portals.RankAny}, MatchBits: xferBits,
			Options: portals.MEOpPut | portals.MEOpGet | portals.MEEventCTComm}, portals.PriorityList, 0)
	}
	return err
}

// checkReceived unlinks recv, so the engine no longer touches it, and compares
// what arrived with what rank from sent for size. The caller has waited until
// every operation of the size was counted; the next size links recv again. (The
// race detector cannot see the barriers between processes that order our reads
// before the next size's remote writes; unlinking and linking again, under the
// engine's lock, orders them inside this process too.)
func (b *bench) checkReceived(from, size int) error {
	if b.recvME != nil {
		if err := b.recvME.Unlink(); err != nil {
			return err
		}
		b.recvME = nil
	}
	return checkArrived(b.recv, from, size, size)
}

// close releases everything. After a clean run it first waits for every rank, so
// nobody tears its NI down under a peer's transfer; after a failure it leaves at
// once, and the peers' next collective fails with the bootstrap's ErrPeerLost.
func (b *bench) close(ctx context.Context, clean bool) error {
	var errs []error
	if b.ni != nil && clean {
		errs = append(errs, b.barrier(ctx))
	}
	if b.proc != nil {
		errs = append(errs, b.proc.Close())
	}
	if b.boot != nil {
		errs = append(errs, b.boot.Close())
	}
	return errors.Join(errs...)
}

func (b *bench) barrier(ctx context.Context) error {
	benchStep("sleep")
	return b.boot.Barrier(ctx)
}

// active reports whether this rank takes part in the traffic (ranks 0 and 1).
func (b *bench) active() bool { return b.rank < 2 }

// put puts size bytes of src into the peer's entry.
func (b *bench) put(size int, ack portals.AckReq) error {
	b.firstOp()
	return portals.Put(b.srcMD, 0, uint64(size), ack, b.peer, xferPT, xferBits, 0, 0, 0)
}

// open opens the connection between ranks 0 and 1 before anything is timed:
// one untimed ping-pong of empty puts (rank 0 puts, rank 1 puts back once that
// counted). Connections open at a peer's first operation, and opening one waits
// in the kernel (the handshake): a rank whose goroutines all slept there came
// back to a Go runtime that keeps waking for the next 20 ms or so (its monitor
// thread restarts at a wake every 20 µs after an idle spell, then backs off),
// each wake taking a core from the ping-pong. Opened inside the 100 untimed
// iterations, the connection left that settling to the timed ones: the first
// 500 round trips of an 8-byte put_lat over TCP ran at 4.9 and 4.2 µs one way,
// against 3.4–3.5 after. Opened here, before the warm spin, the spin covers it.
func (b *bench) open(ctx context.Context) error {
	return pingPong(b.rank,
		func() error { return b.put(0, portals.NoAckReq) },
		func() error { return b.waitRecv(ctx, 1) })
}

// pingPong runs one round trip between ranks 0 and 1: rank 0 puts, then waits
// for the other's put to count; rank 1 waits, then puts back.
func pingPong(rank int, put, wait func() error) error {
	if rank == 0 {
		if err := put(); err != nil {
			return err
		}
		return wait()
	}
	if err := wait(); err != nil {
		return err
	}
	return put()
}

// firstOp tells benchEvent of the rank's first operation toward its peer
// ("op"), the one that opens the connection.
func (b *bench) firstOp() {
	if !b.opened {
		b.opened = true
		benchStep("op")
	}
}

// get gets size bytes of the peer's entry into dst.
func (b *bench) get(size int) error {
	b.firstOp()
	return portals.Get(b.dstMD, 0, uint64(size), b.peer, xferPT, xferBits, 0, 0)
}

// waitRecv waits until n more operations landed in our entry.
func (b *bench) waitRecv(ctx context.Context, n uint64) error {
	b.recvN += n
	return waitCT(ctx, b.recvCT, b.recvN)
}

// waitSrc waits until n more ACKs reached src.
func (b *bench) waitSrc(ctx context.Context, n uint64) error {
	b.srcN += n
	return waitCT(ctx, b.srcCT, b.srcN)
}

// waitDst waits until n more REPLYs reached dst.
func (b *bench) waitDst(ctx context.Context, n uint64) error {
	b.dstN += n
	return waitCT(ctx, b.dstCT, b.dstN)
}

// waitCT waits until ct counts n successes, blocking in CT.Wait or, with -poll,
// spinning on CT.Get. A counted failure is an error.
func waitCT(ctx context.Context, ct *portals.CT, n uint64) error {
	var v portals.CTEvent
	var err error
	if xferOpts.poll {
		for i := 0; ; i++ {
			if v, err = ct.Get(); err != nil || v.Success >= n || v.Failure != 0 {
				break
			}
			if i%1024 == 1023 {
				if err = ctx.Err(); err != nil {
					break
				}
				runtime.Gosched()
			}
		}
	} else {
		v, err = ct.Wait(ctx, n)
	}
	if err != nil {
		return err
	}
	if v.Failure != 0 {
		return fmt.Errorf("%d operations failed (counting event %+v)", v.Failure, v)
	}
	return nil
}

// checkArrived compares the first size bytes of got with what rank from sends in
// round seed.
func checkArrived(got []byte, from, seed, size int) error {
	want := pattern(from, seed, size)
	if !bytes.Equal(got[:size], want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		return fmt.Errorf("data from rank %d differs at byte %d of %d", from, i, size)
	}
	return nil
}

// fetchAdd adds one to the uint64 at the start of the peer's entry and brings the
// old value into dst.
func (b *bench) fetchAdd() error {
	b.firstOp()
	return portals.FetchAtomic(b.dstMD, 0, b.srcMD, 0, 8, b.peer, xferPT, xferBits, 0, 0, 0, eq.OpSum, eq.Uint64)
}

// settleSrc returns once no operation of this rank still reads src: a long put's
// data may be read from it after Put returned (the initiator writes it once the
// target answered), and the target counting it does not order that read before
// a refill in this process. The engine refuses to release a descriptor with
// operations outstanding, so settleSrc releases src's descriptor, retrying while
// it is in use, and binds it again, as Portals has an application do before it
// reuses a buffer whose operations it did not wait for.
func (b *bench) settleSrc(ctx context.Context) error {
	if b.srcMD == nil {
		return nil
	}
	for {
		err := b.srcMD.Release()
		if err == nil {
			break
		}
		if !errors.Is(err, portals.InUse) {
			return fmt.Errorf("releasing the send buffer's descriptor: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	md, err := b.ni.MDBind(portals.MDSpec{Start: b.src, CT: b.srcCT, Options: portals.MDEventCTAck})
	if err != nil {
		b.srcMD = nil
		return fmt.Errorf("binding the send buffer again: %w", err)
	}
	b.srcMD = md
	return nil
}

// prepareSend refills src with this size's pattern on the ranks that put.
func (b *bench) prepareSend(size int) { fillPattern(b.src[:size], b.rank, size) }
