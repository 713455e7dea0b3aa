/*
 * iov.c - runs of a layout in packed order: iov extraction and copy between two layouts.
 *
 * The run iterator walks the canonical form with an explicit stack and can start at any run
 * index in O(depth * log(entries)). iov pieces are maximal: runs that touch are merged. When
 * the form says no two consecutive runs touch (decided at commit), piece i is run i and
 * cdt_iov_get() starts right at `first`; otherwise it walks from the beginning.
 * cdt_copy() is a maximal block merge (docs/ENGINE.md, "Fragments, iov, copy"): the runs of both
 * layouts are walked side by side and each step copies the longest piece both sides hold
 * contiguously.
 */
#include "derived.h"

#include <stdlib.h>
#include <string.h>

static void top_node(cdt__node *top, cdt__node *root, cdt_count count, cdt_count extent)
{
    memset(top, 0, sizeof(*top));
    top->kind = CDT__NODE_VECTOR;
    atomic_init(&top->refs, -1); /* static: never freed */
    top->count = count;
    top->stride = extent;
    top->child = root;
    top->size = count * root->size;
    top->nblocks = count * root->nblocks;
    top->depth = root->depth + 1;
    top->nojoin = root->nojoin && (count <= 1 || root->last_end != extent + root->first);
}

int cdt__runs_init(cdt__runs *it, const void *buf, cdt_count count, cdt_type type)
{
    cdt__node *root;
    int rc = cdt__type_form(type, &root);
    if (rc != CDT_SUCCESS)
        return rc;
    top_node(&it->top, root, count, type->extent);
    int depth = it->top.depth + 1;
    it->stack = depth <= 8 ? it->small : malloc((size_t)depth * sizeof(*it->stack));
    if (it->stack == NULL)
        return CDT_ERR_NO_MEMORY;
    it->sp = 0;
    it->stack[0] = (struct cdt__runs_frame){&it->top, (char *)buf, 0};
    return CDT_SUCCESS;
}

void cdt__runs_fini(cdt__runs *it)
{
    if (it->stack != it->small)
        free(it->stack);
}

static char *entry_base(const cdt__node *n, char *base, cdt_count i)
{
    return n->kind == CDT__NODE_VECTOR ? CDT__AT(base, n->off + i * n->stride)
                                       : CDT__AT(base, n->disps[i]);
}

void cdt__runs_seek(cdt__runs *it, cdt_count k)
{
    it->sp = 0;
    it->stack[0].i = 0;
    for (;;) {
        struct cdt__runs_frame *f = &it->stack[it->sp];
        const cdt__node *n = f->n;
        cdt_count j;
        switch (n->kind) {
        case CDT__NODE_LEAF:
        case CDT__NODE_INDEXED:
            f->i = k;
            return;
        case CDT__NODE_VECTOR:
        case CDT__NODE_BLOCK:
            if (n->child->nblocks == 0 || k >= n->nblocks) {
                f->i = n->count;
                return;
            }
            j = k / n->child->nblocks;
            k -= j * n->child->nblocks;
            f->i = j + 1;
            it->stack[++it->sp] = (struct cdt__runs_frame){n->child, entry_base(n, f->base, j), 0};
            break;
        case CDT__NODE_STRUCT: {
            if (k >= n->nblocks) {
                f->i = n->count;
                return;
            }
            cdt_count lo = cdt__last_at_or_below(n->bprefix, n->count, k);
            k -= n->bprefix[lo];
            f->i = lo + 1;
            it->stack[++it->sp] =
                (struct cdt__runs_frame){n->children[lo], CDT__AT(f->base, n->disps[lo]), 0};
            break;
        }
        }
    }
}

bool cdt__runs_next(cdt__runs *it, char **addr, cdt_count *len)
{
    while (it->sp >= 0) {
        struct cdt__runs_frame *f = &it->stack[it->sp];
        const cdt__node *n = f->n;
        switch (n->kind) {
        case CDT__NODE_LEAF:
            if (f->i == 0 && n->len > 0) {
                f->i = 1;
                *addr = CDT__AT(f->base, n->off);
                *len = n->len;
                return true;
            }
            it->sp--;
            break;
        case CDT__NODE_INDEXED:
            if (f->i < n->count) {
                *addr = CDT__AT(f->base, n->disps[f->i]);
                *len = n->lens[f->i];
                f->i++;
                return true;
            }
            it->sp--;
            break;
        case CDT__NODE_VECTOR:
        case CDT__NODE_BLOCK:
        case CDT__NODE_STRUCT:
            if (f->i < n->count) {
                const cdt__node *c = n->kind == CDT__NODE_STRUCT ? n->children[f->i] : n->child;
                char *b = entry_base(n, f->base, f->i);
                f->i++;
                it->stack[++it->sp] = (struct cdt__runs_frame){c, b, 0};
            } else {
                it->sp--;
            }
            break;
        }
    }
    return false;
}

