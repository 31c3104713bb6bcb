//go:build !linux

package main

import (
	"context"
	"fmt"
	"io"
)

// serveCMATarget: process_vm_writev exists only on Linux.
func serveCMATarget(io.Reader, io.Writer, string) error {
	return fmt.Errorf("process_vm_writev target: %w", errNotSupported)
}

// cmaBandwidth: process_vm_writev exists only on Linux.
func cmaBandwidth(context.Context, int, int, int) (float64, error) {
	return 0, fmt.Errorf("process_vm_writev (Linux only): %w", errNotSupported)
}
