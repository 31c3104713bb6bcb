package verbstest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

func isErr(err, kind error) bool { return err != nil && errors.Is(err, kind) }

// remoteCase builds a faulty one-sided request against side B of p. It returns the
// request and the target bytes that must not change.
type remoteCase struct {
	name  string
	build func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte)
}

const targetSize = 4096

// remoteRights is the right each one-sided opcode needs.
func remoteRight(op verbs.Opcode) verbs.Access {
	if op == verbs.OpRDMARead {
		return verbs.AccessRemoteRead
	}
	return rw | verbs.AccessRemoteWrite
}

var remoteCases = []remoteCase{
	{"BadRKey", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		tgt := p.B.Reg(t, targetSize, remoteRight(op)|rw, 11)
		// A deregistered region's key can be no live key, whatever the key layout.
		gone := p.B.Reg(t, targetSize, remoteRight(op)|rw, 0)
		bad := gone.MR.RKey()
		must(t, "dereg", gone.MR.Dereg())
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: tgt.Addr(0), RKey: bad}, tgt.Mem
	}},
	{"OutOfBounds", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		tgt := p.B.Reg(t, targetSize, remoteRight(op)|rw, 12)
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)},
			RemoteAddr: tgt.Addr(targetSize - 32), RKey: tgt.MR.RKey()}, tgt.Mem
	}},
	{"BelowRegion", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		tgt := p.B.Reg(t, targetSize, remoteRight(op)|rw, 13)
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)},
			RemoteAddr: tgt.Addr(0) - 16, RKey: tgt.MR.RKey()}, tgt.Mem
	}},
	{"DeregisteredKey", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		tgt := p.B.Reg(t, targetSize, remoteRight(op)|rw, 14)
		addr, key := tgt.Addr(0), tgt.MR.RKey()
		must(t, "dereg", tgt.MR.Dereg())
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: addr, RKey: key}, tgt.Mem
	}},
	{"DeregisteredKeyMemoryRegisteredAgain", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		// The same memory registered again gets new keys; the old ones stay dead.
		tgt := p.B.Reg(t, targetSize, remoteRight(op)|rw, 15)
		addr, key := tgt.Addr(0), tgt.MR.RKey()
		must(t, "dereg", tgt.MR.Dereg())
		for range 4 {
			mr, err := p.B.PD.RegMR(tgt.Mem, remoteRight(op)|rw)
			must(t, "register again", err)
			if mr.RKey() == key {
				t.Fatalf("re-registration reissued the deregistered rkey %#x", key)
			}
			must(t, "dereg", mr.Dereg())
		}
		_, err := p.B.PD.RegMR(tgt.Mem, remoteRight(op)|rw)
		must(t, "register again", err)
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: addr, RKey: key}, tgt.Mem
	}},
	{"MissingRight", func(t *testing.T, p *Pair, op verbs.Opcode, local *Buffer) (verbs.SendWR, []byte) {
		// The region grants the other remote right but not the one op needs.
		other := verbs.AccessRemoteRead | rw
		if op == verbs.OpRDMARead {
			other = verbs.AccessRemoteWrite | rw
		}
		tgt := p.B.Reg(t, targetSize, other, 16)
		return verbs.SendWR{Opcode: op, SG: []verbs.SGE{local.SGE(0, 64)}, RemoteAddr: tgt.Addr(0), RKey: tgt.MR.RKey()}, tgt.Mem
	}},
}

// testRemoteAccessErrors runs every faulty case as a WRITE, a WRITE with immediate and a
// READ, unsignaled (errors complete anyway): the request completes with
// StatusRemoteAccessError, no target byte (and for READ no local byte) changes, the queue
// pair enters the error state and later work is flushed.
func testRemoteAccessErrors(t *testing.T, env Env) {
	for _, op := range []verbs.Opcode{verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm, verbs.OpRDMARead} {
		for _, rc := range remoteCases {
			t.Run(op.String()+"/"+rc.name, func(t *testing.T) {
				p := NewPair(t, env)
				local := p.A.Reg(t, 64, rw, 21)
				localBefore := bytes.Clone(local.Mem)
				wr, target := rc.build(t, p, op, local)
				before := bytes.Clone(target)
				if op == verbs.OpRDMAWriteWithImm {
					p.B.PostRecv(t, 0xbb)
				}
				wr.ID = 0xe1
				p.A.PostSend(t, wr)
				Expect(t, p.A.Wait(t, 1)[0], 0xe1, verbs.StatusRemoteAccessError, verbs.OpcodeOf(op))
				sameBytes(t, "target bytes", target, before)
				sameBytes(t, "local bytes", local.Mem, localBefore)
				checkErrorState(t, p.A, local)
			})
		}
	}
}

