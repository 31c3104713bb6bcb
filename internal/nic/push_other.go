//go:build !linux

package nic

import "time"

// napFor blocks the caller for about d.
func napFor(d time.Duration) { time.Sleep(d) }
