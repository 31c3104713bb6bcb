package verbs

import (
	"errors"
	"strings"
	"testing"
)

// fakeProvider is a provider whose availability the test sets.
type fakeProvider struct {
	name  string
	probe error
}

func (f fakeProvider) Name() string               { return f.name }
func (f fakeProvider) Devices() ([]Device, error) { return nil, nil }
func (f fakeProvider) Probe() error               { return f.probe }

// withRegistry runs the test against a registry holding exactly ps, restoring the
// process's registry afterwards.
func withRegistry(t *testing.T, ps ...Provider) {
	t.Helper()
	registry.mu.Lock()
	saved := registry.providers
	registry.providers = nil
	registry.mu.Unlock()
	t.Cleanup(func() {
		registry.mu.Lock()
		registry.providers = saved
		registry.mu.Unlock()
	})
	for _, p := range ps {
		Register(p)
	}
}

var errNoPort = Errorf("probe ibv", ErrNoDevice, errors.New("no active port"))

func TestSelect(t *testing.T) {
	soft := fakeProvider{name: "soft"}
	ibvUp := fakeProvider{name: "ibv"}
	ibvDown := fakeProvider{name: "ibv", probe: errNoPort}
	loop := fakeProvider{name: "loopback"}
	cases := []struct {
		name     string
		reg      []Provider
		req      string
		want     string
		wantErr  error
		reasonOK func(string) bool
	}{
		{name: "empty means auto, ibv up", reg: []Provider{soft, ibvUp}, req: "", want: "ibv"},
		{name: "auto with an active port", reg: []Provider{soft, ibvUp}, req: "auto", want: "ibv"},
		{name: "auto without an active port", reg: []Provider{soft, ibvDown}, req: "auto", want: "soft"},
		{name: "auto without ibv linked", reg: []Provider{soft}, req: "AUTO", want: "soft"},
		{name: "auto with nothing usable", reg: []Provider{ibvDown}, req: "auto", wantErr: ErrNotSupported},
		{name: "soft by name", reg: []Provider{soft, ibvUp}, req: "soft", want: "soft"},
		{name: "ibv by name", reg: []Provider{soft, ibvUp}, req: " ibv ", want: "ibv"},
		{name: "ibv by name, no port", reg: []Provider{soft, ibvDown}, req: "ibv", wantErr: ErrNoDevice},
		{name: "ibv by name, not linked", reg: []Provider{soft}, req: "ibv", wantErr: ErrNotSupported},
		{name: "loopback by name", reg: []Provider{soft, loop}, req: "loopback", want: "loopback"},
		{name: "unknown name", reg: []Provider{soft, ibvUp}, req: "verbs", wantErr: ErrUnknownProvider},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			withRegistry(t, tc.reg...)
			p, reason, err := Explain(tc.req)
			if tc.wantErr != nil {
				var oe *OpError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &oe) {
					t.Fatalf("Explain(%q) = %v, %q, %v; want an *OpError matching %v", tc.req, p, reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Explain(%q): %v", tc.req, err)
			}
			if p.Name() != tc.want {
				t.Fatalf("Explain(%q) chose %q, want %q", tc.req, p.Name(), tc.want)
			}
			if reason == "" {
				t.Errorf("Explain(%q) gave no reason", tc.req)
			}
			q, err := Select(tc.req)
			if err != nil || q.Name() != p.Name() {
				t.Errorf("Select(%q) = %v, %v; Explain chose %q", tc.req, q, err, p.Name())
			}
		})
	}
}

func TestAutoReasonNamesTheProbe(t *testing.T) {
	withRegistry(t, fakeProvider{name: "soft"}, fakeProvider{name: "ibv", probe: errNoPort})
	_, reason, err := Explain("auto")
	if err != nil {
		t.Fatal(err)
	}
	if want := "no active port"; !strings.Contains(reason, want) {
		t.Errorf("auto reason %q does not say why ibv was passed over (%q)", reason, want)
	}
}

func TestChooseReadsEnv(t *testing.T) {
	withRegistry(t, fakeProvider{name: "soft"}, fakeProvider{name: "ibv"}, fakeProvider{name: "loopback"})
	t.Setenv(EnvProvider, "loopback")
	p, err := Choose()
	if err != nil || p.Name() != "loopback" {
		t.Fatalf("Choose with %s=loopback: %v, %v", EnvProvider, p, err)
	}
	t.Setenv(EnvProvider, "nonsense")
	if _, err := Choose(); !errors.Is(err, ErrUnknownProvider) {
		t.Fatalf("Choose with %s=nonsense: %v, want ErrUnknownProvider", EnvProvider, err)
	}
}
