// Command putget is goportals' showcase: two ranks move data one-sidedly through
// package rma, with no key, queue pair, registration, portal index or readiness
// handshake in sight.
//
//	go run ./cmd/ptlrun -np 2 -prefix go run ./examples/putget
//
// Every rank exposes a window of memory: 1 MiB of data and a uint64 counter that
// rank 1 starts at 100. Rank 0 then
//
//   - writes 8 bytes (eager: the payload travels inside the request message) and
//     1 MiB (long: rank 0 writes it by RDMA WRITE into the range rank 1's engine
//     names; on one node rank 1 reads the second half by RDMA READ meanwhile, and
//     under PTL_LONG_PUT=pull all of it) into rank 1's window with
//     WriteAt, reads each back into a cleared buffer with ReadAt and compares byte
//     for byte; after a barrier rank 1 checks its own memory too;
//   - adds to rank 1's counter with FetchAdd and tries CompareAndSwap with a stale
//     and then the current value;
//   - measures the one-way latency of an 8-byte Put ping-pong on a second window
//     (each side waits until the other's put has landed before replying; one way
//     is half the round trip), the time of an 8-byte WriteAt (complete at the
//     target on return), and the bandwidth of 1 MiB Puts completed by Flush.
//
// Every call has a deadline (-timeout), so a lost peer ends the program with an
// error instead of a hang. Run with more ranks, the extra ranks only open and
// close the windows.
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

	"github.com/goportals/goportals/rma"
)

// The layout of every rank's data window.
const (
	dataLen      = 1 << 20
	counterOff   = dataLen // the uint64 counter, after the data
	windowLen    = dataLen + 8
	counterStart = 100
	// eagerBelow is about where the engine switches from inline (eager) data to
	// transfers the target pulls (the eager limit is near 1 KiB).
	eagerBelow = 1024
)

// options are the command-line settings; both ranks must use the same ones.
type options struct {
	iters   int           // ping-pong round trips, and timed WriteAt calls
	puts    int           // 1 MiB puts in the bandwidth run
	window  int           // 1 MiB puts between two Flushes
	timeout time.Duration // deadline of the whole run
}

func main() {
	var o options
	flag.IntVar(&o.iters, "iters", 20000, "8-byte ping-pong round trips (and WriteAt calls) for the latency")
	flag.IntVar(&o.puts, "puts", 2000, "1 MiB puts for the bandwidth")
	flag.IntVar(&o.window, "window", 16, "1 MiB puts in flight between two Flushes")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up (and exit 1) after this long")
	flag.Parse()
	if o.iters <= 0 || o.puts <= 0 || o.window <= 0 || o.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "putget: -iters, -puts, -window and -timeout must be positive")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "putget:", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	// Open is collective: it joins the job (ptlrun tells each process its rank) and
	// returns once every rank's memory is exposed.
	mem := make([]byte, windowLen)
	binary.NativeEndian.PutUint64(mem[counterOff:], counterStart)
	data, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	defer closeInto(ctx, data, &err)
	ping, err := rma.Open(ctx, make([]byte, 8)) // the ping-pong's own window: its arrivals are pings only
	if err != nil {
		return err
	}
	defer closeInto(ctx, ping, &err)
	if data.Size() < 2 {
		return fmt.Errorf("run me with two ranks (go run ./cmd/ptlrun -np 2 go run ./examples/putget), not %d", data.Size())
	}
	switch data.Rank() {
	case 0:
		return initiator(ctx, data, ping, o)
	case 1:
		return target(ctx, data, ping, o)
	}
	return nil // further ranks only open and close the windows
}

// closeInto closes w and keeps the first error.
func closeInto(ctx context.Context, w *rma.Window, err *error) {
	if cerr := w.Close(ctx); *err == nil {
		*err = cerr
	}
}

// initiator is rank 0: it moves and checks data, then measures.
func initiator(ctx context.Context, data, ping *rma.Window, o options) error {
	const peer = 1
	for _, n := range []int{8, dataLen} {
		if err := roundTrip(ctx, data, peer, n); err != nil {
			return err
		}
	}
	if err := atomics(ctx, data, peer); err != nil {
		return err
	}
	if err := data.Barrier(ctx); err != nil { // rank 1 checks its memory now
		return err
	}

	oneWay, err := pingPong(ctx, ping, peer, true, o.iters)
	if err != nil {
		return err
	}
	fmt.Printf("latency: 8 B put ping-pong, %d round trips: one-way %.2f us\n", o.iters, us(oneWay))

	b := make([]byte, 8)
	start := time.Now()
	for range o.iters {
		if err := ping.WriteAt(ctx, peer, b, 0); err != nil {
			return err
		}
	}
	fmt.Printf("latency: 8 B WriteAt (complete at the target on return), %d calls: %.2f us each\n",
		o.iters, us(time.Since(start)/time.Duration(o.iters)))

	mbs, err := bandwidth(ctx, data, peer, o.puts, o.window)
	if err != nil {
		return err
	}
	fmt.Printf("bandwidth: %d puts of 1 MiB, %d in flight per Flush: %.0f MB/s\n", o.puts, o.window, mbs)
	return nil
}

// target is rank 1: after rank 0's checks it verifies its own memory, then
// answers the ping-pong. Its windows stay exposed until rank 0 closes them too.
func target(ctx context.Context, data, ping *rma.Window, o options) error {
	if err := data.Barrier(ctx); err != nil { // rank 0 is done writing
		return err
	}
	mem := data.Bytes()
	if !bytes.Equal(mem[:dataLen], pattern(dataLen)) {
		return fmt.Errorf("%w: rank 1's memory does not hold the 1 MiB rank 0 wrote", errVerify)
	}
	if c := binary.NativeEndian.Uint64(mem[counterOff:]); c != swapped {
		return fmt.Errorf("%w: rank 1's counter is %d, want %d", errVerify, c, swapped)
	}
	fmt.Printf("rank 1 reads its own window after a barrier: the 1 MiB and the counter (%d) are there: verified\n", swapped)
	_, err := pingPong(ctx, ping, 0, false, o.iters)
	return err
}

