package spin

// Pause executes one PAUSE instruction: the spin-wait hint of a poll loop whose
// round found nothing, so that it does not take the memory system and a sibling
// hyperthread (the two vCPUs of a small VM may be one core's two threads) from
// the thread that moves the data. It is a non-inlined call on purpose: one PAUSE
// per failed poll is the measured sweet spot of a ring's poll loop.
//
//go:noescape
func Pause()
