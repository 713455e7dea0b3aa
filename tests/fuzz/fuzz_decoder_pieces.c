/*
 * fuzz_decoder_pieces.c - libFuzzer target: the streaming decoder fed a VALID frame in pieces
 * whose sizes and order the input chooses, with duplicated, overlapping and missing pieces,
 * region bytes before the head, regions received through their iov (region_done), and an
 * optional second round that sends again every piece that failed.
 *
 * The object is a serialized object (cdt_sobj, a custom type with regions) or a derived type,
 * both built from the input. The oracle:
 *   - when cdt_decoder_finish() returns CDT_SUCCESS, every byte of the packed stream and of
 *     every region was sent (pieces left out are missing: finish must not succeed), and the
 *     received object equals the sent one byte for byte (a piece whose call failed may or may
 *     not count as delivered, but success with bytes that never landed is a bug);
 *   - when every piece was accepted, finish returns CDT_SUCCESS.
 * CDT_FUZZ_LOST_WRITES_KNOWN=1 (long runs while that defect is open: the decoder records bytes
 * as arrived before delivering them) skips the first check for schedules where a call failed.
 * A violation aborts (a crash for libFuzzer); so do crashes, leaks and undefined behaviour.
 */
#include "cdt_sobj.h"
#include "fuzz_input.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_decoder_pieces: %s\n", what);
    abort();
}

/* ---------------------------------------------------------------- derived types --------- */

typedef struct rec {
    int32_t a;
    double b;
    int16_t c[3];
} rec;

enum { NTYPES = 5 };
static cdt_type types[NTYPES];

static void make_types(void)
{
    cdt_type v, h, st;
    int ok = cdt_type_vector(4, 1, 2, CDT_INT32, &types[0]) == CDT_SUCCESS &&
             cdt_type_contiguous(3000, CDT_DOUBLE, &types[1]) == CDT_SUCCESS &&
             cdt_type_struct(3, (cdt_count[]){1, 1, 3},
                             (cdt_count[]){offsetof(rec, a), offsetof(rec, b), offsetof(rec, c)},
                             (cdt_type[]){CDT_INT32, CDT_DOUBLE, CDT_INT16}, &st) == CDT_SUCCESS &&
             cdt_type_resized(st, 0, sizeof(rec), &types[2]) == CDT_SUCCESS &&
             cdt_type_vector(3, 2, 5, CDT_INT16, &v) == CDT_SUCCESS &&
             cdt_type_hvector(3, 2, 64, v, &h) == CDT_SUCCESS &&
             cdt_type_indexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 3}, h, &types[3]) ==
                 CDT_SUCCESS &&
             cdt_type_contiguous(700, CDT_INT64, &types[4]) == CDT_SUCCESS;
    if (!ok)
        fail("type setup");
    cdt_type_free(&st);
    cdt_type_free(&v);
    cdt_type_free(&h);
    for (int i = 0; i < NTYPES; i++)
        if (cdt_type_commit(&types[i]) != CDT_SUCCESS)
            fail("commit");
}

/* ---------------------------------------------------------------- the schedule ---------- */

typedef struct op {
    cdt_count off, len; /* a write of frame bytes; len < 0: region -len - 1 through its iov */
    int dup;            /* a copy of another op (expected to be refused as overlapping) */
    int ok;             /* accepted */
} op;

enum { MAX_OPS = 2048 };

typedef struct ctx {
    const unsigned char *wire;
    cdt_count frame_size, head_end;
    cdt_decoder d;
    unsigned char *got;  /* per frame byte: accepted by a call that succeeded */
    unsigned char *sent; /* per frame byte: given to a call, successful or not */
} ctx;

static int run_op_(ctx *c, op *o);

