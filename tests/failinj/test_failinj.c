/*
 * test_failinj.c - every allocation and every custom-type callback of these calls fails in
 * turn: derived constructors and commit, operations (pack, unpack in fragments), frame encode,
 * frame decode, the streaming decoder, the serialized-object adapter. See failinj.h.
 * Usage: test_failinj SCENARIO|all
 */
#include "failinj.h"

#include <cdt_sobj.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- a custom type ---------- */

/* packed stream: data reversed; regions: r0 (16 int32) and r1 (9 doubles) of each element */
enum { DATA = 61, R0 = 16, R1 = 9, NOBJ = 3, CHUNK = 7 };
typedef struct fobj {
    unsigned char data[DATA];
    int32_t r0[R0];
    double r1[R1];
} fobj;

typedef struct fstate {
    long magic;
} fstate;

#define CB_POINT()                                                                                 \
    do {                                                                                           \
        if (failinj_callback_fails())                                                              \
            return FAILINJ_CB_ERROR;                                                               \
    } while (0)

static int f_state(void *context, const void *src, cdt_count count, void **state)
{
    (void)context;
    (void)src;
    (void)count;
    CB_POINT();
    fstate *s = malloc(sizeof(*s)); /* freed by f_free: a leak shows a missing state_free */
    if (s == NULL)
        return CDT_ERR_NO_MEMORY;
    s->magic = 0x5eed;
    *state = s;
    return CDT_SUCCESS;
}

static int f_free(void *state)
{
    fstate *s = state;
    int bad = s == NULL || s->magic != 0x5eed;
    if (s != NULL)
        s->magic = 0;
    free(s);
    if (bad)
        return CDT_ERR_INVALID_ARG;
    CB_POINT(); /* after the release: state_free is called once, whatever it returns */
    return CDT_SUCCESS;
}

static int f_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state;
    (void)buf;
    CB_POINT();
    *size = count * DATA;
    return CDT_SUCCESS;
}

static int f_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                  cdt_count dst_size, cdt_count *used)
{
    (void)state;
    CB_POINT();
    const fobj *o = buf;
    cdt_count n = count * DATA - offset;
    if (n > dst_size)
        n = dst_size;
    if (n > CHUNK)
        n = CHUNK;
    for (cdt_count i = 0; i < n; i++) {
        cdt_count k = offset + i;
        ((unsigned char *)dst)[i] = o[k / DATA].data[DATA - 1 - k % DATA];
    }
    *used = n;
    return CDT_SUCCESS;
}

static int f_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                    cdt_count src_size)
{
    (void)state;
    (void)count;
    CB_POINT();
    fobj *o = buf;
    for (cdt_count i = 0; i < src_size; i++) {
        cdt_count k = offset + i;
        o[k / DATA].data[DATA - 1 - k % DATA] = ((const unsigned char *)src)[i];
    }
    return CDT_SUCCESS;
}

static int f_rcount(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    (void)buf;
    CB_POINT();
    *n = 2 * count;
    return CDT_SUCCESS;
}

static int f_region(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                    cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    CB_POINT();
    fobj *o = buf;
    for (cdt_count i = 0; i < n; i++) {
        bases[i] = i % 2 == 0 ? (void *)o[i / 2].r0 : (void *)o[i / 2].r1;
        lens[i] = i % 2 == 0 ? R0 : R1;
        types[i] = i % 2 == 0 ? CDT_INT32 : CDT_DOUBLE;
    }
    return CDT_SUCCESS;
}

static cdt_type t_inorder, t_anyorder; /* the custom type with inorder set and not */
static cdt_type t_derived;             /* depth 3, committed */
static cdt_type t_contig;              /* 4096 int32: one contiguous block, a region in frames */
static fobj src_obj[NOBJ];
static unsigned char *d_src;
static cdt_count d_span;

static void fill_obj(fobj *o, int n)
{
    for (int e = 0; e < n; e++) {
        for (int i = 0; i < DATA; i++)
            o[e].data[i] = (unsigned char)(e * 37 + i * 3 + 1);
        for (int i = 0; i < R0; i++)
            o[e].r0[i] = e * 1000 + i;
        for (int i = 0; i < R1; i++)
            o[e].r1[i] = e + i * 0.5;
    }
}

static int obj_equal(const fobj *a, const fobj *b, int n)
{
    for (int e = 0; e < n; e++)
        if (memcmp(a[e].data, b[e].data, DATA) != 0 || memcmp(a[e].r0, b[e].r0, sizeof(a->r0)) ||
            memcmp(a[e].r1, b[e].r1, sizeof(a->r1)))
            return 0;
    return 1;
}

