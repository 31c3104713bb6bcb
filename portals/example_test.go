package portals_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"time"

	"github.com/goportals/goportals/portals"
)

// These examples run in one process: an NI reaches any process by its physical id,
// its own included, so each example is both initiator and target. Between
// processes, the target's id comes from that process (PhysID, exchanged out of
// band) or, on a logical NI, is its rank in the map given to SetMap.

// Example puts bytes into memory exposed by a match entry and gets them back. The
// README's "Using it" shows this function's body, and a test keeps the two equal.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := portals.Init(); err != nil {
		log.Fatal(err)
	}
	defer portals.Fini()
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ni.Fini()
	eq, err := ni.EQAlloc(64)
	if err != nil {
		log.Fatal(err)
	}
	pt, err := ni.PTAlloc(0, eq, portals.PTAny)
	if err != nil {
		log.Fatal(err)
	}

	// Target side: expose 64 bytes to puts and gets with match bits 0x42, from anyone.
	exposed := make([]byte, 64)
	_, err = pt.Append(portals.MESpec{Start: exposed, UID: portals.UIDAny,
		Options:   portals.MEOpPut | portals.MEOpGet,
		MatchID:   portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny},
		MatchBits: 0x42}, portals.PriorityList, 0)
	if err != nil {
		log.Fatal(err)
	}

	// Initiator side: a peer's physical id, here our own.
	self, err := ni.PhysID()
	if err != nil {
		log.Fatal(err)
	}
	to := portals.Target{ID: self, PT: pt.Index(), Match: 0x42, Offset: 8}
	data := []byte("hello, portals")
	md, err := ni.MDBind(portals.MDSpec{Start: data, EQ: eq})
	if err != nil {
		log.Fatal(err)
	}
	// data must not change until EventSend; EventAck says the target has it.
	if err := md.All().Put(to, portals.OpOptions{Ack: portals.AckReqFull}); err != nil {
		log.Fatal(err)
	}
	back := make([]byte, len(data))
	bmd, err := ni.MDBind(portals.MDSpec{Start: back, EQ: eq})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range eq.Events(ctx) {
		if err != nil || ev.NIFail != portals.NIOK {
			log.Fatal(ev.Type, ev.NIFail, err)
		}
		switch ev.Type {
		case portals.EventAck: // the put is done: read it back
			if err := bmd.All().Get(to, portals.OpOptions{}); err != nil {
				log.Fatal(err)
			}
		case portals.EventReply: // back is filled in
			fmt.Printf("exposed[8:22] = %q\nback = %q\n", exposed[8:22], back)
			return
		}
	}
	// Output:
	// exposed[8:22] = "hello, portals"
	// back = "hello, portals"
}

// setup brings up a matching physical NI with an event queue and a portal table
// entry, and returns them with this process's id; done releases them.
func setup() (ni *portals.NI, eq *portals.EQ, pt *portals.PT, self portals.ProcessID, done func()) {
	if err := portals.Init(); err != nil {
		log.Fatal(err)
	}
	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		log.Fatal(err)
	}
	if eq, err = ni.EQAlloc(64); err != nil {
		log.Fatal(err)
	}
	if pt, err = ni.PTAlloc(0, eq, portals.PTAny); err != nil {
		log.Fatal(err)
	}
	if self, err = ni.PhysID(); err != nil {
		log.Fatal(err)
	}
	return ni, eq, pt, self, func() {
		pt.Free()
		eq.Free()
		ni.Fini()
		portals.Fini()
	}
}

// waitFor returns the next event of kind on eq, skipping others; a failed event
// or a queue error ends the program.
func waitFor(eq *portals.EQ, kind portals.EventKind) portals.Event {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ev, err := range eq.Events(ctx) {
		if err != nil || ev.NIFail != portals.NIOK {
			log.Fatal(ev.Type, ev.NIFail, err)
		}
		if ev.Type == kind {
			return ev
		}
	}
	log.Fatalf("no %v", kind)
	return portals.Event{}
}

// anyone is the MatchID that accepts every initiator.
var anyone = portals.ProcessID{NID: portals.NIDAny, PID: portals.PIDAny}

