/*
 * test_frame.c - frames: round trips of every seed object through one-shot decode and through
 * the streaming decoder (random piece order and sizes, regions received in place), the
 * serialized-object adapter, large contiguous layouts as regions, and a table of malformed
 * frames that must each give their error without crashing or reading past the input.
 */
#include "check.h"
#include "cdt_sobj.h"
#include "seed_types.h"

#include <string.h>

static unsigned char *encode(const void *obj, cdt_count count, cdt_type type, cdt_count *size)
{
    cdt_frame f;
    int rc = cdt_frame_encode(obj, count, type, NULL, &f);
    CHECK_OK(rc);
    if (rc != CDT_SUCCESS)
        return NULL;
    CHECK_OK(cdt_frame_size(f, size));
    unsigned char *wire = malloc((size_t)*size);
    CHECK_OK(cdt_frame_gather(f, 0, wire, *size));
    /* the iov list concatenates to the same bytes */
    cdt_count n, total = 0;
    CHECK_OK(cdt_frame_iov_count(f, &n));
    cdt_iov *iov = malloc((size_t)n * sizeof(cdt_iov));
    cdt_count got;
    CHECK_OK(cdt_frame_iov(f, 0, n, iov, &got));
    CHECK(got == n);
    int same = 1;
    for (cdt_count i = 0; i < n; i++) {
        same &= memcmp(wire + total, iov[i].base, (size_t)iov[i].len) == 0;
        total += iov[i].len;
    }
    CHECK(same && total == *size);
    free(iov);
    CHECK_OK(cdt_frame_free(f));
    return wire;
}

