/*
 * frame_decode.c - validate and receive a frame.
 * The header is checked completely before anything is written to the receiver's memory, and
 * every later byte is checked against it: frame offsets are split into header, packed stream,
 * padding and regions, and tracked so that overlap and incompleteness are errors.
 */
#include "frame_format.h"
#include "frame_header.h"
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>

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
    cdt_count object_count; /* the sender's count, -1 when the frame carries none */
    unsigned char *header;  /* copy of the validated header: header_inline or allocated */
    dec_region *regions;
    cdt_count region_longest; /* the longest region's byte length (the parse's walk) */
    cdt_op op;                /* &op_storage after bind */
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
        if (params->field_mask &
            ~(uint64_t)(CDT_DECODER_PARAM_MAX_FRAME_BYTES | CDT_DECODER_PARAM_MAX_REGIONS))
            return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
        if (params->field_mask & CDT_DECODER_PARAM_MAX_FRAME_BYTES)
            max_frame = params->max_frame_bytes;
        if (params->field_mask & CDT_DECODER_PARAM_MAX_REGIONS)
            max_regions = params->max_regions;
        if (max_frame < 0 || max_regions < 0)
            return CDT_ERR_INVALID_ARG;
    }
    cdt_frame_info info;
    cdt_count object_count;
    int rc = cdt__frame_parse_fixed(data, len, &info, &object_count);
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
    if ((rc = cdt__frame_parse_regions(d->header, &info, d->regions, &d->region_longest)) !=
        CDT_SUCCESS)
        goto fail;
    d->info = info;
    d->object_count = object_count;
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
    uint64_t mask = info->field_mask;
    if (mask == 0 || (mask & ~(uint64_t)CDT_FRAME_INFO_ALL) != 0)
        return CDT_ERR_INVALID_ARG;
    /* only the fields asked for: a caller compiled against an older header has no others */
    if (mask & CDT_FRAME_INFO_VERSION)
        info->version = d->info.version;
    if (mask & CDT_FRAME_INFO_FLAGS)
        info->flags = d->info.flags;
    if (mask & CDT_FRAME_INFO_HEADER_SIZE)
        info->header_size = d->info.header_size;
    if (mask & CDT_FRAME_INFO_PACKED_SIZE)
        info->packed_size = d->info.packed_size;
    if (mask & CDT_FRAME_INFO_REGION_COUNT)
        info->region_count = d->info.region_count;
    if (mask & CDT_FRAME_INFO_REGION_BYTES)
        info->region_bytes = d->info.region_bytes;
    if (mask & CDT_FRAME_INFO_FRAME_SIZE)
        info->frame_size = d->info.frame_size;
    if (mask & CDT_FRAME_INFO_OBJECT_COUNT)
        info->object_count = d->object_count;
    return CDT_SUCCESS;
}

int cdt_decoder_region_info(cdt_decoder d, cdt_count index, cdt_count *len_bytes, cdt_kind *kind,
                            cdt_count *frame_offset)
{
    if (d == NULL || index < 0 || index >= d->info.region_count)
        return CDT_ERR_INVALID_ARG;
    return cdt__region_info(&d->regions[index].rec, len_bytes, kind, frame_offset);
}

void cdt__decoder_region_shape(cdt_decoder d, cdt__region_shape *out)
{
    const cdt_frame_info *in = &d->info;
    out->longest = d->region_longest;
    out->bytes = in->region_bytes;
    /* the parse put every region at its aligned offset and ended at frame_size exactly: no
     * byte of padding anywhere when the sizes add up */
    out->gapless = in->frame_size - in->header_size - in->packed_size == in->region_bytes;
}

bool cdt__decoder_reads_once(cdt_decoder d)
{
    if (d == NULL || d->op == NULL)
        return false; /* not bound: what will read the bytes is not known */
    const cdt_type t = d->op->type;
    return t->cls != CDT__CLASS_CUSTOM ||
           (t->custom->flags & CDT_CUSTOM_FLAG_UNPACK_READS_ONCE) != 0;
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
    /* a custom receiver's count against the sender's: its unpack callback never sees the stream
     * of more objects than it holds (a layout receives any stream its buffer holds, as before:
     * more is CDT_ERR_TRUNCATED) */
    if (custom)
        rc = cdt__frame_check_count(d->object_count, count);
    if (rc == CDT_SUCCESS)
        rc = cdt__op_set_stream_size(op, stream);
    if (rc != CDT_SUCCESS) {
        cdt__op_fini(op);
        return rc;
    }
    d->op = op;
    d->custom = custom;
    return CDT_SUCCESS;
}

