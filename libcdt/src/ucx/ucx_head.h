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
/* index of the tail message, and of the commit message (below); separate regions have indices
 * below both */
#define CDT__UCX_TAIL_INDEX CDT__UCX_INDEX_MASK
#define CDT__UCX_COMMIT_INDEX (CDT__UCX_INDEX_MASK - 1)
/* the head message never exceeds this (prefix included): receivers post this much */
#define CDT__UCX_HEAD_MAX 32768
/* a head message parked from the head ring may be a large record, up to this (docs/TRANSPORT.md
 * §10.6, Large records; at least CDT__LANE_HEAD_LARGE_MAX): whole, never LANE, never with a tail */
#ifndef CDT__UCX_RING_HEAD_MAX
#define CDT__UCX_RING_HEAD_MAX 73728
#endif
#define CDT__UCX_PREFIX_SIZE 40
#define CDT__UCX_PREFIX_MAGIC UINT32_C(0x55544443) /* "CDTU" little-endian */
#define CDT__UCX_PREFIX_VERSION 7
/* prefix byte 5: how the object travels */
#define CDT__UCX_MODE_SPLIT 0  /* head message, tail and large regions as private messages */
#define CDT__UCX_MODE_SINGLE 1 /* this message holds the prefix and the whole frame */
/* prefix byte 6 of a split-mode head: flags. COMMIT: the object is complete only with its
 * commit message (index CDT__UCX_COMMIT_INDEX), which the sender sends once every large region
 * was taken by the receiver (docs/TRANSPORT.md §4, Commit). Other bits are a later protocol. */
#define CDT__UCX_FLAG_COMMIT 0x01
/* LANE (version 7): the prefix is followed by the lane id (8) and the inline stream's length
 * (8); the head carries the frame's header, and the rest of the inline stream comes through
 * the sender's lane (docs/TRANSPORT.md §10.3). tail_len is then 0. */
#define CDT__UCX_FLAG_LANE 0x04
/* HEADER (with LANE only): the head carries only the frame's fixed header, whose region table
 * does not fit a head message; the lane carries inline-stream bytes from the fixed header's end
 * on (the table first), docs/TRANSPORT.md §10.3, Headers through the lane */
#define CDT__UCX_FLAG_HEADER 0x08
/* SPLIT (with LANE, without COMMIT or HEADER): the head's part is the frame's header followed
 * by the source table, the sender's address of each large region (8 bytes each, region order,
 * 1 to CDT__UCX_SPLIT_MAX of them); both processes copy those regions with cross-memory attach
 * (docs/TRANSPORT.md §10.3, Regions moved by both cores) */
#define CDT__UCX_FLAG_SPLIT 0x10
/* at most IOV_MAX regions: each side's share is one cross-memory call */
#define CDT__UCX_SPLIT_MAX 1024
#define CDT__UCX_LANE_EXT_SIZE 16

/* the commit message: magic, then the sender's status (int32): CDT_SUCCESS when every large
 * region's send completed, else the error that ended one */
#define CDT__UCX_COMMIT_SIZE 8
#define CDT__UCX_COMMIT_MAGIC UINT32_C(0x43544443) /* "CDTC" little-endian */

/* a single-mode message ends with this trailer: magic, then the sender's status (int32), which
 * is not CDT_SUCCESS when packing the frame failed part-way (the message was already moving) */
#define CDT__UCX_TRAILER_SIZE 8
#define CDT__UCX_TRAILER_MAGIC UINT32_C(0x4b544443) /* "CDTK" little-endian */

/* what a receiver accepts; a negative value means no limit */
typedef struct cdt__ucx_limits {
    cdt_count max_frame_bytes;
    cdt_count max_regions;
} cdt__ucx_limits;

/* the decoder parameters that apply the same limits */
static inline cdt_decoder_params cdt__ucx_decoder_params(const cdt__ucx_limits *limits)
{
    cdt_decoder_params dp = {.field_mask = 0};
    if (limits != NULL && limits->max_frame_bytes >= 0) {
        dp.field_mask |= CDT_DECODER_PARAM_MAX_FRAME_BYTES;
        dp.max_frame_bytes = limits->max_frame_bytes;
    }
    if (limits != NULL && limits->max_regions >= 0) {
        dp.field_mask |= CDT_DECODER_PARAM_MAX_REGIONS;
        dp.max_regions = limits->max_regions;
    }
    return dp;
}

