/*
 * form_node.c - the nodes of the canonical form: allocation, reference counts, the static
 * leaves of the predefined kinds, and finalize(), which derives every cached field a kernel
 * reads (size, block counts, prefixes, the kernel itself) once a node's shape is set.
 * type_commit.c decides the shapes; this file only makes nodes consistent with them. It calls
 * no other file of derived/: commit-time sharing (form_share.c) builds on it.
 */
#include "derived.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* the reference count of nodes that are never freed (the predefined leaves, stack nodes) */
#define STATIC_REFS (-1L)

static cdt__node predefined_leaf[CDT_KIND_COUNT_];
static pthread_once_t predefined_leaf_once = PTHREAD_ONCE_INIT;

/* Node counts are atomic: a committed type may be shared by threads that derive from it, and
 * each derived form retains the nodes it shares with its children. A static node's count is
 * never changed, so reading it relaxed is enough to skip it. */
cdt__node *cdt__node_retain(cdt__node *n)
{
    if (n != NULL && atomic_load_explicit(&n->refs, memory_order_relaxed) != STATIC_REFS)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    return n;
}

void cdt__node_release(cdt__node *n)
{
    if (n == NULL || atomic_load_explicit(&n->refs, memory_order_relaxed) == STATIC_REFS ||
        atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
        return;
    cdt__node_release(n->child);
    if (n->children != NULL) {
        for (cdt_count i = 0; i < n->count; i++)
            cdt__node_release(n->children[i]);
        free(n->children);
    }
    free(n->disps);
    free(n->disps32);
    free(n->lens);
    free(n->prefix);
    free(n->bprefix);
    if (n->zip != NULL) { /* built by form_share.c; a node's memory, freed with it */
        free(n->zip->idx32);
        free(n->zip);
    }
    free(n);
}

cdt__node *cdt__node_new(cdt__node_kind kind)
{
    cdt__node *n = aligned_alloc(_Alignof(cdt__node), sizeof(*n)); /* derived.h: one line */
    if (n != NULL) {
        memset(n, 0, sizeof(*n));
        n->kind = kind;
        atomic_init(&n->refs, 1);
    }
    return n;
}

cdt__node *cdt__node_leaf(cdt_count off, cdt_count len)
{
    cdt__node *n = cdt__node_new(CDT__NODE_LEAF);
    if (n == NULL)
        return NULL;
    n->off = off;
    n->len = len;
    return n;
}

bool cdt__node_is_empty(const cdt__node *n)
{
    return n->size == 0;
}

/* fill size, nblocks, first, last_end, depth, nojoin, prefixes and the kernel */
static int finalize(cdt__node *n)
{
    switch (n->kind) {
    case CDT__NODE_LEAF:
        n->size = n->len;
        n->nblocks = n->len > 0 ? 1 : 0;
        n->first = n->off;
        n->last_end = n->off + n->len;
        n->runlen = n->len;
        n->depth = 1;
        n->nojoin = true;
        n->kern = CDT__K_LEAF;
        break;
    case CDT__NODE_VECTOR: {
        const cdt__node *c = n->child;
        n->size = n->count * c->size;
        n->nblocks = n->count * c->nblocks;
        n->first = n->off + c->first;
        n->last_end = n->off + (n->count - 1) * n->stride + c->last_end;
        n->depth = c->depth + 1;
        n->nojoin = c->nojoin && c->last_end != n->stride + c->first;
        if (c->kind == CDT__NODE_LEAF) {
            n->kern = CDT__K_VEC_LEAF;
            n->runlen = c->len;
        } else if (c->kind == CDT__NODE_VECTOR && c->child->kind == CDT__NODE_LEAF) {
            n->kern = CDT__K_VEC_VEC_LEAF;
            n->runlen = c->child->len;
            n->in_count = c->count;
            n->in_stride = c->stride;
        } else if (c->kind == CDT__NODE_BLOCK && c->child->kind == CDT__NODE_LEAF)
            n->kern = CDT__K_VEC_BLK_LEAF;
        else if (c->kind == CDT__NODE_INDEXED && c->count <= 8)
            n->kern = CDT__K_VEC_IDX;
        else
            n->kern = CDT__K_VEC;
        break;
    }
    case CDT__NODE_BLOCK: {
        const cdt__node *c = n->child;
        n->size = n->count * c->size;
        n->nblocks = n->count * c->nblocks;
        n->first = n->disps[0] + c->first;
        n->last_end = n->disps[n->count - 1] + c->last_end;
        n->depth = c->depth + 1;
        n->nojoin = c->nojoin;
        for (cdt_count i = 0; i + 1 < n->count && n->nojoin; i++)
            if (n->disps[i] + c->last_end == n->disps[i + 1] + c->first)
                n->nojoin = false;
        n->kern = c->kind == CDT__NODE_LEAF ? CDT__K_BLK_LEAF : CDT__K_BLK;
        if (c->kind == CDT__NODE_LEAF && n->disps32 == NULL) {
            /* the kernels read half the index bytes (index lists compete with the gathered
             * data for cache); a copy, the range walk and iov keep using disps */
            bool narrow = true;
            for (cdt_count i = 0; i < n->count && narrow; i++)
                narrow = n->disps[i] >= INT32_MIN && n->disps[i] <= INT32_MAX;
            if (narrow && (n->disps32 = malloc((size_t)n->count * sizeof(int32_t))) != NULL)
                for (cdt_count i = 0; i < n->count; i++)
                    n->disps32[i] = (int32_t)n->disps[i];
        }
        break;
    }
    case CDT__NODE_INDEXED:
        n->prefix = malloc((size_t)(n->count + 1) * sizeof(cdt_count));
        if (n->prefix == NULL)
            return CDT_ERR_NO_MEMORY;
        n->prefix[0] = 0;
        n->minlen = n->maxlen = n->lens[0];
        for (cdt_count i = 0; i < n->count; i++) {
            n->prefix[i + 1] = n->prefix[i] + n->lens[i];
            n->minlen = n->lens[i] < n->minlen ? n->lens[i] : n->minlen;
            n->maxlen = n->lens[i] > n->maxlen ? n->lens[i] : n->maxlen;
        }
        n->size = n->prefix[n->count];
        n->nblocks = n->count;
        n->first = n->disps[0];
        n->last_end = n->disps[n->count - 1] + n->lens[n->count - 1];
        n->depth = 2;
        n->nojoin = true; /* adjacent runs were merged */
        n->kern = CDT__K_IDX;
        break;
    case CDT__NODE_STRUCT:
        n->prefix = malloc((size_t)(n->count + 1) * sizeof(cdt_count));
        n->bprefix = malloc((size_t)(n->count + 1) * sizeof(cdt_count));
        if (n->prefix == NULL || n->bprefix == NULL)
            return CDT_ERR_NO_MEMORY;
        n->prefix[0] = n->bprefix[0] = 0;
        n->depth = 0;
        n->nojoin = true;
        for (cdt_count i = 0; i < n->count; i++) {
            const cdt__node *c = n->children[i];
            n->prefix[i + 1] = n->prefix[i] + c->size;
            n->bprefix[i + 1] = n->bprefix[i] + c->nblocks;
            if (c->depth + 1 > n->depth)
                n->depth = c->depth + 1;
            if (!c->nojoin)
                n->nojoin = false;
            if (i > 0 && n->disps[i - 1] + n->children[i - 1]->last_end == n->disps[i] + c->first)
                n->nojoin = false;
        }
        n->size = n->prefix[n->count];
        n->nblocks = n->bprefix[n->count];
        n->first = n->disps[0] + n->children[0]->first;
        n->last_end = n->disps[n->count - 1] + n->children[n->count - 1]->last_end;
        n->kern = CDT__K_STRUCT; /* cdt__form_done may replace it by CDT__K_ZIP */
        break;
    }
    return CDT_SUCCESS;
}

cdt__node *cdt__node_done(cdt__node *n)
{
    if (n != NULL && finalize(n) != CDT_SUCCESS) {
        cdt__node_release(n);
        return NULL;
    }
    return n;
}

cdt__node *cdt__node_empty(void)
{
    return cdt__node_done(cdt__node_leaf(0, 0));
}

static void predefined_leaves_init(void)
{
    for (int k = CDT_KIND_MIXED + 1; k < CDT_KIND_COUNT_; k++) {
        cdt__node *n = &predefined_leaf[k];
        *n = (cdt__node){.kind = CDT__NODE_LEAF, .len = cdt_kind_size((cdt_kind)k)};
        atomic_init(&n->refs, STATIC_REFS);
        finalize(n);
    }
}

cdt__node *cdt__node_predefined(cdt_type t)
{
    /* built once for all kinds, before any thread reads one (pthread_once orders it) */
    pthread_once(&predefined_leaf_once, predefined_leaves_init);
    return &predefined_leaf[t->kind];
}
