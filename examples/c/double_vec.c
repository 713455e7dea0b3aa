/*
 * double_vec.c - send a list of int arrays (like std::vector<std::vector<int>> or
 * Vec<Vec<i32>>) as one frame. The lengths are packed; each array is a region. The receiver
 * starts from an empty list: the type reads the lengths, allocates, and the arrays land there.
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
    double_vec out, in = {0};
    CHECK(double_vec_init(&out, 16, 256, 7)); /* 16 arrays of 1 KiB */

    cdt_frame frame;
    CHECK(cdt_frame_encode(&out, 1, double_vec_type(), NULL, &frame));
    cdt_count size;
    CHECK(cdt_frame_size(frame, &size));
    void *wire = malloc((size_t)size);
    if (wire == NULL)
        return 1;
    CHECK(cdt_frame_gather(frame, 0, wire, size));
    CHECK(cdt_frame_free(frame));

    /* a receiver can look at the header first: every length is there before any data */
    cdt_decoder dec;
    CHECK(cdt_decoder_create(wire, size, &dec));
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    CHECK(cdt_decoder_info(dec, &info));
    CHECK(cdt_decoder_bind(dec, &in, 1, double_vec_type()));
    CHECK(cdt_decoder_write(dec, 0, wire, size));
    CHECK(cdt_decoder_finish(dec));
    CHECK(cdt_decoder_free(dec));

    int ok = double_vec_equal(&out, &in);
    printf("double_vec 16 x 1 KiB: frame %lld bytes (header %lld, packed %lld, regions %lld), "
           "round trip %s\n",
           (long long)size, (long long)info.header_size, (long long)info.packed_size,
           (long long)info.region_bytes, ok ? "ok" : "MISMATCH");
    double_vec_clear(&out);
    double_vec_clear(&in);
    free(wire);
    return ok ? 0 : 1;
}