/* the whole frame of (buf, count, type) as bytes, made without injection (NULL on error) */
static unsigned char *wire_of(const void *buf, cdt_count count, cdt_type type,
                              const cdt_frame_params *params, cdt_count *len)
{
    cdt_frame f;
    if (cdt_frame_encode(buf, count, type, params, &f) != CDT_SUCCESS)
        return NULL;
    unsigned char *w = NULL;
    if (cdt_frame_size(f, len) == CDT_SUCCESS && (w = malloc((size_t)*len)) != NULL &&
        cdt_frame_gather(f, 0, w, *len) != CDT_SUCCESS) {
        free(w);
        w = NULL;
    }
    cdt_frame_free(f);
    return w;
}

/* ---------------------------------------------------------------- scenarios -------------- */

/* derived constructors (every kind) and commit; the result's description and packed bytes
 * must be those of a build without failures */
static void sc_type_commit(void)
{
    static char ref_desc[4096];
    static unsigned char ref_packed[8192];
    static cdt_count ref_size = -1;
    cdt_type v = NULL, h = NULL, ix = NULL, sub = NULL, st = NULL, ib = NULL, hib = NULL,
             hix = NULL, rs = NULL, top = NULL, c = NULL;
    char desc[4096];
    unsigned char packed[8192];
    double data[512];
    for (int i = 0; i < 512; i++)
        data[i] = i * 1.5;
    STEP(cdt_type_vector(4, 1, 2, CDT_INT32, &v));
    STEP(cdt_type_hvector(3, 2, 64, v, &h));
    STEP(cdt_type_indexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 3}, h, &ix));
    STEP(cdt_type_subarray(2, (cdt_count[]){6, 5}, (cdt_count[]){3, 2}, (cdt_count[]){1, 2},
                           CDT_ORDER_C, CDT_DOUBLE, &sub));
    STEP(cdt_type_indexed_block(3, 2, (cdt_count[]){0, 5, 9}, CDT_INT16, &ib));
    STEP(cdt_type_hindexed_block(2, 1, (cdt_count[]){0, 40}, ib, &hib));
    STEP(cdt_type_hindexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 100}, hib, &hix));
    STEP(cdt_type_struct(4, (cdt_count[]){1, 1, 2, 1}, (cdt_count[]){0, 1024, 1536, 2048},
                         (cdt_type[]){ix, sub, CDT_INT16, hix}, &st));
    STEP(cdt_type_resized(st, 0, 4096, &rs));
    STEP(cdt_type_dup(rs, &top));
    STEP(cdt_type_commit(&top));
    STEP(cdt_type_contiguous(2, v, &c)); /* a second commit, of an uncommitted child's parent */
    STEP(cdt_type_commit(&c));
    STEP(cdt_type_describe(top, desc, sizeof(desc), NULL));
    cdt_count size = 0, used = 0;
    STEP(cdt_type_size(top, &size));
    FI_CHECK(size > 0 && size <= (cdt_count)sizeof(packed));
    if (size <= 0 || size > (cdt_count)sizeof(packed))
        goto out;
    STEP(cdt_copy(data, 1, top, packed, size, CDT_BYTE));
    (void)used;
    if (failinj.fail_at == 0) {
        strcpy(ref_desc, desc);
        memcpy(ref_packed, packed, (size_t)size);
        ref_size = size;
    } else {
        FI_CHECK(strcmp(desc, ref_desc) == 0);
        FI_CHECK(size == ref_size && memcmp(packed, ref_packed, (size_t)size) == 0);
    }
out:
    cdt_type_free(&c);
    cdt_type_free(&top);
    cdt_type_free(&rs);
    cdt_type_free(&st);
    cdt_type_free(&hix);
    cdt_type_free(&hib);
    cdt_type_free(&ib);
    cdt_type_free(&sub);
    cdt_type_free(&ix);
    cdt_type_free(&h);
    cdt_type_free(&v);
}