// ExampleFetchAtomicOf adds to a remote counter and returns its previous value.
// The datatype (Int64) comes from the type parameter.
func ExampleFetchAtomicOf() {
	ni, eq, pt, self, done := setup()
	defer done()

	counter := make([]byte, 8) // the target's int64, little-endian
	binary.LittleEndian.PutUint64(counter, 40)
	if _, err := pt.Append(portals.MESpec{Start: counter, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEOpGet, MatchID: anyone, MatchBits: 1}, portals.PriorityList, 0); err != nil {
		log.Fatal(err)
	}

	buf := make([]byte, 16) // operand in [0:8], previous value lands in [8:16]
	binary.LittleEndian.PutUint64(buf, 2)
	md, err := ni.MDBind(portals.MDSpec{Start: buf, EQ: eq})
	if err != nil {
		log.Fatal(err)
	}
	to := portals.Target{ID: self, PT: pt.Index(), Match: 1}
	if err := portals.FetchAtomicOf[int64](md.Span(0, 8), md.Span(8, 8), to, portals.OpSum, portals.OpOptions{}); err != nil {
		log.Fatal(err)
	}
	waitFor(eq, portals.EventReply) // buf[8:16] is written until EventReply
	fmt.Println("previous:", binary.LittleEndian.Uint64(buf[8:]), "now:", binary.LittleEndian.Uint64(counter))
	// Output: previous: 40 now: 42
}

// ExampleSwapOf swaps a remote value only if it equals the operand (compare and
// swap).
func ExampleSwapOf() {
	ni, eq, pt, self, done := setup()
	defer done()

	word := make([]byte, 4)
	binary.LittleEndian.PutUint32(word, 7)
	if _, err := pt.Append(portals.MESpec{Start: word, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEOpGet, MatchID: anyone, MatchBits: 1}, portals.PriorityList, 0); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 8) // new value in [0:4], previous value in [4:8]
	binary.LittleEndian.PutUint32(buf, 9)
	md, err := ni.MDBind(portals.MDSpec{Start: buf, EQ: eq})
	if err != nil {
		log.Fatal(err)
	}
	to := portals.Target{ID: self, PT: pt.Index(), Match: 1}
	for _, expect := range []uint32{5, 7} { // the first compare fails, the second succeeds
		if err := portals.SwapOf(md.Span(0, 4), md.Span(4, 4), to, portals.OpCSwap, expect, portals.OpOptions{}); err != nil {
			log.Fatal(err)
		}
		waitFor(eq, portals.EventReply)
		fmt.Println("expected", expect, "found", binary.LittleEndian.Uint32(buf[4:]), "now", binary.LittleEndian.Uint32(word))
	}
	// Output:
	// expected 5 found 7 now 7
	// expected 7 found 7 now 9
}

// ExamplePT_Append receives through a match list: each message lands in the first
// entry of the priority list whose match bits (outside the ignore bits) it
// carries, and a use-once entry unlinks itself after one message.
func ExamplePT_Append() {
	ni, eq, pt, self, done := setup()
	defer done()

	small, large := make([]byte, 8), make([]byte, 64)
	// Tag 0x10 exactly, once.
	if _, err := pt.Append(portals.MESpec{Start: small, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEUseOnce, MatchID: anyone, MatchBits: 0x10}, portals.PriorityList, 1); err != nil {
		log.Fatal(err)
	}
	// Any tag 0x1X (the low four bits ignored), as often as it fits (locally managed offset).
	if _, err := pt.Append(portals.MESpec{Start: large, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEManageLocal, MatchID: anyone, MatchBits: 0x10, IgnoreBits: 0x0f},
		portals.PriorityList, 2); err != nil {
		log.Fatal(err)
	}
	for i, tag := range []portals.MatchBits{0x10, 0x10, 0x13} {
		msg := fmt.Appendf(nil, "msg %d", i)
		md, err := ni.MDBind(portals.MDSpec{Start: msg})
		if err != nil {
			log.Fatal(err)
		}
		if err := md.All().Put(portals.Target{ID: self, PT: pt.Index(), Match: tag}, portals.OpOptions{}); err != nil {
			log.Fatal(err)
		}
		ev := waitFor(eq, portals.EventPut)
		fmt.Printf("tag %#x -> entry %d (%d bytes)\n", ev.MatchBits, ev.UserPtr, ev.MLength)
	}
	fmt.Printf("small %q, large %q\n", small[:5], large[:10])
	// Output:
	// tag 0x10 -> entry 1 (5 bytes)
	// tag 0x10 -> entry 2 (5 bytes)
	// tag 0x13 -> entry 2 (5 bytes)
	// small "msg 0", large "msg 1msg 2"
}

