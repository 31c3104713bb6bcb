package nic

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

func waitEvent(t testing.TB, q *EQ) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ev, err := q.Wait(ctx)
	if err != nil {
		t.Fatalf("waiting for an event: %v", err)
	}
	return ev
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i)*7 + seed
	}
}

// target sets up rank 1 of nis with a persistent ME of size bytes on pt 4.
func target(t *testing.T, ni *NI, size int) ([]byte, *EQ, *CT) {
	t.Helper()
	q, err := ni.EQAlloc(64)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ni.PTAlloc(0, q, 4); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, size)
	if _, err := ni.MEAppend(4, MESpec{Start: buf, CT: ct, UID: UIDAny, Options: MEOpPut | MEOpGet | MEEventCTComm,
		MatchID: ProcessID{NID: NIDAny, PID: PIDAny}, MatchBits: 0x42}, PriorityList, 7); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, q); ev.Type != eq.EventLink {
		t.Fatalf("first event %v, want LINK", ev.Type)
	}
	return buf, q, ct
}

func TestPutGetSizes(t *testing.T) {
	for _, size := range []int{8, eagerMax, eagerMax + 1, 64 << 10, 1 << 20} {
		t.Run(byteSize(size), func(t *testing.T) {
			nis := newNIs(t, 2, NIMatching|NIPhysical)
			init, tgt := nis[0], nis[1]
			tbuf, tq, tct := target(t, tgt, size)
			iq := mustEQn(t, init, 64)
			src := make([]byte, size)
			fill(src, 3)
			m, err := init.MDBind(MDSpec{Start: src, EQ: iq})
			if err != nil {
				t.Fatal(err)
			}
			dst := mustPhysID(t, tgt)
			if err := Put(m, 0, uint64(size), AckReqFull, dst, 4, 0x42, 0, 99, 0xabc); err != nil {
				t.Fatal(err)
			}
			ev := waitEvent(t, tq)
			if ev.Type != eq.EventPut || ev.MLength != uint64(size) || ev.HdrData != 0xabc || ev.UserPtr != 7 || ev.NIFail != eq.NIOK {
				t.Fatalf("target event %+v", ev)
			}
			if !bytes.Equal(tbuf, src) {
				t.Fatal("put data differs")
			}
			if v, _ := tct.Get(); v.Success != 1 {
				t.Fatalf("target counter %+v", v)
			}
			got := map[eq.EventKind]Event{}
			for len(got) < 2 {
				ev := waitEvent(t, iq)
				got[ev.Type] = ev
			}
			if a := got[eq.EventAck]; a.MLength != uint64(size) || a.UserPtr != 99 || a.NIFail != eq.NIOK {
				t.Fatalf("ack %+v", a)
			}
			// Get it back into a cleared descriptor.
			back := make([]byte, size)
			gm := mustMD(t, init, MDSpec{Start: back, EQ: iq})
			if err := Get(gm, 0, uint64(size), dst, 4, 0x42, 0, 5); err != nil {
				t.Fatal(err)
			}
			if ev := waitEvent(t, iq); ev.Type != eq.EventReply || ev.MLength != uint64(size) || ev.NIFail != eq.NIOK {
				t.Fatalf("reply %+v", ev)
			}
			if !bytes.Equal(back, src) {
				t.Fatal("get data differs")
			}
			if ev := waitEvent(t, tq); ev.Type != eq.EventGet {
				t.Fatalf("target get event %+v", ev)
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%1024 == 0:
		return itoa(n>>10) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
