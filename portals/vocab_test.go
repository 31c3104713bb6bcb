package portals_test

import (
	"testing"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/me"
	"github.com/goportals/goportals/portals"
)

// TestOneVocabulary checks that each concept is one type across portals, eq and me:
// these comparisons compile only when the types are the same.
func TestOneVocabulary(t *testing.T) {
	var ev portals.Event
	target := portals.ProcessID{NID: 1, PID: 2}
	ev.Initiator = eq.ProcessID{NID: 1, PID: 2}
	if ev.Initiator != target || ev.List != portals.PriorityList || portals.OverflowList != me.ListOverflow {
		t.Fatal("values of one concept differ across packages")
	}
	var ids = []me.ProcessID{target}
	if ids[0].NID != portals.NID(1) || portals.PIDAny != me.PIDAny || portals.NIDAny != eq.NIDAny {
		t.Fatal("identity values differ")
	}
	if portals.EventSend != eq.EventSend || portals.OpSum != eq.OpSum || portals.Uint64 != eq.Uint64 ||
		portals.NIDropped != eq.NIDropped || portals.SearchDelete != me.SearchDelete {
		t.Fatal("constants differ")
	}
	var l portals.List = me.ListPriority
	var u portals.UID = me.UIDAny
	_, _ = l, u
}