/* deliver a frame to a decoder in random pieces and random order */
static int decode_shuffled(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
                           cdt_type type, uint64_t *seed)
{
    cdt_decoder d;
    int rc = cdt_decoder_create(wire, size, &d);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    cdt_decoder_info(d, &info);
    rc = cdt_decoder_bind(d, buf, count, type);
    /* pieces of the whole frame in any order: region bytes may come before the packed stream
     * that tells a custom receiver where they go (the decoder keeps them until then) */
    {
        cdt_count lo = 0, hi = size;
        cdt_count cuts[64];
        int n = 0;
        for (cdt_count pos = lo; pos < hi && n < 63;) {
            cuts[n++] = pos;
            pos += 1 + (cdt_count)(check_rand(seed) % (uint64_t)((hi - lo) / 8 + 1));
        }
        cuts[n] = hi;
        int order[64];
        for (int i = 0; i < n; i++)
            order[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(check_rand(seed) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n && rc == CDT_SUCCESS; i++) {
            int k = order[i];
            rc = cdt_decoder_write(d, cuts[k], wire + cuts[k], cuts[k + 1] - cuts[k]);
        }
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_finish(d);
    int frc = cdt_decoder_free(d);
    return rc != CDT_SUCCESS ? rc : frc;
}

/* receive regions in place, as a transport does: head by write, region bytes by memcpy into
 * the iov the decoder names, then region_done */
static int decode_in_place(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
                           cdt_type type)
{
    cdt_decoder d;
    int rc = cdt_decoder_create(wire, size, &d);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    cdt_decoder_info(d, &info);
    if ((rc = cdt_decoder_bind(d, buf, count, type)) == CDT_SUCCESS)
        rc = cdt_decoder_write(d, 0, wire, info.header_size + info.packed_size);
    CHECK_RC(cdt_decoder_finish(d),
             info.region_count > 0 && info.region_bytes > 0 ? CDT_ERR_INCOMPLETE : CDT_SUCCESS);
    for (cdt_count r = 0; r < info.region_count && rc == CDT_SUCCESS; r++) {
        cdt_count len, off, n;
        cdt_decoder_region_info(d, r, &len, NULL, &off);
        if ((rc = cdt_decoder_region_iov_count(d, r, &n)) != CDT_SUCCESS)
            break;
        cdt_iov iov[8];
        cdt_count first = 0, pos = off;
        while (first < n && rc == CDT_SUCCESS) {
            cdt_count got;
            rc = cdt_decoder_region_iov(d, r, first, 8, iov, &got);
            for (cdt_count i = 0; i < got && rc == CDT_SUCCESS; i++) {
                memcpy(iov[i].base, wire + pos, (size_t)iov[i].len);
                pos += iov[i].len;
            }
            first += got;
        }
        CHECK(pos == off + len);
        if (rc == CDT_SUCCESS)
            rc = cdt_decoder_region_done(d, r);
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_finish(d);
    int frc = cdt_decoder_free(d);
    return rc != CDT_SUCCESS ? rc : frc;
}

static void test_seed_roundtrips(void)
{
    uint64_t seed = 99;
    enum { N = 5 };
    struct_vec *sv = calloc(N, sizeof(*sv)), *sv2 = calloc(N, sizeof(*sv2));
    struct_vec_fill(sv, N, 11);
    cdt_count size;
    unsigned char *wire = encode(sv, N, struct_vec_type(), &size);
    for (int mode = 0; mode < 3; mode++) {
        memset(sv2, 0, N * sizeof(*sv2));
        if (mode == 0)
            CHECK_OK(cdt_frame_decode(wire, size, sv2, N, struct_vec_type()));
        else if (mode == 1)
            CHECK_OK(decode_shuffled(wire, size, sv2, N, struct_vec_type(), &seed));
        else
            CHECK_OK(decode_in_place(wire, size, sv2, N, struct_vec_type()));
        CHECK(struct_vec_equal(sv, sv2, N));
    }
    /* receiving into fewer elements: region count differs from the header */
    CHECK_RC(cdt_frame_decode(wire, size, sv2, N - 1, struct_vec_type()), CDT_ERR_TRUNCATED);
    free(wire);
    free(sv);
    free(sv2);

    struct_simple ss[7], ss2[7];
    struct_simple_fill(ss, 7, 3);
    wire = encode(ss, 7, struct_simple_type(), &size);
    for (int i = 0; i < 20; i++) {
        memset(ss2, 0, sizeof(ss2));
        CHECK_OK(decode_shuffled(wire, size, ss2, 7, struct_simple_type(), &seed));
        CHECK(struct_simple_equal(ss, ss2, 7));
    }
    free(wire);

    for (cdt_count arrays = 0; arrays <= 40; arrays += 8) {
        double_vec dv, dv2 = {0}, dv3 = {0};
        CHECK_OK(double_vec_init(&dv, arrays, arrays * 3 + 1, (int)arrays));
        wire = encode(&dv, 1, double_vec_type(), &size);
        CHECK_OK(decode_shuffled(wire, size, &dv2, 1, double_vec_type(), &seed));
        CHECK(double_vec_equal(&dv, &dv2));
        CHECK_OK(decode_in_place(wire, size, &dv3, 1, double_vec_type()));
        CHECK(double_vec_equal(&dv, &dv3));
        double_vec_clear(&dv);
        double_vec_clear(&dv2);
        double_vec_clear(&dv3);
        free(wire);
    }
}

/* predefined layouts: small ones packed, large contiguous ones become a zero-copy region */
static void test_layout_frames(void)
{
    enum { N = 5000 };
    double *a = malloc(N * sizeof(double)), *b = calloc(N, sizeof(double));
    for (int i = 0; i < N; i++)
        a[i] = i * 0.5;
    for (cdt_count n = 1; n <= N; n *= 7) {
        cdt_frame f;
        CHECK_OK(cdt_frame_encode(a, n, CDT_DOUBLE, NULL, &f));
        cdt_count regions, size;
        const void *head;
        cdt_count head_len;
        CHECK_OK(cdt_frame_region_count(f, &regions));
        CHECK_OK(cdt_frame_head(f, &head, &head_len));
        CHECK(regions == (n * 8 >= 8192 ? 1 : 0));
        if (regions == 1) {
            cdt_iov iov;
            cdt_count got;
            CHECK_OK(cdt_frame_region_iov(f, 0, 0, 1, &iov, &got));
            CHECK(got == 1 && iov.base == (void *)a && iov.len == n * 8); /* zero-copy */
        }
        CHECK_OK(cdt_frame_size(f, &size));
        unsigned char *wire = malloc((size_t)size);
        CHECK_OK(cdt_frame_gather(f, 0, wire, size));
        CHECK_OK(cdt_frame_free(f));
        memset(b, 0, N * sizeof(double));
        CHECK_OK(cdt_frame_decode(wire, size, b, N, CDT_DOUBLE)); /* shorter message: fine */
        CHECK(memcmp(a, b, (size_t)n * 8) == 0);
        CHECK_OK(decode_in_place(wire, size, b, n, CDT_DOUBLE));
        CHECK(memcmp(a, b, (size_t)n * 8) == 0);
        if (n > 1) /* more data than the receive buffer holds is an error, not a truncation */
            CHECK_RC(cdt_frame_decode(wire, size, b, n - 1, CDT_DOUBLE), CDT_ERR_TRUNCATED);
        /* the receiver may also read it as bytes */
        CHECK_OK(cdt_frame_decode(wire, size, b, n * 8, CDT_BYTE));
        free(wire);
    }
    /* threshold disabled: always packed */
    cdt_frame_params p = {.field_mask = CDT_FRAME_PARAM_REGION_THRESHOLD, .region_threshold = -1};
    cdt_frame f;
    CHECK_OK(cdt_frame_encode(a, N, CDT_DOUBLE, &p, &f));
    cdt_count regions;
    CHECK_OK(cdt_frame_region_count(f, &regions));
    CHECK(regions == 0);
    CHECK_OK(cdt_frame_free(f));
    free(a);
    free(b);
}

/* Whole frames are received by cdt_frame_decode in one call, without a decoder, when they have
 * no regions, or a few regions into a custom type. The results (status, and the object on
 * success) must be the decoder's, for every sender and receiver: layouts shorter and longer
 * than the stream, custom types with and without regions (empty ones too), an uncommitted
 * type, and frames cut or extended by a byte. */
static void test_plain_frames_match_decoder(void)
{
    enum { N = 6 };
    struct_simple ss[N];
    struct_simple_fill(ss, N, 3);
    cdt_type vec;
    CHECK_OK(cdt_type_vector(3, 2, 3, CDT_INT32, &vec));
    cdt_type uncommitted;
    CHECK_OK(cdt_type_dup(vec, &uncommitted));
    CHECK_OK(cdt_type_commit(&vec));
    /* custom types with regions: struct_vec (its data array), double_vec (one per array,
     * empty arrays included) */
    struct_vec *sv = calloc(1, sizeof(struct_vec));
    struct_vec_fill(sv, 1, 5);
    double_vec dv = {0}, dv_empty = {0};
    CHECK_OK(double_vec_init(&dv, 3, 5, 9));
    CHECK_OK(double_vec_init(&dv_empty, 2, 0, 9));
    int32_t ints[N * 9];
    for (int i = 0; i < N * 9; i++)
        ints[i] = i * 7 - 20;
    struct {
        const void *obj;
        cdt_count count;
        cdt_type type;
    } senders[] = {{ss, N, struct_simple_type()}, {ints, 2, vec},
                   {ints, 5, CDT_INT32},          {sv, 1, struct_vec_type()},
                   {&dv, 1, double_vec_type()},   {&dv_empty, 1, double_vec_type()}};
    struct {
        cdt_count count;
        cdt_type type;
    } receivers[] = {{N, struct_simple_type()},
                     {N + 2, struct_simple_type()},
                     {2, vec},
                     {1, vec},
                     {3, vec},
                     {N * 9, CDT_INT32},
                     {1, CDT_INT32},
                     {1, struct_vec_type()},
                     {1, double_vec_type()},
                     {2, uncommitted},
                     {-1, CDT_INT32}};
    uint64_t seed = 77;
    for (size_t s = 0; s < sizeof(senders) / sizeof(senders[0]); s++) {
        cdt_count size;
        unsigned char *wire = encode(senders[s].obj, senders[s].count, senders[s].type, &size);
        if (wire == NULL)
            continue;
        unsigned char *longer = calloc((size_t)size + 1, 1);
        memcpy(longer, wire, (size_t)size);
        for (size_t r = 0; r < sizeof(receivers) / sizeof(receivers[0]); r++) {
            for (cdt_count len = size - 1; len <= size + 1; len++) {
                /* two receive buffers, zeroed alike, large enough for every receiver (a
                 * struct_vec); a double_vec receiver allocates its arrays */
                unsigned char *one = calloc(1, sizeof(struct_vec));
                unsigned char *other = calloc(1, sizeof(struct_vec));
                const unsigned char *frame = len > size ? longer : wire;
                int dv = receivers[r].type == double_vec_type();
                int rc1 = cdt_frame_decode(frame, len, one, receivers[r].count, receivers[r].type);
                int rc2 = CDT_ERR_FRAME_TRUNCATED;
                if (len == size)
                    rc2 = decode_shuffled(frame, len, other, receivers[r].count, receivers[r].type,
                                          &seed);
                else if (len > size)
                    rc2 = CDT_ERR_FRAME_MALFORMED;
                if (rc1 != rc2)
                    fprintf(stderr, "sender %zu receiver %zu len %+lld: %s vs decoder %s\n", s, r,
                            (long long)(len - size), cdt_err_name(rc1), cdt_err_name(rc2));
                CHECK(rc1 == rc2);
                if (rc1 == CDT_SUCCESS)
                    CHECK(dv ? double_vec_equal((double_vec *)one, (double_vec *)other)
                             : memcmp(one, other, sizeof(struct_vec)) == 0);
                if (dv) {
                    double_vec_clear((double_vec *)one);
                    double_vec_clear((double_vec *)other);
                }
                free(one);
                free(other);
            }
        }
        free(longer);
        free(wire);
    }
    free(sv);
    double_vec_clear(&dv);
    double_vec_clear(&dv_empty);
    CHECK_OK(cdt_type_free(&vec));
    CHECK_OK(cdt_type_free(&uncommitted));
}

/* allocator hook for the serialized-object adapter: counts calls, can fail */
typedef struct alloc_log {
    int calls, fail_at;
    void *ptrs[16];
} alloc_log;

static int log_alloc(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    alloc_log *l = user;
    (void)index;
    (void)kind;
    if (l->calls == l->fail_at)
        return CDT_ERR_USER_BASE - 1;
    *base = l->ptrs[l->calls++] = malloc(len ? (size_t)len : 1);
    return CDT_SUCCESS;
}

static void test_sobj(void)
{
    char inband[] = "pickle-stream-bytes";
    double arr1[300];
    int32_t arr2[77];
    for (int i = 0; i < 300; i++)
        arr1[i] = i;
    for (int i = 0; i < 77; i++)
        arr2[i] = -i;
    cdt_sobj_buffer bufs[2] = {{arr1, sizeof(arr1), CDT_KIND_DOUBLE},
                               {arr2, sizeof(arr2), CDT_KIND_INT32}};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);

    for (int hook = 0; hook <= 1; hook++) {
        alloc_log log = {.fail_at = -1};
        cdt_sobj in = {0};
        if (hook) {
            in.field_mask = CDT_SOBJ_FIELD_ALLOC;
            in.alloc = log_alloc;
            in.alloc_user = &log;
        }
        cdt_decoder d;
        CHECK_OK(cdt_decoder_create(wire, size, &d));
        CHECK_OK(cdt_sobj_recv_prepare(&in, d));
        CHECK(in.nbuffers == 2 && in.buffers[0].kind == CDT_KIND_DOUBLE &&
              in.buffers[1].len == sizeof(arr2));
        CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
        CHECK_OK(cdt_decoder_write(d, 0, wire, size));
        CHECK_OK(cdt_decoder_finish(d));
        CHECK_OK(cdt_decoder_free(d));
        CHECK(memcmp(in.inband, inband, sizeof(inband)) == 0);
        CHECK(memcmp(in.buffers[0].base, arr1, sizeof(arr1)) == 0);
        CHECK(memcmp(in.buffers[1].base, arr2, sizeof(arr2)) == 0);
        CHECK(!hook || log.calls == 3);
        if (!hook) { /* one block: in-band bytes, then each buffer on a 64-byte boundary */
            uintptr_t block = (uintptr_t)in.inband;
            CHECK(block % 64 == 0);
            CHECK((uintptr_t)in.buffers[0].base == block + 64);
            CHECK((uintptr_t)in.buffers[1].base == block + 64 + 2432);
        }
        cdt_sobj_release(&in);
        for (int i = 0; i < log.calls; i++)
            free(log.ptrs[i]);
    }
    /* the allocator's error comes back unchanged */
    alloc_log log = {.fail_at = 2};
    cdt_sobj in = {.field_mask = CDT_SOBJ_FIELD_ALLOC, .alloc = log_alloc, .alloc_user = &log};
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_RC(cdt_sobj_recv_prepare(&in, d), CDT_ERR_USER_BASE - 1);
    CHECK(in.buffers == NULL);
    CHECK_OK(cdt_decoder_free(d));
    for (int i = 0; i < log.calls; i++)
        free(log.ptrs[i]);
    free(wire);
}

/* A custom type whose region is strided: every third int32 of `data` (a vector type), sent and
 * received through the kernels at any offset of the region, in random pieces, in one call,
 * and by the decoder's iov pieces. */
enum { STRIDED_K = 50 };
typedef struct strided_obj {
    int64_t k;
    int32_t data[3 * STRIDED_K];
} strided_obj;
static cdt_type strided_region_type;

static int strided_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state;
    (void)buf;
    *size = 8 * count;
    return CDT_SUCCESS;
}
static int strided_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                        cdt_count dst_size, cdt_count *used)
{
    (void)state;
    const strided_obj *o = buf;
    cdt_count n = 8 * count - offset < dst_size ? 8 * count - offset : dst_size;
    for (cdt_count i = 0; i < n; i++)
        ((unsigned char *)dst)[i] =
            ((const unsigned char *)&o[(offset + i) / 8].k)[(offset + i) % 8];
    *used = n;
    return CDT_SUCCESS;
}
static int strided_unpack(void *state, void *buf, cdt_count count, cdt_count offset,
                          const void *src, cdt_count src_size)
{
    (void)state;
    (void)count;
    strided_obj *o = buf;
    for (cdt_count i = 0; i < src_size; i++)
        ((unsigned char *)&o[(offset + i) / 8].k)[(offset + i) % 8] =
            ((const unsigned char *)src)[i];
    return CDT_SUCCESS;
}
static int strided_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    (void)buf;
    *n = count;
    return CDT_SUCCESS;
}
static int strided_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                           cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    strided_obj *o = buf;
    for (cdt_count i = 0; i < n; i++) {
        if (o[i].k != STRIDED_K)
            return CDT_ERR_USER_BASE - 5; /* the receiver's stream said another length */
        bases[i] = o[i].data;
        lens[i] = 1;
        types[i] = strided_region_type;
    }
    return CDT_SUCCESS;
}

