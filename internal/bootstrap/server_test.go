package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// startServer runs a server for n ranks until the test ends.
func startServer(t *testing.T, n int, network string) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Size: n, Network: network})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// dialAll connects every rank of s.
func dialAll(t *testing.T, s *Server) []*Client {
	t.Helper()
	cs := make([]*Client, s.Size())
	for r := range cs {
		c, err := Dial(t.Context(), s.ClientConfig(r))
		if err != nil {
			t.Fatalf("Dial rank %d: %v", r, err)
		}
		cs[r] = c
		t.Cleanup(func() { c.Close() })
	}
	return cs
}

// arrived returns nil once exactly the given ranks wait in the server's open
// collective (their calls have reached it), or an error at the deadline.
func arrived(s *Server, ranks ...int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		ok := len(s.waiting) == len(ranks)
		for _, r := range ranks {
			if _, in := s.waiting[r]; !in {
				ok = false
			}
		}
		got := slices.Sorted(maps.Keys(s.waiting))
		s.mu.Unlock()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ranks %v not waiting in a collective after 30s (waiting: %v)", ranks, got)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitArrived fails the test unless the given ranks come to wait in the server's
// open collective.
func waitArrived(t *testing.T, s *Server, ranks ...int) {
	t.Helper()
	if err := arrived(s, ranks...); err != nil {
		t.Fatal(err)
	}
}

// eachRank runs f for every rank concurrently and returns the errors by rank.
func eachRank(n int, f func(r int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r)
		}()
	}
	wg.Wait()
	return errs
}

func TestServerPutFenceGet(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			const n = 4
			s := startServer(t, n, network)
			cs := dialAll(t, s)
			ctx := t.Context()
			errs := eachRank(n, func(r int) error {
				c := cs[r]
				if c.Rank() != r || c.Size() != n {
					return fmt.Errorf("rank/size %d/%d", c.Rank(), c.Size())
				}
				if err := c.Put("addr", []byte(fmt.Sprintf("rank-%d", r))); err != nil {
					return err
				}
				big := bytes.Repeat([]byte{byte(r)}, MaxValueLen)
				if err := c.Put("big", big); err != nil {
					return err
				}
				// Not visible before the fence, not even to the putter.
				if _, err := c.Get(ctx, r, "addr"); !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("get before fence: %v", err)
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				if err := c.Fence(ctx); err != nil {
					return err
				}
				for q := range n {
					v, err := c.Get(ctx, q, "addr")
					if err != nil {
						return err
					}
					if want := fmt.Sprintf("rank-%d", q); string(v) != want {
						return fmt.Errorf("get %d: %q want %q", q, v, want)
					}
					v, err = c.Get(ctx, q, "big")
					if err != nil {
						return err
					}
					if !bytes.Equal(v, bytes.Repeat([]byte{byte(q)}, MaxValueLen)) {
						return fmt.Errorf("big value of %d differs", q)
					}
				}
				if _, err := c.Get(ctx, 0, "nokey"); !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("missing key: %v", err)
				}
				if _, err := c.Get(ctx, n, "addr"); !errors.Is(err, ErrBadRank) {
					return fmt.Errorf("bad rank: %v", err)
				}
				// A second round replaces the value.
				if err := c.Put("addr", []byte("v2")); err != nil {
					return err
				}
				if err := c.Fence(ctx); err != nil {
					return err
				}
				v, err := c.Get(ctx, (r+1)%n, "addr")
				if err != nil || string(v) != "v2" {
					return fmt.Errorf("second round: %q %v", v, err)
				}
				if err := c.Barrier(ctx); err != nil {
					return err
				}
				return c.Close()
			})
			for r, err := range errs {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
			if err := s.Err(); err != nil {
				t.Errorf("server failure after clean run: %v", err)
			}
		})
	}
}

