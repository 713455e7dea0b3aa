/*
 * test_engine_diff.c - differential test of the derived datatype engine.
 *
 * A generator builds random type trees (depth <= 4, every constructor, negative strides and
 * displacements, resized with low/high lb and negative extent, structs of mixed predefined
 * types, zero-length blocks, structs of block-indexed members over one shared index list).
 * Each type is built three ways: with libcdt, as a typemap by the deliberately simple reference
 * interpreter (a list of byte offsets), and, when built with MPICH, as an MPI datatype.
 * Pack (random fragment sizes and orders through the operation API), unpack, iov and copy are
 * compared byte for byte.
 *
 * usage: test_engine_diff [seeds] [--mpich]   (seeds also from CDT_TEST_SEEDS; default 3000)
 *
 * main seeds and runs each type; the rest lives by job (test_engine_diff.h):
 * diff_generator.c (random numbers, random type trees), diff_reference.c (the reference
 * interpreter), diff_build.c (libcdt and MPICH builders) and diff_checks.c (the checks).
 */
#include "test_engine_diff.h"

int check_failures, check_count; /* check.h: one pair for all the files of the program */

int main(int argc, char **argv)
{
    long seeds = 3000;
    int want_mpich = 0;
    const char *env = getenv("CDT_TEST_SEEDS");
    if (env != NULL)
        seeds = atol(env);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mpich"))
            want_mpich = 1;
        else
            seeds = atol(argv[i]);
    }
#ifdef CDT_TEST_MPICH
    MPI_Init(&argc, &argv);
#else
    if (want_mpich) {
        printf("SKIPPED: built without MPICH (install libmpich-dev to compare with MPI_Pack)\n");
        return 77;
    }
#endif
    for (long s = 1; s <= seeds; s++) {
        rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)s + 12345;
        seed_failed = 0;
        td *t = gen(4, 4096);
        if (build_cdt(t) != CDT_SUCCESS || cdt_type_commit(&t->t) != CDT_SUCCESS) {
            CHECK(!"build or commit failed");
            free_td(t);
            continue;
        }
#ifdef CDT_TEST_MPICH
        build_mpi(t);
#endif
        int64_t count = rint_in(0, 4);
        check_one(t, count);
        td *u = gen(3, 2048);
        if (build_cdt(u) == CDT_SUCCESS && cdt_type_commit(&u->t) == CDT_SUCCESS && u->nmap > 0) {
            int64_t sc = rint_in(0, 3), dc = (sc * t->nmap) / u->nmap + rint_in(0, 1);
            check_copy(t, sc, u, dc);
            check_copy(u, rint_in(0, 2), t, rint_in(0, 3));
        }
        if (seed_failed) {
            char desc[512];
            cdt_type_describe(t->t, desc, sizeof(desc), NULL);
            fprintf(stderr, "seed %ld failed: form %s\n", s, desc);
            dump(t, 2);
        }
        free_td(u);
        free_td(t);
    }
#ifdef CDT_TEST_MPICH
    MPI_Finalize();
#endif
    (void)want_mpich;
    if (want_mpich)
        printf("compared with MPI_Pack of MPICH: %ld types\n", mpi_compared);
    return check_report("test_engine_diff");
}
