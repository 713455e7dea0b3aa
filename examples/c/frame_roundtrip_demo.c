/*
 * frame_roundtrip_demo.c - every seed-paper object through a frame and back, with what moved:
 * packed bytes, zero-copy regions, and the time per round trip.
 */
#include "seed_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* encode, gather, decode `iters` times; returns 0 and fills the facts on success */
static int roundtrip(const char *name, const void *obj, void *dst, cdt_count count, cdt_type type,
                     int iters)
{
    cdt_count size = 0, packed = 0, regions = 0;
    double t0 = now();
    for (int i = 0; i < iters; i++) {
        cdt_frame frame;
        int rc = cdt_frame_encode(obj, count, type, NULL, &frame);
        if (rc != CDT_SUCCESS) {
            fprintf(stderr, "%s: encode: %s\n", name, cdt_strerror(rc));
            return 1;
        }
        cdt_frame_size(frame, &size);
        cdt_frame_region_count(frame, &regions);
        const void *head;
        cdt_frame_head(frame, &head, &packed);
        void *wire = malloc((size_t)size);
        if (wire == NULL)
            return 1;
        cdt_frame_gather(frame, 0, wire, size);
        cdt_frame_free(frame);
        rc = cdt_frame_decode(wire, size, dst, count, type);
        free(wire);
        if (rc != CDT_SUCCESS) {
            fprintf(stderr, "%s: decode: %s\n", name, cdt_strerror(rc));
            return 1;
        }
    }
    double us = (now() - t0) / iters * 1e6;
    printf("%-22s %10lld %10lld %8lld %12.2f\n", name, (long long)size, (long long)packed,
           (long long)regions, us);
    return 0;
}

int main(void)
{
    enum { N = 64 };
    int fail = 0;
    printf("%-22s %10s %10s %8s %12s\n", "object", "frame B", "head B", "regions", "us/roundtrip");

    struct_vec *sv = calloc(N, sizeof(*sv)), *sv2 = calloc(N, sizeof(*sv2));
    struct_simple ss[N], ss2[N];
    struct_simple_no_gap sn[N], sn2[N];
    if (sv == NULL || sv2 == NULL)
        return 1;
    struct_vec_fill(sv, N, 1);
    struct_simple_fill(ss, N, 2);
    struct_simple_no_gap_fill(sn, N, 3);

    fail |= roundtrip("struct_vec x64", sv, sv2, N, struct_vec_type(), 100);
    fail |= !struct_vec_equal(sv, sv2, N);
    fail |= roundtrip("struct_simple x64", ss, ss2, N, struct_simple_type(), 1000);
    fail |= !struct_simple_equal(ss, ss2, N);
    fail |= roundtrip("struct_simple_no_gap x64", sn, sn2, N, struct_simple_no_gap_type(), 1000);
    fail |= !struct_simple_no_gap_equal(sn, sn2, N);

    double_vec dv, dv2 = {0};
    if (double_vec_init(&dv, 64, 256, 9) != CDT_SUCCESS)
        return 1;
    /* the receiver allocates on every decode, so round trip once */
    fail |= roundtrip("double_vec 64x1KiB", &dv, &dv2, 1, double_vec_type(), 1);
    fail |= !double_vec_equal(&dv, &dv2);
    double_vec_clear(&dv2);
    double_vec_clear(&dv);
    free(sv);
    free(sv2);
    printf("%s\n", fail ? "FAILED" : "all objects verified");
    return fail;
}
