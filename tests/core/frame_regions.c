/*
 * frame_regions.c - custom types' regions in frames: a strided region, a region whose runs
 * touch across elements (its iov in windows), empty regions and odd lengths.
 */
#include "test_frame.h"

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

void test_strided_regions(void)
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

void test_region_iov_windows(void)
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
void test_empty_regions(void)
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

/* cdt_decoder_finish with one region's bytes missing, in a frame with no padding (the arrived
 * bytes are two ranges around the hole) and in one with padding: each must be refused as
 * incomplete, and the whole frame accepted */
void test_finish_region_holes(void)
{
    char inband[8] = "abcdefgh";
    double v[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
    cdt_sobj_buffer bufs[4];
    for (int i = 0; i < 4; i++)
        bufs[i] = (cdt_sobj_buffer){v[i], sizeof(v[i]), CDT_KIND_DOUBLE};
    for (int padded = 0; padded < 2; padded++) {
        /* 48 + 4 x 16 = 112, packed 8 (or 5: padding to 120) -> regions at 120, 136, 152, 168 */
        cdt_sobj out = {
            .inband = inband, .inband_len = padded ? 5 : 8, .buffers = bufs, .nbuffers = 4};
        cdt_count size;
        unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
        CHECK(size == 184);
        for (int hole = -1; hole < 4; hole++) {
            cdt_sobj in = {0};
            cdt_decoder d;
            CHECK_OK(cdt_decoder_create(wire, size, &d));
            CHECK_OK(cdt_sobj_recv_prepare(&in, d));
            CHECK_OK(cdt_decoder_free(d));
            CHECK_OK(cdt_decoder_create(wire, size, &d));
            CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
            cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
            CHECK_OK(cdt_decoder_info(d, &info));
            cdt_count from = info.header_size, off = 0, len = 0;
            if (hole >= 0)
                CHECK_OK(cdt_decoder_region_info(d, hole, &len, NULL, &off));
            /* the packed stream, and the regions up to the hole in one write, the rest in
             * another; padding is never written, as a transport does not */
            cdt_count stream_end = info.header_size + info.packed_size;
            CHECK_OK(cdt_decoder_write(d, from, wire + from, stream_end - from));
            cdt_count r0 = 120, cut = hole >= 0 ? off : size;
            if (cut > r0)
                CHECK_OK(cdt_decoder_write(d, r0, wire + r0, cut - r0));
            if (hole >= 0 && off + len < size)
                CHECK_OK(cdt_decoder_write(d, off + len, wire + off + len, size - off - len));
            if (!padded && hole < 0)
                CHECK(stream_end == r0); /* the first case's bytes are one range */
            CHECK_RC(cdt_decoder_finish(d), hole >= 0 ? CDT_ERR_INCOMPLETE : CDT_SUCCESS);
            CHECK_OK(cdt_decoder_free(d));
            cdt_sobj_release(&in);
        }
        free(wire);
    }
}

/* A custom type whose region table is given per test (mixed_table): arrays of int16, int32 and
 * double of any length (odd byte counts leave padding after them, empty ones none), and
 * strided regions (every other int32) between them. Its packed stream is the region count. */
enum { MIXED_MAX = 300, MIXED_ELEMS = 40 };
typedef struct mixed_obj {
    cdt_count n;
    int kind[MIXED_MAX]; /* 0 int16, 1 int32, 2 double, 3 strided int32 */
    cdt_count len[MIXED_MAX];
    double data[MIXED_MAX][2 * MIXED_ELEMS]; /* room for 2 x 40 int32 or 40 doubles */
} mixed_obj;
static cdt_type mixed_strided; /* MIXED_ELEMS blocks of one int32, stride 2 */

static int mixed_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state;
    (void)buf;
    *size = 8 * count;
    return CDT_SUCCESS;
}
static int mixed_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                      cdt_count dst_size, cdt_count *used)
{
    (void)state;
    (void)count;
    const mixed_obj *o = buf;
    cdt_count n = 8 - offset < dst_size ? 8 - offset : dst_size;
    memcpy(dst, (const unsigned char *)&o->n + offset, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}
static int mixed_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                        cdt_count src_size)
{
    (void)state;
    (void)count;
    mixed_obj *o = buf;
    memcpy((unsigned char *)&o->n + offset, src, (size_t)src_size);
    return CDT_SUCCESS;
}
static int mixed_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    (void)count;
    *n = ((const mixed_obj *)buf)->n;
    return CDT_SUCCESS;
}
static int mixed_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                         cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    mixed_obj *o = buf;
    for (cdt_count i = 0; i < n; i++) {
        int k = o->kind[i];
        bases[i] = o->data[i];
        lens[i] = k == 3 ? 1 : o->len[i];
        types[i] = k == 0 ? CDT_INT16 : k == 1 ? CDT_INT32 : k == 2 ? CDT_DOUBLE : mixed_strided;
    }
    return CDT_SUCCESS;
}

