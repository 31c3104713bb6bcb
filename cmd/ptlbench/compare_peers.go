package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The contenders of -compare. goportals runs the put_lat and put_bw transfer
// tests (two ranks on the soft provider, started as for ptlbench put_lat). The
// peers are other programs and the baselines of baseline*.go; all get the
// iteration counts that goportals gets at the size.

// peers returns every contender besides goportals, in the table's order.
func peers() []*contender {
	return []*contender{
		fiPingpong("shm", "rdm"),
		// The tcp provider's own endpoints are of type msg (rdm over tcp adds
		// the rxm layer, and dgram is not offered).
		fiPingpong("tcp", "msg"),
		tcpStreamContender(),
		ucxPerftest(),
		cmaContender(),
		memcpyContender(),
		softSendContender(),
	}
}

// softSendContender measures the soft verbs provider's own SEND latency (the
// send_lat transfer test): the floor under goportals' put on the same transport,
// in the same run. It has no bandwidth, and no value above sendLatMax bytes.
func softSendContender() *contender {
	return &contender{key: "soft-send", name: "soft provider SEND",
		run: func(ctx context.Context, size int, _ counts) (map[metric]float64, error) {
			vals := map[metric]float64{}
			if size > sendLatMax {
				return vals, nil
			}
			lat, err := runOurs(ctx, "send_lat", size)
			if err != nil {
				return vals, err
			}
			vals[latency] = lat
			return vals, nil
		}}
}

// peerNames lists the keys that -peers accepts.
func peerNames() []string {
	var n []string
	for _, c := range peers() {
		n = append(n, c.key)
	}
	return n
}

// xferByName returns the registered transfer test called name.
func xferByName(name string) *xferTest {
	for _, x := range xferTests {
		if x.name == name {
			return x
		}
	}
	panic("ptlbench: no transfer test " + name)
}

// iterationCounts returns the counts that goportals' put_lat and put_bw use at
// size (OSU's, or -iters), for the peers to use the same.
func iterationCounts(size int) counts {
	lw, li := xferByName("put_lat").iterations(size)
	bw, bi := xferByName("put_bw").iterations(size)
	w := max(1, xferOpts.window)
	return counts{latWarmup: lw, latIters: li, bwWarmup: bw * w, bwMsgs: bi * w}
}

// oursContender measures goportals: put latency (put_lat) and put bandwidth
// (put_bw), each one launch of two ranks.
func oursContender() *contender {
	return &contender{key: "goportals", name: ours,
		run: func(ctx context.Context, size int, _ counts) (map[metric]float64, error) {
			vals := map[metric]float64{}
			lat, err := runOurs(ctx, oursTest("put_lat"), size)
			if err != nil {
				return vals, err
			}
			vals[latency] = lat
			bw, err := runOurs(ctx, oursTest("put_bw"), size)
			if err != nil {
				return vals, err
			}
			vals[bandwidth] = bw
			return vals, nil
		}}
}

// runOurs launches the transfer test name at one size, its rows as JSON, and
// returns the value of the size's row.
func runOurs(ctx context.Context, name string, size int) (float64, error) {
	x := xferByName(name)
	saved := xferOpts
	defer func() { xferOpts = saved }()
	o := &xferOpts
	o.np, o.minSize, o.maxSize, o.json = 2, size, size, true
	o.cpuprofile, o.trace = "", ""
	var out bytes.Buffer
	if err := launch(ctx, config{out: &out}, x); err != nil {
		return 0, err
	}
	return parseXferJSON(out.Bytes(), x.column, size)
}

