package mdreg

import (
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"
)

// verbsRegistrar registers through a verbs protection domain.
type verbsRegistrar struct {
	pd     verbs.PD
	access verbs.Access
}

// VerbsRegistrar returns a regcache.Registrar that registers memory regions in pd with the
// given access rights (one cache per PD and access set).
func VerbsRegistrar(pd verbs.PD, access verbs.Access) regcache.Registrar[verbs.MR] {
	return verbsRegistrar{pd: pd, access: access}
}

// Register implements regcache.Registrar with PD.RegMR.
func (v verbsRegistrar) Register(mem []byte) (verbs.MR, error) { return v.pd.RegMR(mem, v.access) }

// Deregister implements regcache.Registrar with MR.Dereg.
func (v verbsRegistrar) Deregister(mr verbs.MR) error { return mr.Dereg() }
