package me

import (
	"errors"
	"fmt"
	"testing"
)

// fuzzBytes hands out the fuzz input one byte at a time, then zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() byte {
	if f.i >= len(f.b) {
		f.i++
		return 0
	}
	c := f.b[f.i]
	f.i++
	return c
}

func (f *fuzzBytes) done() bool { return f.i >= len(f.b) }

func (f *fuzzBytes) config() Config {
	b := f.next()
	cfg := Config{
		Matching:             b%4 != 0,
		Addressing:           Addressing(b >> 2 & 1),
		MaxEntries:           1 + int(f.next()%24),
		MaxListSize:          1 + int(f.next()%16),
		MaxUnexpectedHeaders: int(f.next() % 8),
	}
	if c := f.next(); c%3 != 0 {
		cfg.MaxMsgSize = uint64(c % 16)
	}
	if c := f.next(); c%3 != 0 {
		cfg.MaxAtomicSize = uint64(c % 8)
	}
	return cfg
}

func (f *fuzzBytes) entry(cfg Config, id uint64) Entry {
	e := Entry{
		MatchBits: uint64(f.next() % 4),
		Length:    uint64(f.next() % 24),
		MinFree:   uint64(f.next() % 8),
		UserPtr:   id,
	}
	switch f.next() % 6 {
	case 3:
		e.IgnoreBits = 1
	case 4:
		e.IgnoreBits = 2
	case 5:
		e.IgnoreBits = ^uint64(0)
	}
	ids := f.next()
	e.MatchID = ProcessID{NID: []NID{0, 1, NIDAny}[ids%3], PID: []PID{0, 1, PIDAny}[ids/3%3], Rank: []Rank{0, 1, RankAny}[ids/9%3]}
	e.UID = []UID{UIDAny, UIDAny, 1, 2}[f.next()%4]
	o := Options(uint32(f.next()) | uint32(f.next())<<8 | uint32(f.next())<<16)
	o &= allOptions
	if f.next()%4 != 0 {
		o |= OpPut | OpGet
	}
	if !cfg.Matching && f.next()%8 != 0 {
		o &^= ManageLocal | NoTruncate | MayAlign
	}
	if f.next()%32 == 0 {
		o |= 1 << 27
	}
	e.Options = o
	return e
}

func (f *fuzzBytes) header(n uint64) Header {
	v := f.next() % 16
	op := Op(1 + v%5)
	if v == 15 {
		op = Op(6 * (f.next() % 2))
	}
	src := f.next()
	h := Header{
		Op:           op,
		Initiator:    ProcessID{NID: NID(src % 3), PID: PID(src / 3 % 3), Rank: Rank(src / 9 % 3)},
		UID:          UID(1 + f.next()%2),
		MatchBits:    uint64(f.next() % 4),
		RemoteOffset: uint64(f.next() % 20),
		Length:       uint64(f.next() % 20),
		HdrData:      n * 7,
		Cookie:       n,
		AtomicOp:     uint8(n),
	}
	if f.next()%16 == 0 {
		h.MatchBits = uint64(n) << 40
	}
	return h
}

