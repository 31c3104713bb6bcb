package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/eq"
	"github.com/goportals/goportals/portals"
)

// TestUnknownSymbolReadsAsStrtol: a word outside its attribute's table reads as the
// reference harness reads it, strtol(word, NULL, 0), and is reported.
func TestUnknownSymbolReadsAsStrtol(t *testing.T) {
	for _, c := range []struct {
		name    string
		got     uint64
		unk     *unknownSymbol
		want    uint64
		unknown bool
	}{
		{"atom_op XOR", u64(parseAtomOp("XOR")), unk(parseAtomOp("XOR")), uint64(eq.OpMin), true},
		{"atom_op BXOR", u64(parseAtomOp("BXOR")), unk(parseAtomOp("BXOR")), uint64(eq.OpBXor), false},
		{"atom_op sum", u64(parseAtomOp("sum")), unk(parseAtomOp("sum")), 0, true}, // strcmp is exact
		{"atom_op PTL_SUM", u64(parseAtomOp("PTL_SUM")), unk(parseAtomOp("PTL_SUM")), 0, true},
		{"atom_op 3", u64(parseAtomOp("3")), unk(parseAtomOp("3")), 3, false},
		{"atom_op 2nd", u64(parseAtomOp("2nd")), unk(parseAtomOp("2nd")), 2, true},
		{"atom_op 300", u64(parseAtomOp("300")), unk(parseAtomOp("300")), invalidU8, false},
		{"type UINIT", u64(parseAtomType("UINIT")), unk(parseAtomType("UINIT")), uint64(eq.Int8), true},
		{"type LDCOMPLEX", u64(parseAtomType("LDCOMPLEX")), unk(parseAtomType("LDCOMPLEX")), uint64(eq.LongDoubleComplex), false},
		{"list SIDE", u64(parseList("SIDE")), unk(parseList("SIDE")), 0, true},
		{"list 2", u64(parseList("2")), unk(parseList("2")), 2, false},
		{"search_op 0x1", u64(parseSearchOp("0x1")), unk(parseSearchOp("0x1")), 1, false},
		{"ack_req ACKED", u64(parseAckReq("ACKED")), unk(parseAckReq("ACKED")), uint64(portals.NoAckReq), true},
		{"ack_req 2", u64(parseAckReq("2")), unk(parseAckReq("2")), uint64(portals.CTAckReq), false},
		{"event_type PUTT", u64(parseEventType("PUTT")), unk(parseEventType("PUTT")), 0, true},
		{"event_ni_fail 1", u64(parseNIFail("1")), unk(parseNIFail("1")), uint64(eq.NIUndeliverable), false},
		{"event_ptl_list OVERFLOW", u64(parseEventList("OVERFLOW")), unk(parseEventList("OVERFLOW")), uint64(eq.OverflowList), false},
	} {
		if c.got != c.want || (c.unk != nil) != c.unknown {
			t.Errorf("%s: read as %d (unknown %v), want %d (unknown %v)", c.name, c.got, c.unk != nil, c.want, c.unknown)
		}
	}
	if e, u := parseRet("PERHAPS"); e != portals.OK || u == nil {
		t.Errorf("ret=PERHAPS: %v %v, want PTL_OK and an unknown symbol", e, u)
	}
	if e, u := parseRet("5"); e != portals.Fail || u != nil {
		t.Errorf("ret=5: %v %v, want PTL_FAIL (portals4.h's value)", e, u)
	}
	if e, u := parseRet("INVALID"); e != errInvalidRet || u != nil {
		t.Errorf("ret=INVALID: %v %v", e, u)
	}
}

func u64[T ~uint8](v T, _ *unknownSymbol) uint64      { return uint64(v) }
func unk[T any](_ T, u *unknownSymbol) *unknownSymbol { return u }

