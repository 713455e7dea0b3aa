/*
 * frame_roundtrips.c - round trips of frames: the seed objects, predefined layouts (large
 * contiguous ones as zero-copy regions), the one-call decode against the decoder for every
 * sender and receiver pair, gather of any byte range.
 */
#include "test_frame.h"

void test_seed_roundtrips(void)
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
    /* receiving into fewer elements: the header's object count differs from the receiver's */
    CHECK_RC(cdt_frame_decode(wire, size, sv2, N - 1, struct_vec_type()), CDT_ERR_FRAME_MISMATCH);
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
void test_layout_frames(void)
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
void test_plain_frames_match_decoder(void)
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

/* gather of any byte range equals that slice of the whole frame: ranges that start and end in
 * the head, in padding, inside regions and across many of them (odd lengths force padding) */
void test_gather_ranges(void)
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