/* CDT_FUZZ_VERBOSE=1: print every call of the schedule (to read a crash input) */
static int run_op(ctx *c, op *o)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("CDT_FUZZ_VERBOSE") != NULL;
    if (o->len >= 0) {
        memset(c->sent + o->off, 1, (size_t)o->len);
    } else {
        cdt_count bytes, off;
        cdt_kind kind;
        if (cdt_decoder_region_info(c->d, -o->len - 1, &bytes, &kind, &off) == CDT_SUCCESS)
            memset(c->sent + off, 1, (size_t)bytes);
    }
    int rc = run_op_(c, o);
    if (verbose && o->len >= 0)
        fprintf(stderr, "write [%lld, %lld)%s: %s\n", (long long)o->off,
                (long long)(o->off + o->len), o->dup ? " (dup)" : "", cdt_err_name(rc));
    else if (verbose)
        fprintf(stderr, "region %lld by iov: %s\n", (long long)(-o->len - 1), cdt_err_name(rc));
    return rc;
}

static int run_op_(ctx *c, op *o)
{
    if (o->len >= 0) {
        int rc = cdt_decoder_write(c->d, o->off, c->wire + o->off, o->len);
        if (rc == CDT_SUCCESS)
            memset(c->got + o->off, 1, (size_t)o->len);
        return rc;
    }
    cdt_count index = -o->len - 1, bytes, off, n = 0, got = 0;
    cdt_kind kind;
    int rc = cdt_decoder_region_info(c->d, index, &bytes, &kind, &off);
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_region_iov_count(c->d, index, &n);
    cdt_iov iov[8];
    if (rc == CDT_SUCCESS && n > 8)
        fail("more region pieces than expected");
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_region_iov(c->d, index, 0, n, iov, &got);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count at = off;
    for (cdt_count k = 0; k < got; k++) {
        if (at + iov[k].len > off + bytes)
            fail("region iov longer than the region");
        memcpy(iov[k].base, c->wire + at, (size_t)iov[k].len);
        at += iov[k].len;
    }
    if (at != off + bytes)
        fail("region iov shorter than the region");
    rc = cdt_decoder_region_done(c->d, index);
    if (rc == CDT_SUCCESS)
        memset(c->got + off, 1, (size_t)bytes);
    return rc;
}

/* split [from, to) into pieces of input-chosen sizes; each may be dropped or duplicated */
static void split(input *in, cdt_count from, cdt_count to, unsigned flags, op *ops, int *n,
                  int *dropped)
{
    while (from < to && *n < MAX_OPS - 2) {
        unsigned k = next(in);
        cdt_count len = (cdt_count)((k & 15) + 1) << (k >> 4 & 15);
        if (len > to - from || *n >= MAX_OPS - 4)
            len = to - from;
        unsigned fate = next(in);
        if ((flags & 2) && fate % 16 == 0) {
            *dropped = 1; /* missing */
        } else {
            ops[(*n)++] = (op){from, len, 0, 0};
            if ((flags & 4) && fate % 16 == 1) /* the same piece again */
                ops[(*n)++] = (op){from, len, 1, 0};
            if ((flags & 4) && fate % 16 == 2 && len > 1) /* overlapping its second half */
                ops[(*n)++] = (op){from + len / 2, len - len / 2, 1, 0};
        }
        from += len;
    }
}

/* ---------------------------------------------------------------- the object ------------ */

typedef struct sent {
    int is_sobj;
    /* sobj */
    unsigned char *inband;
    cdt_sobj_buffer bufs[4];
    cdt_sobj o;
    /* derived */
    cdt_type type;
    cdt_count count, span;
    unsigned char *data;
} sent;

static const cdt_kind kinds[3] = {CDT_KIND_BYTE, CDT_KIND_INT32, CDT_KIND_DOUBLE};

