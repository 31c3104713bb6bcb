//go:build race

package capi_test

// raceEnabled reports a -race build, whose timings mean nothing.
const raceEnabled = true
