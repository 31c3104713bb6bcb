// Package md owns memory descriptors: it binds plain []byte slices, iovecs and
// library-allocated regions, takes registrations from regcache lazily and hides them, so
// no key ever reaches a user.
//
// md imports regcache and driverhooks; it never imports portals.
package md
