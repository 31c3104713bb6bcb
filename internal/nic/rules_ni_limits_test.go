package nic

import (
	"context"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
)

// Rule 9: NIInit grants each desired limit clamped into the range the
// implementation supports (as the reference's chk_param does), never grants the
// ordering sizes below the specification's minimums (max_waw_ordered_size 64,
// max_war_ordered_size 8), and every limit is enforced with the reference's code.

func TestRulesNILimitsGrant(t *testing.T) {
	nis, _ := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	def := nis[0].Limits()
	if def.MaxWAWOrderedSize < 64 || def.MaxWAROrderedSize < 8 {
		t.Errorf("default ordering sizes WAW %d WAR %d, below 64 / 8", def.MaxWAWOrderedSize, def.MaxWAROrderedSize)
	}
	if def.MaxPTIndex < 63 {
		t.Errorf("default max_pt_index %d, below 63", def.MaxPTIndex)
	}
	if def.MaxFetchAtomicSize < 8 || def.MaxAtomicSize < 8 {
		t.Errorf("default atomic sizes %d / %d, below 8", def.MaxAtomicSize, def.MaxFetchAtomicSize)
	}

	small := Limits{MaxEntries: 4, MaxUnexpectedHeaders: 1, MaxMDs: 4, MaxEQs: 4, MaxCTs: 4, MaxPTIndex: 3,
		MaxIovecs: 4, MaxListSize: 4, MaxTriggeredOps: 2, MaxMsgSize: 4, MaxAtomicSize: 4,
		MaxFetchAtomicSize: 4, MaxWAWOrderedSize: 128, MaxWAROrderedSize: 16, MaxVolatileSize: 16}
	huge := Limits{MaxEntries: 1 << 40, MaxUnexpectedHeaders: 1 << 40, MaxMDs: 1 << 40, MaxEQs: 1 << 40,
		MaxCTs: 1 << 40, MaxPTIndex: 1 << 40, MaxIovecs: 1 << 40, MaxListSize: 1 << 40,
		MaxTriggeredOps: 1 << 40, MaxMsgSize: 1 << 62, MaxAtomicSize: 1 << 62, MaxFetchAtomicSize: 1 << 62,
		MaxWAWOrderedSize: 1 << 62, MaxWAROrderedSize: 1 << 62, MaxVolatileSize: 1 << 62}
	withOrder := func(l Limits, waw, war uint64) Limits {
		l.MaxWAWOrderedSize, l.MaxWAROrderedSize = waw, war
		return l
	}
	withFetch := func(l Limits, f uint64) Limits { l.MaxFetchAtomicSize = f; return l }
	for _, c := range []struct {
		name    string
		desired Limits
		want    Limits
	}{
		{"within range: as asked", small, small},
		{"above the maximum: the maximum", huge, def},
		{"zero fields: the defaults", Limits{}, def},
		{"ordering sizes below the minimums", Limits{MaxWAWOrderedSize: 1, MaxWAROrderedSize: 1}, withOrder(def, 64, 8)},
		{"ordering sizes just below the minimums", Limits{MaxWAWOrderedSize: 63, MaxWAROrderedSize: 7}, withOrder(def, 64, 8)},
		{"ordering sizes at the minimums", Limits{MaxWAWOrderedSize: 64, MaxWAROrderedSize: 8}, withOrder(def, 64, 8)},
		{"fetch atomic size below its minimum", Limits{MaxFetchAtomicSize: 1}, withFetch(def, 8)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.desired
			nis, _ := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, &d)
			for r, ni := range nis {
				if got := ni.Limits(); got != c.want {
					t.Errorf("rank %d: desired %+v\ngranted %+v\nwant    %+v", r, c.desired, got, c.want)
				}
			}
		})
	}
}

// A second NIInit of an existing NI ignores its desired limits and returns the
// actual ones.
func TestRulesNILimitsSecondInitKeepsActual(t *testing.T) {
	d := Limits{MaxEQs: 3}
	nis, procs := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, &d)
	again, err := procs[0].NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, &Limits{MaxEQs: 7})
	if err != nil || again != nis[0] || again.Limits().MaxEQs != 3 {
		t.Fatalf("second NIInit: %p (want %p) max_eqs %d, %v", again, nis[0], again.Limits().MaxEQs, err)
	}
	again.Fini()
}

