package md_test

import (
	"fmt"

	"github.com/goportals/goportals/md"
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

// work request; the user never sees the keys.