static void test_strided_regions(void)
{
    CHECK_OK(cdt_type_vector(STRIDED_K, 1, 3, CDT_INT32, &strided_region_type));
    CHECK_OK(cdt_type_commit(&strided_region_type));
    cdt_type t;
    CHECK_OK(cdt_type_create_custom(NULL, NULL, strided_query, strided_pack, strided_unpack,
                                    strided_region_count, strided_regions, NULL, 0, &t));
    strided_obj in[2];
    for (int j = 0; j < 2; j++) {
        in[j].k = STRIDED_K;
        for (int i = 0; i < 3 * STRIDED_K; i++)
            in[j].data[i] = j * 1000 + i;
    }
    cdt_count size;
    unsigned char *wire = encode(in, 2, t, &size);
    uint64_t seed = 5;
    for (int mode = 0; mode < 3; mode++) {
        strided_obj out[2];
        memset(out, 0, sizeof(out));
        int rc = mode == 0   ? cdt_frame_decode(wire, size, out, 2, t)
                 : mode == 1 ? decode_shuffled(wire, size, out, 2, t, &seed)
                             : decode_in_place(wire, size, out, 2, t);
        CHECK_OK(rc);
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 3 * STRIDED_K; i++)
                CHECK(out[j].data[i] == (i % 3 == 0 ? in[j].data[i] : 0));
    }
    free(wire);
    CHECK_OK(cdt_type_free(&t));
    CHECK_OK(cdt_type_free(&strided_region_type));
}

