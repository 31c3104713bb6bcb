package bootstrap

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pmiProto is one PMI wire version (PMI-1 or PMI-2) as the PMI backend drives
// it. The backend serializes the calls; each is one request and its reply.
// Keys and values passed in are already checked against limits and pmiText.
type pmiProto interface {
	// version returns 1 or 2.
	version() int
	// limits returns the longest native key and value, in bytes, that the
	// launcher stores intact.
	limits() (maxKey, maxVal int)
	put(key, value string) error
	// fence publishes the puts and waits for every rank.
	fence() error
	// barrier waits for every rank.
	barrier() error
	// get returns the value published under key, found false if none.
	get(key string) (value string, found bool, err error)
	finalize() error
	// abort asks the launcher to end the job; it does not wait for an answer.
	abort(code int, msg string) error
}

// pmiConn is the byte stream to the launcher's PMI server.
type pmiConn struct {
	c net.Conn
	r *bufio.Reader
}

func newPMIConn(c net.Conn) *pmiConn { return &pmiConn{c: c, r: bufio.NewReaderSize(c, 4096)} }

// write sends b whole.
func (p *pmiConn) write(b []byte) error {
	_, err := p.c.Write(b)
	return err
}

// PMI is the Bootstrap of a process started by a PMI launcher: MPICH hydra
// (mpiexec, PMI-1 over PMI_FD or, with -pmi-port, over PMI_PORT and PMI_ID, or
// PMI-2 over PMI_FD) or Slurm (srun --mpi=pmi2, PMI-2 over PMI_FD).
//
// Key K put by rank R before the E-th Fence is stored under the native key
// "R/E/K": a launcher need never replace a value (hydra's PMI-2 server keeps
// the first value put under a key, measured with hydra 4.0.2), and Get looks
// for the newest epoch holding the key. Values are base64 (URL alphabet, no
// padding) split into chunks that fit the launcher's value limit: "R/E/K"
// holds "N:" and the first chunk, "R/E/K/i" chunk i of N.
// Every native key and value is checked against the limits the launcher
// reports before it is sent, because hydra ends the whole job on a malformed
// request. Puts are kept in the process until Fence sends them.
//
// A Get asks the launcher once per Fence since that key of that rank was last
// read (newest first), plus once per further chunk of the value.
//
// Under PMI-2 without PMI_JOBID (hydra), Fence and Barrier also wait until
// every rank's marker for the fence is visible, since hydra 4.0 answers
// kvs-fence before the other ranks arrive.
//
// PMI cannot withdraw a request: a call whose context ends while its request
// is in flight returns the context's error and leaves the backend unusable
// (later calls fail with ErrClosed saying so).
type PMI struct {
	proto  pmiProto
	conn   *pmiConn
	rank   int
	size   int
	maxKey int
	maxVal int
	keys   *keyShare // the job key, learned at the first Fence (nil: not asked)

	wire sync.Mutex // held for each exchange with the launcher

	mu       sync.Mutex
	pending  map[string][]byte
	epoch    int                 // completed Fences
	hints    map[rankKey]keyHint // what earlier Gets learned
	terminal error               // set once closed, aborted, lost or desynchronized
}

// rankKey names a key of a rank.
type rankKey struct {
	rank int
	key  string
}

// keyHint records, for a key of a rank, the newest epoch known to hold it (0
// if none) and the epoch through which that is known.
type keyHint struct{ found, checked int }

// newPMI wraps an initialized protocol into the backend.
func newPMI(proto pmiProto, conn *pmiConn, rank, size int) (*PMI, error) {
	maxKey, maxVal := proto.limits()
	if maxVal < 16 || maxKey < 8 {
		return nil, errDetail(ErrNotSupported, "launcher limits keys to %d and values to %d bytes: too small to carry any value", maxKey, maxVal)
	}
	return &PMI{proto: proto, conn: conn, rank: rank, size: size, maxKey: maxKey, maxVal: maxVal, pending: map[string][]byte{}, hints: map[rankKey]keyHint{}}, nil
}

