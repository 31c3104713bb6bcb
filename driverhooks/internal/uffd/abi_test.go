package uffd

import (
	"testing"
	"unsafe"
)

// The ioctl numbers as the kernel header computes them (x86-64, generic _IOC layout).
func TestIoctlNumbers(t *testing.T) {
	cases := []struct {
		name      string
		got, want uintptr
	}{
		{"UFFDIO_API", IoctlAPI, 0xC018AA3F},
		{"UFFDIO_REGISTER", IoctlRegister, 0xC020AA00},
		{"UFFDIO_UNREGISTER", IoctlUnregister, 0x8010AA01},
		{"UFFDIO_WAKE", IoctlWake, 0x8010AA02},
		{"UFFDIO_WRITEPROTECT", IoctlWriteProtect, 0xC018AA06},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestStructSizes(t *testing.T) {
	if s := unsafe.Sizeof(Range{}); s != rangeSize {
		t.Errorf("uffdio_range size %d, want %d", s, rangeSize)
	}
	if s := unsafe.Sizeof(APIMsg{}); s != apiSize {
		t.Errorf("uffdio_api size %d, want %d", s, apiSize)
	}
	if s := unsafe.Sizeof(RegisterMsg{}); s != registerSize {
		t.Errorf("uffdio_register size %d, want %d", s, registerSize)
	}
	if s := unsafe.Sizeof(WriteProtectMsg{}); s != wpSize {
		t.Errorf("uffdio_writeprotect size %d, want %d", s, wpSize)
	}
	if MsgArgOff+8*MsgArgWords != MsgSize {
		t.Errorf("uffd_msg layout: arg at %d + %d words != %d", MsgArgOff, MsgArgWords, MsgSize)
	}
}
