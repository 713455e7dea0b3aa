/*
 * frame_encode.c - build a frame: header and packed stream in one owned buffer, regions by
 * reference. The frame is described as an iov list so any transport can send it without
 * touching region bytes.
 */
#include "frame_format.h"
#include "frame_object.h"
#include "core/core.h"

#include <stddef.h>
#include <stdlib.h>

static const unsigned char zero_pad[CDT_FRAME_ALIGN];

/* The regions to send: a custom type's own, or for a large contiguous layout the buffer. */
typedef struct region_src {
    void *base;
    cdt_count len;
    cdt_type type;
} region_src;

/* a region whose bytes are one block (the usual: an array of a contiguous type) is one piece,
 * or none when empty: what cdt__layout_range_iov gives for it, without its two calls */
static bool one_block(const region_src *src)
{
    return cdt__layout_is_contiguous(src->type, src->len);
}

/* Each region's pieces (its byte range as an iov list) into f->pieces, in region order: one
 * walk counts them, a second fills the one array. */
static int collect_pieces(cdt_frame f, const region_src *src)
{
    cdt_count total = 0;
    for (cdt_count i = 0; i < f->region_count; i++) {
        cdt_count n = f->regions[i].rec.bytes > 0;
        int rc = one_block(&src[i])
                     ? CDT_SUCCESS
                     : cdt__layout_range_iov(src[i].base, src[i].len, src[i].type, 0,
                                             f->regions[i].rec.bytes, 0, 0, NULL, &n);
        if (rc != CDT_SUCCESS)
            return rc;
        f->regions[i].first_piece = total;
        f->regions[i].n_pieces = n;
        if (cdt__add_overflows(total, n, &total))
            return CDT_ERR_OVERFLOW;
    }
    if (total > 0) {
        f->pieces = malloc((size_t)total * sizeof(cdt_iov));
        if (f->pieces == NULL)
            return CDT_ERR_NO_MEMORY;
    }
    for (cdt_count i = 0; i < f->region_count; i++) {
        frame_region *r = &f->regions[i];
        cdt_count n;
        /* no piece array when no region has a piece (no offset from a null pointer) */
        cdt_iov *at = f->pieces != NULL ? f->pieces + r->first_piece : NULL;
        if (one_block(&src[i])) {
            if (r->n_pieces > 0)
                *at = (cdt_iov){CDT__AT(src[i].base, src[i].type->true_lb), r->rec.bytes};
            continue;
        }
        int rc = cdt__layout_range_iov(src[i].base, src[i].len, src[i].type, 0, r->rec.bytes, 0,
                                       r->n_pieces, at, &n);
        if (rc != CDT_SUCCESS)
            return rc;
        /* internal consistency check, cannot fail: both walks are over the same committed
         * layout, base and length (a custom type's regions were fetched once, into the
         * operation). The bound above keeps a disagreement inside the array; this keeps it
         * from leaving pieces unset. */
        if (n != r->n_pieces)
            return CDT_ERR_CALLBACK;
    }
    f->n_pieces = total;
    return CDT_SUCCESS;
}

