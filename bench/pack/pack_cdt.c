/*
 * pack_cdt.c - libcdt pack/unpack of every layout (cdt_pack / cdt_unpack, and the operation API
 * as libcdt_op), beside the hand-written loop and memcpy of the same byte count, interleaved in
 * this one process (bench_common.h). Prints CSV rows (case,method,size_bytes,metric,value,unit).
 * usage: bench_pack_cdt [-t seconds] [-r rounds] [--only LAYOUT] [-c] [--counts] [--first-call]
 *   -c            also print commit times
 *   --counts      no timing: each method 10 times in its own function (counted_*), for callgrind
 *   --first-call  no CSV: each method's 1st to 8th call after the memcpy reference, the fastest
 *                 of FIRST_TRIES tries each (what a method pays for the one before it)
 */
#include <cdt.h>

#include "bench_common.h"

#include <string.h>

#include "builders_cdt.h"

#define WITH_MANUAL 1
#include "layouts.h"

/* the whole-message calls (cdt_pack / cdt_unpack), as a user packs one message */
static void cdt_pack_all(const void *lp, char *out)
{
    const layout *l = lp;
    cdt_count pos = 0;
    cdt_pack(l->buf, l->count, l->type, out, l->bytes, &pos);
}

static void cdt_unpack_all(const void *lp, char *in)
{
    const layout *l = lp;
    cdt_count pos = 0;
    cdt_unpack(in, l->bytes, &pos, l->buf, l->count, l->type);
}

/* the operation API over the whole stream: begin, one fragment, end */
static void cdt_op_pack_all(const void *lp, char *out)
{
    const layout *l = lp;
    cdt_op op;
    cdt_count used;
    cdt_op_pack_begin(l->buf, l->count, l->type, &op);
    cdt_op_pack(op, 0, out, l->bytes, &used);
    cdt_op_end(op);
}

static void cdt_op_unpack_all(const void *lp, char *in)
{
    const layout *l = lp;
    cdt_op op;
    cdt_op_unpack_begin(l->buf, l->count, l->type, &op);
    cdt_op_unpack(op, 0, in, l->bytes);
    cdt_op_end(op);
}

static char *memcpy_other; /* the second buffer of the memcpy reference */

static void memcpy_to(const void *lp, char *out)
{
    const layout *l = lp;
    memcpy(out, memcpy_other, (size_t)l->bytes);
    __asm__ volatile("" ::: "memory");
}

static void memcpy_from(const void *lp, char *in)
{
    const layout *l = lp;
    memcpy(memcpy_other, in, (size_t)l->bytes);
    __asm__ volatile("" ::: "memory");
}

static const bench_method pack_methods[] = {
    {"libcdt", cdt_pack_all},
    {"libcdt_op", cdt_op_pack_all},
    {"manual", manual_pack_all},
    {"memcpy", memcpy_to},
};
static const bench_method unpack_methods[] = {
    {"libcdt", cdt_unpack_all},
    {"libcdt_op", cdt_op_unpack_all},
    {"manual", manual_unpack_all},
    {"memcpy", memcpy_from},
};
#define NMETHODS ((int)(sizeof(pack_methods) / sizeof(pack_methods[0])))

/* --counts: each method COUNTED_CALLS times in a function of its own, for callgrind
 * (bench/run pack --counts collects each function's inclusive instruction count) */
#define COUNTED_CALLS 10
#define COUNTED(fn, run)                                                                           \
    __attribute__((noinline)) static void fn(const layout *l, char *data)                          \
    {                                                                                              \
        for (int i = 0; i < COUNTED_CALLS; i++)                                                    \
            run(l, data);                                                                          \
    }
COUNTED(counted_libcdt_pack, cdt_pack_all)
COUNTED(counted_libcdt_unpack, cdt_unpack_all)
COUNTED(counted_libcdt_op_pack, cdt_op_pack_all)
COUNTED(counted_libcdt_op_unpack, cdt_op_unpack_all)
COUNTED(counted_manual_pack, manual_pack_all)
COUNTED(counted_manual_unpack, manual_unpack_all)

/* --first-call: the memcpy reference FIRST_WIPE times (as the method before in a round), then
 * FIRST_CALLS timed calls of one method; the fastest of FIRST_TRIES tries per call index. The
 * fastest of many tries is what is left when the machine's other work is not in the way. */
