/*
 * test_custom_ops.c - the operation engine driving custom types: every callback, fragment
 * sizes from 1 byte with partial fills, in-order and out-of-order unpack, callback errors at
 * every stage (state_free exactly once), callback contract violations.
 */
#include "check.h"

#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ERR_INJECT (CDT_ERR_USER_BASE - 7)

/* A test type over a byte array: the packed stream is the array reversed; pack fills at most
 * `chunk` bytes per call (a partial fill); region i is `region_len` bytes of a second array. */
typedef struct tobj {
    unsigned char data[97];
    unsigned char region[3][40];
} tobj;

typedef struct tctx {
    int fail_at;     /* stage number that returns ERR_INJECT, 0 = none */
    cdt_count chunk; /* max bytes per pack call */
    int states, frees, unpack_calls;
    cdt_count last_offset;
    int order_violations; /* unpack offsets that went backwards */
    int bad_used;         /* make pack report used = 0 / too much */
    int bad_region;       /* region callback returns a bad region */
    int fail_unpack_call; /* the unpack call of this number (1 = first) returns ERR_INJECT */
} tctx;

enum { ST_STATE = 1, ST_QUERY, ST_PACK, ST_UNPACK, ST_RCOUNT, ST_REGION, ST_FREE };

static tctx *ctx_of(void *state)
{
    return state;
}

static int t_state(void *context, const void *src, cdt_count count, void **state)
{
    tctx *c = context;
    (void)src;
    (void)count;
    if (c->fail_at == ST_STATE)
        return ERR_INJECT;
    c->states++;
    c->last_offset = -1;
    *state = c;
    return CDT_SUCCESS;
}

static int t_free(void *state)
{
    tctx *c = ctx_of(state);
    c->frees++;
    return c->fail_at == ST_FREE ? ERR_INJECT : CDT_SUCCESS;
}

static int t_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)buf;
    if (ctx_of(state)->fail_at == ST_QUERY)
        return ERR_INJECT;
    *size = count * (cdt_count)sizeof(((tobj *)0)->data);
    return CDT_SUCCESS;
}

static int t_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                  cdt_count dst_size, cdt_count *used)
{
    tctx *c = ctx_of(state);
    if (c->fail_at == ST_PACK)
        return ERR_INJECT;
    if (c->bad_used == 1) {
        *used = 0;
        return CDT_SUCCESS;
    }
    if (c->bad_used == 2) {
        *used = dst_size + 1;
        return CDT_SUCCESS;
    }
    const tobj *o = buf;
    cdt_count n = sizeof(o->data) * count - offset;
    if (n > dst_size)
        n = dst_size;
    if (n > c->chunk)
        n = c->chunk;
    for (cdt_count i = 0; i < n; i++) {
        cdt_count k = offset + i, e = k / (cdt_count)sizeof(o->data);
        cdt_count j = (cdt_count)sizeof(o->data) - 1 - k % (cdt_count)sizeof(o->data);
        ((unsigned char *)dst)[i] = o[e].data[j];
    }
    *used = n;
    return CDT_SUCCESS;
}

static int t_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                    cdt_count src_size)
{
    tctx *c = ctx_of(state);
    (void)count;
    if (c->fail_at == ST_UNPACK || c->fail_unpack_call == c->unpack_calls + 1)
        return ERR_INJECT;
    if (offset < c->last_offset)
        c->order_violations++;
    c->last_offset = offset;
    c->unpack_calls++;
    tobj *o = buf;
    for (cdt_count i = 0; i < src_size; i++) {
        cdt_count k = offset + i, e = k / (cdt_count)sizeof(o->data);
        cdt_count j = (cdt_count)sizeof(o->data) - 1 - k % (cdt_count)sizeof(o->data);
        o[e].data[j] = ((const unsigned char *)src)[i];
    }
    return CDT_SUCCESS;
}

