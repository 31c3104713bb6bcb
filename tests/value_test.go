package tests

import (
	"math"
	"strconv"
	"testing"

	"github.com/goportals/goportals/eq"
)

func TestStrtoull(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		n    int
	}{
		{"0", 0, 1},
		{"10", 10, 2},
		{"0x1F", 31, 4},
		{"0X1f", 31, 4},
		{"017", 15, 3},
		{"08", 0, 1}, // octal stops at 8, as C
		{"  42", 42, 4},
		{"+7", 7, 2},
		{"-1", math.MaxUint64, 2},
		{"0xffffffffffffffff", math.MaxUint64, 18},
		{"0x10000000000000000", math.MaxUint64, 19}, // saturates
		{"99999999999999999999999", math.MaxUint64, 23},
		{"0x", 0, 1}, // "0" then an x that is not part of the number
		{"", 0, 0},
		{"abc", 0, 0},
		{"12abc", 12, 2},
	} {
		got, n := strtoull(c.in)
		if got != c.want || n != c.n {
			t.Errorf("strtoull(%q) = %d, %d; want %d, %d", c.in, got, n, c.want, c.n)
		}
	}
}

func TestStrtoll(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"-5", -5},
		{"0xab", 0xab},
		{"0xffffffffffffffff", math.MaxInt64}, // strtoll saturates
		{"-0xffffffffffffffff", math.MinInt64},
		{"9223372036854775807", math.MaxInt64},
	} {
		if got, _ := strtoll(c.in); got != c.want {
			t.Errorf("strtoll(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestParseNumber(t *testing.T) {
	if v, err := parseNumber("0x5aa5"); err != nil || v != 0x5aa5 {
		t.Errorf("parseNumber(0x5aa5) = %d, %v", v, err)
	}
	if v, err := parseNumber("INVALID"); err != nil || v != 0 {
		t.Errorf("parseNumber(INVALID) = %d, %v; want 0 as the reference's strtol", v, err)
	}
	for _, bad := range []string{"", "x", "12z", "$"} {
		if _, err := parseNumber(bad); err == nil {
			t.Errorf("parseNumber(%q) succeeded", bad)
		}
	}
}

func TestDatumFillCompare(t *testing.T) {
	for _, c := range []struct {
		typ eq.AtomicType
		val string
		sz  int
	}{
		{eq.Int8, "0xab", 1},
		{eq.Uint16, "0x753f", 2},
		{eq.Int32, "-7", 4},
		{eq.Uint64, "0x703a69b65290919f", 8},
		{eq.Float, "0.25", 4},
		{eq.Double, "0.297062023949499987", 8},
		{eq.FloatComplex, "(0.5, -1.25)", 8},
		{eq.DoubleComplex, "(1e-3, 2)", 16},
		{eq.LongDouble, "0.35461611930176761831", 16},
		{eq.LongDoubleComplex, "(0.0347, 0.2373)", 32},
	} {
		d, err := parseDatum(c.typ, c.val)
		if err != nil {
			t.Fatalf("parseDatum(%v, %q): %v", c.typ, c.val, err)
		}
		buf := make([]byte, 64)
		fill(buf, c.typ, d)
		if msg := compareData(buf, c.typ, d); msg != "" {
			t.Errorf("%v %q: filled buffer does not compare equal: %s", c.typ, c.val, msg)
		}
		buf[c.sz+min(c.sz-1, 9)] ^= 0x40 // a change in the top (sign/exponent) byte of the second item
		if msg := compareData(buf, c.typ, d); msg == "" {
			t.Errorf("%v %q: a changed item compares equal", c.typ, c.val)
		}
	}
	d, err := parseDatum(eq.Int8, "0xab") // strtol then truncation: 0xab as int8
	if err != nil {
		t.Fatalf("parseDatum(INT8, 0xab): %v", err)
	}
	if d[0] != 0xab {
		t.Errorf("INT8 0xab = %#x", d[0])
	}
	if _, err := parseDatum(eq.Uint8, "1.5"); err == nil {
		t.Error("a float accepted as UINT8")
	}
}

func TestExtended(t *testing.T) {
	for _, v := range []float64{1, -2.5, 0.1, 1e300, 3.75e-200, 0} {
		x, ok := toExtended(formatG(v))
		if !ok {
			t.Fatalf("toExtended(%v) failed", v)
		}
		if got := fromExtended(x[:]); got != v {
			t.Errorf("extended round trip of %v = %v", v, got)
		}
	}
	x, ok := toExtended("1")
	if !ok {
		t.Fatal("toExtended(1) failed")
	}
	// 1.0 is mantissa 0x8000000000000000, exponent 16383.
	if x[7] != 0x80 || x[8] != 0xff || x[9] != 0x3f {
		t.Errorf("1.0 as x87 extended = % x", x[:10])
	}
}

func formatG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
