/*
 * test_engine_diff.h - what the files of test_engine_diff share: the description of a random
 * type (td) and the functions that main (test_engine_diff.c) calls across files.
 */
#ifndef CDT_TEST_ENGINE_DIFF_H
#define CDT_TEST_ENGINE_DIFF_H

#define CHECK_SHARED_COUNTERS /* one pair of counters for all the files (check.h) */
#include "../core/check.h"

#include <stdint.h>
#include <string.h>

#ifdef CDT_TEST_MPICH
#include <mpi.h>
#endif

/* ---- type description ---- */
enum {
    T_PRE,
    T_CONTIG,
    T_VEC,
    T_HVEC,
    T_IDX,
    T_HIDX,
    T_IDXB,
    T_HIDXB,
    T_STRUCT,
    T_SUB,
    T_RESIZED,
    T_DUP,
    T_PADDED, /* cdt_type_padded: the bytes of [lb, lb + extent) */
    T_NCTOR
};

#define MAXN 6
typedef struct td {
    int ctor;
    cdt_kind kind;
    int64_t count, bl, stride;
    int64_t bls[MAXN], disps[MAXN];
    int64_t *ldisps; /* (H)INDEXED_BLOCK of more than MAXN blocks (gen_zip); else disps */
    struct td *kids[MAXN];
    int ndims, order;
    int64_t sizes[3], subsizes[3], starts[3];
    int64_t rlb, rext;
    /* reference results */
    int64_t *map, nmap; /* byte offsets of one element, in packed order */
    int64_t lb, extent;
    cdt_type t;
#ifdef CDT_TEST_MPICH
    MPI_Datatype m;
#endif
} td;

#define DISPS(t) ((t)->ldisps != NULL ? (t)->ldisps : (t)->disps)

/* diff_generator.c: random numbers (main seeds rng_state for each seed) and random type
 * trees, each with its reference results */
extern uint64_t rng_state;
uint64_t rnd(void);
int64_t rint_in(int64_t lo, int64_t hi); /* inclusive */
td *gen(int depth, int64_t budget);

/* diff_reference.c: the reference interpreter, a type's typemap as byte offsets */
void reference(td *t);

/* diff_build.c: a td built with libcdt (and with MPICH), printed, freed */
int build_cdt(td *t);
void dump(const td *t, int ind);
void free_td(td *t);
#ifdef CDT_TEST_MPICH
void build_mpi(td *t);
#endif

/* diff_checks.c: pack, unpack, iov and copy of a built type against the reference (and
 * MPICH's MPI_Pack) */
extern long mpi_compared;
extern int seed_failed; /* set by the checks when the seed's type gave a wrong result */
void check_one(td *t, int64_t count);
void check_copy(td *s, int64_t sc, td *d, int64_t dc);

#endif