/* pack in fragments of 5 bytes, then unpack them last first */
static void op_roundtrip(const void *src, cdt_count count, cdt_type type, void *dst, int custom)
{
    cdt_op op = NULL, up = NULL;
    unsigned char *packed = NULL;
    cdt_count size = -1, used = 0, n = 0, delivered = -1;
    STEP(cdt_op_pack_begin(src, count, type, &op));
    STEP(cdt_op_packed_size(op, &size));
    packed = malloc(size > 0 ? (size_t)size : 1);
    FI_CHECK(packed != NULL);
    if (packed == NULL)
        goto out;
    for (cdt_count off = 0; off < size; off += used) {
        cdt_count want = size - off < 5 ? size - off : 5;
        STEP(cdt_op_pack(op, off, packed + off, want, &used));
        FI_CHECK(used > 0);
        if (used <= 0)
            goto out;
    }
    if (custom) {
        void *bases[2 * NOBJ];
        cdt_count lens[2 * NOBJ];
        cdt_type types[2 * NOBJ];
        STEP(cdt_op_region_count(op, &n));
        FI_CHECK(n == 2 * count);
        STEP(cdt_op_regions(op, n, bases, lens, types));
    }
    cdt_op o = op;
    op = NULL;
    STEP_FREE(cdt_op_end(o));

    STEP(cdt_op_unpack_begin(dst, count, type, &up));
    cdt_count usize = -1;
    STEP(cdt_op_packed_size(up, &usize));
    FI_CHECK(usize == size);
    for (cdt_count off = ((size - 1) / 5) * 5; off >= 0; off -= 5) {
        cdt_count len = size - off < 5 ? size - off : 5;
        STEP(cdt_op_unpack(up, off, packed + off, len));
    }
    STEP(cdt_op_unpacked_bytes(up, &delivered));
    FI_CHECK(delivered == size);
    if (custom) {
        void *bases[2 * NOBJ];
        cdt_count lens[2 * NOBJ];
        cdt_type types[2 * NOBJ];
        STEP(cdt_op_region_count(up, &n));
        FI_CHECK(n == 2 * count);
        STEP(cdt_op_regions(up, n, bases, lens, types));
        /* the regions move separately: copy them as a transport would */
        const fobj *s = src;
        fobj *d = dst;
        for (cdt_count e = 0; e < count; e++) {
            memcpy(d[e].r0, s[e].r0, sizeof(s->r0));
            memcpy(d[e].r1, s[e].r1, sizeof(s->r1));
        }
    }
    o = up;
    up = NULL;
    STEP_FREE(cdt_op_end(o));
out:
    cdt_op_end(op);
    cdt_op_end(up);
    free(packed);
}

static void sc_op_custom(cdt_type t)
{
    fobj dst[NOBJ];
    memset(dst, 0, sizeof(dst));
    op_roundtrip(src_obj, NOBJ, t, dst, 1);
    if (failinj.problems == 0 && !failinj.abandoned)
        FI_CHECK(obj_equal(src_obj, dst, NOBJ));
}
static void sc_op_custom_inorder(void)
{
    sc_op_custom(t_inorder);
}
static void sc_op_custom_anyorder(void)
{
    sc_op_custom(t_anyorder);
}

static void sc_op_derived(void)
{
    unsigned char *dst = calloc(1, (size_t)d_span), *ref = calloc(1, (size_t)d_span);
    FI_CHECK(dst != NULL && ref != NULL);
    if (dst != NULL && ref != NULL) {
        op_roundtrip(d_src, 2, t_derived, dst, 0);
        /* reference: cdt_copy through the packed bytes, no injection */
        cdt_count size;
        cdt_pack_size(2, t_derived, &size);
        unsigned char *p = malloc((size_t)size);
        if (p != NULL && cdt_copy(d_src, 2, t_derived, p, size, CDT_BYTE) == CDT_SUCCESS &&
            cdt_copy(p, size, CDT_BYTE, ref, 2, t_derived) == CDT_SUCCESS)
            FI_CHECK(memcmp(dst, ref, (size_t)d_span) == 0);
        else
            FI_CHECK(!"reference copy");
        free(p);
    }
    free(dst);
    free(ref);
}

/* encode under injection; the gathered bytes must equal a frame encoded without */
static void encode_check(const void *buf, cdt_count count, cdt_type type,
                         const cdt_frame_params *params)
{
    cdt_count ref_len = 0, len = 0;
    unsigned char *ref = wire_of(buf, count, type, params, &ref_len), *w = NULL;
    cdt_frame f = NULL;
    FI_CHECK(ref != NULL);
    if (ref == NULL)
        goto out;
    STEP(cdt_frame_encode(buf, count, type, params, &f));
    STEP(cdt_frame_size(f, &len));
    FI_CHECK(len == ref_len);
    w = malloc((size_t)ref_len);
    if (len != ref_len || w == NULL)
        goto out;
    STEP(cdt_frame_gather(f, 0, w, len));
    FI_CHECK(memcmp(w, ref, (size_t)len) == 0);
    cdt_frame g = f;
    f = NULL;
    STEP_FREE(cdt_frame_free(g));
out:
    cdt_frame_free(f);
    free(w);
    free(ref);
}

