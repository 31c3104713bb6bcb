package regcache

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/verbs"
)

// errNoLockable stands for the kernel's ENOMEM past RLIMIT_MEMLOCK.
var errNoLockable = errors.New("cannot allocate memory")

// fakeSource is a notifier without userfaultfd: Watch records ranges (or refuses them),
// unmap stands for munmap and reaches the cache through explicit invalidation.
type fakeSource struct {
	n       *driverhooks.Notifier
	mu      sync.Mutex
	watched map[uintptr]uintptr
	refuse  bool
}

func newFakeSource() *fakeSource {
	return &fakeSource{n: driverhooks.NewNotifier(nil), watched: make(map[uintptr]uintptr)}
}

func (f *fakeSource) Watch(addr, length uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse {
		return &driverhooks.OpError{Op: "watch", Addr: addr, Len: length, Err: driverhooks.ErrUnwatchable}
	}
	f.watched[addr] = length
	return nil
}

func (f *fakeSource) Unwatch(addr, length uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.watched, addr)
	return nil
}

func (f *fakeSource) Subscribe() driverhooks.Subscription { return f.n.Subscribe() }

func (f *fakeSource) unmap(mem []byte) {
	f.n.Invalidate(uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)))
}

// fakeReg is a registration of fakeRegistrar.
type fakeReg struct {
	id         int
	addr, size uintptr
}

// fakeRegistrar records live registrations and checks that each is deregistered once.
type fakeRegistrar struct {
	mu      sync.Mutex
	next    int
	live    map[int]fakeReg
	regs    int
	deregs  int
	failErr error
	// budget, if set, bounds the bytes registered at once (shared by registrars
	// like RLIMIT_MEMLOCK by a process's registrations): past it Register fails
	// as the soft provider does, with verbs.ErrMemlock.
	budget *memBudget
}

// memBudget is a byte limit shared by fake registrars.
type memBudget struct {
	mu          sync.Mutex
	limit, used uintptr
	refused     int
}

func (b *memBudget) take(n uintptr) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		b.refused++
		return verbs.Errorf("reg_mr", verbs.ErrMemlock, errNoLockable)
	}
	b.used += n
	return nil
}

func (b *memBudget) give(n uintptr) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

func newFakeRegistrar() *fakeRegistrar { return &fakeRegistrar{live: make(map[int]fakeReg)} }

func (f *fakeRegistrar) Register(mem []byte) (fakeReg, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failErr != nil {
		return fakeReg{}, f.failErr
	}
	a := uintptr(unsafe.Pointer(&mem[0]))
	if a%pageSize != 0 || uintptr(len(mem))%pageSize != 0 {
		return fakeReg{}, fmt.Errorf("registration [%#x+%#x) not page-aligned", a, len(mem))
	}
	if f.budget != nil {
		if err := f.budget.take(uintptr(len(mem))); err != nil {
			return fakeReg{}, err
		}
	}
	f.next++
	r := fakeReg{id: f.next, addr: a, size: uintptr(len(mem))}
	f.live[r.id] = r
	f.regs++
	return r, nil
}

func (f *fakeRegistrar) Deregister(r fakeReg) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.live[r.id]; !ok {
		return errors.New("double or unknown deregistration")
	}
	delete(f.live, r.id)
	f.deregs++
	if f.budget != nil {
		f.budget.give(r.size)
	}
	return nil
}

func (f *fakeRegistrar) liveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

// pages returns n page-aligned pages of Go memory.
func pages(n int) []byte {
	b := make([]byte, (n+1)*int(pageSize))
	off := int(pageSize - uintptr(unsafe.Pointer(&b[0]))%pageSize)
	if off == int(pageSize) {
		off = 0
	}
	return b[off : off+n*int(pageSize)]
}

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func runtimeKeepAlive(x any) { runtime.KeepAlive(x) }
