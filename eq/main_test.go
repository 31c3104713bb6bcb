package eq

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind (a waiter that never
// returned, a producer that never stopped).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