static int resolve_regions(cdt_decoder d)
{
    if (d->regions_checked)
        return CDT_SUCCESS;
    int rc = cdt__frame_match_regions(d->op, &d->info, d->regions);
    d->regions_checked = rc == CDT_SUCCESS;
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
    return rc != CDT_SUCCESS ? rc : cdt__frame_copy_to_region(d->op, index, start, src, len);
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

/* A custom receiver's regions from `index` on (matched: resolve_regions), out of frame bytes
 * [at, at + len) in src: each region that starts where the bytes before it end (no padding to
 * check) and is one block in memory (an array of a contiguous type) is one memcpy here, so
 * that a fragment of many small regions costs one call of write_area, not one a region. Every
 * byte goes inside the region the header names at its offset, whose byte length the
 * receiver's region matched. Returns the bytes taken; stops at padding, at a strided region,
 * at the end of src or of the table (write_area goes on from there). */
static cdt_count copy_run(cdt_decoder d, cdt_count index, cdt_count at, const unsigned char *src,
                          cdt_count len)
{
    const cdt_op op = d->op;
    cdt_count done = 0;
    for (cdt_count i = index; i < d->info.region_count && done < len; i++) {
        const cdt__region_rec *r = &d->regions[i].rec;
        if (r->frame_offset != at + done)
            break; /* padding before region i */
        cdt_type t = op->region_types[i];
        if (!cdt__layout_is_contiguous(t, op->region_lens[i]))
            break;
        cdt_count n = r->bytes < len - done ? r->bytes : len - done;
        if (n > 0)
            memcpy(CDT__AT(op->region_bases[i], t->true_lb), src + done, (size_t)n);
        done += n;
        d->region_hint = n == r->bytes ? i + 1 : i;
        if (n < r->bytes)
            break;
    }
    return done;
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
    if (h < in->region_count && off < d->regions[h].rec.frame_offset + d->regions[h].rec.bytes &&
        (h == 0 || d->regions[h - 1].rec.frame_offset + d->regions[h - 1].rec.bytes <= off)) {
        lo = h;
    } else {
        while (lo < hi) {
            cdt_count mid = lo + (hi - lo) / 2;
            if (d->regions[mid].rec.frame_offset + d->regions[mid].rec.bytes <= off)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    if (lo == in->region_count)
        return CDT_ERR_FRAME_MALFORMED; /* past the end: cannot happen after range checks */
    const cdt__region_rec *r = &d->regions[lo].rec;
    if (off < r->frame_offset) { /* padding before region lo */
        cdt_count n = r->frame_offset - off < len ? r->frame_offset - off : len;
        *consumed = n;
        return cdt__frame_all_zero(src, n) ? CDT_SUCCESS : CDT_ERR_FRAME_MALFORMED;
    }
    cdt_count n = r->frame_offset + r->bytes - off < len ? r->frame_offset + r->bytes - off : len;
    *consumed = n;
    d->region_hint = off + n == r->frame_offset + r->bytes ? lo + 1 : lo;
    if (d->custom && !d->regions_checked && !stream_complete(d))
        return hold_early(d, off, src, n);
    int rc = write_region(d, lo, off - r->frame_offset, src, n);
    if (rc == CDT_SUCCESS && d->custom && n < len && off + n == r->frame_offset + r->bytes)
        *consumed = n + copy_run(d, lo + 1, off + n, src + n, len - n);
    return rc;
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
        offset += used;
        p += used;
        len -= used;
    }
    /* the areas written, recorded once (a write of many small regions is one range): inside
     * what the check found free and reserved room for, so it cannot fail */
    if (offset > first)
        cdt__ranges_add(&d->arrived, first, offset);
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
    return region_iov(d, index, 0, d->regions[index].rec.bytes, 0, 0, NULL, n);
}

int cdt_decoder_region_iov(cdt_decoder d, cdt_count index, cdt_count first, cdt_count max,
                           cdt_iov iov[], cdt_count *n_out)
{
    int rc = check_region_index(d, index);
    if (rc != CDT_SUCCESS)
        return rc;
    if (first < 0 || max < 0 || n_out == NULL || (iov == NULL && max > 0))
        return CDT_ERR_INVALID_ARG;
    return region_iov(d, index, 0, d->regions[index].rec.bytes, first, max, iov, n_out);
}

int cdt_decoder_region_done(cdt_decoder d, cdt_count index)
{
    int rc = check_region_index(d, index);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt__region_rec *r = &d->regions[index].rec;
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
    /* every region lies in [header_size + packed_size, frame_size) (the parse): when the bytes
     * arrived cover all of that as one range, as a gapless frame written in order does, no
     * region needs a look of its own */
    bool all = cdt__ranges_covers(&d->arrived, in->header_size, in->frame_size);
    for (cdt_count i = 0; !all && i < in->region_count; i++) {
        const cdt__region_rec *r = &d->regions[i].rec;
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