static int layout_frame(cdt_frame f, cdt_count packed_size, const region_src *src,
                        cdt_frame_alloc_func_t *alloc)
{
    /* (a deferred frame allocates only the header: see head_alloc_len below) */
    cdt_count header_size, off;
    if (cdt__mul_overflows(f->region_count, CDT_FRAME_REGION_ENTRY_SIZE, &header_size) ||
        cdt__add_overflows(header_size, CDT_FRAME_FIXED_HEADER_SIZE, &header_size) ||
        cdt__add_overflows(header_size, packed_size, &off))
        return CDT_ERR_OVERFLOW;
    f->head_len = off;
    f->region_shape = (cdt__region_shape){.gapless = true};
    for (cdt_count i = 0; i < f->region_count; i++) {
        cdt__region_rec *r = &f->regions[i].rec;
        if (cdt__mul_overflows(src[i].len, src[i].type->size, &r->bytes))
            return CDT_ERR_OVERFLOW;
        r->kind = src[i].type->kind == CDT_KIND_MIXED ? CDT_KIND_BYTE : src[i].type->kind;
        cdt_count end = off; /* of the bytes before: padding when the region starts later */
        if (!cdt__frame_align(off, &r->frame_offset) ||
            cdt__add_overflows(r->frame_offset, r->bytes, &off))
            return CDT_ERR_OVERFLOW;
        cdt__region_shape *s = &f->region_shape;
        if (r->bytes > s->longest)
            s->longest = r->bytes;
        s->bytes += r->bytes; /* at most off, which did not overflow */
        if (r->frame_offset != end)
            s->gapless = false;
    }
    f->frame_size = off;
    f->header_size = header_size;
    f->head_alloc_len = f->deferred ? header_size : f->head_len;
    if ((uint64_t)f->head_alloc_len > SIZE_MAX)
        return CDT_ERR_NO_MEMORY;
    if (f->head_alloc_len <= INLINE_HEAD)
        f->head = f->head_inline;
    else if (alloc != NULL)
        f->head = alloc(f->head_alloc_arg, (size_t)f->head_alloc_len);
    else
        f->head = malloc((size_t)f->head_alloc_len);
    if (f->head == NULL)
        return CDT_ERR_NO_MEMORY;

    unsigned char *h = f->head;
    cdt__frame_put_fixed(h, header_size, packed_size, f->region_count, f->frame_size, f->op->count);
    for (cdt_count i = 0; i < f->region_count; i++)
        cdt__frame_put_region(h, i, f->regions[i].rec.bytes, f->regions[i].rec.kind);
    return CDT_SUCCESS;
}

/* the whole packed stream of a begun pack operation into dst[0, len) */
static int pack_into(cdt_op op, unsigned char *dst, cdt_count len)
{
    for (cdt_count off = 0; off < len;) {
        cdt_count used;
        int rc = cdt_op_pack(op, off, dst + off, len - off, &used);
        if (rc != CDT_SUCCESS)
            return rc;
        if (used == 0)
            return CDT_ERR_CALLBACK; /* the stream ended before its announced size */
        off += used;
    }
    return CDT_SUCCESS;
}

static int pack_stream(cdt_frame f, cdt_count header_size, cdt_count packed_size)
{
    return pack_into(f->op, f->head + header_size, packed_size);
}

static int build_iov(cdt_frame f)
{
    cdt_count cap = 1 + 2 * f->region_count + f->n_pieces;
    if (cap <= INLINE_IOV) {
        f->iov = f->iov_inline;
        f->iov_start = f->iov_start_inline;
    } else {
        /* one block: the iov list, then the start offsets */
        f->iov = malloc((size_t)cap * (sizeof(cdt_iov) + sizeof(cdt_count)));
        if (f->iov == NULL)
            return CDT_ERR_NO_MEMORY;
        f->iov_start = (cdt_count *)(f->iov + cap);
    }
    cdt_count n = 0, off = f->head_len;
    f->iov[n++] = (cdt_iov){f->head, f->head_len};
    for (cdt_count i = 0; i < f->region_count; i++) {
        frame_region *r = &f->regions[i];
        if (r->rec.frame_offset > off) /* also before an empty region: it moves the offset */
            f->iov[n++] = (cdt_iov){(void *)zero_pad, r->rec.frame_offset - off};
        for (cdt_count p = 0; p < r->n_pieces; p++)
            f->iov[n++] = f->pieces[r->first_piece + p];
        off = r->rec.frame_offset + r->rec.bytes;
    }
    f->n_iov = n;
    for (cdt_count i = 0, at = 0; i < n; i++) {
        f->iov_start[i] = at;
        at += f->iov[i].len;
    }
    return CDT_SUCCESS;
}

