/*
 * op_regions.c - an operation's memory regions: asked of a custom type's region_count and
 * region callbacks once (a receiver only after its packed stream is complete), checked, kept
 * inline for a few regions or in one block, and handed out.
 */
#include "op.h"

#include <stdint.h>
#include <stdlib.h>

cdt_count cdt__op_region_bytes(cdt_op op, cdt_count index)
{
    return op->region_lens[index] * op->region_types[index]->size;
}

int cdt__op_fetch_regions(cdt_op op)
{
    if (op->regions_known)
        return CDT_SUCCESS;
    const cdt_custom_params *c = op->type->custom;
    /* a receiver learns where regions go only once the packed stream is in */
    if (!op->is_pack && (!op->size_known || op->delivered != op->packed_size))
        return CDT_ERR_ORDER;
    cdt_count n = 0;
    int rc = CDT_SUCCESS;
    if (c->region_count_fn != NULL) {
        rc = c->region_count_fn(op->state, op->buf, op->count, &n);
        if (rc != CDT_SUCCESS)
            return rc;
        if (n < 0 || (size_t)n > SIZE_MAX / sizeof(void *) / 3)
            return CDT_ERR_CALLBACK;
    }
    void **bases = NULL;
    cdt_count *lens = NULL;
    cdt_type *types = NULL;
    if (n > 0) {
        if (n <= CDT__OP_INLINE_REGIONS) {
            bases = op->region_inline_bases;
            lens = op->region_inline_lens;
            types = op->region_inline_types;
        } else {
            /* one block: bases, then lens, then types (all 8-byte entries); not zeroed here:
             * the loop below sets every entry before the callback runs */
            char *block = malloc((size_t)n * (sizeof(*bases) + sizeof(*lens) + sizeof(*types)));
            if (block == NULL)
                return CDT_ERR_NO_MEMORY;
            bases = (void **)block;
            lens = (cdt_count *)(block + (size_t)n * sizeof(*bases));
            types = (cdt_type *)(block + (size_t)n * (sizeof(*bases) + sizeof(*lens)));
        }
        for (cdt_count i = 0; i < n; i++) {
            bases[i] = NULL;
            lens[i] = -1;
            types[i] = NULL;
        }
        rc = c->region_fn(op->state, op->buf, op->count, n, bases, lens, types);
        if (rc != CDT_SUCCESS)
            goto fail;
        for (cdt_count i = 0; i < n; i++) {
            cdt_count bytes;
            if (lens[i] < 0 || !cdt__type_is_layout(types[i]) ||
                (bases[i] == NULL && lens[i] > 0) ||
                cdt__mul_overflows(lens[i], types[i]->size, &bytes)) {
                rc = CDT_ERR_CALLBACK;
                goto fail;
            }
        }
    }
    op->region_count = n;
    op->region_bases = bases;
    op->region_lens = lens;
    op->region_types = types;
    op->regions_known = true;
    return CDT_SUCCESS;
fail:
    if (bases != op->region_inline_bases)
        free(bases);
    return rc;
}

int cdt_op_region_count(cdt_op op, cdt_count *n)
{
    if (op == NULL || n == NULL)
        return CDT_ERR_INVALID_ARG;
    int rc = cdt__op_fetch_regions(op);
    if (rc == CDT_SUCCESS)
        *n = op->region_count;
    return rc;
}

int cdt_op_regions(cdt_op op, cdt_count n, void *bases[], cdt_count lens[], cdt_type types[])
{
    if (op == NULL || n < 0 || (n > 0 && (bases == NULL || lens == NULL || types == NULL)))
        return CDT_ERR_INVALID_ARG;
    int rc = cdt__op_fetch_regions(op);
    if (rc != CDT_SUCCESS)
        return rc;
    if (n != op->region_count)
        return CDT_ERR_INVALID_ARG;
    for (cdt_count i = 0; i < n; i++) {
        bases[i] = op->region_bases[i];
        lens[i] = op->region_lens[i];
        types[i] = op->region_types[i];
    }
    return CDT_SUCCESS;
}
