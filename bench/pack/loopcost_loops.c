/*
 * loopcost_loops.c - the loops bench_loopcost times against cdt_pack / cdt_unpack: libcdt's own
 * stride loop for 8-byte runs (DIR(runs)'s fixed-size case: four runs per iteration, addresses
 * p + i * stride), built like the library (-O3, no -march), and the one-run-per-iteration loop.
 * The hand-written loops are in loopcost_hand.c, built like the benchmark's (-O3 -march=native).
 */
#include <string.h>

char *lc_unroll4_pack(const char *p, long count, long stride, char *s)
{
    long i = 0;
    for (; i + 4 <= count; i += 4, s += 32) {
        memcpy(s, p + i * stride, 8);
        memcpy(s + 8, p + (i + 1) * stride, 8);
        memcpy(s + 16, p + (i + 2) * stride, 8);
        memcpy(s + 24, p + (i + 3) * stride, 8);
    }
    for (; i < count; i++, s += 8)
        memcpy(s, p + i * stride, 8);
    return s;
}

const char *lc_unroll4_unpack(char *p, long count, long stride, const char *s)
{
    long i = 0;
    for (; i + 4 <= count; i += 4, s += 32) {
        memcpy(p + i * stride, s, 8);
        memcpy(p + (i + 1) * stride, s + 8, 8);
        memcpy(p + (i + 2) * stride, s + 16, 8);
        memcpy(p + (i + 3) * stride, s + 24, 8);
    }
    for (; i < count; i++, s += 8)
        memcpy(p + i * stride, s, 8);
    return s;
}

char *lc_simple_pack(const char *p, long count, long stride, char *s)
{
    for (long i = 0; i < count; i++, s += 8, p += stride)
        memcpy(s, p, 8);
    return s;
}

const char *lc_simple_unpack(char *p, long count, long stride, const char *s)
{
    for (long i = 0; i < count; i++, s += 8, p += stride)
        memcpy(p, s, 8);
    return s;
}
