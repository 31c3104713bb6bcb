package eq

import (
	"errors"
	"testing"
)

func TestEventKindNames(t *testing.T) {
	tests := []struct {
		k    EventKind
		want string
	}{
		{EventGet, "PTL_EVENT_GET"},
		{EventGetOverflow, "PTL_EVENT_GET_OVERFLOW"},
		{EventPut, "PTL_EVENT_PUT"},
		{EventPutOverflow, "PTL_EVENT_PUT_OVERFLOW"},
		{EventAtomic, "PTL_EVENT_ATOMIC"},
		{EventAtomicOverflow, "PTL_EVENT_ATOMIC_OVERFLOW"},
		{EventFetchAtomic, "PTL_EVENT_FETCH_ATOMIC"},
		{EventFetchAtomicOverflow, "PTL_EVENT_FETCH_ATOMIC_OVERFLOW"},
		{EventReply, "PTL_EVENT_REPLY"},
		{EventSend, "PTL_EVENT_SEND"},
		{EventAck, "PTL_EVENT_ACK"},
		{EventPTDisabled, "PTL_EVENT_PT_DISABLED"},
		{EventAutoUnlink, "PTL_EVENT_AUTO_UNLINK"},
		{EventAutoFree, "PTL_EVENT_AUTO_FREE"},
		{EventSearch, "PTL_EVENT_SEARCH"},
		{EventLink, "PTL_EVENT_LINK"},
		{EventKind(16), "EventKind(16)"},
		{EventKind(255), "EventKind(255)"},
	}
	for _, tc := range tests {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("EventKind(%d).String() = %q, want %q", uint8(tc.k), got, tc.want)
		}
		if tc.k.Valid() != (int(tc.k) < NumEventKinds) {
			t.Errorf("EventKind(%d).Valid() = %v", uint8(tc.k), tc.k.Valid())
		}
	}
	if NumEventKinds != 16 {
		t.Errorf("NumEventKinds = %d, want 16", NumEventKinds)
	}
}

