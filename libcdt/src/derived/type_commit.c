/*
 * type_commit.c - lowering a type to its canonical form (docs/ENGINE.md) and commit.
 *
 * Every constructor becomes "count copies of a child at a stride" (rep) or "children at
 * displacements" (list); the two builders below apply the rewrite rules that make the form
 * independent of how a layout was built:
 *   - empty children vanish; one copy is the child moved by its displacement;
 *   - a vector of runs whose stride equals the run length is one run;
 *   - a vector of vectors whose outer stride is inner count * inner stride is one vector;
 *   - lists are flattened (a list of lists is one list), adjacent runs are merged;
 *   - a list of equal runs is block-indexed, and with evenly spaced displacements a vector;
 *   - a list of structurally equal children is block-indexed (or a vector);
 *   - resized and dup share their old type's form (extents live in the type, not the form);
 *   - equal children of a struct are one shared node, and a struct of block-indexed members
 *     over one index list gets that list once for its kernel (form_share.c).
 * Offsets are kept canonical: LEAF and VECTOR carry `off`; BLOCK, INDEXED and STRUCT have
 * off 0 and absolute displacements; children of VECTOR and BLOCK have off 0.
 */
#include "derived.h"

#include <stdlib.h>
#include <string.h>
/* Offsets in the form are exact and fit 64 bits, but moving a node to offset 0 and back may
 * pass through -INT64_MIN: such moves wrap (two's complement), which gives the exact result
 * whenever the result fits. */
static cdt_count wrap_add(cdt_count a, cdt_count b)
{
    return (cdt_count)((uint64_t)a + (uint64_t)b);
}

static cdt_count wrap_neg(cdt_count a)
{
    return (cdt_count)(0 - (uint64_t)a);
}

/* the same node moved by delta bytes */
static cdt__node *shift(cdt__node *n, cdt_count delta)
{
    if (delta == 0)
        return cdt__node_retain(n);
    cdt__node *m = cdt__node_new(n->kind);
    if (m == NULL)
        return NULL;
    m->off = n->off;
    m->count = n->count;
    m->len = n->len;
    m->stride = n->stride;
    m->child = cdt__node_retain(n->child);
    if (n->kind == CDT__NODE_LEAF || n->kind == CDT__NODE_VECTOR) {
        m->off = wrap_add(m->off, delta);
        return cdt__node_done(m);
    }
    m->disps = malloc((size_t)n->count * sizeof(cdt_count));
    if (n->lens != NULL)
        m->lens = malloc((size_t)n->count * sizeof(cdt_count));
    if (n->children != NULL)
        m->children = calloc((size_t)n->count, sizeof(cdt__node *));
    if (m->disps == NULL || (n->lens != NULL && m->lens == NULL) ||
        (n->children != NULL && m->children == NULL)) {
        if (m->children == NULL)
            m->count = 0;
        cdt__node_release(m);
        return NULL;
    }
    for (cdt_count i = 0; i < n->count; i++) {
        m->disps[i] = wrap_add(n->disps[i], delta);
        if (m->lens != NULL)
            m->lens[i] = n->lens[i];
        if (m->children != NULL)
            m->children[i] = cdt__node_retain(n->children[i]);
    }
    return cdt__form_done(m); /* a struct keeps its zip */
}

/* node offset of a node whose off is movable into a parent's displacement */
static cdt_count own_off(const cdt__node *n)
{
    return (n->kind == CDT__NODE_LEAF || n->kind == CDT__NODE_VECTOR) ? n->off : 0;
}

/* count copies of c at stride bytes (c is borrowed) */
static cdt__node *rep(cdt_count count, cdt_count stride, cdt__node *c)
{
    if (count == 0 || cdt__node_is_empty(c))
        return cdt__node_empty();
    if (count == 1)
        return cdt__node_retain(c);
    cdt_count off = own_off(c);
    if (c->kind == CDT__NODE_LEAF && stride == c->len)
        return cdt__node_done(cdt__node_leaf(c->off, count * c->len));
    cdt_count whole; /* the inner vector's count * stride need not fit 64 bits */
    if (c->kind == CDT__NODE_VECTOR && !cdt__mul_overflows(c->count, c->stride, &whole) &&
        stride == whole) {
        cdt__node *n = cdt__node_new(CDT__NODE_VECTOR);
        if (n == NULL)
            return NULL;
        n->off = c->off;
        n->count = count * c->count;
        n->stride = c->stride;
        n->child = cdt__node_retain(c->child);
        return cdt__node_done(n);
    }
    cdt__node *inner = shift(c, wrap_neg(off));
    if (inner == NULL)
        return NULL;
    cdt__node *n = cdt__node_new(CDT__NODE_VECTOR);
    if (n == NULL) {
        cdt__node_release(inner);
        return NULL;
    }
    n->off = off;
    n->count = count;
    n->stride = stride;
    n->child = inner;
    return cdt__node_done(n);
}

