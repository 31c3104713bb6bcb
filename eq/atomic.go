package eq

// AtomicOp is the operation of an atomic (ptl_op_t), recorded in ATOMIC and
// FETCH_ATOMIC events. The values follow portals4.h.
type AtomicOp uint8

// Atomic operations, as in portals4.h.
const (
	OpMin     AtomicOp = iota // PTL_MIN
	OpMax                     // PTL_MAX
	OpSum                     // PTL_SUM
	OpProd                    // PTL_PROD
	OpLOr                     // PTL_LOR
	OpLAnd                    // PTL_LAND
	OpBOr                     // PTL_BOR
	OpBAnd                    // PTL_BAND
	OpLXor                    // PTL_LXOR
	OpBXor                    // PTL_BXOR
	OpSwap                    // PTL_SWAP
	OpCSwap                   // PTL_CSWAP
	OpCSwapNE                 // PTL_CSWAP_NE
	OpCSwapLE                 // PTL_CSWAP_LE
	OpCSwapLT                 // PTL_CSWAP_LT
	OpCSwapGE                 // PTL_CSWAP_GE
	OpCSwapGT                 // PTL_CSWAP_GT
	OpMSwap                   // PTL_MSWAP
)

// NumAtomicOps is the number of defined atomic operations.
const NumAtomicOps = int(OpMSwap) + 1

var atomicOpNames = []string{
	"PTL_MIN", "PTL_MAX", "PTL_SUM", "PTL_PROD", "PTL_LOR", "PTL_LAND", "PTL_BOR",
	"PTL_BAND", "PTL_LXOR", "PTL_BXOR", "PTL_SWAP", "PTL_CSWAP", "PTL_CSWAP_NE",
	"PTL_CSWAP_LE", "PTL_CSWAP_LT", "PTL_CSWAP_GE", "PTL_CSWAP_GT", "PTL_MSWAP",
}

// String returns the portals4.h identifier, e.g. "PTL_SUM".
func (o AtomicOp) String() string { return enumName(atomicOpNames, int(o), "AtomicOp") }

// Valid reports whether o is a defined operation.
func (o AtomicOp) Valid() bool { return int(o) < NumAtomicOps }

// ParseAtomicOp accepts "PTL_SUM" or "SUM" (any case).
func ParseAtomicOp(s string) (AtomicOp, error) {
	v, err := parseEnum(s, atomicOpNames, "PTL_", "", nil, "atomic operation")
	return AtomicOp(v), err
}

// AtomicType is the datatype of an atomic (ptl_datatype_t). The values follow
// portals4.h.
type AtomicType uint8

// Atomic datatypes, as in portals4.h.
const (
	Int8              AtomicType = iota // PTL_INT8_T
	Uint8                               // PTL_UINT8_T
	Int16                               // PTL_INT16_T
	Uint16                              // PTL_UINT16_T
	Int32                               // PTL_INT32_T
	Uint32                              // PTL_UINT32_T
	Float                               // PTL_FLOAT
	Int64                               // PTL_INT64_T
	Uint64                              // PTL_UINT64_T
	Double                              // PTL_DOUBLE
	FloatComplex                        // PTL_FLOAT_COMPLEX
	DoubleComplex                       // PTL_DOUBLE_COMPLEX
	LongDouble                          // PTL_LONG_DOUBLE
	LongDoubleComplex                   // PTL_LONG_DOUBLE_COMPLEX
)

// NumAtomicTypes is the number of defined atomic datatypes.
const NumAtomicTypes = int(LongDoubleComplex) + 1

var atomicTypeNames = []string{
	"PTL_INT8_T", "PTL_UINT8_T", "PTL_INT16_T", "PTL_UINT16_T", "PTL_INT32_T",
	"PTL_UINT32_T", "PTL_FLOAT", "PTL_INT64_T", "PTL_UINT64_T", "PTL_DOUBLE",
	"PTL_FLOAT_COMPLEX", "PTL_DOUBLE_COMPLEX", "PTL_LONG_DOUBLE", "PTL_LONG_DOUBLE_COMPLEX",
}

// String returns the portals4.h identifier, e.g. "PTL_UINT8_T".
func (t AtomicType) String() string { return enumName(atomicTypeNames, int(t), "AtomicType") }

// Valid reports whether t is a defined datatype.
func (t AtomicType) Valid() bool { return int(t) < NumAtomicTypes }

// Size returns the size in bytes of one item of t (16 for LONG_DOUBLE, as on x86-64,
// and twice the part size for complex types), or 0 for an undefined type.
func (t AtomicType) Size() int {
	switch t {
	case Int8, Uint8:
		return 1
	case Int16, Uint16:
		return 2
	case Int32, Uint32, Float:
		return 4
	case Int64, Uint64, Double, FloatComplex:
		return 8
	case DoubleComplex, LongDouble:
		return 16
	case LongDoubleComplex:
		return 32
	}
	return 0
}

// ParseAtomicType accepts "PTL_UINT8_T", "UINT8" and the conformance scripts' short
// names for the complex and long double types ("COMPLEX", "DCOMPLEX", "LDOUBLE",
// "LDCOMPLEX"), in any case.
func ParseAtomicType(s string) (AtomicType, error) {
	v, err := parseEnum(s, atomicTypeNames, "PTL_", "_T", map[string]int{
		"COMPLEX": int(FloatComplex), "DCOMPLEX": int(DoubleComplex),
		"LDOUBLE": int(LongDouble), "LDCOMPLEX": int(LongDoubleComplex),
	}, "atomic datatype")
	return AtomicType(v), err
}