static cdt_count default_threshold(const cdt_frame_params *params)
{
    if (params != NULL && (params->field_mask & CDT_FRAME_PARAM_REGION_THRESHOLD))
        return params->region_threshold;
    return 8192;
}

/* where a plain frame (no regions) may be written whole instead of making a frame object;
 * plain: only the frame cdt_frame_encode would make, one without regions (a custom type's, or
 * a large contiguous block sent in place), is written there */
typedef struct small_dst {
    unsigned char *dst;
    cdt_count cap, *frame_len;
    bool plain;
} small_dst;

/* The whole frame of a begun pack operation with n <= CDT__OP_INLINE_REGIONS regions (a custom
 * type's, fetched; 0 for a layout), written into small->dst if it fits (*fits; else nothing is
 * written): header, region table, packed stream, each region after its padding, the same
 * bytes as cdt_frame_encode + cdt_frame_gather. */
static int write_small(cdt_op op, cdt_count packed_size, cdt_count n, const small_dst *small,
                       bool *fits)
{
    const cdt_count header_size = CDT_FRAME_FIXED_HEADER_SIZE + n * CDT_FRAME_REGION_ENTRY_SIZE;
    cdt_count end, offs[CDT__OP_INLINE_REGIONS], bytes[CDT__OP_INLINE_REGIONS];
    if (cdt__add_overflows(header_size, packed_size, &end))
        return CDT_SUCCESS;
    for (cdt_count i = 0; i < n; i++)
        if (cdt__mul_overflows(op->region_lens[i], op->region_types[i]->size, &bytes[i]) ||
            !cdt__frame_align(end, &offs[i]) || cdt__add_overflows(offs[i], bytes[i], &end))
            return CDT_SUCCESS;
    if (end > small->cap)
        return CDT_SUCCESS;
    *fits = true;
    unsigned char *h = small->dst;
    cdt__frame_put_fixed(h, header_size, packed_size, n, end, op->count);
    for (cdt_count i = 0; i < n; i++)
        cdt__frame_put_region(h, i, bytes[i], op->region_types[i]->kind);
    int rc = pack_into(op, h + header_size, packed_size);
    cdt_count at = header_size + packed_size;
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < n; i++) {
        memset(h + at, 0, (size_t)(offs[i] - at));
        at = offs[i] + bytes[i];
        if (bytes[i] == 0)
            continue;
        cdt_type t = op->region_types[i];
        struct cdt__node *form;
        rc = t->ops->form(t, &form);
        if (rc == CDT_SUCCESS)
            t->ops->pack(form, t->extent, op->region_bases[i], 0, bytes[i], h + offs[i]);
    }
    if (rc == CDT_SUCCESS)
        *small->frame_len = end;
    return rc;
}

static int check_params(const cdt_frame_params *params)
{
    if (params == NULL)
        return CDT_SUCCESS;
    if (params->field_mask &
        ~(uint64_t)(CDT_FRAME_PARAM_REGION_THRESHOLD | CDT_FRAME_PARAM_HEAD_ALLOCATOR))
        return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
    if ((params->field_mask & CDT_FRAME_PARAM_HEAD_ALLOCATOR) &&
        (params->head_alloc == NULL || params->head_release == NULL))
        return CDT_ERR_INVALID_ARG;
    return CDT_SUCCESS;
}

/* a pack operation on op (on the caller's stack), its packed size, and for a custom type its
 * regions fetched; on failure nothing is left to release */
static int begin_op(struct cdt_op_s *op, const void *buf, cdt_count count, cdt_type type,
                    cdt_count *packed_size)
{
    int rc = cdt__op_init(op, (void *)buf, count, type, true);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt_op_packed_size(op, packed_size);
    if (rc == CDT_SUCCESS && type->cls == CDT__CLASS_CUSTOM)
        rc = cdt__op_fetch_regions(op);
    if (rc != CDT_SUCCESS)
        cdt__op_fini(op);
    return rc;
}

