/*
 * bench_mpi.c - objects between two MPI ranks (mpiexec -n 2): libcdt's MPI protocol
 * (cdt_mpi.h, docs/MPI.md) against what MPI itself offers for the same data, ping-pong.
 *
 *   case "bytes" (16 B .. max bytes, x4): a contiguous byte array.
 *       raw       MPI_Send / MPI_Recv of the bytes
 *       cdt       cdt_mpi_send / cdt_mpi_recv of (buf, n, CDT_BYTE): in the head below 64 KiB,
 *                 else the parts message, in place on both sides
 *   case LAYOUT (bench/pack's DDTBench layouts and seed types: struct_simple, struct_vec,
 *       double_vec ...): the layout's data.
 *       raw       MPI_Send of the layout's packed byte count from a contiguous buffer: the
 *                 floor, no layout work at all
 *       mpi_ddt   MPI_Send / MPI_Recv of (buf, count, the MPI derived datatype)
 *       mpi_pack  MPI_Pack + MPI_Send of the packed bytes; MPI_Recv + MPI_Unpack
 *       cdt       cdt_mpi_send / cdt_mpi_recv of (buf, count, the libcdt derived datatype)
 *
 * Each (case, method) is timed in rounds interleaved with the case's other methods (A B C A B
 * C ...), each round a calibrated number of round trips; the median round gives the one-way
 * time (half a round trip). Rank 0 prints CSV rows: case,method,size_bytes,metric,value,unit
 * with metrics latency_us and bandwidth_mbs (10^6 bytes/s of the layout's packed bytes).
 * With one rank (mpiexec -n 1 ... --self), each transfer is a send to the rank itself
 * (non-blocking send, receive into the other set of the layouts' memory, wait): the CPU cost
 * per object of each method without a second process to schedule, which on a loaded machine
 * is what stays measurable.
 * usage: bench_mpi_<mpi> [--quick] [--self] [--max-bytes N] [-t seconds] [-r rounds]
 *                        [--only CASE]
 */
#include "cdt_mpi.h"
#include "layouts_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;
static double target = 0.2; /* seconds of round trips per method and case, over all rounds */
static int rounds = 5;
static const char *only;
static int self_mode;  /* one rank: sends to itself */
static char *self_dst; /* where the bytes case is received to itself */

typedef struct bench_case {
    const char *name;
    int64_t bytes;       /* payload bytes */
    void *raw;           /* contiguous buffer of bytes */
    void *pack;          /* MPI_Pack buffer */
    int pack_size;       /* its size */
    const mpi_layout *m; /* NULL: the bytes case */
    const cdt_layout *c;
    const mpi_layout *m_in; /* --self: the receive side (the other set of the layouts) */
    const cdt_layout *c_in;
} bench_case;

enum { RAW, MPI_DDT, MPI_PACK_M, CDT, NMETHODS };
static const char *method_names[NMETHODS] = {"raw", "mpi_ddt", "mpi_pack", "cdt"};

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_mpi rank %d: %s: %s (%s)\n", rank, what, cdt_err_name(rc),
            cdt_mpi_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* --self: one object to this rank itself: non-blocking send, receive, wait */
