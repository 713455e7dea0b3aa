/*
 * frame_decode_whole.c - cdt_frame_decode: a whole frame in one call. A frame without regions
 * is unpacked by one operation on the stack; a custom receiver's frame of a few regions is
 * checked as the decoder would and its regions copied straight from the frame; anything else
 * goes through a decoder.
 */
#include "frame_header.h"

#include <stdlib.h>
#include <string.h>

/* the regions of a whole frame into a custom receiver whose stream was delivered: checked
 * against the header as resolve_regions does, padding as write_area does, in frame order */
static int whole_regions(cdt_op op, const unsigned char *data, const cdt_frame_info *info,
                         const dec_region *regions)
{
    cdt_count at = info->header_size + info->packed_size;
    for (cdt_count i = 0; i < info->region_count; i++) {
        const cdt__region_rec *r = &regions[i].rec;
        if (!cdt__frame_all_zero(data + at, r->frame_offset - at))
            return CDT_ERR_FRAME_MALFORMED;
        at = r->frame_offset + r->bytes;
        int rc = i == 0 ? cdt__frame_match_regions(op, info, regions) : CDT_SUCCESS;
        if (rc == CDT_SUCCESS)
            rc = cdt__frame_copy_to_region(op, i, 0, data + r->frame_offset, r->bytes);
        if (rc != CDT_SUCCESS)
            return rc;
    }
    return CDT_SUCCESS;
}

/* A whole frame received in one call, checked as the decoder checks it (the fixed header, the
 * region table, the sizes, the padding), with no decoder: the small-object path. A frame
 * without regions takes one operation on the stack for any receiver; a custom receiver with up
 * to WHOLE_REGIONS regions also gets its regions copied straight from the frame. false: not
 * such a frame or receiver; the decoder path decides (and names the error). */
#define WHOLE_REGIONS 16
static bool decode_whole(const unsigned char *data, cdt_count len, void *buf, cdt_count count,
                         cdt_type type, int *rc)
{
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    cdt_count object_count;
    if (cdt__frame_parse_fixed(data, len, &info, &object_count) != CDT_SUCCESS ||
        info.frame_size != len)
        return false;
    /* a custom receiver's count against the sender's before anything is unpacked (a negative
     * count is left to the operation, which names it) */
    if (type != NULL && type->cls == CDT__CLASS_CUSTOM && count >= 0 &&
        (*rc = cdt__frame_check_count(object_count, count)) != CDT_SUCCESS)
        return true;
    if (info.region_count == 0) {
        if (info.header_size + info.packed_size != info.frame_size)
            return false;
        *rc = cdt__op_unpack_whole(buf, count, type, data + info.header_size, info.packed_size);
        return true;
    }
    dec_region regions[WHOLE_REGIONS];
    if (type == NULL || type->cls != CDT__CLASS_CUSTOM || info.region_count > WHOLE_REGIONS ||
        cdt__frame_parse_regions(data, &info, regions, NULL) != CDT_SUCCESS)
        return false;
    struct cdt_op_s op;
    *rc = cdt__op_init(&op, buf, count, type, false);
    if (*rc != CDT_SUCCESS)
        return true;
    *rc = cdt__op_deliver_whole(&op, data + info.header_size, info.packed_size);
    if (*rc == CDT_SUCCESS)
        *rc = whole_regions(&op, data, &info, regions);
    int frc = cdt__op_fini(&op);
    if (*rc == CDT_SUCCESS)
        *rc = frc;
    return true;
}

int cdt_frame_decode(const void *data, cdt_count len, void *buf, cdt_count count, cdt_type type)
{
    if (data == NULL || len < 0)
        return CDT_ERR_INVALID_ARG;
    int rc;
    if (decode_whole(data, len, buf, count, type, &rc))
        return rc;
    cdt_decoder d;
    rc = cdt_decoder_create(data, len, &d);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    rc = cdt_decoder_info(d, &info);
    if (rc == CDT_SUCCESS && len < info.frame_size)
        rc = CDT_ERR_FRAME_TRUNCATED;
    else if (rc == CDT_SUCCESS && len > info.frame_size)
        rc = CDT_ERR_FRAME_MALFORMED; /* trailing bytes: not what the sender framed */
    else if (rc == CDT_SUCCESS && (rc = cdt_decoder_bind(d, buf, count, type)) == CDT_SUCCESS &&
             (rc = cdt_decoder_write(d, 0, data, len)) == CDT_SUCCESS)
        rc = cdt_decoder_finish(d);
    int frc = cdt_decoder_free(d);
    return rc != CDT_SUCCESS ? rc : frc;
}
