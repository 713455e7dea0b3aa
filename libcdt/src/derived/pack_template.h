/*
 * pack_template.h - pack and unpack kernels, written once and expanded twice by
 * pack_kernels.c: with DIR(x) naming the direction's functions and MOVE(mem, str, n) /
 * MOVE_VAR(mem, str, n) copying between the user buffer (mem) and the packed stream (str).
 * No include guard: included once per direction.
 */

/* one run of 16 < len <= 16 * k bytes at q as k 16-byte moves, the last ending at the run's end
 * (k is a constant at every call, so the loop unrolls) */
static inline __attribute__((always_inline)) void DIR(chunked)(char *q, char *s, cdt_count len,
                                                               int k)
{
    for (int c = 0; c < k - 1; c++)
        MOVE(q + 16 * c, s + 16 * c, 16);
    MOVE(q + len - 16, s + len - 16, 16);
}

/* count runs of len bytes at p + i * stride; fixed sizes compile to plain loads and stores,
 * four runs per iteration (more loads in flight on strided, cache-missing sources); other
 * lengths up to 256 bytes as a constant number of 16-byte moves, the last one ending at the
 * run's end (overlapping its neighbour when len is not a multiple of 16) */
static char *DIR(runs)(cdt_count len, char *p, cdt_count count, cdt_count stride, char *s)
{
    if (stride == len) {
        MOVE(p, s, (size_t)(count * len));
        return s + count * len;
    }
    cdt_count i = 0;
    switch (len) {
#define CDT__FIXED_CASE(L)                                                                         \
    case L:                                                                                        \
        for (; i + 4 <= count; i += 4, s += 4 * L) {                                               \
            MOVE(p + i * stride, s, L);                                                            \
            MOVE(p + (i + 1) * stride, s + L, L);                                                  \
            MOVE(p + (i + 2) * stride, s + 2 * L, L);                                              \
            MOVE(p + (i + 3) * stride, s + 3 * L, L);                                              \
        }                                                                                          \
        for (; i < count; i++, s += L)                                                             \
            MOVE(p + i * stride, s, L);                                                            \
        return s;
        CDT__FIXED_SIZES(CDT__FIXED_CASE)
#undef CDT__FIXED_CASE
    default:
        break;
    }
    if (len > 256) {
        for (; i < count; i++, s += len)
            MOVE(p + i * stride, s, (size_t)len);
        return s;
    }
    if (len > 16) {
        switch ((len + 15) / 16) {
#define CDT__CHUNK_CASE(K)                                                                         \
    case K:                                                                                        \
        for (; i < count; i++, s += len)                                                           \
            DIR(chunked)(p + i * stride, s, len, K);                                               \
        return s;
            CDT__CHUNKS(CDT__CHUNK_CASE)
#undef CDT__CHUNK_CASE
        default:
            break;
        }
    }
    for (; i < count; i++, s += len)
        MOVE_VAR(p + i * stride, s, len);
    return s;
}

/* rows of a vector of vectors of runs: ocount rows ostride apart, each icount runs of len
 * bytes istride apart. The fixed sizes get their own two-level loop, the length switch outside
 * both loops: through DIR(runs) per row, the call, its switch and its loop setup cost about
 * 2 ns per row (NAS_MG_x: 64 rows of 64 runs, 4.7% of the pack, measured beside the hand loop) */
static char *DIR(runs2)(cdt_count len, char *p, cdt_count ocount, cdt_count ostride,
                        cdt_count icount, cdt_count istride, char *s)
{
    switch (len) {
#define CDT__FIXED_CASE(L)                                                                         \
    case L:                                                                                        \
        for (cdt_count o = 0; o < ocount; o++) {                                                   \
            char *q = p + o * ostride;                                                             \
            cdt_count i = 0;                                                                       \
            for (; i + 4 <= icount; i += 4, s += 4 * L) {                                          \
                MOVE(q + i * istride, s, L);                                                       \
                MOVE(q + (i + 1) * istride, s + L, L);                                             \
                MOVE(q + (i + 2) * istride, s + 2 * L, L);                                         \
                MOVE(q + (i + 3) * istride, s + 3 * L, L);                                         \
            }                                                                                      \
            for (; i < icount; i++, s += L)                                                        \
                MOVE(q + i * istride, s, L);                                                       \
        }                                                                                          \
        return s;
        CDT__FIXED_SIZES(CDT__FIXED_CASE)
#undef CDT__FIXED_CASE
    default:
        break;
    }
    for (cdt_count o = 0; o < ocount; o++)
        s = DIR(runs)(len, p + o * ostride, icount, istride, s);
    return s;
}

