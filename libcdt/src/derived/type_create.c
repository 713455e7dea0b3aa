/*
 * type_create.c - derived constructors (MPI-4.1 semantics, 64-bit counts) and dup.
 *
 * A constructor checks its arguments, computes size, lb/extent and true bounds exactly (128-bit
 * intermediates, CDT_ERR_OVERFLOW when a result leaves 64 bits) and records its arguments. The
 * canonical form is built at commit (type_commit.c). lb/ub follow the MPI typemap rules without
 * alignment padding: lb = min(disp + lb_old), ub = max(disp + ub_old) over the copies of the
 * old type; blocks of length zero contribute nothing.
 */
#include "derived.h"

#include <stdlib.h>
#include <string.h>

typedef __int128 wide;

#define WIDE_MIN ((wide)INT64_MIN)
#define WIDE_MAX ((wide)INT64_MAX)

/* running bounds of a type under construction */
typedef struct {
    bool any, any_data;
    wide lb, ub, tlb, tub, size;
    cdt_kind kind;
    bool kind_set;
} bounds;

static bool fits(wide v)
{
    return v >= WIDE_MIN && v <= WIDE_MAX;
}

static bool layout_arg(cdt_type t)
{
    return t != NULL && t->cls != CDT__CLASS_CUSTOM;
}

/* Add `nbases` blocks of `bl` copies of `old` (copy j at base + j * extent), where the block
 * bases span [base_lo, base_hi]. Returns false on overflow. */
static bool add_blocks(bounds *b, wide nbases, wide base_lo, wide base_hi, wide bl, cdt_type old)
{
    if (nbases <= 0 || bl <= 0)
        return true;
    wide e = old->extent;
    wide span = (bl - 1) * e; /* |bl| < 2^63, |e| < 2^63: fits */
    wide lo = base_lo + (span < 0 ? span : 0), hi = base_hi + (span > 0 ? span : 0);
    if (!fits(lo) || !fits(hi))
        return false;
    wide lb = lo + old->lb, ub = hi + old->lb + old->extent;
    if (!fits(lb) || !fits(ub))
        return false;
    if (!b->any || lb < b->lb)
        b->lb = lb;
    if (!b->any || ub > b->ub)
        b->ub = ub;
    b->any = true;
    if (old->size > 0) {
        wide tlb = lo + old->true_lb, tub = hi + old->true_lb + old->true_extent;
        if (!fits(tlb) || !fits(tub))
            return false;
        if (!b->any_data || tlb < b->tlb)
            b->tlb = tlb;
        if (!b->any_data || tub > b->tub)
            b->tub = tub;
        b->any_data = true;
        /* nbases * bl < 2^126; check the product with the size in steps */
        wide n = nbases * bl;
        if (n > WIDE_MAX)
            return false;
        wide add = n * old->size;
        if (!fits(add) || !fits(b->size + add))
            return false;
        b->size += add;
    }
    if (!b->kind_set) {
        b->kind = old->kind;
        b->kind_set = true;
    } else if (b->kind != old->kind) {
        b->kind = CDT_KIND_MIXED;
    }
    return true;
}

static int finish(bounds *b, struct cdt__derived *d, cdt_type *newtype)
{
    struct cdt_type_s *t = cdt__type_alloc(CDT__CLASS_DERIVED, &cdt__layout_ops);
    if (t == NULL)
        return CDT_ERR_NO_MEMORY;
    wide extent = b->any ? b->ub - b->lb : 0;
    wide textent = b->any_data ? b->tub - b->tlb : 0;
    if (!fits(extent) || !fits(textent)) {
        free(t);
        return CDT_ERR_OVERFLOW;
    }
    t->lb = b->any ? (cdt_count)b->lb : 0;
    t->extent = (cdt_count)extent;
    t->true_lb = b->any_data ? (cdt_count)b->tlb : 0;
    t->true_extent = (cdt_count)textent;
    t->size = (cdt_count)b->size;
    t->kind = b->kind_set ? b->kind : CDT_KIND_MIXED;
    t->derived = d;
    for (cdt_count i = 0; i < d->ntypes; i++)
        cdt__type_retain(d->types[i]);
    *newtype = t;
    return CDT_SUCCESS;
}

static struct cdt__derived *record(cdt__ctor ctor, cdt_count count, cdt_count ntypes)
{
    struct cdt__derived *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->ctor = ctor;
    d->count = count;
    d->ntypes = ntypes;
    d->types = calloc((size_t)(ntypes > 0 ? ntypes : 1), sizeof(cdt_type));
    if (d->types == NULL) {
        free(d);
        return NULL;
    }
    return d;
}

