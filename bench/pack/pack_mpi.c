/*
 * pack_mpi.c - MPI_Pack / MPI_Unpack of every layout; built once per MPI (MPICH, Open MPI),
 * since the two cannot be linked into one program. Prints CSV rows with method BENCH_METHOD.
 * usage: bench_pack_<mpi> [-t seconds] [-r rounds] [--only LAYOUT]
 */
#include <mpi.h>

#include "bench_common.h"

#include "builders_mpi.h"

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
