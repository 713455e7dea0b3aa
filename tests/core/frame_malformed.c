/*
 * frame_malformed.c - malformed frames: a table of mutated headers, truncation at
 * every byte, trailing bytes, streaming misuse, a hostile packed stream, argument errors;
 * each must give its error without crashing or reading past the input.
 */
#include "test_frame.h"

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

void test_malformed(void)
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
    MUTATE(w[6] = 0x3, CDT_ERR_BYTE_ORDER, "other byte order, with an object count");
    MUTATE(w[6] = 0x6, CDT_ERR_FRAME_VERSION, "unknown flag beside the object count");
    MUTATE(put64(w + 8, 96), CDT_ERR_FRAME_MALFORMED, "header size disagrees with region count");
    MUTATE(put64(w + 24, UINT64_MAX / 8), CDT_ERR_FRAME_MALFORMED, "region count overflows");
    MUTATE((put64(w + 24, (uint64_t)1 << 59), put64(w + 8, 48 + ((uint64_t)1 << 63))),
           CDT_ERR_FRAME_MALFORMED, "huge region table");
    MUTATE(put64(w + 24, 1000), CDT_ERR_FRAME_MALFORMED, "region count beyond message");
    MUTATE(put64(w + 16, UINT64_MAX), CDT_ERR_FRAME_MALFORMED, "packed size overflows");
    MUTATE(put64(w + 16, 41), CDT_ERR_FRAME_MALFORMED, "packed size does not add up");
    MUTATE(put64(w + 32, (uint64_t)size + 8), CDT_ERR_FRAME_MALFORMED, "frame size beyond regions");
    MUTATE(put64(w + 32, (uint64_t)size - 8), CDT_ERR_FRAME_MALFORMED, "frame size too small");
    MUTATE((w[6] = 0, w[40] = 1), CDT_ERR_FRAME_MALFORMED, "no object count, reserved field set");
    MUTATE(w[47] = 0x80, CDT_ERR_FRAME_MALFORMED, "object count above 2^63-1");
    MUTATE(put64(w + 40, UINT64_MAX), CDT_ERR_FRAME_MALFORMED, "object count overflows");
    /* consistent header, but an object count the receiver's (2) differs from */
    MUTATE(w[40] = 1, CDT_ERR_FRAME_MISMATCH, "object count below receiver's");
    MUTATE(w[40] = 3, CDT_ERR_FRAME_MISMATCH, "object count above receiver's");
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

/* ---- a frame of more objects than the receiver's count ---- */

/* the receive side of a type that writes nothing: how far the library lets its stream go */
static cdt_count seen_end;
static int seen_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state, (void)buf;
    *size = count * 20;
    return CDT_SUCCESS;
}
static int seen_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                     cdt_count dst_size, cdt_count *used)
{
    (void)state, (void)buf, (void)count, (void)offset, (void)dst;
    *used = dst_size;
    return CDT_SUCCESS;
}
static int seen_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                       cdt_count src_size)
{
    (void)state, (void)buf, (void)count, (void)src;
    if (offset + src_size > seen_end)
        seen_end = offset + src_size;
    return CDT_SUCCESS;
}

/* FORMAT.md §4: the header carries the sender's object count and the library refuses a custom
 * receiver whose count differs (CDT_ERR_FRAME_MISMATCH) before anything is written, so a frame of
 * 2 objects decoded with count 1 never reaches the unpack callback. A frame without the count
 * (an earlier writer's: flag clear, offset 40 zero) is read as before, and then cdt.h's unpack
 * contract holds: the stream's length comes from the frame, not from the receiver's count, so
 * the callback bounds it by its own count (the seed types do), and the library bounds it by the
 * header and compares the receiver's regions with the header's. */
/* cdt_decoder_info's object_count of a frame: what a receiver reads before it binds; -2 when
 * the header is refused */
static cdt_count frame_object_count(const unsigned char *wire, cdt_count size)
{
    cdt_decoder d;
    if (cdt_decoder_create(wire, size, &d) != CDT_SUCCESS)
        return -2;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_OBJECT_COUNT, .object_count = -3};
    int rc = cdt_decoder_info(d, &info);
    cdt_decoder_free(d);
    return rc == CDT_SUCCESS ? info.object_count : -2;
}