static void sc_frame_encode_custom(void)
{
    encode_check(src_obj, NOBJ, t_inorder, NULL);
}

static void sc_frame_encode_derived(void)
{
    int32_t big[4096];
    for (int i = 0; i < 4096; i++)
        big[i] = i * 7;
    encode_check(d_src, 2, t_derived, NULL);
    encode_check(big, 1, t_contig, NULL); /* a region by reference */
    cdt_frame_params no_regions = {.field_mask = CDT_FRAME_PARAM_REGION_THRESHOLD,
                                   .region_threshold = -1};
    encode_check(big, 1, t_contig, &no_regions);
}

static void sc_frame_encode_sobj(void)
{
    unsigned char inband[300];
    double b0[100];
    int32_t b1[3];
    for (int i = 0; i < 300; i++)
        inband[i] = (unsigned char)i;
    for (int i = 0; i < 100; i++)
        b0[i] = i;
    for (int i = 0; i < 3; i++)
        b1[i] = -i;
    cdt_sobj_buffer bufs[2] = {{b0, sizeof(b0), CDT_KIND_DOUBLE}, {b1, sizeof(b1), CDT_KIND_INT32}};
    cdt_sobj o = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    encode_check(&o, 1, cdt_sobj_type(), NULL);
}

static void sc_frame_decode_custom(void)
{
    cdt_count len;
    unsigned char *w = wire_of(src_obj, NOBJ, t_anyorder, NULL, &len);
    fobj dst[NOBJ];
    memset(dst, 0, sizeof(dst));
    FI_CHECK(w != NULL);
    if (w == NULL)
        goto out;
    STEP(cdt_frame_decode(w, len, dst, NOBJ, t_inorder));
    FI_CHECK(obj_equal(src_obj, dst, NOBJ));
out:
    free(w);
}

static void sc_frame_decode_derived(void)
{
    cdt_count len;
    unsigned char *w = wire_of(d_src, 2, t_derived, NULL, &len);
    unsigned char *dst = calloc(1, (size_t)d_span), *ref = calloc(1, (size_t)d_span);
    FI_CHECK(w != NULL && dst != NULL && ref != NULL);
    if (w == NULL || dst == NULL || ref == NULL)
        goto out;
    if (cdt_frame_decode(w, len, ref, 2, t_derived) != CDT_SUCCESS)
        FI_CHECK(!"reference decode");
    STEP(cdt_frame_decode(w, len, dst, 2, t_derived));
    FI_CHECK(memcmp(dst, ref, (size_t)d_span) == 0);
out:
    free(w);
    free(dst);
    free(ref);
}

/* the streaming decoder, pieces out of order: packed stream's second half, the header's
 * second half, the packed stream's first half, then each region (by write or by its iov and
 * region_done), the header's first half last */
static void decode_pieces(cdt_type t, int regions_by_iov)
{
    cdt_count len;
    unsigned char *w = wire_of(src_obj, NOBJ, t, NULL, &len);
    fobj dst[NOBJ];
    memset(dst, 0, sizeof(dst));
    cdt_decoder d = NULL;
    FI_CHECK(w != NULL);
    if (w == NULL)
        goto out;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    STEP(cdt_decoder_create(w, len, &d));
    STEP(cdt_decoder_info(d, &info));
    STEP(cdt_decoder_bind(d, dst, NOBJ, t));
    cdt_count hs = info.header_size, ps = info.packed_size, half = ps / 2;
    STEP(cdt_decoder_write(d, hs + half, w + hs + half, ps - half));
    STEP(cdt_decoder_write(d, hs / 2, w + hs / 2, hs - hs / 2));
    STEP(cdt_decoder_write(d, hs, w + hs, half / 3));
    STEP(cdt_decoder_write(d, hs + half / 3, w + hs + half / 3, half - half / 3));
    for (cdt_count i = 0; i < info.region_count; i++) {
        cdt_count bytes, off, n = 0, got = 0;
        cdt_kind kind;
        STEP(cdt_decoder_region_info(d, i, &bytes, &kind, &off));
        if (regions_by_iov) {
            cdt_iov iov[4];
            STEP(cdt_decoder_region_iov_count(d, i, &n));
            FI_CHECK(n >= 1 && n <= 4);
            if (n < 1 || n > 4)
                goto out;
            STEP(cdt_decoder_region_iov(d, i, 0, n, iov, &got));
            cdt_count at = off;
            for (cdt_count k = 0; k < got; k++) {
                memcpy(iov[k].base, w + at, (size_t)iov[k].len);
                at += iov[k].len;
            }
            STEP(cdt_decoder_region_done(d, i));
        } else {
            /* with the padding before it */
            cdt_count prev_end = hs + ps;
            if (i > 0) {
                cdt_count pb, po;
                cdt_kind pk;
                STEP(cdt_decoder_region_info(d, i - 1, &pb, &pk, &po));
                prev_end = po + pb;
            }
            STEP(cdt_decoder_write(d, prev_end, w + prev_end, off + bytes - prev_end));
        }
    }
    STEP(cdt_decoder_write(d, 0, w, hs / 2));
    STEP(cdt_decoder_finish(d));
    FI_CHECK(obj_equal(src_obj, dst, NOBJ));
    cdt_decoder g = d;
    d = NULL;
    STEP_FREE(cdt_decoder_free(g));
out:
    cdt_decoder_free(d);
    free(w);
}

