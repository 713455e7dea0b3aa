/*
 * test_lane_cursor.c - the cursor that maps an object's lane stream onto its frame
 * (cdt__ucx_lane_seek, docs/TRANSPORT.md §10.3): objects with many small regions of random
 * lengths (empty ones, odd int32 counts that leave padding before the next region, regions at
 * the zero-copy threshold that leave the stream, a packed stream that ends aligned or not)
 * are put into a stream the way the lane's pack callback does (seek + cdt_frame_gather) and
 * taken out of it the way its unpack callback does (seek + cdt_decoder_write), each in random
 * fragment sizes. The stream must be the header, the packed stream and the inline regions in
 * their order, byte for byte, and the object must arrive equal. The sender's and receiver's
 * calls per fragment are counted: regions that follow each other in the frame without a gap
 * are one run, so an object of 1,024 regions of 1 KiB takes one gather per fragment, not one
 * per region.
 */
#include "../core/check.h"
#include "frame/frame_format.h"
#include "seed_types.h"
#include "ucx/ucx_internal.h"

#include <stdint.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* a fragment size: mostly small (many region boundaries inside one), sometimes large */
static size_t frag_size(void)
{
    switch (next_rand() % 4) {
    case 0:
        return 1 + next_rand() % 16;
    case 1:
        return 1 + next_rand() % 1500;
    case 2:
        return 4096;
    default:
        return 1 + next_rand() % 70000;
    }
}

/* an object of n arrays whose lengths (int32 elements) are drawn from the boundary cases
 * around `threshold` bytes */
static void make_object(double_vec *v, cdt_count n, cdt_count threshold, cdt_count fixed_len)
{
    v->n = n;
    v->lens = calloc(n ? (size_t)n : 1, sizeof(cdt_count));
    v->data = calloc(n ? (size_t)n : 1, sizeof(int32_t *));
    CHECK(v->lens != NULL && v->data != NULL);
    const cdt_count t4 = threshold / 4;
    const cdt_count pick[] = {0, 1, 2, 3, 7, 8, 255, 256, t4 - 1, t4, t4 + 1};
    for (cdt_count i = 0; i < n; i++) {
        cdt_count len = fixed_len >= 0 ? fixed_len : pick[next_rand() % 11];
        if (len < 0 || len > 70000)
            len = 5;
        v->lens[i] = len;
        v->data[i] = malloc(len ? (size_t)len * 4 : 1);
        CHECK(v->data[i] != NULL);
        for (cdt_count k = 0; k < len; k++)
            v->data[i][k] = (int32_t)(next_rand() & 0x7fffffff);
    }
}

typedef struct stats {
    long sender_calls, receiver_calls, fragments;
} stats;

/* a request as the transport fills it for one object through the lane, its cursor at the
 * stream's start (the sender's and the receiver's alike) */
static struct cdt_ucx_request_s *lane_request(cdt_count threshold, cdt_count header,
                                              cdt_count packed, cdt_count base)
{
    struct cdt_ucx_request_s *r = calloc(1, sizeof(*r));
    CHECK(r != NULL);
    r->threshold = threshold;
    r->lane_header = header;
    r->lane_packed = packed;
    r->lane_base = base;
    cdt__ucx_lane_cursor_init(r, header, packed);
    return r;
}

/* one object through the cursor both ways; header_in_lane: the stream starts after the fixed
 * header (HEADER), else after the whole header */
