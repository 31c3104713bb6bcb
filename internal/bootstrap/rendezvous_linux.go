package bootstrap

import (
	"os"
	"strconv"
)

// localRendezvous names the meeting point of a job whose ranks all run on
// this node: an abstract unix socket (no file, gone with its listener), one
// per job and user, visible within this network namespace.
func localRendezvous(id string) (network, addr string, ok bool) {
	return "unix", "@goportals-" + strconv.Itoa(os.Getuid()) + "-" + id, true
}