/* runs of len bytes at base + D(i), with the same move shapes as DIR(runs); D(i) reads the
 * 64-bit displacements, or their 32-bit copy (half the bytes in cache beside the runs), times
 * scale (1 for a block-indexed node's own list, folded away; a zip member's scale) */
static inline __attribute__((always_inline)) char *DIR(idx_runs_any)(cdt_count len, char *base,
                                                                     const void *dv, bool narrow,
                                                                     cdt_count scale,
                                                                     cdt_count count, char *s)
{
    const cdt_count *d64 = dv;
    const int32_t *d32 = dv;
#define D(i) ((narrow ? (cdt_count)d32[i] : d64[i]) * scale)
    cdt_count i = 0;
    switch (len) {
#define CDT__FIXED_CASE(L)                                                                         \
    case L:                                                                                        \
        for (; i + 4 <= count; i += 4, s += 4 * L) {                                               \
            MOVE(CDT__AT(base, D(i)), s, L);                                                       \
            MOVE(CDT__AT(base, D(i + 1)), s + L, L);                                               \
            MOVE(CDT__AT(base, D(i + 2)), s + 2 * L, L);                                           \
            MOVE(CDT__AT(base, D(i + 3)), s + 3 * L, L);                                           \
        }                                                                                          \
        for (; i < count; i++, s += L)                                                             \
            MOVE(CDT__AT(base, D(i)), s, L);                                                       \
        return s;
        CDT__FIXED_SIZES(CDT__FIXED_CASE)
#undef CDT__FIXED_CASE
    default:
        break;
    }
    if (len > 16 && len <= 256) {
        switch ((len + 15) / 16) {
#define CDT__CHUNK_CASE(K)                                                                         \
    case K:                                                                                        \
        for (; i < count; i++, s += len)                                                           \
            DIR(chunked)(CDT__AT(base, D(i)), s, len, K);                                          \
        return s;
            CDT__CHUNKS(CDT__CHUNK_CASE)
#undef CDT__CHUNK_CASE
        default:
            break;
        }
    }
    for (; i < count; i++, s += len)
        MOVE_VAR(CDT__AT(base, D(i)), s, len);
    return s;
#undef D
}

static char *DIR(idx_runs)(cdt_count len, char *base, const cdt_count *disps, cdt_count count,
                           char *s)
{
    return DIR(idx_runs_any)(len, base, disps, false, 1, count, s);
}

static char *DIR(idx_runs32)(cdt_count len, char *base, const int32_t *disps, cdt_count count,
                             char *s)
{
    return DIR(idx_runs_any)(len, base, disps, true, 1, count, s);
}

/* a block-indexed node's runs: the 32-bit displacements where commit made them */
static char *DIR(blk_runs)(const cdt__node *n, char *base, char *s)
{
    if (n->disps32 != NULL)
        return DIR(idx_runs32)(n->child->len, base, n->disps32, n->count, s);
    return DIR(idx_runs)(n->child->len, base, n->disps, n->count, s);
}

/* the runs of a zip member whose scale is not the list's own (a call of its own: inlined
 * beside DIR(idx_runs32), the compiler merges the two loops into one that multiplies) */
static __attribute__((noinline)) char *DIR(idx_runs32_scaled)(cdt_count len, char *base,
                                                              const int32_t *disps, cdt_count scale,
                                                              cdt_count count, char *s)
{
    return DIR(idx_runs_any)(len, base, disps, true, scale, count, s);
}

/* A struct of block-indexed members over one index list (cdt__zip): the members one after
 * another, each over the whole list, like the hand-written loop. The list is read once from
 * memory and from L1 after (one list where the members' own nodes have one each: LAMMPS_atomic
 * D1 read misses 894 -> 805 per call, callgrind). Walking all members per displacement, or
 * per block of 16 or 256 displacements, was measured worse: where a member's runs cover much
 * of its array (LAMMPS_full: 3062 of 3534 elements) its lines are reused from L1 only while
 * that member is walked alone (D1 read misses 6,022 -> 15,300 per call interleaved). */
static char *DIR(zip)(const cdt__zip *z, char *base, char *s)
{
    for (int j = 0; j < z->members; j++) {
        char *p = CDT__AT(base, z->base[j]);
        if (z->scale[j] == 1) /* the list's own scale: no multiply per run */
            s = DIR(idx_runs32)(z->len[j], p, z->idx32, z->count, s);
        else
            s = DIR(idx_runs32_scaled)(z->len[j], p, z->idx32, z->scale[j], z->count, s);
    }
    return s;
}

