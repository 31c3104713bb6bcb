package tests

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/goportals/goportals/eq"
)

// strtoull parses s as C's strtoull(s, &end, 0) does: leading white space, an
// optional sign, an automatic base ("0x" hexadecimal, "0" octal, else decimal), the
// longest run of digits, saturation at the maximum on overflow and negation modulo
// 2^64 for a minus sign. It returns the value and the number of bytes consumed (0 when
// there are no digits, as C leaves end at the start).
func strtoull(s string) (uint64, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && i+2 < len(s) && digitVal(s[i+2]) < 16 {
		base, i = 16, i+2
	} else if i < len(s) && s[i] == '0' {
		base = 8
	}
	start := i
	var v uint64
	overflow := false
	for i < len(s) {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if !overflow {
			if v > (math.MaxUint64-d)/base {
				overflow = true
			} else {
				v = v*base + d
			}
		}
		i++
	}
	if i == start {
		return 0, 0
	}
	if overflow {
		return math.MaxUint64, i
	}
	if neg {
		v = -v
	}
	return v, i
}

// strtoll parses s as C's strtoll(s, &end, 0): like strtoull, but the result is
// signed and saturates at the int64 range.
func strtoll(s string) (int64, int) {
	t := strings.TrimLeft(s, " \t\n\r\f\v")
	neg := strings.HasPrefix(t, "-")
	u, n := strtoull(strings.TrimPrefix(strings.TrimPrefix(t, "-"), "+"))
	if n == 0 {
		return 0, 0
	}
	n += len(s) - len(t)
	if t[0] == '-' || t[0] == '+' {
		n++
	}
	switch {
	case neg && u > 1<<63:
		return math.MinInt64, n
	case neg:
		return -int64(u), n
	case u > math.MaxInt64:
		return math.MaxInt64, n
	}
	return int64(u), n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func digitVal(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'z':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10
	}
	return 99
}

// parseNumber parses a whole attribute value as an unsigned number (strtoull rules).
// Unlike C, trailing text is an error so that a typo in a script is reported. The
// bare word INVALID reads as 0, which is what the reference interpreter's strtol
// makes of it.
func parseNumber(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "INVALID" {
		return 0, nil
	}
	v, n := strtoull(t)
	if n == 0 || n != len(t) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// datum is one value of an atomic datatype as the reference keeps it: a union,
// written in the machine's (little-endian) layout, large enough for a long double
// complex (two x87 extended values of 16 bytes).
type datum [32]byte

// parseDatum parses s as a value of type t the way the reference does: strtol for
// the signed types (then truncated), strtoull for the unsigned ones, strtof/strtod
// for the floating types and "(re, im)" for the complex ones.
func parseDatum(t eq.AtomicType, s string) (datum, error) {
	var d datum
	t0 := strings.TrimSpace(s)
	switch t {
	case eq.Int8, eq.Int16, eq.Int32, eq.Int64:
		v, n := strtoll(t0)
		if n != len(t0) || n == 0 {
			return d, fmt.Errorf("%q is not a %v", s, t)
		}
		binary.LittleEndian.PutUint64(d[:], uint64(v))
	case eq.Uint8, eq.Uint16, eq.Uint32, eq.Uint64:
		v, n := strtoull(t0)
		if n != len(t0) || n == 0 {
			return d, fmt.Errorf("%q is not a %v", s, t)
		}
		binary.LittleEndian.PutUint64(d[:], v)
	case eq.Float:
		f, err := strconv.ParseFloat(t0, 32)
		if err != nil {
			return d, fmt.Errorf("%q is not a float", s)
		}
		binary.LittleEndian.PutUint32(d[:], math.Float32bits(float32(f)))
	case eq.Double:
		f, err := strconv.ParseFloat(t0, 64)
		if err != nil {
			return d, fmt.Errorf("%q is not a double", s)
		}
		binary.LittleEndian.PutUint64(d[:], math.Float64bits(f))
	case eq.FloatComplex, eq.DoubleComplex:
		re, im, err := parseComplex(t0)
		if err != nil {
			return d, fmt.Errorf("%q is not a complex value: %v", s, err)
		}
		if t == eq.FloatComplex {
			binary.LittleEndian.PutUint32(d[0:], math.Float32bits(float32(re)))
			binary.LittleEndian.PutUint32(d[4:], math.Float32bits(float32(im)))
		} else {
			binary.LittleEndian.PutUint64(d[0:], math.Float64bits(re))
			binary.LittleEndian.PutUint64(d[8:], math.Float64bits(im))
		}
	case eq.LongDouble, eq.LongDoubleComplex:
		parts := []string{t0}
		if t == eq.LongDoubleComplex {
			if !strings.HasPrefix(t0, "(") || !strings.HasSuffix(t0, ")") {
				return d, fmt.Errorf("%q is not a complex value: want (re, im)", s)
			}
			parts = strings.Split(t0[1:len(t0)-1], ",")
			if len(parts) != 2 {
				return d, fmt.Errorf("%q is not a complex value: want (re, im)", s)
			}
		}
		for i, p := range parts {
			x, ok := toExtended(strings.TrimSpace(p))
			if !ok {
				return d, fmt.Errorf("%q is not a long double", s)
			}
			copy(d[16*i:], x[:])
		}
	default:
		return d, fmt.Errorf("datatype %v has no test data representation", t)
	}
	return d, nil
}

// toExtended converts a decimal to the x86-64 long double layout: the x87 80-bit
// extended format (64-bit mantissa with explicit integer bit, 15-bit exponent, sign)
// in 16 bytes, rounded to nearest as strtold does.
func toExtended(s string) ([16]byte, bool) {
	var x [16]byte
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil || f.IsInf() {
		return x, false
	}
	var sign uint16
	if f.Signbit() {
		sign = 0x8000
		f.Neg(f)
	}
	if f.Sign() == 0 {
		binary.LittleEndian.PutUint16(x[8:], sign)
		return x, true
	}
	mant := new(big.Float)
	exp := f.MantExp(mant) // f = mant * 2^exp, mant in [0.5, 1)
	mant.SetMantExp(mant, 64)
	m, _ := mant.Uint64()
	e := exp - 1 + 16383
	if e <= 0 || e >= 0x7fff {
		return x, false
	}
	binary.LittleEndian.PutUint64(x[0:], m)
	binary.LittleEndian.PutUint16(x[8:], sign|uint16(e))
	return x, true
}

// fromExtended reads an x87 80-bit extended value as a float64.
func fromExtended(b []byte) float64 {
	m := binary.LittleEndian.Uint64(b[0:])
	se := binary.LittleEndian.Uint16(b[8:])
	e := int(se & 0x7fff)
	if e == 0x7fff {
		return math.NaN()
	}
	v := math.Ldexp(float64(m), e-16383-63)
	if se&0x8000 != 0 {
		v = -v
	}
	return v
}

// parseComplex reads "(re, im)".
func parseComplex(s string) (float64, float64, error) {
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return 0, 0, fmt.Errorf("want (re, im)")
	}
	parts := strings.Split(s[1:len(s)-1], ",")
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("want two parts")
	}
	re, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	if err != nil {
		return 0, 0, err
	}
	im, err := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	if err != nil {
		return 0, 0, err
	}
	return re, im, nil
}

