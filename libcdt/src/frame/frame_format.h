/*
 * frame_format.h - byte-level layout of a frame (normative text: docs/FORMAT.md).
 * Header integers are little-endian whatever the host; these helpers are the only place that
 * knows the offsets.
 */
#ifndef CDT_FRAME_FORMAT_H
#define CDT_FRAME_FORMAT_H

#include "core/core.h"

#include <string.h>

#define CDT__FRAME_MAGIC "CDTF"
#define CDT__FRAME_VERSION 1
#define CDT__FRAME_FLAG_BIG_ENDIAN 0x1u /* payload written by a big-endian host */
/* offset 40 holds the sender's object count (else it is reserved, zero): the receiver's count
 * is checked against it */
#define CDT__FRAME_FLAG_OBJECT_COUNT 0x2u
#define CDT__FRAME_FLAGS_KNOWN (CDT__FRAME_FLAG_BIG_ENDIAN | CDT__FRAME_FLAG_OBJECT_COUNT)

/* fixed part */
#define CDT__OFF_MAGIC 0
#define CDT__OFF_VERSION 4
#define CDT__OFF_FLAGS 6
#define CDT__OFF_HEADER_SIZE 8
#define CDT__OFF_PACKED_SIZE 16
#define CDT__OFF_REGION_COUNT 24
#define CDT__OFF_FRAME_SIZE 32
#define CDT__OFF_OBJECT_COUNT 40
/* region table entry */
#define CDT__REG_OFF_LEN 0
#define CDT__REG_OFF_KIND 8
#define CDT__REG_OFF_RESERVED 12

