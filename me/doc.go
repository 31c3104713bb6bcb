// Package me owns the match lists of a portal table entry: the priority list, the
// overflow list and the unexpected-header list, match entries and list entries, their
// options, the match rules, truncation and the events each match produces, and search.
//
// me is pure logic: no verbs, no goroutines. It never imports portals; from eq it takes
// only the atomic datatypes (an atomic matches whole elements). The engine maps me's
// Event records to event-queue records and counting-event increments.
//
// # Model
//
// A Table is one portal table entry. Config.Matching chooses match entries (ME) or list
// entries (LE, the non-matching form, where the first entry of a list takes every
// message). The engine calls:
//
//   - Append: link an entry at the end of the priority or overflow list. A priority-list
//     append first claims the matching unexpected headers (*_OVERFLOW events).
//   - Match: deliver an incoming Header. The first accepting entry of the priority list,
//     else of the overflow list, takes it; MatchResult says which entry, the local offset,
//     mlength, ack suppression, auto-unlink, and whether an unexpected header was kept.
//   - Unlink: remove an entry (ErrInUse while unexpected headers still refer to its data).
//   - Search: SearchOnly / SearchDelete over the unexpected headers.
//
// Every call appends the events it produces to a caller-supplied slice. Each Event says
// whether a full event is posted (the entry's EVENT_*_DISABLE options decide) and whether
// and by how much the entry's counting event is incremented (EVENT_CT_COMM,
// EVENT_CT_OVERFLOW, EVENT_CT_BYTES). Suppressed events are still reported, because the
// engine must act on them (for example release a buffer on AUTO_FREE).
//
// # Semantics
//
// The rules are those of Portals 4 (portals4.h and the reference implementation's
// ptl_le.c / ptl_tgt.c): match bits with ignore bits, match id with NID/PID/rank
// wildcards, NO_TRUNCATE as a match criterion (an entry without room does not match, the
// search goes on), then the permission check of the accepting entry (uid, then OP_PUT /
// OP_GET; a refused message changes nothing), offset (remote, or local with MANAGE_LOCAL),
// truncation to the room left, auto-unlink on USE_ONCE or MIN_FREE, unexpected headers for
// overflow-list deliveries unless UNEXPECTED_HDR_DISABLE, and AUTO_FREE once an
// auto-unlinked overflow entry is no longer referenced. Points where the reference
// implementation and the header text differ, and how me decides:
//
//   - claiming unexpected headers on Append does not check permissions; SearchDelete does
//     (as the reference implementation);
//   - a persistent entry searching with SearchOnly reports every matching header (the
//     newer portals4.h text; the reference stops at the first);
//   - overflow events are counted like communication events: one per event, or mlength
//     bytes with EVENT_CT_BYTES (the newer header text; the reference always counts bytes);
//   - SEARCH events are suppressed by EVENT_COMM_DISABLE in both search modes.
//
// # Performance
//
// Exact-match entries (IgnoreBits == 0) sit in hash bins keyed by their match bits, with
// the source checked in the bin (an open-addressing table whose slots hold each bin's
// chain inline); wildcard entries sit in one ordered list. Every entry has
// a sequence number, and the first accepting entry in list order (the smallest sequence
// number among the best of the bin and the best of the ordered list) wins: the ordered
// list is scanned only up to the bin's candidate. Entries live in an arena of 128-byte
// records reused through a free list; Match and Append allocate nothing once the table
// has reached its working size. FuzzMatchEquivalence checks the hashed table against a
// plain linear model.
//
// # Concurrency
//
// A Table is not safe for concurrent use. The engine serializes all calls on one Table
// (its progress goroutine, under its own lock per portal table entry); distinct Tables
// share nothing.
package me
