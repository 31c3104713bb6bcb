package eq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goportals/goportals/eq"
)

// The engine posts events; the application gets them and learns about overflow.
func ExampleQueue() {
	q, err := eq.NewQueue(2, 0)
	if err != nil {
		panic(err)
	}
	for i := uint64(1); i <= 3; i++ { // one more than fits: the oldest is overwritten
		_ = q.Post(&eq.Event{Type: eq.EventPut, MatchBits: i, MLength: 8})
	}
	for {
		ev, err := q.Get()
		if errors.Is(err, eq.ErrEQEmpty) {
			break
		}
		fmt.Println(ev.Type, ev.MatchBits, errors.Is(err, eq.ErrEQDropped))
	}
	// Output:
	// PTL_EVENT_PUT 2 true
	// PTL_EVENT_PUT 3 false
}

// Poll waits on several queues and reports which one delivered.
func ExamplePoll() {
	a, _ := eq.NewQueue(4, 0)
	b, _ := eq.NewQueue(4, 0)
	_ = b.Post(&eq.Event{Type: eq.EventAck, NIFail: eq.NIOK})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ev, which, err := eq.Poll(ctx, []*eq.Queue{a, b})
	fmt.Println(ev.Type, which, err)
	// Output: PTL_EVENT_ACK 1 <nil>
}

// A triggered operation fires when success+failure reaches its threshold; a
// triggered CT increment is a trigger that increments another counter.
func ExampleCounter_AddTrigger() {
	ct, done := eq.NewCounter(), eq.NewCounter()
	_ = ct.AddTrigger(2, eq.TriggerFunc(func() { fmt.Println("put fired") }))
	_ = ct.AddTrigger(3, eq.TriggerFunc(func() { _ = done.Inc(eq.CTEvent{Success: 1}) }))
	_ = ct.Inc(eq.CTEvent{Success: 1})
	_ = ct.Inc(eq.CTEvent{Failure: 2}) // reaches 3: both fire, in threshold order
	v, err := done.Wait(context.Background(), 1)
	fmt.Println(v.Success, err)
	// Output:
	// put fired
	// 1 <nil>
}