/* a parsed head message */
typedef struct cdt__ucx_head {
    uint64_t key;              /* keys the object's private messages (tail, regions) */
    cdt_count threshold;       /* the sender's large-region threshold (>= 1) */
    cdt_count tail_len;        /* bytes of the tail message (0: none) */
    const unsigned char *part; /* start of the inline stream, inside the message */
    cdt_count part_len;        /* its bytes in this message */
    cdt_count stream_len;      /* bytes of the whole inline stream: part_len + tail_len */
    bool commit;               /* a commit message ends the object (CDT__UCX_FLAG_COMMIT) */
    uint64_t sender;           /* the sending endpoint's id (never 0; docs/TRANSPORT.md §4) */
    bool lane;                 /* CDT__UCX_FLAG_LANE: stream bytes [part_len, stream_len) come
                                * through the lane lane_id */
    uint64_t lane_id;
    bool header_in_lane;   /* CDT__UCX_FLAG_HEADER: part is the fixed header, and the rest of
                            * the header (header_size bytes in all) comes through the lane */
    cdt_count header_size; /* with header_in_lane: the whole header's bytes */
    /* CDT__UCX_FLAG_SPLIT: the source table (split_count entries of 8 bytes) after the header;
     * part_len then counts the header alone */
    bool split;
    const unsigned char *split_table;
    cdt_count split_count;
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
/* cdt__ucx_parse_head of a head that came from the head ring (len <= CDT__UCX_RING_HEAD_MAX): a
 * head longer than CDT__UCX_HEAD_MAX is a large record, which has no LANE flag and no tail
 * (else CDT_ERR_FRAME_MALFORMED). */
CDT__UCX_HEAD_HIDDEN int cdt__ucx_parse_ring_head(const unsigned char *msg, size_t len,
                                                  const cdt__ucx_limits *limits,
                                                  cdt__ucx_head *out);

/* Write the prefix of a split-mode head message (flags: CDT__UCX_FLAG_*; sender: the sending
 * endpoint's id, not 0). */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_prefix(unsigned char *p, uint64_t key, cdt_count threshold,
                                              cdt_count tail_len, unsigned flags, uint64_t sender);
/* Write the 16 bytes that follow a LANE head's prefix. */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_lane_ext(unsigned char *p, uint64_t lane_id,
                                                cdt_count stream_len);
/* Write the prefix of a single-mode message (bytes 8 to the end of the prefix zero). */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_single_prefix(unsigned char *p);

/* Write / read a single-mode trailer. cdt__ucx_trailer_status gives the sender's status, or
 * CDT_ERR_FRAME_MALFORMED for a trailer that is not one. */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_trailer(unsigned char *p, int status);
CDT__UCX_HEAD_HIDDEN int cdt__ucx_trailer_status(const unsigned char *p);

/* Write / read a commit message. cdt__ucx_commit_status gives the sender's status, or
 * CDT_ERR_FRAME_MALFORMED for bytes that are not a commit message. */
CDT__UCX_HEAD_HIDDEN void cdt__ucx_put_commit(unsigned char *p, int status);
CDT__UCX_HEAD_HIDDEN int cdt__ucx_commit_status(const unsigned char *p);

/* The mode of a message from its first CDT__UCX_PREFIX_SIZE bytes: CDT__UCX_MODE_SINGLE when
 * the prefix is a valid single-mode prefix, else CDT__UCX_MODE_SPLIT (the split-mode parser
 * then judges the message, errors included). */
CDT__UCX_HEAD_HIDDEN int cdt__ucx_prefix_mode(const unsigned char *p);

/* A single-mode message's frame starts with its fixed header (`len` >=
 * CDT_FRAME_FIXED_HEADER_SIZE bytes of it at `frame`): validate it, apply the limits to its
 * frame_size and region_count (CDT_ERR_LIMIT), and give the full header size and frame size.
 * Errors: those of cdt_frame_header_size, CDT_ERR_LIMIT, CDT_ERR_FRAME_MALFORMED. */
CDT__UCX_HEAD_HIDDEN int cdt__ucx_check_frame_header(const unsigned char *frame, size_t len,
                                                     const cdt__ucx_limits *limits,
                                                     cdt_count *header_size, cdt_count *frame_size);

#endif
