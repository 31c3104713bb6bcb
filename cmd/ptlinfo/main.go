package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if runCMAProbe() {
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is ptlinfo with its arguments and output streams; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptlinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ptlinfo [-json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "ptlinfo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	r := gather()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, "ptlinfo:", err)
			return 1
		}
		return 0
	}
	printText(stdout, r)
	return 0
}

// printText prints the report for people.
func printText(w io.Writer, r Report) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	b := r.Build
	p("# goportals %s %s (%s, %s/%s, cgo %v)", b.Module, b.Version, b.Go, b.OS, b.Arch, b.Cgo)
	p("# libibverbs: %s", b.Libibverbs)
	p("")
	p("provider:")
	req := r.Selection.Requested
	if req == "" {
		req = "(unset: auto)"
	}
	p("  PTL_PROVIDER=%s", req)
	if r.Selection.Error != "" {
		p("  selected: none: %s", r.Selection.Error)
	} else {
		p("  selected: %s (%s)", r.Selection.Chosen, r.Selection.Reason)
	}
	for _, pi := range r.Providers {
		state := "usable"
		if !pi.Usable {
			state = "unusable: " + pi.Why
		}
		devs := strings.Join(pi.Devices, ", ")
		if devs == "" {
			devs = "-"
		}
		p("  %-9s devices: %-12s %s", pi.Name, devs, state)
		if pi.Detail != "" {
			p("            %s", pi.Detail)
		}
	}
	p("")
	p("rdma devices:")
	switch {
	case !r.RDMA.Kernel:
		p("  none: %s", r.RDMA.Error)
	case r.RDMA.Error != "":
		p("  error: %s", r.RDMA.Error)
	case len(r.RDMA.Devices) == 0:
		p("  none (the kernel has an RDMA class but no device)")
	}
	for _, d := range r.RDMA.Devices {
		p("  %s: node %s guid %s fw %s char devices %s", d.Name, d.NodeType, d.NodeGUID, d.FWVersion, strings.Join(d.CharDevices, " "))
		for _, pt := range d.Ports {
			p("    port %d: %s (%s) %s lid %#x rate %s netdevs %s", pt.Num, pt.StateName, pt.PhysState,
				pt.LinkLayer, pt.LID, pt.Rate, strings.Join(pt.Netdevs, ","))
			pref, _ := pt.PreferredGID()
			for _, g := range pt.GIDs {
				mark := " "
				if g.Index == pref.Index {
					mark = "*"
				}
				p("     %s gid[%d] %s %s %s", mark, g.Index, g.Addr, g.Type, g.Netdev)
			}
		}
	}
	p("")
	p("network interface (%s %s):", r.NI.Provider, r.NI.Device)
	if r.NI.Error != "" {
		p("  not opened: %s", r.NI.Error)
	}
	if l := r.NI.Limits; l != nil {
		p("  max_entries %d, max_unexpected_headers %d, max_mds %d, max_eqs %d, max_cts %d",
			l.MaxEntries, l.MaxUnexpectedHeaders, l.MaxMDs, l.MaxEQs, l.MaxCTs)
		p("  max_pt_index %d, max_iovecs %d, max_list_size %d, max_triggered_ops %d",
			l.MaxPTIndex, l.MaxIovecs, l.MaxListSize, l.MaxTriggeredOps)
		p("  max_msg_size %d, max_atomic_size %d, max_fetch_atomic_size %d",
			l.MaxMsgSize, l.MaxAtomicSize, l.MaxFetchAtomicSize)
		p("  max_waw_ordered_size %d, max_war_ordered_size %d, max_volatile_size %d",
			l.MaxWAWOrderedSize, l.MaxWAROrderedSize, l.MaxVolatileSize)
		feats := strings.Join(r.NI.Features, " ")
		if feats == "" {
			feats = "none"
		}
		p("  features: %s", feats)
	}
	p("  eager threshold: %d bytes (larger payloads move by RDMA READ/WRITE, one copy)", r.NI.EagerThreshold)
	p("")
	p("memory notifier: %s", r.Notifier.Kind)
	p("  guarantee: %s", r.Notifier.Guarantee)
	if r.Notifier.Error != "" {
		p("  note: %s", r.Notifier.Error)
	}
	p("")
	pc := r.PinCache
	p("pin cache:")
	if pc.Error != "" {
		p("  error: %s", pc.Error)
	}
	p("  max entries %d, max bytes %s (effective %s, RLIMIT_MEMLOCK share %s), disabled %v, PFN check %v",
		pc.MaxEntries, bytesText(pc.MaxBytes), bytesText(pc.EffectiveMaxBytes), limitText(pc.MemlockLimit), pc.Disabled, pc.CheckPFN)
	p("")
	printSys(p, r)
	p("")
	p("environment:")
	for _, e := range r.Env {
		v := "(unset)"
		if e.Set {
			v = fmt.Sprintf("%q", e.Value)
		}
		p("  %-22s = %-10s %s", e.Name, v, e.Meaning)
	}
	for _, k := range r.UnknownEnv {
		p("  %-22s   unknown: no part of goportals reads it (misspelled?)", k)
	}
}

// bytesText prints a byte count with a binary unit.
func bytesText(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// limitText prints a limit where 0 means none applies.
func limitText(n uint64) string {
	if n == 0 {
		return "none"
	}
	return bytesText(n)
}