// checkErrorState checks that s's queue pair is in the error state and that a request
// posted now is flushed (or refused with ErrQPState, which the interface also allows).
func checkErrorState(t *testing.T, s *Side, local *Buffer) {
	t.Helper()
	if st := s.QP.State(); st != verbs.QPError {
		t.Fatalf("queue pair state %v after an error completion, want %v", st, verbs.QPError)
	}
	err := s.QP.PostSend([]verbs.SendWR{{ID: 0xf1, Opcode: verbs.OpSend, SG: []verbs.SGE{local.SGE(0, 8)}}})
	if err != nil {
		wantErr(t, "post in the error state", err, verbs.ErrQPState)
		return
	}
	Expect(t, s.Wait(t, 1)[0], 0xf1, verbs.StatusWorkRequestFlushed, verbs.WCSend)
}

// testLocalErrors checks requests whose local SGEs are invalid: they complete with
// StatusLocalProtectionError (an SGE running past its region may also report
// StatusLocalLengthError, as the verbs documentation allows) and touch nothing.
func testLocalErrors(t *testing.T, env Env) {
	cases := []struct {
		name  string
		op    verbs.Opcode
		build func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE
		alt   verbs.Status // a second accepted status, or StatusSuccess for none
	}{
		{"UnknownLKeySend", verbs.OpSend, func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE {
			gone := p.A.Reg(t, 64, rw, 0)
			sge := gone.SGE(0, 64)
			must(t, "dereg", gone.MR.Dereg())
			return []verbs.SGE{sge}
		}, verbs.StatusSuccess},
		{"UnknownLKeyWrite", verbs.OpRDMAWrite, func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE {
			gone := p.A.Reg(t, 64, rw, 0)
			sge := gone.SGE(0, 64)
			must(t, "dereg", gone.MR.Dereg())
			return []verbs.SGE{local.SGE(0, 8), sge}
		}, verbs.StatusSuccess},
		{"SGEPastRegionWrite", verbs.OpRDMAWrite, func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE {
			return []verbs.SGE{local.SGE(32, 64)}
		}, verbs.StatusLocalLengthError},
		{"RemoteKeyAsLocalKey", verbs.OpRDMAWrite, func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE {
			return []verbs.SGE{{Addr: remote.Addr(0), Length: 64, LKey: remote.MR.LKey()}}
		}, verbs.StatusSuccess},
		{"ReadIntoReadOnlyRegion", verbs.OpRDMARead, func(t *testing.T, p *Pair, local, remote *Buffer) []verbs.SGE {
			ro := p.A.Reg(t, 64, 0, 0)
			return []verbs.SGE{ro.SGE(0, 64)}
		}, verbs.StatusSuccess},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPair(t, env)
			local := p.A.Reg(t, 64, rw, 31)
			remote := p.B.Reg(t, 256, rw|verbs.AccessRemoteWrite|verbs.AccessRemoteRead, 32)
			before := bytes.Clone(remote.Mem)
			sg := tc.build(t, p, local, remote)
			p.B.PostRecv(t, 0xb1, remote.SGE(0, 256))
			p.A.PostSend(t, verbs.SendWR{ID: 0xe2, Opcode: tc.op, SG: sg, RemoteAddr: remote.Addr(0), RKey: remote.MR.RKey()})
			wc := p.A.Wait(t, 1)[0]
			if wc.Status != verbs.StatusLocalProtectionError && (tc.alt == verbs.StatusSuccess || wc.Status != tc.alt) {
				t.Fatalf("completion %+v (%v): want %v", wc, wc.Status, verbs.StatusLocalProtectionError)
			}
			if wc.ID != 0xe2 {
				t.Fatalf("completion id %#x, want 0xe2", wc.ID)
			}
			sameBytes(t, "remote bytes", remote.Mem, before)
			checkErrorState(t, p.A, local)
		})
	}
}

// testSendTooLong sends more than the posted receive holds: the receive completes with
// StatusLocalLengthError, the send with StatusRemoteInvalidRequest (the ibverbs
// behaviour of RC hardware), and the receive buffer keeps its bytes.
func testSendTooLong(t *testing.T, env Env) {
	p := NewPair(t, env)
	src := p.A.Reg(t, 128, 0, 41)
	dst := p.B.Reg(t, 128, rw, 42)
	before := bytes.Clone(dst.Mem)
	p.B.PostRecv(t, 0xb2, dst.SGE(0, 32), dst.SGE(64, 32))
	p.A.PostSend(t, verbs.SendWR{ID: 0xe3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SG: []verbs.SGE{src.SGE(0, 65)}})
	Expect(t, p.B.Wait(t, 1)[0], 0xb2, verbs.StatusLocalLengthError, verbs.WCRecv)
	Expect(t, p.A.Wait(t, 1)[0], 0xe3, verbs.StatusRemoteInvalidRequest, verbs.WCSend)
	sameBytes(t, "receive buffer", dst.Mem, before)
}
