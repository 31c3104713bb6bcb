package main

// The raw TCP stream of -compare (peer tcp-stream): what one TCP connection
// between two processes carries with nothing on top, measured by this program in
// the manner of iperf: a sink process (this binary again) accepts a connection on
// the loopback; for bandwidth the measuring process writes a stream of messages
// of the size into it and stops the clock when the sink has read them all and
// answered with the checksum of the last one; for latency the two bounce a
// message of the size back and forth (half a round trip). It is the bound of a
// put over the soft provider's TCP path: run ptlbench -compare with
// PTL_SOFT_PATH=tcp to measure goportals over TCP beside it and fi_pingpong tcp.
// Its sockets run the congestion control the soft provider's links do
// (PTL_SOFT_TCP_CC, reno unless set), so that the two differ only by what is on
// top of the stream; fi_pingpong keeps the kernel's default.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/goportals/goportals/internal/verbs/soft"
)

// tcpSinkEnv makes a process started by ptlbench the TCP sink.
const tcpSinkEnv = "PTLBENCH_TCP_SINK"

func init() {
	if os.Getenv(tcpSinkEnv) == "" {
		return
	}
	if err := serveTCPSink(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "ptlbench tcp sink: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// streamControl gives a socket of the stream, before it connects or listens
// (an accepted one inherits its listener's), the soft provider's congestion
// control.
func streamControl(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) { err = soft.SetTCPCongestion(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}

// maxStreamSize bounds a message of the stream.
const maxStreamSize = 1 << 30

// serveTCPSink listens on the loopback, says "port N", and serves connections
// until in ends. A connection's first line is "lat SIZE N" (bounce N messages
// of SIZE bytes) or "bw SIZE N" (read N messages of SIZE bytes, then answer the
// CRC-32 of the last, 4 bytes little-endian).
func serveTCPSink(in io.Reader, out io.Writer) error {
	lc := net.ListenConfig{Control: streamControl}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		io.Copy(io.Discard, in)
		ln.Close()
	}()
	if _, err := fmt.Fprintf(out, "port %d\n", ln.Addr().(*net.TCPAddr).Port); err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return nil // in ended
		}
		go func() {
			defer c.Close()
			if err := sinkConn(c); err != nil {
				fmt.Fprintf(os.Stderr, "ptlbench tcp sink: %v\n", err)
			}
		}()
	}
}

// sinkConn serves one measurement.
func sinkConn(c net.Conn) error {
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	var mode string
	var size, n int
	if _, err := fmt.Sscan(line, &mode, &size, &n); err != nil || size < 1 || size > maxStreamSize || n < 0 {
		return fmt.Errorf("bad request %q", line)
	}
	buf := make([]byte, size)
	switch mode {
	case "lat":
		for range n {
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			if _, err := c.Write(buf); err != nil {
				return err
			}
		}
		return nil
	case "bw":
		for range n {
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
		}
		_, err := c.Write(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(buf)))
		return err
	}
	return fmt.Errorf("bad request %q", line)
}

// tcpStreamContender is the raw TCP stream (latency and bandwidth).
func tcpStreamContender() *contender {
	return &contender{key: "tcp-stream", name: "tcp stream (loopback)",
		run: func(ctx context.Context, size int, c counts) (map[metric]float64, error) {
			lat, err := tcpStream(ctx, "lat", size, c.latWarmup, c.latIters)
			if err != nil {
				return nil, err
			}
			bw, err := tcpStream(ctx, "bw", size, c.bwWarmup, c.bwMsgs)
			if err != nil {
				return map[metric]float64{latency: lat}, err
			}
			return map[metric]float64{latency: lat, bandwidth: bw}, nil
		}}
}

// tcpStream runs one measurement against a fresh sink process: mode "lat"
// gives the one-way latency in µs, "bw" MB/s; warmup messages go first, untimed.
func tcpStream(ctx context.Context, mode string, size, warmup, msgs int) (float64, error) {
	if size < 1 || size > maxStreamSize || msgs < 1 || warmup < 0 {
		return 0, fmt.Errorf("%w: the TCP stream needs a size in [1, %d] and a positive count", errUsage, maxStreamSize)
	}
	h, port, err := startTCPSink(ctx)
	if err != nil {
		return 0, err
	}
	defer h.stop()
	d := net.Dialer{Control: streamControl}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(conn, "%s %d %d\n", mode, size, warmup+msgs); err != nil {
		return 0, err
	}
	buf := pattern(3, size, size)
	back := make([]byte, size)
	var start time.Time
	for i := range warmup + msgs {
		if i == warmup {
			start = time.Now()
		}
		if _, err := conn.Write(buf); err != nil {
			return 0, fmt.Errorf("tcp stream: %w", err)
		}
		if mode == "lat" {
			if _, err := io.ReadFull(conn, back); err != nil {
				return 0, fmt.Errorf("tcp stream: %w", err)
			}
		}
	}
	if mode == "lat" {
		return time.Since(start).Seconds() * 1e6 / float64(2*msgs), nil
	}
	var sum [4]byte
	if _, err := io.ReadFull(conn, sum[:]); err != nil {
		return 0, fmt.Errorf("tcp stream: the sink did not answer: %w", err)
	}
	d2 := time.Since(start)
	if got, want := binary.LittleEndian.Uint32(sum[:]), crc32.ChecksumIEEE(buf); got != want {
		return 0, fmt.Errorf("tcp stream: the sink read CRC %#x, we wrote %#x", got, want)
	}
	return mbPerSec(size, msgs, d2), nil
}

// startTCPSink starts the sink process and returns it with its port.
func startTCPSink(ctx context.Context) (*helper, int, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, fmt.Errorf("cannot find my own binary to start the TCP sink: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), tcpSinkEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, 0, fmt.Errorf("start the TCP sink: %w", err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewReader(out)}
	greeting, err := h.readLine()
	var port int
	if err == nil {
		_, err = fmt.Sscanf(greeting, "port %d", &port)
	}
	if err != nil {
		h.stop()
		return nil, 0, errors.Join(errors.New("the TCP sink did not say its port"), err)
	}
	h.done = make(chan error, 1)
	go func() { h.done <- cmd.Wait() }()
	return h, port, nil
}
