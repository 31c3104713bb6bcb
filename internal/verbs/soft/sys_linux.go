//go:build linux

package soft

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// supported reports whether this platform has what the provider needs.
const supported = true

// Futex operations (linux/futex.h); x/sys/unix does not define them. The words live in
// shared memfd mappings, so the shared (not private) forms are used.
const (
	futexOpWait = 0
	futexOpWake = 1
)

// shm is one shared memory file mapped into this process.
type shm struct {
	fd  int
	mem []byte
}

// newShm creates a memfd of size bytes and maps it read-write.
func newShm(name string, size int) (*shm, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return &shm{fd: fd, mem: mem}, nil
}

// openPeerShm maps size bytes of the memfd that process pid holds as descriptor fd.
func openPeerShm(pid, fd, size int) (*shm, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	f, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil || st.Size < int64(size) {
		unix.Close(f)
		return nil, fmt.Errorf("%s: segment too small or unreadable", path)
	}
	mem, err := unix.Mmap(f, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(f)
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return &shm{fd: f, mem: mem}, nil
}

// close unmaps and closes the file.
func (s *shm) close() {
	if s == nil {
		return
	}
	if s.mem != nil {
		unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// futexWait sleeps while *addr == val, at most d. Spurious returns are fine.
func futexWait(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexOpWait,
		uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes the waiters on addr (shared, not private: the word lives in a memfd).
func futexWake(addr *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexOpWake,
		uintptr(1<<30), 0, 0, 0)
}

// pidfd watches one process.
type pidfd int

func openPidfd(pid int) (pidfd, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, err
	}
	return pidfd(fd), nil
}

// exited reports whether the process has exited (the pidfd is readable).
func (p pidfd) exited() bool {
	if p < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(p), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

func (p pidfd) close() {
	if p >= 0 {
		unix.Close(int(p))
	}
}

// cma moves bytes between this process's local buffers and pid's memory at raddr.
// write=true copies local to remote. It loops over partial transfers.
func cma(pid int, local [][]byte, raddr uint64, write bool) error {
	var iov [16]unix.Iovec
	for len(local) > 0 {
		n := 0
		var total uint64
		for n < len(local) && n < len(iov) {
			b := local[n]
			if len(b) > 0 {
				iov[n] = unix.Iovec{Base: &b[0]}
				iov[n].SetLen(len(b))
			} else {
				iov[n] = unix.Iovec{}
			}
			total += uint64(len(b))
			n++
		}
		rem := []unix.RemoteIovec{{Base: uintptr(raddr), Len: int(total)}}
		done := uint64(0)
		for done < total {
			var got int
			var err error
			if write {
				got, err = unix.ProcessVMWritev(pid, iov[:n], rem, 0)
			} else {
				got, err = unix.ProcessVMReadv(pid, iov[:n], rem, 0)
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if got <= 0 {
				return unix.EFAULT
			}
			done += uint64(got)
			if done < total {
				advanceIovec(iov[:n], uint64(got))
				rem[0].Base += uintptr(got)
				rem[0].Len -= got
			}
		}
		raddr += total
		local = local[n:]
	}
	return nil
}

// advanceIovec drops the first n bytes of iov in place.
func advanceIovec(iov []unix.Iovec, n uint64) {
	for i := range iov {
		if n == 0 {
			return
		}
		l := uint64(iov[i].Len) // (the field's width follows the platform's word)
		if l <= n {
			n -= l
			iov[i].SetLen(0)
			continue
		}
		iov[i].Base = (*byte)(unsafe.Add(unsafe.Pointer(iov[i].Base), n))
		iov[i].SetLen(int(l - n))
		n = 0
	}
}

// mlockRange pins [addr, addr+n) (page aligned).
func mlockRange(addr uintptr, n uintptr) error {
	_, _, e := unix.Syscall(unix.SYS_MLOCK, addr, n, 0)
	if e != 0 {
		return e
	}
	return nil
}

// munlockRange unpins [addr, addr+n) (page aligned).
func munlockRange(addr uintptr, n uintptr) error {
	_, _, e := unix.Syscall(unix.SYS_MUNLOCK, addr, n, 0)
	if e != 0 {
		return e
	}
	return nil
}

var pagemap struct {
	once sync.Once
	f    *os.File
}

// translate snapshots the page-map entries of the npages pages starting at addr:
// present bit and, for privileged processes, the page frame number. It returns nil
// when /proc/self/pagemap cannot be read.
func translate(addr uintptr, npages int) []uint64 {
	pagemap.once.Do(func() {
		pagemap.f, _ = os.Open("/proc/self/pagemap")
	})
	if pagemap.f == nil || npages <= 0 {
		return nil
	}
	buf := make([]byte, 8*npages)
	if _, err := pagemap.f.ReadAt(buf, int64(addr/uintptr(pageSize))*8); err != nil {
		return nil
	}
	out := make([]uint64, npages)
	for i := range out {
		out[i] = *(*uint64)(unsafe.Pointer(&buf[8*i]))
	}
	return out
}

var bootIDOnce struct {
	once sync.Once
	id   [16]byte
}

// bootID identifies this kernel boot: two processes share memory only when equal.
func bootID() [16]byte {
	bootIDOnce.once.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return
		}
		s := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		for i := 0; i < 16 && 2*i+1 < len(s); i++ {
			fmt.Sscanf(s[2*i:2*i+2], "%02x", &bootIDOnce.id[i])
		}
	})
	return bootIDOnce.id
}
func errNoPlatformErr() error { return nil }
