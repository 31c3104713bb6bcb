package soft

import (
	"github.com/goportals/goportals/internal/envknob"
)

// EnvTCPCC names the variable that picks the congestion control of the TCP
// links: PTL_SOFT_TCP_CC=system keeps the kernel's default
// (net.ipv4.tcp_congestion_control); another value names one the kernel allows
// (net.ipv4.tcp_allowed_congestion_control); unset, the links run reno.
//
// Why not the kernel's default: where it is bbr, TCP paces every segment
// itself when the device has no fq queue to do it (loopback, veth, which is
// what ranks in two namespaces of one host use), with a timer per burst and a
// model update per ACK. Over loopback here that cost a third of the 1 MiB put
// bandwidth (bbr 4.7 to 5.1 GB/s, reno 7.1 to 7.8 GB/s, four alternated runs)
// and 2.6% of the 8-byte put latency (a paired median of 12 alternated runs).
// Reno is always built in and allowed to every user. Congestion control is the
// sender's: each end sets its own.
const EnvTCPCC = string(envknob.SoftTCPCC)

// defaultTCPCC is the links' congestion control when EnvTCPCC is unset.
const defaultTCPCC = "reno"

// tcpCC returns the congestion control the links set ("": the kernel's
// default) and whether the user named it (a failure to set it is then an
// error; the default's is not: the kernel's stays).
func tcpCC() (name string, explicit bool) {
	switch v := envknob.Get(envknob.SoftTCPCC); v {
	case "":
		return defaultTCPCC, false
	case "system":
		return "", true
	default:
		return v, true
	}
}
