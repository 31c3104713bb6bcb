package me

import "errors"

// The errors me's API calls return. They are sentinel values: match them with errors.Is
// (the returned error may wrap one with more context).
var (
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("me: invalid table configuration")
	// ErrInvalidOption: an option bit is undefined, or valid only on match entries and
	// used on a list-entry table (PTL_ARG_INVALID).
	ErrInvalidOption = errors.New("me: invalid entry option")
	// ErrInvalidList: the list is neither ListPriority nor ListOverflow (PTL_ARG_INVALID).
	ErrInvalidList = errors.New("me: invalid list")
	// ErrInvalidSearchOp: the search operation is neither SearchOnly nor SearchDelete
	// (PTL_ARG_INVALID).
	ErrInvalidSearchOp = errors.New("me: invalid search operation")
	// ErrUnknownHandle: the handle does not name a live entry of this table: never
	// issued, already unlinked, or issued by another table (PTL_ARG_INVALID).
	ErrUnknownHandle = errors.New("me: unknown entry handle")
	// ErrInUse: the entry cannot be unlinked because unexpected headers still refer to the
	// data it holds (PTL_IN_USE).
	ErrInUse = errors.New("me: entry in use by unexpected headers")
	// ErrBusy: an Append or Search would claim an unexpected header whose data is still
	// arriving (see Table.SetBusy); retry once the engine has completed the transfer.
	ErrBusy = errors.New("me: unexpected header still receiving its data")
	// ErrNoSpace: the table holds MaxEntries entries already (PTL_NO_SPACE).
	ErrNoSpace = errors.New("me: no space for another entry")
	// ErrListTooLong: the list holds MaxListSize entries already (PTL_LIST_TOO_LONG).
	ErrListTooLong = errors.New("me: list too long")
)