/* A region whose layout's runs touch across elements (a resized vector: element j's second
 * block ends where element j + 1 begins), so its pieces merge runs: the frame's region iov,
 * asked for in windows of every start and size, is the layout's own iov (cdt_iov_get). */
static cdt_type touching_type;
static int touching_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state;
    (void)buf;
    (void)count;
    *size = 0;
    return CDT_SUCCESS;
}
static int touching_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                         cdt_count dst_size, cdt_count *used)
{
    (void)state, (void)buf, (void)count, (void)offset, (void)dst, (void)dst_size;
    *used = 0;
    return CDT_SUCCESS;
}
static int touching_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state, (void)buf, (void)count;
    *n = 1;
    return CDT_SUCCESS;
}
static int touching_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                            cdt_count lens[], cdt_type types[])
{
    (void)state, (void)count, (void)n;
    bases[0] = buf;
    lens[0] = 6;
    types[0] = touching_type;
    return CDT_SUCCESS;
}

static void test_region_iov_windows(void)
{
    cdt_type vec;
    CHECK_OK(cdt_type_vector(2, 1, 2, CDT_INT32, &vec));
    CHECK_OK(cdt_type_resized(vec, 0, 12, &touching_type));
    CHECK_OK(cdt_type_free(&vec));
    CHECK_OK(cdt_type_commit(&touching_type));
    cdt_type t;
    CHECK_OK(cdt_type_create_custom(NULL, NULL, touching_query, touching_pack, NULL,
                                    touching_region_count, touching_regions, NULL, 0, &t));
    int32_t data[60];
    for (int i = 0; i < 60; i++)
        data[i] = i;
    cdt_frame_params p = {.field_mask = CDT_FRAME_PARAM_REGION_THRESHOLD, .region_threshold = 0};
    cdt_frame f;
    CHECK_OK(cdt_frame_encode(data, 1, t, &p, &f));
    cdt_count n = 0, want_n = 0;
    CHECK_OK(cdt_frame_region_iov_count(f, 0, &n));
    CHECK_OK(cdt_iov_count(data, 6, touching_type, &want_n));
    CHECK(n == want_n && n == 7); /* [0,4) then six merged [8,16)-like pieces */
    for (cdt_count first = 0; first <= n; first++)
        for (cdt_count max = 1; max <= n + 1; max++) {
            cdt_iov got[16], want[16];
            cdt_count ng = -1, nw = -2;
            CHECK_OK(cdt_frame_region_iov(f, 0, first, max, got, &ng));
            CHECK_OK(cdt_iov_get(data, 6, touching_type, first, max, want, &nw));
            CHECK(ng == nw);
            for (cdt_count i = 0; i < ng && i < nw; i++)
                CHECK(got[i].base == want[i].base && got[i].len == want[i].len);
        }
    CHECK_OK(cdt_frame_free(f));
    CHECK_OK(cdt_type_free(&t));
    CHECK_OK(cdt_type_free(&touching_type));
}

