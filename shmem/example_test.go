package shmem_test

import (
	"context"
	"fmt"

	"github.com/goportals/goportals/shmem"
)

// A PE puts to its right neighbour, adds to a counter at PE 0 and meets the
// others at a barrier. Run under the launcher (ptlrun -n 4 prog) every PE
// takes part; run alone, the process is PE 0 of 1 and its neighbour is itself.
func Example() {
	ctx := context.Background()
	w, err := shmem.Init(ctx, &shmem.Options{HeapSize: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close(ctx)
	me, n := w.MyPE(), w.NPEs()
	right := (me + 1) % n

	box, _ := shmem.Calloc[int64](ctx, w, 4)      // same offset on every PE
	counter, _ := shmem.Calloc[uint64](ctx, w, 1) // lives on PE 0

	// Put four values into the right neighbour's box, and count at PE 0.
	if err := shmem.Put(ctx, w.Ctx(), box, []int64{int64(me), 1, 2, 3}, right); err != nil {
		fmt.Println(err)
		return
	}
	if err := shmem.AtomicAdd(ctx, w.Ctx(), counter, 10, 0); err != nil {
		fmt.Println(err)
		return
	}
	// The barrier completes every PE's operations.
	if err := w.BarrierAll(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("box:", box.Local())
	if me == 0 {
		fmt.Println("counter:", counter.Local()[0], "from", n, "PEs")
	}
	old, _ := shmem.AtomicFetchAdd(ctx, w.Ctx(), counter, 1, 0)
	fmt.Println("fetched", old)
	// Output:
	// box: [0 1 2 3]
	// counter: 10 from 1 PEs
	// fetched 10
}
