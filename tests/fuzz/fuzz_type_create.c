/*
 * fuzz_type_create.c - libFuzzer target: the input is a small program that builds a tree of
 * derived types with every constructor (contiguous, vector, hvector, indexed, hindexed,
 * indexed_block, hindexed_block, struct, subarray in C and Fortran order, resized, dup) over
 * predefined types and earlier results, with counts, strides, displacements and bounds taken
 * from the input (small, negative, zero and near the 64-bit limits).
 * Every constructor and commit must succeed or return an error code. For every type that
 * commits, the queries, the description, the pack/unpack engine (whole, in fragments, in
 * chunks), cdt_copy and the iov pieces are checked against each other; a disagreement is a
 * library bug and aborts. Build with -DFTC_TRACE to print each step (for triage).
 */
#include "fuzz_input.h"
#include "seed_types.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef FTC_TRACE
#include <stdio.h>
#endif

#define MAX_SLOTS 8        /* handles alive at once */
#define MAX_STEPS 24       /* instructions per input */
#define MAX_ENTRIES 16     /* array arguments */
#define MAX_PACKED 4096    /* pack checks only for types this small ... */
#define MAX_SPAN (1 << 20) /* ... whose memory span is at most this */
#define MAX_IOV 64
#define MAX_SHIFT ((cdt_count)1 << 44)

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t u8(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static uint64_t raw(reader *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | u8(r);
    return v;
}

static const cdt_count specials[32] = {
    INT64_MAX,
    INT64_MIN,
    INT64_MAX - 1,
    INT64_MIN + 1,
    INT64_MAX / 2,
    INT64_MIN / 2,
    INT64_MAX / 2 + 1,
    INT64_MAX / 3,
    (cdt_count)1 << 62,
    -((cdt_count)1 << 62),
    (cdt_count)1 << 32,
    -((cdt_count)1 << 32),
    (cdt_count)1 << 31,
    -((cdt_count)1 << 31),
    INT32_MAX,
    INT32_MIN,
    (cdt_count)1 << 40,
    -((cdt_count)1 << 40),
    (cdt_count)1 << 48,
    INT64_MAX / 16,
    INT64_MAX / 7,
    INT64_MAX / 8 + 1,
    4096,
    -4096,
    1 << 20,
    -(1 << 20),
    65536,
    255,
    -1,
    0,
    1,
    (cdt_count)3037000500, /* about sqrt(2^63) */
};

/* a count, blocklength, stride, displacement or bound */
static cdt_count num(reader *r)
{
    uint8_t tag = u8(r);
    switch (tag & 7) {
    case 0:
    case 1:
    case 2:
        return (cdt_count)(tag >> 3) - 4; /* -4 .. 27 */
    case 3:
        return (int8_t)u8(r);
    case 4:
        return (int16_t)raw(r, 2);
    case 5:
        return (int32_t)raw(r, 4);
    case 6:
        return specials[tag >> 3];
    default:
        return (cdt_count)raw(r, 8);
    }
}

typedef struct {
    cdt_type slot[MAX_SLOTS];
    int n;
} stack;

/* an old type: a predefined one, an earlier result, rarely NULL or a custom type */
static cdt_type pick(stack *s, reader *r)
{
    uint8_t b = u8(r);
    if (b == 0xff)
        return NULL;
    if (b == 0xfe)
        return struct_vec_type();
    if ((b & 0x80) && s->n > 0)
        return s->slot[(b & 0x7f) % s->n];
    return cdt_type_predefined((cdt_kind)(1 + b % 15));
}

static void must(int cond)
{
    if (!cond)
        abort();
}

typedef struct {
    cdt_count size, lb, extent, tlb, textent;
} shape;

static shape query(cdt_type t)
{
    shape q;
    must(cdt_type_size(t, &q.size) == CDT_SUCCESS);
    must(cdt_type_extent(t, &q.lb, &q.extent) == CDT_SUCCESS);
    must(cdt_type_true_extent(t, &q.tlb, &q.textent) == CDT_SUCCESS);
    must(q.size >= 0 && q.textent >= 0);
    return q;
}

static int describe(cdt_type t, char *buf, size_t len, size_t *needed)
{
    int rc = cdt_type_describe(t, buf, len, needed);
    if (rc == CDT_SUCCESS && len > 0)
        must(strlen(buf) == (*needed < len ? *needed : len - 1));
    return rc;
}

static FUZZ_UNTRACED void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 8));
}

