/*
 * type.h - internal representation shared by every kind of datatype.
 *
 * A cdt_type_s is a small common header (class, reference count, size/extent facts) plus a
 * pointer to the class-specific part: the custom callbacks (custom.c) or the derived engine's
 * constructor record and compiled form (derived engine files). Operations (op.c) see only
 * this header.
 */
#ifndef CDT_TYPE_H
#define CDT_TYPE_H

#include "cdt.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define CDT__HIDDEN __attribute__((visibility("hidden")))
/* Internal functions that the UCX transport (libcdtypes-ucx, src/ucx) calls in the core
 * (libcdtypes): exported from the core's shared library, but no part of the ABI. The core's
 * version script (libcdt/cdtypes-private.map.in) binds them to the version node
 * CDTYPES_PRIVATE_<version>, so a transport runs only with the core of its own release and a
 * mismatched pair fails to load with the node's name instead of calling a changed function. */
#define CDT__TRANSPORT_SHARED __attribute__((visibility("default")))

typedef enum cdt__type_class {
    CDT__CLASS_PREDEFINED = 1,
    CDT__CLASS_DERIVED = 2,
    CDT__CLASS_CUSTOM = 3,
} cdt__type_class;

enum cdt__type_flags {
    CDT__TYPE_COMMITTED = 1u << 0,
    /* data of one element is one block: true_lb == 0 offset-wise and size == true_extent */
    CDT__TYPE_CONTIGUOUS = 1u << 1,
};

struct cdt__derived; /* derived/: the constructor record and the committed form */
struct cdt__node;    /* derived/: a node of a committed form */

/* What a class of types does for the core, filled in once by the folder that implements the
 * class (custom types: core/custom.c; predefined and derived types: derived/), so that the
 * core never names a class's code (docs/ARCHITECTURE.md). */
typedef struct cdt__type_ops {
    /* free the class's part of a type whose last reference went */
    void (*destroy)(struct cdt_type_s *type);
    /* layout classes only (NULL for custom types): the committed form operations move data
     * with (borrowed from the type), its kernels, and the iov pieces of stream bytes
     * [start, start + len) of (buf, count, type) (first, max: a window; iov NULL: count) */
    int (*form)(struct cdt_type_s *type, struct cdt__node **form);
    void (*pack)(const struct cdt__node *form, cdt_count extent, const void *buf, cdt_count offset,
                 cdt_count len, void *dst);
    void (*unpack)(const struct cdt__node *form, cdt_count extent, void *buf, cdt_count offset,
                   cdt_count len, const void *src);
    int (*range_iov)(void *buf, cdt_count count, struct cdt_type_s *type, cdt_count start,
                     cdt_count len, cdt_count first, cdt_count max, cdt_iov *iov, cdt_count *n_out);
} cdt__type_ops;

struct cdt_type_s {
    atomic_long refcount; /* user handle + operations + parent types */
    cdt__type_class cls;
    unsigned flags;
    cdt_kind kind; /* single predefined kind, or CDT_KIND_MIXED */
    cdt_count size;
    cdt_count lb, extent;
    cdt_count true_lb, true_extent;
    const cdt__type_ops *ops; /* the class's operations */
    /* CDT__CLASS_CUSTOM: the callbacks as the caller gave them (core/custom.c), every field
     * whose field_mask bit was not set cleared */
    cdt_custom_params *custom;
    struct cdt__derived *derived; /* CDT__CLASS_DERIVED (owned by the engine) */
};

/* type.c */
CDT__HIDDEN struct cdt_type_s *cdt__type_alloc(cdt__type_class cls, const cdt__type_ops *ops);
CDT__TRANSPORT_SHARED void cdt__type_retain(cdt_type type);
CDT__TRANSPORT_SHARED void cdt__type_release(cdt_type type);
CDT__HIDDEN bool cdt__type_is_predefined(cdt_type type);
/* committed predefined or derived type (usable as data layout) */
CDT__HIDDEN bool cdt__type_is_layout(cdt_type type);

/* The last index i in [0, n) with sorted[i] <= key, for an ascending array whose first entry
 * is <= key (0 when n <= 1): the lookup of prefix sums and start offsets. */
/* true when the data of `count` elements of a layout type is one contiguous block (a contiguous
 * type, elements adjacent): one memcpy from true_lb moves it */
static inline bool cdt__layout_is_contiguous(cdt_type type, cdt_count count)
{
    return (type->flags & CDT__TYPE_CONTIGUOUS) && (count <= 1 || type->extent == type->size);
}

static inline cdt_count cdt__last_at_or_below(const cdt_count *sorted, cdt_count n, cdt_count key)
{
    cdt_count lo = 0, hi = n - 1;
    while (lo < hi) {
        cdt_count mid = lo + (hi - lo + 1) / 2;
        if (sorted[mid] <= key)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* base + off as an address. With CDT_BOTTOM the base is NULL and the offsets are absolute
 * addresses; adding to a null pointer is undefined in C, so the first step from a caller's
 * base is integer arithmetic (the same instruction for the compiler). */
#define CDT__AT(base, off) ((char *)((uintptr_t)(base) + (uintptr_t)(cdt_count)(off)))

/* Overflow-checked arithmetic on cdt_count. */
static inline bool cdt__add_overflows(cdt_count a, cdt_count b, cdt_count *r)
{
    return __builtin_add_overflow(a, b, r);
}
static inline bool cdt__mul_overflows(cdt_count a, cdt_count b, cdt_count *r)
{
    return __builtin_mul_overflow(a, b, r);
}

#endif /* CDT_TYPE_H */
