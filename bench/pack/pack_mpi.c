/*
 * pack_mpi.c - MPI_Pack / MPI_Unpack of every layout; built once per MPI (MPICH, Open MPI),
 * since the two cannot be linked into one program. Prints CSV rows with method BENCH_METHOD.
 * usage: bench_pack_<mpi> [-t seconds] [-r rounds] [--only LAYOUT]
 */
#include <mpi.h>

#include "bench_common.h"

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
#define WITH_MANUAL 1
#include "layouts.h"

static void mpi_pack_all(const void *lp, char *out)
{
    const layout *l = lp;
    int pos = 0;
    MPI_Pack(l->buf, (int)l->count, l->type, out, (int)l->bytes, &pos, MPI_COMM_SELF);
}

static void mpi_unpack_all(const void *lp, char *in)
{
    const layout *l = lp;
    int pos = 0;
    MPI_Unpack(in, (int)l->bytes, &pos, l->buf, (int)l->count, l->type, MPI_COMM_SELF);
}

/* the hand-written loop is measured here too (row method "manual_<mpi>"), interleaved with
 * MPI in this process: report.py compares MPI with libcdt through each one's ratio to the hand
 * loop of its own process, which cancels what differs between processes */
static const bench_method pack_methods[] = {{BENCH_METHOD, mpi_pack_all},
                                            {"manual_" BENCH_METHOD, manual_pack_all}};
static const bench_method unpack_methods[] = {{BENCH_METHOD, mpi_unpack_all},
                                              {"manual_" BENCH_METHOD, manual_unpack_all}};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bench_args(argc, argv);
    static layout ls[64];
    int n = layouts_make(ls, 64);
    for (int i = 0; i < n; i++) {
        layout *l = &ls[i];
        if (!bench_selected(l->name))
            continue;
        int ps = 0;
        MPI_Pack_size((int)l->count, l->type, MPI_COMM_SELF, &ps);
        if (ps < l->bytes)
            fprintf(stderr, "%s: %s: pack size %d < %lld\n", BENCH_METHOD, l->name, ps,
                    (long long)l->bytes);
        char *a = malloc((size_t)ps + 64);
        bench_rows(l->name, "pack_gbs", l, a, l->bytes, pack_methods, 2);
        bench_rows(l->name, "unpack_gbs", l, a, l->bytes, unpack_methods, 2);
        free(a);
    }
    layouts_free(ls, n);
    MPI_Finalize();
    return 0;
}
