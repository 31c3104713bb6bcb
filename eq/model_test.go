package eq

import (
	"errors"
	"slices"
	"sort"
	"testing"
)

// FuzzTriggerModel drives random registrations, increments and sets through a Counter
// and through a plain model (scan every pending trigger after each update, fire the
// reached ones sorted by threshold then registration) and requires the same firing
// sequence.
func FuzzTriggerModel(f *testing.F) {
	f.Add([]byte{0, 5, 0, 3, 1, 4, 2, 9})
	f.Add([]byte{2, 7, 0, 1, 0, 2, 0, 3, 2, 0, 1, 8})
	f.Add([]byte{0, 0, 0, 0, 1, 0, 3, 0, 0, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		c := NewCounter()
		r := &recorder{}
		type pend struct {
			th  uint64
			seq int
		}
		var model []pend
		var want []int
		var val CTEvent
		seq := 0
		fireModel := func() {
			tot := val.total()
			sort.SliceStable(model, func(i, j int) bool {
				if model[i].th != model[j].th {
					return model[i].th < model[j].th
				}
				return model[i].seq < model[j].seq
			})
			keep := model[:0]
			for _, p := range model {
				if p.th <= tot {
					want = append(want, p.seq)
				} else {
					keep = append(keep, p)
				}
			}
			model = keep
		}
		for i := 0; i+1 < len(ops); i += 2 {
			arg := uint64(ops[i+1] % 16)
			switch ops[i] % 5 {
			case 0: // add
				seq++
				if err := c.AddTrigger(arg, recTrigger{r, seq}); err != nil {
					t.Fatal(err)
				}
				model = append(model, pend{arg, seq})
			case 1: // inc success
				must(t, c.Inc(CTEvent{Success: arg}))
				val.Success += arg
			case 2: // inc failure
				must(t, c.Inc(CTEvent{Failure: arg}))
				val.Failure += arg
			case 3: // set
				v := CTEvent{Success: arg / 2, Failure: arg % 3}
				must(t, c.Set(v))
				val = v
			case 4: // cancel
				n, err := c.CancelTriggered()
				if err != nil || n != len(model) {
					t.Fatalf("CancelTriggered = %d, %v; model has %d", n, err, len(model))
				}
				model = nil
			}
			fireModel()
			if got := r.firedSnapshot(); !slices.Equal(got, want) {
				t.Fatalf("op %d: fired %v, model %v", i/2, got, want)
			}
			if c.PendingTriggers() != len(model) {
				t.Fatalf("pending %d, model %d", c.PendingTriggers(), len(model))
			}
		}
	})
}

// FuzzQueueModel drives random posts and gets through a Queue and through a slice model
// that drops its oldest entry when full, and requires the same events and drop reports.
func FuzzQueueModel(f *testing.F) {
	f.Add(uint8(3), uint8(0), []byte{0, 0, 0, 0, 1, 1, 1, 1})
	f.Add(uint8(1), uint8(1), []byte{0, 0, 0, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, size, reserve uint8, ops []byte) {
		sz, rs := int(size%8)+1, int(reserve%4)
		q := mustQueue(t, sz, rs)
		var model []uint64
		gap := false
		var next uint64
		for _, op := range ops {
			if op%2 == 0 {
				if err := q.Post(ev(next)); err != nil {
					t.Fatal(err)
				}
				if len(model) == sz+rs {
					model = model[1:]
					gap = true
				}
				model = append(model, next)
				next++
			} else {
				e, err := q.Get()
				if len(model) == 0 {
					if !errors.Is(err, ErrEQEmpty) {
						t.Fatalf("Get on empty = %v", err)
					}
					continue
				}
				if e.MatchBits != model[0] || errors.Is(err, ErrEQDropped) != gap || (err != nil && !errors.Is(err, ErrEQDropped)) {
					t.Fatalf("Get = %d, %v; model %d gap %v", e.MatchBits, err, model[0], gap)
				}
				model = model[1:]
				gap = false
			}
			avail := sz - len(model)
			if avail < 0 {
				avail = 0
			}
			if q.Len() != len(model) || q.Avail() != avail {
				t.Fatalf("Len %d Avail %d; model %d %d", q.Len(), q.Avail(), len(model), avail)
			}
		}
	})
}