// Rank returns this process's rank.
func (p *PMI) Rank() int { return p.rank }

// Size returns the job size.
func (p *PMI) Size() int { return p.size }

// Version returns the PMI version spoken with the launcher, 1 or 2.
func (p *PMI) Version() int { return p.proto.version() }

// nativeKey returns the native key of chunk i of key K of rank r put in epoch e.
func nativeKey(r, e int, key string, chunk int) string {
	k := strconv.Itoa(r) + "/" + strconv.Itoa(e) + "/" + key
	if chunk == 0 {
		return k
	}
	return k + "/" + strconv.Itoa(chunk)
}

// chunks splits the encoded value enc into native values under limit maxVal:
// the first is "N:" plus the first piece.
func chunks(enc string, maxVal int) []string {
	for n := 1; ; n++ {
		first := maxVal - len(strconv.Itoa(n)) - 1
		if first+(n-1)*maxVal < len(enc) {
			continue
		}
		out := make([]string, n)
		k := min(first, len(enc))
		out[0] = strconv.Itoa(n) + ":" + enc[:k]
		enc = enc[k:]
		for i := 1; i < n; i++ {
			k = min(maxVal, len(enc))
			out[i] = enc[:k]
			enc = enc[k:]
		}
		return out
	}
}

// checkNative checks that a value of n bytes under key fits the launcher's
// limits once encoded and chunked.
func (p *PMI) checkNative(key string, n int) error {
	c := chunks(strings.Repeat("A", base64.RawURLEncoding.EncodedLen(n)), p.maxVal)
	p.mu.Lock()
	e := p.epoch + 1
	p.mu.Unlock()
	if k := nativeKey(p.size-1, e, key, len(c)-1); len(k) > p.maxKey {
		return errDetail(ErrInvalidKey, "native PMI key %q (%d bytes) exceeds the launcher's limit of %d", clip(k), len(k), p.maxKey)
	}
	return nil
}

// Put records value under key until the next Fence.
func (p *PMI) Put(key string, value []byte) error {
	if err := checkPut(key, value); err != nil {
		return opErr("put", p.rank, key, err)
	}
	if err := p.checkNative(key, len(value)); err != nil {
		return opErr("put", p.rank, key, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal != nil {
		return opErr("put", p.rank, key, p.terminal)
	}
	p.pending[key] = append([]byte(nil), value...)
	return nil
}

// exchange runs fn under the wire lock with ctx bounding its I/O. An I/O
// failure or a reply out of step ends the backend: the stream can no longer
// be trusted.
func (p *PMI) exchange(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.wire.Lock()
	defer p.wire.Unlock()
	p.mu.Lock()
	term := p.terminal
	p.mu.Unlock()
	if term != nil {
		return term
	}
	set := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		p.conn.c.SetDeadline(time.Unix(1, 0))
		close(set)
	})
	err := fn()
	if !stop() {
		// The deadline is being set: wait for it, then clear it; if the
		// exchange did not complete, the stream is out of step for good.
		<-set
		p.conn.c.SetDeadline(time.Time{})
		if err != nil && !isReplyErr(err) {
			p.fail(errDetail(ErrClosed, "an earlier PMI request was interrupted by its context (%v); PMI cannot withdraw a request, so this connection is unusable", ctx.Err()))
			return ctx.Err()
		}
	}
	if err != nil && !isReplyErr(err) {
		var d *detail
		if !errors.As(err, &d) {
			err = wrapErr(ErrLauncherLost, err)
		}
		p.fail(err)
	}
	return err
}

// replyErr marks a well-formed reply that reports a failure: the stream is
// still in step.
type replyError struct{ error }

func (e replyError) Unwrap() error { return e.error }

func isReplyErr(err error) bool {
	var r replyError
	return errors.As(err, &r)
}

// fail records the first terminal error.
func (p *PMI) fail(err error) {
	p.mu.Lock()
	if p.terminal == nil {
		p.terminal = err
	}
	p.mu.Unlock()
}

