/*
 * frame_header.h - header parsing and region checks shared by the decoder (frame_decode.c)
 * and the one-call decode (frame_decode_whole.c). Only files of frame/ include it.
 */
#ifndef CDT_FRAME_HEADER_H
#define CDT_FRAME_HEADER_H

#include "frame_format.h"
#include "core/core.h"

#include <stdbool.h>

typedef struct dec_region {
    cdt__region_rec rec;
    cdt_count stream_offset; /* layout receivers: where the region's bytes are in the stream */
} dec_region;

/* the fixed part of a header of `len` bytes: magic, version, flags, byte order, sizes;
 * *object_count the sender's count, or -1 for a frame that carries none (an earlier writer's) */
CDT__HIDDEN int cdt__frame_parse_fixed(const unsigned char *h, cdt_count len, cdt_frame_info *info,
                                       cdt_count *object_count);
/* a custom receiver's count against the header's object count (-1: none, any count goes) */
static inline int cdt__frame_check_count(cdt_count object_count, cdt_count count)
{
    return object_count < 0 || object_count == count ? CDT_SUCCESS : CDT_ERR_FRAME_MISMATCH;
}
/* the region table: lengths, kinds and offsets that add up to frame_size exactly; fills
 * info->region_bytes and *longest (the longest region's byte length, 0 with none; may be NULL) */
CDT__HIDDEN int cdt__frame_parse_regions(const unsigned char *h, cdt_frame_info *info,
                                         dec_region *regions, cdt_count *longest);
/* a custom receiver's regions (fetched once its packed stream is in) against the header's */
CDT__HIDDEN int cdt__frame_match_regions(cdt_op op, const cdt_frame_info *info,
                                         const dec_region *regions);
/* bytes [start, start + len) of a custom receiver's region `index` from src into its memory */
CDT__HIDDEN int cdt__frame_copy_to_region(cdt_op op, cdt_count index, cdt_count start,
                                          const unsigned char *src, cdt_count len);
CDT__HIDDEN bool cdt__frame_all_zero(const unsigned char *p, cdt_count n);

#endif
