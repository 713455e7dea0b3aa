/* make_seeds.c - write valid frames of every receiver kind as starting points for the corpus. */
#include "cdt_sobj.h"
#include "seed_types.h"

#include <stdio.h>
#include <stdlib.h>

static void save(const char *dir, const char *name, const void *obj, cdt_count count, cdt_type t)
{
    cdt_frame f;
    cdt_count size;
    if (cdt_frame_encode(obj, count, t, NULL, &f) != CDT_SUCCESS)
        exit(1);
    cdt_frame_size(f, &size);
    unsigned char *w = malloc((size_t)size);
    cdt_frame_gather(f, 0, w, size);
    cdt_frame_free(f);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *out = fopen(path, "wb");
    if (out == NULL || fwrite(w, 1, (size_t)size, out) != (size_t)size)
        exit(1);
    fclose(out);
    free(w);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 1;
    static struct_vec sv[2];
    struct_vec_fill(sv, 2, 1);
    save(argv[1], "seed_struct_vec", sv, 2, struct_vec_type());
    double_vec dv;
    double_vec_init(&dv, 3, 5, 2);
    save(argv[1], "seed_double_vec", &dv, 1, double_vec_type());
    double_vec_clear(&dv);
    unsigned char bytes[100] = {1, 2, 3};
    save(argv[1], "seed_bytes", bytes, sizeof(bytes), CDT_BYTE);
    double arr[3] = {1, 2, 3};
    int32_t arr2[5] = {5};
    cdt_sobj_buffer b[2] = {{arr, sizeof(arr), CDT_KIND_DOUBLE},
                            {arr2, sizeof(arr2), CDT_KIND_INT32}};
    cdt_sobj so = {.inband = "abc", .inband_len = 3, .buffers = b, .nbuffers = 2};
    save(argv[1], "seed_sobj", &so, 1, cdt_sobj_type());
    return 0;
}
