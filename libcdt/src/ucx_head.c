/*
 * ucx_head.c - parse and write the transport's head prefix (docs/TRANSPORT.md, "Prefix").
 * Pure functions: the receive path calls them on every head message, the fuzz target
 * tests/fuzz/fuzz_ucx_head.c on arbitrary bytes.
 */
#include "ucx_head.h"

/* FORMAT.md fixed header fields used here */
#define FRAME_REGION_COUNT_AT 24
#define FRAME_SIZE_AT 32

static bool over(cdt_count value, cdt_count limit)
{
    return limit >= 0 && value > limit;
}

int cdt__ucx_parse_head(const unsigned char *msg, size_t len, const cdt__ucx_limits *limits,
                        cdt__ucx_head *out)
{
    if (msg == NULL || out == NULL || len > CDT__UCX_HEAD_MAX)
        return CDT_ERR_INVALID_ARG;
    if (len < CDT__UCX_PREFIX_SIZE)
        return CDT_ERR_FRAME_MAGIC;
    uint32_t magic =
        (uint32_t)msg[0] | (uint32_t)msg[1] << 8 | (uint32_t)msg[2] << 16 | (uint32_t)msg[3] << 24;
    if (magic != CDT__UCX_PREFIX_MAGIC)
        return CDT_ERR_FRAME_MAGIC;
    if (msg[4] != CDT__UCX_PREFIX_VERSION || msg[5] != 0 || msg[6] != 0 || msg[7] != 0)
        return CDT_ERR_FRAME_VERSION;
    uint64_t key = cdt__ucx_get_le64(msg + 8);
    uint64_t threshold = cdt__ucx_get_le64(msg + 16);
    uint64_t tail_len = cdt__ucx_get_le64(msg + 24);
    if (key > CDT__UCX_KEY_MASK || threshold < 1 || threshold > (uint64_t)INT64_MAX ||
        tail_len > (uint64_t)INT64_MAX)
        return CDT_ERR_FRAME_MALFORMED;
    const unsigned char *part = msg + CDT__UCX_PREFIX_SIZE;
    cdt_count part_len = (cdt_count)len - CDT__UCX_PREFIX_SIZE;
    if (tail_len > 0 && part_len != CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE)
        return CDT_ERR_FRAME_MALFORMED; /* a tail follows only a full head message */
    if (part_len >= CDT_FRAME_FIXED_HEADER_SIZE) {
        /* the fixed header is here: validate it and apply the limits before anything is sized
         * from it (the tail buffer, the receive's memory) */
        cdt_count header_size;
        int rc = cdt_frame_header_size(part, part_len, &header_size);
        if (rc != CDT_SUCCESS)
            return rc;
        cdt_count frame_size = (cdt_count)cdt__ucx_get_le64(part + FRAME_SIZE_AT);
        cdt_count regions = (cdt_count)cdt__ucx_get_le64(part + FRAME_REGION_COUNT_AT);
        if (frame_size < 0 || regions < 0)
            return CDT_ERR_FRAME_MALFORMED;
        if (limits != NULL &&
            (over(frame_size, limits->max_frame_bytes) || over(regions, limits->max_regions)))
            return CDT_ERR_LIMIT;
        if ((cdt_count)tail_len > frame_size - part_len)
            return CDT_ERR_FRAME_MALFORMED; /* the inline stream is part of the frame */
    } else if (tail_len > 0) {
        return CDT_ERR_FRAME_MALFORMED;
    }
    out->key = key;
    out->threshold = (cdt_count)threshold;
    out->tail_len = (cdt_count)tail_len;
    out->part = part;
    out->part_len = part_len;
    out->stream_len = part_len + (cdt_count)tail_len;
    return CDT_SUCCESS;
}

void cdt__ucx_put_prefix(unsigned char *p, uint64_t key, cdt_count threshold, cdt_count tail_len)
{
    uint32_t magic = CDT__UCX_PREFIX_MAGIC;
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(magic >> (8 * i));
    p[4] = CDT__UCX_PREFIX_VERSION;
    p[5] = 0;
    p[6] = 0;
    p[7] = 0;
    cdt__ucx_put_le64(p + 8, key);
    cdt__ucx_put_le64(p + 16, (uint64_t)threshold);
    cdt__ucx_put_le64(p + 24, (uint64_t)tail_len);
}
