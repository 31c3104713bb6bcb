package nic

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/goportals/goportals/eq"
)

// TestAtomicInPlaceMatchesEngine: for every operation on every 4- and 8-byte
// type, applying in place with atomic instructions leaves the memory and returns
// the old data exactly as the engine's arithmetic does.
func TestAtomicInPlaceMatchesEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	types := []AtomicType{eq.Int32, eq.Uint32, eq.Int64, eq.Uint64, eq.Float, eq.Double, eq.FloatComplex}
	for op := eq.OpMin; op <= eq.OpMSwap; op++ {
		for _, dt := range types {
			if checkAtomic(op, dt, uint64(dt.Size()), op >= eq.OpSwap) != nil {
				continue
			}
			for trial := 0; trial < 50; trial++ {
				n := dt.Size() * (1 + r.IntN(4))
				if op >= eq.OpCSwap {
					n = dt.Size()
				}
				words := make([]uint64, 8)
				mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 64)[:n]
				src, cond := make([]byte, n), make([]byte, dt.Size())
				for i := range mem {
					mem[i] = byte(r.IntN(4)) // small values: equalities happen
					src[i] = byte(r.IntN(4))
				}
				if trial%3 == 0 {
					copy(cond, mem)
				} else {
					for i := range cond {
						cond[i] = byte(r.IntN(4))
					}
				}
				want := append([]byte(nil), mem...)
				wn := applyAtomic(op, dt, want, src, cond)
				old := make([]byte, n)
				before := append([]byte(nil), mem...)
				gn := atomicInPlace(op, dt, mem, src, cond, old)
				if gn != wn || !bytes.Equal(mem, want) || !bytes.Equal(old[:gn], before[:gn]) {
					t.Fatalf("%v %v: in place %x (n %d, old %x), engine %x (n %d); before %x src %x cond %x",
						op, dt, mem, gn, old, want, wn, before, src, cond)
				}
			}
		}
	}
}

// TestAtomicInPlaceConcurrent: concurrent in-place sums and CAS-loop products on
// one word lose no update (run under -race: the accesses are atomic).
func TestAtomicInPlaceConcurrent(t *testing.T) {
	words := make([]uint64, 2)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 16)
	one := binary.NativeEndian.AppendUint64(nil, 1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				atomicInPlace(eq.OpSum, eq.Uint64, mem[:8], one, nil, nil)
				atomicInPlace(eq.OpMax, eq.Int64, mem[8:], binary.NativeEndian.AppendUint64(nil, uint64(i)), nil, nil)
			}
		}()
	}
	wg.Wait()
	if words[0] != 4000 || words[1] != 999 {
		t.Fatalf("sum %d (want 4000), max %d (want 999)", words[0], words[1])
	}
}
