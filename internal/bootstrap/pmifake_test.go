package bootstrap

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// fakePMI is an in-process PMI server for the tests: PMI-1 (with or without
// the PMI_PORT prefix) or PMI-2, a key-value store and a barrier, and the
// checks a strict launcher makes: every key and value within the limits it
// advertised and made of plain text. A request that breaks them is recorded as
// a violation and the connection dropped, as hydra ends a job.
type fakePMI struct {
	size           int
	version        int  // 1 or 2
	port           bool // PMI-1 over PMI_PORT: initack prefix
	keylen, vallen int  // advertised limits, counting a NUL
	fenceNoWait    bool // PMI-2 kvs-fence answers at once, as hydra 4.0's does

	// misbehave, when set, may answer a request itself: it returns the raw
	// bytes to send instead of the normal reply (nothing: hang up; ending in
	// hangUp: send the rest, then hang up), or ok false to answer normally.
	misbehave func(rank int, m pmiMsg) (raw string, ok bool)

	mu         sync.Mutex
	cond       *sync.Cond
	kvs        map[string]string
	arrived    int
	generation int
	violations []string
	aborts     []string
	closed     bool
	wg         sync.WaitGroup
}

// hangUp at the end of a misbehave reply makes the fake close the connection
// after sending the rest.
const hangUp = "<hang up>"

