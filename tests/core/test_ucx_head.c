/*
 * test_ucx_head.c - the split-mode head rules of protocol version 6 (docs/TRANSPORT.md §2,
 * §4, §5), on the pure parser cdt__ucx_parse_head (no UCX needed): a tail may follow a short head
 * that holds the frame's fixed header (senders cut heads to 1 KiB to keep them eager); a tail
 * after a head without that header, a tail longer than the frame allows, and a head of an
 * earlier protocol version are refused with their own error; the sender id comes back, and a
 * head without one (0) is refused. Version 7's LANE heads (§10.3): the lane id and the stream
 * length after the prefix, then exactly the frame's header; no tail, a stream length within the
 * frame, the limits applied. A large record of the head ring (§10.6): above HEAD_MAX only
 * through cdt__ucx_parse_ring_head, never LANE, never with a tail.
 */
#include "check.h"
#include "frame/frame_format.h"
#include "ucx/ucx_head.h"

#include <string.h>

enum { EAGER_HEAD = 1024, PACKED = 1 << 20 };

/* a head of `len` bytes: prefix (key 7, threshold 65536, tail_len, sender 0x5e) and a frame of no
 * regions whose packed stream is PACKED bytes (the head holds its start) */
static void make_head(unsigned char *msg, size_t len, uint64_t tail_len)
{
    memset(msg, 0x5a, len);
    cdt__ucx_put_prefix(msg, 7, 65536, (cdt_count)tail_len, CDT__UCX_FLAG_COMMIT, 0x5e);
    if (len >= CDT__UCX_PREFIX_SIZE + CDT_FRAME_FIXED_HEADER_SIZE)
        cdt__frame_put_fixed(msg + CDT__UCX_PREFIX_SIZE, CDT_FRAME_FIXED_HEADER_SIZE, PACKED, 0,
                             CDT_FRAME_FIXED_HEADER_SIZE + PACKED, 1);
}

