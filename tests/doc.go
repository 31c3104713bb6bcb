// Package tests holds the conformance suite runner that executes the Portals 4 declarative
// test corpus against package portals, and Go-native conformance tests.
package tests
