package ibv

import (
	"github.com/goportals/goportals/internal/rdmadev"
	"github.com/goportals/goportals/internal/verbs"
)

// ProviderName is the name the provider registers under.
const ProviderName = "ibv"

func init() { verbs.Register(Provider{}) }

// Provider is the ibv provider. Its zero value is ready to use.
type Provider struct{}

// Name returns "ibv".
func (Provider) Name() string { return ProviderName }

// Devices lists the devices libibverbs can open. A kernel without RDMA, or a build
// without libibverbs, has no devices; that is not an error.
func (Provider) Devices() ([]verbs.Device, error) { return devices() }

// Probe returns nil when this build links libibverbs and a device has an active
// port; otherwise an error matching verbs.ErrNotSupported (no cgo or libibverbs in
// the build, no RDMA in the kernel) or verbs.ErrNoDevice (no device, or no active
// port) that says why. verbs.Select uses it for PTL_PROVIDER=auto.
func (Provider) Probe() error {
	if err := Linked(); err != nil {
		return err
	}
	if _, _, err := rdmadev.FirstActivePort(); err != nil {
		return err
	}
	devs, err := devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return verbs.Errorf("ibv: probe", verbs.ErrNoDevice, errLibSeesNone)
	}
	return nil
}

// Open opens the device called name ("" for the first device that has an active
// port, else the first device), like ibv_open_device.
func Open(name string) (verbs.Context, error) { return open(name) }
