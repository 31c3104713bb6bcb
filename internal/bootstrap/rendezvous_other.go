//go:build !linux

package bootstrap

// localRendezvous reports that this system has no abstract unix sockets: a
// job there meets at the address given by EnvRendezvous.
func localRendezvous(id string) (network, addr string, ok bool) {
	return "", "", false
}