/* empty regions and odd lengths: padding rules of FORMAT.md section 1 */
static void test_empty_regions(void)
{
    char inband[5] = "abcde";
    int16_t small[3] = {1, 2, 3};
    cdt_sobj_buffer bufs[4] = {{small, 0, CDT_KIND_INT16},
                               {small, sizeof(small), CDT_KIND_INT16},
                               {NULL, 0, CDT_KIND_BYTE},
                               {NULL, 0, CDT_KIND_DOUBLE}};
    cdt_sobj out = {.inband = inband, .inband_len = 5, .buffers = bufs, .nbuffers = 4};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
    /* 48 + 4 x 16 = 112, packed 5 -> 117, r0 at 120 (empty), r1 at 120 (6 bytes) -> 126,
     * r2 at 128 (empty), r3 at 128 (empty): the frame ends at 128 */
    CHECK(size == 128);
    uint64_t seed = 5;
    for (int mode = 0; mode < 3; mode++) {
        cdt_sobj in = {0};
        cdt_decoder d;
        CHECK_OK(cdt_decoder_create(wire, size, &d));
        CHECK_OK(cdt_sobj_recv_prepare(&in, d));
        CHECK_OK(cdt_decoder_free(d));
        int rc = mode == 0   ? cdt_frame_decode(wire, size, &in, 1, cdt_sobj_type())
                 : mode == 1 ? decode_shuffled(wire, size, &in, 1, cdt_sobj_type(), &seed)
                             : decode_in_place(wire, size, &in, 1, cdt_sobj_type());
        CHECK_OK(rc);
        CHECK(memcmp(in.inband, inband, 5) == 0 && memcmp(in.buffers[1].base, small, 6) == 0);
        cdt_sobj_release(&in);
    }
    free(wire);
}

/* ---- malformed frames ---- */

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* decode into a struct_vec x2 receiver; must fail with `want` and leave no trace */
static void expect_bad(const unsigned char *wire, cdt_count size, int want, const char *what)
{
    struct_vec *dst = calloc(2, sizeof(*dst));
    int rc = cdt_frame_decode(wire, size, dst, 2, struct_vec_type());
    if (rc != want)
        fprintf(stderr, "malformed case '%s': got %s, want %s\n", what, cdt_err_name(rc),
                cdt_err_name(want));
    CHECK(rc == want);
    free(dst);
}

