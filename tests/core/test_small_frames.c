/*
 * test_small_frames.c - the frame encoder's small-object path (cdt__frame_encode_small, which the
 * UCX transport uses for single-mode messages that fit its head buffer) writes exactly the
 * bytes that cdt_frame_encode + cdt_frame_gather give for the same object, with no frame
 * object; objects that do not qualify (more regions than fit inline, too large) get a frame
 * object instead. And its split-mode sibling (cdt__frame_encode_plain) writes a frame whole only
 * where cdt_frame_encode would make one without regions, the same bytes, and otherwise gives
 * the same frame object. Linked with the static library: the functions are internal.
 */
#include "check.h"
#include "frame/frame_format.h"
#include "seed_types.h"

#include <string.h>

enum { CAP = 32768 };

/* the reference: a frame object gathered whole; layouts with the region threshold off, as the
 * small path never makes a large contiguous block a region (the message is copied whole) */
static unsigned char *reference(const void *obj, cdt_count count, cdt_type type, cdt_count *size)
{
    cdt_frame_params p = {.field_mask = CDT_FRAME_PARAM_REGION_THRESHOLD, .region_threshold = -1};
    cdt_frame f;
    CHECK_OK(cdt_frame_encode(obj, count, type, cdt_type_is_custom(type) ? NULL : &p, &f));
    CHECK_OK(cdt_frame_size(f, size));
    unsigned char *wire = malloc((size_t)*size + 1);
    CHECK_OK(cdt_frame_gather(f, 0, wire, *size));
    CHECK_OK(cdt_frame_free(f));
    return wire;
}

/* 1: written by the small path (and compared), 0: a frame object came back */
static int check_small(const void *obj, cdt_count count, cdt_type type)
{
    static unsigned char small[CAP];
    memset(small, 0xa5, sizeof(small)); /* padding the path forgot to write would show */
    cdt_count len = -1;
    cdt_frame f = NULL;
    CHECK_OK(cdt__frame_encode_small(obj, count, type, NULL, small, CAP, &len, &f));
    if (f != NULL) {
        CHECK(len == -1);
        CHECK_OK(cdt_frame_free(f));
        return 0;
    }
    cdt_count size;
    unsigned char *wire = reference(obj, count, type, &size);
    CHECK(len == size && memcmp(small, wire, (size_t)size) == 0);
    free(wire);
    return 1;
}

static void test_custom(void)
{
    /* double_vec: a region per array, empty arrays included; up to 4 regions inline */
    for (cdt_count n = 0; n <= 6; n++)
        for (cdt_count len = 0; len <= 33; len += 11) {
            double_vec dv = {0};
            CHECK_OK(double_vec_init(&dv, n, len, (int)(n * 7 + len)));
            CHECK(check_small(&dv, 1, double_vec_type()) == (n <= 4));
            double_vec_clear(&dv);
        }
    double_vec big = {0}; /* 64 KiB of arrays: no room in the head buffer */
    CHECK_OK(double_vec_init(&big, 2, 8192, 3));
    CHECK(check_small(&big, 1, double_vec_type()) == 0);
    double_vec_clear(&big);
    /* struct_vec: fields packed, its 8 KiB array a region */
    struct_vec *sv = calloc(3, sizeof(struct_vec));
    struct_vec_fill(sv, 3, 4);
    CHECK(check_small(sv, 1, struct_vec_type()) == 1);
    CHECK(check_small(sv, 3, struct_vec_type()) == 1);
    free(sv);
    /* struct_simple: no regions */
    struct_simple ss[200];
    struct_simple_fill(ss, 200, 5);
    for (cdt_count n = 0; n <= 200; n += 40)
        CHECK(check_small(ss, n, struct_simple_type()) == 1);
}