// ExampleCT_Wait counts completions instead of queuing events: the entry's counter
// counts the messages delivered into it, and Wait returns when it reaches a total.
func ExampleCT_Wait() {
	ni, _, pt, self, done := setup()
	defer done()

	ct, err := ni.CTAlloc()
	if err != nil {
		log.Fatal(err)
	}
	defer ct.Free()
	mem := make([]byte, 16)
	if _, err := pt.Append(portals.MESpec{Start: mem, CT: ct, UID: portals.UIDAny,
		Options:   portals.MEOpPut | portals.MEEventCTComm | portals.MEEventSuccessDisable,
		MatchID:   anyone,
		MatchBits: 1}, portals.PriorityList, 0); err != nil {
		log.Fatal(err)
	}
	md, err := ni.MDBind(portals.MDSpec{Start: []byte("abcdefgh")})
	if err != nil {
		log.Fatal(err)
	}
	for off := uint64(0); off < 16; off += 8 {
		if err := md.All().Put(portals.Target{ID: self, PT: pt.Index(), Match: 1, Offset: off}, portals.OpOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := ct.Wait(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d delivered, %d failed: %q\n", got.Success, got.Failure, mem)
	// Output: 2 delivered, 0 failed: "abcdefghabcdefgh"
}

// ExampleTrigger defers a put until a counter reaches a threshold: here the
// counter of the entry that receives the first put, so the second put is sent by
// the library when the first has arrived, with no call in between.
func ExampleTrigger() {
	ni, eq, pt, self, done := setup()
	defer done()

	ct, err := ni.CTAlloc()
	if err != nil {
		log.Fatal(err)
	}
	defer ct.Free()
	first, second := make([]byte, 5), make([]byte, 6)
	if _, err := pt.Append(portals.MESpec{Start: first, CT: ct, UID: portals.UIDAny,
		Options: portals.MEOpPut | portals.MEEventCTComm, MatchID: anyone, MatchBits: 1}, portals.PriorityList, 1); err != nil {
		log.Fatal(err)
	}
	if _, err := pt.Append(portals.MESpec{Start: second, UID: portals.UIDAny,
		Options: portals.MEOpPut, MatchID: anyone, MatchBits: 2}, portals.PriorityList, 2); err != nil {
		log.Fatal(err)
	}
	md, err := ni.MDBind(portals.MDSpec{Start: []byte("first second")})
	if err != nil {
		log.Fatal(err)
	}
	// Armed first: runs once ct counts one message.
	later := portals.OpOptions{Trigger: portals.Trigger{CT: ct, Threshold: 1}}
	if err := md.Span(6, 6).Put(portals.Target{ID: self, PT: pt.Index(), Match: 2}, later); err != nil {
		log.Fatal(err)
	}
	if err := md.Span(0, 5).Put(portals.Target{ID: self, PT: pt.Index(), Match: 1}, portals.OpOptions{}); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		ev := waitFor(eq, portals.EventPut)
		fmt.Println("put into entry", ev.UserPtr)
	}
	fmt.Printf("%q %q\n", first, second)
	// Output:
	// put into entry 1
	// put into entry 2
	// "first" "second"
}

// ExampleNI_SetMap addresses processes by rank on a logical NI. NIs are local:
// each process initializes its own and learns its physical id; the ids are
// exchanged out of band (by the program's own launcher, a file, a pipe) and every
// process gives the same list to SetMap, so rank i is list[i]. Here the job is
// this one process, rank 0.
func ExampleNI_SetMap() {
	if err := portals.Init(); err != nil {
		log.Fatal(err)
	}
	defer portals.Fini()
	phys, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer phys.Fini()
	self, err := phys.PhysID() // what this process would publish
	if err != nil {
		log.Fatal(err)
	}

	ni, err := portals.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NILogical, portals.PIDAny, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ni.Fini()
	if err := ni.SetMap([]portals.ProcessID{self}); err != nil { // the gathered ids, in rank order
		log.Fatal(err)
	}
	eq, err := ni.EQAlloc(16)
	if err != nil {
		log.Fatal(err)
	}
	pt, err := ni.PTAlloc(0, eq, portals.PTAny)
	if err != nil {
		log.Fatal(err)
	}
	mem := make([]byte, 8)
	if _, err := pt.Append(portals.MESpec{Start: mem, UID: portals.UIDAny, Options: portals.MEOpPut,
		MatchID: portals.ProcessID{Rank: portals.RankAny}, MatchBits: 3}, portals.PriorityList, 0); err != nil {
		log.Fatal(err)
	}
	md, err := ni.MDBind(portals.MDSpec{Start: []byte("by rank!")})
	if err != nil {
		log.Fatal(err)
	}
	if err := md.All().Put(portals.Target{ID: portals.ProcessID{Rank: 0}, PT: pt.Index(), Match: 3}, portals.OpOptions{}); err != nil {
		log.Fatal(err)
	}
	ev := waitFor(eq, portals.EventPut)
	fmt.Printf("%q from rank %d\n", mem, ev.Initiator.Rank)
	// Output: "by rank!" from rank 0
}