static void test_malformed(void)
{
    struct_vec *sv = calloc(2, sizeof(*sv));
    struct_vec_fill(sv, 2, 1);
    cdt_count size;
    unsigned char *good = encode(sv, 2, struct_vec_type(), &size);
    unsigned char *w = malloc((size_t)size + 64);
    /* frame: 48 fixed + 2 x 16 table = 80, packed 40 -> 120, regions at 120 and 120 + 8192 */
    CHECK(size == 80 + 40 + 2 * 8192);

#define MUTATE(stmt, want, what)                                                                   \
    do {                                                                                           \
        memcpy(w, good, (size_t)size);                                                             \
        stmt;                                                                                      \
        expect_bad(w, size, want, what);                                                           \
    } while (0)

    MUTATE(w[0] = 'X', CDT_ERR_FRAME_MAGIC, "bad magic");
    MUTATE(w[4] = 2, CDT_ERR_FRAME_VERSION, "unknown version");
    MUTATE(w[6] = 0x4, CDT_ERR_FRAME_VERSION, "unknown flag");
    MUTATE(w[6] = 0x1, CDT_ERR_BYTE_ORDER, "other byte order");
    MUTATE(put64(w + 8, 96), CDT_ERR_FRAME_MALFORMED, "header size disagrees with region count");
    MUTATE(put64(w + 24, UINT64_MAX / 8), CDT_ERR_FRAME_MALFORMED, "region count overflows");
    MUTATE((put64(w + 24, (uint64_t)1 << 59), put64(w + 8, 48 + ((uint64_t)1 << 63))),
           CDT_ERR_FRAME_MALFORMED, "huge region table");
    MUTATE(put64(w + 24, 1000), CDT_ERR_FRAME_MALFORMED, "region count beyond message");
    MUTATE(put64(w + 16, UINT64_MAX), CDT_ERR_FRAME_MALFORMED, "packed size overflows");
    MUTATE(put64(w + 16, 41), CDT_ERR_FRAME_MALFORMED, "packed size does not add up");
    MUTATE(put64(w + 32, (uint64_t)size + 8), CDT_ERR_FRAME_MALFORMED, "frame size beyond regions");
    MUTATE(put64(w + 32, (uint64_t)size - 8), CDT_ERR_FRAME_MALFORMED, "frame size too small");
    MUTATE(w[40] = 1, CDT_ERR_FRAME_MALFORMED, "reserved field set");
    MUTATE(put64(w + 48, UINT64_MAX), CDT_ERR_FRAME_MALFORMED, "region length overflows");
    MUTATE(put64(w + 48, (uint64_t)INT64_MAX - 4), CDT_ERR_FRAME_MALFORMED,
           "region length past end");
    MUTATE(put64(w + 48, 8196), CDT_ERR_FRAME_MALFORMED, "region lengths do not add up");
    MUTATE(put64(w + 48, 8190), CDT_ERR_FRAME_MALFORMED, "length not a multiple of the kind");
    MUTATE(w[56] = 99, CDT_ERR_FRAME_MALFORMED, "unknown element kind");
    MUTATE(w[56] = 0, CDT_ERR_FRAME_MALFORMED, "element kind zero");
    MUTATE(w[60] = 1, CDT_ERR_FRAME_MALFORMED, "region reserved field set");
    /* consistent header, but lengths the receiving type disagrees with */
    MUTATE((put64(w + 48, 8184), put64(w + 64, 8200)), CDT_ERR_FRAME_MISMATCH,
           "region length differs from receiver's");

    /* truncated at every byte */
    int all = 1;
    for (cdt_count len = 0; len < size; len++) {
        unsigned char *t = malloc(len ? (size_t)len : 1); /* exact size: ASan sees over-reads */
        memcpy(t, good, (size_t)len);
        struct_vec *dst = calloc(2, sizeof(*dst));
        int rc = cdt_frame_decode(t, len, dst, 2, struct_vec_type());
        all &= rc == CDT_ERR_FRAME_TRUNCATED;
        free(dst);
        free(t);
    }
    CHECK(all);
    /* trailing bytes are not silently ignored */
    memcpy(w, good, (size_t)size);
    expect_bad(w, size + 8, CDT_ERR_FRAME_MALFORMED, "trailing bytes");

    /* streaming: nonzero padding, header bytes changed after create, overlap, out of range */
    double_vec dv, dv2 = {0};
    CHECK_OK(double_vec_init(&dv, 3, 1, 0)); /* 4-byte arrays: padding after each */
    cdt_count dsize;
    unsigned char *dw = encode(&dv, 1, double_vec_type(), &dsize);
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(dw, dsize, &d));
    CHECK_RC(cdt_decoder_write(d, 0, dw, 8), CDT_ERR_ORDER); /* before bind */
    CHECK_OK(cdt_decoder_bind(d, &dv2, 1, double_vec_type()));
    CHECK_RC(cdt_decoder_bind(d, &dv2, 1, double_vec_type()), CDT_ERR_ORDER);
    unsigned char other = dw[10] ^ 1;
    CHECK_RC(cdt_decoder_write(d, 10, &other, 1), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_write(d, 10, dw + 10, 1)); /* the refused byte was not recorded */
    CHECK_RC(cdt_decoder_write(d, 10, dw + 10, 1), CDT_ERR_FRAME_MALFORMED); /* overlap */
    CHECK_RC(cdt_decoder_write(d, dsize - 2, dw, 4), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_free(d));
    double_vec_clear(&dv2);
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    CHECK_OK(cdt_decoder_create(dw, dsize, &d));
    CHECK_OK(cdt_decoder_info(d, &info));
    CHECK_OK(cdt_decoder_bind(d, &dv2, 1, double_vec_type()));
    CHECK_OK(cdt_decoder_write(d, 0, dw, info.header_size + info.packed_size));
    cdt_count r0, r0off;
    CHECK_OK(cdt_decoder_region_info(d, 0, &r0, NULL, &r0off));
    unsigned char pad[4] = {0, 0, 1, 0};
    CHECK_RC(cdt_decoder_write(d, r0off + r0, pad, 4), CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt_decoder_finish(d), CDT_ERR_INCOMPLETE);
    CHECK_OK(cdt_decoder_free(d));
    double_vec_clear(&dv2);
    /* a hostile packed stream: the object's own unpack refuses an absurd array count */
    unsigned char *hw = malloc((size_t)dsize);
    memcpy(hw, dw, (size_t)dsize);
    CHECK_OK(cdt_frame_header_size(hw, dsize, &info.header_size));
    put64(hw + info.header_size, (uint64_t)1 << 40);
    CHECK_RC(cdt_frame_decode(hw, dsize, &dv2, 1, double_vec_type()), CDT_ERR_TRUNCATED);
    double_vec_clear(&dv2);
    free(hw);
    free(dw);
    double_vec_clear(&dv);

    /* argument errors */
    cdt_count hs;
    CHECK_RC(cdt_frame_header_size(good, 47, &hs), CDT_ERR_FRAME_TRUNCATED);
    CHECK_OK(cdt_frame_header_size(good, 48, &hs));
    CHECK(hs == 80);
    CHECK_RC(cdt_decoder_create(good, 79, &d), CDT_ERR_FRAME_TRUNCATED);
    CHECK_RC(cdt_frame_decode(NULL, 10, sv, 2, struct_vec_type()), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_frame_encode(sv, 2, struct_vec_type(), NULL, NULL), CDT_ERR_INVALID_ARG);
    CHECK_OK(cdt_frame_free(NULL));
    CHECK_OK(cdt_decoder_free(NULL));
    free(w);
    free(good);
    free(sv);
}