static void sc_decoder_inorder(void)
{
    decode_pieces(t_inorder, 0);
}
static void sc_decoder_anyorder(void)
{
    decode_pieces(t_anyorder, 0);
}
static void sc_decoder_region_iov(void)
{
    decode_pieces(t_inorder, 1);
}

/* the adapter: recv_prepare allocates from the header (one allocation, or per part) */
static void *parts[16]; /* what part_alloc gave, so that the test can tell what was dropped */
static int nparts;

static int part_alloc(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    (void)user;
    (void)index;
    (void)kind;
    if (nparts == 16)
        return CDT_ERR_NO_MEMORY;
    *base = malloc(len > 0 ? (size_t)len : 1);
    if (*base != NULL)
        parts[nparts++] = *base;
    return *base != NULL ? CDT_SUCCESS : CDT_ERR_NO_MEMORY;
}

/* The hook's memory is the caller's (cdt_sobj.h): the hook saw every part, so the caller frees
 * them all from its own record, whatever recv_prepare returned. What the adapter must get
 * right: a failed recv_prepare leaves the object untouched (the caller's record is then the
 * only owner of what the hook gave), and a prepared object names only parts the hook gave. */
static int prepare_checked(cdt_sobj *r, cdt_decoder d)
{
    cdt_sobj before = *r;
    int rc = cdt_sobj_recv_prepare(r, d);
    if (rc != CDT_SUCCESS && memcmp(&before, r, sizeof(before)) != 0)
        failinj_problem(__FILE__, __LINE__, "a failed cdt_sobj_recv_prepare changed the object",
                        rc);
    return rc;
}

static int is_part(const void *p)
{
    for (int i = 0; i < nparts; i++)
        if (parts[i] == p)
            return 1;
    return 0;
}

static void free_parts(const cdt_sobj *r)
{
    int foreign = r->inband != NULL && !is_part(r->inband);
    for (cdt_count b = 0; b < r->nbuffers; b++)
        foreign |= r->buffers[b].base != NULL && !is_part(r->buffers[b].base);
    if (foreign)
        failinj_problem(__FILE__, __LINE__, "a prepared cdt_sobj names memory the hook never gave",
                        0);
    for (int i = 0; i < nparts; i++)
        free(parts[i]);
    nparts = 0;
}

