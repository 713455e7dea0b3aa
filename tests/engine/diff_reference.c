/*
 * diff_reference.c - the reference interpreter of test_engine_diff: deliberately
 * simple, a type's typemap as the list of byte offsets of one element, in packed order.
 */
#include "test_engine_diff.h"

/* ---- the reference interpreter: typemaps as byte-offset lists ---- */
typedef struct {
    int64_t *v, n, cap;
    int64_t lb, ub;
    int any;
} mapb;

static void mb_push(mapb *m, int64_t x)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->v = realloc(m->v, (size_t)m->cap * sizeof(int64_t));
    }
    m->v[m->n++] = x;
}

/* bl copies of k at disp + j * extent(k) */
static void mb_block(mapb *m, const td *k, int64_t disp, int64_t bl)
{
    for (int64_t j = 0; j < bl; j++) {
        int64_t d = disp + j * k->extent;
        for (int64_t b = 0; b < k->nmap; b++)
            mb_push(m, d + k->map[b]);
        int64_t lo = d + k->lb, hi = d + k->lb + k->extent;
        if (!m->any || lo < m->lb)
            m->lb = lo;
        if (!m->any || hi > m->ub)
            m->ub = hi;
        m->any = 1;
    }
}

void reference(td *t)
{
    mapb m = {0};
    td *k = t->kids[0];
    switch (t->ctor) {
    case T_PRE:
        for (int64_t b = 0; b < cdt_kind_size(t->kind); b++)
            mb_push(&m, b);
        m.lb = 0;
        m.ub = cdt_kind_size(t->kind);
        m.any = 1;
        break;
    case T_CONTIG:
        for (int64_t i = 0; i < t->count; i++)
            mb_block(&m, k, i * k->extent, 1);
        break;
    case T_VEC:
    case T_HVEC:
        for (int64_t i = 0; i < t->count; i++)
            mb_block(&m, k, t->ctor == T_VEC ? i * t->stride * k->extent : i * t->stride, t->bl);
        break;
    case T_IDX:
    case T_HIDX:
    case T_IDXB:
    case T_HIDXB:
        for (int64_t i = 0; i < t->count; i++) {
            int64_t bl = (t->ctor == T_IDX || t->ctor == T_HIDX) ? t->bls[i] : t->bl;
            int64_t d =
                (t->ctor == T_IDX || t->ctor == T_IDXB) ? DISPS(t)[i] * k->extent : DISPS(t)[i];
            mb_block(&m, k, d, bl);
        }
        break;
    case T_STRUCT:
        for (int64_t i = 0; i < t->count; i++)
            mb_block(&m, t->kids[i], t->disps[i], t->bls[i]);
        break;
    case T_SUB: {
        /* every index of the sub-block, C order: last dimension fastest */
        int64_t idx[3] = {0, 0, 0}, total = 1;
        for (int d = 0; d < t->ndims; d++)
            total *= t->subsizes[d];
        for (int64_t n = 0; n < total; n++) {
            int64_t rem = n, off = 0, mul = 1;
            for (int d = t->ndims - 1; d >= 0; d--) {
                int dim = t->order == CDT_ORDER_C ? d : t->ndims - 1 - d;
                idx[dim] = rem % t->subsizes[dim];
                rem /= t->subsizes[dim];
            }
            if (t->order == CDT_ORDER_C) {
                for (int d = t->ndims - 1; d >= 0; d--) {
                    off += (t->starts[d] + idx[d]) * mul;
                    mul *= t->sizes[d];
                }
            } else {
                for (int d = 0; d < t->ndims; d++) {
                    off += (t->starts[d] + idx[d]) * mul;
                    mul *= t->sizes[d];
                }
            }
            for (int64_t b = 0; b < k->nmap; b++)
                mb_push(&m, off * k->extent + k->map[b]);
        }
        int64_t all = 1;
        for (int d = 0; d < t->ndims; d++)
            all *= t->sizes[d];
        m.lb = 0;
        m.ub = all * k->extent;
        m.any = 1;
        break;
    }
    case T_RESIZED:
    case T_DUP:
        for (int64_t b = 0; b < k->nmap; b++)
            mb_push(&m, k->map[b]);
        m.lb = t->ctor == T_RESIZED ? t->rlb : k->lb;
        m.ub = t->ctor == T_RESIZED ? t->rlb + t->rext : k->lb + k->extent;
        m.any = 1;
        break;
    case T_PADDED:
        for (int64_t b = 0; b < k->extent; b++)
            mb_push(&m, k->lb + b);
        m.lb = k->lb;
        m.ub = k->lb + k->extent;
        m.any = 1;
        break;
    }
    t->map = m.v;
    t->nmap = m.n;
    t->lb = m.any ? m.lb : 0;
    t->extent = m.any ? m.ub - m.lb : 0;
}
