//go:build !linux

package main

// pinToLastCPU: without Linux's sched_setaffinity the spinner is not pinned;
// it still keeps one core's worth of work runnable.
func pinToLastCPU() (string, error) { return "any", nil }

// loadAverage: unknown here.
func loadAverage() string { return "" }
