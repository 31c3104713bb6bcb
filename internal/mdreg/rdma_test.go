package mdreg

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/md"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
	"github.com/goportals/goportals/regcache"
)

// rdma moves the bytes of local (SGEs) to or from remote (segments) with RDMA WRITE or
// READ work requests on s, one per overlap of a local SGE and a remote segment, and
// waits for them.
func rdma(t *testing.T, s *verbstest.Side, op verbs.Opcode, local []verbs.SGE, remote []RemoteSegment) {
	t.Helper()
	if verbs.TotalLength(local) != totalRemote(remote) {
		t.Fatalf("local %d bytes, remote %d", verbs.TotalLength(local), totalRemote(remote))
	}
	var wrs []verbs.SendWR
	var loff, roff uint64 // consumed bytes of local[0] and remote[0]
	for len(local) > 0 {
		n := min(uint64(local[0].Length)-loff, uint64(remote[0].Len)-roff)
		wrs = append(wrs, verbs.SendWR{
			ID: uint64(len(wrs)), Opcode: op, Flags: verbs.SendSignaled,
			SG:         []verbs.SGE{{Addr: local[0].Addr + loff, Length: uint32(n), LKey: local[0].LKey}},
			RemoteAddr: remote[0].Addr + roff, RKey: remote[0].RKey,
		})
		loff, roff = loff+n, roff+n
		if loff == uint64(local[0].Length) {
			local, loff = local[1:], 0
		}
		if roff == uint64(remote[0].Len) {
			remote, roff = remote[1:], 0
		}
	}
	s.PostSend(t, wrs...)
	for _, wc := range s.Wait(t, len(wrs)) {
		if wc.Status != verbs.StatusSuccess {
			t.Fatalf("%v work request %d: %v", op, wc.ID, wc.Status)
		}
	}
}

func totalRemote(r []RemoteSegment) uint64 {
	var n uint64
	for _, s := range r {
		n += uint64(s.Len)
	}
	return n
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*13) ^ seed
	}
}

// checkPieces verifies that the SGEs and remote segments of p describe exactly the
// contiguous pieces of [off, off+n) of m, in order, with the keys of their regions.
func checkPieces(t *testing.T, m md.Memory, off, n uint64, p *Pinned) ([]verbs.SGE, []RemoteSegment) {
	t.Helper()
	pieces, err := m.Slices(off, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	sges := p.SGEs(nil)
	rem := p.Remote(nil)
	if len(sges) != len(pieces) || len(rem) != len(pieces) || p.NumSegments() != len(pieces) || p.Len() != n {
		t.Fatalf("%d SGEs, %d remote segments, NumSegments %d, Len %d for %d pieces of %d bytes",
			len(sges), len(rem), p.NumSegments(), p.Len(), len(pieces), n)
	}
	for i, pc := range pieces {
		addr := uint64(uintptr(unsafe.Pointer(&pc[0])))
		if sges[i].Addr != addr || sges[i].Length != uint32(len(pc)) {
			t.Fatalf("SGE %d = %+v, piece at %#x len %d", i, sges[i], addr, len(pc))
		}
		if rem[i].Addr != addr || rem[i].Len != uint32(len(pc)) {
			t.Fatalf("remote segment %d = %+v, piece at %#x len %d", i, rem[i], addr, len(pc))
		}
	}
	return sges, rem
}

// TestRegistryRDMARoundTrip pins an iovec of large Go objects (which start on a page)
// on one side and library memory on the other, and moves bytes between them with RDMA
// WRITE and READ through the SGEs and remote segments.
func TestRegistryRDMARoundTrip(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			roundTrip(t, env, [][]byte{make([]byte, 40000), make([]byte, 33000), nil, make([]byte, 70000)})
		})
	}
}

// TestRegistryRDMASmallGoObjects is the round trip with small Go objects, which share
// their pages with other objects (the registration covers the whole pages).
func TestRegistryRDMASmallGoObjects(t *testing.T) {
	for _, env := range envs {
		t.Run(env.Name, func(t *testing.T) {
			roundTrip(t, env, [][]byte{make([]byte, 5000), make([]byte, 1), nil, make([]byte, 70000)})
		})
	}
}

func roundTrip(t *testing.T, env verbstest.Env, iov [][]byte) {
	t.Helper()
	pair := newPair(t, env)
	ra := newRegistry(t, pair.A.PD, regcache.Options{})
	rb := newRegistry(t, pair.B.PD, regcache.Options{})

	// Initiator: an iovec of Go heap pieces. Target: library memory in three pieces.
	for i, b := range iov {
		fill(b, byte(i+1))
	}
	src, err := md.Iovecs(iov)
	if err != nil {
		t.Fatal(err)
	}
	soff, doff := uint64(len(iov[0])-2000), uint64(50)
	n := src.Len() - soff - 10000
	alloc, err := md.Alloc(int(n) + 20000)
	if err != nil {
		t.Fatal(err)
	}
	defer alloc.Free()
	ab := alloc.Bytes()
	dst, err := md.Iovecs([][]byte{ab[:100], ab[100:40000], ab[50000:]})
	if err != nil {
		t.Fatal(err)
	}

	ps, err := ra.Pin(src, soff, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := rb.Pin(dst, doff, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Outstanding() != 1 || rb.Outstanding() != 1 {
		t.Fatalf("outstanding %d %d", ra.Outstanding(), rb.Outstanding())
	}
	local, _ := checkPieces(t, src, soff, n, ps)
	_, remote := checkPieces(t, dst, doff, n, pd)
	if len(local) != 3 || len(remote) != 3 {
		t.Fatalf("%d local and %d remote pieces, want 3 and 3", len(local), len(remote))
	}

	// A writes its pinned range into B's through B's remote segments.
	rdma(t, pair.A, verbs.OpRDMAWrite, local, remote)
	want := make([]byte, n)
	src.ReadAt(want, soff)
	got := make([]byte, n)
	dst.ReadAt(got, doff)
	if !bytes.Equal(got, want) {
		t.Fatal("RDMA WRITE through the pinned segments moved the wrong bytes")
	}
	for i := 40000; i < 50000; i++ {
		if ab[i] != 0 {
			t.Fatalf("byte %d outside the target pieces changed", i)
		}
	}

	// A reads them back into a fresh range of its own memory.
	fill(ab, 0x77)
	pr, err := rb.Pin(dst, doff, n)
	if err != nil {
		t.Fatal(err)
	}
	back := make([]byte, n)
	pb, err := ra.Pin(md.Bytes(back), 0, n)
	skipMemlock(t, err)
	if err != nil {
		t.Fatal(err)
	}
	rdma(t, pair.A, verbs.OpRDMARead, pb.SGEs(nil), pr.Remote(nil))
	dst.ReadAt(want, doff)
	if !bytes.Equal(back, want) {
		t.Fatal("RDMA READ through the pinned segments moved the wrong bytes")
	}
	stb := rb.Stats()
	if stb.Hits < 3 {
		t.Fatalf("the second pin of the same target range did not hit the cache: %+v", stb)
	}
	for _, p := range []*Pinned{ps, pd, pr, pb} {
		mustRelease(t, p)
	}
	if ra.Outstanding() != 0 || rb.Outstanding() != 0 {
		t.Fatalf("outstanding after release: %d %d", ra.Outstanding(), rb.Outstanding())
	}
	if err := ps.Release(); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("double release: %v", err)
	}
	if ps.SGEs(nil) != nil || ps.Remote(nil) != nil || ps.Len() != 0 {
		t.Fatal("a released Pinned still hands out keys")
	}
}