// pattern returns the n bytes rank 0 writes.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*131 + n)
	}
	return p
}

// roundTrip writes n bytes at the start of peer's window, reads them back into a
// cleared buffer and compares.
func roundTrip(ctx context.Context, w *rma.Window, peer, n int) error {
	src, back := pattern(n), make([]byte, n)
	start := time.Now()
	if err := w.WriteAt(ctx, peer, src, 0); err != nil {
		return err
	}
	putTime := time.Since(start)
	start = time.Now()
	if err := w.ReadAt(ctx, peer, back, 0); err != nil {
		return err
	}
	getTime := time.Since(start)
	if !bytes.Equal(back, src) {
		i := 0
		for back[i] == src[i] {
			i++
		}
		return fmt.Errorf("%w: %d-byte read differs from the write at offset %d", errVerify, n, i)
	}
	how := "eager: inline in the request"
	if n > eagerBelow {
		how = "long: rank 0 writes it by RDMA WRITE where rank 1 names (on one node rank 1 reads the second half by RDMA READ meanwhile; all of it under PTL_LONG_PUT=pull), rank 1 sends it back by RDMA WRITE"
	}
	fmt.Printf("wrote %s and read it back (%s): verified byte for byte (WriteAt %.1f us, ReadAt %.1f us)\n",
		size(n), how, us(putTime), us(getTime))
	return nil
}

const stale, swapped = 7, 42

// atomics adds to peer's counter twice, then tries a compare-and-swap with a stale
// and with the current value, checking each old value that comes back.
func atomics(ctx context.Context, w *rma.Window, peer int) error {
	const add = 5
	old1, err := rma.FetchAdd(ctx, w, peer, counterOff, uint64(add))
	if err != nil {
		return err
	}
	old2, err := rma.FetchAdd(ctx, w, peer, counterOff, uint64(add))
	if err != nil {
		return err
	}
	now, err := rma.FetchAdd(ctx, w, peer, counterOff, uint64(0))
	if err != nil {
		return err
	}
	if old1 != counterStart || old2 != counterStart+add || now != counterStart+2*add {
		return fmt.Errorf("%w: fetch-add saw %d then %d and left %d, want %d, %d, %d",
			errVerify, old1, old2, now, counterStart, counterStart+add, counterStart+2*add)
	}
	fmt.Printf("fetch-add uint64 +%d twice: fetched %d, %d; counter now %d: verified\n", add, old1, old2, now)

	seen, err := rma.CompareAndSwap(ctx, w, peer, counterOff, uint64(stale), swapped)
	if err != nil {
		return err
	}
	if seen != now {
		return fmt.Errorf("%w: compare-and-swap with a stale value saw %d, counter was %d", errVerify, seen, now)
	}
	if seen, err = rma.CompareAndSwap(ctx, w, peer, counterOff, now, swapped); err != nil {
		return err
	}
	after, err := rma.FetchAdd(ctx, w, peer, counterOff, uint64(0))
	if err != nil {
		return err
	}
	if seen != now || after != swapped {
		return fmt.Errorf("%w: compare-and-swap %d->%d saw %d and left %d", errVerify, now, swapped, seen, after)
	}
	fmt.Printf("compare-and-swap: expecting %d left %d alone; expecting %d swapped in %d: verified\n",
		stale, now, now, swapped)
	return nil
}

// pingPong runs iters timed round trips (after a tenth as many untimed ones to
// warm up) and returns the one-way latency, half the average round trip. The
// first side puts and then waits until the other's put has landed in its window;
// the other waits and then puts back.
func pingPong(ctx context.Context, w *rma.Window, peer int, first bool, iters int) (time.Duration, error) {
	b := make([]byte, 8)
	var landed uint64
	step := func() error {
		if first {
			if err := w.Put(peer, b, 0); err != nil {
				return err
			}
		}
		landed++
		if err := w.WaitArrivals(ctx, landed); err != nil {
			return err
		}
		if !first {
			if err := w.Put(peer, b, 0); err != nil {
				return err
			}
		}
		if landed%256 == 0 {
			return w.Flush(ctx) // the puts' buffers are reusable (and their failures reported)
		}
		return nil
	}
	warm := iters / 10
	for range warm {
		if err := step(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for range iters {
		if err := step(); err != nil {
			return 0, err
		}
	}
	took := time.Since(start)
	return took / time.Duration(2*iters), w.Flush(ctx)
}

// bandwidth streams 1 MiB puts into peer's window, window of them between two
// Flushes, and returns MB/s (10^6 bytes per second).
func bandwidth(ctx context.Context, w *rma.Window, peer, puts, window int) (float64, error) {
	src := pattern(dataLen)
	stream := func(n int) error {
		for i := 0; i < n; i++ {
			if err := w.Put(peer, src, 0); err != nil {
				return err
			}
			if (i+1)%window == 0 || i == n-1 {
				if err := w.Flush(ctx); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// A first window warms up the path (registrations, page faults); it is not timed.
	if err := stream(window); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := stream(puts); err != nil {
		return 0, err
	}
	return float64(puts) * dataLen / time.Since(start).Seconds() / 1e6, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}

// errVerify says that data came back different from what was sent.
var errVerify = errors.New("verification failed")