/* list builder: entries (disp, child) in order */
typedef struct {
    cdt_count n, cap;
    cdt_count *disps;
    cdt__node **kids; /* owned references */
} list;

static bool list_push(list *l, cdt_count disp, cdt__node *kid)
{
    if (l->n == l->cap) {
        cdt_count cap = l->cap ? 2 * l->cap : 16;
        cdt_count *d = realloc(l->disps, (size_t)cap * sizeof(*d));
        if (d != NULL)
            l->disps = d;
        cdt__node **k = realloc(l->kids, (size_t)cap * sizeof(*k));
        if (k != NULL)
            l->kids = k;
        if (d == NULL || k == NULL)
            return false;
        l->cap = cap;
    }
    l->disps[l->n] = disp;
    l->kids[l->n] = kid;
    l->n++;
    return true;
}

static void list_free(list *l)
{
    for (cdt_count i = 0; i < l->n; i++)
        cdt__node_release(l->kids[i]);
    free(l->disps);
    free(l->kids);
}

/* add a run of len bytes at disp, merged with the previous run when they touch */
static bool list_add_run(list *l, cdt_count disp, cdt_count len)
{
    if (l->n > 0) {
        cdt__node *last = l->kids[l->n - 1];
        if (last->kind == CDT__NODE_LEAF && l->disps[l->n - 1] + last->len == disp) {
            cdt__node *m = cdt__node_done(cdt__node_leaf(0, last->len + len));
            if (m == NULL)
                return false;
            cdt__node_release(last);
            l->kids[l->n - 1] = m;
            return true;
        }
    }
    cdt__node *m = cdt__node_done(cdt__node_leaf(0, len));
    if (m != NULL && list_push(l, disp, m))
        return true;
    cdt__node_release(m);
    return false;
}

/* add child c (borrowed) at disp, flattening lists and merging adjacent runs */
static bool list_add(list *l, cdt_count disp, cdt__node *c)
{
    if (cdt__node_is_empty(c))
        return true;
    switch (c->kind) {
    case CDT__NODE_LEAF:
        return list_add_run(l, disp + c->off, c->len);
    case CDT__NODE_INDEXED:
        for (cdt_count i = 0; i < c->count; i++)
            if (!list_add_run(l, disp + c->disps[i], c->lens[i]))
                return false;
        return true;
    case CDT__NODE_STRUCT:
        for (cdt_count i = 0; i < c->count; i++)
            if (!list_add(l, disp + c->disps[i], c->children[i]))
                return false;
        return true;
    case CDT__NODE_BLOCK:
        if (c->count <= 64) {
            for (cdt_count i = 0; i < c->count; i++)
                if (!list_add(l, disp + c->disps[i], c->child))
                    return false;
            return true;
        }
        break;
    case CDT__NODE_VECTOR:
        break;
    }
    cdt_count off = own_off(c);
    cdt__node *m = shift(c, wrap_neg(off));
    if (m != NULL && list_push(l, disp + off, m))
        return true;
    cdt__node_release(m);
    return false;
}

/* the canonical node of a finished list (consumes l) */
static cdt__node *list_build(list *l)
{
    cdt__node *n = NULL;
    if (l->n == 0) {
        n = cdt__node_empty();
        goto out;
    }
    if (l->n == 1) {
        n = shift(l->kids[0], l->disps[0]);
        goto out;
    }
    bool all_leaf = true, all_equal = true;
    for (cdt_count i = 0; i < l->n; i++) {
        if (l->kids[i]->kind != CDT__NODE_LEAF)
            all_leaf = false;
        if (!cdt__node_equal(l->kids[i], l->kids[0]))
            all_equal = false;
    }
    if (all_equal) {
        bool even = true;
        cdt_count step = l->disps[1] - l->disps[0];
        for (cdt_count i = 2; i < l->n && even; i++)
            if (l->disps[i] - l->disps[i - 1] != step)
                even = false;
        if (even) {
            cdt__node *v = rep(l->n, step, l->kids[0]);
            if (v != NULL) {
                n = shift(v, l->disps[0]);
                cdt__node_release(v);
            }
            goto out;
        }
        n = cdt__node_new(CDT__NODE_BLOCK);
        if (n == NULL)
            goto out;
        n->count = l->n;
        n->child = cdt__node_retain(l->kids[0]);
        n->disps = l->disps;
        l->disps = NULL;
        n = cdt__node_done(n);
        goto out;
    }
    if (all_leaf) {
        n = cdt__node_new(CDT__NODE_INDEXED);
        if (n == NULL)
            goto out;
        n->count = l->n;
        n->lens = malloc((size_t)l->n * sizeof(cdt_count));
        if (n->lens == NULL) {
            cdt__node_release(n);
            n = NULL;
            goto out;
        }
        for (cdt_count i = 0; i < l->n; i++)
            n->lens[i] = l->kids[i]->len;
        n->disps = l->disps;
        l->disps = NULL;
        n = cdt__node_done(n);
        goto out;
    }
    cdt__share_equal(l->kids, l->n); /* equal members (separately built types) stored once */
    n = cdt__node_new(CDT__NODE_STRUCT);
    if (n == NULL)
        goto out;
    n->count = l->n;
    n->children = l->kids;
    n->disps = l->disps;
    l->kids = NULL;
    l->disps = NULL;
    l->n = 0;
    n = cdt__form_done(n);
out:
    list_free(l);
    return n;
}

