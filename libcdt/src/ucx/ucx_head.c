/*
 * ucx_head.c - parse and write the transport's head prefix (docs/TRANSPORT.md, "Prefix").
 * Pure functions: the receive path calls them on every head message, the fuzz target
 * tests/fuzz/fuzz_ucx_head.c on arbitrary bytes.
 */
#include "ucx_head.h"

#include "frame/frame_format.h"

#include <string.h>

static bool over(cdt_count value, cdt_count limit)
{
    return limit >= 0 && value > limit;
}

static uint32_t get_magic(const unsigned char *msg)
{
    return (uint32_t)msg[0] | (uint32_t)msg[1] << 8 | (uint32_t)msg[2] << 16 |
           (uint32_t)msg[3] << 24;
}

int cdt__ucx_prefix_mode(const unsigned char *p)
{
    static const unsigned char zeros[CDT__UCX_PREFIX_SIZE];
    if (get_magic(p) != CDT__UCX_PREFIX_MAGIC || p[4] != CDT__UCX_PREFIX_VERSION ||
        p[5] != CDT__UCX_MODE_SINGLE || memcmp(p + 6, zeros, CDT__UCX_PREFIX_SIZE - 6) != 0)
        return CDT__UCX_MODE_SPLIT;
    return CDT__UCX_MODE_SINGLE;
}

int cdt__ucx_check_frame_header(const unsigned char *frame, size_t len,
                                const cdt__ucx_limits *limits, cdt_count *header_size,
                                cdt_count *frame_size)
{
    if (len < CDT_FRAME_FIXED_HEADER_SIZE)
        return CDT_ERR_FRAME_TRUNCATED;
    int rc = cdt_frame_header_size(frame, (cdt_count)len, header_size);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count size = (cdt_count)cdt__get_u64(frame + CDT__OFF_FRAME_SIZE);
    cdt_count regions = (cdt_count)cdt__get_u64(frame + CDT__OFF_REGION_COUNT);
    if (size < *header_size || regions < 0)
        return CDT_ERR_FRAME_MALFORMED;
    if (limits != NULL &&
        (over(size, limits->max_frame_bytes) || over(regions, limits->max_regions)))
        return CDT_ERR_LIMIT;
    *frame_size = size;
    return CDT_SUCCESS;
}

static int parse_head(const unsigned char *msg, size_t len, const cdt__ucx_limits *limits,
                      cdt__ucx_head *out);

int cdt__ucx_parse_head(const unsigned char *msg, size_t len, const cdt__ucx_limits *limits,
                        cdt__ucx_head *out)
{
    if (msg == NULL || out == NULL || len > CDT__UCX_HEAD_MAX)
        return CDT_ERR_INVALID_ARG;
    return parse_head(msg, len, limits, out);
}

int cdt__ucx_parse_ring_head(const unsigned char *msg, size_t len, const cdt__ucx_limits *limits,
                             cdt__ucx_head *out)
{
    if (msg == NULL || out == NULL || len > CDT__UCX_RING_HEAD_MAX)
        return CDT_ERR_INVALID_ARG;
    int rc = parse_head(msg, len, limits, out);
    /* a large record is one whole object: a LANE head's header is read again from the
     * receive's HEAD_MAX buffer, and a tail would follow a head no sender cuts this long */
    if (rc == CDT_SUCCESS && len > CDT__UCX_HEAD_MAX && (out->lane || out->tail_len != 0))
        return CDT_ERR_FRAME_MALFORMED;
    return rc;
}