static int build(input *in, sent *s, unsigned flags)
{
    memset(s, 0, sizeof(*s));
    s->is_sobj = flags & 1;
    unsigned seed = next(in);
    if (s->is_sobj) {
        cdt_count inband_len = next(in) % 200;
        s->inband = malloc((size_t)inband_len + 1);
        if (s->inband == NULL)
            return -1;
        fuzz_fill(s->inband, (size_t)inband_len, seed, 7);
        int nb = (int)(next(in) % 5);
        for (int b = 0; b < nb; b++) {
            cdt_kind kind = kinds[next(in) % 3];
            cdt_count elems = next16(in) % 3000, esize = cdt_kind_size(kind);
            unsigned char *base = malloc((size_t)(elems * esize) + 1);
            if (base == NULL)
                return -1;
            fuzz_fill(base, (size_t)(elems * esize), seed * 3 + (unsigned)b, 13);
            s->bufs[b] = (cdt_sobj_buffer){base, elems * esize, kind};
        }
        s->o = (cdt_sobj){
            .inband = s->inband, .inband_len = inband_len, .buffers = s->bufs, .nbuffers = nb};
        return 0;
    }
    s->type = types[next(in) % NTYPES];
    s->count = next(in) % 4;
    cdt_count lb, extent;
    cdt_type_extent(s->type, &lb, &extent);
    s->span = s->count * extent;
    s->data = malloc((size_t)s->span + 1);
    if (s->data == NULL)
        return -1;
    fuzz_fill(s->data, (size_t)s->span, seed, 11);
    return 0;
}

static void unbuild(sent *s)
{
    free(s->inband);
    for (int b = 0; b < 4; b++)
        free(s->bufs[b].base);
    free(s->data);
}

