package soft

import "time"

// A link's failure budget. Keepalive probes an idle stream (5 s idle, then 5
// probes a second apart), and the user timeout (Linux's TCP_USER_TIMEOUT) fails a
// stream whose sent data stays unacknowledged as long: a peer node that vanishes
// without a FIN or a reset fails the link, and its outstanding work completes
// with errors, about 10 seconds later, idle or in the middle of a transfer.
const tcpFailAfter = 10 * time.Second

// tcpConnectTimeout bounds the wait of the endpoint that does not dial (the
// higher one) for its peer's connection: the peer dials within its dial and hello
// budgets (10 s each) of its Connect, so a link still without a connection after
// this deadline fails, and work posted meanwhile completes with errors. A
// variable for the tests.
var tcpConnectTimeout = 30 * time.Second
