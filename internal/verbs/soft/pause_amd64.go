package soft

// cpuPause executes one PAUSE instruction: the spin-wait hint that keeps a polling
// loop from flooding the memory system and the sibling hyperthread. It is a
// non-inlined call on purpose (measured on 2-core machines: the sweet spot for the poll loop).
//
//go:noescape
func cpuPause()
