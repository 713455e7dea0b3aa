/*
 * strided_bound.c - what bounds the demo's strided row (8 MiB of every other double of 16 MiB,
 * received into the same layout): the rate of each way to move those bytes on one core, alone
 * and with the other core running the same loop on its own buffers at the same time.
 *
 * Any transfer of this layout reads every cache line of the sender's 16 MiB and rewrites every
 * line of the receiver's 16 MiB (half of each line is someone else's data, so a receive cannot
 * write whole lines), where raw's one copy reads 8 MiB and writes 8 MiB. The loops:
 *   memcpy        the packed 8 MiB (what a contiguous message's one copy does)
 *   pack          strided -> contiguous (the sender's loop through an intermediate buffer)
 *   unpack        contiguous -> strided (the receiver's loop)
 *   one_pass      strided -> strided by hand (a method that would copy the sender's memory into
 *                 the receiver's directly, if one process could address both)
 *   cdt_copy      the same one-pass copy by libcdt (cdt_copy between the two layouts)
 * Through an intermediate buffer the two cores run pack and unpack side by side, so the rate is
 * at most the slower of the two with both cores busy; one pass on both cores at most twice the
 * one_pass rate with both cores busy.
 *
 * usage: strided_bound [--rounds N] [--mib M]    (defaults: 9 rounds, 8 MiB of data)
 * Prints a markdown table: GB/s (10^9 bytes/s) of data, the median of the rounds.
 */
#include <cdt.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { M_MEMCPY, M_PACK, M_UNPACK, M_ONE_PASS, M_CDT_COPY, NMETHODS };
static const char *const method_names[NMETHODS] = {"memcpy", "pack", "unpack", "one_pass",
                                                   "cdt_copy"};

typedef struct {
    size_t n; /* doubles of data */
    double *src, *dst, *packed, *other;
    cdt_type vec;
} buffers;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int buffers_make(buffers *b, size_t n)
{
    b->n = n;
    b->src = aligned_alloc(64, 2 * n * sizeof(double));
    b->dst = aligned_alloc(64, 2 * n * sizeof(double));
    b->packed = aligned_alloc(64, n * sizeof(double));
    b->other = aligned_alloc(64, n * sizeof(double));
    if (b->src == NULL || b->dst == NULL || b->packed == NULL || b->other == NULL)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        b->src[i] = (double)i;
        b->dst[i] = -1.0;
    }
    for (size_t i = 0; i < n; i++)
        b->packed[i] = b->other[i] = (double)i;
    b->vec = NULL;
    if (cdt_type_vector((cdt_count)n, 1, 2, CDT_DOUBLE, &b->vec) != CDT_SUCCESS ||
        cdt_type_commit(&b->vec) != CDT_SUCCESS)
        return -1;
    return 0;
}

static void run_method(buffers *b, int m)
{
    size_t n = b->n;
    switch (m) {
    case M_MEMCPY:
        memcpy(b->other, b->packed, n * sizeof(double));
        break;
    case M_PACK:
        for (size_t i = 0; i < n; i++)
            b->packed[i] = b->src[2 * i];
        break;
    case M_UNPACK:
        for (size_t i = 0; i < n; i++)
            b->dst[2 * i] = b->packed[i];
        break;
    case M_ONE_PASS:
        for (size_t i = 0; i < n; i++)
            b->dst[2 * i] = b->src[2 * i];
        break;
    default:
        if (cdt_copy(b->src, 1, b->vec, b->dst, 1, b->vec) != CDT_SUCCESS) {
            fprintf(stderr, "strided_bound: cdt_copy failed\n");
            exit(1);
        }
        break;
    }
    __asm__ volatile("" ::: "memory");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median GB/s of `rounds` timed calls (after two untimed ones) of method m */
static double measure(buffers *b, int m, int rounds)
{
    double samples[64];
    if (rounds > 64)
        rounds = 64;
    run_method(b, m);
    run_method(b, m);
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        run_method(b, m);
        double dt = now_s() - t0;
        samples[r] = dt > 0 ? (double)(b->n * sizeof(double)) / dt / 1e9 : 0;
    }
    qsort(samples, (size_t)rounds, sizeof(double), cmp_double);
    return samples[rounds / 2];
}