int main(void)
{
    static unsigned char msg[CDT__UCX_HEAD_MAX];
    const cdt_count frame = CDT_FRAME_FIXED_HEADER_SIZE + PACKED;
    const cdt_count part = EAGER_HEAD - CDT__UCX_PREFIX_SIZE;
    cdt__ucx_head h;

    /* an eager 1 KiB head, then the tail: the rest of the inline stream */
    make_head(msg, EAGER_HEAD, (uint64_t)(frame - part));
    CHECK_OK(cdt__ucx_parse_head(msg, EAGER_HEAD, NULL, &h));
    CHECK(h.part_len == part && h.tail_len == frame - part && h.stream_len == frame && h.commit);
    CHECK(h.sender == 0x5e);

    /* every split-mode head names its sending endpoint: a sender id of 0 is no head's */
    memset(msg + 32, 0, 8);
    CHECK_RC(cdt__ucx_parse_head(msg, EAGER_HEAD, NULL, &h), CDT_ERR_FRAME_MALFORMED);

    /* the same object with version 4's full head still parses (the rule only widened) */
    make_head(msg, CDT__UCX_HEAD_MAX,
              (uint64_t)(frame - (CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE)));
    CHECK_OK(cdt__ucx_parse_head(msg, CDT__UCX_HEAD_MAX, NULL, &h));
    CHECK(h.stream_len == frame);

    /* a tail after a head too short for the fixed header: nothing to size it from */
    make_head(msg, CDT__UCX_PREFIX_SIZE + CDT_FRAME_FIXED_HEADER_SIZE - 1, 100);
    CHECK_RC(
        cdt__ucx_parse_head(msg, CDT__UCX_PREFIX_SIZE + CDT_FRAME_FIXED_HEADER_SIZE - 1, NULL, &h),
        CDT_ERR_FRAME_MALFORMED);

    /* a tail longer than the rest of the frame */
    make_head(msg, EAGER_HEAD, (uint64_t)(frame - part + 1));
    CHECK_RC(cdt__ucx_parse_head(msg, EAGER_HEAD, NULL, &h), CDT_ERR_FRAME_MALFORMED);

    /* the receiver's frame limit applies to what the short head announces */
    make_head(msg, EAGER_HEAD, (uint64_t)(frame - part));
    cdt__ucx_limits small = {.max_frame_bytes = frame - 1, .max_regions = -1};
    CHECK_RC(cdt__ucx_parse_head(msg, EAGER_HEAD, &small, &h), CDT_ERR_LIMIT);

    /* a head of protocol version 5 (or any other) is a version error, not a malformed one */
    for (int v = 1; v < 8; v++) {
        make_head(msg, EAGER_HEAD, (uint64_t)(frame - part));
        msg[4] = (unsigned char)v;
        CHECK_RC(cdt__ucx_parse_head(msg, EAGER_HEAD, NULL, &h),
                 v == CDT__UCX_PREFIX_VERSION ? CDT_SUCCESS : CDT_ERR_FRAME_VERSION);
    }
    /* a LANE head: prefix, lane id and stream length, the fixed header; the rest of the inline
     * stream comes through the lane */
    const size_t lh = CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE + CDT_FRAME_FIXED_HEADER_SIZE;
    memset(msg, 0, sizeof(msg));
    cdt__ucx_put_prefix(msg, 9, 65536, 0, CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE, 0x5e);
    cdt__ucx_put_lane_ext(msg + CDT__UCX_PREFIX_SIZE, UINT64_C(0x1122334455667788), frame);
    cdt__frame_put_fixed(msg + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE,
                         CDT_FRAME_FIXED_HEADER_SIZE, PACKED, 0, frame, 1);
    CHECK_OK(cdt__ucx_parse_head(msg, lh, NULL, &h));
    CHECK(h.lane && h.lane_id == UINT64_C(0x1122334455667788) && h.stream_len == frame);
    CHECK(h.part == msg + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE);
    CHECK(h.part_len == CDT_FRAME_FIXED_HEADER_SIZE && h.tail_len == 0 && h.commit);
    CHECK_RC(cdt__ucx_parse_head(msg, lh, &small, &h), CDT_ERR_LIMIT); /* limits apply */
    /* a stream longer than the frame, or shorter than the head's part */
    cdt__ucx_put_lane_ext(msg + CDT__UCX_PREFIX_SIZE, 1, frame + 1);
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    cdt__ucx_put_lane_ext(msg + CDT__UCX_PREFIX_SIZE, 1, CDT_FRAME_FIXED_HEADER_SIZE - 1);
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    /* a LANE head with a tail, or without the whole fixed header */
    cdt__ucx_put_lane_ext(msg + CDT__UCX_PREFIX_SIZE, 1, frame);
    cdt__ucx_put_prefix(msg, 9, 65536, 10, CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE, 0x5e);
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    cdt__ucx_put_prefix(msg, 9, 65536, 0, CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE, 0x5e);
    CHECK_RC(cdt__ucx_parse_head(msg, lh - 1, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt__ucx_parse_head(msg, CDT__UCX_PREFIX_SIZE + 8, NULL, &h), CDT_ERR_FRAME_TRUNCATED);
    /* a flag of a later version (0x08 is HEADER since headers go through the lane: its heads
     * are checked by fuzz_ucx_head's seeds and transport.lane_headers) */
    msg[6] |= 0x20;
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_VERSION);
    msg[6] = (uint8_t)(msg[6] & ~0x20);
    /* SPLIT (0x10): only with LANE, without COMMIT and HEADER, and a source table of whole
     * 8-byte entries after the header, at least one */
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_SUCCESS);
    CHECK(!h.split && h.split_count == 0);
    msg[6] |= CDT__UCX_FLAG_SPLIT;
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_MALFORMED); /* with COMMIT */
    msg[6] = (uint8_t)(CDT__UCX_FLAG_LANE | CDT__UCX_FLAG_SPLIT);
    CHECK_RC(cdt__ucx_parse_head(msg, lh, NULL, &h), CDT_ERR_FRAME_MALFORMED); /* no table */
    cdt__put_u64(msg + lh, UINT64_C(0x7f0000001000));
    cdt__put_u64(msg + lh + 8, UINT64_C(0x7f0000201000));
    CHECK_OK(cdt__ucx_parse_head(msg, lh + 16, NULL, &h));
    CHECK(h.split && h.split_count == 2 && h.split_table == msg + lh && !h.commit);
    CHECK(h.part_len == CDT_FRAME_FIXED_HEADER_SIZE); /* the header alone */
    CHECK_RC(cdt__ucx_parse_head(msg, lh + 12, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    msg[6] = (uint8_t)(CDT__UCX_FLAG_LANE | CDT__UCX_FLAG_HEADER | CDT__UCX_FLAG_SPLIT);
    CHECK(cdt__ucx_parse_head(msg, lh + 16, NULL, &h) != CDT_SUCCESS);
    msg[6] = (uint8_t)(CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE);
    /* HEADER without LANE is refused */
    cdt__ucx_put_prefix(msg, 9, 65536, 0, CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_HEADER, 0x5e);
    CHECK(cdt__ucx_parse_head(msg, lh, NULL, &h) != CDT_SUCCESS);

    /* a large record of the head ring (§10.6, Large records): a whole head longer than
     * HEAD_MAX, parsed from a parked copy only, never with LANE or a tail; its limits apply */
    static unsigned char big[CDT__UCX_RING_HEAD_MAX + 1];
    const size_t whole = 60000;
    const cdt_count wf = (cdt_count)(whole - CDT__UCX_PREFIX_SIZE);
    memset(big, 0x33, sizeof big);
    cdt__ucx_put_prefix(big, 11, 65536, 0, 0, 0x5e);
    cdt__frame_put_fixed(big + CDT__UCX_PREFIX_SIZE, CDT_FRAME_FIXED_HEADER_SIZE,
                         wf - CDT_FRAME_FIXED_HEADER_SIZE, 0, wf, 1);
    CHECK_RC(cdt__ucx_parse_head(big, whole, NULL, &h), CDT_ERR_INVALID_ARG);
    CHECK_OK(cdt__ucx_parse_ring_head(big, whole, NULL, &h));
    CHECK(h.part_len == wf && h.tail_len == 0 && h.stream_len == wf && !h.lane && !h.commit);
    cdt__ucx_limits below = {.max_frame_bytes = wf - 1, .max_regions = -1};
    CHECK_RC(cdt__ucx_parse_ring_head(big, whole, &below, &h), CDT_ERR_LIMIT);
    CHECK_RC(cdt__ucx_parse_ring_head(big, CDT__UCX_RING_HEAD_MAX + 1, NULL, &h),
             CDT_ERR_INVALID_ARG);
    /* a tail after it, or the LANE flag (whose header the receive copies into its HEAD_MAX
     * buffer): malformed, whatever else the record says */
    cdt__ucx_put_prefix(big, 11, 65536, 8, 0, 0x5e);
    cdt__frame_put_fixed(big + CDT__UCX_PREFIX_SIZE, CDT_FRAME_FIXED_HEADER_SIZE,
                         wf + 8 - CDT_FRAME_FIXED_HEADER_SIZE, 0, wf + 8, 1);
    CHECK_RC(cdt__ucx_parse_ring_head(big, whole, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    cdt__ucx_put_prefix(big, 11, 65536, 0, CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE, 0x5e);
    cdt__ucx_put_lane_ext(big + CDT__UCX_PREFIX_SIZE, 1, wf);
    cdt__frame_put_fixed(big + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE,
                         CDT_FRAME_FIXED_HEADER_SIZE, wf - CDT_FRAME_FIXED_HEADER_SIZE, 0, wf, 1);
    CHECK_RC(cdt__ucx_parse_ring_head(big, whole, NULL, &h), CDT_ERR_FRAME_MALFORMED);
    return check_report("test_ucx_head");
}