func newFakePMI(size, version int) *fakePMI {
	f := &fakePMI{size: size, version: version, keylen: 64, vallen: 1024, kvs: map[string]string{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// conn returns the rank's end of a new connection served by f.
func (f *fakePMI) conn(rank int) net.Conn {
	a, b := net.Pipe()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer b.Close()
		f.serve(rank, b)
	}()
	return a
}

// shutdown releases ranks blocked in a barrier and waits for every
// connection's server to end (the clients must have closed their ends).
func (f *fakePMI) shutdown() {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fakePMI) violate(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// Violations returns what the clients did that a strict launcher refuses.
func (f *fakePMI) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// serve answers one rank until its connection ends.
func (f *fakePMI) serve(rank int, c net.Conn) {
	r := bufio.NewReader(c)
	send := func(s string) bool { _, err := io.WriteString(c, s); return err == nil }
	if f.port {
		m, err := readPMI1(r)
		if err != nil || m.cmd != "initack" || m.fields["pmiid"] != strconv.Itoa(rank) {
			f.violate("rank %d: bad initack %v %v", rank, m, err)
			return
		}
		if !send("cmd=initack\ncmd=set size=" + strconv.Itoa(f.size) + "\ncmd=set rank=" + strconv.Itoa(rank) + "\ncmd=set debug=0\n") {
			return
		}
	}
	m, err := readPMI1(r)
	if err != nil {
		return
	}
	if raw, ok := f.hook(rank, m); ok {
		send(raw)
		if raw == "" {
			return
		}
	} else {
		if m.cmd != "init" || m.fields["pmi_version"] != strconv.Itoa(f.version) {
			f.violate("rank %d: bad init %v", rank, m)
			return
		}
		if !send(fmt.Sprintf("cmd=response_to_init pmi_version=%d pmi_subversion=%s rc=0\n", f.version, m.fields["pmi_subversion"])) {
			return
		}
	}
	for {
		var m pmiMsg
		if f.version == 1 {
			m, err = readPMI1(r)
		} else {
			m, err = readPMI2(r)
		}
		if err != nil {
			return
		}
		if raw, ok := f.hook(rank, m); ok {
			eof := strings.HasSuffix(raw, hangUp)
			raw = strings.TrimSuffix(raw, hangUp)
			if raw == "" || !send(raw) || eof {
				return
			}
			continue
		}
		reply, ok := f.handle(rank, m)
		if !ok {
			return
		}
		if reply == "" {
			continue
		}
		if !send(reply) {
			return
		}
	}
}

func (f *fakePMI) hook(rank int, m pmiMsg) (string, bool) {
	if f.misbehave == nil {
		return "", false
	}
	return f.misbehave(rank, m)
}

// handle computes the raw reply to one request; ok false ends the connection.
func (f *fakePMI) handle(rank int, m pmiMsg) (string, bool) {
	checkKV := func(key, value string) bool {
		if len(key) > f.keylen-1 || !pmiText(key) {
			f.violate("rank %d: key %q breaks the limit %d or is not plain text", rank, key, f.keylen-1)
			return false
		}
		if len(value) > f.vallen-1 || !pmiText(value) {
			f.violate("rank %d: value of %d bytes under %q breaks the limit %d or is not plain text", rank, len(value), key, f.vallen-1)
			return false
		}
		return true
	}
	if f.version == 1 {
		switch m.cmd {
		case "get_maxes":
			return fmt.Sprintf("cmd=maxes kvsname_max=256 keylen_max=%d vallen_max=%d\n", f.keylen, f.vallen), true
		case "get_my_kvsname":
			return "cmd=my_kvsname kvsname=kvs_fake_0 rc=0\n", true
		case "put":
			if m.fields["kvsname"] != "kvs_fake_0" || !checkKV(m.fields["key"], m.fields["value"]) {
				return "", false
			}
			f.mu.Lock()
			f.kvs[m.fields["key"]] = m.fields["value"]
			f.mu.Unlock()
			return "cmd=put_result rc=0 msg=success\n", true
		case "get":
			f.mu.Lock()
			v, ok := f.kvs[m.fields["key"]]
			f.mu.Unlock()
			if !ok {
				return "cmd=get_result rc=-1 msg=key_" + m.fields["key"] + "_not_found value=unknown\n", true
			}
			return "cmd=get_result rc=0 msg=success value=" + v + "\n", true
		case "barrier_in":
			f.barrier()
			return "cmd=barrier_out\n", true
		case "finalize":
			return "cmd=finalize_ack\n", true
		case "abort":
			f.mu.Lock()
			f.aborts = append(f.aborts, m.String())
			f.mu.Unlock()
			return "", false
		}
	} else {
		switch m.cmd {
		case "fullinit":
			if m.fields["pmirank"] != strconv.Itoa(rank) {
				f.violate("rank %d: fullinit %v", rank, m)
				return "", false
			}
			return pmi2Reply("fullinit-response", "rc", "0", "pmi-version", "2", "pmi-subversion", "0",
				"rank", strconv.Itoa(rank), "size", strconv.Itoa(f.size), "appnum", "0"), true
		case "kvs-put":
			if !checkKV(m.fields["key"], m.fields["value"]) {
				return "", false
			}
			f.mu.Lock()
			if _, dup := f.kvs[m.fields["key"]]; !dup { // like hydra: the first value stays
				f.kvs[m.fields["key"]] = m.fields["value"]
			}
			f.mu.Unlock()
			return pmi2Reply("kvs-put-response", "rc", "0"), true
		case "kvs-get":
			f.mu.Lock()
			v, ok := f.kvs[m.fields["key"]]
			f.mu.Unlock()
			if !ok {
				return pmi2Reply("kvs-get-response", "rc", "0", "found", "FALSE"), true
			}
			return pmi2Reply("kvs-get-response", "rc", "0", "found", "TRUE", "value", v), true
		case "kvs-fence":
			if !f.fenceNoWait {
				f.barrier()
			}
			return pmi2Reply("kvs-fence-response", "rc", "0"), true
		case "finalize":
			return pmi2Reply("finalize-response", "rc", "0"), true
		case "abort":
			f.mu.Lock()
			f.aborts = append(f.aborts, m.String())
			f.mu.Unlock()
			return "", false
		}
	}
	f.violate("rank %d: unknown command %v", rank, m)
	return "", false
}

// pmi2Reply encodes a whole PMI-2 reply with its length prefix.
func pmi2Reply(cmd string, kv ...string) string {
	b, err := formatPMI2(cmd, kv...)
	if err != nil {
		panic(err) // the fake's own replies are short
	}
	return string(b)
}

// barrier waits until every rank has arrived.
func (f *fakePMI) barrier() {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.generation
	f.arrived++
	if f.arrived == f.size {
		f.arrived = 0
		f.generation++
		f.cond.Broadcast()
		return
	}
	for f.generation == g && !f.closed {
		f.cond.Wait()
	}
}
