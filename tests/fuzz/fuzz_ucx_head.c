/*
 * fuzz_ucx_head.c - libFuzzer target: arbitrary bytes as a received UCX head message (transport
 * prefix + start of the inline stream), parsed as the receive path parses it
 * (cdt__ucx_parse_head, libcdt/src/ucx/ucx_head.c) under several receiver limits, then, for a head
 * that carries its whole inline stream, decoded as the receive path decodes it
 * (cdt_decoder_create_advanced with the same limits). Any crash, over-read or undefined
 * behaviour is a bug, and so is a parsed head that breaks the parser's promises (checked
 * below).
 */
#include "frame/frame_format.h"
#include "ucx/ucx_head.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static void one(const uint8_t *data, size_t size, const cdt__ucx_limits *lim)
{
    cdt__ucx_head h;
    int rc = cdt__ucx_parse_head(data, size, lim, &h);
    if (size > CDT__UCX_HEAD_MAX) {
        check(rc == CDT_ERR_INVALID_ARG);
        return;
    }
    if (rc != CDT_SUCCESS)
        return;
    /* a LANE head: its 16 bytes after the prefix, then the whole fixed header, no tail, and a
     * stream length between its part and the frame's size (checked below) */
    const size_t ext = h.lane ? CDT__UCX_LANE_EXT_SIZE : 0;
    check(size >= CDT__UCX_PREFIX_SIZE + ext);
    check(h.part == data + CDT__UCX_PREFIX_SIZE + ext);
    /* a SPLIT head: a LANE head without COMMIT or HEADER whose part (the header, whole) is
     * followed by 1 to CDT__UCX_SPLIT_MAX source addresses, the rest of the message */
    if (h.split)
        check(h.lane && !h.commit && !h.header_in_lane && h.split_count >= 1 &&
              h.split_count <= CDT__UCX_SPLIT_MAX && h.split_table == h.part + h.part_len &&
              h.part_len == (cdt_count)cdt__get_u64(h.part + CDT__OFF_HEADER_SIZE));
    else
        check(h.split_count == 0 && h.split_table == NULL);
    check(h.part_len + 8 * h.split_count == (cdt_count)(size - CDT__UCX_PREFIX_SIZE - ext));
    check(h.key <= CDT__UCX_KEY_MASK && h.threshold >= 1 && h.tail_len >= 0 && h.sender != 0);
    if (h.lane)
        check(h.tail_len == 0 && h.part_len >= CDT_FRAME_FIXED_HEADER_SIZE &&
              h.stream_len >= h.part_len &&
              h.stream_len <= (cdt_count)cdt__get_u64(h.part + CDT__OFF_FRAME_SIZE));
    else
        check(h.stream_len == h.part_len + h.tail_len);
    /* a HEADER head: a LANE head whose part is the fixed header only, of a header with a
     * region table, which the inline stream holds whole */
    if (h.header_in_lane)
        check(h.lane && h.part_len == CDT_FRAME_FIXED_HEADER_SIZE &&
              h.header_size == CDT_FRAME_FIXED_HEADER_SIZE +
                                   CDT_FRAME_REGION_ENTRY_SIZE *
                                       (cdt_count)cdt__get_u64(h.part + CDT__OFF_REGION_COUNT) &&
              h.header_size > CDT_FRAME_FIXED_HEADER_SIZE && h.header_size <= h.stream_len);
    if (h.tail_len > 0) /* a tail follows only a head that holds the frame's fixed header */
        check(h.part_len >= CDT_FRAME_FIXED_HEADER_SIZE);
    if (h.part_len >= CDT_FRAME_FIXED_HEADER_SIZE) {
        /* what the receive sizes from the head never exceeds the receiver's limits */
        cdt_count frame_size = (cdt_count)cdt__get_u64(h.part + CDT__OFF_FRAME_SIZE);
        cdt_count regions = (cdt_count)cdt__get_u64(h.part + CDT__OFF_REGION_COUNT);
        if (lim != NULL && lim->max_frame_bytes >= 0)
            check(frame_size <= lim->max_frame_bytes &&
                  (h.tail_len == 0 || h.stream_len <= lim->max_frame_bytes));
        if (lim != NULL && lim->max_regions >= 0)
            check(regions <= lim->max_regions);
        check(h.stream_len <= frame_size || h.tail_len == 0);
    }
    if (h.tail_len == 0) {
        cdt_decoder_params dp = cdt__ucx_decoder_params(lim);
        cdt_decoder d;
        if (cdt_decoder_create_advanced(h.part, h.part_len, &dp, &d) == CDT_SUCCESS) {
            cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
            check(cdt_decoder_info(d, &in) == CDT_SUCCESS);
            for (cdt_count i = 0; i < in.region_count && i < 64; i++) {
                cdt_count len, off;
                check(cdt_decoder_region_info(d, i, &len, NULL, &off) == CDT_SUCCESS);
                check(len >= 0 && off >= 0 && off <= in.frame_size && len <= in.frame_size - off);
            }
            cdt_decoder_free(d);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const cdt__ucx_limits none = {-1, -1}, tight = {4096, 2}, zero = {0, 0};
    one(data, size, NULL);
    one(data, size, &none);
    one(data, size, &tight);
    one(data, size, &zero);
    return 0;
}
