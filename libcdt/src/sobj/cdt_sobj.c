/* cdt_sobj.c - serialized object (in-band bytes + out-of-band buffers) as a custom type. */
#include "cdt_sobj.h"
#include "cdt_receive_memory.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the library's own field_mask bits (cdt_sobj.h): the buffers array, and the data block, are
 * ours to free */
#define SOBJ_OWNS_ARRAY (CDT_SOBJ_FIELD_LIBRARY_ << 0)
#define SOBJ_OWNS_DATA (CDT_SOBJ_FIELD_LIBRARY_ << 1)
#define SOBJ_CALLER_BITS (CDT_SOBJ_FIELD_LIBRARY_ - 1)
#define SOBJ_KNOWN_BITS ((uint64_t)(CDT_SOBJ_FIELD_ALLOC | CDT_SOBJ_FIELD_INBAND_PARTS))

static bool mask_valid(const cdt_sobj *obj)
{
    return (obj->field_mask & SOBJ_CALLER_BITS & ~SOBJ_KNOWN_BITS) == 0;
}

static bool has_parts(const cdt_sobj *obj)
{
    return (obj->field_mask & CDT_SOBJ_FIELD_INBAND_PARTS) != 0;
}

/* the pieces of a send in parts name inband_len bytes in all, each piece a valid (base, len) */
static bool parts_valid(const cdt_sobj *obj)
{
    if (obj->inband_nparts < 0 || (obj->inband_nparts > 0 && obj->inband_parts == NULL))
        return false;
    cdt_count total = 0;
    for (cdt_count i = 0; i < obj->inband_nparts; i++) {
        const cdt_iov *p = &obj->inband_parts[i];
        if (p->len < 0 || (p->len > 0 && p->base == NULL) || p->len > INT64_MAX - total)
            return false;
        total += p->len;
    }
    return total == obj->inband_len;
}

/* bytes [offset, offset + n) of the in-band pieces into dst. The pieces are few (a pickle
 * stream's frames around its large payloads), so each call walks them from the first. */
static void copy_from_parts(const cdt_sobj *obj, cdt_count offset, unsigned char *dst, cdt_count n)
{
    cdt_count at = 0;
    for (cdt_count i = 0; i < obj->inband_nparts && n > 0; i++) {
        const cdt_iov *p = &obj->inband_parts[i];
        if (offset < at + p->len) {
            cdt_count from = offset - at, k = p->len - from < n ? p->len - from : n;
            memcpy(dst, (const unsigned char *)p->base + from, (size_t)k);
            dst += k;
            offset += k;
            n -= k;
        }
        at += p->len;
    }
}

static cdt_sobj_alloc_func_t *alloc_hook(const cdt_sobj *obj)
{
    return (obj->field_mask & CDT_SOBJ_FIELD_ALLOC) ? obj->alloc : NULL;
}

static int sobj_query(void *state, const void *buf, cdt_count count, cdt_count *packed_size)
{
    (void)state;
    if (count != 1 || !mask_valid(buf))
        return CDT_ERR_INVALID_ARG;
    const cdt_sobj *obj = buf;
    if (obj->inband_len < 0 || (has_parts(obj) && !parts_valid(obj)))
        return CDT_ERR_INVALID_ARG;
    *packed_size = obj->inband_len;
    return CDT_SUCCESS;
}

static int sobj_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                     cdt_count dst_size, cdt_count *used)
{
    (void)state;
    (void)count;
    const cdt_sobj *obj = buf;
    cdt_count n = obj->inband_len - offset < dst_size ? obj->inband_len - offset : dst_size;
    if (has_parts(obj))
        copy_from_parts(obj, offset, dst, n);
    else
        memcpy(dst, (const char *)obj->inband + offset, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}

static int sobj_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                       cdt_count src_size)
{
    (void)state;
    if (count != 1)
        return CDT_ERR_INVALID_ARG;
    cdt_sobj *obj = buf;
    if (offset > obj->inband_len || src_size > obj->inband_len - offset)
        return CDT_ERR_TRUNCATED;
    memcpy((char *)obj->inband + offset, src, (size_t)src_size);
    return CDT_SUCCESS;
}

