/*
 * check.c: compiled (never linked) by the Makefile to prove that every entry of
 * GOPTL_FUNCS has the type of the function cgo exported. It also pins the
 * layouts portals4.h promises.
 */
#include <stddef.h>
#include "libgoportals.h"
#include "goapi.h"

#define X(ret, name, params)                                                        \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
                   #name " differs between goapi.h and the Go library");
GOPTL_FUNCS(X)
#undef X