static void decoder_sobj(int own_alloc)
{
    unsigned char inband[200];
    double b0[100];
    int32_t b1[7];
    for (int i = 0; i < 200; i++)
        inband[i] = (unsigned char)(i * 5);
    for (int i = 0; i < 100; i++)
        b0[i] = i * 0.25;
    for (int i = 0; i < 7; i++)
        b1[i] = i - 3;
    cdt_sobj_buffer bufs[2] = {{b0, sizeof(b0), CDT_KIND_DOUBLE}, {b1, sizeof(b1), CDT_KIND_INT32}};
    cdt_sobj o = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    cdt_count len;
    unsigned char *w = wire_of(&o, 1, cdt_sobj_type(), NULL, &len);
    cdt_sobj r = {.field_mask = CDT_SOBJ_FIELD_ALLOC, .alloc = own_alloc ? part_alloc : NULL};
    cdt_decoder d = NULL;
    FI_CHECK(w != NULL);
    if (w == NULL)
        goto out;
    STEP(cdt_decoder_create(w, len, &d));
    STEP(own_alloc ? prepare_checked(&r, d) : cdt_sobj_recv_prepare(&r, d));
    STEP(cdt_decoder_bind(d, &r, 1, cdt_sobj_type()));
    STEP(cdt_decoder_write(d, 0, w, len));
    STEP(cdt_decoder_finish(d));
    FI_CHECK(r.inband_len == (cdt_count)sizeof(inband) && r.nbuffers == 2);
    if (r.inband_len == (cdt_count)sizeof(inband) && r.nbuffers == 2) {
        FI_CHECK(memcmp(r.inband, inband, sizeof(inband)) == 0);
        FI_CHECK(memcmp(r.buffers[0].base, b0, sizeof(b0)) == 0);
        FI_CHECK(memcmp(r.buffers[1].base, b1, sizeof(b1)) == 0);
    }
out:
    cdt_decoder_free(d);
    if (own_alloc)
        free_parts(&r);
    cdt_sobj_release(&r);
    free(w);
}

static void sc_decoder_sobj(void)
{
    decoder_sobj(0);
}
static void sc_decoder_sobj_alloc(void)
{
    decoder_sobj(1);
}

/* ---------------------------------------------------------------- driver ----------------- */

#define BOTH ((1 << FAILINJ_ALLOC) | (1 << FAILINJ_CALLBACK))
#define ALLOC (1 << FAILINJ_ALLOC)

static const failinj_scenario scenarios[] = {
    {"type_commit", sc_type_commit, ALLOC},
    {"op_derived", sc_op_derived, ALLOC},
    {"op_custom_inorder", sc_op_custom_inorder, BOTH},
    {"op_custom_anyorder", sc_op_custom_anyorder, BOTH},
    {"frame_encode_derived", sc_frame_encode_derived, ALLOC},
    {"frame_encode_custom", sc_frame_encode_custom, BOTH},
    {"frame_encode_sobj", sc_frame_encode_sobj, ALLOC},
    {"frame_decode_derived", sc_frame_decode_derived, ALLOC},
    {"frame_decode_custom", sc_frame_decode_custom, BOTH},
    {"decoder_inorder", sc_decoder_inorder, BOTH},
    {"decoder_anyorder", sc_decoder_anyorder, BOTH},
    {"decoder_region_iov", sc_decoder_region_iov, BOTH},
    {"decoder_sobj", sc_decoder_sobj, ALLOC},
    {"decoder_sobj_alloc", sc_decoder_sobj_alloc, ALLOC},
};

int main(int argc, char **argv)
{
    /* the shared types are made before any injection */
    cdt_type v, h;
    if (cdt_type_create_custom(f_state, f_free, f_query, f_pack, f_unpack, f_rcount, f_region, NULL,
                               1, &t_inorder) != CDT_SUCCESS ||
        cdt_type_create_custom(f_state, f_free, f_query, f_pack, f_unpack, f_rcount, f_region, NULL,
                               0, &t_anyorder) != CDT_SUCCESS ||
        cdt_type_vector(4, 1, 2, CDT_INT32, &v) != CDT_SUCCESS ||
        cdt_type_hvector(3, 2, 64, v, &h) != CDT_SUCCESS ||
        cdt_type_indexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 3}, h, &t_derived) !=
            CDT_SUCCESS ||
        cdt_type_commit(&t_derived) != CDT_SUCCESS ||
        cdt_type_contiguous(4096, CDT_INT32, &t_contig) != CDT_SUCCESS ||
        cdt_type_commit(&t_contig) != CDT_SUCCESS) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    cdt_type_free(&v);
    cdt_type_free(&h);
    cdt_count lb, extent;
    cdt_type_extent(t_derived, &lb, &extent);
    d_span = 2 * extent;
    d_src = malloc((size_t)d_span);
    if (d_src == NULL)
        return 1;
    for (cdt_count i = 0; i < d_span; i++)
        d_src[i] = (unsigned char)(i * 11 + 3);
    fill_obj(src_obj, NOBJ);
    (void)cdt_sobj_type();

    int rc = failinj_main(argc, argv, scenarios, (int)(sizeof(scenarios) / sizeof(scenarios[0])));

    cdt_type_free(&t_inorder);
    cdt_type_free(&t_anyorder);
    cdt_type_free(&t_derived);
    cdt_type_free(&t_contig);
    free(d_src);
    return rc;
}
