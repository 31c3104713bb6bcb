package loopback

import "errors"

// Causes carried by the verbs errors this provider returns (matched with errors.Is).
var (
	errNotLoopbackAddress = errors.New("loopback: not a loopback queue pair address")
	errUnknownQP          = errors.New("loopback: no queue pair at that address (closed or never created)")
	errPeerTaken          = errors.New("loopback: the peer queue pair is connected to another queue pair")
	errCQOverrun          = errors.New("loopback: completion queue overrun; completions were lost")
	errForeignObject      = errors.New("loopback: object of another provider or context")
	errKeysExhausted      = errors.New("loopback: memory key space exhausted")
)