static void record_free(struct cdt__derived *d)
{
    if (d == NULL)
        return;
    free(d->blocklens);
    free(d->disps);
    free(d->types);
    free(d);
}

void cdt__derived_destroy(struct cdt__derived *d)
{
    if (d == NULL)
        return;
    cdt__node_release(atomic_load_explicit(&d->form, memory_order_acquire));
    for (cdt_count i = 0; i < d->ntypes; i++)
        cdt__type_release(d->types[i]);
    record_free(d);
}

static cdt_count *copy_array(const cdt_count *a, cdt_count n)
{
    cdt_count *c = malloc((size_t)(n > 0 ? n : 1) * sizeof(*c));
    if (c != NULL && n > 0)
        memcpy(c, a, (size_t)n * sizeof(*c));
    return c;
}

static int make_strided(cdt__ctor ctor, cdt_count count, cdt_count bl, wide stride_bytes,
                        cdt_count stride_arg, cdt_type old, cdt_type *newtype)
{
    if (newtype == NULL || !layout_arg(old) || count < 0 || bl < 0)
        return CDT_ERR_INVALID_ARG;
    if (!fits(stride_bytes))
        return CDT_ERR_OVERFLOW;
    bounds b = {0};
    if (count > 0) {
        wide last = (wide)(count - 1) * stride_bytes;
        if (!fits(last))
            return CDT_ERR_OVERFLOW;
        if (!add_blocks(&b, count, last < 0 ? last : 0, last > 0 ? last : 0, bl, old))
            return CDT_ERR_OVERFLOW;
    }
    struct cdt__derived *d = record(ctor, count, 1);
    if (d == NULL)
        return CDT_ERR_NO_MEMORY;
    d->blocklength = bl;
    d->stride = stride_arg;
    d->types[0] = old;
    int rc = finish(&b, d, newtype);
    if (rc != CDT_SUCCESS)
        record_free(d);
    return rc;
}

int cdt_type_contiguous(cdt_count count, cdt_type oldtype, cdt_type *newtype)
{
    if (oldtype == NULL)
        return CDT_ERR_INVALID_ARG;
    return make_strided(CDT__CTOR_CONTIGUOUS, count, 1, oldtype->extent, 1, oldtype, newtype);
}

int cdt_type_vector(cdt_count count, cdt_count blocklength, cdt_count stride, cdt_type oldtype,
                    cdt_type *newtype)
{
    if (oldtype == NULL)
        return CDT_ERR_INVALID_ARG;
    return make_strided(CDT__CTOR_VECTOR, count, blocklength, (wide)stride * oldtype->extent,
                        stride, oldtype, newtype);
}

int cdt_type_hvector(cdt_count count, cdt_count blocklength, cdt_count stride_bytes,
                     cdt_type oldtype, cdt_type *newtype)
{
    return make_strided(CDT__CTOR_HVECTOR, count, blocklength, stride_bytes, stride_bytes, oldtype,
                        newtype);
}

/* indexed kinds and struct: blocklens may be NULL (all `bl`), types may be NULL (all `old`) */
static int make_listed(cdt__ctor ctor, cdt_count count, const cdt_count *blocklens, cdt_count bl,
                       const cdt_count *disps, bool in_units, const cdt_type *types, cdt_type old,
                       cdt_type *newtype)
{
    if (newtype == NULL || count < 0 || bl < 0)
        return CDT_ERR_INVALID_ARG;
    if (count > 0 && (disps == NULL || (ctor != CDT__CTOR_INDEXED_BLOCK &&
                                        ctor != CDT__CTOR_HINDEXED_BLOCK && blocklens == NULL)))
        return CDT_ERR_INVALID_ARG;
    if (ctor == CDT__CTOR_STRUCT) {
        if (count > 0 && types == NULL)
            return CDT_ERR_INVALID_ARG;
        for (cdt_count i = 0; i < count; i++)
            if (!layout_arg(types[i]))
                return CDT_ERR_INVALID_ARG;
    } else if (!layout_arg(old)) {
        return CDT_ERR_INVALID_ARG;
    }
    if ((uint64_t)count > SIZE_MAX / sizeof(cdt_count) / 2)
        return CDT_ERR_NO_MEMORY;
    bounds b = {0};
    for (cdt_count i = 0; i < count; i++) {
        cdt_count bli = blocklens != NULL ? blocklens[i] : bl;
        if (bli < 0)
            return CDT_ERR_INVALID_ARG;
    }
    for (cdt_count i = 0; i < count; i++) {
        cdt_type t = types != NULL ? types[i] : old;
        cdt_count bli = blocklens != NULL ? blocklens[i] : bl;
        wide base = in_units ? (wide)disps[i] * t->extent : (wide)disps[i];
        if (!fits(base) || !add_blocks(&b, 1, base, base, bli, t))
            return CDT_ERR_OVERFLOW;
    }
    struct cdt__derived *d = record(ctor, count, ctor == CDT__CTOR_STRUCT ? count : 1);
    if (d == NULL)
        return CDT_ERR_NO_MEMORY;
    d->blocklength = bl;
    d->disps = copy_array(disps, count);
    if (blocklens != NULL)
        d->blocklens = copy_array(blocklens, count);
    if (d->disps == NULL || (blocklens != NULL && d->blocklens == NULL)) {
        record_free(d);
        return CDT_ERR_NO_MEMORY;
    }
    if (ctor == CDT__CTOR_STRUCT) {
        for (cdt_count i = 0; i < count; i++)
            d->types[i] = types[i];
    } else {
        d->types[0] = old;
    }
    int rc = finish(&b, d, newtype);
    if (rc != CDT_SUCCESS)
        record_free(d);
    return rc;
}