// parseXferJSON reads the value of column in the row of size from a transfer
// test's -json output.
func parseXferJSON(out []byte, column string, size int) (float64, error) {
	var rows []map[string]any // numbers, and the "path" that carried the test
	if err := json.Unmarshal(bytes.TrimSpace(out), &rows); err != nil {
		return 0, fmt.Errorf("transfer test output is not a JSON array of rows: %v: %q", err, out)
	}
	for _, r := range rows {
		if sz, _ := r["size"].(float64); int(sz) != size {
			continue
		}
		v, ok := r[column].(float64)
		if !ok {
			return 0, fmt.Errorf("row of %d bytes lacks %q: %q", size, column, out)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no row of %d bytes in %q", size, out)
}

// fiPingpong measures libfabric's fi_pingpong on provider with endpoint type ep:
// its usec/xfer is half a round trip, its MB/sec counts the bytes of both
// directions.
func fiPingpong(provider, ep string) *contender {
	return &contender{key: "fi-" + provider, name: "fi_pingpong " + provider,
		run: func(ctx context.Context, size int, c counts) (map[metric]float64, error) {
			args := []string{"-p", provider, "-e", ep, "-I", strconv.Itoa(c.latIters), "-S", strconv.Itoa(size)}
			out, err := runClientServer(ctx, "fi_pingpong",
				func(port int) []string { return slices.Concat(args, []string{"-B", strconv.Itoa(port)}) },
				func(port int) []string { return slices.Concat(args, []string{"-P", strconv.Itoa(port), "127.0.0.1"}) })
			if err != nil {
				return nil, err
			}
			return parseFiPingpong(out, size)
		}}
}

// parseFiPingpong reads the result row of fi_pingpong's table at size: the
// columns usec/xfer and MB/sec, found by the header.
func parseFiPingpong(out string, size int) (map[metric]float64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	var header []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "bytes" {
			header = f
			continue
		}
		if header == nil || len(f) != len(header) {
			continue
		}
		vals := map[metric]float64{}
		for i, h := range header {
			var m metric
			switch h {
			case "usec/xfer":
				m = latency
			case "MB/sec":
				m = bandwidth
			default:
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("fi_pingpong: column %s: %q is not a number", h, f[i])
			}
			vals[m] = v
		}
		if len(vals) != 2 {
			return nil, fmt.Errorf("fi_pingpong: header %q lacks usec/xfer or MB/sec", strings.Join(header, " "))
		}
		// Both columns carry two decimals and say the same (MB/sec is size
		// over usec/xfer): take the bandwidth from the larger number, which
		// has more significant digits.
		if lat := vals[latency]; lat > vals[bandwidth] {
			vals[bandwidth] = float64(size) / lat
		}
		if !(vals[latency] > 0) {
			return nil, fmt.Errorf("fi_pingpong: latency %v in %q", vals[latency], out)
		}
		return vals, nil
	}
	return nil, fmt.Errorf("fi_pingpong: no result row in its output: %q", out)
}

// ucxPerftest measures UCX's ucx_perftest with its UCP put tests (ucp_put_lat,
// half a round trip; ucp_put_bw, a stream of puts), on the transports UCX picks
// itself for two processes of one host.
func ucxPerftest() *contender {
	return &contender{key: "ucx", name: "ucx_perftest put",
		run: func(ctx context.Context, size int, c counts) (map[metric]float64, error) {
			vals := map[metric]float64{}
			for _, t := range []struct {
				test          string
				warmup, iters int
				m             metric
			}{
				{"ucp_put_lat", c.latWarmup, c.latIters, latency},
				{"ucp_put_bw", c.bwWarmup, c.bwMsgs, bandwidth},
			} {
				args := []string{"-t", t.test, "-s", strconv.Itoa(size), "-n", strconv.Itoa(t.iters),
					"-w", strconv.Itoa(t.warmup), "-f", "-v"}
				out, err := runClientServer(ctx, "ucx_perftest",
					func(port int) []string { return []string{"-p", strconv.Itoa(port)} },
					func(port int) []string { return slices.Concat([]string{"127.0.0.1", "-p", strconv.Itoa(port)}, args) })
				if err != nil {
					return vals, err
				}
				v, err := parseUCXPerftest(out, t.m)
				if err != nil {
					return vals, err
				}
				vals[t.m] = v
			}
			return vals, nil
		}}
}

// parseUCXPerftest reads the final row of ucx_perftest's CSV output (-f -v):
// overall_lat in µs, or overall_bw in MiB/s, converted to MB/s.
func parseUCXPerftest(out string, m metric) (float64, error) {
	col := "overall_lat"
	if m == bandwidth {
		col = "overall_bw"
	}
	var header []string
	var last []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(l), ",")
		if len(f) > 1 && f[0] == "iterations" {
			header = f
			continue
		}
		if header != nil && len(f) == len(header) {
			last = f
		}
	}
	i := -1
	for j, h := range header {
		if h == col {
			i = j
		}
	}
	if i < 0 || last == nil {
		return 0, fmt.Errorf("ucx_perftest: no CSV row with %s in its output: %q", col, out)
	}
	v, err := strconv.ParseFloat(last[i], 64)
	if err != nil {
		return 0, fmt.Errorf("ucx_perftest: %s: %q is not a number", col, last[i])
	}
	if m == bandwidth {
		v *= 1 << 20 / 1e6
	}
	return v, nil
}

// runClientServer runs prog as a server and then as its client on a free
// loopback port, and returns the client's output. The client is started again
// while the server is not listening yet (its connection refused).
func runClientServer(ctx context.Context, prog string, server, client func(port int) []string) (string, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return "", fmt.Errorf("%s: %w", prog, errPeerMissing)
	}
	ctx, cancel := context.WithTimeout(ctx, xferOpts.timeout)
	defer cancel()
	port, err := freePort()
	if err != nil {
		return "", err
	}
	var srvOut bytes.Buffer
	srv := exec.CommandContext(ctx, path, server(port)...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return "", fmt.Errorf("%s server: %w", prog, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	stopServer := func() {
		select {
		case <-srvDone:
		default:
			srv.Process.Kill()
			<-srvDone
		}
	}
	var out []byte
	for attempt := 0; ; attempt++ {
		out, err = exec.CommandContext(ctx, path, client(port)...).CombinedOutput()
		if err == nil {
			break
		}
		serverGone := false
		select {
		case e := <-srvDone:
			srvDone <- e
			serverGone = true
		default:
		}
		if serverGone || attempt >= 200 || ctx.Err() != nil || !bytes.Contains(bytes.ToLower(out), []byte("refused")) {
			stopServer()
			return "", fmt.Errorf("%s client %s: %v: %s (server: %s)", prog, strings.Join(client(port), " "),
				err, bytes.TrimSpace(out), bytes.TrimSpace(srvOut.Bytes()))
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	// The server ends after its one test; give it a moment to say goodbye.
	select {
	case err := <-srvDone:
		if err != nil {
			return "", fmt.Errorf("%s server: %v: %s", prog, err, bytes.TrimSpace(srvOut.Bytes()))
		}
	case <-time.After(10 * time.Second):
		stopServer()
	}
	return string(out), nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