/* the received object equals the sent one */
static int same(const sent *s, const cdt_sobj *r, const unsigned char *dst)
{
    if (s->is_sobj) {
        if (r->inband_len != s->o.inband_len || r->nbuffers != s->o.nbuffers ||
            (r->inband_len > 0 && memcmp(r->inband, s->o.inband, (size_t)r->inband_len) != 0))
            return 0;
        for (cdt_count b = 0; b < r->nbuffers; b++)
            if (r->buffers[b].len != s->bufs[b].len || r->buffers[b].kind != s->bufs[b].kind ||
                (r->buffers[b].len > 0 &&
                 memcmp(r->buffers[b].base, s->bufs[b].base, (size_t)r->buffers[b].len) != 0))
                return 0;
        return 1;
    }
    /* compare the data of the type (what lies between is not data) */
    cdt_count size;
    if (cdt_pack_size(s->count, s->type, &size) != CDT_SUCCESS)
        fail("pack_size");
    unsigned char *a = malloc((size_t)size + 1), *b = malloc((size_t)size + 1);
    if (a == NULL || b == NULL)
        fail("malloc");
    if (cdt_copy(s->data, s->count, s->type, a, size, CDT_BYTE) != CDT_SUCCESS ||
        cdt_copy(dst, s->count, s->type, b, size, CDT_BYTE) != CDT_SUCCESS)
        fail("copy");
    int eq = memcmp(a, b, (size_t)size) == 0;
    free(a);
    free(b);
    return eq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (types[0] == NULL)
        make_types();
    input in = {data, size, 0};
    /* flags: 1 sobj, 2 missing pieces, 4 duplicates, 8 regions by iov, 16 resend failed */
    unsigned flags = next(&in);
    sent s;
    cdt_frame f = NULL;
    unsigned char *wire = NULL, *got = NULL, *sentb = NULL, *dst = NULL;
    op *ops = NULL;
    cdt_decoder d = NULL;
    cdt_sobj r = {0};
    if (build(&in, &s, flags) != 0)
        goto out;
    cdt_frame_params params = {.field_mask = CDT_FRAME_PARAM_REGION_THRESHOLD};
    static const cdt_count thresholds[4] = {8192, 64, -1, 1};
    params.region_threshold = thresholds[next(&in) % 4];
    int rc = s.is_sobj ? cdt_frame_encode(&s.o, 1, cdt_sobj_type(), &params, &f)
                       : cdt_frame_encode(s.data, s.count, s.type, &params, &f);
    if (rc != CDT_SUCCESS)
        fail("encode of a valid object");
    cdt_count fs;
    cdt_frame_size(f, &fs);
    wire = malloc((size_t)fs);
    got = calloc(1, (size_t)fs);
    sentb = calloc(1, (size_t)fs);
    ops = malloc(MAX_OPS * sizeof(*ops));
    if (wire == NULL || got == NULL || sentb == NULL || ops == NULL)
        goto out;
    if (cdt_frame_gather(f, 0, wire, fs) != CDT_SUCCESS)
        fail("gather");

    /* the receiver: the header alone creates the decoder */
    cdt_count hs;
    if (cdt_frame_header_size(wire, CDT_FRAME_FIXED_HEADER_SIZE, &hs) != CDT_SUCCESS ||
        cdt_decoder_create(wire, hs, &d) != CDT_SUCCESS)
        fail("a valid header refused");
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    cdt_decoder_info(d, &info);
    if (getenv("CDT_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "%s: header %lld, packed %lld, %lld regions, frame %lld bytes\n",
                s.is_sobj ? "sobj" : "derived", (long long)info.header_size,
                (long long)info.packed_size, (long long)info.region_count,
                (long long)info.frame_size);
    if (s.is_sobj) {
        if (cdt_sobj_recv_prepare(&r, d) != CDT_SUCCESS ||
            cdt_decoder_bind(d, &r, 1, cdt_sobj_type()) != CDT_SUCCESS)
            fail("prepare/bind");
    } else {
        dst = calloc(1, (size_t)s.span + 1);
        if (dst == NULL)
            goto out;
        if (cdt_decoder_bind(d, dst, s.count, s.type) != CDT_SUCCESS)
            fail("bind");
    }

    /* the schedule */
    ctx c = {wire, fs, info.header_size + info.packed_size, d, got, sentb};
    int n = 0, dropped = 0;
    if (flags & 8) {
        split(&in, 0, c.head_end, flags, ops, &n, &dropped);
        for (cdt_count i = 0; i < info.region_count && n < MAX_OPS; i++) {
            if ((flags & 2) && next(&in) % 16 == 0) {
                dropped = 1;
                continue;
            }
            ops[n++] = (op){0, -i - 1, 0, 0};
        }
    } else {
        split(&in, 0, fs, flags, ops, &n, &dropped);
    }
    for (int i = n - 1; i > 0; i--) { /* shuffle */
        int j = (int)(next16(&in) % (unsigned)(i + 1));
        op t = ops[i];
        ops[i] = ops[j];
        ops[j] = t;
    }
    for (int i = 0; i < n; i++)
        ops[i].ok = run_op(&c, &ops[i]) == CDT_SUCCESS;
    if (flags & 16)
        for (int i = 0; i < n; i++)
            if (!ops[i].ok && !ops[i].dup)
                ops[i].ok = run_op(&c, &ops[i]) == CDT_SUCCESS;

    /* what was sent and what was accepted, by our own account */
    int sent_all = 1, all_accepted = !dropped, any_failed = 0;
    sent_all = fuzz_all_set(sentb, (size_t)info.header_size, (size_t)c.head_end);
    for (cdt_count i = 0; i < info.region_count && sent_all; i++) {
        cdt_count bytes, off;
        cdt_kind kind;
        cdt_decoder_region_info(d, i, &bytes, &kind, &off);
        sent_all = fuzz_all_set(sentb, (size_t)off, (size_t)(off + bytes));
    }
    for (int i = 0; i < n; i++)
        if (!ops[i].ok && !ops[i].dup)
            all_accepted = 0, any_failed = 1;
    static int lost_writes_known = -1;
    if (lost_writes_known < 0)
        lost_writes_known = getenv("CDT_FUZZ_LOST_WRITES_KNOWN") != NULL &&
                            strcmp(getenv("CDT_FUZZ_LOST_WRITES_KNOWN"), "1") == 0;

    rc = cdt_decoder_finish(d);
    if (rc == CDT_SUCCESS && !sent_all)
        fail("finish succeeded although pieces were missing");
    if (rc == CDT_SUCCESS && !(lost_writes_known && any_failed) && !same(&s, &r, dst))
        fail("finish succeeded but the received object differs from the sent one");
    if (all_accepted && rc != CDT_SUCCESS)
        fail("every piece was accepted but finish failed");
out:
    cdt_decoder_free(d);
    cdt_sobj_release(&r);
    cdt_frame_free(f);
    free(dst);
    free(ops);
    free(got);
    free(sentb);
    free(wire);
    unbuild(&s);
    return 0;
}
