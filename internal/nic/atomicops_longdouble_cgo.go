//go:build cgo

package nic

/*
#include <complex.h>
#include <float.h>
#include <stddef.h>
#include <string.h>

enum {
	LD_SIZE = sizeof(long double),
	LD_MIN, LD_MAX, LD_SUM, LD_PROD, LD_SWAP,
	LD_CSWAP, LD_CSWAP_NE, LD_CSWAP_LE, LD_CSWAP_LT, LD_CSWAP_GE, LD_CSWAP_GT,
};

// ld_put stores v at p; the x87 extended format's 6 bytes of padding are zeroed, so
// equal values have equal bytes.
static void ld_put(unsigned char *p, long double v) {
	memcpy(p, &v, sizeof v);
#if (defined(__x86_64__) || defined(__i386__)) && LDBL_MANT_DIG == 64
	memset(p + 10, 0, sizeof v - 10);
#endif
}

static long double ld_get(const unsigned char *p) {
	long double v;
	memcpy(&v, p, sizeof v);
	return v;
}

// ld_cswap reports whether a conditional swap swaps: "operand OP target".
static int ld_cswap(int op, long double c, long double t) {
	switch (op) {
	case LD_CSWAP: return c == t;
	case LD_CSWAP_NE: return c != t;
	case LD_CSWAP_LE: return c <= t;
	case LD_CSWAP_LT: return c < t;
	case LD_CSWAP_GE: return c >= t;
	case LD_CSWAP_GT: return c > t;
	}
	return 0;
}

// ld_apply applies op to n long doubles at dst with the operands at src and, for
// the conditional swaps, the comparison value at cond.
static void ld_apply(int op, unsigned char *dst, const unsigned char *src,
		const unsigned char *cond, size_t n) {
	const size_t sz = sizeof(long double);
	for (size_t i = 0; i < n; i++, dst += sz, src += sz) {
		long double a = ld_get(dst), b = ld_get(src), r = a;
		switch (op) {
		case LD_MIN: if (b < a) r = b; break;
		case LD_MAX: if (b > a) r = b; break;
		case LD_SUM: r = a + b; break;
		case LD_PROD: r = a * b; break;
		case LD_SWAP: memmove(dst, src, sz); continue;
		default:
			if (ld_cswap(op, ld_get(cond), a))
				memmove(dst, src, sz);
			continue;
		}
		ld_put(dst, r);
	}
}

// ldc_apply is ld_apply for long double complex values (SUM, PROD, SWAP, CSWAP,
// CSWAP_NE).
static void ldc_apply(int op, unsigned char *dst, const unsigned char *src,
		const unsigned char *cond, size_t n) {
	const size_t sz = sizeof(long double);
	for (size_t i = 0; i < n; i++, dst += 2 * sz, src += 2 * sz) {
		long double _Complex a, b, r;
		int eq;
		memcpy(&a, dst, sizeof a); // (real, imaginary), as an array of two
		memcpy(&b, src, sizeof b);
		switch (op) {
		case LD_SUM: r = a + b; break;
		case LD_PROD: r = a * b; break;
		case LD_SWAP: memmove(dst, src, 2 * sz); continue;
		case LD_CSWAP:
		case LD_CSWAP_NE:
			eq = ld_get(cond) == ld_get(dst) && ld_get(cond + sz) == ld_get(dst + sz);
			if (eq == (op == LD_CSWAP))
				memmove(dst, src, 2 * sz);
			continue;
		default:
			continue;
		}
		ld_put(dst, creall(r));
		ld_put(dst + sz, cimagl(r));
	}
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/goportals/goportals/eq"
)

// errLongDouble is nil where the C long double has the 16 bytes a LONG_DOUBLE
// occupies on the wire (x86-64: the x87 extended format; 64-bit Arm and others:
// binary128).
var errLongDouble = func() error {
	if C.LD_SIZE != 16 {
		return fmt.Errorf("the C long double has %d bytes here, PTL_LONG_DOUBLE 16: %w", C.LD_SIZE, ErrNotSupported)
	}
	return nil
}()

// longDoubleSupport reports whether LONG_DOUBLE atomics can be computed (nil) or
// why not.
func longDoubleSupport() error { return errLongDouble }

var ldOps = [...]C.int{eq.OpMin: C.LD_MIN, eq.OpMax: C.LD_MAX, eq.OpSum: C.LD_SUM, eq.OpProd: C.LD_PROD,
	eq.OpSwap: C.LD_SWAP, eq.OpCSwap: C.LD_CSWAP, eq.OpCSwapNE: C.LD_CSWAP_NE, eq.OpCSwapLE: C.LD_CSWAP_LE,
	eq.OpCSwapLT: C.LD_CSWAP_LT, eq.OpCSwapGE: C.LD_CSWAP_GE, eq.OpCSwapGT: C.LD_CSWAP_GT}

// applyLongDouble applies op (checked by checkAtomic) to the whole LONG_DOUBLE or
// LONG_DOUBLE_COMPLEX elements of dst (len(dst) == len(src), a non-zero multiple of
// the element size) in C long double arithmetic; cond is the comparison value of a
// conditional swap.
func applyLongDouble(op AtomicOp, dt AtomicType, dst, src, cond []byte) {
	if int(op) >= len(ldOps) || ldOps[op] == 0 {
		return
	}
	var c *C.uchar
	if len(cond) >= dt.Size() {
		c = (*C.uchar)(unsafe.Pointer(&cond[0]))
	} else if op >= eq.OpCSwap {
		return
	}
	d, s := (*C.uchar)(unsafe.Pointer(&dst[0])), (*C.uchar)(unsafe.Pointer(&src[0]))
	if dt == eq.LongDoubleComplex {
		C.ldc_apply(ldOps[op], d, s, c, C.size_t(len(dst)/dt.Size()))
		return
	}
	C.ld_apply(ldOps[op], d, s, c, C.size_t(len(dst)/dt.Size()))
}