int cdt_type_indexed(cdt_count count, const cdt_count blocklengths[],
                     const cdt_count displacements[], cdt_type oldtype, cdt_type *newtype)
{
    return make_listed(CDT__CTOR_INDEXED, count, blocklengths, 0, displacements, true, NULL,
                       oldtype, newtype);
}

int cdt_type_hindexed(cdt_count count, const cdt_count blocklengths[],
                      const cdt_count byte_displacements[], cdt_type oldtype, cdt_type *newtype)
{
    return make_listed(CDT__CTOR_HINDEXED, count, blocklengths, 0, byte_displacements, false, NULL,
                       oldtype, newtype);
}

int cdt_type_indexed_block(cdt_count count, cdt_count blocklength, const cdt_count displacements[],
                           cdt_type oldtype, cdt_type *newtype)
{
    return make_listed(CDT__CTOR_INDEXED_BLOCK, count, NULL, blocklength, displacements, true, NULL,
                       oldtype, newtype);
}

int cdt_type_hindexed_block(cdt_count count, cdt_count blocklength,
                            const cdt_count byte_displacements[], cdt_type oldtype,
                            cdt_type *newtype)
{
    return make_listed(CDT__CTOR_HINDEXED_BLOCK, count, NULL, blocklength, byte_displacements,
                       false, NULL, oldtype, newtype);
}

int cdt_type_struct(cdt_count count, const cdt_count blocklengths[],
                    const cdt_count byte_displacements[], const cdt_type types[], cdt_type *newtype)
{
    return make_listed(CDT__CTOR_STRUCT, count, blocklengths, 0, byte_displacements, false, types,
                       NULL, newtype);
}

/* resized, dup and subarray share this: same layout as `old`, given bounds */
static int make_alias(cdt_type old, cdt_count lb, cdt_count extent, cdt_type *newtype)
{
    struct cdt__derived *d = record(CDT__CTOR_ALIAS, 1, 1);
    if (d == NULL)
        return CDT_ERR_NO_MEMORY;
    d->types[0] = old;
    struct cdt_type_s *t = cdt__type_alloc(CDT__CLASS_DERIVED, &cdt__layout_ops);
    if (t == NULL) {
        record_free(d);
        return CDT_ERR_NO_MEMORY;
    }
    t->size = old->size;
    t->kind = old->kind;
    t->lb = lb;
    t->extent = extent;
    t->true_lb = old->true_lb;
    t->true_extent = old->true_extent;
    t->derived = d;
    cdt__type_retain(old);
    *newtype = t;
    return CDT_SUCCESS;
}

int cdt_type_resized(cdt_type oldtype, cdt_count lb, cdt_count extent, cdt_type *newtype)
{
    if (newtype == NULL || !layout_arg(oldtype))
        return CDT_ERR_INVALID_ARG;
    cdt_count ub;
    if (cdt__add_overflows(lb, extent, &ub))
        return CDT_ERR_OVERFLOW;
    return make_alias(oldtype, lb, extent, newtype);
}

