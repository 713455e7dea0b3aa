/*
 * soak_objects.c - the object families: the derived type, sobj or dvec that an object's key
 * describes, and the receiver's own layout for a derived object's stream (see soak.c).
 */
#include "soak.h"

/* ------------------------------------------------------------------------------------------
 * objects: the same description is built by the sender (to fill) and the receiver (to check)
 * ---------------------------------------------------------------------------------------- */

/* split total into n parts (random, each >= 0) */
static void split(rng *r, cdt_count total, int n, cdt_count *parts)
{
    cdt_count left = total;
    for (int i = 0; i < n; i++) {
        if (i == n - 1) {
            parts[i] = left;
            break;
        }
        cdt_count cap = 2 * left / (n - i);
        parts[i] = rnd_in(r, 0, cap < left ? cap : left);
        left -= parts[i];
    }
}

const char *shape_name[] = {"contiguous",     "vector",   "hvector",       "indexed",
                            "struct+resized", "subarray", "indexed_block", "hindexed_block"};
#define NSHAPES 8

/* the sender's derived type of the object with this key (about `target` bytes of data) */
int derived_build(uint64_t key, cdt_count target, dspec *d)
{
    rng r = {key ^ 0x5eed};
    cdt_type t = NULL, tmp = NULL;
    int rc = CDT_SUCCESS;
    int shape = (int)rnd_in(&r, 0, NSHAPES - 1);
    d->shape = shape;
    switch (shape) {
    case 1: { /* vector of doubles */
        cdt_count b = rnd_in(&r, 1, 64), n = target / (8 * b);
        rc = cdt_type_vector(n, b, b + rnd_in(&r, 0, b), CDT_DOUBLE, &t);
        break;
    }
    case 2: { /* hvector of int32, any byte stride */
        cdt_count b = rnd_in(&r, 1, 256), n = target / (4 * b);
        rc = cdt_type_hvector(n, b, 4 * b + rnd_in(&r, 0, 4 * b), CDT_INT32, &t);
        break;
    }
    case 3: { /* indexed int32, up to 32 blocks with gaps */
        int k = (int)rnd_in(&r, 1, 32);
        cdt_count bl[32], disp[32], at = rnd_in(&r, 0, 8);
        split(&r, target / 4, k, bl);
        for (int i = 0; i < k; i++) {
            disp[i] = at;
            at += bl[i] + rnd_in(&r, 0, bl[i] < 64 ? 64 : bl[i]);
        }
        rc = cdt_type_indexed(k, bl, disp, CDT_INT32, &t);
        break;
    }
    case 4: { /* {int32; double; char[3]} resized to 24 bytes, contiguous */
        cdt_count bl[3] = {1, 1, 3}, disp[3] = {0, 8, 16};
        cdt_type ts[3] = {CDT_INT32, CDT_DOUBLE, CDT_CHAR};
        cdt_type st = NULL;
        rc = cdt_type_struct(3, bl, disp, ts, &st);
        if (rc == CDT_SUCCESS)
            rc = cdt_type_resized(st, 0, 24, &tmp);
        cdt_type_free(&st);
        if (rc == CDT_SUCCESS)
            rc = cdt_type_contiguous(target / 15, tmp, &t);
        break;
    }
    case 5: { /* 2-d subarray of doubles */
        cdt_count cols = rnd_in(&r, 1, 512), rows = target / (8 * cols);
        if (rows == 0) {
            rc = cdt_type_contiguous(target, CDT_BYTE, &t);
            break;
        }
        cdt_count sizes[2] = {rows + rnd_in(&r, 0, 2), cols + rnd_in(&r, 0, cols)};
        cdt_count subs[2] = {rows, cols};
        cdt_count starts[2] = {rnd_in(&r, 0, sizes[0] - rows), rnd_in(&r, 0, sizes[1] - cols)};
        int order = rnd_in(&r, 0, 1) ? CDT_ORDER_C : CDT_ORDER_FORTRAN;
        if (order == CDT_ORDER_FORTRAN) { /* same shape, Fortran order: swap the dimensions */
            cdt_count x;
            x = sizes[0], sizes[0] = sizes[1], sizes[1] = x;
            x = subs[0], subs[0] = subs[1], subs[1] = x;
            x = starts[0], starts[0] = starts[1], starts[1] = x;
        }
        rc = cdt_type_subarray(2, sizes, subs, starts, order, CDT_DOUBLE, &t);
        break;
    }
    case 6:   /* indexed_block of int64 */
    case 7: { /* hindexed_block of bytes */
        cdt_count esz = shape == 6 ? 8 : 1;
        cdt_count bl = rnd_in(&r, 1, 128), n;
        if (target / (esz * bl) > 4096)
            bl = target / (esz * 4096) + 1;
        n = target / (esz * bl);
        cdt_count *disp = malloc((size_t)(n ? n : 1) * sizeof(cdt_count));
        if (disp == NULL)
            return CDT_ERR_NO_MEMORY;
        cdt_count at = 0;
        for (cdt_count i = 0; i < n; i++) {
            disp[i] = at; /* elements of int64, or bytes */
            at += bl + rnd_in(&r, 0, bl);
        }
        rc = shape == 6 ? cdt_type_indexed_block(n, bl, disp, CDT_INT64, &t)
                        : cdt_type_hindexed_block(n, bl, disp, CDT_BYTE, &t);
        free(disp);
        break;
    }
    default:
        rc = cdt_type_contiguous(target, CDT_BYTE, &t);
        break;
    }
    cdt_type_free(&tmp);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_commit(&t);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_size(t, &d->size);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_true_extent(t, &d->true_lb, &d->true_extent);
    if (rc != CDT_SUCCESS) {
        cdt_type_free(&t);
        return rc;
    }
    d->type = t;
    return CDT_SUCCESS;
}

