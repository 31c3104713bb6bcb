package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFirstHost(t *testing.T) {
	for list, want := range map[string]string{
		"localhost":               "localhost",
		"node[01-04,07],login1":   "node01",
		"a,b":                     "a",
		"rack[3-4]-n[1-2]":        "rack3-n1",
		"gpu[007]":                "gpu007",
		"n[12,3-4]x":              "n12x",
		"login1,node[01-04]":      "login1",
		"c[1-2],d":                "c1",
		"host.example.org,other1": "host.example.org",
	} {
		got, err := firstHost(list)
		if err != nil || got != want {
			t.Errorf("firstHost(%q) = %q, %v; want %q", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "[1-2]", "node[", "node[]", ",a", "a]"} {
		if got, err := firstHost(bad); !errors.Is(err, ErrBadEnv) {
			t.Errorf("firstHost(%q) = %q, %v; want ErrBadEnv", bad, got, err)
		}
	}
}

// rendezvousJob runs n ranks in goroutines, each opening its backend from
// env plus its rank variable, and runs exchangeRounds on each.
func rendezvousJob(t *testing.T, n int, rankVar string, env map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		e := maps.Clone(env)
		e[rankVar] = strconv.Itoa(r)
		wg.Go(func() {
			b, err := openFrom(ctx, envMap(e))
			if err != nil {
				errs[r] = err
				return
			}
			if _, ok := b.(*Rendezvous); !ok {
				errs[r] = fmt.Errorf("backend %T", b)
			} else {
				errs[r] = exchangeRounds(ctx, b)
			}
			if err := b.Close(); err != nil && errs[r] == nil {
				errs[r] = err
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// uniqueJob returns a job id no other test run on this machine uses now.
func uniqueJob(t *testing.T) string {
	return fmt.Sprintf("%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

func TestSlurmRendezvous(t *testing.T) {
	t.Run("one node", func(t *testing.T) {
		rendezvousJob(t, 3, "SLURM_PROCID", map[string]string{
			"SLURM_JOB_ID": uniqueJob(t), "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "3",
			"SLURM_STEP_NUM_NODES": "1", "SLURM_STEP_NODELIST": "localhost",
		})
	})
	t.Run("nodes over tcp", func(t *testing.T) {
		// Two nodes by Slurm's account, both this host: the ranks meet over TCP
		// on the first reserved port of the step.
		rendezvousJob(t, 2, "SLURM_PROCID", map[string]string{
			"SLURM_JOB_ID": uniqueJob(t), "SLURM_STEP_ID": "1", "SLURM_NTASKS": "2",
			"SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "localhost,localhost",
			"SLURM_STEP_RESV_PORTS": strconv.Itoa(freePorts(t, 1)[0]) + "-65000",
		})
	})
	t.Run("explicit", func(t *testing.T) {
		rendezvousJob(t, 2, "SLURM_PROCID", map[string]string{
			"SLURM_JOB_ID": uniqueJob(t), "SLURM_NTASKS": "2", "SLURM_NNODES": "5",
			EnvRendezvous: "tcp:127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0]), EnvJobKey: "secret",
		})
	})
}

func TestOpenMPIRendezvous(t *testing.T) {
	rendezvousJob(t, 2, "OMPI_COMM_WORLD_RANK", map[string]string{
		"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "PMIX_NAMESPACE": "ns" + uniqueJob(t),
	})
}

func TestRendezvousErrors(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"ompi on nodes":     {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "PMIX_NAMESPACE": "x"},
		"ompi no job":       {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
		"slurm no job":      {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NNODES": "1"},
		"slurm bad ports":   {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "a", "SLURM_STEP_RESV_PORTS": "x-y"},
		"slurm no nodes":    {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", "SLURM_NNODES": "2"},
		"bad rendezvous":    {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", EnvRendezvous: "nowhere"},
		"rendezvous port 0": {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", EnvRendezvous: "tcp:127.0.0.1:0"},
		"rank out of range": {"SLURM_PROCID": "2", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", "SLURM_NNODES": "1"},
	} {
		if _, err := openFrom(t.Context(), envMap(env)); !errors.Is(err, ErrBadEnv) {
			t.Errorf("%s: %v, want ErrBadEnv", name, err)
		}
	}
	// Rank 0 never comes: rank 1 gives up when its context ends, saying so.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := openFrom(ctx, envMap(map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": uniqueJob(t), "SLURM_NNODES": "1"}))
	if !errors.Is(err, ErrLauncherLost) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no rank 0: %v, want ErrLauncherLost and DeadlineExceeded", err)
	}
	// The wrong job key is refused by rank 0's server.
	port := strconv.Itoa(freePorts(t, 1)[0])
	env := map[string]string{"SLURM_NTASKS": "2", "SLURM_JOB_ID": "1", EnvRendezvous: "127.0.0.1:" + port}
	r0env := maps.Clone(env)
	r0env["SLURM_PROCID"], r0env[EnvJobKey] = "0", "right"
	errc := make(chan error, 1)
	var b0 Bootstrap
	go func() {
		var err error
		b0, err = openFrom(t.Context(), envMap(r0env))
		errc <- err
	}()
	r1env := maps.Clone(env)
	r1env["SLURM_PROCID"], r1env[EnvJobKey] = "1", "wrong"
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := openFrom(ctx, envMap(r1env)); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong job key: %v, want ErrAuth", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Rank 0 aborts: its Abort returns once the server has failed the job.
	if err := b0.Abort(3, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestLaunched(t *testing.T) {
	for env, want := range map[string]bool{
		"":                            false,
		EnvAddr:                       true,
		"PMI_FD PMI_SIZE=2":           true,
		"PMI_FD PMI_SIZE=1":           false,
		"PMI_PORT":                    true,
		"SLURM_PROCID SLURM_NTASKS=4": true,
		"SLURM_PROCID SLURM_NTASKS=1": false,
		"OMPI_COMM_WORLD_SIZE=2":      true,
	} {
		m := map[string]string{}
		for _, kv := range strings.Fields(env) {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		if got := launchedFrom(envMap(m)); got != want {
			t.Errorf("launched with %q: %v, want %v", env, got, want)
		}
	}
}