static int t_rcount(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)buf;
    if (ctx_of(state)->fail_at == ST_RCOUNT)
        return ERR_INJECT;
    *n = 3 * count;
    return CDT_SUCCESS;
}

static int t_region(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                    cdt_count lens[], cdt_type types[])
{
    tctx *c = ctx_of(state);
    (void)count;
    if (c->fail_at == ST_REGION)
        return ERR_INJECT;
    tobj *o = buf;
    for (cdt_count i = 0; i < n; i++) {
        bases[i] = o[i / 3].region[i % 3];
        lens[i] = 10;
        types[i] = CDT_INT32; /* 10 x int32 = 40 bytes */
    }
    if (c->bad_region == 1)
        lens[0] = -1;
    if (c->bad_region == 2)
        bases[0] = NULL;
    if (c->bad_region == 3)
        types[0] = NULL;
    return CDT_SUCCESS;
}

static cdt_type make_type(tctx *c, int inorder)
{
    cdt_type t = NULL;
    CHECK_OK(cdt_type_create_custom(t_state, t_free, t_query, t_pack, t_unpack, t_rcount, t_region,
                                    c, inorder, &t));
    return t;
}

static void fill(tobj *o, int n, int seed)
{
    for (int e = 0; e < n; e++) {
        for (size_t i = 0; i < sizeof(o[e].data); i++)
            o[e].data[i] = (unsigned char)(seed + e * 131 + i * 7);
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < 40; i++)
                o[e].region[r][i] = (unsigned char)(seed * 3 + r + i);
    }
}

static void test_create_errors(void)
{
    tctx c = {0};
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, NULL, t_pack, NULL, NULL, NULL, &c, 0, &t),
             CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_create_custom(NULL, NULL, t_query, NULL, NULL, NULL, NULL, &c, 0, &t),
             CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_create_custom(NULL, NULL, t_query, t_pack, NULL, t_rcount, NULL, &c, 0, &t),
             CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_create_custom(NULL, NULL, t_query, t_pack, NULL, NULL, NULL, &c, 0, NULL),
             CDT_ERR_INVALID_ARG);
    /* a send-only type cannot unpack */
    CHECK_OK(cdt_type_create_custom(NULL, NULL, t_query, t_pack, NULL, NULL, NULL, &c, 0, &t));
    tobj o;
    cdt_op op;
    CHECK_RC(cdt_op_unpack_begin(&o, 1, t, &op), CDT_ERR_UNSUPPORTED);
    CHECK_RC(cdt_type_size(t, &(cdt_count){0}), CDT_ERR_UNSUPPORTED);
    /* the one-call pack is for layouts: a custom stream needs its operation */
    unsigned char whole[64];
    cdt_count at = 0;
    CHECK_RC(cdt_pack(&o, 1, t, whole, sizeof whole, &at), CDT_ERR_UNSUPPORTED);
    CHECK_RC(cdt_unpack(whole, sizeof whole, &at, &o, 1, t), CDT_ERR_UNSUPPORTED);
    CHECK(at == 0);
    CHECK(cdt_type_is_custom(t) == 1);
    CHECK_OK(cdt_type_free(&t));
    CHECK(t == NULL);
    CHECK_OK(cdt_type_free(&t)); /* NULL: no-op */
    cdt_type predefined = CDT_INT32;
    CHECK_RC(cdt_type_free(&predefined), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_op_pack_begin(&o, -1, CDT_INT32, &op), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_op_pack_begin(&o, 1, NULL, &op), CDT_ERR_INVALID_ARG);
}

