package ibv

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConformanceOnModel builds this package with the ibvmock tag, which links the
// software model of libibverbs (mock_ibverbs.c) instead of rdma-core, and runs the
// conformance suite there: on machines without an HCA it is what exercises the
// provider's queue-pair, completion and close-drain code, and the protocol engine
// over it (TestEngineOverIBV). The child runs with the
// race detector when this test does.
func TestConformanceOnModel(t *testing.T) {
	if mockBuild {
		t.Skip("this is the model build itself")
	}
	if err := Linked(); err != nil {
		t.Skipf("the provider is not built here: %v", err)
	}
	if testing.Short() {
		t.Skip("-short: building the package again with the ibvmock tag takes a while")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the model variant with: %v", err)
	}
	args := []string{"test", "-count=1", "-tags", "ibvmock", "-run", "^(TestConformance|TestEngineOverIBV)$", "-v"}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(gobin, append(args, ".")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance on the libibverbs model: %v\n%s", err, out)
	}
	passed := strings.Count(string(out), "--- PASS")
	if strings.Contains(string(out), "--- SKIP") || passed < 50 || !strings.Contains(string(out), "--- PASS: TestEngineOverIBV") {
		t.Fatalf("the model run skipped tests or ran too few (%d passed):\n%s", passed, out)
	}
	t.Logf("conformance on the libibverbs model: %d tests and subtests passed", passed)
}