static void transfer_self(const bench_case *bc, int method)
{
    MPI_Request r;
    cdt_mpi_request cr = NULL;
    int rc, pos = 0, n = 0;
    MPI_Status st;
    if (method == MPI_DDT) {
        MPI_Isend(bc->m->buf, (int)bc->m->count, bc->m->type, 0, 1, MPI_COMM_WORLD, &r);
        MPI_Recv(bc->m_in->buf, (int)bc->m_in->count, bc->m_in->type, 0, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        return;
    }
    if (method == MPI_PACK_M) {
        MPI_Pack(bc->m->buf, (int)bc->m->count, bc->m->type, bc->pack, bc->pack_size, &pos,
                 MPI_COMM_WORLD);
        MPI_Isend(bc->pack, pos, MPI_PACKED, 0, 1, MPI_COMM_WORLD, &r);
        MPI_Recv(self_dst, bc->pack_size, MPI_PACKED, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Get_count(&st, MPI_PACKED, &n);
        pos = 0;
        MPI_Unpack(self_dst, n, &pos, bc->m_in->buf, (int)bc->m_in->count, bc->m_in->type,
                   MPI_COMM_WORLD);
        return;
    }
    if (method == CDT && bc->c != NULL) {
        rc = cdt_mpi_isend(bc->c->buf, bc->c->count, bc->c->type, 0, 1, MPI_COMM_WORLD, NULL, &cr);
        if (rc != CDT_SUCCESS)
            die("cdt_mpi_isend", rc);
        rc = cdt_mpi_recv(bc->c_in->buf, bc->c_in->count, bc->c_in->type, 0, 1, MPI_COMM_WORLD,
                          NULL, MPI_STATUS_IGNORE);
        if (rc != CDT_SUCCESS)
            die("cdt_mpi_recv", rc);
        if ((rc = cdt_mpi_wait(&cr, MPI_STATUS_IGNORE)) != CDT_SUCCESS)
            die("cdt_mpi_wait", rc);
        return;
    }
    if (method == RAW) {
        MPI_Isend(bc->raw, (int)bc->bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
        MPI_Recv(self_dst, (int)bc->bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        return;
    }
    if ((rc = cdt_mpi_isend(bc->raw, bc->bytes, CDT_BYTE, 0, 1, MPI_COMM_WORLD, NULL, &cr)) != 0)
        die("cdt_mpi_isend", rc);
    rc = cdt_mpi_recv(self_dst, bc->bytes, CDT_BYTE, 0, 1, MPI_COMM_WORLD, NULL, MPI_STATUS_IGNORE);
    if (rc != CDT_SUCCESS)
        die("cdt_mpi_recv", rc);
    if ((rc = cdt_mpi_wait(&cr, MPI_STATUS_IGNORE)) != CDT_SUCCESS)
        die("cdt_mpi_wait", rc);
}

/* one transfer of the case by the method, from `from` to the other rank */
static void transfer(const bench_case *bc, int method, int from)
{
    if (self_mode) {
        transfer_self(bc, method);
        return;
    }
    int peer = 1 - rank, rc, pos = 0;

    if (rank == from) {
        switch (method) {
        case RAW:
            MPI_Send(bc->raw, (int)bc->bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            break;
        case MPI_DDT:
            MPI_Send(bc->m->buf, (int)bc->m->count, bc->m->type, peer, 1, MPI_COMM_WORLD);
            break;
        case MPI_PACK_M:
            MPI_Pack(bc->m->buf, (int)bc->m->count, bc->m->type, bc->pack, bc->pack_size, &pos,
                     MPI_COMM_WORLD);
            MPI_Send(bc->pack, pos, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
            break;
        case CDT:
            rc = bc->c != NULL
                     ? cdt_mpi_send(bc->c->buf, bc->c->count, bc->c->type, peer, 1, MPI_COMM_WORLD)
                     : cdt_mpi_send(bc->raw, bc->bytes, CDT_BYTE, peer, 1, MPI_COMM_WORLD);
            if (rc != CDT_SUCCESS)
                die("cdt_mpi_send", rc);
            break;
        }
    } else {
        MPI_Status st;
        int n = 0;
        switch (method) {
        case RAW:
            MPI_Recv(bc->raw, (int)bc->bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case MPI_DDT:
            MPI_Recv(bc->m->buf, (int)bc->m->count, bc->m->type, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            break;
        case MPI_PACK_M:
            MPI_Recv(bc->pack, bc->pack_size, MPI_PACKED, peer, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_PACKED, &n);
            MPI_Unpack(bc->pack, n, &pos, bc->m->buf, (int)bc->m->count, bc->m->type,
                       MPI_COMM_WORLD);
            break;
        case CDT:
            rc = bc->c != NULL ? cdt_mpi_recv(bc->c->buf, bc->c->count, bc->c->type, peer, 1,
                                              MPI_COMM_WORLD, NULL, MPI_STATUS_IGNORE)
                               : cdt_mpi_recv(bc->raw, bc->bytes, CDT_BYTE, peer, 1, MPI_COMM_WORLD,
                                              NULL, MPI_STATUS_IGNORE);
            if (rc != CDT_SUCCESS)
                die("cdt_mpi_recv", rc);
            break;
        }
    }
}

/* seconds of `iters` round trips (rank 0's clock; rank 1 follows) */
static double round_trips(const bench_case *bc, int method, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        transfer(bc, method, 0);
        transfer(bc, method, 1);
    }
    double t = MPI_Wtime() - t0;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_case(const bench_case *bc)
{
    if (only != NULL && strcmp(only, bc->name) != 0)
        return;
    int methods[NMETHODS], nm = 0;
    methods[nm++] = RAW;
    if (bc->m != NULL) {
        methods[nm++] = MPI_DDT;
        methods[nm++] = MPI_PACK_M;
    }
    methods[nm++] = CDT;
    int iters[NMETHODS];
    double times[NMETHODS][32];
    for (int k = 0; k < nm; k++) { /* warm up and calibrate: a round lasts target / rounds */
        round_trips(bc, methods[k], 1);
        double t1 = round_trips(bc, methods[k], 1);
        double want = target / rounds;
        iters[k] = t1 <= 0 ? 1000 : (int)(want / t1) + 1;
        if (iters[k] > 100000)
            iters[k] = 100000;
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nm; k++)
            times[k][r] = round_trips(bc, methods[k], iters[k]) / iters[k];
    if (rank != 0)
        return;
    for (int k = 0; k < nm; k++) {
        qsort(times[k], (size_t)rounds, sizeof(double), cmp_double);
        double one_way = times[k][rounds / 2] / 2;
        printf("%s,%s,%lld,latency_us,%.3f,us\n", bc->name, method_names[methods[k]],
               (long long)bc->bytes, one_way * 1e6);
        printf("%s,%s,%lld,bandwidth_mbs,%.6g,MB/s\n", bc->name, method_names[methods[k]],
               (long long)bc->bytes, (double)bc->bytes / one_way / 1e6);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int64_t max_bytes = 256ll << 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++)
        self_mode |= !strcmp(argv[i], "--self");
    if (size != (self_mode ? 1 : 2)) {
        fprintf(stderr, "bench_mpi: run with 2 processes, or 1 with --self\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            target = 0.05;
            rounds = 3;
            max_bytes = 16 << 20;
        } else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            max_bytes = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            target = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            rounds = rounds < 1 ? 1 : rounds > 31 ? 31 : rounds;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        }
    }
    int rc = cdt_mpi_attach(MPI_COMM_WORLD);
    if (rc != CDT_SUCCESS)
        die("cdt_mpi_attach", rc);
    if (rank == 0)
        printf("case,method,size_bytes,metric,value,unit\n");

    /* contiguous bytes: 16 B up to max_bytes, x4 */
    char *raw = malloc((size_t)max_bytes + 64);
    memset(raw, 7, (size_t)max_bytes);
    if (self_mode) { /* the bytes case's receive side, and MPI_Pack's (layouts under 64 MiB) */
        size_t n = (size_t)max_bytes > ((size_t)64 << 20) ? (size_t)max_bytes : (size_t)64 << 20;
        self_dst = malloc(n + 64);
        memset(self_dst, 0, n);
    }
    for (int64_t n = 16; n <= max_bytes; n *= 4) {
        bench_case bc = {"bytes", n, raw, NULL, 0, NULL, NULL, NULL, NULL};
        run_case(&bc);
    }

    static mpi_layout ml[64], ml_in[64];
    static cdt_layout cl[64], cl_in[64];
    int nm = layouts_mpi_make(ml, 64, 0), nc = layouts_cdt_make(cl, 64, 0);
    if (self_mode) {
        layouts_mpi_make(ml_in, 64, 1);
        layouts_cdt_make(cl_in, 64, 1);
    }
    for (int i = 0; i < nm && i < nc; i++) {
        int ps = 0;
        MPI_Pack_size((int)ml[i].count, ml[i].type, MPI_COMM_WORLD, &ps);
        bench_case bc = {ml[i].name,
                         ml[i].bytes,
                         malloc((size_t)ml[i].bytes + 64),
                         malloc((size_t)ps + 64),
                         ps,
                         &ml[i],
                         &cl[i],
                         NULL,
                         NULL};
        if (self_mode) {
            bc.m_in = &ml_in[i];
            bc.c_in = &cl_in[i];
        }
        memset(bc.raw, 3, (size_t)bc.bytes);
        run_case(&bc);
        free(bc.raw);
        free(bc.pack);
    }
    layouts_mpi_free();
    layouts_cdt_free();
    free(self_dst);
    free(raw);
    MPI_Finalize();
    return 0;
}
