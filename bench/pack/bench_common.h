/* bench_common.h - timing shared by the pack benchmark's programs. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double bench_min_time = 0.2; /* seconds per method and direction, over all rounds */
static int bench_rounds = 5;        /* interleaved rounds (-r) */
static const char *bench_only;      /* --only LAYOUT: that layout alone */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One way of moving a layout's bytes (pack into, or unpack from, `data`). */
typedef struct {
    const char *name;
    void (*run)(const void *layout, char *data);
} bench_method;

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GB/s (10^9 bytes) of every method on the same layout and buffer, measured in this one process
 * and interleaved: each round times every method once (A B C A B C ...), and each method's
 * result is the median of its rounds. A method measured alone in its own process, or in a block
 * after the others, meets other page placements, cache states and load periods; interleaving
 * spreads those over every method alike. Iteration counts are calibrated once per method so
 * that a round of one method lasts bench_min_time / bench_rounds.
 *
 * The first call after another method pays for that method's traces in the caches and the
 * TLB: rand_hindexed_block's first pack or unpack after the memcpy reference took 1.5 to 3.7
 * times as long as its eighth (250-630 against 164-177 us, the fastest of 150 tries in each of
 * several runs of bench_pack_cdt --first-call, bench/results/pack_perf.md), the second call up
 * to 1.4 times, the third within 3%; a round is only a few calls of a large layout. In a fixed
 * order (libcdt, libcdt_op, manual, memcpy) that cost always fell on the first method, libcdt, and
 * showed cdt_pack slower than the operation API that runs the same kernel. So every sample starts
 * with BENCH_UNTIMED calls of its own method, and round r starts at method r mod n: no method owns
 * a place in the order. */
#define BENCH_UNTIMED 2
static void bench_interleaved(const void *layout, char *data, long long bytes,
                              const bench_method *m, int n, double *gbs)
{
    long iters[16];
    double per_round = bench_min_time / bench_rounds, samples[16][64];
    int rounds = bench_rounds < 64 ? bench_rounds : 64;
    for (int k = 0; k < n && k < 16; k++) {
        m[k].run(layout, data); /* warm: first-touch faults and caches */
        iters[k] = 1;
        for (;;) {
            double t0 = now_s();
            for (long it = 0; it < iters[k]; it++)
                m[k].run(layout, data);
            double dt = now_s() - t0;
            if (dt >= per_round / 4 || iters[k] > (1L << 30))
                break;
            iters[k] = dt <= 0 ? iters[k] * 10 : (long)((double)iters[k] * per_round / dt) + 1;
        }
    }
    int nm = n < 16 ? n : 16;
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < nm; j++) {
            int k = (r + j) % nm;
            for (int w = 0; w < BENCH_UNTIMED; w++) /* what the previous method left */
                m[k].run(layout, data);
            double t0 = now_s();
            for (long it = 0; it < iters[k]; it++)
                m[k].run(layout, data);
            double dt = now_s() - t0;
            samples[k][r] = dt > 0 ? (double)bytes * (double)iters[k] / dt / 1e9 : 0;
        }
    }
    for (int k = 0; k < n && k < 16; k++) {
        qsort(samples[k], (size_t)rounds, sizeof(double), bench_cmp_double);
        gbs[k] = samples[k][rounds / 2];
    }
}

static void bench_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] == 't' && argv[i][2] == 0 && i + 1 < argc)
            bench_min_time = atof(argv[++i]);
        else if (argv[i][0] == '-' && argv[i][1] == 'r' && argv[i][2] == 0 && i + 1 < argc)
            bench_rounds = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            bench_only = argv[++i];
    }
}

/* --only: is this layout measured? */
static int bench_selected(const char *name)
{
    return bench_only == NULL || !strcmp(bench_only, name);
}

static void bench_row(const char *name, const char *method, long long bytes, const char *metric,
                      double gbs)
{
    printf("%s,%s,%lld,%s,%.4f,GB/s\n", name, method, bytes, metric, gbs);
    fflush(stdout);
}

/* bench_interleaved, then one CSV row per method */
static void bench_rows(const char *name, const char *metric, const void *layout, char *data,
                       long long bytes, const bench_method *m, int n)
{
    double gbs[16];
    bench_interleaved(layout, data, bytes, m, n, gbs);
    for (int k = 0; k < n && k < 16; k++)
        bench_row(name, m[k].name, bytes, metric, gbs[k]);
}

#endif
