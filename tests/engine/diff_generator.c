/*
 * diff_generator.c - random type trees for test_engine_diff: every constructor, depth
 * <= 4, and structs of (h)indexed_block members over one shared index list (gen_zip).
 */
#include "test_engine_diff.h"

/* ---- random numbers ---- */
uint64_t rng_state;
uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
int64_t rint_in(int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static const cdt_kind kinds[] = {CDT_KIND_BYTE,  CDT_KIND_INT16,         CDT_KIND_INT32,
                                 CDT_KIND_INT64, CDT_KIND_FLOAT,         CDT_KIND_DOUBLE,
                                 CDT_KIND_UINT8, CDT_KIND_COMPLEX_DOUBLE};

/* ---- generator ---- */

static td *gen_pre(void)
{
    td *t = calloc(1, sizeof(*t));
    t->ctor = T_PRE;
    t->kind = kinds[rnd() % (sizeof(kinds) / sizeof(kinds[0]))];
    reference(t);
    return t;
}

/* A struct of 2..4 (h)indexed_block members over one index list, each member's displacements
 * a multiple of it (LAMMPS: arrays of different element sizes gathered at the same particle
 * indices), which commit packs with one list (CDT__K_ZIP); negative multiples, members of
 * two blocks, and now and then one displacement off the list, which must not be zipped. */
static td *gen_zip(void)
{
    td *t = calloc(1, sizeof(*t));
    t->ctor = T_STRUCT;
    t->count = rint_in(2, 4);
    int64_t n = rint_in(65, 160); /* lists of up to 64 blocks are flattened into runs */
    int64_t *idx = malloc((size_t)n * sizeof(int64_t));
    for (int64_t i = 0; i < n; i++) /* repeats too: blocks may overlap in a pack */
        idx[i] = rint_in(-1000, 1000);
    for (int j = 0; j < t->count; j++) {
        td *k = calloc(1, sizeof(*k));
        k->ctor = rnd() % 2 ? T_IDXB : T_HIDXB;
        k->count = n;
        k->bl = rint_in(1, 3);
        k->kids[0] = gen_pre();
        k->ldisps = malloc((size_t)n * sizeof(int64_t));
        int64_t mul = rint_in(1, 3) * k->bl * (rnd() % 4 == 0 ? -1 : 1), shift = rint_in(-64, 64);
        for (int64_t i = 0; i < n; i++)
            k->ldisps[i] =
                k->ctor == T_IDXB ? idx[i] * mul : idx[i] * mul * k->kids[0]->extent + shift;
        if (rnd() % 8 == 0)
            k->ldisps[rint_in(0, n - 1)] += 1;
        reference(k);
        t->kids[j] = k;
        t->bls[j] = rnd() % 8 == 0 ? 2 : 1;
        t->disps[j] = rint_in(-4096, 4096);
    }
    free(idx);
    reference(t);
    return t;
}

td *gen(int depth, int64_t budget)
{
    if (depth >= 3 && rnd() % 16 == 0)
        return gen_zip();
    if (depth == 0 || budget < 16 || rnd() % 5 == 0)
        return gen_pre();
    td *t = calloc(1, sizeof(*t));
    t->ctor = (int)rint_in(T_CONTIG, T_NCTOR - 1);
    int nk = t->ctor == T_STRUCT ? (int)rint_in(1, 4) : 1;
    t->count = t->ctor == T_STRUCT ? nk : rint_in(0, 5);
    int64_t sub_budget = budget / (t->count > 0 ? t->count + 1 : 1) / 2;
    for (int i = 0; i < nk; i++)
        t->kids[i] = gen(depth - 1, sub_budget);
    td *k = t->kids[0];
    int64_t ke = k->extent != 0 ? k->extent : 1;
    int64_t span = (k->extent < 0 ? -k->extent : k->extent) + 8;
    t->bl = rint_in(0, 3);
    t->stride = rint_in(-4, 4);
    switch (t->ctor) {
    case T_HVEC:
        t->stride = rint_in(-3 * span, 3 * span);
        break;
    case T_IDX:
    case T_HIDX:
    case T_IDXB:
    case T_HIDXB:
        for (int64_t i = 0; i < t->count; i++) {
            t->bls[i] = rint_in(0, 3);
            t->disps[i] = (t->ctor == T_IDX || t->ctor == T_IDXB) ? rint_in(-6, 6)
                                                                  : rint_in(-3 * span, 3 * span);
            if (rnd() % 3 == 0 && i > 0) /* adjacent runs, to exercise merging */
                t->disps[i] =
                    t->disps[i - 1] + (t->ctor == T_IDX ? t->bls[i - 1] : t->bl) *
                                          (t->ctor == T_IDX || t->ctor == T_IDXB ? 1 : ke);
        }
        break;
    case T_STRUCT:
        for (int i = 0; i < nk; i++) {
            int64_t e = t->kids[i]->extent < 0 ? -t->kids[i]->extent : t->kids[i]->extent;
            t->bls[i] = rint_in(0, 3);
            t->disps[i] = rint_in(-2 * (e + 8), 2 * (e + 8));
        }
        break;
    case T_SUB:
        t->ndims = (int)rint_in(1, 3);
        t->order = rnd() % 2 ? CDT_ORDER_C : CDT_ORDER_FORTRAN;
        for (int d = 0; d < t->ndims; d++) {
            t->sizes[d] = rint_in(1, 5);
            t->subsizes[d] = rint_in(0, t->sizes[d]);
            t->starts[d] = rint_in(0, t->sizes[d] - t->subsizes[d]);
        }
        break;
    case T_RESIZED:
        t->rlb = rint_in(-2 * span, 2 * span);
        t->rext = rint_in(-2 * span, 2 * span);
        break;
    default:
        break;
    }
    if (t->ctor == T_SUB && k->extent <= 0) { /* subarray needs a positive extent */
        t->ctor = T_CONTIG;
    }
    if (t->ctor == T_PADDED) { /* only over an element whose bytes lie within its extent */
        int inside = k->extent >= 0;
        for (int64_t b = 0; b < k->nmap && inside; b++)
            inside = k->map[b] >= k->lb && k->map[b] < k->lb + k->extent;
        if (!inside)
            t->ctor = T_DUP;
    }
    reference(t);
    if (t->nmap > 8192) { /* keep it small: replace by a predefined type */
        free_td(t);
        return gen_pre();
    }
    /* build children depth-first at the end (build()) */
    return t;
}