/* a frame object that the begun operation op moves into; on failure op is finished */
static int new_frame(struct cdt_op_s *op, const cdt_frame_params *params, bool deferred,
                     cdt_frame *out)
{
    cdt_frame f = malloc(sizeof(*f));
    if (f == NULL) {
        cdt__op_fini(op);
        return CDT_ERR_NO_MEMORY;
    }
    /* everything but the inline arrays starts zeroed */
    memset(f, 0, offsetof(struct cdt_frame_s, iov_inline));
    f->deferred = deferred;
    cdt__op_move(&f->op_storage, op);
    f->op = &f->op_storage;
    if (params != NULL && (params->field_mask & CDT_FRAME_PARAM_HEAD_ALLOCATOR)) {
        f->head_alloc = params->head_alloc;
        f->head_release = params->head_release;
        f->head_alloc_arg = params->head_alloc_arg;
    }
    *out = f;
    return CDT_SUCCESS;
}

/* The regions the frame sends by reference: a custom type's own (fetched into the operation),
 * or for a layout whose packed stream is one contiguous block of at least the region
 * threshold, that block, sent in place rather than copied (the packed stream is then empty:
 * *packed_size becomes 0). Sets f->region_count and allocates f->regions; *src describes each
 * region and is `whole` or an allocation for the caller to free (NULL: no regions). */
static int choose_regions(cdt_frame f, const cdt_frame_params *params, region_src *whole,
                          region_src **src, cdt_count *packed_size)
{
    cdt_op op = f->op;
    *src = NULL;
    if (op->type->cls == CDT__CLASS_CUSTOM) {
        f->region_count = op->region_count;
        if (f->region_count > 0) {
            *src = malloc((size_t)f->region_count * sizeof(**src));
            if (*src == NULL)
                return CDT_ERR_NO_MEMORY;
            for (cdt_count i = 0; i < f->region_count; i++)
                (*src)[i] =
                    (region_src){op->region_bases[i], op->region_lens[i], op->region_types[i]};
        }
    } else {
        cdt_count threshold = default_threshold(params);
        if (threshold >= 0 && *packed_size >= threshold && *packed_size > 0 &&
            cdt__layout_is_contiguous(op->type, op->count)) {
            *whole = (region_src){op->buf, op->count, op->type};
            *src = whole;
            *packed_size = 0;
            f->region_count = 1;
        }
    }
    if (f->region_count > 0) {
        f->regions = calloc((size_t)f->region_count, sizeof(frame_region));
        if (f->regions == NULL)
            return CDT_ERR_NO_MEMORY;
    }
    return CDT_SUCCESS;
}

