// Package eq owns event queues, counting events and the trigger lists that fire
// operations when a counter reaches a threshold.
//
// eq is pure logic: no verbs, no goroutines beyond what blocking waits need. It never
// imports portals.
package eq
