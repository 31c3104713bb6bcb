package main

import (
	"flag"
	"testing"
	"time"
)

// TestRankArgvForwardsTransferFlags: the launcher starts its ranks with every
// transfer flag it was given (each rank parses its own command line: a flag
// left out takes its default there, whatever the launcher's user asked for).
func TestRankArgvForwardsTransferFlags(t *testing.T) {
	saved := xferOpts
	defer func() { xferOpts = saved }()
	want := xferOptions{np: 3, minSize: 16, maxSize: 64, iters: 7, window: 5, json: true, poll: true,
		timeout: 42 * time.Second, cpuprofile: "/tmp/cpu", trace: "/tmp/trace", warm: 7 * time.Millisecond}
	xferOpts = want
	argv := rankArgv("exe", xferByName("put_lat"))
	xferOpts = xferOptions{}
	fs := flag.NewFlagSet("rank", flag.ContinueOnError)
	xferFlags(fs) // every flag at its default
	if err := fs.Parse(argv[1:]); err != nil {
		t.Fatal(err)
	}
	if xferOpts != want {
		t.Fatalf("a rank started with %q has options\n%+v, want\n%+v", argv, xferOpts, want)
	}
	if fs.Arg(0) != "put_lat" || fs.NArg() != 1 {
		t.Fatalf("a rank's arguments after its flags: %q", fs.Args())
	}
}