/* pack with every destination size 1..total+1 and a callback that fills at most `chunk` */
static void test_pack_fragments(void)
{
    enum { N = 2 };
    tobj src[N];
    fill(src, N, 5);
    for (cdt_count chunk = 1; chunk <= 13; chunk += 3) {
        tctx c = {.chunk = chunk};
        cdt_type t = make_type(&c, 1);
        for (cdt_count frag = 1; frag <= 2 * 97 + 1; frag++) {
            cdt_op op;
            CHECK_OK(cdt_op_pack_begin(src, N, t, &op));
            cdt_count size = 0, off = 0, used;
            CHECK_OK(cdt_op_packed_size(op, &size));
            CHECK(size == N * 97);
            unsigned char packed[2 * 97 + 8];
            int calls = 0;
            while (off < size && calls++ < 1000) {
                CHECK_OK(cdt_op_pack(op, off, packed + off, frag, &used));
                CHECK(used >= 1 && used <= frag && used <= chunk);
                off += used;
            }
            CHECK_OK(cdt_op_pack(op, off, packed + off, frag, &used));
            CHECK(used == 0); /* end of stream */
            int good = 1;
            for (cdt_count k = 0; k < size; k++)
                good &= packed[k] == src[k / 97].data[96 - k % 97];
            CHECK(good);
            CHECK_OK(cdt_op_end(op));
        }
        CHECK(c.states == c.frees);
        cdt_type_free(&t);
    }
}