// fill writes d repeatedly over buf as the reference's set_data does: length/size
// items of type t (single bytes for the 8-bit types).
func fill(buf []byte, t eq.AtomicType, d datum) {
	sz := t.Size()
	if sz == 0 {
		return
	}
	for off := 0; off+sz <= len(buf); off += sz {
		copy(buf[off:off+sz], d[:sz])
	}
}

// compareData checks that the length bytes at buf hold length/size items equal to d
// (floating types within the reference's epsilons: 1e-6 for float parts, 1e-12 for
// double parts). It returns a description of the first mismatch, or "".
func compareData(buf []byte, t eq.AtomicType, d datum) string {
	sz := t.Size()
	for i := 0; i+sz <= len(buf); i += sz {
		got := buf[i : i+sz]
		switch t {
		case eq.Float, eq.FloatComplex:
			for p := 0; p < sz; p += 4 {
				w := math.Float32frombits(binary.LittleEndian.Uint32(d[p:]))
				g := math.Float32frombits(binary.LittleEndian.Uint32(got[p:]))
				const eps = float32(1e-6)
				if g > w+eps || g < w-eps || g != g {
					return fmt.Sprintf("item %d: want %v, got %v", i/sz, w, g)
				}
			}
		case eq.LongDouble, eq.LongDoubleComplex:
			for p := 0; p < sz; p += 16 {
				w, g := fromExtended(d[p:]), fromExtended(got[p:])
				const eps = 1e-12
				if g > w+eps || g < w-eps || g != g {
					return fmt.Sprintf("item %d: want %v, got %v", i/sz, w, g)
				}
			}
		case eq.Double, eq.DoubleComplex:
			for p := 0; p < sz; p += 8 {
				w := math.Float64frombits(binary.LittleEndian.Uint64(d[p:]))
				g := math.Float64frombits(binary.LittleEndian.Uint64(got[p:]))
				const eps = 1e-12
				if g > w+eps || g < w-eps || g != g {
					return fmt.Sprintf("item %d: want %v, got %v", i/sz, w, g)
				}
			}
		default:
			for p := 0; p < sz; p++ {
				if got[p] != d[p] {
					return fmt.Sprintf("item %d: want %#x, got %#x", i/sz, d[:sz], got)
				}
			}
		}
	}
	return ""
}
