package main

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"
)

// TestTCPSinkAnswersLastChecksum: the sink reads every message of a bandwidth
// run and answers the CRC-32 of the last one, and bounces latency messages.
func TestTCPSinkAnswersLastChecksum(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	done := make(chan error, 1)
	go func() { done <- sinkConn(b); b.Close() }()
	a.SetDeadline(time.Now().Add(10 * time.Second))
	first, last := []byte("12345678"), []byte("abcdefgh")
	if _, err := io.WriteString(a, "bw 8 2\n"); err != nil {
		t.Fatal(err)
	}
	a.Write(first)
	a.Write(last)
	var sum [4]byte
	if _, err := io.ReadFull(a, sum[:]); err != nil {
		t.Fatal(err)
	}
	if got, want := binary.LittleEndian.Uint32(sum[:]), crc32.ChecksumIEEE(last); got != want {
		t.Fatalf("sink answered CRC %#x, want the last message's %#x", got, want)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a2, b2 := net.Pipe()
	defer a2.Close()
	go func() { done <- sinkConn(b2); b2.Close() }()
	a2.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(a2, "lat 4 1\n")
	a2.Write([]byte("ping"))
	back := make([]byte, 4)
	if _, err := io.ReadFull(a2, back); err != nil || string(back) != "ping" {
		t.Fatalf("bounced %q, %v", back, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a3, b3 := net.Pipe()
	defer a3.Close()
	go func() { done <- sinkConn(b3); b3.Close() }()
	io.WriteString(a3, "bw 0 1\n")
	if err := <-done; err == nil {
		t.Fatal("a request of 0-byte messages was served")
	}
}

// TestTCPStream measures the stream against a real sink process: a latency and
// a bandwidth, and the sink's checksum agrees with what was written.
func TestTCPStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vals, err := tcpStreamContender().run(ctx, 1<<16, counts{latWarmup: 2, latIters: 20, bwWarmup: 2, bwMsgs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if vals[latency] <= 0 || vals[bandwidth] <= 0 {
		t.Fatalf("values %v", vals)
	}
	if _, err := tcpStream(ctx, "bw", 0, 0, 1); err == nil {
		t.Fatal("a stream of 0-byte messages was measured")
	}
}
