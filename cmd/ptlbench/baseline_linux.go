package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// serveCMATarget is the target of the process_vm_writev baseline: it maps size
// bytes, touches every page, says "addr ADDRESS", then answers "sum" with the
// CRC-32 (IEEE) of the memory, until its input ends.
func serveCMATarget(in io.Reader, out io.Writer, sizeText string) error {
	size, err := strconv.Atoi(sizeText)
	if err != nil || size < 1 {
		return fmt.Errorf("bad size %q", sizeText)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	defer unix.Munmap(mem)
	page := unix.Getpagesize()
	for i := 0; i < size; i += page {
		mem[i] = 0
	}
	if _, err := fmt.Fprintf(out, "addr %d\n", uintptr(unsafe.Pointer(&mem[0]))); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "sum":
			if _, err := fmt.Fprintf(out, "%d\n", crc32.ChecksumIEEE(mem)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown command %q", sc.Text())
		}
	}
	return sc.Err()
}

// cmaBandwidth writes size bytes msgs times into a helper process's memory with
// process_vm_writev (after warmup untimed writes), checks that the memory holds
// what was written, and returns MB/s. A kernel without the call, or one that
// forbids it (ptrace rules), gives errNotSupported.
func cmaBandwidth(ctx context.Context, size, warmup, msgs int) (v float64, err error) {
	if size < 1 || msgs < 1 || warmup < 0 {
		return 0, fmt.Errorf("%w: process_vm_writev needs a positive size and count", errUsage)
	}
	h, greeting, err := startHelper(ctx, helperCMATarget, cmaSizeEnv+"="+strconv.Itoa(size))
	if err != nil {
		return 0, err
	}
	defer func() {
		if e := h.stop(); e != nil && err == nil {
			err = fmt.Errorf("process_vm_writev target: %w", e)
		}
	}()
	var addr uintptr
	if _, err := fmt.Sscanf(greeting, "addr %d", &addr); err != nil {
		return 0, fmt.Errorf("process_vm_writev target's greeting %q: %v", greeting, err)
	}
	src := pattern(2, size, size)
	pid := h.cmd.Process.Pid
	write := func() error {
		for off := 0; off < size; {
			local := []unix.Iovec{{Base: &src[off]}}
			local[0].SetLen(size - off)
			remote := []unix.RemoteIovec{{Base: addr + uintptr(off), Len: size - off}}
			n, err := unix.ProcessVMWritev(pid, local, remote, 0)
			switch {
			case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
				return fmt.Errorf("process_vm_writev: %w: %v", errNotSupported, err)
			case err != nil:
				return fmt.Errorf("process_vm_writev: %w", err)
			case n <= 0:
				return fmt.Errorf("process_vm_writev wrote %d bytes of %d", n, size-off)
			}
			off += n
		}
		return nil
	}
	for i := 0; i < warmup; i++ {
		if err := write(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := 0; i < msgs; i++ {
		if err := write(); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	sum, err := h.ask("sum")
	if err != nil {
		return 0, fmt.Errorf("process_vm_writev target: %w", err)
	}
	if want := strconv.FormatUint(uint64(crc32.ChecksumIEEE(src)), 10); sum != want {
		return 0, fmt.Errorf("process_vm_writev: the target holds CRC %s, we wrote CRC %s", sum, want)
	}
	return mbPerSec(size, msgs, d), nil
}
