/*
 * form_share.c - commit-time sharing in the canonical form (docs/ENGINE.md).
 *
 * Two things are stored once at commit:
 *   - equal children of a struct node: members built from equal but separately created types
 *     (LAMMPS: three indexed_block types over the same indices, one per array) become one
 *     shared node, so their displacement list is kept, and read by the kernels, once;
 *   - the index list of a struct whose members are block-indexed runs over the same
 *     displacements up to a scale (LAMMPS: a 24-byte and three 8-byte arrays gathered at the
 *     same particle indices, byte displacements 24 * idx and 8 * idx): the struct's kernel
 *     (DIR(zip) in pack_template.h) walks one list for all members instead of one per member.
 * Nodes stay immutable: sharing replaces references in a list being built, and the zip is
 * attached to a struct node right after cdt__node_done filled it in (cdt__form_done), before
 * anything else sees it. This file builds on form_node.c (nodes, their references); that
 * file never calls this one (a zip is freed with its node there, as the node's other lists).
 */
#include "derived.h"

#include <stdlib.h>
#include <string.h>

bool cdt__node_equal(const cdt__node *a, const cdt__node *b)
{
    if (a == b)
        return true;
    if (a->kind != b->kind || a->off != b->off || a->count != b->count || a->len != b->len ||
        a->stride != b->stride || a->size != b->size || a->nblocks != b->nblocks)
        return false;
    switch (a->kind) {
    case CDT__NODE_LEAF:
        return true;
    case CDT__NODE_VECTOR:
        return cdt__node_equal(a->child, b->child);
    case CDT__NODE_BLOCK:
        return !memcmp(a->disps, b->disps, (size_t)a->count * sizeof(cdt_count)) &&
               cdt__node_equal(a->child, b->child);
    case CDT__NODE_INDEXED:
        return !memcmp(a->disps, b->disps, (size_t)a->count * sizeof(cdt_count)) &&
               !memcmp(a->lens, b->lens, (size_t)a->count * sizeof(cdt_count));
    case CDT__NODE_STRUCT:
        if (memcmp(a->disps, b->disps, (size_t)a->count * sizeof(cdt_count)))
            return false;
        for (cdt_count i = 0; i < a->count; i++)
            if (!cdt__node_equal(a->children[i], b->children[i]))
                return false;
        return true;
    }
    return false;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* a hash that equal nodes share; constant time (the top node's fields and the first few
 * displacements), so hashing a list is linear in its length whatever the children's depth */
static uint64_t node_hash(const cdt__node *n)
{
    uint64_t h = mix((uint64_t)n->kind, (uint64_t)n->off);
    h = mix(h, (uint64_t)n->count);
    h = mix(h, (uint64_t)n->len);
    h = mix(h, (uint64_t)n->stride);
    h = mix(h, (uint64_t)n->size);
    if (n->disps != NULL)
        for (cdt_count i = 0; i < n->count && i < 8; i++)
            h = mix(h, (uint64_t)n->disps[i]);
    return h;
}

/* candidates compared per child: bounds the work on lists whose distinct children collide */
#define SHARE_PROBES 8

void cdt__share_equal(cdt__node **kids, cdt_count n)
{
    if (n < 2)
        return;
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    struct slot {
        cdt__node *node;
        uint64_t hash;
    } *table = calloc(cap, sizeof(*table));
    if (table == NULL)
        return; /* sharing saves memory and cache; without it the form is still right */
    for (cdt_count i = 0; i < n; i++) {
        uint64_t h = node_hash(kids[i]);
        size_t p = (size_t)h & (cap - 1);
        int compared = 0;
        for (; table[p].node != NULL; p = (p + 1) & (cap - 1)) {
            if (table[p].hash != h || compared++ >= SHARE_PROBES)
                continue;
            if (cdt__node_equal(table[p].node, kids[i]))
                break;
        }
        if (table[p].node == NULL) {
            table[p] = (struct slot){kids[i], h};
        } else if (table[p].node != kids[i]) {
            cdt__node_release(kids[i]);
            kids[i] = cdt__node_retain(table[p].node);
        }
    }
    free(table);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* the scale of a member's displacements: the gcd of d[i] - d[0], signed like the first
 * nonzero difference (so that two lists that are multiples of one index list agree on it);
 * 0 when a difference overflows or all are zero */
static cdt_count member_scale(const cdt_count *d, cdt_count count)
{
    uint64_t g = 0;
    int sign = 0;
    for (cdt_count i = 1; i < count; i++) {
        cdt_count diff;
        if (__builtin_sub_overflow(d[i], d[0], &diff) || diff == INT64_MIN)
            return 0;
        if (diff != 0 && sign == 0)
            sign = diff < 0 ? -1 : 1;
        g = gcd(g, (uint64_t)(diff < 0 ? -diff : diff));
    }
    return g > INT64_MAX ? 0 : (cdt_count)g * sign;
}

/* idx * g fits 32 bits for every entry */
static bool fits32(const cdt_count *idx, cdt_count count, cdt_count g)
{
    for (cdt_count i = 0; i < count; i++) {
        cdt_count v;
        if (__builtin_mul_overflow(idx[i], g, &v) || v < INT32_MIN || v > INT32_MAX)
            return false;
    }
    return true;
}

/* The kernel wins where each member's runs are gathered from a list (BLOCK of runs) of the
 * same length; every member must be such a node, and their lists multiples of one index list.
 * The list is kept as 32-bit entries premultiplied by the members' common scale, so that the
 * members whose scale it is (LAMMPS: the three 8-byte arrays) index with it directly, like a
 * block-indexed node's own 32-bit list; only the others multiply. An optimisation: where
 * memory runs out or the entries do not fit 32 bits, the struct keeps its generic kernel. */
int cdt__zip_build(cdt__node *n)
{
    if (n->kind != CDT__NODE_STRUCT || n->count < 2 || n->count > CDT__ZIP_MAX)
        return CDT_SUCCESS;
    const cdt__node *c0 = n->children[0];
    for (cdt_count j = 0; j < n->count; j++) {
        const cdt__node *c = n->children[j];
        if (c->kind != CDT__NODE_BLOCK || c->child->kind != CDT__NODE_LEAF || c->count != c0->count)
            return CDT_SUCCESS;
    }
    cdt_count count = c0->count, scale0 = member_scale(c0->disps, count);
    if (scale0 == 0)
        return CDT_SUCCESS;
    cdt__zip *z = calloc(1, sizeof(*z));
    cdt_count *idx = malloc((size_t)count * sizeof(cdt_count));
    if (z == NULL || idx == NULL)
        goto no;
    for (cdt_count i = 0; i < count; i++)
        idx[i] = (c0->disps[i] - c0->disps[0]) / scale0; /* exact: scale0 divides it */
    cdt_count common = scale0 < 0 ? -scale0 : scale0;    /* gcd of the members' scales */
    for (cdt_count j = 0; j < n->count; j++) {
        const cdt__node *c = n->children[j];
        cdt_count scale = j == 0 ? scale0 : member_scale(c->disps, count);
        if (scale == 0)
            goto no;
        for (cdt_count i = 0; i < count; i++)
            if ((c->disps[i] - c->disps[0]) / scale != idx[i])
                goto no;
        /* run i of member j: the struct's displacement, the member's first run, its leaf's
         * own offset, then scale * idx[i] (= disps[i] - disps[0], which fits) */
        z->base[j] =
            (cdt_count)((uint64_t)n->disps[j] + (uint64_t)c->disps[0] + (uint64_t)c->child->off);
        z->scale[j] = scale;
        z->len[j] = c->child->len;
        common = (cdt_count)gcd((uint64_t)common, (uint64_t)(scale < 0 ? -scale : scale));
    }
    if (scale0 < 0) /* signed like the list's first step, so that member 0's scale is > 0 */
        common = -common;
    if (!fits32(idx, count, common))
        common = 1;
    if (!fits32(idx, count, common) || (z->idx32 = malloc((size_t)count * sizeof(int32_t))) == NULL)
        goto no;
    for (cdt_count i = 0; i < count; i++)
        z->idx32[i] = (int32_t)(idx[i] * common);
    for (cdt_count j = 0; j < n->count; j++)
        z->scale[j] /= common;
    free(idx);
    z->members = (int)n->count;
    z->count = count;
    n->zip = z;
    n->kern = CDT__K_ZIP;
    return CDT_SUCCESS;
no:
    free(idx);
    if (z != NULL)
        free(z->idx32);
    free(z);
    return CDT_SUCCESS;
}

cdt__node *cdt__form_done(cdt__node *n)
{
    n = cdt__node_done(n);
    if (n != NULL)
        cdt__zip_build(n); /* members over one index list: CDT__K_ZIP */
    return n;
}
