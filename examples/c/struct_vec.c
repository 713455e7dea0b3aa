/*
 * struct_vec.c - send an array of {int a, b, c; double d; int data[2048]} as one frame: the
 * scalar fields are packed (skipping the padding after c), each data array travels as a
 * zero-copy region.
 */
#include "seed_types.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %s\n", #call, cdt_strerror(rc_));                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    enum { COUNT = 4 };
    struct_vec *out = calloc(COUNT, sizeof(*out)), *in = calloc(COUNT, sizeof(*in));
    if (out == NULL || in == NULL)
        return 1;
    struct_vec_fill(out, COUNT, 42);

    /* sender: one frame = header + 4 x 20 packed bytes + 4 regions of 8 KiB, no copy of data */
    cdt_frame frame;
    CHECK(cdt_frame_encode(out, COUNT, struct_vec_type(), NULL, &frame));
    cdt_count size, regions, pieces;
    CHECK(cdt_frame_size(frame, &size));
    CHECK(cdt_frame_region_count(frame, &regions));
    CHECK(cdt_frame_iov_count(frame, &pieces));

    /* any transport moves the bytes; here we gather them into one buffer */
    void *wire = malloc((size_t)size);
    if (wire == NULL)
        return 1;
    CHECK(cdt_frame_gather(frame, 0, wire, size));
    CHECK(cdt_frame_free(frame));

    /* receiver: validate and unpack in one call */
    CHECK(cdt_frame_decode(wire, size, in, COUNT, struct_vec_type()));
    int ok = struct_vec_equal(out, in, COUNT);
    printf("struct_vec x%d: frame %lld bytes, %lld regions, %lld pieces, round trip %s\n", COUNT,
           (long long)size, (long long)regions, (long long)pieces, ok ? "ok" : "MISMATCH");
    free(wire);
    free(out);
    free(in);
    return ok ? 0 : 1;
}
