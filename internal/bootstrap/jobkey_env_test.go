package bootstrap

import (
	"bytes"
	"testing"
)

// TestJobKeyFromEnvironmentWithoutAJob: a process that joined no job takes its
// key from PTL_JOB_KEY (how a program with its own PMI gives every rank the same
// secret), and has none without it.
func TestJobKeyFromEnvironmentWithoutAJob(t *testing.T) {
	saved := processKey.Swap(nil)
	defer processKey.Store(saved)
	t.Setenv(EnvJobKey, "")
	if k, known := JobKey(); !known || len(k) != 0 {
		t.Fatalf("no job, no PTL_JOB_KEY: key %q known %v, want none", k, known)
	}
	t.Setenv(EnvJobKey, "shared-secret")
	if k, known := JobKey(); !known || !bytes.Equal(k, []byte("shared-secret")) {
		t.Fatalf("no job, PTL_JOB_KEY set: key %q known %v, want the variable's", k, known)
	}
	// A job's own key wins over the variable.
	processKey.Store(knownKey("the-job"))
	if k, _ := JobKey(); !bytes.Equal(k, []byte("the-job")) {
		t.Fatalf("in a job: key %q, want the job's", k)
	}
}