/* pack (buf, count, t) as the fragments [0, a), [a, b), [b, n) in the order `order` picks */
static void pack_pieces(const void *buf, cdt_count count, cdt_type t, cdt_count n, cdt_count a,
                        cdt_count b, int order, unsigned char *out)
{
    static const int orders[6][3] = {{0, 1, 2}, {2, 1, 0}, {1, 0, 2},
                                     {0, 2, 1}, {2, 0, 1}, {1, 2, 0}};
    cdt_count lo[3] = {0, a, b}, hi[3] = {a, b, n};
    cdt_op op;
    must(cdt_op_pack_begin(buf, count, t, &op) == CDT_SUCCESS);
    cdt_count ps;
    must(cdt_op_packed_size(op, &ps) == CDT_SUCCESS && ps == n);
    for (int k = 0; k < 3; k++) {
        int i = orders[order % 6][k];
        cdt_count used = -1;
        must(cdt_op_pack(op, lo[i], out + lo[i], hi[i] - lo[i], &used) == CDT_SUCCESS);
        must(used == hi[i] - lo[i]);
    }
    /* at the end of the stream: nothing more */
    cdt_count used = -1;
    unsigned char extra;
    must(cdt_op_pack(op, n, &extra, 1, &used) == CDT_SUCCESS && used == 0);
    must(cdt_op_end(op) == CDT_SUCCESS);
}

static void pack_chunks(const void *buf, cdt_count count, cdt_type t, cdt_count n, cdt_count chunk,
                        unsigned char *out)
{
    cdt_op op;
    must(cdt_op_pack_begin(buf, count, t, &op) == CDT_SUCCESS);
    for (cdt_count off = 0; off < n;) {
        cdt_count used = -1;
        must(cdt_op_pack(op, off, out + off, chunk, &used) == CDT_SUCCESS);
        must(used == (n - off < chunk ? n - off : chunk));
        off += used;
    }
    must(cdt_op_end(op) == CDT_SUCCESS);
}

static void unpack_two(void *buf, cdt_count count, cdt_type t, const unsigned char *in, cdt_count n,
                       cdt_count a, int reverse)
{
    cdt_op op;
    must(cdt_op_unpack_begin(buf, count, t, &op) == CDT_SUCCESS);
    if (reverse) {
        must(cdt_op_unpack(op, a, in + a, n - a) == CDT_SUCCESS);
        must(cdt_op_unpack(op, 0, in, a) == CDT_SUCCESS);
    } else {
        must(cdt_op_unpack(op, 0, in, a) == CDT_SUCCESS);
        must(cdt_op_unpack(op, a, in + a, n - a) == CDT_SUCCESS);
    }
    cdt_count done = -1;
    must(cdt_op_unpacked_bytes(op, &done) == CDT_SUCCESS && done == n);
    must(cdt_op_end(op) == CDT_SUCCESS);
}

/* buf such that buf + off is mem (no pointer arithmetic outside an object in this file) */
static void *shifted(void *mem, cdt_count off)
{
    return (void *)((uintptr_t)mem - (uintptr_t)off);
}

static int inside(cdt_iov v, const unsigned char *mem, cdt_count span)
{
    uintptr_t p = (uintptr_t)v.base, m = (uintptr_t)mem;
    return v.len > 0 && v.len <= span && p >= m && p - m <= (uintptr_t)(span - v.len);
}