static void test_layouts(void)
{
    static double d[6000];
    for (int i = 0; i < 6000; i++)
        d[i] = i * 0.25;
    CHECK(check_small(d, 0, CDT_DOUBLE) == 1);
    CHECK(check_small(d, 7, CDT_DOUBLE) == 1);
    CHECK(check_small(d, 3000, CDT_DOUBLE) == 1); /* 24 KB: a region in a frame object */
    CHECK(check_small(d, 5000, CDT_DOUBLE) == 0); /* 40 KB: does not fit */
    cdt_type v;
    CHECK_OK(cdt_type_vector(50, 3, -7, CDT_DOUBLE, &v));
    CHECK_OK(cdt_type_commit(&v));
    CHECK(check_small(d + 5000, 2, v) == 1);
    CHECK_OK(cdt_type_free(&v));
}

/* 1: written whole by the plain path, 0: a frame object came back; either way the bytes are
 * cdt_frame_encode's (default parameters), and only a frame without regions is written whole */
static int check_plain(const void *obj, cdt_count count, cdt_type type)
{
    static unsigned char small[CAP];
    memset(small, 0xa5, sizeof(small));
    cdt_frame ref, f = NULL;
    cdt_count ref_size, ref_regions, size, len = -1;
    CHECK_OK(cdt_frame_encode(obj, count, type, NULL, &ref));
    CHECK_OK(cdt_frame_size(ref, &ref_size));
    CHECK_OK(cdt_frame_region_count(ref, &ref_regions));
    unsigned char *wire = malloc((size_t)ref_size + 1);
    CHECK_OK(cdt_frame_gather(ref, 0, wire, ref_size));
    CHECK_OK(cdt__frame_encode_plain(obj, count, type, NULL, small, CAP, &len, &f));
    int plain = f == NULL;
    if (plain) {
        CHECK(ref_regions == 0 && len == ref_size && memcmp(small, wire, (size_t)len) == 0);
    } else {
        cdt_count regions;
        CHECK(len == -1);
        CHECK_OK(cdt_frame_size(f, &size));
        CHECK_OK(cdt_frame_region_count(f, &regions));
        CHECK(size == ref_size && regions == ref_regions);
        unsigned char *got = malloc((size_t)size + 1);
        CHECK_OK(cdt_frame_gather(f, 0, got, size));
        CHECK(memcmp(got, wire, (size_t)size) == 0);
        free(got);
        CHECK_OK(cdt_frame_free(f));
    }
    free(wire);
    CHECK_OK(cdt_frame_free(ref));
    return plain;
}

static void test_plain(void)
{
    for (cdt_count n = 0; n <= 3; n++) { /* double_vec: plain only without arrays */
        double_vec dv = {0};
        CHECK_OK(double_vec_init(&dv, n, 5, (int)n));
        CHECK(check_plain(&dv, 1, double_vec_type()) == (n == 0));
        double_vec_clear(&dv);
    }
    struct_simple ss[200];
    struct_simple_fill(ss, 200, 5);
    for (cdt_count n = 0; n <= 200; n += 40)
        CHECK(check_plain(ss, n, struct_simple_type()) == 1);
    struct_vec *sv = calloc(1, sizeof(struct_vec)); /* its array is a region */
    struct_vec_fill(sv, 1, 4);
    CHECK(check_plain(sv, 1, struct_vec_type()) == 0);
    free(sv);
    static double d[6000];
    for (int i = 0; i < 6000; i++)
        d[i] = i * 0.5;
    CHECK(check_plain(d, 0, CDT_DOUBLE) == 1);
    CHECK(check_plain(d, 1000, CDT_DOUBLE) == 1); /* 8000 bytes: below the region threshold */
    CHECK(check_plain(d, 1024, CDT_DOUBLE) == 0); /* 8 KiB contiguous: a region */
    CHECK(check_plain(d, 5000, CDT_DOUBLE) == 0); /* does not fit */
    cdt_type v;
    CHECK_OK(cdt_type_vector(50, 3, -7, CDT_DOUBLE, &v));
    CHECK_OK(cdt_type_commit(&v));
    CHECK(check_plain(d + 5000, 2, v) == 1);
    CHECK_OK(cdt_type_free(&v));
}

int main(void)
{
    test_custom();
    test_layouts();
    test_plain();
    return check_report("test_small_frames");
}