/* unpack fragments in shuffled order, inorder = 0 and 1 */
static void test_unpack_orders(void)
{
    enum { N = 2, SIZE = N * 97 };
    tobj src[N], dst[N];
    fill(src, N, 9);
    unsigned char packed[SIZE];
    for (cdt_count k = 0; k < SIZE; k++)
        packed[k] = src[k / 97].data[96 - k % 97];
    uint64_t seed = 12345;
    for (int inorder = 0; inorder <= 1; inorder++) {
        for (int round = 0; round < 200; round++) {
            tctx c = {.chunk = SIZE};
            cdt_type t = make_type(&c, inorder);
            /* random cut points, shuffled fragment order */
            cdt_count cuts[SIZE + 1];
            int nfrag = 0;
            cdt_count pos = 0;
            while (pos < SIZE) {
                cdt_count len = 1 + (cdt_count)(check_rand(&seed) % 40);
                if (pos + len > SIZE)
                    len = SIZE - pos;
                cuts[nfrag++] = pos;
                pos += len;
            }
            cuts[nfrag] = SIZE;
            int order[SIZE];
            for (int i = 0; i < nfrag; i++)
                order[i] = i;
            for (int i = nfrag - 1; i > 0; i--) {
                int j = (int)(check_rand(&seed) % (uint64_t)(i + 1)), tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
            memset(dst, 0, sizeof(dst));
            cdt_op op;
            CHECK_OK(cdt_op_unpack_begin(dst, N, t, &op));
            for (int i = 0; i < nfrag; i++) {
                int f = order[i];
                CHECK_OK(cdt_op_unpack(op, cuts[f], packed + cuts[f], cuts[f + 1] - cuts[f]));
            }
            cdt_count got;
            CHECK_OK(cdt_op_unpacked_bytes(op, &got));
            CHECK(got == SIZE);
            /* overlapping fragment is rejected */
            CHECK_RC(cdt_op_unpack(op, 3, packed + 3, 2), CDT_ERR_TRUNCATED);
            CHECK_OK(cdt_op_end(op));
            int good = 1;
            for (int e = 0; e < N; e++)
                good &= memcmp(src[e].data, dst[e].data, 97) == 0;
            CHECK(good);
            if (inorder)
                CHECK(c.order_violations == 0);
            CHECK(c.frees == 1);
            cdt_type_free(&t);
        }
    }
}

static void test_regions(void)
{
    tobj o[2];
    fill(o, 2, 3);
    tctx c = {.chunk = 1000};
    cdt_type t = make_type(&c, 0);
    cdt_op op;
    CHECK_OK(cdt_op_pack_begin(o, 2, t, &op));
    cdt_count n;
    CHECK_OK(cdt_op_region_count(op, &n));
    CHECK(n == 6);
    void *bases[6];
    cdt_count lens[6];
    cdt_type types[6];
    CHECK_RC(cdt_op_regions(op, 5, bases, lens, types), CDT_ERR_INVALID_ARG);
    CHECK_OK(cdt_op_regions(op, 6, bases, lens, types));
    CHECK(bases[4] == o[1].region[1] && lens[4] == 10 && types[4] == CDT_INT32);
    CHECK_OK(cdt_op_end(op));

    /* a receiver asks for regions only after the packed stream is in */
    CHECK_OK(cdt_op_unpack_begin(o, 2, t, &op));
    CHECK_RC(cdt_op_region_count(op, &n), CDT_ERR_ORDER);
    CHECK_OK(cdt_op_end(op));

    for (int bad = 1; bad <= 3; bad++) {
        c.bad_region = bad;
        CHECK_OK(cdt_op_pack_begin(o, 2, t, &op));
        CHECK_RC(cdt_op_region_count(op, &n), CDT_ERR_CALLBACK);
        CHECK_OK(cdt_op_end(op));
    }
    c.bad_region = 0;
    CHECK(c.states == c.frees);
    cdt_type_free(&t);
}

/* an error at each stage reaches the caller unchanged; state_free runs exactly once */
static void test_callback_errors(void)
{
    tobj o[1];
    fill(o, 1, 1);
    for (int stage = ST_STATE; stage <= ST_FREE; stage++) {
        tctx c = {.chunk = 1000, .fail_at = stage};
        cdt_type t = make_type(&c, 0);
        /* send side through a frame: state, query, pack, region_count, region, free */
        cdt_frame f = NULL;
        int rc = cdt_frame_encode(o, 1, t, NULL, &f);
        int expect_send = (stage == ST_STATE || stage == ST_QUERY || stage == ST_PACK ||
                           stage == ST_RCOUNT || stage == ST_REGION)
                              ? ERR_INJECT
                              : CDT_SUCCESS;
        CHECK_RC(rc, expect_send);
        if (rc == CDT_SUCCESS)
            CHECK_RC(cdt_frame_free(f), stage == ST_FREE ? ERR_INJECT : CDT_SUCCESS);
        else
            CHECK(f == NULL);
        CHECK(c.frees == (stage == ST_STATE ? 0 : 1));
        CHECK(c.states == c.frees);
        cdt_type_free(&t);
    }
    /* receive side: unpack error and region error through the decoder */
    tctx ok = {.chunk = 1000};
    cdt_type t = make_type(&ok, 0);
    cdt_frame f;
    CHECK_OK(cdt_frame_encode(o, 1, t, NULL, &f));
    cdt_count size;
    cdt_frame_size(f, &size);
    unsigned char *wire = malloc((size_t)size);
    CHECK_OK(cdt_frame_gather(f, 0, wire, size));
    CHECK_OK(cdt_frame_free(f));
    int stages[] = {ST_STATE, ST_UNPACK, ST_RCOUNT, ST_REGION, ST_FREE};
    for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
        tobj dst[1];
        ok.fail_at = stages[i];
        ok.frees = ok.states = 0;
        CHECK_RC(cdt_frame_decode(wire, size, dst, 1, t), ERR_INJECT);
        CHECK(ok.frees == (stages[i] == ST_STATE ? 0 : 1));
    }
    ok.fail_at = 0;
    free(wire);
    cdt_type_free(&t);
}

