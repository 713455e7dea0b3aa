/* mpmd_rank.c - the C rank of the multi-language MPI job (tests/mpi/mpmd/run.sh): one MPMD
 * job of C, Python and Rust ranks (Julia where it exists) in which every rank sends every
 * other rank the objects of the shared test vectors (tests/vectors: derived types, nested
 * structs, arrays, strings, Python's buffers) and one with large regions (the parts message),
 * and checks what it receives byte for byte: the stream, every region and its kind, and the
 * frame rebuilt from them against the vector's own bytes. Usage: mpmd_rank VECTOR_DIR. */
#include "cdt_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpmd_objects.h"

static int rank;

static void fail(const char *what, int k, int from)
{
    fprintf(stderr, "mpmd C rank %d: object %s from rank %d: %s\n", rank, mpmd_names[k], from,
            what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* the frame of a serialized object (cdt_sobj_type), copied into one buffer */
static unsigned char *frame_of(const cdt_sobj *so, cdt_count *len)
{
    cdt_frame f;
    if (cdt_frame_encode(so, 1, cdt_sobj_type(), NULL, &f) != CDT_SUCCESS ||
        cdt_frame_size(f, len) != CDT_SUCCESS)
        return NULL;
    unsigned char *out = malloc((size_t)*len + 1);
    if (out != NULL && cdt_frame_gather(f, 0, out, *len) != CDT_SUCCESS) {
        free(out);
        out = NULL;
    }
    cdt_frame_free(f);
    return out;
}

static void check(const cdt_sobj *got, const mpmd_object *want, int k, int from)
{
    if (got->inband_len != want->so.inband_len ||
        memcmp(got->inband, want->so.inband, (size_t)want->so.inband_len) != 0)
        fail("the stream differs", k, from);
    if (got->nbuffers != want->so.nbuffers)
        fail("the region count differs", k, from);
    for (cdt_count i = 0; i < want->so.nbuffers; i++) {
        const cdt_sobj_buffer *g = &got->buffers[i], *w = &want->so.buffers[i];
        if (g->len != w->len || g->kind != w->kind ||
            (w->len > 0 && memcmp(g->base, w->base, (size_t)w->len) != 0))
            fail("a region differs (bytes, length or kind)", k, from);
    }
    cdt_count n = 0;
    unsigned char *frame = frame_of(got, &n);
    if (frame == NULL || n != want->frame_len || memcmp(frame, want->frame, (size_t)n) != 0)
        fail("the frame rebuilt from it is not the vector's bytes", k, from);
    free(frame);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    /* where the Python ranks import cdtypes.mpi: before any other communicator is made */
    if (cdt_mpi_attach(MPI_COMM_WORLD) != CDT_SUCCESS) {
        fprintf(stderr, "cdt_mpi_attach: %s\n", cdt_mpi_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        fprintf(stderr, "usage: mpmd_rank VECTOR_DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mpmd_object objs[MPMD_COUNT];
    for (int k = 0; k < MPMD_COUNT; k++)
        if (mpmd_load(&objs[k], argv[1], k) != 0) {
            fprintf(stderr, "mpmd C rank %d: cannot load %s from %s\n", rank, mpmd_names[k],
                    argv[1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    cdt_mpi_recv_params limits = {
        CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES | CDT_MPI_RECV_PARAM_MAX_REGIONS, 16 << 20, 64, 0};
    int received = 0;
    for (int k = 0; k < MPMD_COUNT; k++) {
        for (int from = 0; from < size; from++) {
            if (from == rank) {
                for (int to = 0; to < size; to++)
                    if (to != rank && cdt_mpi_send_sobj(&objs[k].so, to, k, MPI_COMM_WORLD) != 0)
                        fail(cdt_mpi_last_error(), k, rank);
                continue;
            }
            cdt_sobj got;
            memset(&got, 0, sizeof got);
            MPI_Status st;
            if (cdt_mpi_recv_sobj(&got, from, k, MPI_COMM_WORLD, &limits, &st) != CDT_SUCCESS)
                fail(cdt_mpi_last_error(), k, from);
            check(&got, &objs[k], k, from);
            cdt_sobj_release(&got);
            received++;
        }
    }
    for (int k = 0; k < MPMD_COUNT; k++)
        mpmd_free(&objs[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("mpmd rank %d (C): %d objects received, byte for byte ok\n", rank, received);
    MPI_Finalize();
    return 0;
}