static int sobj_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    if (count != 1)
        return CDT_ERR_INVALID_ARG;
    *n = ((cdt_sobj *)buf)->nbuffers;
    return CDT_SUCCESS;
}

static int sobj_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                        cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    cdt_sobj *obj = buf;
    for (cdt_count i = 0; i < n; i++) {
        const cdt_sobj_buffer *b = &obj->buffers[i];
        cdt_count esize = cdt_kind_size(b->kind);
        cdt_kind kind = esize > 0 && b->len % esize == 0 ? b->kind : CDT_KIND_BYTE;
        esize = cdt_kind_size(kind);
        bases[i] = b->base;
        lens[i] = b->len / esize;
        types[i] = cdt_type_predefined(kind);
    }
    return CDT_SUCCESS;
}

static cdt_type sobj_type;
static pthread_once_t sobj_once = PTHREAD_ONCE_INIT;

static void sobj_type_create(void)
{
    /* sobj_unpack copies each in-band byte once and checks nothing in them (the object is
     * read from that private copy once whole): a local lane may hand it the segment's bytes
     * (CDT_CUSTOM_FLAG_UNPACK_READS_ONCE, docs/TRANSPORT.md §10.4), one pass fewer */
    const cdt_custom_params p = {.field_mask = CDT_CUSTOM_PARAM_QUERY | CDT_CUSTOM_PARAM_PACK |
                                               CDT_CUSTOM_PARAM_UNPACK | CDT_CUSTOM_PARAM_REGIONS |
                                               CDT_CUSTOM_PARAM_FLAGS,
                                 .query_fn = sobj_query,
                                 .pack_fn = sobj_pack,
                                 .unpack_fn = sobj_unpack,
                                 .region_count_fn = sobj_region_count,
                                 .region_fn = sobj_regions,
                                 .flags = CDT_CUSTOM_FLAG_UNPACK_READS_ONCE};
    /* only fails without memory; callers then see NULL and report CDT_ERR_NO_MEMORY */
    if (cdt_type_create_custom_advanced(&p, &sobj_type) != CDT_SUCCESS)
        sobj_type = NULL;
}

cdt_type cdt_sobj_type(void)
{
    pthread_once(&sobj_once, sobj_type_create);
    return sobj_type;
}

/* one part through the caller's allocator hook */
static int alloc_one(cdt_sobj *obj, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    void *p = NULL;
    int rc = obj->alloc(obj->alloc_user, index, len, kind, &p);
    if (rc != CDT_SUCCESS)
        return rc;
    if (p == NULL && len > 0)
        return CDT_ERR_NO_MEMORY;
    *base = p;
    return CDT_SUCCESS;
}

/* Without an allocator hook the in-band bytes and every buffer share one block (one malloc for
 * the whole object; each part starts on a SOBJ_PART_ALIGN boundary), freed by cdt_sobj_release. */
#define SOBJ_PART_ALIGN 64

static cdt_count round_up(cdt_count n)
{
    return (n + SOBJ_PART_ALIGN - 1) / SOBJ_PART_ALIGN * SOBJ_PART_ALIGN;
}

