package driverhooks

// Invalidate reports to the process-wide notifier (Default) that the pages of
// [addr, addr+length) change: for memory the user unmaps or remaps by means the
// monitor cannot see, and for memory the library maps itself (md.Alloc calls it
// before freeing). Every pin cache drops its registrations of the range before its
// next lookup trusts them.
func Invalidate(addr, length uintptr) { Default().Invalidate(addr, length) }
