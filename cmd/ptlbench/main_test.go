package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"no-such-test"}, &out, &errb); rc != 2 {
		t.Fatalf("unknown test: rc %d", rc)
	}
	if !strings.Contains(errb.String(), "churn") {
		t.Fatalf("usage does not list churn:\n%s", errb.String())
	}
	if rc := run(nil, &out, &errb); rc != 2 {
		t.Fatalf("no test: rc %d", rc)
	}
	if rc := run([]string{"-duration", "0s", "churn"}, &out, &errb); rc != 2 {
		t.Fatalf("zero duration: rc %d", rc)
	}
}