static int alloc_block(cdt_sobj *tmp, cdt_decoder decoder, cdt_count nregions)
{
    /* the header was validated: every length fits the frame, so the rounded sum fits too
     * unless the frame is near INT64_MAX; checked anyway */
    if (tmp->inband_len > INT64_MAX - SOBJ_PART_ALIGN)
        return CDT_ERR_NO_MEMORY;
    cdt_count total = round_up(tmp->inband_len);
    for (cdt_count i = 0; i < nregions; i++) {
        cdt_sobj_buffer *b = &tmp->buffers[i];
        int rc = cdt_decoder_region_info(decoder, i, &b->len, &b->kind, NULL);
        if (rc != CDT_SUCCESS)
            return rc;
        if (b->len > INT64_MAX - total - SOBJ_PART_ALIGN)
            return CDT_ERR_NO_MEMORY;
        total += round_up(b->len);
    }
    if ((uint64_t)total > SIZE_MAX)
        return CDT_ERR_NO_MEMORY;
    unsigned char *block =
        cdt_receive_memory_alloc(total > 0 ? (size_t)total : SOBJ_PART_ALIGN, SOBJ_PART_ALIGN, 0);
    if (block == NULL)
        return CDT_ERR_NO_MEMORY;
    tmp->inband = block;
    cdt_count at = round_up(tmp->inband_len);
    for (cdt_count i = 0; i < nregions; i++) {
        tmp->buffers[i].base = block + at;
        at += round_up(tmp->buffers[i].len);
    }
    tmp->nbuffers = nregions;
    return CDT_SUCCESS;
}

int cdt_sobj_recv_prepare(cdt_sobj *obj, cdt_decoder decoder)
{
    if (obj == NULL || decoder == NULL || !mask_valid(obj))
        return CDT_ERR_INVALID_ARG;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt_decoder_info(decoder, &info);
    if (rc != CDT_SUCCESS)
        return rc;
    /* the caller's struct may be an older, shorter one (cdt_sobj.h: it grows at its end):
     * only the fields every version has are read and written here, one by one */
    cdt_sobj tmp = {0};
    if (obj->field_mask & CDT_SOBJ_FIELD_ALLOC) {
        tmp.alloc = obj->alloc;
        tmp.alloc_user = obj->alloc_user;
    }
    cdt_sobj_alloc_func_t *hook = alloc_hook(obj);
    /* the buffers array is ours; without a hook the data is too, one block at inband */
    tmp.field_mask = (obj->field_mask & SOBJ_CALLER_BITS) | SOBJ_OWNS_ARRAY |
                     (hook == NULL ? SOBJ_OWNS_DATA : 0);
    tmp.inband = NULL;
    tmp.buffers = NULL;
    tmp.nbuffers = 0;
    tmp.inband_len = info.packed_size;
    if (info.region_count > 0) {
        /* the header was validated: region_count entries exist in memory the caller holds */
        tmp.buffers = calloc((size_t)info.region_count, sizeof(cdt_sobj_buffer));
        if (tmp.buffers == NULL)
            return CDT_ERR_NO_MEMORY;
    }
    if (hook == NULL) {
        rc = alloc_block(&tmp, decoder, info.region_count);
    } else {
        rc = alloc_one(&tmp, -1, info.packed_size, CDT_KIND_BYTE, &tmp.inband);
        for (cdt_count i = 0; rc == CDT_SUCCESS && i < info.region_count; i++) {
            cdt_sobj_buffer *b = &tmp.buffers[i];
            rc = cdt_decoder_region_info(decoder, i, &b->len, &b->kind, NULL);
            if (rc == CDT_SUCCESS)
                rc = alloc_one(&tmp, i, b->len, b->kind, &b->base);
            if (rc == CDT_SUCCESS)
                tmp.nbuffers = i + 1;
        }
    }
    if (rc != CDT_SUCCESS) {
        cdt_sobj_release(&tmp);
        return rc;
    }
    obj->field_mask = tmp.field_mask;
    obj->inband = tmp.inband;
    obj->inband_len = tmp.inband_len;
    obj->buffers = tmp.buffers;
    obj->nbuffers = tmp.nbuffers;
    return CDT_SUCCESS;
}

void cdt_sobj_release(cdt_sobj *obj)
{
    if (obj == NULL)
        return;
    if (obj->field_mask & SOBJ_OWNS_DATA)
        free(obj->inband); /* the one block of the in-band bytes and every buffer */
    if (obj->field_mask & SOBJ_OWNS_ARRAY)
        free(obj->buffers);
    obj->inband = NULL;
    obj->inband_len = 0;
    obj->buffers = NULL;
    obj->nbuffers = 0;
    obj->field_mask &= SOBJ_CALLER_BITS;
}
