package loopback

import "github.com/goportals/goportals/internal/verbs"

// ProviderName is the name the provider registers under.
const ProviderName = "loopback"

// DeviceName is the name of the provider's only device.
const DeviceName = "loop0"

// maxSGE is the largest scatter-gather list of one work request; execution resolves SGEs
// into fixed arrays of this size so that it allocates nothing.
const maxSGE = 16

// Limits reports the device attributes of loop0.
var limits = verbs.DeviceAttr{
	MaxMR:      4096,
	MaxMRSize:  1 << 40,
	MaxQP:      1024,
	MaxQPWR:    4096,
	MaxSGE:     maxSGE,
	MaxCQE:     1 << 16,
	MaxInline:  256,
	MaxMsgSize: 1 << 31,
	Atomics:    true,
	PageSize:   4096,
}

// Queue pair defaults when QPAttr leaves a field 0.
const (
	defaultQPWR = 256
)

func init() { verbs.Register(Provider{}) }

// Provider is the loopback provider. Its zero value is ready to use; it is also
// registered with verbs.Register under ProviderName.
type Provider struct{}

// Name returns ProviderName.
func (Provider) Name() string { return ProviderName }

// Devices returns the single device loop0.
func (Provider) Devices() ([]verbs.Device, error) { return []verbs.Device{Device{}}, nil }

// Device is the loopback device loop0.
type Device struct{}

// Name returns DeviceName.
func (Device) Name() string { return DeviceName }

// Open returns a new, independent context. Queue pairs of any two contexts of the
// process can connect to each other.
func (d Device) Open() (verbs.Context, error) { return newContext(d), nil }