/* iov pieces of (buf, count, t): maximal, inside [mem, mem + span), in packed order */
static void check_iov(const void *buf, cdt_count count, cdt_type t, const unsigned char *mem,
                      cdt_count span, const unsigned char *packed, cdt_count n, reader *r)
{
    cdt_count pieces = -1;
    must(cdt_iov_count(buf, count, t, &pieces) == CDT_SUCCESS);
    must(pieces >= 0 && pieces <= n);
    must((pieces == 0) == (n == 0));
    cdt_iov all[MAX_IOV];
    cdt_count got = -1;
    if (pieces <= MAX_IOV) {
        must(cdt_iov_get(buf, count, t, 0, MAX_IOV, all, &got) == CDT_SUCCESS);
        must(got == pieces);
        cdt_count off = 0;
        for (cdt_count i = 0; i < got; i++) {
            must(inside(all[i], mem, span));
            must(off + all[i].len <= n &&
                 memcmp(all[i].base, packed + off, (size_t)all[i].len) == 0);
            if (i > 0)
                must((uintptr_t)all[i - 1].base + (uintptr_t)all[i - 1].len !=
                     (uintptr_t)all[i].base);
            off += all[i].len;
        }
        must(off == n);
    }
    /* a window at an input-chosen start */
    cdt_count first = (cdt_count)(raw(r, 2) % (uint64_t)(pieces + 2));
    cdt_count max = u8(r) % 9;
    cdt_iov win[8];
    got = -1;
    int rc = cdt_iov_get(buf, count, t, first, max, win, &got);
    if (first > pieces) {
        must(rc != CDT_SUCCESS || got == 0);
        return;
    }
    must(rc == CDT_SUCCESS);
    cdt_count want = pieces - first < max ? pieces - first : max;
    must(got == want);
    for (cdt_count i = 0; i < got; i++) {
        must(inside(win[i], mem, span));
        if (pieces <= MAX_IOV)
            must(win[i].base == all[first + i].base && win[i].len == all[first + i].len);
    }
}

static FUZZ_UNTRACED cdt_count byte_sum(const unsigned char *p, cdt_count n)
{
    cdt_count sum = 0;
    for (cdt_count i = 0; i < n; i++)
        sum += p[i];
    return sum;
}

/* does (count, t) touch any byte twice? */
static int overlaps(cdt_count count, cdt_type t, cdt_count lo, cdt_count span, cdt_count n)
{
    unsigned char *mem = calloc((size_t)span + 1, 1);
    unsigned char *ones = malloc((size_t)n + 1);
    must(mem != NULL && ones != NULL);
    memset(ones, 1, (size_t)n);
    unpack_two(shifted(mem, lo), count, t, ones, n, 0, 0);
    cdt_count touched = byte_sum(mem, span);
    free(mem);
    free(ones);
    return touched != n;
}

/* the checks for a committed type */
static void check_committed(cdt_type t, reader *r)
{
    shape q = query(t);
#ifdef FTC_TRACE
    {
        char d[4096];
        size_t nn;
        cdt_type_describe(t, d, sizeof(d), &nn);
        fprintf(stderr, "committed size %ld lb %ld ext %ld tlb %ld text %ld: %s\n", (long)q.size,
                (long)q.lb, (long)q.extent, (long)q.tlb, (long)q.textent, d);
    }
#endif
    cdt_count ps = -1;
    must(cdt_pack_size(1, t, &ps) == CDT_SUCCESS && ps == q.size);

    char text[512];
    size_t needed = 0;
    size_t len = (size_t)u8(r) * 2;
    /* one description per type, at an input-chosen length (0 to 510, NULL at 0): walking a
     * form of thousands of entries costs as much as the rest of the checks */
    must(describe(t, len ? text : NULL, len, &needed) == CDT_SUCCESS);

    /* pack count copies */
    cdt_count count = 1 + u8(r) % 3;
    __int128 n = (__int128)count * q.size;
    if (q.size > 0 && n > MAX_PACKED)
        return;
    must(cdt_pack_size(count, t, &ps) == CDT_SUCCESS && ps == n);
    __int128 step = (__int128)(count - 1) * q.extent;
    __int128 lo = (__int128)q.tlb + (step < 0 ? step : 0);
    __int128 hi = (__int128)q.tlb + q.textent + (step > 0 ? step : 0);
    /* buf = mem - lo must be an address a program could pass: |lo| below the address space */
    if (hi - lo > MAX_SPAN || lo < -MAX_SHIFT || lo > MAX_SHIFT)
        return;
    cdt_count span = (cdt_count)(hi - lo), bytes = (cdt_count)n;

    unsigned char *mem1 = malloc((size_t)span + 1), *mem2 = calloc((size_t)span + 1, 1);
    unsigned char *s1 = malloc((size_t)bytes + 1), *s2 = malloc((size_t)bytes + 1);
    unsigned char *s3 = malloc((size_t)bytes + 1);
    must(mem1 != NULL && mem2 != NULL && s1 != NULL && s2 != NULL && s3 != NULL);
    fill(mem1, (size_t)span, u8(r));
    void *buf1 = shifted(mem1, (cdt_count)lo), *buf2 = shifted(mem2, (cdt_count)lo);

    /* whole, in three fragments in any order, in chunks: the same stream */
    pack_pieces(buf1, count, t, bytes, bytes, bytes, 0, s1);
    cdt_count a = (cdt_count)(raw(r, 2) % (uint64_t)(bytes + 1));
    cdt_count b = a + (cdt_count)(raw(r, 2) % (uint64_t)(bytes - a + 1));
    pack_pieces(buf1, count, t, bytes, a, b, u8(r), s2);
    must(memcmp(s1, s2, (size_t)bytes) == 0);
    cdt_count chunk = 1 + u8(r);
    if (chunk < bytes / 64)
        chunk = bytes / 64;
    memset(s2, 0, (size_t)bytes);
    pack_chunks(buf1, count, t, bytes, chunk, s2);
    must(memcmp(s1, s2, (size_t)bytes) == 0);

    /* cdt_copy into plain bytes is the packed stream */
    memset(s2, 0, (size_t)bytes);
    must(cdt_copy(buf1, count, t, s2, bytes, CDT_BYTE) == CDT_SUCCESS);
    must(memcmp(s1, s2, (size_t)bytes) == 0);

    /* unpack into a second buffer, pack again: the same stream unless the type overlaps */
    uint8_t how = u8(r);
    unpack_two(buf2, count, t, s1, bytes, a, how & 1);
    pack_pieces(buf2, count, t, bytes, bytes, bytes, 0, s3);
    if (memcmp(s1, s3, (size_t)bytes) != 0)
        must(overlaps(count, t, (cdt_count)lo, span, bytes));

    check_iov(buf1, count, t, mem1, span, s1, bytes, r);

    free(mem1);
    free(mem2);
    free(s1);
    free(s2);
    free(s3);
}

