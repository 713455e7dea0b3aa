/*
 * frame_codec.c - test_frame's helpers: make an object's frame, receive it through a
 * decoder in random pieces or with its regions in place.
 */
#include "test_frame.h"

unsigned char *encode(const void *obj, cdt_count count, cdt_type type, cdt_count *size)
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
int decode_shuffled(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
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
int decode_in_place(const unsigned char *wire, cdt_count size, void *buf, cdt_count count,
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
