/*
 * loopcost.c - where a small-block layout's time goes (docs/ENGINE.md, "Small-block layouts"):
 * cdt_pack / cdt_unpack against libcdt's own stride loop called directly (the same loop
 * without the call chain and the form: what is left is the fixed cost per call), a
 * one-run-per-iteration loop, and the hand-written loop, on rows of 8-byte runs.
 *
 * On a shared machine a sample of many calls is usually preempted somewhere; short samples
 * (100 calls), many interleaved rounds (2,001) and the 10th percentile of each method's
 * samples measure what an undisturbed call costs.
 *
 * usage: bench_loopcost [vector_1000 | NAS_MG_x]   (default both)
 */
#include <cdt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *lc_unroll4_pack(const char *p, long count, long stride, char *s);
const char *lc_unroll4_unpack(char *p, long count, long stride, const char *s);
char *lc_simple_pack(const char *p, long count, long stride, char *s);
const char *lc_simple_unpack(char *p, long count, long stride, const char *s);
void lc_hand_pack(const char *s, long rows, long row_stride, long n, long stride, double *d);
void lc_hand_unpack(char *s, long rows, long row_stride, long n, long stride, const double *d);

#define ROUNDS 2001
#define CALLS 100

/* rows of n 8-byte runs stride bytes apart, rows row_stride apart (vector_1000: one row) */
static long rows, row_stride, n, stride;
static char *buf, *packed;
static cdt_type type;

static void m_cdt_pack(void)
{
    cdt_count pos = 0;
    cdt_pack(buf, 1, type, packed, rows * n * 8, &pos);
}
static void m_loop_pack(void)
{
    char *s = packed;
    for (long r = 0; r < rows; r++)
        s = lc_unroll4_pack(buf + r * row_stride, n, stride, s);
}
static void m_simple_pack(void)
{
    char *s = packed;
    for (long r = 0; r < rows; r++)
        s = lc_simple_pack(buf + r * row_stride, n, stride, s);
}
static void m_hand_pack(void)
{
    lc_hand_pack(buf, rows, row_stride, n, stride, (double *)packed);
}
static void m_cdt_unpack(void)
{
    cdt_count pos = 0;
    cdt_unpack(packed, rows * n * 8, &pos, buf, 1, type);
}
static void m_loop_unpack(void)
{
    const char *s = packed;
    for (long r = 0; r < rows; r++)
        s = lc_unroll4_unpack(buf + r * row_stride, n, stride, s);
}
static void m_simple_unpack(void)
{
    const char *s = packed;
    for (long r = 0; r < rows; r++)
        s = lc_simple_unpack(buf + r * row_stride, n, stride, s);
}
static void m_hand_unpack(void)
{
    lc_hand_unpack(buf, rows, row_stride, n, stride, (const double *)packed);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(const char *name, long r, long rs, long cnt, long st)
{
    rows = r, row_stride = rs, n = cnt, stride = st;
    size_t span = (size_t)((rows - 1) * row_stride + (n - 1) * stride + 8);
    buf = calloc(1, span);
    packed = calloc(1, (size_t)(rows * n * 8));
    cdt_type row;
    if (buf == NULL || packed == NULL || cdt_type_hvector(n, 1, stride, CDT_DOUBLE, &row) ||
        cdt_type_hvector(rows, 1, row_stride, row, &type) || cdt_type_commit(&type)) {
        fprintf(stderr, "bench_loopcost: setup failed\n");
        exit(1);
    }
    cdt_type_free(&row);
    static const struct {
        const char *name;
        void (*f)(void);
    } m[] = {{"cdt_pack", m_cdt_pack},           {"loop_pack", m_loop_pack},
             {"simple_pack", m_simple_pack},     {"hand_pack", m_hand_pack},
             {"cdt_unpack", m_cdt_unpack},       {"loop_unpack", m_loop_unpack},
             {"simple_unpack", m_simple_unpack}, {"hand_unpack", m_hand_unpack}};
    enum { NM = sizeof(m) / sizeof(m[0]) };
    static double ns[NM][ROUNDS];
    for (int k = 0; k < ROUNDS; k++)
        for (int j = 0; j < NM; j++) {
            double t0 = now();
            for (int c = 0; c < CALLS; c++)
                m[j].f();
            ns[j][k] = (now() - t0) / CALLS * 1e9;
        }
    printf("%s: %ld rows of %ld 8-byte runs %ld B apart (ns per call: 10th percentile, median)\n",
           name, rows, n, stride);
    for (int j = 0; j < NM; j++) {
        qsort(ns[j], ROUNDS, sizeof(double), cmp);
        printf("  %-14s %9.1f %9.1f\n", m[j].name, ns[j][ROUNDS / 10], ns[j][ROUNDS / 2]);
    }
    cdt_type_free(&type);
    free(buf);
    free(packed);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only == NULL || !strcmp(only, "vector_1000"))
        run("vector_1000", 1, 0, 1000, 24 * 8); /* vector(1000, 1, 24, DOUBLE) */
    if (only == NULL || !strcmp(only, "NAS_MG_x"))
        run("NAS_MG_x", 64, 130 * 66 * 8, 64, 130 * 8); /* layouts.h lay_nas_mg_x(130, 66, 66) */
    return 0;
}
