package verbs

// Message mode is an optional provider feature for small SENDs: the receiver takes
// them straight from where the provider received them, with no posted receive
// buffer and no completion entry, and the sender hands them over without a work
// request. A provider offers it by implementing MessageQP on its queue pairs,
// MessageCQ on its completion queues and MessageSender on its queue pairs;
// consumers find it by type assertion and, when a provider lacks it (or a queue
// pair's transport cannot offer it), work as without it: posted receives and
// completions. Message mode changes nothing for the peer: a SEND is a SEND, and
// whether it is handed over as a message is decided by the receiving queue pair.

// MessageHandler receives one message. tag is the value the receiving queue pair
// was given in EnableMessages; msg is the whole payload of the SEND.
//
// msg is the provider's own memory (typically the receive ring, read in place):
// it is valid only until the handler returns, and the handler must neither keep
// it nor write to it. The handler runs inside the provider's progress: it may
// post sends and RDMA work to any queue pair (including the one the message came
// from; a transfer the provider runs synchronously then runs inside the handler),
// and it may poll completion queues (such a nested poll drives no progress and
// hands out no messages), but it must never close a queue pair, a completion
// queue or the context, nor call PollMessages again. It returns false to end the
// PollMessages call after this message (the message is consumed either way).
type MessageHandler func(tag uint64, msg []byte) bool

// MessageQP is a queue pair that can hand small incoming SENDs to the consumer as
// messages (see MessageCQ).
type MessageQP interface {
	// EnableMessages switches message mode on: from then on every incoming
	// single-fragment SEND without immediate of at most maxLen bytes is handed to
	// the MessageHandler of a PollMessages call on the queue pair's receive
	// completion queue, with tag; it consumes no posted receive and makes no
	// completion. Other incoming work (longer SENDs, SENDs with immediate, RDMA
	// WRITEs with immediate) still consumes posted receives. Order is kept per
	// queue pair: the provider hands out a message only after everything the
	// peer sent before it was applied, the completions of those receives pushed
	// to the completion queue first (a consumer that needs both kinds in order
	// polls the completion queue before messages while it expects such
	// completions). Call it before Connect. It returns ErrNotSupported when the
	// queue pair cannot offer the mode (it then works as before).
	EnableMessages(tag uint64, maxLen int) error
}

// MessageCQ is a completion queue that hands out messages.
type MessageCQ interface {
	// PollMessages calls h for up to max messages that arrived on queue pairs in
	// message mode whose receive completion queue this is, in arrival order per
	// queue pair, and returns how many it handed out. Like Poll it never blocks
	// and allocates nothing; unlike Poll it drives no other progress, so a
	// consumer must still call Poll regularly (completions, and the receive of
	// anything that is not a message). It returns 0 when another goroutine is
	// running the provider's progress. Wait also returns when messages are ready.
	PollMessages(h MessageHandler, max int) (int, error)
}

// MessageSender is a queue pair that sends small SENDs without a work request.
type MessageSender interface {
	// SendMessage sends msg as one unsignaled SEND, copying it before it
	// returns (like SendInline). It uses no send queue entry and makes no
	// completion: a failure of the connection shows as the queue pair's later
	// work failing. It keeps the order with the work requests posted before it:
	// when it cannot send at once (the queue pair has work queued that is not
	// issued yet, the provider's buffer is full, the message is too long, or the
	// transport does not offer it) it returns ErrNoResources having sent nothing,
	// and the caller posts the SEND as a work request instead. Any other error
	// is the error PostSend would return.
	SendMessage(msg []byte) error
}
