package verbstest

import (
	"encoding/binary"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

func skipNoAtomics(t *testing.T, env Env, c verbs.Context) {
	if !c.Attr().Atomics {
		t.Skipf("provider %s reports no atomics (DeviceAttr.Atomics is false)", env.Name)
	}
}

func testAtomics(t *testing.T, env Env) {
	p := NewPair(t, env)
	skipNoAtomics(t, env, p.A.Ctx)
	ne := binary.NativeEndian
	target := p.B.Reg(t, 64, rw|verbs.AccessRemoteAtomic, 0)
	ne.PutUint64(target.Mem[8:], 40)
	ne.PutUint64(target.Mem[16:], 0xaaaa)
	result := p.A.Reg(t, 64, rw, 0)
	rk := target.MR.RKey()
	p.A.PostSend(t,
		verbs.SendWR{ID: 1, Opcode: verbs.OpAtomicFetchAdd, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{result.SGE(0, 8)}, RemoteAddr: target.Addr(8), RKey: rk, CompareAdd: 2},
		verbs.SendWR{ID: 2, Opcode: verbs.OpAtomicCmpSwap, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{result.SGE(8, 8)}, RemoteAddr: target.Addr(16), RKey: rk, CompareAdd: 0xaaaa, Swap: 0xbbbb},
		verbs.SendWR{ID: 3, Opcode: verbs.OpAtomicCmpSwap, Flags: verbs.SendSignaled,
			SG: []verbs.SGE{result.SGE(16, 8)}, RemoteAddr: target.Addr(16), RKey: rk, CompareAdd: 0xaaaa, Swap: 0xcccc})
	wcs := p.A.Wait(t, 3)
	Expect(t, wcs[0], 1, verbs.StatusSuccess, verbs.WCFetchAdd)
	Expect(t, wcs[1], 2, verbs.StatusSuccess, verbs.WCCompSwap)
	Expect(t, wcs[2], 3, verbs.StatusSuccess, verbs.WCCompSwap)
	checks := []struct {
		what      string
		got, want uint64
	}{
		{"fetch-add result", ne.Uint64(result.Mem[0:]), 40},
		{"word after fetch-add", ne.Uint64(target.Mem[8:]), 42},
		{"successful compare-swap result", ne.Uint64(result.Mem[8:]), 0xaaaa},
		{"failed compare-swap result", ne.Uint64(result.Mem[16:]), 0xbbbb},
		{"word after compare-swaps", ne.Uint64(target.Mem[16:]), 0xbbbb},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.what, c.got, c.want)
		}
	}
	if ne.Uint64(target.Mem[0:]) != 0 || ne.Uint64(target.Mem[24:]) != 0 {
		t.Errorf("atomics touched neighbouring words: % x", target.Mem[:32])
	}

	// Without the remote-atomic right the operation fails and the word stays.
	plain := p.B.Reg(t, 8, rw|verbs.AccessRemoteWrite, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 4, Opcode: verbs.OpAtomicFetchAdd,
		SG: []verbs.SGE{result.SGE(24, 8)}, RemoteAddr: plain.Addr(0), RKey: plain.MR.RKey(), CompareAdd: 1})
	Expect(t, p.A.Wait(t, 1)[0], 4, verbs.StatusRemoteAccessError, verbs.WCFetchAdd)
	sameBytes(t, "word without remote-atomic right", plain.Mem, make([]byte, 8))
}

func testAtomicMisaligned(t *testing.T, env Env) {
	p := NewPair(t, env)
	skipNoAtomics(t, env, p.A.Ctx)
	target := p.B.Reg(t, 64, rw|verbs.AccessRemoteAtomic, 0)
	result := p.A.Reg(t, 8, rw, 0)
	p.A.PostSend(t, verbs.SendWR{ID: 5, Opcode: verbs.OpAtomicFetchAdd,
		SG: []verbs.SGE{result.SGE(0, 8)}, RemoteAddr: target.Addr(4), RKey: target.MR.RKey(), CompareAdd: 1})
	Expect(t, p.A.Wait(t, 1)[0], 5, verbs.StatusRemoteInvalidRequest, verbs.WCFetchAdd)
	sameBytes(t, "target of misaligned atomic", target.Mem, make([]byte, 64))
}
