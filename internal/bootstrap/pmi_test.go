package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// pmiKinds are the three ways a rank speaks PMI.
var pmiKinds = []struct {
	name    string
	version int
	port    bool
}{{"pmi1-fd", 1, false}, {"pmi1-port", 1, true}, {"pmi2", 2, false}}

// dialFake opens rank's PMI backend on a connection served by f.
func dialFake(ctx context.Context, f *fakePMI, rank int) (*PMI, error) {
	c := f.conn(rank)
	if f.version == 2 {
		return DialPMI2(ctx, c, rank, "")
	}
	if f.port {
		return DialPMI1(ctx, c, rank, -1, -1)
	}
	return DialPMI1(ctx, c, -1, rank, f.size)
}

// runRanks runs fn for every rank of f concurrently, each on its own backend,
// and returns their errors.
func runRanks(t *testing.T, f *fakePMI, fn func(ctx context.Context, b *PMI) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	errs := make([]error, f.size)
	var wg sync.WaitGroup
	for r := range f.size {
		wg.Go(func() {
			b, err := dialFake(ctx, f, r)
			if err != nil {
				errs[r] = err
				return
			}
			errs[r] = fn(ctx, b)
			if err := b.Close(); err != nil && errs[r] == nil {
				errs[r] = err
			}
		})
	}
	wg.Wait()
	f.shutdown()
	return errs
}

func TestPMIFakeExchange(t *testing.T) {
	for _, k := range pmiKinds {
		for _, limits := range [][2]int{{64, 1024}, {32, 40}} {
			t.Run(fmt.Sprintf("%s-%d-%d", k.name, limits[0], limits[1]), func(t *testing.T) {
				f := newFakePMI(3, k.version)
				f.port = k.port
				if k.version == 1 {
					f.keylen, f.vallen = limits[0], limits[1]
				} else if limits[0] != 64 {
					t.Skip("PMI-2 limits are fixed")
				}
				errs := runRanks(t, f, func(ctx context.Context, b *PMI) error {
					if b.Version() != k.version {
						return fmt.Errorf("version %d", b.Version())
					}
					return exchangeRounds(ctx, b)
				})
				for r, err := range errs {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
				}
				if v := f.Violations(); len(v) > 0 {
					t.Errorf("the launcher saw requests it refuses: %q", v)
				}
			})
		}
	}
}

func TestPMILimits(t *testing.T) {
	// A launcher with short keys: a key whose native form cannot fit is refused
	// at Put and Get, before anything reaches the launcher.
	f := newFakePMI(1, 1)
	f.keylen = 20
	errs := runRanks(t, f, func(ctx context.Context, b *PMI) error {
		long := strings.Repeat("k", 16)
		if err := b.Put(long, []byte("v")); !errors.Is(err, ErrInvalidKey) {
			return fmt.Errorf("put of a key too long for the launcher: %v", err)
		}
		if _, err := b.Get(ctx, 0, long); !errors.Is(err, ErrInvalidKey) {
			return fmt.Errorf("get of a key too long for the launcher: %v", err)
		}
		// A short key with a value needing many chunks: still refused when the
		// chunk suffix no longer fits.
		if err := b.Put("k123456789abcd", make([]byte, MaxValueLen)); !errors.Is(err, ErrInvalidKey) {
			return fmt.Errorf("put of a value whose chunk keys do not fit: %v", err)
		}
		if err := b.Put("bad/key", nil); !errors.Is(err, ErrInvalidKey) {
			return fmt.Errorf("put of a key with '/': %v", err)
		}
		if err := b.Put("k", make([]byte, MaxValueLen+1)); !errors.Is(err, ErrValueTooLarge) {
			return fmt.Errorf("put of a value too large: %v", err)
		}
		if _, err := b.Get(ctx, 1, "k"); !errors.Is(err, ErrBadRank) {
			return fmt.Errorf("get of rank 1 of 1: %v", err)
		}
		if err := b.Put("k", nil); err != nil {
			return err
		}
		if err := b.Fence(ctx); err != nil {
			return err
		}
		if v, err := b.Get(ctx, 0, "k"); err != nil || len(v) != 0 {
			return fmt.Errorf("empty value: %q %v", v, err)
		}
		return nil
	})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("the launcher saw requests it refuses: %q", v)
	}
	// Limits too small to carry anything: the backend refuses to start.
	f = newFakePMI(1, 1)
	f.vallen = 8
	_, err := dialFake(t.Context(), f, 0)
	f.shutdown()
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("vallen_max=8: %v, want ErrNotSupported", err)
	}
}

