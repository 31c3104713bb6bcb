package rdmadev

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"

	"github.com/goportals/goportals/internal/verbs"
)

// ErrNoRDMA reports that the kernel exposes no RDMA class (/sys/class/infiniband is
// absent: no RDMA driver loaded, or none built in). It matches verbs.ErrNotSupported.
var ErrNoRDMA = verbs.Errorf("rdmadev", verbs.ErrNotSupported,
	errors.New("no RDMA support in the kernel ("+rdmamap.RdmaClassDir+" is absent)"))

// PortState is a port's logical state, as the kernel numbers it (ib_port_state).
type PortState int

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

// Device is one RDMA device as sysfs describes it.
type Device struct {
	// Name is the device name (mlx5_0, rxe0...).
	Name string `json:"name"`
	// NodeGUID is the node GUID as sysfs prints it (four groups of four hex digits).
	NodeGUID string `json:"node_guid"`
	// NodeType is the node type name (CA, switch, router, RNIC...).
	NodeType string `json:"node_type"`
	// FWVersion is the firmware version, when the driver reports one.
	FWVersion string `json:"fw_version"`
	// Ports are the device's ports, by number.
	Ports []Port `json:"ports"`
	// CharDevices are the /dev/infiniband nodes of the device (uverbs, umad...).
	CharDevices []string `json:"char_devices"`
}

// Port is one port of a device.
type Port struct {
	// Num is the port number (from 1).
	Num int `json:"num"`
	// State is the logical state; StateName its name (DOWN, ACTIVE...).
	State     PortState `json:"state"`
	StateName string    `json:"state_name"`
	// PhysState is the physical state name (LinkUp, Disabled, Polling...).
	PhysState string `json:"phys_state"`
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE).
	LinkLayer string `json:"link_layer"`
	// LID is the port's local identifier (0 on Ethernet).
	LID uint16 `json:"lid"`
	// Rate is the link rate text, e.g. "100 Gb/sec (4X EDR)".
	Rate string `json:"rate"`
	// GIDs are the port's non-zero GID table entries.
	GIDs []GID `json:"gids"`
	// Netdevs are the network devices behind the port's GIDs (RoCE), sorted.
	Netdevs []string `json:"netdevs"`
}

// GID is one GID table entry.
type GID struct {
	// Index is the entry's index, the sgid_index to use for it.
	Index int `json:"index"`
	// Addr is the 16-byte GID.
	Addr net.IP `json:"addr"`
	// Type is "IB/RoCE v1" or "RoCE v2" (empty when the kernel does not say).
	Type string `json:"type"`
	// Netdev is the network device of a RoCE GID.
	Netdev string `json:"netdev"`
}

// Active reports whether the port can carry traffic (ACTIVE or ACTIVE_DEFER).
func (p Port) Active() bool { return p.State == PortActive || p.State == PortActiveDefer }

// PreferredGID picks the GID a queue pair should use on this port: on RoCE a
// RoCE v2 GID holding an IPv4-mapped address, else any RoCE v2 GID, else the first
// GID; on InfiniBand the first GID (index 0, the link-local port GID).
func (p Port) PreferredGID() (GID, bool) {
	if len(p.GIDs) == 0 {
		return GID{}, false
	}
	if p.LinkLayer == "Ethernet" {
		for _, g := range p.GIDs {
			if g.Type == "RoCE v2" && g.Addr.To4() != nil {
				return g, true
			}
		}
		for _, g := range p.GIDs {
			if g.Type == "RoCE v2" {
				return g, true
			}
		}
	}
	return p.GIDs[0], true
}

// ActivePorts returns the device's active ports.
func (d Device) ActivePorts() []Port {
	var out []Port
	for _, p := range d.Ports {
		if p.Active() {
			out = append(out, p)
		}
	}
	return out
}

