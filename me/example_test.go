package me_test

import (
	"fmt"

	"github.com/goportals/goportals/me"
)

// An MPI-style receive: a message that arrives before its receive is posted lands in the
// overflow list; posting the receive claims it.
func Example() {
	tb, err := me.NewTable(me.Config{Matching: true, MaxEntries: 16, MaxListSize: 16, MaxUnexpectedHeaders: 16})
	if err != nil {
		panic(err)
	}
	anySrc := me.ProcessID{NID: me.NIDAny, PID: me.PIDAny, Rank: me.RankAny}
	var events []me.Event

	// A catch-all eager buffer in the overflow list.
	_, events, _ = tb.Append(me.Entry{Length: 1 << 20, UID: me.UIDAny, Options: me.OpPut | me.ManageLocal,
		MatchID: anySrc, IgnoreBits: ^uint64(0), UserPtr: 1}, me.ListOverflow, events[:0])

	// A put with tag 42 arrives before its receive.
	h := me.Header{Op: me.OpKindPut, Initiator: me.ProcessID{NID: 3, PID: 7}, MatchBits: 42, Length: 100}
	res, events := tb.Match(&h, events[:0])
	fmt.Println(res.Outcome, res.List, res.LocalOffset, res.MLength, events[0].Kind)

	// The receive for tag 42 is posted: it claims the unexpected message.
	_, events, _ = tb.Append(me.Entry{Length: 4096, UID: me.UIDAny, Options: me.OpPut | me.UseOnce,
		MatchID: anySrc, MatchBits: 42, UserPtr: 2}, me.ListPriority, events[:0])
	for _, e := range events {
		fmt.Println(e.Kind, e.UserPtr, e.DataUserPtr, e.LocalOffset, e.MLength)
	}
	// Output:
	// matched PTL_OVERFLOW_LIST 0 100 PUT
	// PUT_OVERFLOW 2 1 0 100
	// AUTO_UNLINK 2 0 0 0
}