// Fence sends the pending puts to the launcher and waits for every rank.
func (p *PMI) Fence(ctx context.Context) error {
	p.mu.Lock()
	pending := p.pending
	p.pending = map[string][]byte{}
	p.mu.Unlock()
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	err := p.exchange(ctx, func() error {
		p.mu.Lock()
		e := p.epoch + 1
		p.mu.Unlock()
		for _, k := range keys {
			enc := base64.RawURLEncoding.EncodeToString(pending[k])
			for i, c := range chunks(enc, p.maxVal) {
				nk := nativeKey(p.rank, e, k, i)
				if len(nk) > p.maxKey || len(c) > p.maxVal {
					// Put checked this with the epoch then current; a launcher
					// must never see an oversized request.
					return replyError{errDetail(ErrInvalidKey, "native PMI key %q no longer fits the launcher's limit of %d", clip(nk), p.maxKey)}
				}
				if err := p.proto.put(nk, c); err != nil {
					return err
				}
			}
		}
		if err := p.proto.fence(); err != nil {
			return err
		}
		p.mu.Lock()
		p.epoch = e
		p.mu.Unlock()
		return nil
	})
	if err == nil && p.keys != nil {
		err = p.keys.learn(ctx, p)
	}
	return opErr("fence", -1, "", err)
}

// Barrier waits for every rank.
func (p *PMI) Barrier(ctx context.Context) error {
	return opErr("barrier", -1, "", p.exchange(ctx, p.proto.barrier))
}

// maxChunks is the most chunks a value of MaxValueLen bytes takes under limit maxVal.
func maxChunks(maxVal int) int {
	return len(chunks(strings.Repeat("A", base64.RawURLEncoding.EncodedLen(MaxValueLen)), maxVal))
}

// Get returns the value rank published under key.
func (p *PMI) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	if rank < 0 || rank >= p.size {
		return nil, opErr("get", rank, key, errDetail(ErrBadRank, "rank %d of a job of %d", rank, p.size))
	}
	if err := p.checkNative(key, 0); err != nil {
		return nil, opErr("get", rank, key, err)
	}
	var out []byte
	err := p.exchange(ctx, func() error {
		rk := rankKey{rank, key}
		p.mu.Lock()
		h, epoch := p.hints[rk], p.epoch
		p.mu.Unlock()
		for e := epoch; e > h.checked; e-- {
			if len(nativeKey(rank, e, key, 0)) > p.maxKey {
				continue // no rank could have put it so
			}
			v, found, err := p.getEpoch(rank, e, key)
			if err != nil {
				return err
			}
			if found {
				out = v
				p.mu.Lock()
				p.hints[rk] = keyHint{found: e, checked: epoch}
				p.mu.Unlock()
				return nil
			}
		}
		p.mu.Lock()
		p.hints[rk] = keyHint{found: h.found, checked: epoch}
		p.mu.Unlock()
		if h.found == 0 {
			return replyError{ErrNotFound}
		}
		v, found, err := p.getEpoch(rank, h.found, key)
		if err == nil && !found {
			err = replyError{errDetail(ErrProtocol, "native key %q vanished from the launcher", nativeKey(rank, h.found, key, 0))}
		}
		out = v
		return err
	})
	if err != nil {
		return nil, opErr("get", rank, key, err)
	}
	return out, nil
}

// getEpoch reads and decodes the value of key that rank put in epoch e.
func (p *PMI) getEpoch(rank, e int, key string) ([]byte, bool, error) {
	nk := nativeKey(rank, e, key, 0)
	first, found, err := p.proto.get(nk)
	if err != nil || !found {
		return nil, false, err
	}
	ns, rest, ok := strings.Cut(first, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 || n > maxChunks(p.maxVal) {
		return nil, false, replyError{errDetail(ErrProtocol, "value of native key %q does not start with a chunk count: %q", nk, clip(first))}
	}
	var enc strings.Builder
	enc.WriteString(rest)
	for i := 1; i < n; i++ {
		c, found, err := p.proto.get(nativeKey(rank, e, key, i))
		if err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, replyError{errDetail(ErrProtocol, "chunk %d of %d of native key %q is missing", i, n, nk)}
		}
		enc.WriteString(c)
	}
	v, err := base64.RawURLEncoding.DecodeString(enc.String())
	if err != nil || len(v) > MaxValueLen {
		return nil, false, replyError{errDetail(ErrProtocol, "value of native key %q is not a valid encoded value", nk)}
	}
	return v, true, nil
}

