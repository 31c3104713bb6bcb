package mdreg

import (
	"context"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/md"

	"github.com/goportals/goportals/regcache"
)

// TestPinKeepsGoMemoryAlive drops every reference to a pinned Go buffer except the
// Pinned and checks that the garbage collector does not free it.
func TestPinKeepsGoMemoryAlive(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	freed := make(chan struct{})
	p := func() *Pinned {
		buf := new([1 << 16]byte)
		runtime.SetFinalizer(buf, func(*[1 << 16]byte) { close(freed) })
		p, err := r.Pin(md.Bytes(buf[:]), 100, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}()
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	select {
	case <-freed:
		t.Fatal("the garbage collector freed pinned memory")
	case <-time.After(50 * time.Millisecond):
	}
	mustRelease(t, p)
	// Once released and dropped from the cache, the memory may go.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-ctx.Done():
			t.Log("memory still referenced after the registry closed (the provider may keep it; not an error of md)")
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestPinHitKeepsOtherObjectAlive pins object A (the cache entry then covers A's page
// and references A), then pins object B of the same page, a cache hit on A's entry, and
// drops every reference to B but the Pinned: B must stay alive while pinned.
func TestPinHitKeepsOtherObjectAlive(t *testing.T) {
	pair := newPair(t, loopbackEnv)
	r := newRegistry(t, pair.A.PD, regcache.Options{})
	const size = 512
	page := uintptr(4096)
	objs := make([]*[size]byte, 64)
	for i := range objs {
		objs[i] = new([size]byte)
	}
	ai, bi := -1, -1
	for i := 0; i < len(objs) && bi < 0; i++ {
		for j := range objs {
			pa, pb := uintptr(unsafe.Pointer(objs[i])), uintptr(unsafe.Pointer(objs[j]))
			if i != j && pa/page == pb/page && (pb+size-1)/page == pb/page && (pa+size-1)/page == pa/page {
				ai, bi = i, j
				break
			}
		}
	}
	if bi < 0 {
		t.Skip("no two 512-byte objects on one page (unexpected allocator layout)")
	}
	a := objs[ai]
	pa, err := r.Pin(md.Bytes(a[:]), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, pa)
	if r.Stats().Fallbacks != 0 {
		t.Skip("the notifier cannot watch Go memory here: no cache entry to hit")
	}
	freed := make(chan struct{})
	runtime.SetFinalizer(objs[bi], func(*[size]byte) { close(freed) })
	pb, err := r.Pin(md.Bytes(objs[bi][:]), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Hits != 1 {
		t.Fatalf("the pin of the second object did not hit the first one's entry: %+v", st)
	}
	clear(objs)
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
	select {
	case <-freed:
		t.Fatal("the garbage collector freed a pinned object that hit another object's cache entry")
	case <-time.After(50 * time.Millisecond):
	}
	mustRelease(t, pb)
	runtime.KeepAlive(a)
}
