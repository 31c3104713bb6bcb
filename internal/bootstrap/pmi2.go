package bootstrap

import (
	"context"
	"net"
	"strconv"
	"time"
)

// pmi2 speaks PMI-2 over an inherited descriptor: a PMI-1 style init line
// asking for version 2, then length-prefixed "cmd=...;key=value;" messages.
type pmi2 struct {
	c          *pmiConn
	jobid      string
	rank, size int
	// checkFence makes fence wait, after kvs-fence, until every rank's marker
	// for this fence is visible. hydra 4.0.2 answers kvs-fence at once, before
	// the other ranks arrive (measured: a rank sleeping 2 s before its fence
	// did not delay the other's), so its kvs-fence is no barrier. Slurm's is;
	// Slurm sets PMI_JOBID and hydra does not, so that tells them apart.
	checkFence bool
	fences     int
}

// PMI-2 limits: PMI2_MAX_KEYLEN and PMI2_MAX_VALLEN of MPICH and Slurm, both
// counting a terminating NUL. PMI-2 has no call that reports them.
const (
	pmi2Keylen = 64
	pmi2Vallen = 1024
)

// DialPMI2 starts PMI-2 on conn, an open connection to the launcher (PMI_FD).
// rank is PMI_RANK and jobid PMI_JOBID ("" when the launcher set none: hydra
// does not, Slurm requires it). The launcher's fullinit reply gives the rank
// and size; a rank different from the given one is an error. ctx bounds the
// handshake. The returned PMI owns conn.
func DialPMI2(ctx context.Context, conn net.Conn, rank int, jobid string) (*PMI, error) {
	p := &pmi2{c: newPMIConn(conn), jobid: jobid, checkFence: jobid == ""}
	var size int
	err := handshakeCtx(ctx, conn, func() error {
		var err error
		rank, size, err = p.init(rank)
		return err
	})
	p.rank, p.size = rank, size
	if err != nil {
		conn.Close()
		return nil, opErr("pmi2 init", -1, "", err)
	}
	b, err := newPMI(p, p.c, rank, size)
	if err != nil {
		conn.Close()
		return nil, opErr("pmi2 init", -1, "", err)
	}
	return b, nil
}

// send writes one PMI-2 message.
func (p *pmi2) send(cmd string, kv ...string) error {
	b, err := formatPMI2(cmd, kv...)
	if err != nil {
		return err
	}
	return p.c.write(b)
}

// init sends the version line and fullinit.
func (p *pmi2) init(rank int) (int, int, error) {
	if !pmiText(p.jobid) {
		return 0, 0, errDetail(ErrBadEnv, "PMI_JOBID=%q is not plain text", clip(p.jobid))
	}
	if err := p.c.write([]byte(formatPMI1("init", "pmi_version", "2", "pmi_subversion", "0"))); err != nil {
		return 0, 0, err
	}
	m, err := p.c.expect1("response_to_init")
	if err != nil {
		return 0, 0, err
	}
	if rc, _ := m.get("rc"); rc != "0" {
		return 0, 0, errDetail(ErrNotSupported, "launcher refused PMI version 2: %v", m)
	}
	if v, _ := m.get("pmi_version"); v != "2" {
		return 0, 0, errDetail(ErrNotSupported, "launcher offers PMI version %q, not 2", v)
	}
	kv := []string{}
	if p.jobid != "" {
		kv = append(kv, "pmijobid", p.jobid)
	}
	kv = append(kv, "pmirank", strconv.Itoa(rank), "threaded", "FALSE")
	if err := p.send("fullinit", kv...); err != nil {
		return 0, 0, err
	}
	if m, err = p.c.expect2("fullinit-response"); err != nil {
		return 0, 0, err
	}
	if rc, _ := m.get("rc"); rc != "0" {
		return 0, 0, errDetail(ErrBadEnv, "launcher refused fullinit of rank %d (PMI_JOBID %q): %v", rank, p.jobid, m)
	}
	r, err1 := strconv.Atoi(m.fields["rank"])
	size, err2 := strconv.Atoi(m.fields["size"])
	if err1 != nil || err2 != nil || size < 1 || r < 0 || r >= size {
		return 0, 0, errDetail(ErrProtocol, "launcher's fullinit reply has no valid rank and size: %v", m)
	}
	if r != rank {
		return 0, 0, errDetail(ErrProtocol, "launcher says rank %d, PMI_RANK says %d", r, rank)
	}
	return r, size, nil
}

func (p *pmi2) version() int                 { return 2 }
func (p *pmi2) limits() (maxKey, maxVal int) { return pmi2Keylen - 1, pmi2Vallen - 1 }

// call sends a request and reads its reply, checking rc.
func (p *pmi2) call(what, cmd string, kv ...string) (pmiMsg, error) {
	if err := p.send(cmd, kv...); err != nil {
		return pmiMsg{}, err
	}
	m, err := p.c.expect2(cmd + "-response")
	if err != nil {
		return pmiMsg{}, err
	}
	return m, checkRC(m, what)
}

func (p *pmi2) put(key, value string) error {
	_, err := p.call("put of "+key, "kvs-put", "key", key, "value", value)
	return err
}

// fenceMarker is the native key rank r puts at fence n when fences are
// checked; '~' never starts a key of the PMI backend.
func fenceMarker(n, r int) string { return "~f/" + strconv.Itoa(n) + "/" + strconv.Itoa(r) }

func (p *pmi2) fence() error {
	p.fences++
	if p.checkFence {
		if err := p.put(fenceMarker(p.fences, p.rank), "1"); err != nil {
			return err
		}
	}
	if _, err := p.call("fence", "kvs-fence"); err != nil {
		return err
	}
	if !p.checkFence {
		return nil
	}
	// Wait for every rank's marker. The connection's deadline (set when the
	// caller's context ends) ends the wait.
	for r := range p.size {
		for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
			_, found, err := p.get(fenceMarker(p.fences, r))
			if err != nil {
				return err
			}
			if found {
				break
			}
			time.Sleep(pause)
		}
	}
	return nil
}

// barrier is a fence: the PMI-2 wire protocol has no other collective.
func (p *pmi2) barrier() error { return p.fence() }

func (p *pmi2) get(key string) (string, bool, error) {
	kv := []string{}
	if p.jobid != "" {
		kv = append(kv, "jobid", p.jobid)
	}
	kv = append(kv, "srcid", "-1", "key", key)
	m, err := p.call("get of "+key, "kvs-get", kv...)
	if err != nil {
		return "", false, err
	}
	if f, _ := m.get("found"); f != "TRUE" {
		return "", false, nil
	}
	v, ok := m.get("value")
	if !ok {
		return "", false, errDetail(ErrProtocol, "launcher's kvs-get reply has no value: %v", m)
	}
	return v, true, nil
}

func (p *pmi2) finalize() error {
	_, err := p.call("finalize", "finalize")
	return err
}

func (p *pmi2) abort(code int, msg string) error {
	return p.send("abort", "isworld", "TRUE", "msg", pmiMessage(msg, false))
}