/* memcpy keeps unaligned access defined; compilers turn it into one load or store */
static inline void cdt__put_u16(unsigned char *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap16(v);
#endif
    memcpy(p, &v, 2);
}
static inline void cdt__put_u32(unsigned char *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}
static inline void cdt__put_u64(unsigned char *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}
static inline uint16_t cdt__get_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap16(v);
#endif
    return v;
}
static inline uint32_t cdt__get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline uint64_t cdt__get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline bool cdt__host_is_big_endian(void)
{
    return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

/* the fixed header (the region table, if any, follows it) of a frame of object_count objects */
static inline void cdt__frame_put_fixed(unsigned char *h, cdt_count header_size,
                                        cdt_count packed_size, cdt_count region_count,
                                        cdt_count frame_size, cdt_count object_count)
{
    uint16_t flags = CDT__FRAME_FLAG_OBJECT_COUNT;
    memcpy(h + CDT__OFF_MAGIC, CDT__FRAME_MAGIC, 4);
    cdt__put_u16(h + CDT__OFF_VERSION, CDT__FRAME_VERSION);
    if (cdt__host_is_big_endian())
        flags |= CDT__FRAME_FLAG_BIG_ENDIAN;
    cdt__put_u16(h + CDT__OFF_FLAGS, flags);
    cdt__put_u64(h + CDT__OFF_HEADER_SIZE, (uint64_t)header_size);
    cdt__put_u64(h + CDT__OFF_PACKED_SIZE, (uint64_t)packed_size);
    cdt__put_u64(h + CDT__OFF_REGION_COUNT, (uint64_t)region_count);
    cdt__put_u64(h + CDT__OFF_FRAME_SIZE, (uint64_t)frame_size);
    cdt__put_u64(h + CDT__OFF_OBJECT_COUNT, (uint64_t)object_count);
}

/* entry `index` of the region table after the fixed header: a region of `bytes` bytes whose
 * elements are `kind` (a region of a type of mixed kinds travels as bytes) */
static inline void cdt__frame_put_region(unsigned char *h, cdt_count index, cdt_count bytes,
                                         cdt_kind kind)
{
    unsigned char *e = h + CDT_FRAME_FIXED_HEADER_SIZE + index * CDT_FRAME_REGION_ENTRY_SIZE;
    cdt__put_u64(e + CDT__REG_OFF_LEN, (uint64_t)bytes);
    cdt__put_u32(e + CDT__REG_OFF_KIND, (uint32_t)(kind == CDT_KIND_MIXED ? CDT_KIND_BYTE : kind));
    cdt__put_u32(e + CDT__REG_OFF_RESERVED, 0);
}

/* offset rounded up to CDT_FRAME_ALIGN; false on overflow */
static inline bool cdt__frame_align(cdt_count off, cdt_count *out)
{
    cdt_count r;
    if (cdt__add_overflows(off, CDT_FRAME_ALIGN - 1, &r))
        return false;
    *out = r & ~(cdt_count)(CDT_FRAME_ALIGN - 1);
    return true;
}

/* One region as a frame's header describes it. The sender's frame object (frame_region) and the
 * decoder (dec_region) each keep one per region, so that cdt_frame_region_info and
 * cdt_decoder_region_info are the one function below. */
typedef struct cdt__region_rec {
    cdt_count bytes, frame_offset;
    cdt_kind kind;
    /* decoder only: cdt_decoder_region_done was called. It fills the padding after kind, so the
     * decoder's record stays as small as it was on its own (the sender's is unchanged too). */
    bool done;
} cdt__region_rec;

/* the outputs of cdt_frame_region_info / cdt_decoder_region_info (each may be NULL) */
static inline int cdt__region_info(const cdt__region_rec *r, cdt_count *len_bytes, cdt_kind *kind,
                                   cdt_count *frame_offset)
{
    if (len_bytes != NULL)
        *len_bytes = r->bytes;
    if (kind != NULL)
        *kind = r->kind;
    if (frame_offset != NULL)
        *frame_offset = r->frame_offset;
    return CDT_SUCCESS;
}

/* The shape of a frame's region table, kept by the walk that laid it out (frame_encode.c) or
 * checked it (the decoder's parse): the longest region's byte length (0: none), all regions'
 * bytes, and whether every region follows the bytes before it (the packed stream, the region
 * before) with no padding. The lane's cursor and head take a frame whose regions all travel
 * inline as one run without a look at each region (docs/TRANSPORT.md §10.3). */
typedef struct cdt__region_shape {
    cdt_count longest, bytes;
    bool gapless;
} cdt__region_shape;
CDT__TRANSPORT_SHARED void cdt__frame_region_shape(cdt_frame f, cdt__region_shape *out);
CDT__TRANSPORT_SHARED void cdt__decoder_region_shape(cdt_decoder d, cdt__region_shape *out);
/* whether the decoder is bound to a type that reads each packed-stream byte once: the
 * engine's (predefined and derived types) or a custom type that says so
 * (CDT_CUSTOM_FLAG_UNPACK_READS_ONCE). False before cdt_decoder_bind. */
CDT__TRANSPORT_SHARED bool cdt__decoder_reads_once(cdt_decoder d);

/* cdt_frame_encode(), except that the packed stream is not packed now: cdt_frame_gather()
 * packs the part of it that is asked for, straight into the caller's memory (the transport's
 * single-mode messages: packing happens inside UCX's own copy, piece by piece). Such a frame
 * has no head buffer to hand out: cdt_frame_head(), cdt_frame_iov_count() and cdt_frame_iov()
 * refuse it (CDT_ERR_INVALID_ARG), and gather fails with the pack's error (a custom type's
 * callback, or CDT_ERR_ORDER for an inorder type gathered out of order). */
CDT__HIDDEN int cdt__frame_encode_deferred(const void *buf, cdt_count count, cdt_type type,
                                           const cdt_frame_params *params, cdt_frame *out);
/* Turn a deferred frame into an ordinary one: the head buffer grows to header + packed stream
 * and the stream is packed now. On error the frame can only be freed. */
CDT__TRANSPORT_SHARED int cdt__frame_materialize(cdt_frame f);

/* frame_encode.c: cdt__frame_encode_deferred, except that a plain frame (no regions) that fits
 * dst[0, cap) is written there whole instead (packed now; *out = NULL, *frame_len its length):
 * the small-object path of the transport, with no frame object and no allocation. The type's
 * callbacks run once either way. */
CDT__TRANSPORT_SHARED int cdt__frame_encode_small(const void *buf, cdt_count count, cdt_type type,
                                                  const cdt_frame_params *params, void *dst,
                                                  cdt_count cap, cdt_count *frame_len,
                                                  cdt_frame *out);
/* frame_encode.c: cdt_frame_encode, except that a frame without regions that fits dst[0, cap)
 * is written there whole instead (*out = NULL, *frame_len its length): the same bytes as the
 * frame object's head, with no frame object and no allocation (the transport's split-mode
 * head message of a small object). A frame with regions is always a frame object. */
CDT__TRANSPORT_SHARED int cdt__frame_encode_plain(const void *buf, cdt_count count, cdt_type type,
                                                  const cdt_frame_params *params, void *dst,
                                                  cdt_count cap, cdt_count *frame_len,
                                                  cdt_frame *out);
/* frame_encode.c: cdt__frame_encode_plain, except that a frame object is deferred (as
 * cdt__frame_encode_deferred): the transport's lane packs its stream straight into the segment
 * (docs/TRANSPORT.md §10.3). */
CDT__TRANSPORT_SHARED int cdt__frame_encode_plain_deferred(const void *buf, cdt_count count,
                                                           cdt_type type,
                                                           const cdt_frame_params *params,
                                                           void *dst, cdt_count cap,
                                                           cdt_count *frame_len, cdt_frame *out);

#endif