static int parse_head(const unsigned char *msg, size_t len, const cdt__ucx_limits *limits,
                      cdt__ucx_head *out)
{
    if (len < CDT__UCX_PREFIX_SIZE)
        return CDT_ERR_FRAME_MAGIC;
    if (get_magic(msg) != CDT__UCX_PREFIX_MAGIC)
        return CDT_ERR_FRAME_MAGIC;
    /* a flag this version does not know is a later protocol's */
    if (msg[4] != CDT__UCX_PREFIX_VERSION || msg[5] != CDT__UCX_MODE_SPLIT ||
        (msg[6] & ~(CDT__UCX_FLAG_COMMIT | CDT__UCX_FLAG_LANE | CDT__UCX_FLAG_HEADER |
                    CDT__UCX_FLAG_SPLIT)) != 0 ||
        msg[7] != 0)
        return CDT_ERR_FRAME_VERSION;
    const bool lane = (msg[6] & CDT__UCX_FLAG_LANE) != 0;
    const bool hdr = (msg[6] & CDT__UCX_FLAG_HEADER) != 0;
    if (hdr && !lane)
        return CDT_ERR_FRAME_MALFORMED;
    /* SPLIT: a lane object whose commit is the word in the ring and whose header is whole */
    const bool split = (msg[6] & CDT__UCX_FLAG_SPLIT) != 0;
    if (split && (!lane || hdr || (msg[6] & CDT__UCX_FLAG_COMMIT) != 0))
        return CDT_ERR_FRAME_MALFORMED;
    uint64_t key = cdt__get_u64(msg + 8);
    uint64_t threshold = cdt__get_u64(msg + 16);
    uint64_t tail_len = cdt__get_u64(msg + 24);
    uint64_t sender = cdt__get_u64(msg + 32);
    if (key > CDT__UCX_KEY_MASK || threshold < 1 || threshold > (uint64_t)INT64_MAX ||
        tail_len > (uint64_t)INT64_MAX || sender == 0)
        return CDT_ERR_FRAME_MALFORMED;
    size_t ext = lane ? CDT__UCX_LANE_EXT_SIZE : 0;
    if (len < CDT__UCX_PREFIX_SIZE + ext)
        return CDT_ERR_FRAME_TRUNCATED;
    uint64_t lane_id = lane ? cdt__get_u64(msg + CDT__UCX_PREFIX_SIZE) : 0;
    uint64_t lane_stream = lane ? cdt__get_u64(msg + CDT__UCX_PREFIX_SIZE + 8) : 0;
    const unsigned char *part = msg + CDT__UCX_PREFIX_SIZE + ext;
    cdt_count part_len = (cdt_count)(len - CDT__UCX_PREFIX_SIZE - ext);
    /* SPLIT: the source table follows the header; the part is the header alone */
    const unsigned char *table = NULL;
    cdt_count table_count = 0;
    if (split) {
        cdt_count hs = 0;
        if (part_len < CDT_FRAME_FIXED_HEADER_SIZE)
            return CDT_ERR_FRAME_MALFORMED;
        int rc = cdt_frame_header_size(part, CDT_FRAME_FIXED_HEADER_SIZE, &hs);
        if (rc != CDT_SUCCESS && rc != CDT_ERR_FRAME_TRUNCATED)
            return rc;
        if (hs < CDT_FRAME_FIXED_HEADER_SIZE || hs >= part_len || (part_len - hs) % 8 != 0 ||
            (part_len - hs) / 8 > CDT__UCX_SPLIT_MAX)
            return CDT_ERR_FRAME_MALFORMED;
        table = part + hs;
        table_count = (part_len - hs) / 8;
        part_len = hs;
    }
    /* a lane object's head holds the whole fixed header (its limits apply now) and no tail */
    if (lane && (tail_len != 0 || part_len < CDT_FRAME_FIXED_HEADER_SIZE ||
                 lane_stream < (uint64_t)part_len || lane_stream > (uint64_t)INT64_MAX))
        return CDT_ERR_FRAME_MALFORMED;
    /* a header that continues in the lane: the head holds the fixed header, nothing else */
    if (hdr && part_len != CDT_FRAME_FIXED_HEADER_SIZE)
        return CDT_ERR_FRAME_MALFORMED;
    cdt_count header_size = 0;
    /* a tail may follow a head of any length that holds the frame's fixed header (below):
     * senders cut the head short to keep it eager (docs/TRANSPORT.md §4) */
    if (part_len >= CDT_FRAME_FIXED_HEADER_SIZE) {
        /* the fixed header is here: validate it and apply the limits before anything is sized
         * from it (the tail buffer, the receive's memory) */
        int rc = cdt_frame_header_size(part, part_len, &header_size);
        if (rc != CDT_SUCCESS)
            return rc;
        cdt_count frame_size = (cdt_count)cdt__get_u64(part + CDT__OFF_FRAME_SIZE);
        cdt_count regions = (cdt_count)cdt__get_u64(part + CDT__OFF_REGION_COUNT);
        if (frame_size < 0 || regions < 0)
            return CDT_ERR_FRAME_MALFORMED;
        if (limits != NULL &&
            (over(frame_size, limits->max_frame_bytes) || over(regions, limits->max_regions)))
            return CDT_ERR_LIMIT;
        if ((cdt_count)tail_len > frame_size - part_len)
            return CDT_ERR_FRAME_MALFORMED; /* the inline stream is part of the frame */
        if (lane && (cdt_count)lane_stream > frame_size)
            return CDT_ERR_FRAME_MALFORMED;
        /* HEADER: a region table follows in the lane (which headers go there is the sender's
         * choice), and the inline stream holds the whole header */
        if (hdr && (header_size <= part_len || (cdt_count)lane_stream < header_size))
            return CDT_ERR_FRAME_MALFORMED;
    } else if (tail_len > 0) {
        return CDT_ERR_FRAME_MALFORMED;
    }
    out->key = key;
    out->threshold = (cdt_count)threshold;
    out->tail_len = (cdt_count)tail_len;
    out->part = part;
    out->part_len = part_len;
    out->stream_len = lane ? (cdt_count)lane_stream : part_len + (cdt_count)tail_len;
    out->commit = (msg[6] & CDT__UCX_FLAG_COMMIT) != 0;
    out->sender = sender;
    out->lane = lane;
    out->lane_id = lane_id;
    out->header_in_lane = hdr;
    out->header_size = hdr ? header_size : 0;
    out->split = split;
    out->split_table = table;
    out->split_count = table_count;
    return CDT_SUCCESS;
}

