// Package me owns the match lists of a portal table entry: the priority list, the
// overflow list and the unexpected-header list, match entries and list entries, their
// options, the match rules, truncation and the events each match produces, and search.
//
// me is pure logic: no verbs, no goroutines. It never imports portals.
package me