// Abort asks the launcher to end the job. The message also goes to standard
// error, since PMI-1 carries no message.
func (p *PMI) Abort(code int, msg string) error {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	fmt.Fprintf(os.Stderr, "goportals: rank %d aborts the job (code %d): %s\n", p.rank, code, msg)
	ctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	err := p.exchange(ctx, func() error { return p.proto.abort(code, msg) })
	p.fail(ErrAborted)
	p.conn.c.Close()
	return opErr("abort", -1, "", err)
}

// Close finalizes the PMI connection and closes it. Close is idempotent.
func (p *PMI) Close() error {
	p.mu.Lock()
	if p.terminal != nil && (errors.Is(p.terminal, ErrAborted) || p.terminal == ErrClosed) {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
	defer cancel()
	err := p.exchange(ctx, p.proto.finalize)
	p.mu.Lock()
	if p.terminal != nil {
		err = nil // already broken: nothing left to finalize
	}
	p.terminal = ErrClosed
	p.mu.Unlock()
	p.conn.c.Close()
	return opErr("close", -1, "", err)
}

// expect1 reads a PMI-1 line and checks that its cmd is cmd.
func (p *pmiConn) expect1(cmd string) (pmiMsg, error) {
	m, err := readPMI1(p.r)
	return expect(m, err, cmd)
}

// expect2 reads a PMI-2 message and checks that its cmd is cmd.
func (p *pmiConn) expect2(cmd string) (pmiMsg, error) {
	m, err := readPMI2(p.r)
	return expect(m, err, cmd)
}

// expect checks a reply's cmd.
func expect(m pmiMsg, err error, cmd string) (pmiMsg, error) {
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return pmiMsg{}, err
	}
	if m.cmd != cmd {
		return pmiMsg{}, errDetail(ErrProtocol, "expected a %s reply, got %v", cmd, m)
	}
	return m, nil
}

// checkRC turns a reply whose rc is not 0 into an error that leaves the
// stream usable.
func checkRC(m pmiMsg, what string) error {
	rc, ok := m.get("rc")
	if !ok || rc == "0" {
		return nil
	}
	msg, _ := m.get("msg")
	return replyError{errDetail(ErrProtocol, "launcher refused %s: rc=%s %s", what, rc, msg)}
}

// lookupInt reads a decimal environment variable.
func lookupInt(lookup func(string) (string, bool), name string) (int, error) {
	v, ok := lookup(name)
	if !ok {
		return 0, errDetail(ErrBadEnv, "%s is not set", name)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, errDetail(ErrBadEnv, "%s=%q is not a decimal number", name, v)
	}
	return n, nil
}

// pmiFDConn turns the inherited PMI_FD descriptor into a connection.
func pmiFDConn(lookup func(string) (string, bool)) (net.Conn, error) {
	fd, err := lookupInt(lookup, "PMI_FD")
	if err != nil {
		return nil, err
	}
	if fd < 0 {
		return nil, errDetail(ErrBadEnv, "PMI_FD=%d is negative", fd)
	}
	return fdConn(fd)
}

// handshakeCtx runs fn with ctx bounding the connection's I/O.
func handshakeCtx(ctx context.Context, c net.Conn, fn func() error) error {
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	err := fn()
	if !stop() || ctx.Err() != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	c.SetDeadline(time.Time{})
	if err != nil {
		var d *detail
		if !errors.As(err, &d) {
			err = wrapErr(ErrLauncherLost, err)
		}
	}
	return err
}