// equivalence runs one decoded operation sequence through Table and refModel.
func equivalence(data []byte) error {
	f := &fuzzBytes{b: data}
	cfg := f.config()
	tb, err := NewTable(cfg)
	if err != nil {
		return fmt.Errorf("NewTable(%+v): %v", cfg, err)
	}
	tb.sweepFloor = int(f.next() % 4) // exercise the sweep of emptied hash bins
	ref := newRefModel(cfg)
	idOf := map[Handle]uint64{}
	handleOf := map[uint64]Handle{}
	var ids []uint64
	var nextID uint64 = 1
	var out []Event
	norm := func(evs []Event) ([]Event, error) {
		for k := range evs {
			for _, hp := range []*Handle{&evs[k].Handle, &evs[k].DataHandle} {
				if *hp == 0 {
					continue
				}
				id, ok := idOf[*hp]
				if !ok {
					return nil, fmt.Errorf("event %d names unknown handle %#x", k, uint64(*hp))
				}
				*hp = Handle(id)
			}
		}
		return evs, nil
	}
	sameErr := func(a, b error) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return errors.Is(a, b)
	}
	for step := 0; step < 400 && !f.done(); step++ {
		var what string
		var got, want []Event
		switch op := f.next() % 8; op {
		case 0, 1:
			id := nextID
			nextID++
			e := f.entry(cfg, id)
			l := List(f.next() % 7 / 3)
			what = fmt.Sprintf("append %+v to %v", e, l)
			h, evs, err1 := tb.Append(e, l, out[:0])
			evRef, err2 := ref.append(id, e, l)
			if !sameErr(err1, err2) {
				return fmt.Errorf("step %d %s: err %v, model %v", step, what, err1, err2)
			}
			if err1 == nil {
				idOf[h] = id
				handleOf[id] = h
				ids = append(ids, id)
			}
			var nerr error
			if got, nerr = norm(evs); nerr != nil {
				return fmt.Errorf("step %d %s: %v", step, what, nerr)
			}
			want = evRef
		case 2, 3, 4, 7:
			hd := f.header(uint64(step))
			what = fmt.Sprintf("match %+v", hd)
			res, evs := tb.Match(&hd, out[:0])
			resRef, evRef := ref.match(hd)
			if res.Handle != 0 {
				res.Handle = Handle(idOf[res.Handle])
			}
			res.Unexpected = 0 // the table's own slot name; the model has none
			if res != resRef {
				return fmt.Errorf("step %d %s:\n got %+v\nwant %+v", step, what, res, resRef)
			}
			var nerr error
			if got, nerr = norm(evs); nerr != nil {
				return fmt.Errorf("step %d %s: %v", step, what, nerr)
			}
			want = evRef
		case 5:
			k := int(f.next()) % (len(ids) + 1)
			var id uint64 = 1 << 50
			h := Handle(0x123456789)
			if k < len(ids) {
				id = ids[k]
				h = handleOf[id]
			}
			what = fmt.Sprintf("unlink id %d", id)
			err1, err2 := tb.Unlink(h), ref.unlink(id)
			if !sameErr(err1, err2) {
				return fmt.Errorf("step %d %s: err %v, model %v", step, what, err1, err2)
			}
		case 6:
			e := f.entry(cfg, 1<<40+uint64(step))
			sop := SearchOp(f.next() % 5 / 2)
			what = fmt.Sprintf("search %v %+v", sop, e)
			evs, err1 := tb.Search(e, sop, out[:0])
			evRef, err2 := ref.search(e, sop)
			if !sameErr(err1, err2) {
				return fmt.Errorf("step %d %s: err %v, model %v", step, what, err1, err2)
			}
			var nerr error
			if got, nerr = norm(evs); nerr != nil {
				return fmt.Errorf("step %d %s: %v", step, what, nerr)
			}
			want = evRef
		}
		if len(got) != len(want) {
			return fmt.Errorf("step %d %s: %d events, model %d:\n got %+v\nwant %+v", step, what, len(got), len(want), got, want)
		}
		for k := range got {
			if got[k] != want[k] {
				return fmt.Errorf("step %d %s: event %d\n got %+v\nwant %+v", step, what, k, got[k], want[k])
			}
		}
		if err := sameState(tb, ref, handleOf); err != nil {
			return fmt.Errorf("step %d after %s: %v", step, what, err)
		}
	}
	return nil
}

// sameState compares the observable state of the table and the model.
func sameState(tb *Table, ref *refModel, handleOf map[uint64]Handle) error {
	for _, l := range []List{ListPriority, ListOverflow} {
		if tb.Len(l) != len(ref.lists[l]) {
			return fmt.Errorf("%v list: %d entries, model %d", l, tb.Len(l), len(ref.lists[l]))
		}
	}
	if tb.Entries() != len(ref.byID) {
		return fmt.Errorf("%d entries held, model %d", tb.Entries(), len(ref.byID))
	}
	if tb.UnexpectedLen() != len(ref.ux) {
		return fmt.Errorf("%d unexpected headers, model %d", tb.UnexpectedLen(), len(ref.ux))
	}
	ux := tb.Unexpected(nil)
	for k, r := range ref.ux {
		u := ux[k]
		if u.Header != r.hdr || u.DataUserPtr != r.data.id || u.LocalOffset != r.offset || u.MLength != r.mlength {
			return fmt.Errorf("unexpected header %d: %+v, model %+v", k, u, *r)
		}
	}
	for id, e := range ref.byID {
		st, err := tb.State(handleOf[id])
		if err != nil {
			return fmt.Errorf("entry %d: %v", id, err)
		}
		if st.Linked != e.linked || st.LocalOffset != e.offset || st.PendingHeaders != e.pending || st.List != e.list {
			return fmt.Errorf("entry %d: %+v, model %+v", id, st, *e)
		}
	}
	return nil
}

func FuzzMatchEquivalence(f *testing.F) {
	f.Add([]byte{1, 20, 10, 4, 1, 1})
	f.Add([]byte{0, 20, 10, 4, 0, 0, 0, 1, 2, 3, 0, 0, 1, 0, 0, 0, 1, 3, 2, 2, 2, 0, 1, 2, 3, 4, 5})
	f.Add([]byte("\x01\x17\x0f\x07\x00\x00" + "\x00\x01\x10\x00\x00\x00\x00\x00\x00\x01\x01\x03" +
		"\x03\x00\x02\x01\x01\x05\x05" + "\x02\x00\x00\x01\x01\x05\x05" + "\x00\x01\x10\x00\x00\x00\x00\x00\x00\x01\x01\x00"))
	f.Add([]byte("\x05\x30\x20\x05\x02\x02" + "\x01\x03\x08\x02\x04\x0d\x00\xff\xff\x03\x01\x01\x04" +
		"\x02\x01\x02\x01\x03\x03\x09\x07\x02\x02\x02\x03\x03\x05\x04" + "\x06\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := equivalence(data); err != nil {
			t.Fatal(err)
		}
	})
}
