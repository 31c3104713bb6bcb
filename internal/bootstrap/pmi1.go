package bootstrap

import (
	"context"
	"net"
	"strconv"
)

// pmi1 speaks PMI-1 (MPICH's "simple" PMI wire protocol, version 1.1):
// newline-terminated "cmd=... key=value" lines, one reply per request.
type pmi1 struct {
	c              *pmiConn
	kvs            string
	maxKey, maxVal int
}

// PMI-1 limits when the launcher's maxes reply leaves one out: MPICH's
// PMI_MAX_KEYLEN and PMI_MAX_VALLEN, both counting a terminating NUL.
const (
	pmi1DefaultKeylen = 64
	pmi1DefaultVallen = 1024
)

// DialPMI1 starts PMI-1 on conn, an open connection to the launcher. id ≥ 0
// selects the PMI_PORT handshake (hydra's -pmi-port), in which the launcher
// tells the rank and size; with id < 0 (PMI_FD) rank and size are the given
// ones. ctx bounds the handshake. The returned PMI owns conn.
func DialPMI1(ctx context.Context, conn net.Conn, id, rank, size int) (*PMI, error) {
	p := &pmi1{c: newPMIConn(conn)}
	err := handshakeCtx(ctx, conn, func() error {
		if id >= 0 {
			var err error
			if rank, size, err = p.initack(id); err != nil {
				return err
			}
		}
		return p.init()
	})
	if err == nil && (size < 1 || rank < 0 || rank >= size) {
		err = errDetail(ErrBadEnv, "launcher gave rank %d of a job of %d", rank, size)
	}
	if err != nil {
		conn.Close()
		return nil, opErr("pmi1 init", -1, "", err)
	}
	b, err := newPMI(p, p.c, rank, size)
	if err != nil {
		conn.Close()
		return nil, opErr("pmi1 init", -1, "", err)
	}
	return b, nil
}

// initack runs the PMI_PORT prefix: "cmd=initack pmiid=ID", the launcher's
// initack, then "cmd=set" lines giving size, rank and debug.
func (p *pmi1) initack(id int) (rank, size int, err error) {
	if err := p.c.write([]byte(formatPMI1("initack", "pmiid", strconv.Itoa(id)))); err != nil {
		return 0, 0, err
	}
	if _, err := p.c.expect1("initack"); err != nil {
		return 0, 0, err
	}
	rank, size = -1, -1
	for range 3 {
		m, err := p.c.expect1("set")
		if err != nil {
			return 0, 0, err
		}
		for k, v := range m.fields {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, 0, errDetail(ErrProtocol, "launcher sent %v", m)
			}
			switch k {
			case "size":
				size = n
			case "rank":
				rank = n
			}
		}
	}
	if rank < 0 || size < 1 {
		return 0, 0, errDetail(ErrProtocol, "launcher's PMI_PORT handshake gave no rank or size")
	}
	return rank, size, nil
}

// init sends init, get_maxes and get_my_kvsname.
func (p *pmi1) init() error {
	if err := p.c.write([]byte(formatPMI1("init", "pmi_version", "1", "pmi_subversion", "1"))); err != nil {
		return err
	}
	m, err := p.c.expect1("response_to_init")
	if err != nil {
		return err
	}
	if rc, ok := m.get("rc"); ok && rc != "0" {
		return errDetail(ErrNotSupported, "launcher refused PMI version 1.1: %v", m)
	}
	if err := p.c.write([]byte(formatPMI1("get_maxes"))); err != nil {
		return err
	}
	if m, err = p.c.expect1("maxes"); err != nil {
		return err
	}
	maxOf := func(field string, def int) (int, error) {
		v, ok := m.get(field)
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, errDetail(ErrProtocol, "launcher's %s=%q is not a positive number", field, v)
		}
		return n, nil
	}
	kl, err := maxOf("keylen_max", pmi1DefaultKeylen)
	if err != nil {
		return err
	}
	vl, err := maxOf("vallen_max", pmi1DefaultVallen)
	if err != nil {
		return err
	}
	nl, err := maxOf("kvsname_max", 256)
	if err != nil {
		return err
	}
	// The limits count a terminating NUL: hydra cuts a value of exactly
	// vallen_max bytes by one (measured).
	p.maxKey, p.maxVal = kl-1, vl-1
	if err := p.c.write([]byte(formatPMI1("get_my_kvsname"))); err != nil {
		return err
	}
	if m, err = p.c.expect1("my_kvsname"); err != nil {
		return err
	}
	if err := checkRC(m, "get_my_kvsname"); err != nil {
		return err
	}
	p.kvs, _ = m.get("kvsname")
	if p.kvs == "" || len(p.kvs) >= nl || !pmiText(p.kvs) {
		return errDetail(ErrProtocol, "launcher's kvsname %q is empty, too long or not plain text", clip(p.kvs))
	}
	return nil
}

func (p *pmi1) version() int                 { return 1 }
func (p *pmi1) limits() (maxKey, maxVal int) { return p.maxKey, p.maxVal }

func (p *pmi1) put(key, value string) error {
	if err := p.c.write([]byte(formatPMI1("put", "kvsname", p.kvs, "key", key, "value", value))); err != nil {
		return err
	}
	m, err := p.c.expect1("put_result")
	if err != nil {
		return err
	}
	return checkRC(m, "put of "+key)
}

func (p *pmi1) fence() error { return p.barrier() }

func (p *pmi1) barrier() error {
	if err := p.c.write([]byte(formatPMI1("barrier_in"))); err != nil {
		return err
	}
	m, err := p.c.expect1("barrier_out")
	if err != nil {
		return err
	}
	return checkRC(m, "barrier")
}

func (p *pmi1) get(key string) (string, bool, error) {
	if err := p.c.write([]byte(formatPMI1("get", "kvsname", p.kvs, "key", key))); err != nil {
		return "", false, err
	}
	m, err := p.c.expect1("get_result")
	if err != nil {
		return "", false, err
	}
	if rc, ok := m.get("rc"); ok && rc != "0" {
		// hydra answers a missing key with rc=-1 msg=key_K_not_found.
		return "", false, nil
	}
	v, ok := m.get("value")
	if !ok {
		return "", false, errDetail(ErrProtocol, "launcher's get_result has no value: %v", m)
	}
	return v, true, nil
}

func (p *pmi1) finalize() error {
	if err := p.c.write([]byte(formatPMI1("finalize"))); err != nil {
		return err
	}
	_, err := p.c.expect1("finalize_ack")
	return err
}

func (p *pmi1) abort(code int, msg string) error {
	return p.c.write([]byte(formatPMI1("abort", "exitcode", strconv.Itoa(code))))
}
