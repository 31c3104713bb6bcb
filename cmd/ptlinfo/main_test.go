package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/rdmadev"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/ibv"
)

// asMainEnv makes the test binary run ptlinfo's main, so the tests run the program
// as users do (and its CMA probe child, which re-executes it).
const asMainEnv = "PTLINFO_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// ptlinfo runs the program with args and extra environment, returning stdout and the
// exit status.
func ptlinfo(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	// Drop PTL_* of the test's own environment, so the report reflects env alone.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, asMainEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run ptlinfo: %v", err)
	}
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), code
}

func decode(t *testing.T, out string) Report {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("-json output has more than one object:\n%s", out)
	}
	return r
}

func TestJSONReport(t *testing.T) {
	out, code := ptlinfo(t, []string{"PTL_PROVIDER=soft", "PTL_RCACHE_MAX_ENTRIES=123", "PTL_RCACHE_MAX_BYTES=64M",
		"PTL_JOB_KEY=topsecretkey", "PTL_BOGUS_KNOB=1"}, "-json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	r := decode(t, out)

	if r.Selection.Requested != "soft" || r.Selection.Chosen != "soft" || r.Selection.Error != "" {
		t.Errorf("selection %+v, want soft chosen by name", r.Selection)
	}
	names := map[string]ProviderInfo{}
	for _, p := range r.Providers {
		names[p.Name] = p
	}
	for _, n := range []string{"soft", "ibv"} {
		if _, ok := names[n]; !ok {
			t.Errorf("provider %s missing from %+v", n, r.Providers)
		}
	}
	if d := names["soft"].Detail; !strings.HasPrefix(d, "pin method: ") {
		t.Errorf("soft provider detail %q, want its pin method", d)
	}
	probe := ibv.Provider{}.Probe()
	if got := names["ibv"]; got.Usable != (probe == nil) || (probe != nil && got.Why != probe.Error()) {
		t.Errorf("ibv reported %+v, Probe says %v", got, probe)
	}

	_, err := rdmadev.List()
	if r.RDMA.Kernel == errors.Is(err, rdmadev.ErrNoRDMA) {
		t.Errorf("rdma kernel %v, rdmadev.List says %v", r.RDMA.Kernel, err)
	}

	if r.NI.Error != "" || r.NI.Limits == nil || r.NI.Provider != "soft" {
		t.Fatalf("NI %+v, want limits of an NI opened on soft", r.NI)
	}
	if r.NI.EagerThreshold == 0 || r.NI.EagerThreshold > r.NI.Limits.MaxMsgSize || r.NI.Limits.MaxPTIndex == 0 {
		t.Errorf("NI limits %+v, eager threshold %d", *r.NI.Limits, r.NI.EagerThreshold)
	}

	if r.Notifier.Kind == "" || r.Notifier.Guarantee == "" {
		t.Errorf("notifier %+v: kind and guarantee must be named", r.Notifier)
	}
	if r.PinCache.MaxEntries != 123 || r.PinCache.MaxBytes != 64<<20 || r.PinCache.Error != "" {
		t.Errorf("pin cache %+v, want the knobs 123 entries and 64 MiB", r.PinCache)
	}
	if r.PinCache.EffectiveMaxBytes == 0 || r.PinCache.EffectiveMaxBytes > r.PinCache.MaxBytes {
		t.Errorf("effective max bytes %d, max bytes %d", r.PinCache.EffectiveMaxBytes, r.PinCache.MaxBytes)
	}

	env := map[string]EnvVar{}
	for _, e := range r.Env {
		env[e.Name] = e
	}
	if e := env["PTL_PROVIDER"]; !e.Set || e.Value != "soft" {
		t.Errorf("PTL_PROVIDER reported %+v", e)
	}
	if e := env["PTL_RCACHE_MAX_ENTRIES"]; !e.Set || e.Value != "123" {
		t.Errorf("PTL_RCACHE_MAX_ENTRIES reported %+v", e)
	}
	if e := env["PTL_NOTIFIER"]; e.Set || e.Meaning == "" {
		t.Errorf("unset PTL_NOTIFIER reported %+v", e)
	}
	if e := env["PTL_JOB_KEY"]; !e.Set || strings.Contains(out, "topsecretkey") {
		t.Errorf("PTL_JOB_KEY reported %+v, and the secret must not appear in the output", e)
	}
	if !slices.Equal(r.UnknownEnv, []string{"PTL_BOGUS_KNOB"}) {
		t.Errorf("unknown variables %v, want [PTL_BOGUS_KNOB]", r.UnknownEnv)
	}

	checkSys(t, r)
}

func TestTextReport(t *testing.T) {
	out, code := ptlinfo(t, nil)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"provider:", "selected: ", "rdma devices:", "network interface (", "eager threshold: ",
		"memory notifier: ", "guarantee: ", "pin cache:", "RLIMIT_MEMLOCK:", "ptrace_scope", "process_vm_readv", "environment:"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, k := range knownEnv {
		if !strings.Contains(out, k.name) {
			t.Errorf("report lacks variable %s", k.name)
		}
	}
}

func TestBadProviderIsReported(t *testing.T) {
	out, code := ptlinfo(t, []string{"PTL_PROVIDER=nonsense"}, "-json")
	if code != 0 {
		t.Fatalf("exit %d: a bad knob is part of the report, not a failure\n%s", code, out)
	}
	r := decode(t, out)
	if r.Selection.Chosen != "" || !strings.Contains(r.Selection.Error, verbs.ErrUnknownProvider.Error()) {
		t.Errorf("selection %+v, want the unknown-provider error", r.Selection)
	}
	if r.NI.Error == "" {
		t.Errorf("NI %+v opened without a provider", r.NI)
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-bogus"}, &out, &errb); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if code := run([]string{"extra"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Errorf("extra argument: exit %d (%s), want 2 and the usage", code, errb.String())
	}
}

// TestKnownEnvComplete finds every environment variable constant of the library's
// sources (a "PTL_..." string assigned to a name containing "env", outside tests)
// and checks that ptlinfo lists exactly those.
func TestKnownEnvComplete(t *testing.T) {
	root := filepath.Join("..", "..")
	decl := regexp.MustCompile(`(?i)\b\w*env\w*\s*=\s*"(PTL_[A-Z0-9_]*[A-Z0-9])"`)
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			for _, m := range decl.FindAllStringSubmatch(sc.Text(), -1) {
				found[m[1]] = path
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 5 {
		t.Fatalf("found only %v: the scan is broken", found)
	}
	var listed []string
	for _, k := range knownEnv {
		listed = append(listed, k.name)
	}
	var missing, extra []string
	for name, path := range found {
		if !slices.Contains(listed, name) {
			missing = append(missing, name+" ("+path+")")
		}
	}
	for _, name := range listed {
		if _, ok := found[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("ptlinfo's variables differ from the sources: not listed %v; listed but not read %v", missing, extra)
	}
}
