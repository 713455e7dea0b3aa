/*
 * ucx_head.h - the transport's head message: wire constants and the parser of a received head
 * (prefix + start of the inline stream). Pure: no UCX, no allocation, no global state, so a
 * fuzz target can call it directly. Protocol: docs/TRANSPORT.md.
 */
#ifndef CDT_UCX_HEAD_H
#define CDT_UCX_HEAD_H

#include "cdt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDT__UCX_HEAD_HIDDEN __attribute__((visibility("hidden")))

/* ---- wire constants (docs/TRANSPORT.md) ---- */
#define CDT__UCX_PRIVATE_BIT (UINT64_C(1) << 63)
#define CDT__UCX_INDEX_BITS 20
#define CDT__UCX_INDEX_MASK ((UINT64_C(1) << CDT__UCX_INDEX_BITS) - 1)
#define CDT__UCX_KEY_BITS 43
#define CDT__UCX_KEY_MASK ((UINT64_C(1) << CDT__UCX_KEY_BITS) - 1)
/* index of the tail message; separate regions have indices below it */
#define CDT__UCX_TAIL_INDEX CDT__UCX_INDEX_MASK
/* the head message never exceeds this (prefix included): receivers post this much */
#define CDT__UCX_HEAD_MAX 32768
#define CDT__UCX_PREFIX_SIZE 32
#define CDT__UCX_PREFIX_MAGIC UINT32_C(0x55544443) /* "CDTU" little-endian */
#define CDT__UCX_PREFIX_VERSION 2

/* what a receiver accepts; a negative value means no limit */
typedef struct cdt__ucx_limits {
    cdt_count max_frame_bytes;
    cdt_count max_regions;
} cdt__ucx_limits;

/* a parsed head message */
typedef struct cdt__ucx_head {
    uint64_t key;              /* keys the object's private messages (tail, regions) */
    cdt_count threshold;       /* the sender's large-region threshold (>= 1) */
    cdt_count tail_len;        /* bytes of the tail message (0: none) */
    const unsigned char *part; /* start of the inline stream, inside the message */
    cdt_count part_len;        /* its bytes in this message */
    cdt_count stream_len;      /* bytes of the whole inline stream: part_len + tail_len */
} cdt__ucx_head;

/* Parse a head message of `len` bytes (len <= CDT__UCX_HEAD_MAX; only those bytes are read).
 * Checks the prefix (magic, version, reserved bytes, key range, threshold), and when the inline
 * stream holds the fixed frame header (always when a tail follows), the fixed header and the
 * receiver's limits on frame_size and region_count: nothing the message announces is sized
 * before this returns CDT_SUCCESS. A tail follows only a full head message and must fit the
 * frame. Errors: CDT_ERR_FRAME_MAGIC, CDT_ERR_FRAME_VERSION, CDT_ERR_FRAME_MALFORMED,
 * CDT_ERR_FRAME_TRUNCATED, CDT_ERR_BYTE_ORDER, CDT_ERR_LIMIT, CDT_ERR_INVALID_ARG. */
CDT__UCX_HEAD_HIDDEN int cdt__ucx_parse_head(const unsigned char *msg, size_t len,
                                             const cdt__ucx_limits *limits, cdt__ucx_head *out);

/* Write the 32-byte prefix. */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_prefix(unsigned char *p, uint64_t key, cdt_count threshold,
                                              cdt_count tail_len);

static inline void cdt__ucx_put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint64_t cdt__ucx_get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
