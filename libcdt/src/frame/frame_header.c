/*
 * frame_header.c - a received frame's header read and checked completely (fixed part, region
 * table) before anything is allocated or written, and the two checks both receive paths
 * share: a custom receiver's regions against the header, and a copy into one of them.
 */
#include "frame_header.h"

#include <string.h>

int cdt__frame_parse_fixed(const unsigned char *h, cdt_count len, cdt_frame_info *info,
                           cdt_count *object_count)
{
    if (len < CDT_FRAME_FIXED_HEADER_SIZE)
        return CDT_ERR_FRAME_TRUNCATED;
    if (memcmp(h + CDT__OFF_MAGIC, CDT__FRAME_MAGIC, 4) != 0)
        return CDT_ERR_FRAME_MAGIC;
    uint16_t version = cdt__get_u16(h + CDT__OFF_VERSION);
    uint16_t flags = cdt__get_u16(h + CDT__OFF_FLAGS);
    if (version != CDT__FRAME_VERSION || (flags & ~CDT__FRAME_FLAGS_KNOWN))
        return CDT_ERR_FRAME_VERSION;
    if (((flags & CDT__FRAME_FLAG_BIG_ENDIAN) != 0) != cdt__host_is_big_endian())
        return CDT_ERR_BYTE_ORDER;
    uint64_t header_size = cdt__get_u64(h + CDT__OFF_HEADER_SIZE);
    uint64_t packed_size = cdt__get_u64(h + CDT__OFF_PACKED_SIZE);
    uint64_t region_count = cdt__get_u64(h + CDT__OFF_REGION_COUNT);
    uint64_t frame_size = cdt__get_u64(h + CDT__OFF_FRAME_SIZE);
    /* offset 40: the object count when the flag says so, else reserved (an earlier writer's
     * frame, read as before: no count to check) */
    uint64_t objects = cdt__get_u64(h + CDT__OFF_OBJECT_COUNT);
    bool has_count = (flags & CDT__FRAME_FLAG_OBJECT_COUNT) != 0;
    if (has_count ? objects > INT64_MAX : objects != 0)
        return CDT_ERR_FRAME_MALFORMED;
    /* every size must fit cdt_count; the region table must be exactly what header_size says */
    if (header_size > INT64_MAX || packed_size > INT64_MAX || frame_size > INT64_MAX ||
        region_count > (INT64_MAX - CDT_FRAME_FIXED_HEADER_SIZE) / CDT_FRAME_REGION_ENTRY_SIZE ||
        header_size != CDT_FRAME_FIXED_HEADER_SIZE + region_count * CDT_FRAME_REGION_ENTRY_SIZE ||
        packed_size > INT64_MAX - header_size || header_size + packed_size > frame_size)
        return CDT_ERR_FRAME_MALFORMED;
    *info = (cdt_frame_info){
        .version = version,
        .flags = flags,
        .header_size = (cdt_count)header_size,
        .packed_size = (cdt_count)packed_size,
        .region_count = (cdt_count)region_count,
        .frame_size = (cdt_count)frame_size,
        .object_count = has_count ? (cdt_count)objects : -1,
    };
    *object_count = info->object_count;
    return CDT_SUCCESS;
}

int cdt_frame_header_size(const void *data, cdt_count len, cdt_count *header_size)
{
    if (data == NULL || header_size == NULL || len < 0)
        return CDT_ERR_INVALID_ARG;
    cdt_frame_info info;
    cdt_count objects;
    int rc = cdt__frame_parse_fixed(data, len, &info, &objects);
    if (rc == CDT_SUCCESS)
        *header_size = info.header_size;
    return rc;
}

/* Region table: lengths, kinds, and offsets that must add up to frame_size exactly. */
int cdt__frame_parse_regions(const unsigned char *h, cdt_frame_info *info, dec_region *regions,
                             cdt_count *longest)
{
    cdt_count off = info->header_size + info->packed_size, stream = info->packed_size;
    cdt_count sum = 0, max = 0;
    for (cdt_count i = 0; i < info->region_count; i++) {
        const unsigned char *e = h + CDT_FRAME_FIXED_HEADER_SIZE + i * CDT_FRAME_REGION_ENTRY_SIZE;
        uint64_t bytes = cdt__get_u64(e + CDT__REG_OFF_LEN);
        uint32_t kind = cdt__get_u32(e + CDT__REG_OFF_KIND);
        if (bytes > INT64_MAX || cdt__get_u32(e + CDT__REG_OFF_RESERVED) != 0)
            return CDT_ERR_FRAME_MALFORMED;
        cdt_count ksize = cdt_kind_size((cdt_kind)kind);
        if (ksize == 0 || bytes % (uint64_t)ksize != 0)
            return CDT_ERR_FRAME_MALFORMED;
        dec_region *r = &regions[i];
        r->rec.bytes = (cdt_count)bytes;
        r->rec.kind = (cdt_kind)kind;
        r->stream_offset = stream;
        if (!cdt__frame_align(off, &r->rec.frame_offset) ||
            cdt__add_overflows(r->rec.frame_offset, r->rec.bytes, &off) ||
            cdt__add_overflows(sum, r->rec.bytes, &sum) ||
            cdt__add_overflows(stream, r->rec.bytes, &stream) || off > info->frame_size)
            return CDT_ERR_FRAME_MALFORMED;
        if (r->rec.bytes > max)
            max = r->rec.bytes;
    }
    if (off != info->frame_size)
        return CDT_ERR_FRAME_MALFORMED;
    info->region_bytes = sum;
    if (longest != NULL)
        *longest = max;
    return CDT_SUCCESS;
}

/* custom receivers: the region callback names the memory; it must match the header */
/* a custom receiver's regions (fetched once its packed stream is in; CDT_ERR_ORDER before)
 * must be the header's: as many, each of the same byte length */
int cdt__frame_match_regions(cdt_op op, const cdt_frame_info *info, const dec_region *regions)
{
    int rc = cdt__op_fetch_regions(op);
    if (rc != CDT_SUCCESS)
        return rc;
    if (op->region_count != info->region_count)
        return CDT_ERR_FRAME_MISMATCH;
    /* (each product was checked for overflow when the regions were fetched) */
    for (cdt_count i = 0; i < info->region_count; i++)
        if (op->region_lens[i] * op->region_types[i]->size != regions[i].rec.bytes)
            return CDT_ERR_FRAME_MISMATCH;
    return CDT_SUCCESS;
}

/* bytes [start, start + len) of a custom receiver's region `index` from src into its memory */
int cdt__frame_copy_to_region(cdt_op op, cdt_count index, cdt_count start, const unsigned char *src,
                              cdt_count len)
{
    cdt_type t = op->region_types[index];
    if (len == 0)
        return CDT_SUCCESS;
    if (cdt__layout_is_contiguous(t, op->region_lens[index])) { /* the usual region */
        memcpy((char *)op->region_bases[index] + t->true_lb + start, src, (size_t)len);
        return CDT_SUCCESS;
    }
    /* a strided region: the type's kernels unpack any range of its stream in one call */
    struct cdt__node *form;
    int rc = t->ops->form(t, &form);
    if (rc == CDT_SUCCESS)
        t->ops->unpack(form, t->extent, op->region_bases[index], start, len, src);
    return rc;
}

bool cdt__frame_all_zero(const unsigned char *p, cdt_count n)
{
    for (cdt_count i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}
