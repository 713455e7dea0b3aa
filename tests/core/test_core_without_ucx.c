/* A program linked to libcdt's core only (libcdtypes) uses every part of it - a derived type,
 * a frame encoded and decoded, the serialized-object adapter - and then no UCX library may be
 * mapped into the process: the core must neither link nor load UCX, so that an MPI program
 * whose MPI library uses its own UCX never gets a second copy (issue 28). The mapped files are
 * read from /proc/self/maps. */
#include <cdt.h>
#include <cdt_sobj.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* The number of mapped files whose name starts with libucp, libuct, libucs or libucm, each
 * printed; -1 when /proc/self/maps cannot be read. */
static int ucx_mappings(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL)
        return -1;
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, maps) != NULL) {
        const char *path = strchr(line, '/');
        if (path == NULL)
            continue;
        const char *base = strrchr(path, '/') + 1;
        static const char *const names[] = {"libucp", "libuct", "libucs", "libucm"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (strncmp(base, names[i], strlen(names[i])) == 0) {
                fprintf(stderr, "UCX mapped into a core-only program: %s", path);
                found++;
            }
        }
    }
    fclose(maps);
    return found;
}

int main(void)
{
    /* every column of a 4x4 int32 matrix: a committed vector type */
    int32_t matrix[16], column[4] = {0};
    for (int i = 0; i < 16; i++)
        matrix[i] = i;
    cdt_type vec;
    CHECK_OK(cdt_type_vector(4, 1, 4, CDT_INT32, &vec));
    CHECK_OK(cdt_type_commit(&vec));
    cdt_frame frame;
    cdt_count size = 0;
    unsigned char wire[256];
    CHECK_OK(cdt_frame_encode(matrix, 1, vec, NULL, &frame));
    CHECK_OK(cdt_frame_size(frame, &size));
    CHECK(size <= (cdt_count)sizeof wire);
    CHECK_OK(cdt_frame_gather(frame, 0, wire, size));
    CHECK_OK(cdt_frame_free(frame));
    CHECK_OK(cdt_frame_decode(wire, size, column, 4, CDT_INT32));
    CHECK(column[0] == 0 && column[3] == 12);
    CHECK_OK(cdt_type_free(&vec));
    CHECK(cdt_sobj_type() != NULL);

    int mapped = ucx_mappings();
    CHECK(mapped == 0);
    return check_report("core_without_ucx");
}