/* gather of any byte range equals that slice of the whole frame: ranges that start and end in
 * the head, in padding, inside regions and across many of them (odd lengths force padding) */
static void test_gather_ranges(void)
{
    double_vec v;
    CHECK_OK(double_vec_init(&v, 37, 3, 5));
    v.lens[4] = 0; /* an empty region too */
    cdt_frame f;
    CHECK_OK(cdt_frame_encode(&v, 1, double_vec_type(), NULL, &f));
    cdt_count size;
    CHECK_OK(cdt_frame_size(f, &size));
    unsigned char *whole = malloc((size_t)size), *part = malloc((size_t)size);
    CHECK_OK(cdt_frame_gather(f, 0, whole, size));
    int bad = 0;
    for (cdt_count off = 0; off <= size; off += 3)
        for (cdt_count len = 0; off + len <= size; len += 1 + len / 2) {
            memset(part, 0xa5, (size_t)size);
            CHECK_OK(cdt_frame_gather(f, off, part, len));
            bad |= len > 0 && memcmp(part, whole + off, (size_t)len) != 0;
            bad |= len < size && part[len] != 0xa5; /* nothing past len is written */
        }
    CHECK(!bad);
    CHECK(cdt_frame_gather(f, size - 1, part, 2) == CDT_ERR_INVALID_ARG);
    free(whole);
    free(part);
    cdt_frame_free(f);
    v.lens[4] = 3;
    double_vec_clear(&v);
}

/* frame heads from the caller's allocator: used for heads past the inline storage, given
 * back at free with the same size; a half-set allocator is an argument error */
static int head_allocs, head_releases;
static void *head_alloc(void *arg, size_t bytes)
{
    (void)arg;
    head_allocs++;
    return malloc(bytes);
}
static void head_release(void *arg, void *p, size_t bytes)
{
    (void)arg;
    (void)bytes;
    head_releases++;
    free(p);
}

static void test_head_allocator(void)
{
    static struct_simple objs[100];
    struct_simple_fill(objs, 100, 3);
    cdt_frame f = NULL;
    cdt_frame_params bad = {.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR, .head_alloc = head_alloc};
    CHECK_RC(cdt_frame_encode(objs, 100, struct_simple_type(), &bad, &f), CDT_ERR_INVALID_ARG);
    CHECK(f == NULL && head_allocs == 0);
    cdt_frame_params good = {.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR,
                             .head_alloc = head_alloc,
                             .head_release = head_release};
    CHECK_OK(cdt_frame_encode(objs, 100, struct_simple_type(), &good, &f));
    CHECK(head_allocs == 1 && head_releases == 0);
    cdt_count size;
    CHECK_OK(cdt_frame_size(f, &size));
    unsigned char *wire = malloc((size_t)size);
    CHECK_OK(cdt_frame_gather(f, 0, wire, size));
    CHECK_OK(cdt_frame_free(f));
    CHECK(head_releases == 1);
    static struct_simple back[100];
    CHECK_OK(cdt_frame_decode(wire, size, back, 100, struct_simple_type()));
    CHECK(struct_simple_equal(objs, back, 100));
    free(wire);
}

/* Region bytes before the packed stream, for a custom receiver (regression: they were
 * refused with CDT_ERR_ORDER but recorded as arrived, a second try was an overlap, and finish
 * reported success although the buffer never received them). */
static void test_region_before_head(void)
{
    char inband[] = "stream";
    unsigned char arr[4096];
    for (int i = 0; i < 4096; i++)
        arr[i] = (unsigned char)(i * 7 + 1);
    cdt_sobj_buffer bufs[1] = {{arr, sizeof(arr), CDT_KIND_BYTE}};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 1};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
    cdt_sobj in = {0};
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    CHECK_OK(cdt_decoder_info(d, &info));
    cdt_count head = info.header_size + info.packed_size;
    CHECK_OK(cdt_sobj_recv_prepare(&in, d));
    CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, head, wire + head, size - head)); /* padding + region first */
    CHECK_RC(cdt_decoder_finish(d), CDT_ERR_INCOMPLETE);
    CHECK_OK(cdt_decoder_write(d, 0, wire, head));
    CHECK_RC(cdt_decoder_write(d, head, wire + head, size - head), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in.buffers[0].base, arr, sizeof(arr)) == 0);
    CHECK(memcmp(in.inband, inband, sizeof(inband)) == 0);
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in);

    /* a write that fails is not recorded: finish does not report it as arrived */
    cdt_sobj in2 = {0};
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_OK(cdt_sobj_recv_prepare(&in2, d));
    CHECK_OK(cdt_decoder_bind(d, &in2, 1, cdt_sobj_type()));
    unsigned char bad[70]; /* the header and the first stream bytes */
    memcpy(bad, wire, sizeof(bad));
    bad[0] ^= 1; /* header bytes must equal the header given at create */
    CHECK_RC(cdt_decoder_write(d, 0, bad, sizeof(bad)), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_write(d, sizeof(bad), wire + sizeof(bad), size - sizeof(bad)));
    CHECK_RC(cdt_decoder_finish(d), CDT_ERR_INCOMPLETE);
    CHECK_OK(cdt_decoder_write(d, 0, wire, sizeof(bad))); /* the right bytes, again */
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in2.buffers[0].base, arr, sizeof(arr)) == 0);
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in2);

    /* region bytes held, then the decoder freed before the stream came: nothing leaks */
    cdt_sobj in3 = {0};
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_OK(cdt_sobj_recv_prepare(&in3, d));
    CHECK_OK(cdt_decoder_bind(d, &in3, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, size - 100, wire + size - 100, 100));
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in3);
    free(wire);
}

