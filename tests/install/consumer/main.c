/* A program outside the tree: packs a strided int32 view and round-trips it through a frame. */
#include <cdt.h>
#include <stdio.h>

int main(void)
{
    int32_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8] = {0};
    cdt_frame f;
    cdt_count size;
    unsigned char wire[256];
    if (cdt_frame_encode(src, 8, CDT_INT32, NULL, &f) != CDT_SUCCESS ||
        cdt_frame_size(f, &size) != CDT_SUCCESS || size > (cdt_count)sizeof(wire) ||
        cdt_frame_gather(f, 0, wire, size) != CDT_SUCCESS || cdt_frame_free(f) != CDT_SUCCESS)
        return 1;
    int rc = cdt_frame_decode(wire, size, dst, 8, CDT_INT32);
    printf("consumer: libcdt %u, frame %lld bytes, %s\n", cdt_version_number(), (long long)size,
           rc == CDT_SUCCESS && dst[7] == 8 ? "ok" : cdt_strerror(rc));
    return rc == CDT_SUCCESS && dst[7] == 8 ? 0 : 1;
}
