package me

import "fmt"

// SearchOp selects what Search does with the unexpected headers it finds.
type SearchOp uint8

const (
	// SearchOnly reports matching unexpected headers and leaves them (PTL_SEARCH_ONLY).
	SearchOnly SearchOp = iota
	// SearchDelete reports matching unexpected headers and removes them (PTL_SEARCH_DELETE).
	SearchDelete
)

// String returns the name of the search operation.
func (s SearchOp) String() string {
	switch s {
	case SearchOnly:
		return "search-only"
	case SearchDelete:
		return "search-delete"
	}
	return "invalid-search-op"
}

// Search looks through the unexpected headers, in arrival order, with entry e, which is
// never linked (PtlMESearch / PtlLESearch). A header qualifies by the same criteria an
// Append to the priority list applies, for both operations: permissions are not checked
// against unexpected headers, as in the reference implementation. A use-once entry stops
// at the first qualifying header; a persistent entry takes every one.
//
// Events appended to out:
//   - SearchOnly: one SEARCH event (FailNone) per qualifying header, posted unless
//     EventCommDisable; the headers stay.
//   - SearchDelete: one *_OVERFLOW event per qualifying header, posted unless
//     EventOverDisable; the header is removed, and an overflow entry whose last header it
//     was and which had auto-unlinked is freed (AUTO_FREE).
//   - nothing qualifies: one SEARCH event with FailNoMatch, posted unless
//     EventCommDisable.
//
// A search never counts on a counting event (CT is false: the searching entry has none)
// and its events carry a zero Handle. Errors: ErrInvalidSearchOp, ErrInvalidOption,
// ErrBusy (a qualifying header is still receiving its data); on error nothing changes.
func (t *Table) Search(e Entry, op SearchOp, out []Event) ([]Event, error) {
	if op > SearchDelete {
		return out, fmt.Errorf("%w: %d", ErrInvalidSearchOp, op)
	}
	if err := t.checkEntry(&e); err != nil {
		return out, err
	}
	c := criteriaOf(&e)
	if t.claimsBusy(&c, e.Options&UseOnce != 0) {
		return out, ErrBusy
	}
	found := false
	for j := t.ux.head; j != nilIdx; {
		r := &t.ux.r[j]
		next := r.next
		if t.claims(&c, r) {
			found = true
			if op == SearchOnly {
				ev := t.overflowEventFor(EventSearch, j, &e, 0)
				ev.Post = e.Options&EventCommDisable == 0
				out = append(out, ev)
			} else {
				ev := t.overflowEventFor(overflowEvent(r.hdr.Op), j, &e, 0)
				ev.Post = e.Options&EventOverDisable == 0
				out = append(out, ev)
				out = t.removeUnexpected(j, out)
			}
			if e.Options&UseOnce != 0 {
				break
			}
		}
		j = next
	}
	if !found {
		out = append(out, Event{
			Kind:    EventSearch,
			Fail:    FailNoMatch,
			Post:    e.Options&EventCommDisable == 0,
			UserPtr: e.UserPtr,
		})
	}
	return out, nil
}
