package verbstest

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/internal/verbs"
)

const rw = verbs.AccessLocalWrite

func testSendRecv(t *testing.T, env Env) {
	for _, sz := range sizes {
		t.Run(sz.name, func(t *testing.T) {
			p := NewPair(t, env)
			src := p.A.Reg(t, sz.n, 0, 1)
			dst := p.B.Reg(t, sz.n+64, rw, 0)
			// The receive scatters into four uneven pieces, the send gathers from three.
			p.B.PostRecv(t, 0xb0, dst.sgl(0, sz.n+64, 4)...)
			p.A.PostSend(t, verbs.SendWR{ID: 0xa0, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
				SG: src.sgl(0, sz.n, 3)})
			Expect(t, p.A.Wait(t, 1)[0], 0xa0, verbs.StatusSuccess, verbs.WCSend)
			wc := p.B.Wait(t, 1)[0]
			Expect(t, wc, 0xb0, verbs.StatusSuccess, verbs.WCRecv)
			if wc.ByteLen != uint32(sz.n) || wc.Flags&verbs.WCWithImm != 0 || wc.QPNum != p.B.QP.Num() {
				t.Fatalf("receive completion %+v: want ByteLen %d, no immediate, QPNum %d", wc, sz.n, p.B.QP.Num())
			}
			sameBytes(t, "received payload", dst.Mem[:sz.n], src.Mem)
			sameBytes(t, "bytes past the payload", dst.Mem[sz.n:], make([]byte, 64))
		})
	}
}

func testSendWithImm(t *testing.T, env Env) {
	p := NewPair(t, env)
	src := p.A.Reg(t, 100, 0, 2)
	dst := p.B.Reg(t, 100, rw, 0)
	p.B.PostRecv(t, 1, dst.SGE(0, 100))
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSendWithImm, Flags: verbs.SendSignaled,
		Imm: 0xfeedbeef, SG: []verbs.SGE{src.SGE(0, 100)}})
	Expect(t, p.A.Wait(t, 1)[0], 2, verbs.StatusSuccess, verbs.WCSend)
	wc := p.B.Wait(t, 1)[0]
	Expect(t, wc, 1, verbs.StatusSuccess, verbs.WCRecv)
	if wc.Flags&verbs.WCWithImm == 0 || wc.Imm != 0xfeedbeef || wc.ByteLen != 100 {
		t.Fatalf("receive completion %+v: want immediate 0xfeedbeef and 100 bytes", wc)
	}
	sameBytes(t, "payload", dst.Mem, src.Mem)

	// A zero-length SEND with immediate is a pure notification.
	p.B.PostRecv(t, 3)
	p.A.PostSend(t, verbs.SendWR{ID: 4, Opcode: verbs.OpSendWithImm, Flags: verbs.SendSignaled, Imm: 7})
	Expect(t, p.A.Wait(t, 1)[0], 4, verbs.StatusSuccess, verbs.WCSend)
	wc = p.B.Wait(t, 1)[0]
	Expect(t, wc, 3, verbs.StatusSuccess, verbs.WCRecv)
	if wc.ByteLen != 0 || wc.Imm != 7 || wc.Flags&verbs.WCWithImm == 0 {
		t.Fatalf("zero-length receive completion %+v", wc)
	}
}

func testSendInline(t *testing.T, env Env) {
	p := NewPair(t, env)
	max := p.A.Ctx.Attr().MaxInline
	if max < 8 {
		t.Skipf("provider %s: MaxInline is %d", env.Name, max)
	}
	n := min(max, 64)
	payload := make([]byte, n) // not registered
	pattern(payload, 3)
	want := bytes.Clone(payload)
	dst := p.B.Reg(t, n, rw, 0)
	p.B.PostRecv(t, 1, dst.SGE(0, n))
	addr := uint64(uintptr(unsafe.Pointer(&payload[0])))
	p.A.PostSend(t, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SG: []verbs.SGE{{Addr: addr, Length: uint32(n / 2)}, {Addr: addr + uint64(n/2), Length: uint32(n - n/2)}}})
	clear(payload) // the payload was copied at post time
	Expect(t, p.A.Wait(t, 1)[0], 2, verbs.StatusSuccess, verbs.WCSend)
	Expect(t, p.B.Wait(t, 1)[0], 1, verbs.StatusSuccess, verbs.WCRecv)
	sameBytes(t, "inline payload", dst.Mem, want)

	// Above MaxInline the post is refused synchronously.
	big := make([]byte, max+1)
	err := p.A.QP.PostSend([]verbs.SendWR{{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendInline,
		SG: []verbs.SGE{{Addr: uint64(uintptr(unsafe.Pointer(&big[0]))), Length: uint32(len(big))}}}})
	wantErr(t, "inline above MaxInline", err, verbs.ErrInvalidArgument)
}