#define FIRST_TRIES 150
#define FIRST_WIPE 4
#define FIRST_CALLS 8
static void first_calls(const layout *l, char *data, const char *direction, const bench_method *m,
                        int n)
{
    for (int k = 0; k < n; k++) {
        if (m[k].run == memcpy_to || m[k].run == memcpy_from)
            continue;
        double best[FIRST_CALLS];
        for (int c = 0; c < FIRST_CALLS; c++)
            best[c] = 1e30;
        for (int t = 0; t < FIRST_TRIES; t++) {
            for (int w = 0; w < FIRST_WIPE; w++)
                (direction[0] == 'p' ? memcpy_to : memcpy_from)(l, data);
            for (int c = 0; c < FIRST_CALLS; c++) {
                double t0 = now_s();
                m[k].run(l, data);
                double dt = now_s() - t0;
                best[c] = dt < best[c] ? dt : best[c];
            }
        }
        printf("%-22s %-7s %-10s", l->name, direction, m[k].name);
        for (int c = 0; c < FIRST_CALLS; c++)
            printf(" %9.0f", best[c] * 1e9);
        printf("  ns\n");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    bench_args(argc, argv);
    int commit_times = 0, counts = 0, first = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c"))
            commit_times = 1;
        if (!strcmp(argv[i], "--counts"))
            counts = 1;
        if (!strcmp(argv[i], "--first-call"))
            first = 1;
    }
    if (first)
        printf("# fastest of %d tries of the 1st..%dth call after %d memcpy references\n",
               FIRST_TRIES, FIRST_CALLS, FIRST_WIPE);
    static layout ls[64];
    int n = layouts_make(ls, 64);
    for (int i = 0; i < n; i++) {
        layout *l = &ls[i];
        if (!bench_selected(l->name))
            continue;
        char *a = malloc((size_t)l->bytes + 64), *b = malloc((size_t)l->bytes + 64);
        memcpy_other = malloc((size_t)l->bytes + 64);
        memset(a, 1, (size_t)l->bytes);
        memset(b, 2, (size_t)l->bytes);
        memset(memcpy_other, 3, (size_t)l->bytes);
        /* the hand-written loop is the specification of the layout: check libcdt against it */
        cdt_pack_all(l, a);
        l->manual_pack(l, b);
        if (memcmp(a, b, (size_t)l->bytes) != 0)
            fprintf(stderr, "bench_pack_cdt: %s: libcdt and the manual loop pack differently\n",
                    l->name);
        cdt_op_pack_all(l, b);
        if (memcmp(a, b, (size_t)l->bytes) != 0)
            fprintf(stderr, "bench_pack_cdt: %s: cdt_pack and the operation pack differently\n",
                    l->name);
        char desc[160];
        cdt_type_describe(l->type, desc, sizeof(desc), NULL);
        fprintf(stderr, "%-22s %10lld B  %s\n", l->name, (long long)l->bytes, desc);
        if (counts) {
            counted_libcdt_pack(l, a);
            counted_libcdt_unpack(l, a);
            counted_libcdt_op_pack(l, a);
            counted_libcdt_op_unpack(l, a);
            counted_manual_pack(l, a);
            counted_manual_unpack(l, a);
        } else if (first) {
            first_calls(l, a, "pack", pack_methods, NMETHODS);
            first_calls(l, a, "unpack", unpack_methods, NMETHODS);
        } else {
            bench_rows(l->name, "pack_gbs", l, a, l->bytes, pack_methods, NMETHODS);
            bench_rows(l->name, "unpack_gbs", l, a, l->bytes, unpack_methods, NMETHODS);
        }
        free(a);
        free(b);
        free(memcpy_other);
    }
    if (commit_times) {
        /* commit cost against the description size: hindexed_block of n blocks */
        for (int64_t k = 1000; k <= 1000000; k *= 10) {
            int64_t *d = malloc(sizeof(int64_t) * (size_t)k);
            for (int64_t j = 0; j < k; j++)
                d[j] = j * 24 + (j % 7) * 8;
            double t0 = now_s();
            cdt_type t = b_hidx_block(k, 1, d, CDT_DOUBLE);
            cdt_type_commit(&t);
            double dt = now_s() - t0;
            fprintf(stderr, "commit hindexed_block(%lld): %.3f ms (%.1f ns/block)\n", (long long)k,
                    dt * 1e3, dt * 1e9 / (double)k);
            cdt_type_free(&t);
            free(d);
        }
    }
    layouts_free(ls, n);
    return 0;
}