/* The receiver's own layout for a stream of P bytes: blocks of B bytes with gaps, then the
 * remainder (hvector, or struct of hvector + contiguous). */
int recv_layout(cdt_count P, cdt_type *type, cdt_count *extent)
{
    cdt_count B = (cdt_count)1 << (4 + P % 9);
    cdt_type t = NULL;
    int rc;
    if (P < B) {
        rc = cdt_type_contiguous(P, CDT_BYTE, &t);
        *extent = P;
    } else {
        cdt_count q = P / B, rem = P % B, pad = B >= 64 ? B / 8 : 8;
        cdt_type hv = NULL, tail = NULL;
        rc = cdt_type_hvector(q, B, B + pad, CDT_BYTE, &hv);
        *extent = q * (B + pad) + rem;
        if (rc == CDT_SUCCESS && rem == 0) {
            t = hv;
            hv = NULL;
        } else if (rc == CDT_SUCCESS) {
            rc = cdt_type_contiguous(rem, CDT_BYTE, &tail);
            cdt_count bl[2] = {1, 1}, disp[2] = {0, q * (B + pad)};
            cdt_type ts[2] = {hv, tail};
            if (rc == CDT_SUCCESS)
                rc = cdt_type_struct(2, bl, disp, ts, &t);
        }
        cdt_type_free(&hv);
        cdt_type_free(&tail);
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_type_commit(&t);
    if (rc != CDT_SUCCESS) {
        cdt_type_free(&t);
        return rc;
    }
    *type = t;
    return CDT_SUCCESS;
}

void sobj_spec(uint64_t key, cdt_count target, sspec *s)
{
    rng r = {key ^ 0x50b1};
    static const cdt_kind kinds[3] = {CDT_KIND_BYTE, CDT_KIND_INT32, CDT_KIND_DOUBLE};
    s->inband_len = target < 64 ? target : rnd_in(&r, 0, target < 16 * KiB ? target : 16 * KiB);
    cdt_count rest = target - s->inband_len;
    s->nbuf = rest == 0 ? (int)rnd_in(&r, 0, 2) : (int)rnd_in(&r, 1, 8);
    split(&r, rest, s->nbuf, s->len);
    for (int i = 0; i < s->nbuf; i++) {
        s->kind[i] = kinds[rnd_in(&r, 0, 2)];
        s->len[i] -= s->len[i] % cdt_kind_size(s->kind[i]);
    }
}
uint64_t part_key(uint64_t key, int part)
{
    return mix64(key + 0x1000 + (uint64_t)part);
}

void dvec_spec(uint64_t key, cdt_count target, vspec *v)
{
    rng r = {key ^ 0xd7ec};
    v->n = (int)rnd_in(&r, 0, 16);
    if (v->n > 0)
        split(&r, target / 4, v->n, v->len);
}
