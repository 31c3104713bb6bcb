package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// cancelGrace bounds how long a collective whose context ended waits for the
// server to confirm its withdrawal (or its completion), and how long Close and
// Abort wait for their acknowledgement.
const cancelGrace = 5 * time.Second

// writeTimeout bounds one write to the server.
const writeTimeout = 10 * time.Second

// Client is the ptlrun backend of Bootstrap: one rank's authenticated
// connection to the launcher's Server. Its methods are safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	conn net.Conn
	wmu  sync.Mutex // serializes writes

	mu     sync.Mutex
	nextID uint32
	calls  map[uint32]chan reply1
	err    error         // terminal error once closed, aborted or lost
	done   chan struct{} // closed when the reader goroutine exits
}

// reply1 is one reply delivered to a waiting call.
type reply1 struct {
	st      uint8
	payload []byte
}

// Dial connects rank cfg.Rank to the server at cfg.Addr and authenticates with
// cfg.JobKey. ctx bounds the connection and the handshake.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, opErr("dial", cfg.Rank, "", errDetail(ErrBadRank, "rank %d of a job of %d", cfg.Rank, cfg.Size))
	}
	network, address, err := splitAddr(cfg.Addr)
	if err != nil {
		return nil, opErr("dial", cfg.Rank, "", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, opErr("dial", cfg.Rank, "", wrapErr(ErrLauncherLost, err))
	}
	// The handshake runs synchronously; ctx ending interrupts it through the deadline.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	err = handshake(conn, cfg)
	if !stop() || ctx.Err() != nil {
		if err == nil || ctx.Err() != nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		conn.Close()
		return nil, opErr("dial", cfg.Rank, "", err)
	}
	conn.SetDeadline(time.Time{})
	c := &Client{cfg: cfg, conn: conn, calls: map[uint32]chan reply1{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// handshake sends hello and reads its reply.
func handshake(conn net.Conn, cfg ClientConfig) error {
	conn.SetDeadline(time.Now().Add(writeTimeout))
	hello := newFrame(opHello, 0).u32(uint32(cfg.Rank)).u32(uint32(cfg.Size)).str(cfg.JobKey).bytes()
	if _, err := conn.Write(hello); err != nil {
		return wrapErr(ErrLauncherLost, err)
	}
	op, _, payload, err := readFrame(conn)
	if err != nil {
		if errors.Is(err, ErrProtocol) {
			return err
		}
		return wrapErr(ErrLauncherLost, err)
	}
	if op != opReply {
		return errDetail(ErrProtocol, "hello answered by op %d", op)
	}
	return replyErr(payload)
}

// replyErr decodes an error reply (status, message) into its error.
func replyErr(payload []byte) error {
	p := &parser{b: payload}
	st := p.u8()
	msg := p.str()
	if p.err != nil {
		return p.err
	}
	err := statusErr(st)
	if err != nil && msg != "" {
		return errDetail(err, "%s", msg)
	}
	return err
}

// read delivers replies to their calls until the connection ends.
func (c *Client) read() {
	var err error
	for {
		var op uint8
		var id uint32
		var payload []byte
		op, id, payload, err = readFrame(c.conn)
		if err != nil {
			break
		}
		if op != opReply || len(payload) < 1 {
			err = errDetail(ErrProtocol, "unexpected op %d from server", op)
			break
		}
		c.mu.Lock()
		ch, ok := c.calls[id]
		delete(c.calls, id)
		c.mu.Unlock()
		if ok {
			ch <- reply1{st: payload[0], payload: payload}
		}
	}
	c.mu.Lock()
	if c.err == nil {
		if !errors.Is(err, ErrProtocol) {
			err = wrapErr(ErrLauncherLost, err)
		}
		c.err = err
	}
	c.mu.Unlock()
	c.conn.Close()
	close(c.done)
}

// Rank returns this rank.
func (c *Client) Rank() int { return c.cfg.Rank }

// Size returns the job size.
func (c *Client) Size() int { return c.cfg.Size }

// write sends one frame.
func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.conn.Write(b); err != nil {
		c.conn.Close() // the reader then records the loss
		return wrapErr(ErrLauncherLost, err)
	}
	return nil
}

// terminal returns the error that ends every call once the client is done.
func (c *Client) terminal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// start registers a call and returns its id and reply channel.
func (c *Client) start() (uint32, chan reply1, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan reply1, 1)
	c.calls[id] = ch
	return id, ch, nil
}

// forget drops a call whose reply is no longer wanted.
func (c *Client) forget(id uint32) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// call sends a request built by mk and waits for its reply. A collective whose
// context ends is withdrawn on the server; its true outcome is returned if the
// server answers within cancelGrace.
func (c *Client) call(ctx context.Context, collective bool, mk func(id uint32) []byte) (reply1, error) {
	if err := ctx.Err(); err != nil {
		return reply1{}, err
	}
	id, ch, err := c.start()
	if err != nil {
		return reply1{}, err
	}
	if err := c.write(mk(id)); err != nil {
		c.forget(id)
		return reply1{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		return c.lastReply(ch)
	case <-ctx.Done():
	}
	if !collective {
		c.forget(id)
		return reply1{}, ctx.Err()
	}
	if err := c.write(newFrame(opCancel, 0).u32(id).bytes()); err != nil {
		c.forget(id)
		return reply1{}, err
	}
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.st == stCancelled {
			return reply1{}, ctx.Err()
		}
		return r, nil
	case <-c.done:
		return c.lastReply(ch)
	case <-t.C:
		c.forget(id)
		c.conn.Close()
		return reply1{}, wrapErr(ErrLauncherLost, fmt.Errorf("no answer to a cancel within %v: %w", cancelGrace, ctx.Err()))
	}
}

// lastReply returns the reply the reader delivered to ch before the connection
// ended (the server answers finalize and abort, then closes), or the terminal error.
func (c *Client) lastReply(ch chan reply1) (reply1, error) {
	select {
	case r := <-ch:
		return r, nil
	default:
		return reply1{}, c.terminal()
	}
}

// Put records value under key; the next Fence publishes it.
func (c *Client) Put(key string, value []byte) error {
	if err := checkPut(key, value); err != nil {
		return opErr("put", c.cfg.Rank, key, err)
	}
	if err := c.terminal(); err != nil {
		return opErr("put", c.cfg.Rank, key, err)
	}
	return opErr("put", c.cfg.Rank, key, c.write(newFrame(opPut, 0).str(key).val(value).bytes()))
}

// collective runs a Fence or Barrier.
func (c *Client) collective(ctx context.Context, name string, op uint8) error {
	r, err := c.call(ctx, true, func(id uint32) []byte { return newFrame(op, id).bytes() })
	if err == nil {
		err = replyErr(r.payload)
	}
	return opErr(name, -1, "", err)
}

// Fence publishes this rank's puts and waits for all ranks.
func (c *Client) Fence(ctx context.Context) error { return c.collective(ctx, "fence", opFence) }

// Barrier waits for all ranks.
func (c *Client) Barrier(ctx context.Context) error { return c.collective(ctx, "barrier", opBarrier) }

// Get returns the value rank published under key.
func (c *Client) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	if rank < 0 || rank >= c.cfg.Size {
		return nil, opErr("get", rank, key, errDetail(ErrBadRank, "rank %d of a job of %d", rank, c.cfg.Size))
	}
	r, err := c.call(ctx, false, func(id uint32) []byte { return newFrame(opGet, id).u32(uint32(rank)).str(key).bytes() })
	if err != nil {
		return nil, opErr("get", rank, key, err)
	}
	if r.st != stOK {
		return nil, opErr("get", rank, key, replyErr(r.payload))
	}
	p := &parser{b: r.payload[1:]}
	v := p.val()
	if err := p.done(); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	return v, nil
}

// finish sends a last request (finalize or abort), then closes the connection
// with terminal as the error of later calls.
func (c *Client) finish(name string, terminal error, mk func(id uint32) []byte) error {
	c.mu.Lock()
	if c.err != nil && !errors.Is(c.err, ErrLauncherLost) && !errors.Is(c.err, ErrProtocol) {
		c.mu.Unlock()
		return nil // already closed or aborted
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	r, err := c.call(ctx, false, mk)
	if err == nil {
		err = replyErr(r.payload)
	}
	c.mu.Lock()
	c.err = terminal
	c.mu.Unlock()
	c.conn.Close()
	<-c.done
	return opErr(name, -1, "", err)
}

// Abort asks the launcher to end the job with code and msg (cut to 1024 bytes).
func (c *Client) Abort(code int, msg string) error {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	return c.finish("abort", ErrAborted, func(id uint32) []byte {
		return newFrame(opAbort, id).u32(uint32(int32(code))).str(msg).bytes()
	})
}

// Close leaves the job cleanly and closes the connection.
func (c *Client) Close() error {
	return c.finish("close", ErrClosed, func(id uint32) []byte { return newFrame(opFinalize, id).bytes() })
}
