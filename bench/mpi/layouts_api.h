/* layouts_api.h - bench/pack's layouts (DDTBench and the seed types) built twice, with MPI's
 * constructors (layouts_mpi.c) and with libcdt's (layouts_cdt.c): one translation unit each,
 * since layouts.h is written against one builder interface at a time. Same shapes, same
 * bytes, same order. */
#ifndef BENCH_MPI_LAYOUTS_API_H
#define BENCH_MPI_LAYOUTS_API_H

#include <cdt.h>
#include <mpi.h>
#include <stdint.h>

typedef struct mpi_layout {
    const char *name;
    void *buf;
    int64_t count;
    MPI_Datatype type;
    int64_t bytes; /* packed bytes */
} mpi_layout;

typedef struct cdt_layout {
    const char *name;
    void *buf;
    int64_t count;
    cdt_type type;
    int64_t bytes;
} cdt_layout;

/* every layout into out (at most max), as set 0 or 1 (two sets of memory: a rank sending to
 * itself receives into the other); returns how many */
int layouts_mpi_make(mpi_layout *out, int max, int set);
int layouts_cdt_make(cdt_layout *out, int max, int set);
void layouts_mpi_free(void);
void layouts_cdt_free(void);

#endif