func TestPutValidation(t *testing.T) {
	s := startServer(t, 1, "tcp")
	c := dialAll(t, s)[0]
	lone := NewLone()
	for _, b := range []Bootstrap{c, lone} {
		for _, key := range []string{"", "a b", "a=b", "a/b", "a;b", string(make([]byte, MaxKeyLen+1))} {
			if err := b.Put(key, nil); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("%T Put(%q): %v, want ErrInvalidKey", b, key, err)
			}
			if _, err := b.Get(t.Context(), 0, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("%T Get(%q): %v, want ErrInvalidKey", b, key, err)
			}
		}
		if err := b.Put("k", make([]byte, MaxValueLen+1)); !errors.Is(err, ErrValueTooLarge) {
			t.Errorf("%T oversize value: %v", b, err)
		}
		long := string(bytes.Repeat([]byte("k"), MaxKeyLen))
		if err := b.Put(long, []byte("ok")); err != nil {
			t.Errorf("%T key of MaxKeyLen: %v", b, err)
		}
		if err := b.Fence(t.Context()); err != nil {
			t.Fatal(err)
		}
		if v, err := b.Get(t.Context(), 0, long); err != nil || string(v) != "ok" {
			t.Errorf("%T get long key: %q %v", b, v, err)
		}
	}
}

func TestBadJobKeyRejected(t *testing.T) {
	s := startServer(t, 2, "tcp")
	cfg := s.ClientConfig(0)
	cfg.JobKey = "not-the-key"
	if _, err := Dial(t.Context(), cfg); !errors.Is(err, ErrAuth) {
		t.Fatalf("bad key: %v, want ErrAuth", err)
	}
	cfg = s.ClientConfig(1)
	cfg.Size = 3
	cfg.Rank = 2
	if _, err := Dial(t.Context(), cfg); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong size: %v, want ErrAuth", err)
	}
	// The rejected attempts did not take a rank: both ranks still join, once.
	cs := dialAll(t, s)
	if _, err := Dial(t.Context(), s.ClientConfig(0)); !errors.Is(err, ErrAuth) {
		t.Fatalf("second rank 0: %v, want ErrAuth", err)
	}
	for r, err := range eachRank(2, func(r int) error { return cs[r].Barrier(t.Context()) }) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