/* the checks for any new handle; commits it when the input says so */
static void check_new(cdt_type *t, int commit, reader *r)
{
    shape q = query(*t);
    if (commit) {
        int rc = cdt_type_commit(t);
        must(*t != NULL);
        if (rc != CDT_SUCCESS)
            return;
        shape c = query(*t);
        must(memcmp(&q, &c, sizeof(q)) == 0);
        check_committed(*t, r);
    }
}

static int is_committed(cdt_type t)
{
    char c;
    return cdt_type_describe(t, &c, 1, NULL) == CDT_SUCCESS;
}

/* read up to MAX_ENTRIES array entries; returns the count argument (may be invalid) */
static cdt_count entries(reader *r, cdt_count *bl, cdt_count *disp)
{
    uint8_t c = u8(r);
    cdt_count count = c % (MAX_ENTRIES + 1);
    for (cdt_count i = 0; i < count; i++) {
        bl[i] = (c & 0x80) ? num(r) : u8(r) % 5;
        disp[i] = num(r);
    }
    return (c & 0x60) == 0x60 ? -count : count;
}

static int subarray(stack *s, reader *r, int order, cdt_type *nt)
{
    uint8_t c = u8(r);
    int ndims = c % 8; /* 0 and 7 included; 0 is invalid */
    int valid = c & 0x80;
    cdt_count sizes[8], subs[8], starts[8];
    for (int i = 0; i < ndims; i++) {
        sizes[i] = num(r);
        subs[i] = num(r);
        starts[i] = num(r);
        if (valid) {
            if (sizes[i] <= 0)
                sizes[i] = sizes[i] == INT64_MIN ? INT64_MAX : (sizes[i] == 0 ? 1 : -sizes[i]);
            subs[i] = (cdt_count)((uint64_t)subs[i] % ((uint64_t)sizes[i] + 1));
            starts[i] = (cdt_count)((uint64_t)starts[i] % ((uint64_t)(sizes[i] - subs[i]) + 1));
        }
    }
    if (c & 0x40)
        order = 7; /* invalid order */
    return cdt_type_subarray(ndims, sizes, subs, starts, order, pick(s, r), nt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    stack s = {{NULL}, 0};
    cdt_count bl[MAX_ENTRIES], disp[MAX_ENTRIES];
    cdt_type types[MAX_ENTRIES];

    for (int step = 0; step < MAX_STEPS && r.n > 0; step++) {
        uint8_t op = u8(&r);
        cdt_type nt = NULL, old = NULL;
        cdt_count count, b, x;
        int rc;
#ifdef FTC_TRACE
        fprintf(stderr, "op %d\n", op % 14);
#endif
        switch (op % 14) {
        case 0:
            count = num(&r);
            rc = cdt_type_contiguous(count, pick(&s, &r), &nt);
            break;
        case 1:
            count = num(&r);
            b = num(&r);
            x = num(&r);
            rc = cdt_type_vector(count, b, x, pick(&s, &r), &nt);
            break;
        case 2:
            count = num(&r);
            b = num(&r);
            x = num(&r);
            rc = cdt_type_hvector(count, b, x, pick(&s, &r), &nt);
            break;
        case 3:
            count = entries(&r, bl, disp);
            rc = cdt_type_indexed(count, bl, disp, pick(&s, &r), &nt);
            break;
        case 4:
            count = entries(&r, bl, disp);
            rc = cdt_type_hindexed(count, bl, disp, pick(&s, &r), &nt);
            break;
        case 5:
            count = entries(&r, bl, disp);
            rc = cdt_type_indexed_block(count, num(&r), disp, pick(&s, &r), &nt);
            break;
        case 6:
            count = entries(&r, bl, disp);
            rc = cdt_type_hindexed_block(count, num(&r), disp, pick(&s, &r), &nt);
            break;
        case 7:
            count = entries(&r, bl, disp);
            for (cdt_count i = 0; i < (count < 0 ? -count : count); i++)
                types[i] = pick(&s, &r);
            rc = cdt_type_struct(count, bl, disp, types, &nt);
            break;
        case 8:
            rc = subarray(&s, &r, CDT_ORDER_C, &nt);
            break;
        case 9:
            rc = subarray(&s, &r, CDT_ORDER_FORTRAN, &nt);
            break;
        case 10:
            b = num(&r);
            x = num(&r);
            rc = cdt_type_resized(pick(&s, &r), b, x, &nt);
            if (rc == CDT_SUCCESS && (op & 0x40)) {
                /* its elements as their memory: same bounds, one byte of data for each byte of
                 * extent; refused only for a negative extent or bytes outside it */
                cdt_type p = NULL;
                cdt_count lb0 = 0, ext0 = 0, lb1 = 0, ext1 = 0, size = 0;
                if (cdt_type_padded(nt, &p) == CDT_SUCCESS) {
                    must(cdt_type_extent(nt, &lb0, &ext0) == CDT_SUCCESS &&
                         cdt_type_extent(p, &lb1, &ext1) == CDT_SUCCESS &&
                         cdt_type_size(p, &size) == CDT_SUCCESS);
                    must(lb0 == lb1 && ext0 == ext1 && size == ext1);
                    check_new(&p, 1, &r);
                    must(cdt_type_free(&p) == CDT_SUCCESS);
                } else {
                    must(p == NULL);
                }
            }
            break;
        case 11:
            old = pick(&s, &r);
            rc = cdt_type_dup(old, &nt);
            if (rc == CDT_SUCCESS && is_committed(old)) {
                /* a dup of a committed type is committed and prints the same */
                char t1[512], t2[512];
                size_t n1 = 0, n2 = 0;
                must(describe(old, t1, sizeof(t1), &n1) == CDT_SUCCESS);
                must(describe(nt, t2, sizeof(t2), &n2) == CDT_SUCCESS);
                must(n1 == n2 && strcmp(t1, t2) == 0);
            }
            break;
        case 12: /* commit a handle */
            if (s.n > 0)
                check_new(&s.slot[u8(&r) % s.n], 1, &r);
            continue;
        default: /* free a handle early; types built on it keep it alive */
            if (s.n > 0) {
                int i = u8(&r) % s.n;
                must(cdt_type_free(&s.slot[i]) == CDT_SUCCESS && s.slot[i] == NULL);
                s.slot[i] = s.slot[--s.n];
            }
            continue;
        }
        if (rc != CDT_SUCCESS)
            continue;
        must(nt != NULL);
        check_new(&nt, op & 0x80, &r);
        if (s.n < MAX_SLOTS) {
            s.slot[s.n++] = nt;
        } else {
            /* replace a slot; the old handle may be one nt was built on */
            int i = u8(&r) % MAX_SLOTS;
            must(cdt_type_free(&s.slot[i]) == CDT_SUCCESS);
            s.slot[i] = nt;
        }
    }
    for (int i = 0; i < s.n; i++)
        must(cdt_type_free(&s.slot[i]) == CDT_SUCCESS && s.slot[i] == NULL);
    return 0;
}
