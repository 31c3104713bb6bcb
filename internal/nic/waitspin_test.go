package nic

import (
	"testing"
	"time"
)

// setWaitSpinTime sets how long a waiting caller keeps polling, for one test.
func setWaitSpinTime(t *testing.T, d time.Duration) {
	old := waitSpinTime
	waitSpinTime = d
	t.Cleanup(func() { waitSpinTime = old })
}