func testWrite(t *testing.T, env Env) {
	for _, sz := range sizes {
		t.Run(sz.name, func(t *testing.T) {
			p := NewPair(t, env)
			src := p.A.Reg(t, sz.n, 0, 4)
			dst := p.B.Reg(t, sz.n+16, rw|verbs.AccessRemoteWrite, 0)
			p.A.PostSend(t, verbs.SendWR{ID: 9, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
				SG: src.sgl(0, sz.n, 3), RemoteAddr: dst.Addr(8), RKey: dst.MR.RKey()})
			Expect(t, p.A.Wait(t, 1)[0], 9, verbs.StatusSuccess, verbs.WCRDMAWrite)
			sameBytes(t, "written bytes", dst.Mem[8:8+sz.n], src.Mem)
			sameBytes(t, "bytes around the target", append(bytes.Clone(dst.Mem[:8]), dst.Mem[8+sz.n:]...), make([]byte, 16))
			p.B.Quiet(t) // a plain WRITE consumes no receive and completes nothing at the target
		})
	}
}

func testRead(t *testing.T, env Env) {
	for _, sz := range sizes {
		t.Run(sz.name, func(t *testing.T) {
			p := NewPair(t, env)
			src := p.B.Reg(t, sz.n+16, verbs.AccessRemoteRead, 5)
			dst := p.A.Reg(t, sz.n, rw, 0)
			p.A.PostSend(t, verbs.SendWR{ID: 10, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
				SG: dst.sgl(0, sz.n, 3), RemoteAddr: src.Addr(16), RKey: src.MR.RKey()})
			wc := p.A.Wait(t, 1)[0]
			Expect(t, wc, 10, verbs.StatusSuccess, verbs.WCRDMARead)
			sameBytes(t, "read bytes", dst.Mem, src.Mem[16:])
			p.B.Quiet(t)
		})
	}
}

func testWriteWithImm(t *testing.T, env Env) {
	for _, sz := range sizes[:3] {
		t.Run(sz.name, func(t *testing.T) {
			p := NewPair(t, env)
			src := p.A.Reg(t, sz.n, 0, 6)
			dst := p.B.Reg(t, sz.n, rw|verbs.AccessRemoteWrite, 0)
			p.B.PostRecv(t, 0x77) // no SGE needed: the data lands at RemoteAddr
			p.A.PostSend(t, verbs.SendWR{ID: 0x78, Opcode: verbs.OpRDMAWriteWithImm, Flags: verbs.SendSignaled,
				Imm: 0x12345678, SG: src.sgl(0, sz.n, 2), RemoteAddr: dst.Addr(0), RKey: dst.MR.RKey()})
			Expect(t, p.A.Wait(t, 1)[0], 0x78, verbs.StatusSuccess, verbs.WCRDMAWrite)
			wc := p.B.Wait(t, 1)[0]
			Expect(t, wc, 0x77, verbs.StatusSuccess, verbs.WCRecvRDMAWithImm)
			if wc.Flags&verbs.WCWithImm == 0 || wc.Imm != 0x12345678 || wc.ByteLen != uint32(sz.n) {
				t.Fatalf("receive completion %+v: want immediate 0x12345678, ByteLen %d", wc, sz.n)
			}
			sameBytes(t, "written bytes", dst.Mem, src.Mem)
		})
	}
}

// testFence reads remote word X into a local buffer, then writes that buffer to remote
// word Y with SendFence: the write must wait for the read, so Y ends up equal to X.
func testFence(t *testing.T, env Env) {
	p := NewPair(t, env)
	remote := p.B.Reg(t, 4096, rw|verbs.AccessRemoteRead|verbs.AccessRemoteWrite, 0)
	pattern(remote.Mem[:2048], 8)
	local := p.A.Reg(t, 2048, rw, 0)
	p.A.PostSend(t,
		verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, SG: []verbs.SGE{local.SGE(0, 2048)},
			RemoteAddr: remote.Addr(0), RKey: remote.MR.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendFence | verbs.SendSignaled,
			SG: []verbs.SGE{local.SGE(0, 2048)}, RemoteAddr: remote.Addr(2048), RKey: remote.MR.RKey()})
	Expect(t, p.A.Wait(t, 1)[0], 2, verbs.StatusSuccess, verbs.WCRDMAWrite)
	sameBytes(t, "fenced write of the read data", remote.Mem[2048:], remote.Mem[:2048])
}

// wantErr checks that err matches kind with errors.Is.
func wantErr(tb testing.TB, what string, err, kind error) {
	tb.Helper()
	if !isErr(err, kind) {
		tb.Fatalf("%s: error %v, want one matching %v", what, err, kind)
	}
}
