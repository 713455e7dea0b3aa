/* builders_mpi.h - the builder interface of layouts.h (T, T_*, B_*) over MPI's datatype
 * constructors, shared by every program that builds the layouts with MPI (bench/pack, bench/mpi).
 * Include it, define WITH_MANUAL if the hand-written loops are wanted, then include layouts.h. */
#ifndef BENCH_BUILDERS_MPI_H
#define BENCH_BUILDERS_MPI_H

#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

static MPI_Datatype b_contig(int64_t n, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_contiguous((int)n, o, &t);
    return t;
}
static MPI_Datatype b_vector(int64_t c, int64_t bl, int64_t s, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_vector((int)c, (int)bl, (int)s, o, &t);
    return t;
}
static MPI_Datatype b_hvector(int64_t c, int64_t bl, int64_t s, MPI_Datatype o)
{
    MPI_Datatype t;
    MPI_Type_create_hvector((int)c, (int)bl, (MPI_Aint)s, o, &t);
    return t;
}
static MPI_Datatype b_idx_block(int64_t c, int64_t bl, const int64_t *d, MPI_Datatype o)
{
    int *di = malloc(sizeof(int) * (size_t)c);
    for (int64_t i = 0; i < c; i++)
        di[i] = (int)d[i];
    MPI_Datatype t;
    MPI_Type_create_indexed_block((int)c, (int)bl, di, o, &t);
    free(di);
    return t;
}
static MPI_Datatype b_hidx_block(int64_t c, int64_t bl, const int64_t *d, MPI_Datatype o)
{
    MPI_Aint *da = malloc(sizeof(MPI_Aint) * (size_t)c);
    for (int64_t i = 0; i < c; i++)
        da[i] = (MPI_Aint)d[i];
    MPI_Datatype t;
    MPI_Type_create_hindexed_block((int)c, (int)bl, da, o, &t);
    free(da);
    return t;
}
static MPI_Datatype b_struct(int64_t c, const int64_t *bl, const int64_t *d, const MPI_Datatype *ty)
{
    int bi[16];
    MPI_Aint da[16];
    MPI_Datatype tt[16];
    for (int64_t i = 0; i < c; i++) {
        bi[i] = (int)bl[i];
        da[i] = (MPI_Aint)d[i];
        tt[i] = ty[i];
    }
    MPI_Datatype t;
    MPI_Type_create_struct((int)c, bi, da, tt, &t);
    return t;
}
static MPI_Datatype b_resized(MPI_Datatype o, int64_t lb, int64_t ext)
{
    MPI_Datatype t;
    MPI_Type_create_resized(o, (MPI_Aint)lb, (MPI_Aint)ext, &t);
    return t;
}
static MPI_Datatype b_subarray(int nd, const int64_t *sz, const int64_t *sub, const int64_t *st,
                               MPI_Datatype o)
{
    int a[4], b[4], c[4];
    for (int i = 0; i < nd; i++) {
        a[i] = (int)sz[i];
        b[i] = (int)sub[i];
        c[i] = (int)st[i];
    }
    MPI_Datatype t;
    MPI_Type_create_subarray(nd, a, b, c, MPI_ORDER_C, o, &t);
    return t;
}
static void b_free(MPI_Datatype t)
{
    MPI_Type_free(&t);
}

#define T MPI_Datatype
#define T_BYTE MPI_BYTE
#define T_INT32 MPI_INT32_T
#define T_FLOAT MPI_FLOAT
#define T_DOUBLE MPI_DOUBLE
#define B_CONTIG b_contig
#define B_VECTOR b_vector
#define B_HVECTOR b_hvector
#define B_IDX_BLOCK b_idx_block
#define B_HIDX_BLOCK b_hidx_block
#define B_STRUCT b_struct
#define B_RESIZED b_resized
#define B_SUBARRAY b_subarray
#define B_COMMIT(t) MPI_Type_commit(&(t))
#define B_FREE b_free
#define B_BOTTOM MPI_BOTTOM
#endif