static int check_layout(cdt_type type, cdt_count count)
{
    if (type == NULL || count < 0)
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED;
    if (!(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED;
    cdt_count total;
    if (cdt__mul_overflows(count, type->size, &total))
        return CDT_ERR_OVERFLOW;
    return CDT_SUCCESS;
}

/* walk merged pieces: skip `first`, then write up to max (iov may be NULL: just count) */
static int walk_pieces(const void *buf, cdt_count count, cdt_type type, cdt_count first,
                       cdt_count max, cdt_iov *iov, cdt_count *n_out)
{
    cdt__runs it;
    int rc = cdt__runs_init(&it, buf, count, type);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count piece = -1, written = 0;
    char *cur = NULL, *a;
    cdt_count cur_len = 0, l;
    bool nojoin = it.top.nojoin;
    if (nojoin) {
        cdt__runs_seek(&it, first);
        piece = first - 1;
    }
    for (;;) {
        bool more = cdt__runs_next(&it, &a, &l);
        if (more && cur != NULL && cur + cur_len == a) {
            cur_len += l;
            continue;
        }
        if (cur != NULL && piece >= first) {
            if (iov != NULL)
                iov[written] = (cdt_iov){cur, cur_len};
            written++;
        }
        if (!more || (iov != NULL && written == max))
            break;
        cur = a;
        cur_len = l;
        piece++;
    }
    cdt__runs_fini(&it);
    *n_out = written;
    return CDT_SUCCESS;
}

int cdt_iov_count(const void *buf, cdt_count count, cdt_type type, cdt_count *n)
{
    int rc = check_layout(type, count);
    if (rc != CDT_SUCCESS)
        return rc;
    if (n == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt__node *root;
    rc = cdt__type_form(type, &root);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt__node top;
    top_node(&top, root, count, type->extent);
    if (top.nojoin) {
        *n = top.nblocks;
        return CDT_SUCCESS;
    }
    return walk_pieces(buf, count, type, 0, 0, NULL, n);
}

int cdt_iov_get(const void *buf, cdt_count count, cdt_type type, cdt_count first, cdt_count max,
                cdt_iov iov[], cdt_count *n_out)
{
    int rc = check_layout(type, count);
    if (rc != CDT_SUCCESS)
        return rc;
    if (n_out == NULL || first < 0 || max < 0 || (max > 0 && iov == NULL))
        return CDT_ERR_INVALID_ARG;
    if (max == 0) {
        *n_out = 0;
        return CDT_SUCCESS;
    }
    return walk_pieces(buf, count, type, first, max, iov, n_out);
}

/* cdt_copy's buffer between two layouts with gaps: small enough for the stack and the L1 cache,
 * large enough that the two kernel calls a chunk cost little beside its bytes */
#define CDT__COPY_CHUNK 16384
/* runs at least this long are copied where they lie, one memmove a run */
#define CDT__COPY_LONG_RUN 4096

int cdt_copy(const void *src, cdt_count scount, cdt_type stype, void *dst, cdt_count dcount,
             cdt_type dtype)
{
    int rc = check_layout(stype, scount);
    if (rc == CDT_SUCCESS)
        rc = check_layout(dtype, dcount);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count sbytes = scount * stype->size, dbytes = dcount * dtype->size;
    if (sbytes > dbytes)
        return CDT_ERR_TRUNCATED;
    if (sbytes == 0)
        return CDT_SUCCESS;
    if (cdt__layout_is_contiguous(dtype, dcount)) {
        cdt__layout_pack(stype, src, scount, 0, sbytes, CDT__AT(dst, dtype->true_lb));
        return CDT_SUCCESS;
    }
    if (cdt__layout_is_contiguous(stype, scount)) {
        cdt__layout_unpack(dtype, dst, dcount, 0, sbytes, CDT__AT(src, stype->true_lb));
        return CDT_SUCCESS;
    }
    /* Both layouts have gaps. Long runs on both sides (the first run of each at least
     * CDT__COPY_LONG_RUN bytes, as in a vector of large blocks): the runs of both are walked
     * together and each step copies the longest piece both hold contiguously (foMPI's maximal
     * block merge, seed 003), one pass over the bytes. Short runs: chunk by chunk through a
     * small buffer on the stack, packed out of the source and unpacked into the destination by
     * the engine's kernels. The walk costs ~70 ns a run: on a vector of single doubles (8-byte
     * runs) it moved 0.11 GB/s where the chunks move 5.8 (bench/lane/strided_bound). */
    cdt__runs si, di;
    rc = cdt__runs_init(&si, src, scount, stype);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt__runs_init(&di, dst, dcount, dtype);
    if (rc != CDT_SUCCESS) {
        cdt__runs_fini(&si);
        return rc;
    }
    char *sa = NULL, *da = NULL;
    cdt_count sl = 0, dl = 0, left = sbytes;
    cdt__runs_next(&si, &sa, &sl);
    cdt__runs_next(&di, &da, &dl);
    if (sl >= CDT__COPY_LONG_RUN && dl >= CDT__COPY_LONG_RUN) {
        while (left > 0) {
            if (sl == 0)
                cdt__runs_next(&si, &sa, &sl);
            if (dl == 0)
                cdt__runs_next(&di, &da, &dl);
            cdt_count n = sl < dl ? sl : dl;
            n = n < left ? n : left;
            memmove(da, sa, (size_t)n);
            sa += n;
            da += n;
            sl -= n;
            dl -= n;
            left -= n;
        }
    }
    cdt__runs_fini(&si);
    cdt__runs_fini(&di);
    if (left == 0)
        return CDT_SUCCESS;
    char chunk[CDT__COPY_CHUNK] __attribute__((aligned(64)));
    for (cdt_count off = 0; off < sbytes;) {
        cdt_count n = sbytes - off < CDT__COPY_CHUNK ? sbytes - off : CDT__COPY_CHUNK;
        cdt__layout_pack(stype, src, scount, off, n, chunk);
        cdt__layout_unpack(dtype, dst, dcount, off, n, chunk);
        off += n;
    }
    return CDT_SUCCESS;
}

/* the layout classes' range_iov (core/type.h): stream bytes [start, start + len) as pieces */
int cdt__layout_range_iov_pieces(void *buf, cdt_count count, cdt_type type, cdt_count start,
                                 cdt_count len, cdt_count first, cdt_count max, cdt_iov *iov,
                                 cdt_count *n_out)
{
    cdt_count written = 0, produced = 0;
    if (len == 0) {
        *n_out = 0;
        return CDT_SUCCESS;
    }
    if (cdt__layout_is_contiguous(type, count)) {
        if (first == 0 && max > 0 && iov != NULL) {
            iov[0].base = CDT__AT(buf, type->true_lb + start);
            iov[0].len = len;
            written = 1;
        }
        *n_out = iov != NULL ? written : 1;
        return CDT_SUCCESS;
    }
    /* one walk of the runs, merged into pieces as cdt_iov_get() gives them and clipped to the
     * byte range: linear in the pieces up to the range's end (walking in batches through
     * cdt_iov_get restarted at run 0 for every batch of a layout whose runs may touch) */
    cdt__runs it;
    int rc = cdt__runs_init(&it, buf, count, type);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count pos = 0, end = start + len, cur_len = 0, l;
    char *cur = NULL, *a;
    for (;;) {
        bool more = cdt__runs_next(&it, &a, &l);
        if (more && cur != NULL && cur + cur_len == a) {
            cur_len += l;
            continue;
        }
        if (cur != NULL) { /* the piece [pos, pos + cur_len) of the stream is complete */
            cdt_count lo = pos, hi = pos + cur_len;
            pos = hi;
            if (hi > start) {
                if (produced >= first && iov != NULL) {
                    if (written == max)
                        break;
                    cdt_count b0 = lo < start ? start : lo, b1 = hi > end ? end : hi;
                    iov[written].base = cur + (b0 - lo);
                    iov[written].len = b1 - b0;
                    written++;
                }
                produced++;
            }
            if (pos >= end)
                break;
        }
        if (!more) {
            cdt__runs_fini(&it);
            return CDT_ERR_TRUNCATED; /* the range ends past the layout's data */
        }
        cur = a;
        cur_len = l;
    }
    cdt__runs_fini(&it);
    *n_out = iov != NULL ? written : produced;
    return CDT_SUCCESS;
}
