package loopback

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// TestKeysNeverReissued registers and deregisters through one slot until its generation
// would wrap: no local key and no remote key repeats, the two keys of a region never coincide or cross-resolve, and
// the slot is then retired instead of reused.
func TestKeysNeverReissued(t *testing.T) {
	var tab keyTable
	seenL, seenR := make(map[uint32]bool), make(map[uint32]bool)
	var old []*mr
	for i := 0; i < 1<<16-1; i++ { // generations 1..65535
		m := &mr{}
		if err := tab.insert(m); err != nil {
			t.Fatal(err)
		}
		if m.slot != 0 {
			t.Fatalf("registration %d used slot %d, want the reused slot 0", i, m.slot)
		}
		if m.lkey == m.rkey || seenL[m.lkey] || seenR[m.rkey] {
			t.Fatalf("registration %d: keys %#x/%#x repeat or coincide", i, m.lkey, m.rkey)
		}
		seenL[m.lkey], seenR[m.rkey] = true, true
		if tab.byLKey(m.lkey) != m || tab.byRKey(m.rkey) != m || tab.byLKey(m.rkey) != nil || tab.byRKey(m.lkey) != nil {
			t.Fatalf("registration %d: keys do not resolve as they should", i)
		}
		for _, o := range old {
			if tab.byLKey(o.lkey) != nil || tab.byRKey(o.rkey) != nil {
				t.Fatalf("registration %d: a deregistered key resolves", i)
			}
		}
		tab.remove(m)
		if len(old) < 8 {
			old = append(old, m)
		}
	}
	if len(tab.free) != 0 {
		t.Fatalf("slot 0 should be retired after its generations ran out, free list %v", tab.free)
	}
	m := &mr{}
	if err := tab.insert(m); err != nil || m.slot != 1 {
		t.Fatalf("after retirement: slot %d, err %v; want slot 1", m.slot, err)
	}
}

// TestKeySpaceExhausted checks the typed error when every slot index is in use.
func TestKeySpaceExhausted(t *testing.T) {
	var tab keyTable
	for i := 0; i < maxSlots; i++ {
		if err := tab.insert(&mr{}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	err := tab.insert(&mr{})
	if !errors.Is(err, verbs.ErrNoResources) || !errors.Is(err, errKeysExhausted) {
		t.Fatalf("insert into a full table: %v", err)
	}
}
