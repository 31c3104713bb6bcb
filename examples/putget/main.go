// Command putget is goportals' showcase: two ranks move data one-sidedly through
// the Portals API, with no key, queue pair or registration in sight.
//
//	go run ./cmd/ptlrun -np 2 -prefix go run ./examples/putget
//
// Rank 1 exposes memory through match entries on one portal table entry: a 1 MiB
// data window, a uint64 counter, and a small "ping" buffer whose counting event
// counts the puts that land in it. Rank 0 then
//
//   - puts 8 bytes (eager: the payload travels inside the request message) and
//     1 MiB (long: rank 1's engine pulls it by RDMA READ) into the window, gets each
//     back into a cleared buffer and compares byte for byte;
//   - adds to the counter with a fetching atomic (PTL_SUM on PTL_UINT64_T) and
//     tries a compare-and-swap (PTL_CSWAP) with a stale and then a current value;
//   - measures the one-way latency of an 8-byte put ping-pong (each side waits for
//     the other's put on its counting event before replying; one way is half the
//     round trip) and the bandwidth of 1 MiB puts kept in flight in a window.
//
// Every wait has a deadline (-timeout), so a lost peer ends the program with an
// error instead of a hang. Run with more ranks, the extra ranks only join the NI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	portals "github.com/goportals/goportals/internal/nic"
)

// What the two ranks agree on: the portal table index and the match bits that
// select each entry.
const (
	ptIndex      portals.PTIndex   = 4
	dataBits     portals.MatchBits = 0xda7a
	counterBits  portals.MatchBits = 0xc0de
	pingBits     portals.MatchBits = 0x9196
	windowSize                     = 1 << 20
	counterStart                   = 100
)

// options are the command-line settings; both ranks must use the same ones.
type options struct {
	iters   int           // ping-pong round trips
	puts    int           // 1 MiB puts in the bandwidth run
	window  int           // 1 MiB puts in flight at once
	timeout time.Duration // deadline of the whole run
}

func main() {
	var o options
	flag.IntVar(&o.iters, "iters", 20000, "8-byte ping-pong round trips for the latency")
	flag.IntVar(&o.puts, "puts", 2000, "1 MiB puts for the bandwidth")
	flag.IntVar(&o.window, "window", 16, "1 MiB puts in flight at once")
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

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	// Init joins the job through the launcher (ptlrun); NIInit is collective: every
	// rank opens the same NI, which connects it to all the others.
	if err := portals.Init(); err != nil {
		return err
	}
	defer portals.Fini()
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		return err
	}
	defer ni.Fini()
	id, err := ni.ID()
	if err != nil {
		return err
	}
	rank := int(id.Rank)
	ranks, err := ni.Map()
	if err != nil {
		return err
	}
	if len(ranks) < 2 {
		return fmt.Errorf("run me with two ranks (go run ./cmd/ptlrun -np 2 go run ./examples/putget), not %d", len(ranks))
	}
	if _, err := ni.PTAlloc(0, nil, ptIndex); err != nil {
		return err
	}

	// Every rank that takes part gets a ping entry: 8 bytes whose counting event
	// counts the puts that land in it. That counter is what the ping-pong waits on.
	ping, err := newPinger(ni)
	if err != nil {
		return err
	}
	switch rank {
	case 0:
		return initiator(ctx, ni, ping, o)
	case 1:
		return target(ctx, ni, ping, o)
	}
	return nil // further ranks only took part in NIInit
}

// anyone matches every initiator on a logically addressed NI.
var anyone = portals.ProcessID{Rank: portals.RankAny}

// target is rank 1: it exposes its memory, tells rank 0 it is ready, answers the
// ping-pong and waits for rank 0's final put before leaving.
func target(ctx context.Context, ni *portals.NI, ping *pinger, o options) error {
	window := make([]byte, windowSize)
	if _, err := ni.MEAppend(ptIndex, portals.MESpec{Start: window, UID: portals.UIDAny, MatchID: anyone,
		MatchBits: dataBits, Options: portals.MEOpPut | portals.MEOpGet}, portals.PriorityList, 0); err != nil {
		return err
	}
	counter := make([]byte, 8)
	le.PutUint64(counter, counterStart)
	if _, err := ni.MEAppend(ptIndex, portals.MESpec{Start: counter, UID: portals.UIDAny, MatchID: anyone,
		MatchBits: counterBits, Options: portals.MEOpPut | portals.MEOpGet}, portals.PriorityList, 0); err != nil {
		return err
	}
	peer := portals.ProcessID{Rank: 0}
	if err := ping.ready(ctx, peer); err != nil {
		return err
	}
	// Rank 0 checks data and atomics first; our part starts with its first ping.
	if _, err := ping.pong(ctx, peer, false, o.iters); err != nil {
		return err
	}
	// The last message of the run: rank 0 is done with our memory.
	return ping.await(ctx)
}

// initiator is rank 0: it waits until rank 1 is ready, moves and checks data,
// then measures.
func initiator(ctx context.Context, ni *portals.NI, ping *pinger, o options) error {
	if err := ping.await(ctx); err != nil {
		return fmt.Errorf("waiting for rank 1 to expose its memory: %w", err)
	}
	peer := portals.ProcessID{Rank: 1}
	c, err := newClient(ni, peer)
	if err != nil {
		return err
	}
	for _, n := range []int{8, windowSize} {
		if err := c.roundTrip(ctx, n); err != nil {
			return err
		}
	}
	if err := c.atomics(ctx); err != nil {
		return err
	}

	oneWay, err := ping.pong(ctx, peer, true, o.iters)
	if err != nil {
		return err
	}
	fmt.Printf("latency: 8 B put ping-pong, %d round trips: one-way %.2f us\n", o.iters, us(oneWay))

	mbs, err := c.bandwidth(ctx, o.puts, o.window)
	if err != nil {
		return err
	}
	fmt.Printf("bandwidth: %d puts of 1 MiB, %d in flight: %.0f MB/s\n", o.puts, o.window, mbs)
	return ping.send(ctx, peer, true) // tell rank 1 we are done, and wait for its ack
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// errVerify says that data came back different from what was sent.
var errVerify = errors.New("verification failed")
