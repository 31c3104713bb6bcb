package bootstrap_test

import (
	"context"
	"fmt"

	"github.com/goportals/goportals/internal/bootstrap"
)

// Each rank publishes its address, fences, then reads its neighbour's. Run alone
// it is rank 0 of 1; under ptlrun every rank does the same.
func Example() {
	ctx := context.Background()
	b, err := bootstrap.Open(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	if err := b.Put("addr", fmt.Appendf(nil, "endpoint-%d", b.Rank())); err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Fence(ctx); err != nil {
		fmt.Println(err)
		return
	}
	next := (b.Rank() + 1) % b.Size()
	v, err := b.Get(ctx, next, "addr")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("rank %d of %d: neighbour at %s\n", b.Rank(), b.Size(), v)
	// Output: rank 0 of 1: neighbour at endpoint-0
}
