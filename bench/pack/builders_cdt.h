/* builders_cdt.h - the builder interface of layouts.h (T, T_*, B_*) over libcdt's datatype
 * constructors, shared by every program that builds the layouts with libcdt (bench/pack,
 * bench/mpi). Include it, define WITH_MANUAL if the hand-written loops are wanted, then include
 * layouts.h. */
#ifndef BENCH_BUILDERS_CDT_H
#define BENCH_BUILDERS_CDT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cdt.h>

static cdt_type must(int rc, cdt_type *t)
{
    if (rc != CDT_SUCCESS) {
        fprintf(stderr, "bench_pack_cdt: constructor failed: %s\n", cdt_strerror(rc));
        exit(1);
    }
    return *t;
}

static cdt_type b_contig(int64_t n, cdt_type o)
{
    cdt_type t;
    return must(cdt_type_contiguous(n, o, &t), &t);
}
static cdt_type b_vector(int64_t c, int64_t bl, int64_t s, cdt_type o)
{
    cdt_type t;
    return must(cdt_type_vector(c, bl, s, o, &t), &t);
}
static cdt_type b_hvector(int64_t c, int64_t bl, int64_t s, cdt_type o)
{
    cdt_type t;
    return must(cdt_type_hvector(c, bl, s, o, &t), &t);
}
static cdt_type b_idx_block(int64_t c, int64_t bl, const int64_t *d, cdt_type o)
{
    cdt_type t;
    return must(cdt_type_indexed_block(c, bl, d, o, &t), &t);
}
static cdt_type b_hidx_block(int64_t c, int64_t bl, const int64_t *d, cdt_type o)
{
    cdt_type t;
    return must(cdt_type_hindexed_block(c, bl, d, o, &t), &t);
}
static cdt_type b_struct(int64_t c, const int64_t *bl, const int64_t *d, const cdt_type *ty)
{
    cdt_type t;
    return must(cdt_type_struct(c, bl, d, ty, &t), &t);
}
static cdt_type b_resized(cdt_type o, int64_t lb, int64_t ext)
{
    cdt_type t;
    return must(cdt_type_resized(o, lb, ext, &t), &t);
}
static cdt_type b_subarray(int nd, const int64_t *sz, const int64_t *sub, const int64_t *st,
                           cdt_type o)
{
    cdt_type t;
    return must(cdt_type_subarray(nd, sz, sub, st, CDT_ORDER_C, o, &t), &t);
}
static void b_free(cdt_type t)
{
    cdt_type_free(&t);
}

#define T cdt_type
#define T_BYTE CDT_BYTE
#define T_INT32 CDT_INT32
#define T_FLOAT CDT_FLOAT
#define T_DOUBLE CDT_DOUBLE
#define B_CONTIG b_contig
#define B_VECTOR b_vector
#define B_HVECTOR b_hvector
#define B_IDX_BLOCK b_idx_block
#define B_HIDX_BLOCK b_hidx_block
#define B_STRUCT b_struct
#define B_RESIZED b_resized
#define B_SUBARRAY b_subarray
#define B_COMMIT(t) must(cdt_type_commit(&(t)), &(t))
#define B_FREE b_free
#define B_BOTTOM CDT_BOTTOM
#endif