int cdt_type_dup(cdt_type oldtype, cdt_type *newtype)
{
    if (newtype == NULL || oldtype == NULL)
        return CDT_ERR_INVALID_ARG;
    if (oldtype->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_INVALID_ARG;
    cdt_type t;
    int rc = make_alias(oldtype, oldtype->lb, oldtype->extent, &t);
    if (rc != CDT_SUCCESS)
        return rc;
    if (oldtype->flags & CDT__TYPE_COMMITTED) {
        rc = cdt_type_commit(&t);
        if (rc != CDT_SUCCESS) {
            cdt__type_release(t);
            return rc;
        }
    }
    *newtype = t;
    return CDT_SUCCESS;
}

/* The elements of oldtype as their memory: one block of bytes over [lb, lb + extent), so that
 * elements one after another are one contiguous block (commit makes it one memcpy, the frame one
 * region). Refused where a byte of oldtype lies outside that span: its elements would overlap,
 * or bytes outside an element would be read and written as its own. */
int cdt_type_padded(cdt_type oldtype, cdt_type *newtype)
{
    if (newtype == NULL || !layout_arg(oldtype) || oldtype->extent < 0)
        return CDT_ERR_INVALID_ARG;
    cdt_count lb = oldtype->lb, extent = oldtype->extent, ub, true_ub;
    if (cdt__add_overflows(lb, extent, &ub))
        return CDT_ERR_OVERFLOW;
    if (oldtype->size > 0 &&
        (cdt__add_overflows(oldtype->true_lb, oldtype->true_extent, &true_ub) ||
         oldtype->true_lb < lb || true_ub > ub))
        return CDT_ERR_INVALID_ARG;
    cdt_type block, t;
    int rc = cdt_type_hindexed_block(1, extent, &lb, CDT_BYTE, &block);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = make_alias(block, lb, extent, &t); /* the bounds of oldtype, also where extent is 0 */
    cdt__type_release(block);
    if (rc != CDT_SUCCESS)
        return rc;
    *newtype = t;
    return CDT_SUCCESS;
}

/* MPI-4.1 5.1.3: the subarray is the nested hvector of the sub-block, moved to its start and
 * resized to lb 0, extent = product of sizes * extent(oldtype). */
int cdt_type_subarray(int ndims, const cdt_count sizes[], const cdt_count subsizes[],
                      const cdt_count starts[], int order, cdt_type oldtype, cdt_type *newtype)
{
    if (newtype == NULL || !layout_arg(oldtype) || ndims < 1 || ndims > 32 || sizes == NULL ||
        subsizes == NULL || starts == NULL || (order != CDT_ORDER_C && order != CDT_ORDER_FORTRAN))
        return CDT_ERR_INVALID_ARG;
    for (int i = 0; i < ndims; i++)
        if (sizes[i] <= 0 || subsizes[i] < 0 || starts[i] < 0 || subsizes[i] > sizes[i] ||
            starts[i] > sizes[i] - subsizes[i])
            return CDT_ERR_INVALID_ARG;
    /* dims from fastest to slowest varying */
    cdt_count size_f[32], sub_f[32], start_f[32];
    for (int i = 0; i < ndims; i++) {
        int k = order == CDT_ORDER_C ? ndims - 1 - i : i;
        size_f[i] = sizes[k];
        sub_f[i] = subsizes[k];
        start_f[i] = starts[k];
    }
    wide stride = oldtype->extent, disp = 0;
    cdt_type cur = oldtype;
    cdt__type_retain(cur);
    int rc = CDT_SUCCESS;
    for (int i = 0; i < ndims; i++) {
        /* stride first: start * stride must not pass 128 bits */
        if (!fits(stride)) {
            rc = CDT_ERR_OVERFLOW;
            break;
        }
        disp += (wide)start_f[i] * stride;
        if (!fits(disp)) {
            rc = CDT_ERR_OVERFLOW;
            break;
        }
        cdt_type next = NULL; /* constructors write it only on success */
        if (i == 0)
            rc = cdt_type_contiguous(sub_f[0], cur, &next);
        else
            rc = cdt_type_hvector(sub_f[i], 1, (cdt_count)stride, cur, &next);
        cdt__type_release(cur);
        cur = next;
        if (rc != CDT_SUCCESS) {
            cur = NULL;
            break;
        }
        stride *= size_f[i];
    }
    if (rc == CDT_SUCCESS && !fits(stride))
        rc = CDT_ERR_OVERFLOW;
    cdt_type moved = NULL;
    if (rc == CDT_SUCCESS) {
        cdt_count one = 1, d = (cdt_count)disp;
        rc = cdt_type_hindexed(1, &one, &d, cur, &moved);
    }
    if (rc == CDT_SUCCESS) {
        rc = make_alias(moved, 0, (cdt_count)stride, newtype);
    }
    cdt__type_release(moved);
    cdt__type_release(cur);
    return rc;
}