/* runs of different lengths: lists built by merging equal blocks (only a few touched their
 * neighbours) are mostly runs of the shortest length, which then moves as a fixed size */
static char *DIR(idx_var)(const cdt__node *n, char *base, char *s)
{
    const cdt_count *d = n->disps, *l = n->lens;
    cdt_count i = 0, count = n->count;
    switch (n->minlen) {
#define CDT__FIXED_CASE(L)                                                                         \
    case L:                                                                                        \
        for (; i < count; i++) {                                                                   \
            if (l[i] == L)                                                                         \
                MOVE(CDT__AT(base, d[i]), s, L);                                                   \
            else                                                                                   \
                MOVE_VAR(CDT__AT(base, d[i]), s, l[i]);                                            \
            s += l[i];                                                                             \
        }                                                                                          \
        return s;
        CDT__FIXED_SIZES(CDT__FIXED_CASE)
#undef CDT__FIXED_CASE
    default:
        break;
    }
    for (; i < count; i++) {
        MOVE_VAR(CDT__AT(base, d[i]), s, l[i]);
        s += l[i];
    }
    return s;
}

static char *DIR(one)(const cdt__node *n, char *base, char *s);

/* count instances of n at base + i * stride: the count loop fused with the node's kernel */
static char *DIR(rep)(const cdt__node *n, char *base, cdt_count count, cdt_count stride, char *s)
{
    switch (n->kern) {
    case CDT__K_LEAF:
        return DIR(runs)(n->runlen, CDT__AT(base, n->first), count, stride, s);
    case CDT__K_VEC_LEAF: /* count rows of n's runs */
        return DIR(runs2)(n->runlen, CDT__AT(base, n->first), count, stride, n->count, n->stride,
                          s);
    case CDT__K_BLK_LEAF: {
        char *p = CDT__AT(base, n->child->off);
        for (cdt_count i = 0; i < count; i++)
            s = DIR(blk_runs)(n, p + i * stride, s);
        return s;
    }
    case CDT__K_IDX:
        if (n->count <= 4 && n->minlen >= 8 && n->maxlen <= 16 && count > 0) {
            /* struct fields of 8 to 16 bytes: two overlapping 8-byte moves each, with the
             * field offsets and lengths held in registers (count unrolled) */
            cdt_count d0 = n->disps[0], d1 = n->disps[1], l0 = n->lens[0], l1 = n->lens[1];
            cdt_count d2 = n->count > 2 ? n->disps[2] : 0, l2 = n->count > 2 ? n->lens[2] : 8;
            cdt_count d3 = n->count > 3 ? n->disps[3] : 0, l3 = n->count > 3 ? n->lens[3] : 8;
            cdt_count o1 = l0, o2 = l0 + l1, o3 = o2 + l2, o4 = o3 + l3;
#define CDT__FIELD(d, l, o)                                                                        \
    MOVE(e + (d), s + (o), 8);                                                                     \
    MOVE(e + (d) + (l)-8, s + (o) + (l)-8, 8)
            /* e steps from element to element only while one follows (a pointer past the last
             * element may not exist for huge extents) */
            char *e = base;
            switch (n->count) {
            case 2:
                for (cdt_count i = 0;; s += o2) {
                    CDT__FIELD(d0, l0, 0);
                    CDT__FIELD(d1, l1, o1);
                    if (++i == count)
                        return s + o2;
                    e += stride;
                }
            case 3:
                for (cdt_count i = 0;; s += o3) {
                    CDT__FIELD(d0, l0, 0);
                    CDT__FIELD(d1, l1, o1);
                    CDT__FIELD(d2, l2, o2);
                    if (++i == count)
                        return s + o3;
                    e += stride;
                }
            default:
                for (cdt_count i = 0;; s += o4) {
                    CDT__FIELD(d0, l0, 0);
                    CDT__FIELD(d1, l1, o1);
                    CDT__FIELD(d2, l2, o2);
                    CDT__FIELD(d3, l3, o3);
                    if (++i == count)
                        return s + o4;
                    e += stride;
                }
            }
#undef CDT__FIELD
        }
        if (n->count <= 4) {
            const cdt_count *d = n->disps, *l = n->lens, k = n->count;
            for (cdt_count i = 0; i < count; i++)
                for (cdt_count j = 0; j < k; j++) {
                    MOVE_VAR(CDT__AT(base, i * stride + d[j]), s, l[j]);
                    s += l[j];
                }
            return s;
        }
        break;
    default:
        break;
    }
    for (cdt_count i = 0; i < count; i++)
        s = DIR(one)(n, CDT__AT(base, i * stride), s);
    return s;
}