static int encode(const void *buf, cdt_count count, cdt_type type, const cdt_frame_params *params,
                  bool deferred, const small_dst *small, cdt_frame *out)
{
    if (out == NULL)
        return CDT_ERR_INVALID_ARG;
    int rc = check_params(params);
    if (rc != CDT_SUCCESS)
        return rc;
    /* the operation starts on the stack: a small plain frame needs no frame object */
    struct cdt_op_s op;
    cdt_count packed_size;
    if ((rc = begin_op(&op, buf, count, type, &packed_size)) != CDT_SUCCESS)
        return rc;
    bool custom = type->cls == CDT__CLASS_CUSTOM;
    bool want_small = small != NULL && (!custom || op.region_count <= CDT__OP_INLINE_REGIONS);
    if (want_small && small->plain) {
        /* the rule of choose_regions: no region at all, or no plain frame */
        cdt_count threshold = default_threshold(params);
        want_small = custom ? op.region_count == 0
                            : threshold < 0 || packed_size < threshold || packed_size == 0;
    }
    if (want_small) {
        /* a whole message: a large contiguous block is no region there, just stream bytes */
        bool fits = false;
        rc = write_small(&op, packed_size, custom ? op.region_count : 0, small, &fits);
        if (fits) {
            int frc = cdt__op_fini(&op);
            if (rc == CDT_SUCCESS)
                rc = frc;
            if (rc == CDT_SUCCESS)
                *out = NULL;
            return rc;
        }
    }

    cdt_frame f;
    if ((rc = new_frame(&op, params, deferred, &f)) != CDT_SUCCESS)
        return rc;
    region_src whole, *src = NULL;
    if ((rc = choose_regions(f, params, &whole, &src, &packed_size)) != CDT_SUCCESS ||
        (rc = layout_frame(f, packed_size, src, f->head_alloc)) != CDT_SUCCESS ||
        (!deferred && (rc = pack_stream(f, f->header_size, packed_size)) != CDT_SUCCESS) ||
        (rc = collect_pieces(f, src)) != CDT_SUCCESS || (rc = build_iov(f)) != CDT_SUCCESS) {
        if (src != &whole)
            free(src);
        cdt_frame_free(f);
        return rc;
    }
    if (src != &whole)
        free(src);
    *out = f;
    return CDT_SUCCESS;
}

int cdt_frame_encode(const void *buf, cdt_count count, cdt_type type,
                     const cdt_frame_params *params, cdt_frame *out)
{
    return encode(buf, count, type, params, false, NULL, out);
}

int cdt__frame_encode_small(const void *buf, cdt_count count, cdt_type type,
                            const cdt_frame_params *params, void *dst, cdt_count cap,
                            cdt_count *frame_len, cdt_frame *out)
{
    small_dst small = {dst, cap, frame_len, false};
    return encode(buf, count, type, params, true, &small, out);
}

int cdt__frame_encode_plain(const void *buf, cdt_count count, cdt_type type,
                            const cdt_frame_params *params, void *dst, cdt_count cap,
                            cdt_count *frame_len, cdt_frame *out)
{
    small_dst small = {dst, cap, frame_len, true};
    return encode(buf, count, type, params, false, &small, out);
}

int cdt__frame_encode_plain_deferred(const void *buf, cdt_count count, cdt_type type,
                                     const cdt_frame_params *params, void *dst, cdt_count cap,
                                     cdt_count *frame_len, cdt_frame *out)
{
    small_dst small = {dst, cap, frame_len, true};
    return encode(buf, count, type, params, true, &small, out);
}

int cdt__frame_encode_deferred(const void *buf, cdt_count count, cdt_type type,
                               const cdt_frame_params *params, cdt_frame *out)
{
    return encode(buf, count, type, params, true, NULL, out);
}

int cdt__frame_materialize(cdt_frame f)
{
    if (f == NULL || !f->deferred)
        return f == NULL ? CDT_ERR_INVALID_ARG : CDT_SUCCESS;
    unsigned char *h = f->head;
    if (f->head_len > f->head_alloc_len) { /* room for the packed stream */
        if ((uint64_t)f->head_len > SIZE_MAX)
            return CDT_ERR_NO_MEMORY;
        h = f->head_len <= INLINE_HEAD ? f->head_inline
            : f->head_alloc != NULL    ? f->head_alloc(f->head_alloc_arg, (size_t)f->head_len)
                                       : malloc((size_t)f->head_len);
        if (h == NULL)
            return CDT_ERR_NO_MEMORY;
        if (h != f->head) {
            memcpy(h, f->head, (size_t)f->header_size);
            if (f->head != f->head_inline) {
                if (f->head_release != NULL)
                    f->head_release(f->head_alloc_arg, f->head, (size_t)f->head_alloc_len);
                else
                    free(f->head);
            }
        }
    }
    f->head = h;
    f->head_alloc_len = f->head_len;
    f->deferred = false;
    f->iov[0].base = h;
    return pack_stream(f, f->header_size, f->head_len - f->header_size);
}
