package driverhooks

import "github.com/goportals/goportals/internal/envknob"

// CheckPFNEnv is the environment variable that turns the page-frame oracle on
// (PTL_CHECK_PFN=1), like UCX_RCACHE_CHECK_PFN.
const CheckPFNEnv = string(envknob.CheckPFN)

// CheckPFNEnabled reports whether PTL_CHECK_PFN is set to 1 (or "true", "yes", "on").
func CheckPFNEnabled() bool {
	switch envknob.Get(envknob.CheckPFN) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