static void test_contract_violations(void)
{
    tobj o[1];
    fill(o, 1, 1);
    for (int bad = 1; bad <= 2; bad++) {
        tctx c = {.chunk = 1000, .bad_used = bad};
        cdt_type t = make_type(&c, 0);
        cdt_op op;
        unsigned char buf[200];
        cdt_count used = 77;
        CHECK_OK(cdt_op_pack_begin(o, 1, t, &op));
        CHECK_RC(cdt_op_pack(op, 0, buf, sizeof(buf), &used), CDT_ERR_CALLBACK);
        CHECK(used == 77); /* outputs untouched on error */
        CHECK_OK(cdt_op_end(op));
        cdt_type_free(&t);
    }
    /* inorder pack must continue where it stopped */
    tctx c = {.chunk = 10};
    cdt_type t = make_type(&c, 1);
    cdt_op op;
    unsigned char buf[200];
    cdt_count used;
    CHECK_OK(cdt_op_pack_begin(o, 1, t, &op));
    CHECK_OK(cdt_op_pack(op, 0, buf, sizeof(buf), &used));
    CHECK_RC(cdt_op_pack(op, used + 1, buf, sizeof(buf), &used), CDT_ERR_ORDER);
    CHECK_RC(cdt_op_unpack(op, 0, buf, 1), CDT_ERR_ORDER); /* wrong direction */
    CHECK_RC(cdt_op_pack(op, 0, NULL, 5, &used), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_op_pack(op, 1000, buf, 5, &used), CDT_ERR_INVALID_ARG);
    CHECK_OK(cdt_op_end(op));
    /* unpack past the end of a known stream */
    CHECK_OK(cdt_op_unpack_begin(o, 1, CDT_BYTE, &op));
    CHECK_RC(cdt_op_unpack(op, 0, buf, 2), CDT_ERR_TRUNCATED);
    CHECK_OK(cdt_op_end(op));
    cdt_type_free(&t);
}

/* a type freed by the user stays alive while an operation uses it */
static void test_refcount(void)
{
    tobj o[1], d[1];
    fill(o, 1, 4);
    tctx c = {.chunk = 1000};
    cdt_type t = make_type(&c, 0);
    cdt_op op;
    CHECK_OK(cdt_op_pack_begin(o, 1, t, &op));
    CHECK_OK(cdt_type_free(&t));
    unsigned char buf[97];
    cdt_count used;
    CHECK_OK(cdt_op_pack(op, 0, buf, sizeof(buf), &used));
    CHECK(used == 97);
    CHECK_OK(cdt_op_end(op));
    (void)d;
}

static int context_frees;
static void *context_expected;
static void count_context_free(void *context)
{
    CHECK(context == context_expected);
    context_frees++;
}

/* the params-struct constructor: field_mask rules, and the context destructor at the type's
 * last reference (an operation and a frame hold it past cdt_type_free) */