static void one_object(const double_vec *v, cdt_count threshold, int header_in_lane, stats *st)
{
    /* the reference: the whole frame, and the stream cut out of it */
    cdt_frame whole;
    CHECK_RC(cdt_frame_encode(v, 1, double_vec_type(), NULL, &whole), CDT_SUCCESS);
    cdt_count fsize = 0, n = 0;
    cdt_frame_size(whole, &fsize);
    cdt_frame_region_count(whole, &n);
    unsigned char *frame = malloc((size_t)fsize + 1), *expect = malloc((size_t)fsize + 1);
    CHECK(frame != NULL && expect != NULL);
    CHECK_RC(cdt_frame_gather(whole, 0, frame, fsize), CDT_SUCCESS);
    const cdt_count header = CDT_FRAME_FIXED_HEADER_SIZE + n * CDT_FRAME_REGION_ENTRY_SIZE;
    const cdt_count packed = (cdt_count)cdt__get_u64(frame + CDT__OFF_PACKED_SIZE);
    cdt_count elen = header + packed;
    memcpy(expect, frame, (size_t)elen);
    for (cdt_count i = 0; i < n; i++) {
        cdt_count len, off;
        cdt_frame_region_info(whole, i, &len, NULL, &off);
        if (len > 0 && !cdt__ucx_separate(len, threshold, i)) {
            memcpy(expect + elen, frame + off, (size_t)len);
            elen += len;
        }
    }
    const cdt_count base = header_in_lane ? CDT_FRAME_FIXED_HEADER_SIZE : header;
    const size_t slen = (size_t)(elen - base);

    /* the sender: a deferred frame, packed as the lane's pack callback does */
    cdt_frame f;
    CHECK_RC(cdt__frame_encode_deferred(v, 1, double_vec_type(), NULL, &f), CDT_SUCCESS);
    struct cdt_ucx_request_s *r = lane_request(threshold, header, packed, base);
    unsigned char *stream = malloc(slen + 1);
    CHECK(stream != NULL);
    int failed = 0;
    for (size_t off = 0; off < slen && !failed;) {
        size_t frag = frag_size(), filled = 0;
        if (frag > slen - off)
            frag = slen - off;
        st->fragments++;
        while (filled < frag && !failed) {
            cdt_count foff = 0, avail = 0;
            int rc =
                cdt__ucx_lane_seek(r, f, NULL, base + (cdt_count)(off + filled), &foff, &avail);
            size_t k = frag - filled;
            if (rc == CDT_SUCCESS && avail <= 0)
                rc = CDT_ERR_CALLBACK;
            if (rc == CDT_SUCCESS && (uint64_t)avail < k)
                k = (size_t)avail;
            if (rc == CDT_SUCCESS)
                rc = cdt_frame_gather(f, foff, stream + off + filled, (cdt_count)k);
            CHECK_RC(rc, CDT_SUCCESS);
            failed = rc != CDT_SUCCESS;
            filled += k;
            st->sender_calls++;
        }
        off += frag;
    }
    CHECK(!failed && memcmp(stream, expect + base, slen) == 0);

    /* the receiver: a decoder of the header (the transport makes it from the head, or from
     * the header's bytes once they came through the lane), fed as the unpack callback does */
    cdt_decoder d;
    CHECK_RC(cdt_decoder_create(expect, header, &d), CDT_SUCCESS);
    double_vec got = {0};
    CHECK_RC(cdt_decoder_bind(d, &got, 1, double_vec_type()), CDT_SUCCESS);
    struct cdt_ucx_request_s *q = lane_request(threshold, header, packed, base);
    failed = 0;
    for (size_t off = 0; off < slen && !failed;) {
        size_t frag = frag_size();
        if (frag > slen - off)
            frag = slen - off;
        const unsigned char *src = stream + off;
        cdt_count s = base + (cdt_count)off;
        size_t left = frag;
        if (s < header) { /* the header's bytes: the transport copies them aside */
            size_t h = (size_t)(header - s) < left ? (size_t)(header - s) : left;
            src += h;
            s += (cdt_count)h;
            left -= h;
        }
        while (left > 0 && !failed) {
            cdt_count foff = 0, avail = 0;
            int rc = cdt__ucx_lane_seek(q, NULL, d, s, &foff, &avail);
            size_t k = left;
            if (rc == CDT_SUCCESS && avail <= 0)
                rc = CDT_ERR_CALLBACK;
            if (rc == CDT_SUCCESS && (uint64_t)avail < k)
                k = (size_t)avail;
            if (rc == CDT_SUCCESS)
                rc = cdt_decoder_write(d, foff, src, (cdt_count)k);
            CHECK_RC(rc, CDT_SUCCESS);
            failed = rc != CDT_SUCCESS;
            src += k;
            s += (cdt_count)k;
            left -= k;
            st->receiver_calls++;
        }
        off += frag;
    }
    /* a byte past the stream's end is no region's: the cursor says so */
    cdt_count foff, avail;
    if (!failed)
        CHECK_RC(cdt__ucx_lane_seek(q, NULL, d, elen, &foff, &avail), CDT_ERR_FRAME_MALFORMED);
    /* the large regions, as their own messages would bring them */
    for (cdt_count i = 0; i < n && !failed; i++) {
        if (!cdt__ucx_separate(v->lens[i] * 4, threshold, i))
            continue;
        cdt_iov iov;
        cdt_count pieces = 0;
        CHECK_RC(cdt_decoder_region_iov(d, i, 0, 1, &iov, &pieces), CDT_SUCCESS);
        CHECK(pieces == 1 && iov.len == v->lens[i] * 4);
        if (pieces == 1 && iov.len == v->lens[i] * 4)
            memcpy(iov.base, v->data[i], (size_t)iov.len);
        CHECK_RC(cdt_decoder_region_done(d, i), CDT_SUCCESS);
    }
    if (!failed) {
        CHECK_RC(cdt_decoder_finish(d), CDT_SUCCESS);
        CHECK(double_vec_equal(&got, v));
    }
    cdt_decoder_free(d);
    double_vec_clear(&got);
    cdt_frame_free(f);
    cdt_frame_free(whole);
    free(q);
    free(r);
    free(stream);
    free(frame);
    free(expect);
}

/* random region tables at the boundary cases, random fragments, both header modes */
static void case_random(void)
{
    const cdt_count counts[] = {0, 1, 2, 3, 5, 17, 64, 300, 2100};
    const cdt_count thresholds[] = {64, 1024, 65536};
    stats st = {0};
    for (int round = 0; round < 120; round++) {
        double_vec v;
        cdt_count th = thresholds[next_rand() % 3];
        make_object(&v, counts[next_rand() % 9], th, -1);
        one_object(&v, th, (int)(next_rand() % 2), &st);
        double_vec_clear(&v);
    }
    printf("random: %ld fragments, %ld sender calls, %ld receiver calls\n", st.fragments,
           st.sender_calls, st.receiver_calls);
}

/* bench/transfer's double_vec_1k at 1 MiB: 1,024 regions of 1 KiB, each right after the one
 * before in the frame. The cursor makes them one run: per fragment of the stream the sender
 * gathers and the receiver writes a handful of times (a fragment that ends inside the header
 * or the packed stream starts a second), not once per region (more than 40 calls per fragment
 * of 64 KiB before) */
static void case_runs(void)
{
    double_vec v;
    make_object(&v, 1024, 65536, 256);
    stats st = {0};
    for (int round = 0; round < 4; round++)
        one_object(&v, 65536, round % 2, &st);
    printf("runs: %ld fragments, %ld sender calls, %ld receiver calls\n", st.fragments,
           st.sender_calls, st.receiver_calls);
    CHECK(st.sender_calls <= 3 * st.fragments);
    CHECK(st.receiver_calls <= 3 * st.fragments);
    double_vec_clear(&v);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "random") == 0)
        case_random();
    if (argc < 2 || strcmp(argv[1], "runs") == 0)
        case_runs();
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