// TestMaskUnknownWord: in an option mask any word outside the table replaces the
// mask with its strtol value and ends the list, as the reference's mask parsers do.
func TestMaskUnknownWord(t *testing.T) {
	all := uint32(portals.NIMatching | portals.NIPhysical)
	for _, c := range []struct {
		in      string
		want    uint32
		unknown bool
		skip    bool
	}{
		{"MATCH PHYSICAL", all, false, false},
		{"MATCH SOMETIMES PHYSICAL", 0, true, false},
		{"MATCH 0 PHYSICAL", 0, false, false},
		{"MATCH 0x4", 0, false, true},
		{"MATCH 4EVER", 0, true, true},
	} {
		v, u, err := parseMask("ni_opt", c.in, niOptWords, niOptAll)
		var se *skipError
		if v != c.want || (u != nil) != c.unknown || errors.As(err, &se) != c.skip {
			t.Errorf("ni_opt=%q: %#x unknown %v err %v; want %#x unknown %v skip %v", c.in, v, u != nil, err, c.want, c.unknown, c.skip)
		}
		if u != nil && !u.mask {
			t.Errorf("ni_opt=%q: the unknown word is not marked as ending a mask", c.in)
		}
	}
}

const unknownScript = `<?xml version="1.0"?>
<test>
  <ptl>
    <ptl_ni ni_opt="MATCH PHYSICAL">
      <ptl_md type="UINIT">
        <ptl_atomic atom_op="XOR" ret="OK" ack_req="NO_ACK" target_id="SELF"/>
        <ptl_pt pt_index="MAX"><ifdef NOT_A_SYMBOL="x"/></ptl_pt>
        <ptl_md_release ret="PERHAPS" user_ptr="NUL" pt_index="LAST"/>
      </ptl_md>
    </ptl_ni>
  </ptl>
</test>
`

func TestScriptUnknownSymbols(t *testing.T) {
	s, err := Parse("u.xml", []byte(unknownScript))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range s.UnknownSymbols() {
		got = append(got, w.String())
	}
	want := []string{
		`u.xml:5: unknown symbol type="UINIT", read as 0`,
		`u.xml:6: unknown symbol atom_op="XOR", read as 0`,
		`u.xml:8: unknown symbol ret="PERHAPS", read as 0`,
		`u.xml:8: unknown symbol user_ptr="NUL", read as 0`,
		`u.xml:8: unknown symbol pt_index="LAST", read as 0`,
	}
	if len(got) != len(want) {
		t.Fatalf("UnknownSymbols:\n%s\nwant %d warnings", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d: %q, want %q...", i, got[i], want[i])
		}
	}
}

// TestRunUnknownSymbolReadsAsReference: the interpreter runs a script with unknown
// symbols as the reference does: ret="PERHAPS" is PTL_OK, and an unknown ni_opt
// word leaves no option bit, which PtlNIInit refuses.
func TestRunUnknownSymbolReadsAsReference(t *testing.T) {
	for src, want := range map[string]Status{
		"<test>\n<ptl>\n<ptl_ni ret=\"PERHAPS\"/>\n</ptl>\n</test>":                                     Pass,
		"<test>\n<ptl>\n<ptl_ni_init ni_opt=\"MATCH SOMETIMES\" ret=\"ARG_INVALID\"/>\n</ptl>\n</test>": Pass,
		"<test>\n<ptl>\n<ptl_ni_init ni_opt=\"MATCH SOMETIMES\"/>\n</ptl>\n</test>":                     Fail,
	} {
		if st, why := runScript(t, src); st != want {
			t.Errorf("%s: %v %q, want %v", src, st, why, want)
		}
	}
}

// TestRunCaseStrict: in strict mode a script with an unknown symbol fails, naming
// the file, line and word, before anything runs (no rank program is needed).
func TestRunCaseStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.xml")
	if err := os.WriteFile(path, []byte(unknownScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := RunCase(ctx, Case{Path: path, Name: "u.xml", NP: 1}, Options{Exe: "/nonexistent", Timeout: 5 * time.Second, Strict: true})
	if r.Status != Fail || !strings.Contains(r.Reason, path+`:5: unknown symbol type="UINIT"`) || !strings.Contains(r.Reason, "strict") {
		t.Errorf("strict run: %v %q", r.Status, r.Reason)
	}
	if len(r.Warnings) != 5 {
		t.Errorf("strict run: %d warnings, want 5", len(r.Warnings))
	}
}
