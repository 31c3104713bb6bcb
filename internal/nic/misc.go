package nic

import "fmt"

// StartBundle opens a bundle of operations (PtlStartBundle): a hint that the
// operations until EndBundle may be sent together. goportals sends each at once;
// the calls are counted and checked.
func (ni *NI) StartBundle() error {
	if err := ni.check("PtlStartBundle"); err != nil {
		return err
	}
	ni.mu.Lock()
	ni.bundle++
	ni.mu.Unlock()
	return nil
}

// EndBundle closes a bundle (PtlEndBundle).
func (ni *NI) EndBundle() error {
	if err := ni.check("PtlEndBundle"); err != nil {
		return err
	}
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if ni.bundle == 0 {
		return opErr("PtlEndBundle", ArgInvalid, fmt.Errorf("no bundle open"))
	}
	ni.bundle--
	return nil
}

// AtomicSync makes the results of atomics applied by this process's NIs visible
// to its own loads (PtlAtomicSync). The engine applies atomics under each NI's
// lock; taking every lock orders those writes before the caller's next reads.
func AtomicSync() error {
	p, err := current("PtlAtomicSync")
	if err != nil {
		return err
	}
	return p.AtomicSync()
}

// AtomicSync is the package-level AtomicSync for one process.
func (p *Process) AtomicSync() error {
	p.mu.Lock()
	nis := p.nis
	p.mu.Unlock()
	for _, ni := range nis {
		if ni != nil {
			ni.mu.Lock()
			//lint:ignore SA2001 the empty critical section is the barrier
			ni.mu.Unlock()
		}
	}
	return nil
}

// HandleIsEqual reports whether two handles name the same object
// (PtlHandleIsEqual). Handles are pointers (*NI, *MD, *ME, *EQ, *CT); nil handles
// are equal to each other.
func HandleIsEqual(a, b any) bool { return a == b }

// NIHandle returns the network interface a handle belongs to (PtlNIHandle): h is
// an *NI, *MD, *ME (or *LE), *EQ or *CT.
func NIHandle(h any) (*NI, error) {
	const op = "PtlNIHandle"
	var ni *NI
	switch v := h.(type) {
	case *NI:
		ni = v
	case *MD:
		ni = mdNI(v)
	case *ME:
		if v != nil {
			ni = v.ni
		}
	case *EQ:
		if v != nil {
			ni = v.ni
		}
	case *CT:
		if v != nil {
			ni = v.ni
		}
	default:
		return nil, opErr(op, ArgInvalid, fmt.Errorf("%T is not a handle", h))
	}
	if err := ni.check(op); err != nil {
		return nil, err
	}
	return ni, nil
}