// List returns every RDMA device, sorted by name. No RDMA in the kernel is
// ErrNoRDMA; an RDMA class with no device is an empty list and no error.
func List() ([]Device, error) {
	if err := classPresent(); err != nil {
		return nil, err
	}
	names := rdmamap.GetRdmaDeviceList()
	if names == nil {
		// rdmamap answers nil for an empty class and for one it could not read:
		// tell the two apart.
		if _, err := os.ReadDir(rdmamap.RdmaClassDir); err != nil {
			return nil, verbs.Errorf("rdmadev: list "+rdmamap.RdmaClassDir, verbs.ErrInvalidArgument, err)
		}
		return []Device{}, nil
	}
	sort.Strings(names)
	devs := make([]Device, 0, len(names))
	for _, n := range names {
		d, err := read(n)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// Lookup returns the device called name, or an error matching verbs.ErrNoDevice.
func Lookup(name string) (Device, error) {
	if err := classPresent(); err != nil {
		return Device{}, err
	}
	if !slices.Contains(rdmamap.GetRdmaDeviceList(), name) {
		return Device{}, verbs.Errorf("rdmadev: lookup "+strconv.Quote(name), verbs.ErrNoDevice, nil)
	}
	return read(name)
}

// FirstActivePort returns the first device (by name) and port with an active port.
// No RDMA in the kernel matches verbs.ErrNotSupported; devices without an active port
// (or none at all) match verbs.ErrNoDevice.
func FirstActivePort() (string, int, error) {
	devs, err := List()
	if err != nil {
		return "", 0, err
	}
	var seen []string
	for _, d := range devs {
		if a := d.ActivePorts(); len(a) > 0 {
			return d.Name, a[0].Num, nil
		}
		seen = append(seen, d.Name)
	}
	why := "no RDMA device"
	if len(seen) > 0 {
		why = "no active port on " + strings.Join(seen, ", ")
	}
	return "", 0, verbs.Errorf("rdmadev: active port", verbs.ErrNoDevice, errors.New(why))
}

// classPresent returns ErrNoRDMA when the RDMA class directory does not exist.
func classPresent() error {
	if _, err := os.Stat(rdmamap.RdmaClassDir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNoRDMA
		}
		return verbs.Errorf("rdmadev: stat "+rdmamap.RdmaClassDir, verbs.ErrInvalidArgument, err)
	}
	return nil
}

// read fills in one device.
func read(name string) (Device, error) {
	dir := filepath.Join(rdmamap.RdmaClassDir, name)
	d := Device{Name: name}
	d.NodeGUID, _ = attr(dir, "node_guid")
	d.FWVersion, _ = attr(dir, "fw_ver")
	if nt, err := attr(dir, "node_type"); err == nil {
		// "1: CA"
		_, d.NodeType = splitNumbered(nt)
	}
	d.CharDevices = rdmamap.GetRdmaCharDevices(name)
	// rdmamap adds the rdma_cm node whenever it exists, whatever the device: keep only
	// the device's own nodes.
	d.CharDevices = slices.DeleteFunc(d.CharDevices, func(s string) bool { return s == rdmamap.RdmaUcmDevice })
	if len(d.CharDevices) == 0 {
		d.CharDevices = nil
	}

	ports := rdmamap.GetPorts(name)
	if ports == nil {
		if _, err := os.ReadDir(filepath.Join(dir, rdmamap.RdmaPortsdir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Device{}, verbs.Errorf("rdmadev: ports of "+name, verbs.ErrInvalidArgument, err)
		}
	}
	for _, ps := range ports {
		num, err := strconv.Atoi(ps)
		if err != nil || num < 1 {
			return Device{}, verbs.Errorf("rdmadev: port "+strconv.Quote(ps)+" of "+name, verbs.ErrInvalidArgument, err)
		}
		p, err := readPort(filepath.Join(dir, rdmamap.RdmaPortsdir, ps), num)
		if err != nil {
			return Device{}, err
		}
		d.Ports = append(d.Ports, p)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

// readPort reads ports/N. The state file is required; the others are filled in when
// present.
func readPort(dir string, num int) (Port, error) {
	p := Port{Num: num}
	st, err := attr(dir, "state")
	if err != nil {
		return Port{}, verbs.Errorf("rdmadev: read "+filepath.Join(dir, "state"), verbs.ErrInvalidArgument, err)
	}
	n, name := splitNumbered(st)
	if n < 0 || name == "" {
		return Port{}, verbs.Errorf("rdmadev: parse "+filepath.Join(dir, "state"), verbs.ErrInvalidArgument,
			fmt.Errorf("%q is not \"N: NAME\"", st))
	}
	p.State, p.StateName = PortState(n), name
	if ph, err := attr(dir, "phys_state"); err == nil {
		_, p.PhysState = splitNumbered(ph)
	}
	p.LinkLayer, _ = attr(dir, "link_layer")
	p.Rate, _ = attr(dir, "rate")
	if l, err := attr(dir, "lid"); err == nil {
		v, err := strconv.ParseUint(strings.TrimPrefix(l, "0x"), 16, 16)
		if err != nil {
			return Port{}, verbs.Errorf("rdmadev: parse "+filepath.Join(dir, "lid"), verbs.ErrInvalidArgument, err)
		}
		p.LID = uint16(v)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Port{}, verbs.Errorf("rdmadev: read "+filepath.Join(dir, "gids"), verbs.ErrInvalidArgument, err)
	}
	netdevs := map[string]bool{}
	for _, e := range entries {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		g, ok := readGID(dir, idx)
		if !ok {
			continue
		}
		p.GIDs = append(p.GIDs, g)
		if g.Netdev != "" {
			netdevs[g.Netdev] = true
		}
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	for n := range netdevs {
		p.Netdevs = append(p.Netdevs, n)
	}
	sort.Strings(p.Netdevs)
	return p, nil
}

// readGID reads entry idx; unset entries (all zero, or unreadable as the kernel makes
// unused entries' attributes) are skipped.
func readGID(port string, idx int) (GID, bool) {
	i := strconv.Itoa(idx)
	s, err := attr(filepath.Join(port, "gids"), i)
	if err != nil {
		return GID{}, false
	}
	ip := net.ParseIP(s)
	if ip == nil || ip.IsUnspecified() {
		return GID{}, false
	}
	g := GID{Index: idx, Addr: ip}
	g.Type, _ = attr(filepath.Join(port, rdmamap.RdmaGidAttrDir, "types"), i)
	g.Netdev, _ = attr(filepath.Join(port, rdmamap.RdmaGidAttrDir, rdmamap.RdmaGidAttrNdevDir), i)
	return g, true
}

// attr reads one sysfs attribute without its trailing newline.
func attr(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// splitNumbered splits "4: ACTIVE" into 4 and "ACTIVE"; -1 when there is no number.
func splitNumbered(s string) (int, string) {
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return -1, strings.TrimSpace(s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return -1, strings.TrimSpace(name)
	}
	return n, strings.TrimSpace(name)
}
