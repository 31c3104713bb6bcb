// Package ptlerr holds the error vocabulary every goportals package shares: Errno,
// the Portals return codes with portals4.h's numeric values; OpError, the error of
// one call (the call's name, its code and the cause); and ErrNotSupported, the one
// sentinel for a feature the library does not provide on this build or platform.
//
// Package portals re-exports these names, so a program needs only
//
//	if errors.Is(err, portals.ArgInvalid) { ... }
//	if errors.Is(err, portals.ErrNotSupported) { ... }
//
// whichever package produced the error.
package ptlerr