/* A frame of many small regions - runs of arrays without padding, arrays whose odd length
 * leaves padding, empty arrays, strided regions between them - written to a decoder in order
 * in pieces of random size (1 byte to several regions, the cuts anywhere), then in random
 * order, and decoded in one call: every array arrives whole in its own memory, the strided
 * regions' gaps stay untouched, nothing lands in the next region or in padding. The receiver
 * copies a piece that spans many regions one region after another (frame_decode.c's copy_run):
 * a run that went on across padding, or took a strided region as one block, fails this. */
void test_region_runs(void)
{
    CHECK_OK(cdt_type_vector(MIXED_ELEMS, 1, 2, CDT_INT32, &mixed_strided));
    CHECK_OK(cdt_type_commit(&mixed_strided));
    cdt_type t;
    CHECK_OK(cdt_type_create_custom(NULL, NULL, mixed_query, mixed_pack, mixed_unpack,
                                    mixed_region_count, mixed_regions, NULL, 0, &t));
    static mixed_obj in, out;
    uint64_t seed = 35;
    for (int round = 0; round < 40; round++) {
        memset(&in, 0, sizeof(in));
        in.n = 1 + (cdt_count)(check_rand(&seed) % MIXED_MAX);
        /* half the rounds all int32 or double arrays (long runs), half mixed */
        for (cdt_count i = 0; i < in.n; i++) {
            uint64_t r = check_rand(&seed);
            in.kind[i] = round % 2 == 0 ? 1 + (int)(r % 2) : (int)(r % 4);
            in.len[i] = (cdt_count)((r >> 8) % (MIXED_ELEMS + 1));
            if ((r >> 20) % 8 == 0)
                in.len[i] = 0;
            unsigned char *b = (unsigned char *)in.data[i];
            for (size_t k = 0; k < sizeof(in.data[i]); k++)
                b[k] = (unsigned char)(1 + (i * 7 + k * 13 + (size_t)round) % 251);
        }
        cdt_count size;
        unsigned char *wire = encode(&in, 1, t, &size);
        for (int mode = 0; mode < 3 && wire != NULL; mode++) {
            memset(&out, 0, sizeof(out));
            memcpy(out.kind, in.kind, sizeof(in.kind)); /* where each region goes */
            memcpy(out.len, in.len, sizeof(in.len));
            int rc;
            if (mode == 0) { /* in order, random pieces */
                cdt_decoder d;
                CHECK_OK(cdt_decoder_create(wire, size, &d));
                rc = cdt_decoder_bind(d, &out, 1, t);
                for (cdt_count off = 0; off < size && rc == CDT_SUCCESS;) {
                    cdt_count max = check_rand(&seed) % 4 == 0 ? 16 : 4096;
                    cdt_count n = 1 + (cdt_count)(check_rand(&seed) % (uint64_t)max);
                    n = n < size - off ? n : size - off;
                    rc = cdt_decoder_write(d, off, wire + off, n);
                    off += n;
                }
                if (rc == CDT_SUCCESS)
                    rc = cdt_decoder_finish(d);
                CHECK_OK(cdt_decoder_free(d));
            } else {
                rc = mode == 1 ? decode_shuffled(wire, size, &out, 1, t, &seed)
                               : cdt_frame_decode(wire, size, &out, 1, t);
            }
            CHECK_OK(rc);
            CHECK(out.n == in.n);
            int same = 1;
            for (cdt_count i = 0; i < in.n; i++) {
                static const size_t esize[4] = {2, 4, 8, 4};
                size_t bytes = (size_t)in.len[i] * esize[in.kind[i]];
                const unsigned char *a = (const unsigned char *)in.data[i];
                const unsigned char *b = (const unsigned char *)out.data[i];
                if (in.kind[i] == 3) { /* every other int32 arrived, the others are 0 */
                    for (int e = 0; e < 2 * MIXED_ELEMS; e++) {
                        int32_t x, y;
                        memcpy(&x, a + 4 * e, 4);
                        memcpy(&y, b + 4 * e, 4);
                        same &= y == (e % 2 == 0 ? x : 0);
                    }
                    continue;
                }
                same &= memcmp(a, b, bytes) == 0; /* the array, and nothing after it */
                for (size_t k = bytes; k < sizeof(out.data[i]); k++)
                    same &= b[k] == 0;
            }
            CHECK(same);
        }
        free(wire);
    }
    CHECK_OK(cdt_type_free(&t));
    CHECK_OK(cdt_type_free(&mixed_strided));
}