func TestGarbageConnectionDropped(t *testing.T) {
	s := startServer(t, 1, "tcp")
	network, addr, err := splitAddr(s.Addr())
	if err != nil || network != "tcp" {
		t.Fatalf("server address %q: %q %v", s.Addr(), network, err)
	}
	conn, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(make([]byte, 16)); err == nil {
		t.Fatal("server answered a garbage frame instead of closing")
	}
	// The job is unharmed.
	c := dialAll(t, s)[0]
	if err := c.Fence(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestPeerLostUnblocksCollectives(t *testing.T) {
	const n = 3
	s := startServer(t, n, "tcp")
	cs := dialAll(t, s)
	errs := make(chan error, n-1)
	for r := 1; r < n; r++ {
		go func() { errs <- cs[r].Barrier(t.Context()) }()
	}
	// Once ranks 1 and 2 are blocked in the Barrier, rank 0 dies: its connection
	// drops without Close.
	waitArrived(t, s, 1, 2)
	cs[0].conn.Close()
	for range n - 1 {
		if err := <-errs; !errors.Is(err, ErrPeerLost) {
			t.Errorf("blocked Barrier: %v, want ErrPeerLost", err)
		}
	}
	select {
	case <-s.Failed():
	default:
		t.Fatal("server did not report the failure")
	}
	if !errors.Is(s.Err(), ErrPeerLost) {
		t.Errorf("server Err: %v", s.Err())
	}
	if err := cs[1].Fence(t.Context()); !errors.Is(err, ErrPeerLost) {
		t.Errorf("later Fence: %v, want ErrPeerLost", err)
	}
	if _, err := cs[1].Get(t.Context(), 2, "k"); !errors.Is(err, ErrPeerLost) {
		t.Errorf("later Get: %v, want ErrPeerLost", err)
	}
}

func TestRankExitedWithoutConnecting(t *testing.T) {
	s := startServer(t, 2, "tcp")
	c, err := Dial(t.Context(), s.ClientConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() { errc <- c.Fence(t.Context()) }()
	waitArrived(t, s, 0)
	s.RankExited(1, false)
	if err := <-errc; !errors.Is(err, ErrPeerLost) {
		t.Fatalf("Fence with rank 1 dead: %v", err)
	}
}

func TestCleanLeaveFailsLaterCollectivesOnly(t *testing.T) {
	s := startServer(t, 2, "tcp")
	cs := dialAll(t, s)
	ctx := t.Context()
	for r, err := range eachRank(2, func(r int) error {
		if err := cs[r].Put("k", []byte{byte(r)}); err != nil {
			return err
		}
		return cs[r].Fence(ctx)
	}) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if err := cs[1].Close(); err != nil {
		t.Fatal(err)
	}
	if err := cs[1].Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := cs[1].Put("x", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if v, err := cs[0].Get(ctx, 1, "k"); err != nil || !bytes.Equal(v, []byte{1}) {
		t.Errorf("Get from a rank that left: %v %v", v, err)
	}
	if err := cs[0].Barrier(ctx); !errors.Is(err, ErrPeerLost) {
		t.Errorf("Barrier after a rank left: %v", err)
	}
	if s.Err() != nil {
		t.Errorf("a clean leave is no failure: %v", s.Err())
	}
}

func TestAbort(t *testing.T) {
	s := startServer(t, 3, "tcp")
	cs := dialAll(t, s)
	errs := make(chan error, 2)
	for r := 1; r < 3; r++ {
		go func() { errs <- cs[r].Fence(t.Context()) }()
	}
	waitArrived(t, s, 1, 2)
	if err := cs[0].Abort(7, "bad input"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrAborted) {
			t.Errorf("Fence during abort: %v", err)
		}
	}
	var ae *AbortError
	if !errors.As(s.Err(), &ae) || ae.Rank != 0 || ae.Code != 7 || ae.Msg != "bad input" {
		t.Fatalf("server Err: %#v", s.Err())
	}
	if err := cs[0].Barrier(t.Context()); !errors.Is(err, ErrAborted) {
		t.Errorf("call after Abort: %v", err)
	}
}

func TestCollectiveMismatch(t *testing.T) {
	s := startServer(t, 2, "tcp")
	cs := dialAll(t, s)
	// Rank 1 calls Barrier once rank 0 waits in a Fence: both calls fail.
	errs := eachRank(2, func(r int) error {
		if r == 0 {
			return cs[r].Fence(t.Context())
		}
		if err := arrived(s, 0); err != nil {
			return fmt.Errorf("%w (so no Barrier was tried)", err)
		}
		return cs[r].Barrier(t.Context())
	})
	for r, err := range errs {
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "rank 1 called Barrier while others are in Fence") {
			t.Errorf("rank %d: %v, want ErrProtocol for rank 1's Barrier during the Fence", r, err)
		}
	}
}

func TestCancelWithdrawsArrival(t *testing.T) {
	s := startServer(t, 2, "tcp")
	cs := dialAll(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- cs[0].Barrier(ctx) }()
	waitArrived(t, s, 0) // the arrival reached the server: the cancel must withdraw it
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Barrier: %v", err)
	}
	s.mu.Lock()
	left := len(s.waiting)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("the cancelled arrival is still counted: %d waiting", left)
	}
	// The withdrawn arrival does not count: the next barrier needs both ranks again.
	for r, err := range eachRank(2, func(r int) error { return cs[r].Barrier(t.Context()) }) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	// A cancelled Get leaves the client usable.
	gctx, gcancel := context.WithCancel(t.Context())
	gcancel()
	if _, err := cs[0].Get(gctx, 1, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Get: %v", err)
	}
}

func TestLauncherLost(t *testing.T) {
	s, err := NewServer(ServerConfig{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(t.Context()) }()
	c, err := Dial(t.Context(), s.ClientConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Barrier(t.Context()) }()
	waitArrived(t, s, 0)
	s.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrLauncherLost) {
		t.Fatalf("Barrier with the server gone: %v", err)
	}
	if err := c.Put("k", nil); !errors.Is(err, ErrLauncherLost) {
		t.Errorf("Put with the server gone: %v", err)
	}
	if err := c.Close(); !errors.Is(err, ErrLauncherLost) {
		t.Errorf("Close with the server gone: %v", err)
	}
}

func TestDialContextEnds(t *testing.T) {
	// A listener that accepts and never answers: the handshake must give up with ctx.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = Dial(ctx, ClientConfig{Addr: "tcp:" + ln.Addr().String(), Rank: 0, Size: 1, JobKey: "k"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a silent server: %v", err)
	}
	if c := <-accepted; c != nil {
		c.Close()
	}
}
