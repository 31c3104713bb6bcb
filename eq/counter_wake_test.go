package eq

import "testing"

// pendingWake reports (and takes) w's pending wake-up.
func pendingWake(w *waiter) bool {
	select {
	case <-w.ch:
		return true
	default:
		return false
	}
}

// TestCounterWakesOnlyReachedWaiters: a change of a counter wakes only the
// waiters whose test it reached (or that a failure ends), not every waiter on
// every add: a wait for a window of N operations is woken once, not N times (each
// wake is a goroutine hand-off, which on a small host takes a core from the thread
// moving the data). Set, an outside add noticed, and Free keep their wakes.
func TestCounterWakesOnlyReachedWaiters(t *testing.T) {
	c := NewCounter()
	w5, w9 := getWaiter(), getWaiter()
	c.mu.Lock()
	c.addWaiterLocked(w5, 5)
	c.addWaiterLocked(w9, 9)
	c.mu.Unlock()
	for i := 0; i < 4; i++ {
		if err := c.Inc(CTEvent{Success: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if pendingWake(w5) || pendingWake(w9) {
		t.Fatal("adds below both tests woke a waiter")
	}
	c.Inc(CTEvent{Success: 1}) // 5
	if !pendingWake(w5) || pendingWake(w9) {
		t.Fatal("the add reaching 5 must wake the waiter for 5 only")
	}
	c.Set(CTEvent{Success: 7})
	if !pendingWake(w5) || pendingWake(w9) {
		t.Fatal("Set to 7 must wake the waiter for 5 (reached) only")
	}
	// An outside add (another process's, on the cell) is noticed.
	if c.cell.Load().Add(CTEvent{Success: 2}) {
		c.Notice()
	}
	if !pendingWake(w9) {
		t.Fatal("an outside add reaching 9, noticed, must wake the waiter for 9")
	}
	c.mu.Lock()
	c.removeWaiterLocked(w5)
	c.removeWaiterLocked(w9)
	c.addWaiterLocked(w9, 100)
	c.mu.Unlock()
	c.Inc(CTEvent{Failure: 1})
	if !pendingWake(w9) {
		t.Fatal("a failure must wake a waiter whatever its test")
	}
	c.Free()
	if !pendingWake(w9) {
		t.Fatal("Free must wake every waiter")
	}
}
