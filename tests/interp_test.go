package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// runScript parses and runs a script in this process as a lone rank.
func runScript(t *testing.T, src string) (Status, string) {
	t.Helper()
	s, err := Parse("inline.xml", []byte(src))
	if err != nil {
		return Fail, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Outcome(Run(ctx, s, bootstrap.NewLone(), nil))
}

func TestParseErrorsHaveLines(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
		line            int
	}{
		{"bad XML", "<?xml version=\"1.0\"?>\n<test>\n  <ptl>\n</test>\n", "bad XML", 4},
		{"unknown element", "<test>\n\n  <ptl_frobnicate/>\n</test>", "unknown element <ptl_frobnicate>", 3},
		{"unknown attribute", "<test>\n  <ptl>\n    <ptl_ni colour=\"red\"/>\n  </ptl>\n</test>", `unknown attribute "colour"`, 3},
		{"wrong root", "<ptl/>", "root element", 1},
		{"empty", "", "no root element", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.xml", []byte(c.src))
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("Parse: %v, want a *ScriptError", err)
			}
			if se.Line != c.line || !strings.Contains(se.Msg, c.want) {
				t.Errorf("got line %d %q, want line %d containing %q", se.Line, se.Msg, c.line, c.want)
			}
			if !strings.HasPrefix(err.Error(), "x.xml:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestParseKeepsAttributeOrderAndLines(t *testing.T) {
	_, err := Parse("x.xml", []byte("<test>\n  <desc>Put\n then check</desc>\n  <ptl>\n    <ptl_ni b=\"1\"/>\n  </ptl>\n</test>"))
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 5 {
		t.Fatalf("unknown attribute b: %v", err)
	}
	s, err := Parse("x.xml", []byte("<test>\n  <desc>Put\n then check</desc>\n  <ptl>\n    <check type=\"INT8\" md_data=\"1\" length=\"2\"/>\n  </ptl>\n</test>"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Desc() != "Put then check" {
		t.Errorf("Desc = %q", s.Desc())
	}
	chk := s.Root.Children[1].Children[0]
	if chk.Line != 5 || chk.Attrs[0].Name.Local != "type" || chk.Attrs[2].Name.Local != "length" {
		t.Errorf("check node: line %d attrs %v", chk.Line, chk.Attrs)
	}
}

const putScript = `<?xml version="1.0"?>
<test>
  <desc>put to self through an LE, then check both buffers</desc>
  <ptl>
    <ptl_ni ni_opt="NO_MATCH PHYSICAL">
      <ptl_eq>
        <ptl_pt>
          <ptl_le le_opt="OP_PUT" le_data="0x11" user_ptr="7">
            <ptl_md md_data="0x22" eq_handle="EQ_NONE">
              <ptl_put length="8" target_id="SELF" user_ptr="5"/>
              <ptl_eq_wait eq_handle="eq[0]">
                <check event_type="LINK"/>
              </ptl_eq_wait>
              <ptl_eq_wait eq_handle="eq[0]">
                <check event_type="PUT" event_mlength="8" event_user_ptr="7" event_ni_fail="OK"/>
              </ptl_eq_wait>
            </ptl_md>
            <check length="8" le_data="%s"/>
            <check length="1" offset="8" le_data="0x11"/>
          </ptl_le>
        </ptl_pt>
      </ptl_eq>
    </ptl_ni>
  </ptl>
</test>
`

func TestRunPutAndChecks(t *testing.T) {
	if st, why := runScript(t, strings.Replace(putScript, "%s", "0x22", 1)); st != Pass {
		t.Fatalf("put script: %v %s", st, why)
	}
	st, why := runScript(t, strings.Replace(putScript, "%s", "0x33", 1))
	if st != Fail || !strings.Contains(why, "line 18") || !strings.Contains(why, "le_data") {
		t.Fatalf("a wrong le_data check: %v %q, want a failure at line 18", st, why)
	}
}

func TestRunReturnCodes(t *testing.T) {
	// Without ptl, PtlNIInit must say NO_INIT; with it, a bad option word is refused.
	ok := `<test><ptl_ni_init ret="NO_INIT"/><ptl><ptl_ni_init ni_opt="INVALID" ret="ARG_INVALID"/></ptl></test>`
	if st, why := runScript(t, ok); st != Pass {
		t.Fatalf("%v %s", st, why)
	}
	bad := "<test>\n<ptl>\n<ptl_ni_init ni_opt=\"INVALID\"/>\n</ptl>\n</test>"
	st, why := runScript(t, bad)
	if st != Fail || !strings.Contains(why, "line 3") || !strings.Contains(why, "want OK") {
		t.Fatalf("unexpected code: %v %q", st, why)
	}
}

// TestRunBadValueFails: a value that is not a number where a number goes, or a
// handle of an unknown kind, fails with its line (unknown symbols read as strtol
// does: see TestRunUnknownSymbolReadsAsReference).
func TestRunBadValueFails(t *testing.T) {
	for _, src := range []string{
		"<test>\n<ptl>\n<ptl_ni count=\"many\"/>\n</ptl>\n</test>",
		"<test>\n<ptl>\n<ptl_ni eq_handle=\"xq[0]\"/>\n</ptl>\n</test>",
	} {
		st, why := runScript(t, src)
		if st != Fail || !strings.Contains(why, "line 3") {
			t.Errorf("%s: %v %q, want a failure at line 3", src, st, why)
		}
	}
}

func TestRunSkipsWithReason(t *testing.T) {
	st, why := runScript(t, `<test><ptl><ptl_ni><ptl_eq_alloc ptr="NULL" ret="ARG_INVALID"/></ptl_ni></ptl></test>`)
	if st != Skip || !strings.Contains(why, "pointer") {
		t.Fatalf("ptr=NULL: %v %q, want a skip naming the pointer", st, why)
	}
	st, why = runScript(t, `<test><ptl><ptl_ni><ptl_ni_handle handle="0x1"/></ptl_ni></ptl></test>`)
	if st != Skip || !strings.Contains(why, "numeric handle") {
		t.Fatalf("numeric handle as an NI: %v %q", st, why)
	}
}

// TestHandleIsEqualNumbers: PtlHandleIsEqual compares raw numbers as values.
func TestHandleIsEqualNumbers(t *testing.T) {
	for src, want := range map[string]Status{
		`<test><ptl_handle_is_equal handle1="0x1" handle2="0x1"/></test>`:            Pass,
		`<test><ptl_handle_is_equal handle1="0x1" handle2="0x2" ret="FAIL"/></test>`: Pass,
		`<test><ptl_handle_is_equal handle1="0x1" handle2="0x2"/></test>`:            Fail,
	} {
		if st, why := runScript(t, src); st != want {
			t.Errorf("%s: %v %q, want %v", src, st, why, want)
		}
	}
}

func TestRunControl(t *testing.T) {
	src := `<test>
  <threads count="4">
    <if thread_id="2"><set count="9"/></if>
    <else><check thread_id="$thread_id"/></else>
  </threads>
  <repeat count="3"><msleep count="1"/></repeat>
  <ptl>
    <ptl_ni>
      <ptl_ct count="3">
        <ptl_ct_set ct_handle="ct[1]" ct_event_success="4"/>
        <ptl_ct_get ct_handle="ct[1]"><check ct_event_success="4" ct_event_failure="0"/></ptl_ct_get>
        <ptl_ct_get ct_handle="ct[0]"><check ct_event_success="0"/></ptl_ct_get>
        <ptl_ct_poll ct_handle="ct[2]" ct_test="1" ret="CT_NONE_REACHED" time="5"/>
        <ptl_ct_wait ct_handle="ct[1]" ct_test="3"><check ct_event_success="4"/></ptl_ct_wait>
      </ptl_ct>
      <ptl_eq>
        <ptl_eq_poll ret="EQ_EMPTY" time="5"/>
        <ptl_eq_get ret="EQ_EMPTY"/>
      </ptl_eq>
    </ptl_ni>
  </ptl>
</test>`
	if st, why := runScript(t, src); st != Pass {
		t.Fatalf("%v %s", st, why)
	}
}

func TestPanicSite(t *testing.T) {
	err := protect(func() error {
		var m map[string]int
		//lint:ignore SA5000 the panic is the point of the test
		m["x"] = 1 // a nil map write panics here
		return nil
	})
	var pe *panicError
	if !errors.As(err, &pe) {
		t.Fatalf("protect: %v, want a panicError", err)
	}
	if !strings.HasPrefix(pe.where, "tests/interp_test.go:") {
		t.Errorf("panic site %q, want tests/interp_test.go:LINE", pe.where)
	}
}

// A script that leaves Inits open has them ended when it ends: the library's
// process is finalized, so a later PtlNIInit reports NO_INIT.
func TestRunEndsOpenInits(t *testing.T) {
	src := `<test><ptl_init/><ptl_init/><ptl_fini/><ptl_ni_init/></test>`
	if st, why := runScript(t, src); st != Pass {
		t.Fatalf("script: %v %s", st, why)
	}
	ni, _, err := ptl.NIInit(portals.IfaceDefault, portals.NIMatching|portals.NIPhysical, portals.PIDAny, nil)
	if err == nil {
		ptl.NIFini(ni)
	}
	if !errors.Is(err, portals.NoInit) {
		t.Fatalf("PtlNIInit after the script: %v, want NO_INIT", err)
	}
}
