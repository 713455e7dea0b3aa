/* bench_common.h - timing shared by the pack benchmark's programs. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double bench_min_time = 0.2; /* seconds per measurement (best of 3 rounds) */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GB/s (10^9 bytes) of fn(arg) moving `bytes` per call */
#define BENCH_GBS(bytes, call)                                                                     \
    ({                                                                                             \
        double best_ = 0;                                                                          \
        call;                                                                                      \
        for (int round_ = 0; round_ < 3; round_++) {                                               \
            long iters_ = 1;                                                                       \
            for (;;) {                                                                             \
                double t0_ = now_s();                                                              \
                for (long it_ = 0; it_ < iters_; it_++) {                                          \
                    call;                                                                          \
                }                                                                                  \
                double dt_ = now_s() - t0_;                                                        \
                if (dt_ >= bench_min_time / 3 || iters_ > (1L << 30)) {                            \
                    double g_ = (double)(bytes) * (double)iters_ / dt_ / 1e9;                      \
                    if (g_ > best_)                                                                \
                        best_ = g_;                                                                \
                    break;                                                                         \
                }                                                                                  \
                iters_ = dt_ <= 0 ? iters_ * 10                                                    \
                                  : (long)((double)iters_ * (bench_min_time / 3) / dt_ * 1.2) + 1; \
            }                                                                                      \
        }                                                                                          \
        best_;                                                                                     \
    })

static void bench_row(const char *name, const char *method, long long bytes, const char *metric,
                      double gbs)
{
    printf("%s,%s,%lld,%s,%.4f,GB/s\n", name, method, bytes, metric, gbs);
    fflush(stdout);
}

static void bench_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == 't' && i + 1 < argc)
            bench_min_time = atof(argv[++i]);
}

#endif
