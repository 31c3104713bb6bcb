// Package shmem is an OpenSHMEM-style PGAS layer built on package portals.
package shmem
