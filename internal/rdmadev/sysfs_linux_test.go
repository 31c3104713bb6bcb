package rdmadev

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

// The discovery tests build fake sysfs trees. rdmamap reads fixed paths under
// /sys/class, so each scenario runs in a re-executed test child in a private mount
// namespace (CLONE_NEWNS; the runtime makes the mounts private) with a tmpfs over
// /sys/class. Only root can mount; other users skip.

const scenarioEnv = "PTL_RDMADEV_SCENARIO"

// classRoot is where the child mounts its tmpfs.
const classRoot = "/sys/class"

// fakePort describes one port to write.
type fakePort struct {
	state, phys, layer, lid, rate string
	gids                          []fakeGID
}

type fakeGID struct {
	gid, typ, ndev string
}

// fakeDevice describes one device to write.
type fakeDevice struct {
	name, guid, fw, uverbs string
	ports                  map[int]fakePort
}

// writeTree lays out devs the way the kernel does: /sys/class/infiniband/NAME is a
// symlink to the device directory, which holds node_guid, fw_ver, node_type and
// ports/N/{state,phys_state,link_layer,lid,rate,gids/I,gid_attrs/{types,ndevs}/I};
// /sys/class/infiniband_verbs/uverbsK/ibdev names the device of each char device.
func writeTree(t *testing.T, devs []fakeDevice) {
	t.Helper()
	w := func(path, val string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(val+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(classRoot, "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		real := filepath.Join(classRoot, ".devices", d.name)
		w(filepath.Join(real, "node_guid"), d.guid)
		w(filepath.Join(real, "fw_ver"), d.fw)
		w(filepath.Join(real, "node_type"), "1: CA")
		for n, p := range d.ports {
			pd := filepath.Join(real, "ports", fmt.Sprint(n))
			w(filepath.Join(pd, "state"), p.state)
			w(filepath.Join(pd, "phys_state"), p.phys)
			w(filepath.Join(pd, "link_layer"), p.layer)
			w(filepath.Join(pd, "lid"), p.lid)
			w(filepath.Join(pd, "rate"), p.rate)
			for i, g := range p.gids {
				w(filepath.Join(pd, "gids", fmt.Sprint(i)), g.gid)
				if g.typ != "" {
					w(filepath.Join(pd, "gid_attrs", "types", fmt.Sprint(i)), g.typ)
				}
				if g.ndev != "" {
					w(filepath.Join(pd, "gid_attrs", "ndevs", fmt.Sprint(i)), g.ndev)
				}
			}
		}
		if err := os.Symlink(filepath.Join("..", ".devices", d.name), filepath.Join(classRoot, "infiniband", d.name)); err != nil {
			t.Fatal(err)
		}
		if d.uverbs != "" {
			w(filepath.Join(classRoot, "infiniband_verbs", d.uverbs, "ibdev"), d.name)
		}
	}
}

const zeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

var ibActive = fakePort{state: "4: ACTIVE", phys: "5: LinkUp", layer: "InfiniBand", lid: "0x12",
	rate: "100 Gb/sec (4X EDR)", gids: []fakeGID{{gid: "fe80:0000:0000:0000:0002:c903:0001:0203"}, {gid: zeroGID}}}

var ibDown = fakePort{state: "1: DOWN", phys: "3: Disabled", layer: "InfiniBand", lid: "0x0",
	rate: "10 Gb/sec (4X SDR)", gids: []fakeGID{{gid: "fe80:0000:0000:0000:0002:c903:0001:0204"}}}

var roceActive = fakePort{state: "4: ACTIVE", phys: "5: LinkUp", layer: "Ethernet", lid: "0x0",
	rate: "25 Gb/sec (1X EDR)", gids: []fakeGID{
		{gid: "fe80:0000:0000:0000:5054:00ff:fe12:3456", typ: "IB/RoCE v1", ndev: "eth9"},
		{gid: "fe80:0000:0000:0000:5054:00ff:fe12:3456", typ: "RoCE v2", ndev: "eth9"},
		{gid: "0000:0000:0000:0000:0000:ffff:0a00:0009", typ: "RoCE v2", ndev: "eth9"},
		{gid: zeroGID}}}

var roceDown = fakePort{state: "1: DOWN", phys: "3: Disabled", layer: "Ethernet", lid: "0x0",
	rate: "25 Gb/sec (1X EDR)", gids: []fakeGID{
		{gid: "fe80:0000:0000:0000:5054:00ff:fe12:3457", typ: "IB/RoCE v1", ndev: "eth10"}}}

// scenario is one fake tree and what List must make of it.
type scenario struct {
	devs  []fakeDevice
	noDir bool // leave /sys/class/infiniband out (no RDMA in the kernel)
	check func(t *testing.T, devs []Device, err error)
}

var scenarios = map[string]scenario{
	"no-rdma": {noDir: true, check: func(t *testing.T, devs []Device, err error) {
		if !errors.Is(err, ErrNoRDMA) || !errors.Is(err, verbs.ErrNotSupported) || devs != nil {
			t.Fatalf("List without /sys/class/infiniband = %v, %v; want nil and ErrNoRDMA (matching ErrNotSupported)", devs, err)
		}
		if _, _, err := FirstActivePort(); !errors.Is(err, verbs.ErrNotSupported) {
			t.Fatalf("FirstActivePort without RDMA: %v, want ErrNotSupported", err)
		}
	}},
	"empty": {check: func(t *testing.T, devs []Device, err error) {
		if err != nil || len(devs) != 0 {
			t.Fatalf("List of an empty class = %v, %v; want no devices and no error", devs, err)
		}
		if _, _, err := FirstActivePort(); !errors.Is(err, verbs.ErrNoDevice) {
			t.Fatalf("FirstActivePort with no device: %v, want ErrNoDevice", err)
		}
	}},
	"one-ib-up": {devs: []fakeDevice{{name: "mlx5_0", guid: "0002:c903:0001:0203", fw: "16.35.2000",
		uverbs: "uverbs0", ports: map[int]fakePort{1: ibActive}}},
		check: func(t *testing.T, devs []Device, err error) {
			if err != nil || len(devs) != 1 {
				t.Fatalf("List = %v, %v; want one device", devs, err)
			}
			d := devs[0]
			want := Device{Name: "mlx5_0", NodeGUID: "0002:c903:0001:0203", NodeType: "CA", FWVersion: "16.35.2000",
				CharDevices: []string{"/dev/infiniband/uverbs0"},
				Ports: []Port{{Num: 1, State: PortActive, StateName: "ACTIVE", PhysState: "LinkUp",
					LinkLayer: "InfiniBand", LID: 0x12, Rate: "100 Gb/sec (4X EDR)",
					GIDs: []GID{{Index: 0, Addr: net.ParseIP("fe80::2:c903:1:203")}}}}}
			if !reflect.DeepEqual(d, want) {
				t.Fatalf("device\n got %+v\nwant %+v", d, want)
			}
			dev, port, err := FirstActivePort()
			if err != nil || dev != "mlx5_0" || port != 1 {
				t.Fatalf("FirstActivePort = %q %d %v, want mlx5_0 1", dev, port, err)
			}
		}},
	"one-ib-down": {devs: []fakeDevice{{name: "mlx5_0", guid: "0002:c903:0001:0204", fw: "16.35.2000",
		ports: map[int]fakePort{1: ibDown}}},
		check: func(t *testing.T, devs []Device, err error) {
			if err != nil || len(devs) != 1 || len(devs[0].Ports) != 1 {
				t.Fatalf("List = %+v, %v; want one device with one port", devs, err)
			}
			p := devs[0].Ports[0]
			if p.State != PortDown || p.StateName != "DOWN" || p.PhysState != "Disabled" || p.Active() {
				t.Fatalf("down port read as %+v", p)
			}
			if len(devs[0].CharDevices) != 0 {
				t.Errorf("char devices %v, want none", devs[0].CharDevices)
			}
			if _, _, err := FirstActivePort(); !errors.Is(err, verbs.ErrNoDevice) {
				t.Fatalf("FirstActivePort with the only port down: %v, want ErrNoDevice", err)
			}
		}},
	"two-devices": {devs: []fakeDevice{
		{name: "mlx5_0", guid: "0002:c903:0001:0204", fw: "16.35.2000", uverbs: "uverbs0", ports: map[int]fakePort{1: ibDown}},
		{name: "mlx5_1", guid: "5254:00ff:fe12:3456", fw: "22.36.1010", uverbs: "uverbs1",
			ports: map[int]fakePort{1: roceDown, 2: roceActive}}},
		check: func(t *testing.T, devs []Device, err error) {
			if err != nil || len(devs) != 2 || devs[0].Name != "mlx5_0" || devs[1].Name != "mlx5_1" {
				t.Fatalf("List = %+v, %v; want mlx5_0 and mlx5_1 in order", devs, err)
			}
			if a := devs[0].ActivePorts(); len(a) != 0 {
				t.Errorf("mlx5_0 active ports %v, want none", a)
			}
			r := devs[1]
			if len(r.Ports) != 2 || r.Ports[0].Num != 1 || r.Ports[1].Num != 2 {
				t.Fatalf("mlx5_1 ports %+v, want 1 and 2 in order", r.Ports)
			}
			if r.Ports[0].Active() || !r.Ports[1].Active() {
				t.Fatalf("mlx5_1 port states %v %v, want down then active", r.Ports[0].StateName, r.Ports[1].StateName)
			}
			up := r.Ports[1]
			if up.LinkLayer != "Ethernet" || !reflect.DeepEqual(up.Netdevs, []string{"eth9"}) {
				t.Errorf("RoCE port: link layer %q netdevs %v", up.LinkLayer, up.Netdevs)
			}
			wantGIDs := []GID{
				{Index: 0, Addr: net.ParseIP("fe80::5054:ff:fe12:3456"), Type: "IB/RoCE v1", Netdev: "eth9"},
				{Index: 1, Addr: net.ParseIP("fe80::5054:ff:fe12:3456"), Type: "RoCE v2", Netdev: "eth9"},
				{Index: 2, Addr: net.ParseIP("::ffff:10.0.0.9"), Type: "RoCE v2", Netdev: "eth9"},
			}
			if !reflect.DeepEqual(up.GIDs, wantGIDs) {
				t.Errorf("RoCE GIDs\n got %+v\nwant %+v", up.GIDs, wantGIDs)
			}
			if g, ok := up.PreferredGID(); !ok || g.Index != 2 {
				t.Errorf("PreferredGID = %+v %v, want index 2 (RoCE v2, IPv4-mapped)", g, ok)
			}
			if !reflect.DeepEqual(r.CharDevices, []string{"/dev/infiniband/uverbs1"}) {
				t.Errorf("mlx5_1 char devices %v", r.CharDevices)
			}
			dev, port, err := FirstActivePort()
			if err != nil || dev != "mlx5_1" || port != 2 {
				t.Fatalf("FirstActivePort = %q %d %v, want mlx5_1 2", dev, port, err)
			}
			if _, err := Lookup("mlx5_9"); !errors.Is(err, verbs.ErrNoDevice) {
				t.Errorf("Lookup of a missing device: %v, want ErrNoDevice", err)
			}
			if d, err := Lookup("mlx5_1"); err != nil || d.Name != "mlx5_1" {
				t.Errorf("Lookup(mlx5_1) = %+v, %v", d, err)
			}
		}},
	"malformed-state": {devs: []fakeDevice{{name: "mlx5_0", guid: "0002:c903:0001:0203", fw: "x",
		ports: map[int]fakePort{1: {state: "garbage", phys: "5: LinkUp", layer: "InfiniBand", lid: "0x1", rate: "?"}}}},
		check: func(t *testing.T, devs []Device, err error) {
			if !errors.Is(err, verbs.ErrInvalidArgument) || !strings.Contains(err.Error(), "state") {
				t.Fatalf("List with a malformed port state = %+v, %v; want ErrInvalidArgument naming the file", devs, err)
			}
		}},
}

// TestSysfsTrees runs every scenario in its own mount namespace.
func TestSysfsTrees(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: each scenario mounts a tmpfs over /sys/class in a private mount namespace")
	}
	for name := range scenarios {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSysfsChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), scenarioEnv+"="+name)
			cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestSysfsChild") {
				t.Fatalf("scenario %s: %v\n%s", name, err, out)
			}
		})
	}
}

// TestSysfsChild is the re-executed child of TestSysfsTrees.
func TestSysfsChild(t *testing.T) {
	name := os.Getenv(scenarioEnv)
	if name == "" {
		t.Skip("runs only as the child of TestSysfsTrees, inside its private mount namespace")
	}
	sc, ok := scenarios[name]
	if !ok {
		t.Fatalf("unknown scenario %q", name)
	}
	if err := syscall.Mount("tmpfs", classRoot, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs over %s: %v", classRoot, err)
	}
	if !sc.noDir {
		writeTree(t, sc.devs)
	}
	devs, err := List()
	sc.check(t, devs, err)
}
