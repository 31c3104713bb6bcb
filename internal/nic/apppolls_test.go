package nic

// The tests watch ni.appPolls to see that a call drives progress while it waits.
func init() { countAppPolls = true }