static void test_create_advanced(void)
{
    tctx c = {.chunk = 1000};
    cdt_custom_params p = {
        .field_mask = CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_QUERY | CDT_CUSTOM_PARAM_PACK |
                      CDT_CUSTOM_PARAM_UNPACK | CDT_CUSTOM_PARAM_CONTEXT,
        .state_fn = t_state,
        .query_fn = t_query,
        .pack_fn = t_pack,
        .unpack_fn = t_unpack,
        .context = &c,
    };
    cdt_type t = NULL;
    CHECK_RC(cdt_type_create_custom_advanced(NULL, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_create_custom_advanced(&p, NULL), CDT_ERR_INVALID_ARG);
    cdt_custom_params bad = p;
    bad.field_mask |= (uint64_t)1 << 40; /* a field of a later version */
    CHECK_RC(cdt_type_create_custom_advanced(&bad, &t), CDT_ERR_INVALID_ARG);
    bad = p;
    bad.field_mask &= ~(uint64_t)CDT_CUSTOM_PARAM_PACK; /* set but not marked: not there */
    CHECK_RC(cdt_type_create_custom_advanced(&bad, &t), CDT_ERR_INVALID_ARG);
    bad = p;
    bad.field_mask |= CDT_CUSTOM_PARAM_REGIONS; /* region_count_fn without region_fn */
    bad.region_count_fn = t_rcount;
    CHECK_RC(cdt_type_create_custom_advanced(&bad, &t), CDT_ERR_INVALID_ARG);
    CHECK(t == NULL);

    /* fields whose bit is not set are ignored: garbage in an unmarked field is harmless */
    p.state_free_fn = (cdt_custom_state_free_func_t *)(uintptr_t)1;
    p.field_mask |= CDT_CUSTOM_PARAM_CONTEXT_FREE;
    p.context_free_fn = count_context_free;
    context_expected = &c;
    CHECK_OK(cdt_type_create_custom_advanced(&p, &t));
    tobj o[2];
    fill(o, 2, 7);
    cdt_op op;
    unsigned char buf[2 * 97];
    cdt_count used = 0;
    c.chunk = 1000;
    CHECK_OK(cdt_op_pack_begin(o, 2, t, &op));
    CHECK_OK(cdt_op_pack(op, 0, buf, sizeof(buf), &used));
    CHECK(used == (cdt_count)sizeof(buf));
    cdt_frame frame;
    CHECK_OK(cdt_frame_encode(o, 2, t, NULL, &frame));
    CHECK_OK(cdt_type_free(&t));
    CHECK(context_frees == 0); /* the operation and the frame still hold the type */
    CHECK_OK(cdt_op_end(op));
    CHECK(context_frees == 0);
    CHECK_OK(cdt_frame_free(frame));
    CHECK(context_frees == 1);
    CHECK(c.frees == 0); /* the unmarked state_free_fn (not a function) was never called */
}

/* the flags field: an unknown bit is refused; and a caller compiled before the field existed
 * passes a struct that ends where `flags` begins: the library reads no byte past it (the struct
 * here ends at a page that cannot be read, so a read past its end is a crash) */
static void test_create_flags(void)
{
    tctx c = {.chunk = 1000};
    cdt_custom_params p = {
        .field_mask = CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_QUERY | CDT_CUSTOM_PARAM_PACK |
                      CDT_CUSTOM_PARAM_UNPACK | CDT_CUSTOM_PARAM_CONTEXT | CDT_CUSTOM_PARAM_FLAGS,
        .state_fn = t_state,
        .query_fn = t_query,
        .pack_fn = t_pack,
        .unpack_fn = t_unpack,
        .context = &c,
        .flags = CDT_CUSTOM_FLAG_UNPACK_READS_ONCE,
    };
    cdt_type t = NULL;
    CHECK_OK(cdt_type_create_custom_advanced(&p, &t));
    CHECK_OK(cdt_type_free(&t));
    p.flags |= (uint64_t)1 << 63; /* a promise of a later version */
    CHECK_RC(cdt_type_create_custom_advanced(&p, &t), CDT_ERR_INVALID_ARG);
    CHECK(t == NULL);
    p.field_mask &= ~(uint64_t)CDT_CUSTOM_PARAM_FLAGS; /* unmarked: never read */
    CHECK_OK(cdt_type_create_custom_advanced(&p, &t));
    CHECK_OK(cdt_type_free(&t));

    long page = sysconf(_SC_PAGESIZE);
    unsigned char *two =
        mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(two != MAP_FAILED);
    CHECK(mprotect(two + page, (size_t)page, PROT_NONE) == 0);
    size_t old_size = offsetof(cdt_custom_params, flags);
    unsigned char *at = two + page - old_size; /* 8-aligned: old_size is a multiple of 8 */
    memcpy(at, &p, old_size);
    CHECK_OK(cdt_type_create_custom_advanced((const cdt_custom_params *)at, &t));
    CHECK_OK(cdt_type_free(&t));
    munmap(two, (size_t)(2 * page));
}

static void test_status_names(void)
{
    CHECK(strcmp(cdt_strerror(CDT_SUCCESS), "success") == 0);
    CHECK(strcmp(cdt_err_name(CDT_ERR_FRAME_MAGIC), "CDT_ERR_FRAME_MAGIC") == 0);
    CHECK(strcmp(cdt_err_name(ERR_INJECT), "CDT_ERR_USER") == 0);
    CHECK(cdt_strerror(-999) != NULL);
    CHECK(cdt_version_number() == CDT_VERSION_NUMBER);
    {
        char expect[32];
        snprintf(expect, sizeof(expect), "%d.%d.%d", CDT_VERSION_MAJOR, CDT_VERSION_MINOR,
                 CDT_VERSION_PATCH);
        CHECK(strcmp(cdt_version_string(), expect) == 0);
    }
    CHECK(cdt_kind_size(CDT_KIND_COMPLEX_DOUBLE) == 16 && cdt_kind_size((cdt_kind)99) == 0);
    CHECK(cdt_type_predefined((cdt_kind)0) == NULL && cdt_type_predefined(CDT_KIND_COUNT_) == NULL);
    CHECK(cdt_type_predefined((cdt_kind)-1) == NULL && cdt_type_predefined((cdt_kind)99) == NULL);
    CHECK(cdt_type_predefined(CDT_KIND_BOOL) != NULL && cdt_type_predefined(CDT_KIND_BYTE) != NULL);
}

/* A fragment whose delivery fails is not recorded as arrived: giving it again works, and a
 * held fragment whose delivery failed is delivered by the next call. (Before, the range was
 * recorded first and the retry was refused as an overlap.) */
static void test_unpack_retry(void)
{
    tobj src, dst;
    fill(&src, 1, 9);
    unsigned char packed[97];
    for (int k = 0; k < 97; k++)
        packed[k] = src.data[96 - k];
    for (int inorder = 0; inorder <= 1; inorder++) {
        tctx c = {.chunk = 1000, .fail_unpack_call = 1};
        cdt_type t = make_type(&c, inorder);
        cdt_op op;
        memset(&dst, 0, sizeof(dst));
        CHECK_OK(cdt_op_unpack_begin(&dst, 1, t, &op));
        CHECK_RC(cdt_op_unpack(op, 0, packed, 30), ERR_INJECT);
        cdt_count got = -1;
        CHECK_OK(cdt_op_unpacked_bytes(op, &got));
        CHECK(got == 0);
        c.fail_unpack_call = 0;
        CHECK_OK(cdt_op_unpack(op, 0, packed, 30)); /* the same fragment again */
        if (inorder) {
            /* a held fragment (67 bytes at 50) and a failing delivery of the gap before it */
            CHECK_OK(cdt_op_unpack(op, 50, packed + 50, 47));
            c.fail_unpack_call = c.unpack_calls + 2; /* the gap is delivered, the held one fails */
            CHECK_RC(cdt_op_unpack(op, 30, packed + 30, 20), ERR_INJECT);
            CHECK_OK(cdt_op_unpacked_bytes(op, &got));
            CHECK(got == 50);
            c.fail_unpack_call = 0;
            CHECK_OK(cdt_op_unpack(op, 0, NULL, 0)); /* delivers the held fragment */
            CHECK_RC(cdt_op_unpack(op, 30, packed + 30, 20), CDT_ERR_TRUNCATED); /* it was taken */
        } else {
            c.fail_unpack_call = c.unpack_calls + 1;
            CHECK_RC(cdt_op_unpack(op, 30, packed + 30, 67), ERR_INJECT);
            c.fail_unpack_call = 0;
            CHECK_OK(cdt_op_unpack(op, 30, packed + 30, 67));
        }
        CHECK_OK(cdt_op_unpacked_bytes(op, &got));
        CHECK(got == 97);
        CHECK(memcmp(dst.data, src.data, 97) == 0);
        CHECK_OK(cdt_op_end(op));
        cdt_type_free(&t);
    }
}

int main(void)
{
    test_create_errors();
    test_pack_fragments();
    test_unpack_orders();
    test_unpack_retry();
    test_regions();
    test_callback_errors();
    test_contract_violations();
    test_refcount();
    test_create_advanced();
    test_create_flags();
    test_status_names();
    return check_report("test_custom_ops");
}