func TestEventKindHelpers(t *testing.T) {
	tests := []struct {
		k         EventKind
		overflow  EventKind
		hasOvf    bool
		isOvf     bool
		initiator bool
	}{
		{EventGet, EventGetOverflow, true, false, false},
		{EventPut, EventPutOverflow, true, false, false},
		{EventAtomic, EventAtomicOverflow, true, false, false},
		{EventFetchAtomic, EventFetchAtomicOverflow, true, false, false},
		{EventGetOverflow, EventGetOverflow, false, true, false},
		{EventPutOverflow, EventPutOverflow, false, true, false},
		{EventAtomicOverflow, EventAtomicOverflow, false, true, false},
		{EventFetchAtomicOverflow, EventFetchAtomicOverflow, false, true, false},
		{EventReply, EventReply, false, false, true},
		{EventSend, EventSend, false, false, true},
		{EventAck, EventAck, false, false, true},
		{EventLink, EventLink, false, false, false},
		{EventSearch, EventSearch, false, false, false},
	}
	for _, tc := range tests {
		o, ok := tc.k.Overflow()
		if o != tc.overflow || ok != tc.hasOvf {
			t.Errorf("%v.Overflow() = %v, %v; want %v, %v", tc.k, o, ok, tc.overflow, tc.hasOvf)
		}
		if tc.k.IsOverflow() != tc.isOvf {
			t.Errorf("%v.IsOverflow() = %v", tc.k, tc.k.IsOverflow())
		}
		if tc.k.IsInitiator() != tc.initiator {
			t.Errorf("%v.IsInitiator() = %v", tc.k, tc.k.IsInitiator())
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	for k := 0; k < NumEventKinds; k++ {
		got, err := ParseEventKind(EventKind(k).String())
		if err != nil || got != EventKind(k) {
			t.Errorf("ParseEventKind(%q) = %v, %v", EventKind(k), got, err)
		}
	}
	for f := 0; f < NumNIFails; f++ {
		got, err := ParseNIFail(NIFail(f).String())
		if err != nil || got != NIFail(f) {
			t.Errorf("ParseNIFail(%q) = %v, %v", NIFail(f), got, err)
		}
	}
	for o := 0; o < NumAtomicOps; o++ {
		got, err := ParseAtomicOp(AtomicOp(o).String())
		if err != nil || got != AtomicOp(o) {
			t.Errorf("ParseAtomicOp(%q) = %v, %v", AtomicOp(o), got, err)
		}
	}
	for a := 0; a < NumAtomicTypes; a++ {
		got, err := ParseAtomicType(AtomicType(a).String())
		if err != nil || got != AtomicType(a) {
			t.Errorf("ParseAtomicType(%q) = %v, %v", AtomicType(a), got, err)
		}
	}
	for l := PriorityList; l <= OverflowList; l++ {
		got, err := ParseList(l.String())
		if err != nil || got != l {
			t.Errorf("ParseList(%q) = %v, %v", l, got, err)
		}
	}
}

// TestParseShortNames uses the names the reference's conformance scripts use.
func TestParseShortNames(t *testing.T) {
	tests := []struct {
		in    string
		parse func(string) (int, error)
		want  int
	}{
		{"PUT", wrap(ParseEventKind), int(EventPut)},
		{"put_overflow", wrap(ParseEventKind), int(EventPutOverflow)},
		{"FETCH_ATOMIC", wrap(ParseEventKind), int(EventFetchAtomic)},
		{"LINK", wrap(ParseEventKind), int(EventLink)},
		{"AUTO_FREE", wrap(ParseEventKind), int(EventAutoFree)},
		{"OK", wrap(ParseNIFail), int(NIOK)},
		{"NO_MATCH", wrap(ParseNIFail), int(NINoMatch)},
		{"PT_DISABLED", wrap(ParseNIFail), int(NIPTDisabled)},
		{"PERM_VIOLATION", wrap(ParseNIFail), int(NIPermViolation)},
		{"OP_VIOLATION", wrap(ParseNIFail), int(NIOpViolation)},
		{"DROPPED", wrap(ParseNIFail), int(NIDropped)},
		{"PRIORITY", wrap(ParseList), int(PriorityList)},
		{"OVERFLOW", wrap(ParseList), int(OverflowList)},
		{"OVERFLOW_LIST", wrap(ParseList), int(OverflowList)},
		{"CSWAP_GT", wrap(ParseAtomicOp), int(OpCSwapGT)},
		{"MSWAP", wrap(ParseAtomicOp), int(OpMSwap)},
		{"lxor", wrap(ParseAtomicOp), int(OpLXor)},
		{"UINT8", wrap(ParseAtomicType), int(Uint8)},
		{"INT64", wrap(ParseAtomicType), int(Int64)},
		{"DOUBLE", wrap(ParseAtomicType), int(Double)},
		{"COMPLEX", wrap(ParseAtomicType), int(FloatComplex)},
		{"DCOMPLEX", wrap(ParseAtomicType), int(DoubleComplex)},
		{"LDOUBLE", wrap(ParseAtomicType), int(LongDouble)},
		{"LDCOMPLEX", wrap(ParseAtomicType), int(LongDoubleComplex)},
		{"FLOAT_COMPLEX", wrap(ParseAtomicType), int(FloatComplex)},
	}
	for _, tc := range tests {
		got, err := tc.parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parse %q = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func wrap[T ~uint8](f func(string) (T, error)) func(string) (int, error) {
	return func(s string) (int, error) {
		v, err := f(s)
		return int(v), err
	}
}

func TestParseUnknown(t *testing.T) {
	tests := []struct {
		in    string
		parse func(string) (int, error)
	}{
		{"XOR", wrap(ParseAtomicOp)},
		{"INVALID", wrap(ParseAtomicOp)},
		{"", wrap(ParseEventKind)},
		{"PTL_EVENT_", wrap(ParseEventKind)},
		{"PROBE", wrap(ParseEventKind)},
		{"FLOW_CTRL", wrap(ParseNIFail)},
		{"UNEXPECTED", wrap(ParseList)},
		{"INT128", wrap(ParseAtomicType)},
	}
	for _, tc := range tests {
		if _, err := tc.parse(tc.in); !errors.Is(err, ErrUnknownName) {
			t.Errorf("parse %q: err = %v, want ErrUnknownName", tc.in, err)
		}
	}
}

func TestEnumStringsOutOfRange(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{NIFail(9).String(), "NIFail(9)"},
		{List(2).String(), "List(2)"},
		{AtomicOp(18).String(), "AtomicOp(18)"},
		{AtomicType(14).String(), "AtomicType(14)"},
		{NINoMatch.String(), "PTL_NI_NO_MATCH"},
		{NITargetInvalid.String(), "PTL_NI_TARGET_INVALID"},
		{OverflowList.String(), "PTL_OVERFLOW_LIST"},
		{OpCSwapNE.String(), "PTL_CSWAP_NE"},
		{LongDoubleComplex.String(), "PTL_LONG_DOUBLE_COMPLEX"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if NIFail(9).Valid() || List(2).Valid() || AtomicOp(18).Valid() || AtomicType(14).Valid() {
		t.Error("out-of-range values report Valid")
	}
	if !NITargetInvalid.Valid() || !OverflowList.Valid() || !OpMSwap.Valid() || !LongDoubleComplex.Valid() {
		t.Error("last defined values report not Valid")
	}
}

func TestAtomicTypeSize(t *testing.T) {
	want := map[AtomicType]int{
		Int8: 1, Uint8: 1, Int16: 2, Uint16: 2, Int32: 4, Uint32: 4, Float: 4,
		Int64: 8, Uint64: 8, Double: 8, FloatComplex: 8, DoubleComplex: 16,
		LongDouble: 16, LongDoubleComplex: 32, AtomicType(14): 0,
	}
	for typ, n := range want {
		if got := typ.Size(); got != n {
			t.Errorf("%v.Size() = %d, want %d", typ, got, n)
		}
	}
}
