package md

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAllocBacking: Alloc memory is a shared memfd mapping: LookupBacking names its
// memfd and offset, and a second mapping of the memfd opened by its /proc path (as a
// peer process does) sees the same bytes both ways. Memory outside every allocation, or
// spread past its end, has no backing; after Free neither has the allocation.
func TestAllocBacking(t *testing.T) {
	a, err := Alloc(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	b := a.Bytes()
	base := uintptr(unsafe.Pointer(&b[0]))
	bk, ok := LookupBacking(base+100, 200)
	if !ok || bk.Offset != 100 || bk.Size != 3*4096 || bk.FD < 0 {
		t.Fatalf("LookupBacking = %+v, %v", bk, ok)
	}
	if _, ok := LookupBacking(base+100, 3*4096); ok {
		t.Fatal("a range past the allocation's end has a backing")
	}
	other := make([]byte, 64)
	if _, ok := LookupBacking(uintptr(unsafe.Pointer(&other[0])), 64); ok {
		t.Fatal("Go heap memory has a backing")
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", bk.FD), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Ino != bk.Inode {
		t.Fatalf("inode %d, backing says %d (%v)", st.Ino, bk.Inode, err)
	}
	m, err := unix.Mmap(fd, 0, int(bk.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	b[100] = 7
	m[101] = 9
	if m[100] != 7 || b[101] != 9 {
		t.Fatalf("the two mappings differ: %d %d", m[100], b[101])
	}
	var hooked []uintptr
	OnFree(func(addr, n uintptr) {
		if addr == base {
			hooked = append(hooked, addr, n)
			if bk2, ok := LookupBacking(base, 1); ok {
				t.Errorf("a range being freed still has a backing: %+v", bk2)
			}
			b[0] = 1 // still mapped while the hook runs
		}
	})
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 2 || hooked[1] != 3*4096 {
		t.Fatalf("free hook saw %v", hooked)
	}
	if _, ok := LookupBacking(base, 1); ok {
		t.Fatal("a freed allocation has a backing")
	}
}
