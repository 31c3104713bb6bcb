package md_test

import (
	"fmt"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/loopback"
	"github.com/goportals/goportals/md"
	"github.com/goportals/goportals/regcache"
)

// An iovec memory counts offsets across its pieces.
func ExampleIovecs() {
	m, err := md.Iovecs([][]byte{[]byte("put "), nil, []byte("and "), []byte("get")})
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 7)
	if _, err := m.ReadAt(buf, 2); err != nil {
		panic(err)
	}
	pieces, err := m.Slices(2, 7, nil)
	if err != nil {
		panic(err)
	}
	_, one := m.Contiguous(4, 3)
	fmt.Printf("%d bytes, %q in %d pieces, [4,7) contiguous: %v\n", m.Len(), buf, len(pieces), one)
	_, err = m.ReadAt(buf, 8)
	fmt.Println(err)
	// Output:
	// 11 bytes, "t and g" in 3 pieces, [4,7) contiguous: true
	// md: read [8,+7) outside memory of 11 bytes
}

// The engine pins a range of bound memory for one operation and hands its SGEs to a
// work request; the user never sees the keys.
func ExampleRegistry_Pin() {
	ctx, err := loopback.Device{}.Open()
	if err != nil {
		panic(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		panic(err)
	}
	reg, err := md.NewRegistry(pd, verbs.AccessLocalWrite|verbs.AccessRemoteRead, regcache.Options{})
	if err != nil {
		panic(err)
	}
	defer reg.Close()

	a, err := md.Alloc(1 << 20)
	if err != nil {
		panic(err)
	}
	defer a.Free()
	m, err := md.Iovecs([][]byte{make([]byte, 4096), a.Bytes()})
	if err != nil {
		panic(err)
	}

	p, err := reg.Pin(m, 1000, 10000)
	if err != nil {
		panic(err)
	}
	sges := p.SGEs(nil)
	fmt.Println(len(sges), "SGEs,", verbs.TotalLength(sges), "bytes")
	if err := p.Release(); err != nil {
		panic(err)
	}
	fmt.Println(p.Release())
	// Output:
	// 2 SGEs, 10000 bytes
	// md: not pinned (released twice or never pinned)
}
