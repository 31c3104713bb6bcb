// Command outside uses goportals from the README and godoc alone: under ptlrun each rank
// puts into its neighbour's memory, reads it back and takes a ticket from rank 0's counter.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"time"

	"github.com/goportals/goportals/rma"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := make([]byte, 64) // [0, 8): rank 0's counter; [8, ...): a neighbour's message
	w, err := rma.Open(ctx, mem)
	must(err)
	peer, msg := (w.Rank()+1)%w.Size(), fmt.Appendf(nil, "hello from rank %d", w.Rank())
	must(w.Put(peer, msg, 8))
	must(w.Flush(ctx))
	back := make([]byte, len(msg))
	must(w.ReadAt(ctx, peer, back, 8))
	ticket, err := rma.FetchAdd(ctx, w, 0, 0, uint64(1))
	must(err)
	must(w.Barrier(ctx))
	fmt.Printf("rank %d: read back %t, ticket %d, counter %d, got %q\n", w.Rank(), bytes.Equal(back, msg),
		ticket, binary.NativeEndian.Uint64(mem), bytes.TrimRight(mem[8:], "\x00"))
	must(w.Close(ctx))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