// misbehaving runs one rank of a job of one against a fake whose hook
// answers requests with cmd for the first time with raw, and returns the
// error of step.
func misbehaving(t *testing.T, version int, cmd, raw string, step func(ctx context.Context, b *PMI) error) error {
	t.Helper()
	f := newFakePMI(1, version)
	done := false
	f.misbehave = func(rank int, m pmiMsg) (string, bool) {
		if m.cmd != cmd || done {
			return "", false
		}
		done = true
		return raw, true
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := dialFake(ctx, f, 0)
	if err == nil {
		err = step(ctx, b)
		b.Close()
	}
	f.shutdown()
	return err
}

func putFence(ctx context.Context, b *PMI) error {
	if err := b.Put("k", []byte("value")); err != nil {
		return err
	}
	return b.Fence(ctx)
}

func TestPMIMisbehavingLauncher(t *testing.T) {
	nop := func(context.Context, *PMI) error { return nil }
	for _, tc := range []struct {
		name       string
		version    int
		cmd, raw   string
		step       func(context.Context, *PMI) error
		want       error
		wantDetail string
	}{
		{"init refused", 1, "init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n", nop, ErrNotSupported, "refused"},
		{"init wrong reply", 1, "init", "cmd=maxes\n", nop, ErrProtocol, "response_to_init"},
		{"init garbage", 1, "init", "hello world\n", nop, ErrProtocol, "key=value"},
		{"maxes garbage", 1, "get_maxes", "cmd=maxes keylen_max=x vallen_max=1024\n", nop, ErrProtocol, "keylen_max"},
		{"kvsname with space", 1, "get_my_kvsname", "cmd=my_kvsname kvsname=\n", nop, ErrProtocol, "kvsname"},
		{"closed in init", 1, "get_maxes", "", nop, ErrLauncherLost, ""},
		{"closed in fence", 1, "barrier_in", "", putFence, ErrLauncherLost, ""},
		{"put refused", 1, "put", "cmd=put_result rc=-1 msg=no_room\n", putFence, ErrProtocol, "no_room"},
		{"endless line", 1, "barrier_in", strings.Repeat("x", 2*maxPMILine), putFence, ErrProtocol, "longer"},
		{"corrupt value", 1, "get", "cmd=get_result rc=0 value=x:AAAA\n", func(ctx context.Context, b *PMI) error {
			if err := putFence(ctx, b); err != nil {
				return err
			}
			_, err := b.Get(ctx, 0, "k")
			return err
		}, ErrProtocol, "chunk count"},
		{"missing chunk", 1, "get", "cmd=get_result rc=0 value=2:AAAA\n", func(ctx context.Context, b *PMI) error {
			if err := putFence(ctx, b); err != nil {
				return err
			}
			_, err := b.Get(ctx, 0, "k")
			return err
		}, ErrProtocol, "missing"},
		{"pmi2 refused", 2, "init", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n", nop, ErrNotSupported, "version"},
		{"pmi2 bad prefix", 2, "fullinit", "abcdefcmd=fullinit-response;rc=0;", nop, ErrProtocol, "prefix"},
		{"pmi2 huge prefix", 2, "fullinit", "999999cmd=", nop, ErrProtocol, "exceeds"},
		{"pmi2 wrong rank", 2, "fullinit", pmi2Reply("fullinit-response", "rc", "0", "rank", "3", "size", "4"), nop, ErrProtocol, "rank"},
		{"pmi2 fullinit refused", 2, "fullinit", pmi2Reply("fullinit-response", "rc", "3"), nop, ErrBadEnv, "fullinit"},
		{"pmi2 unterminated", 2, "kvs-fence", "000010cmd=abc;de", putFence, ErrProtocol, "value"},
		{"pmi2 closed mid-message", 2, "kvs-fence", "000030cmd=kvs" + hangUp, putFence, ErrLauncherLost, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := misbehaving(t, tc.version, tc.cmd, tc.raw, tc.step)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			var oe *OpError
			if !errors.As(err, &oe) {
				t.Errorf("%v is not an *OpError", err)
			}
			if !strings.Contains(err.Error(), tc.wantDetail) {
				t.Errorf("%q does not say %q", err, tc.wantDetail)
			}
		})
	}
}

func TestPMIAfterFailure(t *testing.T) {
	// A refused put leaves the stream in step: the backend stays usable.
	err := misbehaving(t, 1, "put", "cmd=put_result rc=-1 msg=no_room\n", func(ctx context.Context, b *PMI) error {
		if err := putFence(ctx, b); !errors.Is(err, ErrProtocol) {
			return fmt.Errorf("first fence: %v", err)
		}
		return putFence(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A lost launcher ends the backend: later calls fail at once.
	err = misbehaving(t, 1, "barrier_in", "", func(ctx context.Context, b *PMI) error {
		if err := b.Barrier(ctx); !errors.Is(err, ErrLauncherLost) {
			return fmt.Errorf("barrier: %v", err)
		}
		if _, err := b.Get(ctx, 0, "k"); !errors.Is(err, ErrLauncherLost) {
			return fmt.Errorf("get after loss: %v", err)
		}
		if err := b.Put("k", nil); !errors.Is(err, ErrLauncherLost) {
			return fmt.Errorf("put after loss: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPMIContext(t *testing.T) {
	// Rank 1 never comes: rank 0's barrier ends with its context, and the
	// backend then refuses further calls (PMI cannot withdraw the barrier).
	f := newFakePMI(2, 1)
	b, err := dialFake(t.Context(), f, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	err = b.Barrier(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("barrier: %v, want DeadlineExceeded", err)
	}
	if err := b.Barrier(t.Context()); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "withdraw") {
		t.Fatalf("barrier after an interrupted one: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	f.shutdown()
	// A context already ended: nothing is sent.
	f = newFakePMI(1, 2)
	b, err = dialFake(t.Context(), f, 0)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Fence(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("fence with an ended context: %v", err)
	}
	if err := putFence(t.Context(), b); err != nil {
		t.Fatalf("the backend must still work: %v", err)
	}
	b.Close()
	f.shutdown()
}

func TestPMIAbort(t *testing.T) {
	for _, version := range []int{1, 2} {
		f := newFakePMI(1, version)
		b, err := dialFake(t.Context(), f, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Abort(7, "giving up; really = now"); err != nil {
			t.Fatalf("abort: %v", err)
		}
		if err := b.Barrier(t.Context()); !errors.Is(err, ErrAborted) {
			t.Fatalf("barrier after abort: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		f.shutdown()
		want := "cmd=abort exitcode=7"
		if version == 2 {
			want = "cmd=abort isworld=TRUE msg=giving up, really , now"
		}
		if len(f.aborts) != 1 || f.aborts[0] != want+"\n" {
			t.Errorf("PMI-%d: launcher saw aborts %q, want %q", version, f.aborts, want)
		}
	}
}

// socketpairFD returns a descriptor of this process connected to the fake as
// rank, as a launcher's PMI_FD is.
func socketpairFD(t *testing.T, f *fakePMI, rank int) int {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	file := os.NewFile(uintptr(fds[1]), "fake") // owns fds[1] from here on
	srv, err := net.FileConn(file)
	file.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer srv.Close()
		f.serve(rank, srv)
	}()
	return fds[0]
}

func TestOpenPMI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		version int
	}{
		{"hydra", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2"}, 1},
		{"slurm", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2", "PMI_JOBID": "7.0"}, 2},
		{"forced pmi2", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2", EnvPMIVersion: "2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePMI(2, tc.version)
			tc.env["PMI_FD"] = strconv.Itoa(socketpairFD(t, f, 0))
			b, err := openFrom(t.Context(), envMap(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if name := backendName(b); name != fmt.Sprintf("pmi%d", tc.version) || b.Rank() != 0 || b.Size() != 2 {
				t.Errorf("backend %s rank %d size %d", name, b.Rank(), b.Size())
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			// The descriptor stays taken: a second Open is refused.
			if _, err := openFrom(t.Context(), envMap(tc.env)); !errors.Is(err, ErrBadEnv) || !strings.Contains(err.Error(), "already") {
				t.Errorf("second Open on the same PMI_FD: %v", err)
			}
			f.shutdown()
		})
	}
	t.Run("port", func(t *testing.T) {
		f := newFakePMI(2, 1)
		f.port = true
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		f.wg.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			f.serve(1, c)
		})
		b, err := openFrom(t.Context(), envMap(map[string]string{"PMI_PORT": ln.Addr().String(), "PMI_ID": "1"}))
		if err != nil {
			t.Fatal(err)
		}
		if backendName(b) != "pmi1" || b.Rank() != 1 || b.Size() != 2 {
			t.Errorf("backend %s rank %d size %d", backendName(b), b.Rank(), b.Size())
		}
		b.Close()
		f.shutdown()
	})
	t.Run("not a socket", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		_, err = openFrom(t.Context(), envMap(map[string]string{"PMI_FD": strconv.Itoa(int(r.Fd())), "PMI_RANK": "0", "PMI_SIZE": "2"}))
		if !errors.Is(err, ErrBadEnv) {
			t.Fatalf("PMI_FD of a pipe: %v, want ErrBadEnv", err)
		}
		// The descriptor is left alone.
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatalf("the pipe was closed: %v", err)
		}
	})
	for name, env := range map[string]map[string]string{
		"bad version": {"PMI_FD": "0", "PMI_RANK": "0", "PMI_SIZE": "2", EnvPMIVersion: "3"},
		"no rank":     {"PMI_FD": "0", "PMI_SIZE": "2"},
		"no id":       {"PMI_PORT": "127.0.0.1:1", "PMI_SIZE": "2"},
		"bad id":      {"PMI_PORT": "127.0.0.1:1", "PMI_ID": "-1"},
	} {
		if _, err := openFrom(t.Context(), envMap(env)); !errors.Is(err, ErrBadEnv) {
			t.Errorf("%s: %v, want ErrBadEnv", name, err)
		}
	}
	// Nothing listens at PMI_PORT: the launcher is lost.
	port := freePorts(t, 1)[0]
	if _, err := openFrom(t.Context(), envMap(map[string]string{"PMI_PORT": "127.0.0.1:" + strconv.Itoa(port), "PMI_ID": "0", "PMI_SIZE": "2"})); !errors.Is(err, ErrLauncherLost) {
		t.Errorf("dead PMI_PORT: %v, want ErrLauncherLost", err)
	}
}

func TestPMIChunks(t *testing.T) {
	for _, maxVal := range []int{16, 40, 1023} {
		for _, n := range []int{0, 1, 13, 14, 15, 100, 5000} {
			enc := strings.Repeat("x", n)
			cs := chunks(enc, maxVal)
			var got bytes.Buffer
			for i, c := range cs {
				if len(c) > maxVal {
					t.Fatalf("maxVal %d, n %d: chunk %d has %d bytes", maxVal, n, i, len(c))
				}
				if i == 0 {
					ns, rest, _ := strings.Cut(c, ":")
					if ns != strconv.Itoa(len(cs)) {
						t.Fatalf("maxVal %d, n %d: count %q, want %d", maxVal, n, ns, len(cs))
					}
					c = rest
				}
				got.WriteString(c)
			}
			if got.String() != enc {
				t.Fatalf("maxVal %d, n %d: chunks do not join back", maxVal, n)
			}
		}
	}
}

func TestPMI2FenceWaitsForAll(t *testing.T) {
	// A launcher whose kvs-fence returns at once (hydra 4.0): Fence and
	// Barrier still return only once every rank has entered them.
	f := newFakePMI(2, 2)
	f.fenceNoWait = true
	var entered [2]atomic.Bool
	errs := runRanks(t, f, func(ctx context.Context, b *PMI) error {
		for i, call := range []func(context.Context) error{b.Fence, b.Barrier} {
			if b.Rank() == 1 {
				time.Sleep(100 * time.Millisecond) // rank 0 is waiting by now
				entered[i].Store(true)
			}
			if err := call(ctx); err != nil {
				return err
			}
			if !entered[i].Load() {
				return fmt.Errorf("collective %d returned before rank 1 entered it", i)
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
