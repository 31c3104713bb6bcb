package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinToLastCPU pins the calling thread (locked by the caller) to the last CPU
// this process may run on, and returns its number.
func pinToLastCPU() (string, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "", fmt.Errorf("sched_getaffinity: %w", err)
	}
	last := -1
	for c := 0; c < 1024; c++ { // a CPUSet holds 1024 CPUs
		if set.IsSet(c) {
			last = c
		}
	}
	if last < 0 {
		return "any", nil
	}
	var one unix.CPUSet
	one.Set(last)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return "", fmt.Errorf("sched_setaffinity to cpu %d: %w", last, err)
	}
	return strconv.Itoa(last), nil
}

// loadAverage returns the host's one-minute load average and its number of
// runnable tasks (from /proc/loadavg), or "" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return ""
	}
	return fmt.Sprintf("load average %s (1 min), %s runnable/total tasks", f[0], f[3])
}