/* method m in `procs` processes at once (each its own buffers, made before the start): the
 * rate of each (their mean), or -1 */
static double measure_together(size_t n, int m, int rounds, int procs)
{
    int fds[2][2], start[2];
    pid_t pids[2];
    double sum = 0;
    if (pipe(start) != 0)
        return -1;
    for (int p = 0; p < procs; p++) {
        if (pipe(fds[p]) != 0)
            return -1;
        pids[p] = fork();
        if (pids[p] < 0)
            return -1;
        if (pids[p] == 0) {
            buffers b;
            char go;
            double gbs = -1;
            close(start[1]);
            if (buffers_make(&b, n) == 0) {
                run_method(&b, m); /* the first touch of every page */
                if (read(start[0], &go, 1) == 1)
                    gbs = measure(&b, m, rounds);
            }
            if (write(fds[p][1], &gbs, sizeof gbs) != (ssize_t)sizeof gbs)
                _exit(1);
            _exit(0);
        }
        close(fds[p][1]);
    }
    close(start[0]);
    /* both children have made their buffers once they read the byte: start them together */
    char go[2] = {1, 1};
    if (write(start[1], go, (size_t)procs) != (ssize_t)procs)
        return -1;
    close(start[1]);
    for (int p = 0; p < procs; p++) {
        double gbs = -1;
        if (read(fds[p][0], &gbs, sizeof gbs) != (ssize_t)sizeof gbs || gbs < 0)
            sum = -1e30;
        close(fds[p][0]);
        waitpid(pids[p], NULL, 0);
        sum += gbs;
    }
    return sum < 0 ? -1 : sum / procs;
}

int main(int argc, char **argv)
{
    int rounds = 9;
    long mib = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: strided_bound [--rounds N] [--mib M]\n");
            return 2;
        }
    }
    if (rounds < 1 || mib < 1) {
        fprintf(stderr, "strided_bound: --rounds and --mib must be positive\n");
        return 2;
    }
    size_t n = (size_t)mib * ((size_t)1 << 20) / sizeof(double);
    double one[NMETHODS], two[NMETHODS];
    for (int m = 0; m < NMETHODS; m++) {
        one[m] = measure_together(n, m, rounds, 1);
        two[m] = measure_together(n, m, rounds, 2);
        if (one[m] < 0 || two[m] < 0) {
            fprintf(stderr, "strided_bound: %s failed\n", method_names[m]);
            return 1;
        }
    }
    printf("## What bounds the strided row: %ld MiB of every other double\n\n", mib);
    printf("GB/s (10^9 bytes/s) of data, median of %d rounds; \"both cores\": each of two\n"
           "processes running the same loop on its own buffers at the same time.\n\n",
           rounds);
    printf("| loop | one core | each of both cores | / memcpy (both cores) |\n");
    printf("|---|---:|---:|---:|\n");
    for (int m = 0; m < NMETHODS; m++)
        printf("| %s | %.2f | %.2f | %.2f |\n", method_names[m], one[m], two[m],
               two[m] / two[M_MEMCPY]);
    double through = two[M_PACK] < two[M_UNPACK] ? two[M_PACK] : two[M_UNPACK];
    double direct = two[M_ONE_PASS] > two[M_CDT_COPY] ? two[M_ONE_PASS] : two[M_CDT_COPY];
    printf("\nBounds with both cores busy: through an intermediate buffer (pack on one core, "
           "unpack on the\nother) %.2f GB/s; one pass split over both cores %.2f GB/s; one "
           "memcpy of the packed bytes\non one core %.2f GB/s.\n",
           through, 2 * direct, one[M_MEMCPY]);
    return 0;
}
