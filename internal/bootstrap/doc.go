// Package bootstrap gives a process its rank, the job size, a key-value exchange and a
// barrier: from the goportals launcher (cmd/ptlrun), and later from PMI-1/PMI-2 or the
// environment. A lone process is rank 0 of 1.
//
// bootstrap imports nothing of goportals but internal helpers.
package bootstrap
