package me

import (
	"math/rand"
	"strconv"
	"testing"
)

// BenchmarkMatch measures one incoming header matched and consumed, with the list
// refilled: the matched use-once entry unlinks itself and is appended again, so each
// operation is one Match plus one Append. Targets follow a pseudo-random sequence, so
// the matching entry sits anywhere in list order.
//
//	exact-N:     N entries with distinct match bits and no ignore bits (hash bins)
//	wildcard-N:  N entries with ignore bits (the ordered list)
func BenchmarkMatch(b *testing.B) {
	for _, c := range []struct {
		n      int
		ignore uint64
		name   string
	}{
		{1, 0, "exact"}, {100, 0, "exact"}, {10000, 0, "exact"}, {100, 0xff, "wildcard"},
	} {
		b.Run(c.name+"-"+strconv.Itoa(c.n), func(b *testing.B) { benchMatch(b, c.n, c.ignore) })
	}
}

func benchMatch(b *testing.B, n int, ignore uint64) {
	tb, err := NewTable(Config{Matching: true, MaxEntries: n + 1, MaxListSize: n + 1})
	if err != nil {
		b.Fatal(err)
	}
	// entry builds the entry for target k (computed, not loaded from a table, so that the
	// benchmark adds no cache miss of its own).
	entry := func(k int) Entry {
		return Entry{Length: 4096, UID: UIDAny, Options: OpPut | OpGet | UseOnce, MatchID: anySrc,
			MatchBits: uint64(k) << 8, IgnoreBits: ignore, UserPtr: uint64(k)}
	}
	for k := 0; k < n; k++ {
		if _, _, err := tb.Append(entry(k), ListPriority, nil); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewSource(1))
	const seqLen = 1 << 12
	hdrs := make([]Header, seqLen)
	targets := make([]int, seqLen)
	for i := range hdrs {
		k := r.Intn(n)
		targets[i] = k
		hdrs[i] = Header{Op: OpKindPut, Initiator: ProcessID{NID: 1, PID: 1, Rank: 1}, UID: 1,
			MatchBits: uint64(k)<<8 | uint64(r.Intn(256))&ignore, Length: 64}
	}
	out := make([]Event, 0, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i & (seqLen - 1)
		var res MatchResult
		res, out = tb.Match(&hdrs[j], out[:0])
		if res.Outcome != OutcomeMatched || res.UserPtr != uint64(targets[j]) {
			b.Fatalf("match %d: %+v", i, res)
		}
		if _, out, err = tb.Append(entry(int(res.UserPtr)), ListPriority, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMatchPersistent measures matching alone: persistent entries, nothing unlinks.
func BenchmarkMatchPersistent(b *testing.B) {
	for _, n := range []int{1, 10000} {
		b.Run("exact-"+strconv.Itoa(n), func(b *testing.B) {
			tb, err := NewTable(Config{Matching: true, MaxEntries: n, MaxListSize: n})
			if err != nil {
				b.Fatal(err)
			}
			for k := 0; k < n; k++ {
				if _, _, err := tb.Append(Entry{Length: 4096, UID: UIDAny, Options: OpPut, MatchID: anySrc, MatchBits: uint64(k)}, ListPriority, nil); err != nil {
					b.Fatal(err)
				}
			}
			r := rand.New(rand.NewSource(1))
			hdrs := make([]Header, 1<<12)
			for i := range hdrs {
				hdrs[i] = Header{Op: OpKindPut, UID: 1, MatchBits: uint64(r.Intn(n)), Length: 64}
			}
			out := make([]Event, 0, 8)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var res MatchResult
				res, out = tb.Match(&hdrs[i&(1<<12-1)], out[:0])
				if res.Outcome != OutcomeMatched {
					b.Fatal(res.Outcome)
				}
			}
		})
	}
}