static cdt__node *build(cdt_type t)
{
    struct cdt__derived *d = t->derived;
    cdt__node *old = NULL;
    if (d->ctor != CDT__CTOR_STRUCT && cdt__type_form(d->types[0], &old) != CDT_SUCCESS)
        return NULL;
    switch (d->ctor) {
    case CDT__CTOR_ALIAS:
        return cdt__node_retain(old);
    case CDT__CTOR_CONTIGUOUS:
        return rep(d->count, d->types[0]->extent, old);
    case CDT__CTOR_VECTOR:
    case CDT__CTOR_HVECTOR: {
        if (d->count == 0) /* no blocks: the size of one block may not even fit */
            return rep(0, 0, old);
        cdt_count ext = d->types[0]->extent;
        cdt_count stride = d->ctor == CDT__CTOR_VECTOR ? d->stride * ext : d->stride;
        cdt__node *block = rep(d->blocklength, ext, old);
        if (block == NULL)
            return NULL;
        cdt__node *n = rep(d->count, stride, block);
        cdt__node_release(block);
        return n;
    }
    default:
        break;
    }
    list l = {0};
    cdt__node *block = NULL; /* the last block built, reused while the length repeats */
    cdt_count block_len = -1, block_type = -1;
    for (cdt_count i = 0; i < d->count; i++) {
        cdt_count ti = d->ctor == CDT__CTOR_STRUCT ? i : 0;
        cdt_type ty = d->types[ti];
        cdt_count bl = d->blocklens != NULL ? d->blocklens[i] : d->blocklength;
        cdt_count disp = d->disps[i];
        if (d->ctor == CDT__CTOR_INDEXED || d->ctor == CDT__CTOR_INDEXED_BLOCK)
            disp *= ty->extent;
        if (bl == 0)
            continue;
        if (block == NULL || bl != block_len ||
            (d->ctor == CDT__CTOR_STRUCT && ti != block_type &&
             d->types[ti] != d->types[block_type])) {
            cdt__node *f;
            cdt__node_release(block);
            block = NULL;
            if (cdt__type_form(ty, &f) != CDT_SUCCESS || (block = rep(bl, ty->extent, f)) == NULL)
                goto fail;
            block_len = bl;
            block_type = ti;
        }
        if (!list_add(&l, disp, block))
            goto fail;
    }
    cdt__node_release(block);
    return list_build(&l);
fail:
    cdt__node_release(block);
    list_free(&l);
    return NULL;
}

int cdt__type_form(cdt_type type, cdt__node **form)
{
    if (type->cls == CDT__CLASS_PREDEFINED) {
        *form = cdt__node_predefined(type);
        return CDT_SUCCESS;
    }
    if (type->cls != CDT__CLASS_DERIVED)
        return CDT_ERR_INVALID_ARG;
    cdt__node *n = atomic_load_explicit(&type->derived->form, memory_order_acquire);
    if (n == NULL) {
        cdt__node *built = build(type);
        if (built == NULL)
            return CDT_ERR_NO_MEMORY;
        /* another thread may have published the same form meanwhile: keep the first */
        if (atomic_compare_exchange_strong_explicit(&type->derived->form, &n, built,
                                                    memory_order_acq_rel, memory_order_acquire))
            n = built;
        else
            cdt__node_release(built);
    }
    *form = n;
    return CDT_SUCCESS;
}

int cdt_type_commit(cdt_type *type)
{
    if (type == NULL || *type == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt_type t = *type;
    if (t->cls != CDT__CLASS_DERIVED || (t->flags & CDT__TYPE_COMMITTED))
        return CDT_SUCCESS;
    cdt__node *form;
    int rc = cdt__type_form(t, &form);
    if (rc != CDT_SUCCESS)
        return rc;
    unsigned flags = CDT__TYPE_COMMITTED;
    if (form->kind == CDT__NODE_LEAF && form->len > 0)
        flags |= CDT__TYPE_CONTIGUOUS;
    t->flags |= flags;
    return CDT_SUCCESS;
}