/* The output and adapter structs that can grow: cdt_frame_info fills only the fields its
 * field_mask asks for and refuses a mask of 0 or with unknown bits; cdt_sobj refuses caller
 * bits it does not know, keeps the caller's bits across prepare and release, and reads the
 * allocator hook only when its bit is set. */
static void test_growable_structs(void)
{
    char inband[] = "stream";
    int32_t arr[64] = {1, 2, 3};
    cdt_sobj_buffer buf = {arr, sizeof(arr), CDT_KIND_INT32};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = &buf, .nbuffers = 1};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));

    cdt_frame_info info;
    memset(&info, 0x5a, sizeof info);
    info.field_mask = CDT_FRAME_INFO_PACKED_SIZE | CDT_FRAME_INFO_REGION_COUNT;
    CHECK_OK(cdt_decoder_info(d, &info));
    CHECK(info.packed_size == (cdt_count)sizeof(inband) && info.region_count == 1);
    cdt_frame_info untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    CHECK(info.version == untouched.version && info.flags == untouched.flags &&
          info.header_size == untouched.header_size && info.frame_size == untouched.frame_size &&
          info.region_bytes == untouched.region_bytes);
    info.field_mask = 0;
    CHECK_RC(cdt_decoder_info(d, &info), CDT_ERR_INVALID_ARG);
    info.field_mask = CDT_FRAME_INFO_ALL | (CDT_FRAME_INFO_ALL + 1);
    CHECK_RC(cdt_decoder_info(d, &info), CDT_ERR_INVALID_ARG);
    info.field_mask = CDT_FRAME_INFO_ALL;
    CHECK_OK(cdt_decoder_info(d, &info));
    CHECK(info.frame_size == size && info.region_bytes == (cdt_count)sizeof(arr));

    /* params with a field of a later library are refused */
    cdt_decoder d2 = NULL;
    cdt_decoder_params dp = {.field_mask = UINT64_C(1) << 40};
    CHECK_RC(cdt_decoder_create_advanced(wire, size, &dp, &d2), CDT_ERR_INVALID_ARG);
    CHECK(d2 == NULL);
    cdt_frame_params fp = {.field_mask = UINT64_C(1) << 40};
    cdt_frame f2 = NULL;
    CHECK_RC(cdt_frame_encode(&out, 1, cdt_sobj_type(), &fp, &f2), CDT_ERR_INVALID_ARG);
    CHECK(f2 == NULL);

    /* an unknown caller bit: refused on receive and on send */
    cdt_sobj in = {.field_mask = CDT_SOBJ_FIELD_ALLOC << 1};
    CHECK_RC(cdt_sobj_recv_prepare(&in, d), CDT_ERR_INVALID_ARG);
    CHECK(in.buffers == NULL && in.inband == NULL);
    cdt_sobj bad = out;
    bad.field_mask = CDT_SOBJ_FIELD_ALLOC << 5;
    cdt_frame frame = NULL;
    CHECK_RC(cdt_frame_encode(&bad, 1, cdt_sobj_type(), NULL, &frame), CDT_ERR_INVALID_ARG);
    CHECK(frame == NULL);
    /* a hook that is set but whose bit is not: the library's own block (the hook is never
     * called: it would crash) */
    in = (cdt_sobj){.alloc = (cdt_sobj_alloc_func_t *)(uintptr_t)1};
    CHECK_OK(cdt_sobj_recv_prepare(&in, d));
    CHECK(in.field_mask >= CDT_SOBJ_FIELD_LIBRARY_ && in.nbuffers == 1);
    CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, 0, wire, size));
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in.buffers[0].base, arr, sizeof(arr)) == 0);
    cdt_sobj_release(&in);
    CHECK(in.field_mask == 0 && in.buffers == NULL && in.inband == NULL);
    cdt_sobj_release(&in); /* twice: nothing left to free */
    CHECK_OK(cdt_decoder_free(d));
    free(wire);
}

int main(void)
{
    test_seed_roundtrips();
    test_layout_frames();
    test_plain_frames_match_decoder();
    test_strided_regions();
    test_region_iov_windows();
    test_sobj();
    test_growable_structs();
    test_region_before_head();
    test_empty_regions();
    test_gather_ranges();
    test_head_allocator();
    test_malformed();
    return check_report("test_frame");
}
