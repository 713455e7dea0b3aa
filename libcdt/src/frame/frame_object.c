/*
 * frame_object.c - what a built frame hands out: its size, head, regions and their iov lists,
 * the whole frame as an iov list, bytes gathered from any offset, and its release.
 */
#include "frame_object.h"

#include <stdlib.h>
#include <string.h>

int cdt_frame_free(cdt_frame f)
{
    if (f == NULL)
        return CDT_SUCCESS;
    int rc = f->op != NULL ? cdt__op_fini(f->op) : CDT_SUCCESS;
    if (f->head != f->head_inline && f->head != NULL) {
        if (f->head_release != NULL)
            f->head_release(f->head_alloc_arg, f->head, (size_t)f->head_alloc_len);
        else
            free(f->head);
    }
    free(f->regions);
    free(f->pieces);
    if (f->iov != f->iov_inline)
        free(f->iov);
    free(f);
    return rc;
}

int cdt_frame_size(cdt_frame f, cdt_count *bytes)
{
    if (f == NULL || bytes == NULL)
        return CDT_ERR_INVALID_ARG;
    *bytes = f->frame_size;
    return CDT_SUCCESS;
}

int cdt_frame_head(cdt_frame f, const void **data, cdt_count *len)
{
    if (f == NULL || data == NULL || len == NULL || f->deferred)
        return CDT_ERR_INVALID_ARG;
    *data = f->head;
    *len = f->head_len;
    return CDT_SUCCESS;
}

int cdt_frame_region_count(cdt_frame f, cdt_count *n)
{
    if (f == NULL || n == NULL)
        return CDT_ERR_INVALID_ARG;
    *n = f->region_count;
    return CDT_SUCCESS;
}

void cdt__frame_region_shape(cdt_frame f, cdt__region_shape *out)
{
    *out = f->region_shape;
}

int cdt_frame_region_info(cdt_frame f, cdt_count index, cdt_count *len_bytes, cdt_kind *kind,
                          cdt_count *frame_offset)
{
    if (f == NULL || index < 0 || index >= f->region_count)
        return CDT_ERR_INVALID_ARG;
    return cdt__region_info(&f->regions[index].rec, len_bytes, kind, frame_offset);
}

static int copy_iov(const cdt_iov *src, cdt_count n, cdt_count first, cdt_count max, cdt_iov iov[],
                    cdt_count *n_out)
{
    if (first < 0 || max < 0 || n_out == NULL || (iov == NULL && max > 0))
        return CDT_ERR_INVALID_ARG;
    cdt_count k = 0;
    for (cdt_count i = first; i < n && k < max; i++)
        iov[k++] = src[i];
    *n_out = k;
    return CDT_SUCCESS;
}

int cdt_frame_region_iov_count(cdt_frame f, cdt_count index, cdt_count *n)
{
    if (f == NULL || n == NULL || index < 0 || index >= f->region_count)
        return CDT_ERR_INVALID_ARG;
    *n = f->regions[index].n_pieces;
    return CDT_SUCCESS;
}

int cdt_frame_region_iov(cdt_frame f, cdt_count index, cdt_count first, cdt_count max,
                         cdt_iov iov[], cdt_count *n_out)
{
    if (f == NULL || index < 0 || index >= f->region_count)
        return CDT_ERR_INVALID_ARG;
    const frame_region *r = &f->regions[index];
    return copy_iov(f->pieces + r->first_piece, r->n_pieces, first, max, iov, n_out);
}

int cdt_frame_iov_count(cdt_frame f, cdt_count *n)
{
    if (f == NULL || n == NULL || f->deferred)
        return CDT_ERR_INVALID_ARG;
    *n = f->n_iov;
    return CDT_SUCCESS;
}

int cdt_frame_iov(cdt_frame f, cdt_count first, cdt_count max, cdt_iov iov[], cdt_count *n_out)
{
    if (f == NULL || f->deferred)
        return CDT_ERR_INVALID_ARG;
    return copy_iov(f->iov, f->n_iov, first, max, iov, n_out);
}

int cdt_frame_gather(cdt_frame f, cdt_count offset, void *dst, cdt_count len)
{
    cdt_count end;
    if (f == NULL || offset < 0 || len < 0 || (dst == NULL && len > 0) ||
        cdt__add_overflows(offset, len, &end) || end > f->frame_size)
        return CDT_ERR_INVALID_ARG;
    if (len == 0)
        return CDT_SUCCESS;
    unsigned char *out = dst;
    if (f->deferred && offset < f->head_len) {
        /* the header from the head buffer, the packed stream packed now */
        cdt_count hs = f->header_size, n = (end < hs ? end : hs) - offset;
        if (n > 0) {
            memcpy(out, f->head + offset, (size_t)n);
            out += n;
            offset += n;
        }
        cdt_count stop = end < f->head_len ? end : f->head_len;
        while (offset < stop) {
            cdt_count used;
            int rc = cdt_op_pack(f->op, offset - hs, out, stop - offset, &used);
            if (rc != CDT_SUCCESS)
                return rc;
            if (used == 0)
                return CDT_ERR_CALLBACK; /* the stream ended before its announced size */
            out += used;
            offset += used;
        }
        if (offset == end)
            return CDT_SUCCESS;
        len = end - offset;
    }
    /* the last entry starting at or before offset: a transport gathers region by region, so a
     * scan from the start would make a frame of n regions cost n^2 */
    cdt_count lo = cdt__last_at_or_below(f->iov_start, f->n_iov, offset);
    if (lo == 0 && f->deferred)
        lo = 1; /* the head entry was handled above */
    for (cdt_count i = lo; i < f->n_iov && f->iov_start[i] < end; i++) {
        cdt_count a0 = f->iov_start[i], b0 = a0 + f->iov[i].len;
        cdt_count a = a0 < offset ? offset : a0, b = b0 < end ? b0 : end;
        if (b > a)
            memcpy(out + (a - offset), (const char *)f->iov[i].base + (a - a0), (size_t)(b - a));
    }
    return CDT_SUCCESS;
}
