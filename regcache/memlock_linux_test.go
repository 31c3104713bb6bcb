//go:build linux

package regcache

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"golang.org/x/sys/unix"
)

// VmLck follows mlock: what the cache reports is what the kernel counts.
func TestReadLockedMemoryFollowsMlock(t *testing.T) {
	before, err := ReadLockedMemory()
	if err != nil {
		t.Fatal(err)
	}
	mem := pages(16)
	if err := unix.Mlock(mem); err != nil {
		t.Skipf("mlock of 64 KiB: %v", err)
	}
	during, err := ReadLockedMemory()
	unix.Munlock(mem)
	if err != nil {
		t.Fatal(err)
	}
	if d := during.Locked - before.Locked; d != uint64(len(mem)) {
		t.Fatalf("VmLck grew by %d bytes for a %d-byte mlock (before %+v, during %+v)", d, len(mem), before, during)
	}
}

func TestMlockRefusalIsMemlock(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ENOMEM, unix.EPERM, unix.EAGAIN} {
		if err := mlockError(errno); !errors.Is(err, verbs.ErrMemlock) || !errors.Is(err, errno) {
			t.Errorf("%v: %v does not match verbs.ErrMemlock and the errno", errno, err)
		}
	}
	if err := mlockError(unix.EINVAL); errors.Is(err, verbs.ErrMemlock) {
		t.Errorf("EINVAL classified as a memlock refusal: %v", err)
	}
}
