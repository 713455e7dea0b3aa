/*
 * frame_decode.c - validate and receive a frame.
 * The header is checked completely before anything is written to the receiver's memory, and
 * every later byte is checked against it: frame offsets are split into header, packed stream,
 * padding and regions, and tracked so that overlap and incompleteness are errors.
 */
#include "frame_format.h"
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>

typedef struct dec_region {
    cdt_count bytes, frame_offset, stream_offset; /* stream_offset: layout receivers */
    cdt_kind kind;
    bool done;
} dec_region;

#define INLINE_HEADER 256

/* Region bytes that came before the packed stream was complete, for a custom receiver: where
 * they go is known only once its region callback can run (after the stream), so they wait in
 * a copy. Bounded by the frame size the receiver accepted. */
typedef struct dec_early {
    struct dec_early *next;
    cdt_count frame_offset, len;
    unsigned char data[];
} dec_early;

struct cdt_decoder_s {
    cdt_frame_info info;
    unsigned char *header; /* copy of the validated header: header_inline or allocated */
    dec_region *regions;
    cdt_op op; /* &op_storage after bind */
    struct cdt_op_s op_storage;
    bool custom;           /* receiving into a custom type */
    cdt__ranges arrived;   /* frame bytes received */
    bool regions_checked;  /* the custom type's regions matched the header once: stays so */
    cdt_count region_hint; /* the region after the last one written: where writes usually go on */
    dec_early *early;      /* custom receivers: region bytes waiting for the packed stream */
    /* a write that failed part-way took [retry_off, retry_taken): the same write again
     * resumes after it (retry_taken <= retry_off: none) */
    cdt_count retry_off, retry_taken;
    unsigned char header_inline[INLINE_HEADER];
};

static int parse_fixed(const unsigned char *h, cdt_count len, cdt_frame_info *info)
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
    if (cdt__get_u64(h + CDT__OFF_RESERVED) != 0)
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
    };
    return CDT_SUCCESS;
}

int cdt_frame_header_size(const void *data, cdt_count len, cdt_count *header_size)
{
    if (data == NULL || header_size == NULL || len < 0)
        return CDT_ERR_INVALID_ARG;
    cdt_frame_info info;
    int rc = parse_fixed(data, len, &info);
    if (rc == CDT_SUCCESS)
        *header_size = info.header_size;
    return rc;
}

/* Region table: lengths, kinds, and offsets that must add up to frame_size exactly. */
static int parse_regions(const unsigned char *h, cdt_frame_info *info, dec_region *regions)
{
    cdt_count off = info->header_size + info->packed_size, stream = info->packed_size;
    cdt_count sum = 0;
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
        r->bytes = (cdt_count)bytes;
        r->kind = (cdt_kind)kind;
        r->stream_offset = stream;
        if (!cdt__frame_align(off, &r->frame_offset) ||
            cdt__add_overflows(r->frame_offset, r->bytes, &off) ||
            cdt__add_overflows(sum, r->bytes, &sum) ||
            cdt__add_overflows(stream, r->bytes, &stream) || off > info->frame_size)
            return CDT_ERR_FRAME_MALFORMED;
    }
    if (off != info->frame_size)
        return CDT_ERR_FRAME_MALFORMED;
    info->region_bytes = sum;
    return CDT_SUCCESS;
}

int cdt_decoder_create(const void *data, cdt_count len, cdt_decoder *out)
{
    return cdt_decoder_create_advanced(data, len, NULL, out);
}

