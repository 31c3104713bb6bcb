//go:build !linux

package soft

// setUserTimeout does nothing where TCP_USER_TIMEOUT is unknown: keepalive
// alone watches the stream there.
func setUserTimeout(fd int) error { return nil }