// rulesLimitJob opens two matching physical NIs with desired limits and returns
// them with the target id of rank 1.
func rulesLimitJob(t *testing.T, d Limits) (*NI, *NI, ProcessID) {
	t.Helper()
	nis, _ := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, &d)
	id, err := nis[1].PhysID()
	if err != nil {
		t.Fatal(err)
	}
	return nis[0], nis[1], id
}

func TestRulesNILimitsEnforced(t *testing.T) {
	t.Run("max_eqs", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxEQs: 2})
		a, err1 := ni.EQAlloc(4)
		_, err2 := ni.EQAlloc(4)
		_, err3 := ni.EQAlloc(4)
		wantErrno(t, "EQAlloc 1", err1, OK)
		wantErrno(t, "EQAlloc 2", err2, OK)
		wantErrno(t, "EQAlloc 3", err3, NoSpace)
		wantErrno(t, "EQ.Free", a.Free(), OK)
		_, err := ni.EQAlloc(4)
		wantErrno(t, "EQAlloc after a free", err, OK)
	})
	t.Run("max_cts", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxCTs: 2})
		a, err1 := ni.CTAlloc()
		_, err2 := ni.CTAlloc()
		_, err3 := ni.CTAlloc()
		wantErrno(t, "CTAlloc 1", err1, OK)
		wantErrno(t, "CTAlloc 2", err2, OK)
		wantErrno(t, "CTAlloc 3", err3, NoSpace)
		wantErrno(t, "CT.Free", a.Free(), OK)
		_, err := ni.CTAlloc()
		wantErrno(t, "CTAlloc after a free", err, OK)
	})
	t.Run("max_mds", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxMDs: 2})
		buf := make([]byte, 8)
		a, err1 := ni.MDBind(MDSpec{Start: buf})
		_, err2 := ni.MDBind(MDSpec{Start: buf})
		_, err3 := ni.MDBind(MDSpec{Start: buf})
		wantErrno(t, "MDBind 1", err1, OK)
		wantErrno(t, "MDBind 2", err2, OK)
		wantErrno(t, "MDBind 3", err3, NoSpace)
		wantErrno(t, "MD.Release", a.Release(), OK)
		_, err := ni.MDBind(MDSpec{Start: buf})
		wantErrno(t, "MDBind after a release", err, OK)
	})
	t.Run("max_pt_index", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxPTIndex: 3})
		_, err := ni.PTAlloc(0, nil, 4)
		wantErrno(t, "PTAlloc(4)", err, ArgInvalid)
		for i := 0; i < 4; i++ {
			_, err := ni.PTAlloc(0, nil, PTAny)
			wantErrno(t, "PTAlloc(ANY)", err, OK)
		}
		_, err = ni.PTAlloc(0, nil, PTAny)
		wantErrno(t, "PTAlloc(ANY) on a full table", err, PTFull)
	})
	t.Run("max_iovecs", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxIovecs: 2})
		iov := [][]byte{make([]byte, 4), make([]byte, 4), make([]byte, 4)}
		_, err := ni.MDBind(MDSpec{Iovecs: iov[:2]})
		wantErrno(t, "MDBind with 2 iovecs", err, OK)
		_, err = ni.MDBind(MDSpec{Iovecs: iov})
		wantErrno(t, "MDBind with 3 iovecs", err, ArgInvalid)
		pt := mustPT(t, ni, 0, nil)
		_, err = ni.MEAppend(pt, MESpec{Iovecs: iov, UID: UIDAny, Options: MEOpPut}, PriorityList, 0)
		wantErrno(t, "MEAppend with 3 iovecs", err, ArgInvalid)
	})
	t.Run("max_list_size", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxListSize: 2})
		pt := mustPT(t, ni, 0, nil)
		for _, l := range []List{PriorityList, OverflowList} {
			for i := 0; i < 3; i++ {
				_, err := ni.MEAppend(pt, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut}, l, 0)
				want := OK
				if i == 2 {
					want = NoSpace // the reference's code (ptl_le.c, le_append_pt)
				}
				wantErrno(t, "MEAppend", err, want)
			}
		}
	})
	t.Run("max_entries", func(t *testing.T) {
		ni, _, _ := rulesLimitJob(t, Limits{MaxEntries: 3})
		pt1 := mustPT(t, ni, 0, nil)
		pt2 := mustPT(t, ni, 0, nil)
		for i, pt := range []PTIndex{pt1, pt2, pt1, pt2} {
			_, err := ni.MEAppend(pt, MESpec{Start: make([]byte, 8), UID: UIDAny, Options: MEOpPut}, PriorityList, 0)
			want := OK
			if i == 3 {
				want = NoSpace // the count is the NI's, across its portal table entries
			}
			wantErrno(t, "MEAppend", err, want)
		}
	})
	t.Run("max_msg_size", func(t *testing.T) {
		ni, _, target := rulesLimitJob(t, Limits{MaxMsgSize: 4})
		m := mustMD(t, ni, MDSpec{Start: make([]byte, 8)})
		ct := mustCT(t, ni)
		wantErrno(t, "Put of 5", Put(m, 0, 5, NoAckReq, target, 0, 0, 0, 0, 0), ArgInvalid)
		wantErrno(t, "Get of 5", Get(m, 0, 5, target, 0, 0, 0, 0), ArgInvalid)
		wantErrno(t, "TriggeredPut of 5", TriggeredPut(m, 0, 5, NoAckReq, target, 0, 0, 0, 0, 0, ct, 1), ArgInvalid)
		wantErrno(t, "TriggeredGet of 5", TriggeredGet(m, 0, 5, target, 0, 0, 0, 0, ct, 1), ArgInvalid)
	})
	t.Run("max_atomic_size", func(t *testing.T) {
		ni, _, target := rulesLimitJob(t, Limits{MaxAtomicSize: 4})
		a := mustMD(t, ni, MDSpec{Start: make([]byte, 8)})
		b := mustMD(t, ni, MDSpec{Start: make([]byte, 8)})
		wantErrno(t, "Atomic of 5", Atomic(a, 0, 5, NoAckReq, target, 0, 0, 0, 0, 0, eq.OpSum, eq.Uint8), ArgInvalid)
		wantErrno(t, "FetchAtomic of 5", FetchAtomic(a, 0, b, 0, 5, target, 0, 0, 0, 0, 0, eq.OpSum, eq.Uint8), ArgInvalid)
		wantErrno(t, "Swap of 5", Swap(a, 0, b, 0, 5, target, 0, 0, 0, 0, 0, nil, eq.OpSwap, eq.Uint8), ArgInvalid)
	})
	t.Run("max_volatile_size", func(t *testing.T) {
		ni, _, target := rulesLimitJob(t, Limits{MaxVolatileSize: 8})
		m := mustMD(t, ni, MDSpec{Start: make([]byte, 16), Options: MDVolatile})
		wantErrno(t, "volatile Put of 16", Put(m, 0, 16, NoAckReq, target, 0, 0, 0, 0, 0), ArgInvalid)
	})
	t.Run("max_triggered_ops", func(t *testing.T) {
		ni, _, target := rulesLimitJob(t, Limits{MaxTriggeredOps: 1})
		m := mustMD(t, ni, MDSpec{Start: make([]byte, 8)})
		ct := mustCT(t, ni)
		wantErrno(t, "TriggeredPut 1", TriggeredPut(m, 0, 1, NoAckReq, target, 0, 0, 0, 0, 0, ct, 10), OK)
		wantErrno(t, "TriggeredPut 2", TriggeredPut(m, 0, 1, NoAckReq, target, 0, 0, 0, 0, 0, ct, 10), NoSpace)
		ct.CancelTriggered()
	})
	t.Run("max_unexpected_headers", func(t *testing.T) {
		// Enforced at the target: without flow control a header that does not fit
		// is dropped (the reference's PTL_NI_DROPPED), the entry stays enabled.
		ini, tgt, target := rulesLimitJob(t, Limits{MaxUnexpectedHeaders: 1})
		pt, err := tgt.PTAlloc(0, nil, PTAny)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tgt.MEAppend(pt, MESpec{Start: make([]byte, 64), UID: UIDAny, Options: MEOpPut | MEManageLocal,
			MatchID: ProcessID{NID: NIDAny, PID: PIDAny}}, OverflowList, 0); err != nil {
			t.Fatal(err)
		}
		q := mustEQn(t, ini, 8)
		m := mustMD(t, ini, MDSpec{Start: make([]byte, 8), EQ: q, Options: MDEventSendDisable})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i, want := range []NIFail{eq.NIOK, eq.NIDropped} {
			if err := Put(m, 0, 8, AckReqFull, target, pt, 0, 0, 0, 0); err != nil {
				t.Fatal(err)
			}
			ev, err := q.Wait(ctx)
			if err != nil || ev.Type != eq.EventAck || ev.NIFail != want {
				t.Errorf("put %d: %v %v, %v; want an ACK with %v", i, ev.Type, ev.NIFail, err, want)
			}
		}
	})
}