/* one whole instance of n at base */
static char *DIR(one)(const cdt__node *n, char *base, char *s)
{
    switch (n->kern) {
    case CDT__K_LEAF:
        MOVE_VAR(CDT__AT(base, n->first), s, n->runlen);
        return s + n->runlen;
    case CDT__K_VEC_LEAF:
        return DIR(runs)(n->runlen, CDT__AT(base, n->first), n->count, n->stride, s);
    case CDT__K_VEC_VEC_LEAF:
        return DIR(runs2)(n->runlen, CDT__AT(base, n->first), n->count, n->stride, n->in_count,
                          n->in_stride, s);
    case CDT__K_VEC_BLK_LEAF: {
        const cdt__node *c = n->child;
        char *p = CDT__AT(base, n->off + c->child->off);
        for (cdt_count i = 0; i < n->count; i++)
            s = DIR(blk_runs)(c, p + i * n->stride, s);
        return s;
    }
    case CDT__K_VEC_IDX:
    case CDT__K_VEC:
        return DIR(rep)(n->child, CDT__AT(base, n->off), n->count, n->stride, s);
    case CDT__K_BLK_LEAF:
        return DIR(blk_runs)(n, CDT__AT(base, n->child->off), s);
    case CDT__K_BLK:
        for (cdt_count i = 0; i < n->count; i++)
            s = DIR(one)(n->child, CDT__AT(base, n->disps[i]), s);
        return s;
    case CDT__K_IDX:
        return DIR(idx_var)(n, base, s);
    case CDT__K_STRUCT:
        for (cdt_count i = 0; i < n->count; i++)
            s = DIR(one)(n->children[i], CDT__AT(base, n->disps[i]), s);
        return s;
    case CDT__K_ZIP:
        return DIR(zip)(n->zip, base, s);
    }
    return s;
}

/* stream bytes [skip, skip + len) of one instance of n at base; 0 < len, skip + len <= size */
static char *DIR(range)(const cdt__node *n, char *base, cdt_count skip, cdt_count len, char *s)
{
    if (skip == 0 && len == n->size)
        return DIR(one)(n, base, s);
    switch (n->kind) {
    case CDT__NODE_LEAF:
        MOVE(CDT__AT(base, n->off + skip), s, (size_t)len);
        return s + len;
    case CDT__NODE_VECTOR:
    case CDT__NODE_BLOCK: {
        const cdt__node *c = n->child;
        cdt_count cs = c->size, i = skip / cs, r = skip % cs;
        bool vec = n->kind == CDT__NODE_VECTOR;
        char *vbase = CDT__AT(base, n->off);
        if (r > 0) {
            cdt_count take = cs - r < len ? cs - r : len;
            s = DIR(range)(c, vec ? CDT__AT(vbase, i * n->stride) : CDT__AT(base, n->disps[i]), r,
                           take, s);
            len -= take;
            i++;
        }
        cdt_count full = len / cs;
        if (full > 0) {
            if (vec) {
                s = DIR(rep)(c, CDT__AT(vbase, i * n->stride), full, n->stride, s);
            } else {
                for (cdt_count j = i; j < i + full; j++)
                    s = DIR(one)(c, CDT__AT(base, n->disps[j]), s);
            }
            i += full;
            len -= full * cs;
        }
        if (len > 0)
            s = DIR(range)(c, vec ? CDT__AT(vbase, i * n->stride) : CDT__AT(base, n->disps[i]), 0,
                           len, s);
        return s;
    }
    case CDT__NODE_INDEXED:
    case CDT__NODE_STRUCT: {
        cdt_count lo = cdt__last_at_or_below(n->prefix, n->count, skip);
        for (cdt_count i = lo; len > 0; i++) {
            cdt_count r = skip - n->prefix[i], es = n->prefix[i + 1] - n->prefix[i];
            cdt_count take = es - r < len ? es - r : len;
            if (n->kind == CDT__NODE_INDEXED) {
                MOVE(CDT__AT(base, n->disps[i] + r), s, (size_t)take);
                s += take;
            } else {
                s = DIR(range)(n->children[i], CDT__AT(base, n->disps[i]), r, take, s);
            }
            skip += take;
            len -= take;
        }
        return s;
    }
    }
    return s;
}