void cdt__ucx_put_lane_ext(unsigned char *p, uint64_t lane_id, cdt_count stream_len)
{
    cdt__put_u64(p, lane_id);
    cdt__put_u64(p + 8, (uint64_t)stream_len);
}

void cdt__ucx_put_prefix(unsigned char *p, uint64_t key, cdt_count threshold, cdt_count tail_len,
                         unsigned flags, uint64_t sender)
{
    uint32_t magic = CDT__UCX_PREFIX_MAGIC;
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(magic >> (8 * i));
    p[4] = CDT__UCX_PREFIX_VERSION;
    p[5] = CDT__UCX_MODE_SPLIT;
    p[6] = (unsigned char)flags;
    p[7] = 0;
    cdt__put_u64(p + 8, key);
    cdt__put_u64(p + 16, (uint64_t)threshold);
    cdt__put_u64(p + 24, (uint64_t)tail_len);
    cdt__put_u64(p + 32, sender);
}

void cdt__ucx_put_single_prefix(unsigned char *p)
{
    cdt__ucx_put_prefix(p, 0, 0, 0, 0, 0);
    p[5] = CDT__UCX_MODE_SINGLE;
}

/* magic + status: the trailer of a single-mode message and the commit message */
static void put_status_word(unsigned char *p, uint32_t magic, int status)
{
    uint32_t st = (uint32_t)status;
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(magic >> (8 * i));
        p[4 + i] = (unsigned char)(st >> (8 * i));
    }
}

static int get_status_word(const unsigned char *p, uint32_t magic)
{
    uint32_t st =
        (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    if (get_magic(p) != magic)
        return CDT_ERR_FRAME_MALFORMED;
    int32_t status = (int32_t)st;
    /* a sender reports CDT_SUCCESS or one of its errors, never a positive value */
    return status > 0 ? CDT_ERR_FRAME_MALFORMED : (int)status;
}

void cdt__ucx_put_trailer(unsigned char *p, int status)
{
    put_status_word(p, CDT__UCX_TRAILER_MAGIC, status);
}

int cdt__ucx_trailer_status(const unsigned char *p)
{
    return get_status_word(p, CDT__UCX_TRAILER_MAGIC);
}

void cdt__ucx_put_commit(unsigned char *p, int status)
{
    put_status_word(p, CDT__UCX_COMMIT_MAGIC, status);
}

int cdt__ucx_commit_status(const unsigned char *p)
{
    return get_status_word(p, CDT__UCX_COMMIT_MAGIC);
}
