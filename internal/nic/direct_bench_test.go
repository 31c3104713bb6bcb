package nic

import (
	"testing"

	"github.com/goportals/goportals/md"
)

// BenchmarkDirectPut8B floods 8-byte puts into a persistent list entry over
// md.Alloc memory of another NI (a second process object in this process, so the
// direct path opens its table through /proc/self), acknowledged on a counter:
// the cost of one direct put, and (with -benchmem) that it allocates nothing.
func BenchmarkDirectPut8B(b *testing.B) {
	nis := newNIs(b, 2, NINoMatching|NIPhysical)
	ct, _ := nis[1].CTAlloc()
	a, err := md.Alloc(4096)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Free()
	nis[1].PTAlloc(0, nil, 1)
	if _, err := nis[1].LEAppend(1, LESpec{Start: a.Bytes(), CT: ct, UID: UIDAny,
		Options: MEOpPut | MEEventCTComm | MEEventSuccessDisable}, PriorityList, 0); err != nil {
		b.Fatal(err)
	}
	act, _ := nis[0].CTAlloc()
	m, _ := nis[0].MDBind(MDSpec{Start: make([]byte, 64), CT: act, Options: MDEventCTAck})
	dst, _ := nis[1].PhysID()
	for i := 0; i < 10; i++ { // connect, open the window
		Put(m, 0, 8, CTAckReq, dst, 1, 0, 0, 0, 0)
	}
	before := nis[0].DirectOps()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Put(m, 0, 8, CTAckReq, dst, 1, 0, uint64(i%512)*8, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := nis[0].DirectOps() - before; n != uint64(b.N) {
		b.Fatalf("%d of %d puts went direct", n, b.N)
	}
}