int cdt_decoder_create_advanced(const void *data, cdt_count len, const cdt_decoder_params *params,
                                cdt_decoder *out)
{
    if (data == NULL || out == NULL || len < 0)
        return CDT_ERR_INVALID_ARG;
    cdt_count max_frame = INT64_MAX, max_regions = INT64_MAX;
    if (params != NULL) {
        if (params->field_mask & CDT_DECODER_PARAM_MAX_FRAME_BYTES)
            max_frame = params->max_frame_bytes;
        if (params->field_mask & CDT_DECODER_PARAM_MAX_REGIONS)
            max_regions = params->max_regions;
        if (max_frame < 0 || max_regions < 0)
            return CDT_ERR_INVALID_ARG;
    }
    cdt_frame_info info;
    int rc = parse_fixed(data, len, &info);
    if (rc != CDT_SUCCESS)
        return rc;
    /* limits come before the region table is even read: nothing is allocated for a frame that
     * is refused */
    if (info.frame_size > max_frame || info.region_count > max_regions)
        return CDT_ERR_LIMIT;
    if (len < info.header_size)
        return CDT_ERR_FRAME_TRUNCATED;
    /* allocation is bounded by the header bytes the caller actually holds */
    cdt_decoder d = malloc(sizeof(*d));
    if (d == NULL)
        return CDT_ERR_NO_MEMORY;
    memset(d, 0, offsetof(struct cdt_decoder_s, header_inline));
    d->header =
        info.header_size <= INLINE_HEADER ? d->header_inline : malloc((size_t)info.header_size);
    if (info.region_count > 0)
        d->regions = calloc((size_t)info.region_count, sizeof(dec_region));
    if (d->header == NULL || (info.region_count > 0 && d->regions == NULL)) {
        rc = CDT_ERR_NO_MEMORY;
        goto fail;
    }
    memcpy(d->header, data, (size_t)info.header_size);
    if ((rc = parse_regions(d->header, &info, d->regions)) != CDT_SUCCESS)
        goto fail;
    d->info = info;
    *out = d;
    return CDT_SUCCESS;
fail:
    if (d->header != d->header_inline)
        free(d->header);
    free(d->regions);
    free(d);
    return rc;
}

int cdt_decoder_info(cdt_decoder d, cdt_frame_info *info)
{
    if (d == NULL || info == NULL)
        return CDT_ERR_INVALID_ARG;
    *info = d->info;
    return CDT_SUCCESS;
}

int cdt_decoder_region_info(cdt_decoder d, cdt_count index, cdt_count *len_bytes, cdt_kind *kind,
                            cdt_count *frame_offset)
{
    if (d == NULL || index < 0 || index >= d->info.region_count)
        return CDT_ERR_INVALID_ARG;
    if (len_bytes != NULL)
        *len_bytes = d->regions[index].bytes;
    if (kind != NULL)
        *kind = d->regions[index].kind;
    if (frame_offset != NULL)
        *frame_offset = d->regions[index].frame_offset;
    return CDT_SUCCESS;
}

int cdt_decoder_bind(cdt_decoder d, void *buf, cdt_count count, cdt_type type)
{
    if (d == NULL)
        return CDT_ERR_INVALID_ARG;
    if (d->op != NULL)
        return CDT_ERR_ORDER;
    cdt_op op = &d->op_storage;
    int rc = cdt__op_init(op, buf, count, type, false);
    if (rc != CDT_SUCCESS)
        return rc;
    bool custom = type->cls == CDT__CLASS_CUSTOM;
    /* a layout receives packed stream and regions as one stream */
    cdt_count stream = d->info.packed_size + (custom ? 0 : d->info.region_bytes);
    rc = cdt__op_set_stream_size(op, stream);
    if (rc != CDT_SUCCESS) {
        cdt__op_fini(op);
        return rc;
    }
    d->op = op;
    d->custom = custom;
    return CDT_SUCCESS;
}

/* custom receivers: the region callback names the memory; it must match the header */
/* a custom receiver's regions (fetched once its packed stream is in; CDT_ERR_ORDER before)
 * must be the header's: as many, each of the same byte length */
static int match_regions(cdt_op op, const cdt_frame_info *info, const dec_region *regions)
{
    int rc = cdt__op_fetch_regions(op);
    if (rc != CDT_SUCCESS)
        return rc;
    if (op->region_count != info->region_count)
        return CDT_ERR_FRAME_MISMATCH;
    for (cdt_count i = 0; i < info->region_count; i++)
        if (cdt__op_region_bytes(op, i) != regions[i].bytes)
            return CDT_ERR_FRAME_MISMATCH;
    return CDT_SUCCESS;
}

static int resolve_regions(cdt_decoder d)
{
    if (d->regions_checked)
        return CDT_SUCCESS;
    int rc = match_regions(d->op, &d->info, d->regions);
    d->regions_checked = rc == CDT_SUCCESS;
    return rc;
}

