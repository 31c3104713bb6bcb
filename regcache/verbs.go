package regcache

import "github.com/goportals/goportals/internal/verbs"

// verbsRegistrar registers through a verbs protection domain.
type verbsRegistrar struct {
	pd     verbs.PD
	access verbs.Access
}

// VerbsRegistrar returns a Registrar that registers memory regions in pd with the
// given access rights (one cache per PD and access set).
func VerbsRegistrar(pd verbs.PD, access verbs.Access) Registrar[verbs.MR] {
	return verbsRegistrar{pd: pd, access: access}
}

// Register implements Registrar with PD.RegMR.
func (v verbsRegistrar) Register(mem []byte) (verbs.MR, error) { return v.pd.RegMR(mem, v.access) }

// Deregister implements Registrar with MR.Dereg.
func (v verbsRegistrar) Deregister(mr verbs.MR) error { return mr.Dereg() }
