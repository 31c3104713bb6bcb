//go:build !linux

package main

// MemlockInfo is RLIMIT_MEMLOCK and what is already charged to it (Linux only).
type MemlockInfo struct {
	Error string `json:"error,omitempty"`
}

func memlockReport() MemlockInfo { return MemlockInfo{Error: "not supported on this platform"} }

// PtraceInfo says whether ranks may use cross-memory attach (Linux only).
type PtraceInfo struct {
	Error string `json:"error,omitempty"`
}

func ptraceReport() PtraceInfo {
	return PtraceInfo{Error: "cross-memory attach is Linux only"}
}

func runCMAProbe() bool { return false }

func printSys(p func(string, ...any), r Report) {
	p("RLIMIT_MEMLOCK: %s", r.Memlock.Error)
	p("ptrace / cross-memory attach: %s", r.Ptrace.Error)
}