/* bytes [start, start + len) of a custom receiver's region `index` from src into its memory */
static int copy_to_region(cdt_op op, cdt_count index, cdt_count start, const unsigned char *src,
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

static int region_iov(cdt_decoder d, cdt_count index, cdt_count start, cdt_count len,
                      cdt_count first, cdt_count max, cdt_iov *iov, cdt_count *n)
{
    if (d->custom) {
        int rc = resolve_regions(d);
        if (rc != CDT_SUCCESS)
            return rc;
        return cdt__layout_range_iov(d->op->region_bases[index], d->op->region_lens[index],
                                     d->op->region_types[index], start, len, first, max, iov, n);
    }
    return cdt__layout_range_iov(d->op->buf, d->op->count, d->op->type,
                                 d->regions[index].stream_offset + start, len, first, max, iov, n);
}

/* copy region bytes [start, start + len) of region `index` from src to its destination */
static int write_region(cdt_decoder d, cdt_count index, cdt_count start, const unsigned char *src,
                        cdt_count len)
{
    if (!d->custom) /* one stream: the engine's kernels are faster than an iov walk */
        return cdt_op_unpack(d->op, d->regions[index].stream_offset + start, src, len);
    int rc = resolve_regions(d);
    return rc != CDT_SUCCESS ? rc : copy_to_region(d->op, index, start, src, len);
}

static bool all_zero(const unsigned char *p, cdt_count n)
{
    for (cdt_count i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* custom receivers: every packed stream byte reached the unpack callback */
static bool stream_complete(cdt_decoder d)
{
    return d->op->delivered == d->info.packed_size;
}

static int hold_early(cdt_decoder d, cdt_count off, const unsigned char *src, cdt_count len)
{
    dec_early *e = malloc(sizeof(*e) + (size_t)len);
    if (e == NULL)
        return CDT_ERR_NO_MEMORY;
    e->frame_offset = off;
    e->len = len;
    memcpy(e->data, src, (size_t)len);
    e->next = d->early;
    d->early = e;
    return CDT_SUCCESS;
}

static int write_area(cdt_decoder d, cdt_count off, const unsigned char *src, cdt_count len,
                      cdt_count *consumed);

/* once the packed stream is complete, the region bytes that came early go where they belong;
 * a piece is dropped from the list only once written */
static int flush_early(cdt_decoder d)
{
    while (d->early != NULL && stream_complete(d)) {
        dec_early *e = d->early;
        cdt_count done = 0;
        while (done < e->len) {
            cdt_count used;
            int rc = write_area(d, e->frame_offset + done, e->data + done, e->len - done, &used);
            if (rc != CDT_SUCCESS)
                return rc;
            done += used;
        }
        d->early = e->next;
        free(e);
    }
    return CDT_SUCCESS;
}

/* deliver frame bytes [off, off + len), all inside one area, to where they belong */
static int write_area(cdt_decoder d, cdt_count off, const unsigned char *src, cdt_count len,
                      cdt_count *consumed)
{
    const cdt_frame_info *in = &d->info;
    cdt_count head_end = in->header_size + in->packed_size;
    if (off < in->header_size) {
        cdt_count n = in->header_size - off < len ? in->header_size - off : len;
        *consumed = n;
        return memcmp(d->header + off, src, (size_t)n) == 0 ? CDT_SUCCESS : CDT_ERR_FRAME_MALFORMED;
    }
    if (off < head_end) {
        cdt_count n = head_end - off < len ? head_end - off : len;
        *consumed = n;
        return cdt_op_unpack(d->op, off - in->header_size, src, n);
    }
    /* find the region at or after off (regions are sorted by frame offset); a receiver writes
     * them in order, so the region after the last one written is tried first */
    cdt_count lo = 0, hi = in->region_count, h = d->region_hint;
    if (h < in->region_count && off < d->regions[h].frame_offset + d->regions[h].bytes &&
        (h == 0 || d->regions[h - 1].frame_offset + d->regions[h - 1].bytes <= off)) {
        lo = h;
    } else {
        while (lo < hi) {
            cdt_count mid = lo + (hi - lo) / 2;
            if (d->regions[mid].frame_offset + d->regions[mid].bytes <= off)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    if (lo == in->region_count)
        return CDT_ERR_FRAME_MALFORMED; /* past the end: cannot happen after range checks */
    dec_region *r = &d->regions[lo];
    if (off < r->frame_offset) { /* padding before region lo */
        cdt_count n = r->frame_offset - off < len ? r->frame_offset - off : len;
        *consumed = n;
        return all_zero(src, n) ? CDT_SUCCESS : CDT_ERR_FRAME_MALFORMED;
    }
    cdt_count n = r->frame_offset + r->bytes - off < len ? r->frame_offset + r->bytes - off : len;
    *consumed = n;
    d->region_hint = off + n == r->frame_offset + r->bytes ? lo + 1 : lo;
    if (d->custom && !d->regions_checked && !stream_complete(d))
        return hold_early(d, off, src, n);
    return write_region(d, lo, off - r->frame_offset, src, n);
}

int cdt_decoder_write(cdt_decoder d, cdt_count offset, const void *src, cdt_count len)
{
    cdt_count end;
    if (d == NULL || offset < 0 || len < 0 || (src == NULL && len > 0) ||
        cdt__add_overflows(offset, len, &end))
        return CDT_ERR_INVALID_ARG;
    if (d->op == NULL)
        return CDT_ERR_ORDER;
    if (end > d->info.frame_size)
        return CDT_ERR_FRAME_MALFORMED;
    const unsigned char *p = src;
    int rc;
    if (d->retry_taken > offset && offset == d->retry_off && end >= d->retry_taken) {
        cdt_count skip = d->retry_taken - offset; /* taken by the failed call */
        offset += skip;
        p += skip;
        len -= skip;
    }
    d->retry_taken = 0;
    /* bytes count as arrived only once they reached the object (or wait in an early copy):
     * check for overlap and room first, record each area after it was written */
    rc = cdt__ranges_check(&d->arrived, offset, offset + len);
    if (rc != CDT_SUCCESS)
        return rc == CDT_ERR_INVALID_ARG ? CDT_ERR_FRAME_MALFORMED : rc;
    cdt_count first = offset;
    while (len > 0) {
        cdt_count used;
        rc = write_area(d, offset, p, len, &used);
        if (rc != CDT_SUCCESS)
            break;
        /* adjacent to what the check reserved room for: cannot fail */
        cdt__ranges_add(&d->arrived, offset, offset + used);
        offset += used;
        p += used;
        len -= used;
    }
    /* the packed stream may just have completed: region bytes that came early go in now */
    if (rc == CDT_SUCCESS && d->early != NULL && stream_complete(d))
        rc = flush_early(d);
    if (rc != CDT_SUCCESS) {
        d->retry_off = first;
        d->retry_taken = offset;
    }
    return rc;
}

static int check_region_index(cdt_decoder d, cdt_count index)
{
    if (d == NULL || index < 0 || index >= d->info.region_count)
        return CDT_ERR_INVALID_ARG;
    return d->op == NULL ? CDT_ERR_ORDER : CDT_SUCCESS;
}

int cdt_decoder_region_iov_count(cdt_decoder d, cdt_count index, cdt_count *n)
{
    int rc = check_region_index(d, index);
    if (rc != CDT_SUCCESS)
        return rc;
    if (n == NULL)
        return CDT_ERR_INVALID_ARG;
    return region_iov(d, index, 0, d->regions[index].bytes, 0, 0, NULL, n);
}

int cdt_decoder_region_iov(cdt_decoder d, cdt_count index, cdt_count first, cdt_count max,
                           cdt_iov iov[], cdt_count *n_out)
{
    int rc = check_region_index(d, index);
    if (rc != CDT_SUCCESS)
        return rc;
    if (first < 0 || max < 0 || n_out == NULL || (iov == NULL && max > 0))
        return CDT_ERR_INVALID_ARG;
    return region_iov(d, index, 0, d->regions[index].bytes, first, max, iov, n_out);
}

int cdt_decoder_region_done(cdt_decoder d, cdt_count index)
{
    int rc = check_region_index(d, index);
    if (rc != CDT_SUCCESS)
        return rc;
    dec_region *r = &d->regions[index];
    if (r->done)
        return CDT_ERR_ORDER;
    rc = cdt__ranges_add(&d->arrived, r->frame_offset, r->frame_offset + r->bytes);
    if (rc != CDT_SUCCESS)
        return rc == CDT_ERR_INVALID_ARG ? CDT_ERR_ORDER : rc;
    r->done = true;
    return CDT_SUCCESS;
}

int cdt_decoder_finish(cdt_decoder d)
{
    if (d == NULL)
        return CDT_ERR_INVALID_ARG;
    if (d->op == NULL)
        return CDT_ERR_ORDER;
    /* the header was given to create; padding carries no data; the rest must be here */
    const cdt_frame_info *in = &d->info;
    if (!cdt__ranges_covers(&d->arrived, in->header_size, in->header_size + in->packed_size))
        return CDT_ERR_INCOMPLETE;
    for (cdt_count i = 0; i < in->region_count; i++) {
        const dec_region *r = &d->regions[i];
        if (!cdt__ranges_covers(&d->arrived, r->frame_offset, r->frame_offset + r->bytes))
            return CDT_ERR_INCOMPLETE;
    }
    if (d->op->pending != NULL || (d->custom && !stream_complete(d)))
        return CDT_ERR_INCOMPLETE; /* stream fragments still held for in-order delivery */
    int rc = flush_early(d);
    if (rc != CDT_SUCCESS)
        return rc;
    /* a custom receiver with zero regions still confirms it expected none */
    if (d->custom && !d->op->regions_known)
        return resolve_regions(d);
    return CDT_SUCCESS;
}

int cdt_decoder_free(cdt_decoder d)
{
    if (d == NULL)
        return CDT_SUCCESS;
    int rc = d->op != NULL ? cdt__op_fini(d->op) : CDT_SUCCESS;
    while (d->early != NULL) {
        dec_early *e = d->early;
        d->early = e->next;
        free(e);
    }
    cdt__ranges_free(&d->arrived);
    if (d->header != d->header_inline)
        free(d->header);
    free(d->regions);
    free(d);
    return rc;
}

/* the regions of a whole frame into a custom receiver whose stream was delivered: checked
 * against the header as resolve_regions does, padding as write_area does, in frame order */
static int whole_regions(cdt_op op, const unsigned char *data, const cdt_frame_info *info,
                         const dec_region *regions)
{
    cdt_count at = info->header_size + info->packed_size;
    for (cdt_count i = 0; i < info->region_count; i++) {
        const dec_region *r = &regions[i];
        if (!all_zero(data + at, r->frame_offset - at))
            return CDT_ERR_FRAME_MALFORMED;
        at = r->frame_offset + r->bytes;
        int rc = i == 0 ? match_regions(op, info, regions) : CDT_SUCCESS;
        if (rc == CDT_SUCCESS)
            rc = copy_to_region(op, i, 0, data + r->frame_offset, r->bytes);
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
    cdt_frame_info info;
    if (parse_fixed(data, len, &info) != CDT_SUCCESS || info.frame_size != len)
        return false;
    if (info.region_count == 0) {
        if (info.header_size + info.packed_size != info.frame_size)
            return false;
        *rc = cdt__op_unpack_whole(buf, count, type, data + info.header_size, info.packed_size);
        return true;
    }
    dec_region regions[WHOLE_REGIONS];
    if (type == NULL || type->cls != CDT__CLASS_CUSTOM || info.region_count > WHOLE_REGIONS ||
        parse_regions(data, &info, regions) != CDT_SUCCESS)
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
    if (len < d->info.frame_size)
        rc = CDT_ERR_FRAME_TRUNCATED;
    else if (len > d->info.frame_size)
        rc = CDT_ERR_FRAME_MALFORMED; /* trailing bytes: not what the sender framed */
    else if ((rc = cdt_decoder_bind(d, buf, count, type)) == CDT_SUCCESS &&
             (rc = cdt_decoder_write(d, 0, data, len)) == CDT_SUCCESS)
        rc = cdt_decoder_finish(d);
    int frc = cdt_decoder_free(d);
    return rc != CDT_SUCCESS ? rc : frc;
}