void test_count_mismatch(void)
{
    struct_simple two[2], into[2], zero;
    struct_simple_fill(two, 2, 7);
    memset(&zero, 0, sizeof(zero));
    cdt_count size;
    unsigned char *w = encode(two, 2, struct_simple_type(), &size);
    CHECK(w[6] == 0x2 && w[40] == 2);        /* OBJECT_COUNT set, object_count 2 */
    CHECK(frame_object_count(w, size) == 2); /* what a receiver reads before it binds */
    /* the count checked: one call, the decoder (pieces in any order), the bind itself */
    uint64_t seed = 38;
    memset(into, 0, sizeof(into));
    CHECK_RC(cdt_frame_decode(w, size, into, 1, struct_simple_type()), CDT_ERR_FRAME_MISMATCH);
    CHECK_RC(decode_shuffled(w, size, into, 1, struct_simple_type(), &seed),
             CDT_ERR_FRAME_MISMATCH);
    CHECK_RC(cdt_frame_decode(w, size, into, 3, struct_simple_type()), CDT_ERR_FRAME_MISMATCH);
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(w, size, &d));
    CHECK_RC(cdt_decoder_bind(d, into, 1, struct_simple_type()), CDT_ERR_FRAME_MISMATCH);
    CHECK_OK(cdt_decoder_bind(d, into, 2, struct_simple_type())); /* a refused bind binds nothing */
    CHECK_OK(cdt_decoder_write(d, 0, w, size));
    CHECK_OK(cdt_decoder_finish(d));
    CHECK_OK(cdt_decoder_free(d));
    CHECK(struct_simple_equal(two, into, 2));
    memset(into, 0, sizeof(into));
    /* nothing written, not even the receiver's one object */
    CHECK_RC(cdt_frame_decode(w, size, into, 1, struct_simple_type()), CDT_ERR_FRAME_MISMATCH);
    CHECK(memcmp(&into[0], &zero, sizeof(zero)) == 0 && memcmp(&into[1], &zero, sizeof(zero)) == 0);
    /* the library refuses before the callback runs: a callback without any bounds check sees
     * nothing */
    cdt_type seen;
    CHECK_OK(cdt_type_create_custom(NULL, NULL, seen_query, seen_pack, seen_unpack, NULL, NULL,
                                    NULL, 0, &seen));
    seen_end = 0;
    CHECK_RC(cdt_frame_decode(w, size, into, 1, seen), CDT_ERR_FRAME_MISMATCH);
    CHECK_RC(decode_shuffled(w, size, into, 1, seen, &seed), CDT_ERR_FRAME_MISMATCH);
    CHECK(seen_end == 0);
    /* a consistent header whose count is not the sender's is refused as well */
    w[40] = 1;
    CHECK_RC(cdt_frame_decode(w, size, into, 2, struct_simple_type()), CDT_ERR_FRAME_MISMATCH);
    CHECK_RC(decode_shuffled(w, size, into, 2, struct_simple_type(), &seed),
             CDT_ERR_FRAME_MISMATCH);
    /* a layout receiver takes any stream its buffer holds, as before: no count to match */
    unsigned char bytes[2 * 20 + 8];
    CHECK_OK(cdt_frame_decode(w, size, bytes, 40, cdt_type_predefined(CDT_KIND_BYTE)));
    CHECK_RC(cdt_frame_decode(w, size, bytes, 39, cdt_type_predefined(CDT_KIND_BYTE)),
             CDT_ERR_TRUNCATED);

    /* an earlier writer's frame: no count (flag clear, offset 40 zero) decodes as before */
    w[6] = 0, w[40] = 0;
    CHECK(frame_object_count(w, size) == -1); /* no count carried */
    memset(into, 0, sizeof(into));
    CHECK_OK(cdt_frame_decode(w, size, into, 2, struct_simple_type()));
    CHECK(struct_simple_equal(two, into, 2));
    CHECK_OK(decode_shuffled(w, size, into, 2, struct_simple_type(), &seed));
    /* ... with count 1 the seed type's own bounds check refuses it, nothing past count 1 */
    struct_simple guard;
    memset(into, 0, sizeof(into));
    memset(&into[1], 0xa5, sizeof(into[1]));
    guard = into[1];
    CHECK_RC(cdt_frame_decode(w, size, into, 1, struct_simple_type()), CDT_ERR_TRUNCATED);
    CHECK(memcmp(&into[1], &guard, sizeof(guard)) == 0);
    CHECK_RC(decode_shuffled(w, size, into, 1, struct_simple_type(), &seed), CDT_ERR_TRUNCATED);
    CHECK(memcmp(&into[1], &guard, sizeof(guard)) == 0);
    /* ... and the library never goes past the header's packed size (2 x 20 bytes) */
    seen_end = 0;
    CHECK_OK(cdt_frame_decode(w, size, into, 1, seen));
    CHECK(seen_end == 40);
    /* flag clear and offset 40 non-zero: not an earlier writer's frame */
    w[40] = 2;
    CHECK_RC(cdt_frame_decode(w, size, into, 2, struct_simple_type()), CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt_decoder_create(w, size, &d), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_type_free(&seen));
    free(w);

    /* a type with a region per object: the count is refused before the regions are compared */
    struct_vec *sv = calloc(2, sizeof(*sv)), *rv = calloc(2, sizeof(*rv));
    struct_vec_fill(sv, 2, 3);
    w = encode(sv, 2, struct_vec_type(), &size);
    CHECK_RC(cdt_frame_decode(w, size, rv, 1, struct_vec_type()), CDT_ERR_FRAME_MISMATCH);
    CHECK(rv[0].a == 0 && rv[0].data[0] == 0 && rv[1].a == 0 && rv[1].data[0] == 0);
    /* an earlier writer's frame: the receiver's region count differs from the header's */
    w[6] = 0, w[40] = 0;
    int rc = cdt_frame_decode(w, size, rv, 1, struct_vec_type());
    CHECK(rc == CDT_ERR_TRUNCATED || rc == CDT_ERR_FRAME_MISMATCH);
    CHECK(rv[1].a == 0 && rv[1].data[0] == 0 && rv[1].data[STRUCT_VEC_DATA_LEN - 1] == 0);
    free(w);
    free(sv);
    free(rv);
}
