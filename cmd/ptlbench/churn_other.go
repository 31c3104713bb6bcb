//go:build !linux

package main

import (
	"context"
	"errors"
)

func init() {
	register(&test{
		name:    "churn",
		summary: "pin-cache coherence under mapping churn (needs Linux and userfaultfd)",
		run: func(context.Context, config) error {
			return errors.New("churn needs Linux (userfaultfd and /proc/self/pagemap)")
		},
	})
}
