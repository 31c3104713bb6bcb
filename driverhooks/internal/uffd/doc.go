// Package uffd holds the userfaultfd kernel ABI that golang.org/x/sys/unix lacks: the
// constants, ioctl numbers and struct layouts of <linux/userfaultfd.h>, in one place,
// plus thin wrappers over the ioctls that the driverhooks monitor issues from Go.
//
// uffd imports nothing of goportals.
package uffd
