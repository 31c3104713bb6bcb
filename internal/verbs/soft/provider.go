package soft

import (
	"github.com/goportals/goportals/internal/verbs"
)

// ProviderName is the name the provider registers under.
const ProviderName = "soft"

// DeviceName is the name of the provider's one device.
const DeviceName = "soft0"

func init() { verbs.Register(Provider{}) }

// Provider is the soft provider. Its zero value is ready to use.
type Provider struct{}

// Name returns "soft".
func (Provider) Name() string { return ProviderName }

// Devices returns the one device "soft0", or none when the platform lacks what the
// provider needs (memfd, futex, process_vm_readv: Linux only).
func (Provider) Devices() ([]verbs.Device, error) {
	if !supported {
		return nil, nil
	}
	return []verbs.Device{device{}}, nil
}

type device struct{}

func (device) Name() string { return DeviceName }

func (device) Open() (verbs.Context, error) { return Open() }

// Attributes of the soft device.
const (
	defaultSendWR = 256
	defaultRecvWR = 256
	defaultSGE    = 16
	maxQPWR       = 16384
	maxCQE        = 1 << 20
	maxInline     = 1024
	maxQPs        = 4096
	// cmaThreshold: RDMA transfers above it use process_vm_readv/writev (one copy);
	// those at or below it travel through the ring.
	cmaThreshold = maxPayload
)

var attr = verbs.DeviceAttr{
	MaxMR:      maxMR,
	MaxMRSize:  1 << 40,
	MaxQP:      maxQPs,
	MaxQPWR:    maxQPWR,
	MaxSGE:     64,
	MaxCQE:     maxCQE,
	MaxInline:  maxInline,
	MaxMsgSize: 1 << 31,
	Atomics:    true,
	PageSize:   pageSize,
}
