/*
 * frame_params.c - frame parameters and structs that can grow: the caller's head
 * allocator, field masks of cdt_frame_info, the params and cdt_sobj.
 */
#include "test_frame.h"

/* frame heads from the caller's allocator: used for heads past the inline storage, given
 * back at free with the same size; a half-set allocator is an argument error */
static int head_allocs, head_releases;
static void *head_alloc(void *arg, size_t bytes)
{
    (void)arg;
    head_allocs++;
    return malloc(bytes);
}
static void head_release(void *arg, void *p, size_t bytes)
{
    (void)arg;
    (void)bytes;
    head_releases++;
    free(p);
}

void test_head_allocator(void)
{
    static struct_simple objs[100];
    struct_simple_fill(objs, 100, 3);
    cdt_frame f = NULL;
    cdt_frame_params bad = {.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR, .head_alloc = head_alloc};
    CHECK_RC(cdt_frame_encode(objs, 100, struct_simple_type(), &bad, &f), CDT_ERR_INVALID_ARG);
    CHECK(f == NULL && head_allocs == 0);
    cdt_frame_params good = {.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR,
                             .head_alloc = head_alloc,
                             .head_release = head_release};
    CHECK_OK(cdt_frame_encode(objs, 100, struct_simple_type(), &good, &f));
    CHECK(head_allocs == 1 && head_releases == 0);
    cdt_count size;
    CHECK_OK(cdt_frame_size(f, &size));
    unsigned char *wire = malloc((size_t)size);
    CHECK_OK(cdt_frame_gather(f, 0, wire, size));
    CHECK_OK(cdt_frame_free(f));
    CHECK(head_releases == 1);
    static struct_simple back[100];
    CHECK_OK(cdt_frame_decode(wire, size, back, 100, struct_simple_type()));
    CHECK(struct_simple_equal(objs, back, 100));
    free(wire);
}

/* The output and adapter structs that can grow: cdt_frame_info fills only the fields its
 * field_mask asks for and refuses a mask of 0 or with unknown bits; cdt_sobj refuses caller
 * bits it does not know, keeps the caller's bits across prepare and release, and reads the
 * allocator hook only when its bit is set. */
void test_growable_structs(void)
{
    char inband[] = "stream";
    int32_t arr[64] = {1, 2, 3};
    cdt_sobj_buffer buf = {arr, sizeof(arr), CDT_KIND_INT32};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = &buf, .nbuffers = 1};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));

    cdt_frame_info info;
    memset(&info, 0x5a, sizeof info);
    info.field_mask = CDT_FRAME_INFO_PACKED_SIZE | CDT_FRAME_INFO_REGION_COUNT;
    CHECK_OK(cdt_decoder_info(d, &info));
    CHECK(info.packed_size == (cdt_count)sizeof(inband) && info.region_count == 1);
    cdt_frame_info untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    CHECK(info.version == untouched.version && info.flags == untouched.flags &&
          info.header_size == untouched.header_size && info.frame_size == untouched.frame_size &&
          info.region_bytes == untouched.region_bytes);
    info.field_mask = 0;
    CHECK_RC(cdt_decoder_info(d, &info), CDT_ERR_INVALID_ARG);
    info.field_mask = CDT_FRAME_INFO_ALL | (CDT_FRAME_INFO_ALL + 1);
    CHECK_RC(cdt_decoder_info(d, &info), CDT_ERR_INVALID_ARG);
    info.field_mask = CDT_FRAME_INFO_ALL;
    CHECK_OK(cdt_decoder_info(d, &info));
    CHECK(info.frame_size == size && info.region_bytes == (cdt_count)sizeof(arr));

    /* params with a field of a later library are refused */
    cdt_decoder d2 = NULL;
    cdt_decoder_params dp = {.field_mask = UINT64_C(1) << 40};
    CHECK_RC(cdt_decoder_create_advanced(wire, size, &dp, &d2), CDT_ERR_INVALID_ARG);
    CHECK(d2 == NULL);
    cdt_frame_params fp = {.field_mask = UINT64_C(1) << 40};
    cdt_frame f2 = NULL;
    CHECK_RC(cdt_frame_encode(&out, 1, cdt_sobj_type(), &fp, &f2), CDT_ERR_INVALID_ARG);
    CHECK(f2 == NULL);

    /* an unknown caller bit: refused on receive and on send */
    cdt_sobj in = {.field_mask = CDT_SOBJ_FIELD_INBAND_PARTS << 1};
    CHECK_RC(cdt_sobj_recv_prepare(&in, d), CDT_ERR_INVALID_ARG);
    CHECK(in.buffers == NULL && in.inband == NULL);
    cdt_sobj bad = out;
    bad.field_mask = CDT_SOBJ_FIELD_ALLOC << 5;
    cdt_frame frame = NULL;
    CHECK_RC(cdt_frame_encode(&bad, 1, cdt_sobj_type(), NULL, &frame), CDT_ERR_INVALID_ARG);
    CHECK(frame == NULL);
    /* a hook that is set but whose bit is not: the library's own block (the hook is never
     * called: it would crash) */
    in = (cdt_sobj){.alloc = (cdt_sobj_alloc_func_t *)(uintptr_t)1};
    CHECK_OK(cdt_sobj_recv_prepare(&in, d));
    CHECK(in.field_mask >= CDT_SOBJ_FIELD_LIBRARY_ && in.nbuffers == 1);
    CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, 0, wire, size));
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in.buffers[0].base, arr, sizeof(arr)) == 0);
    cdt_sobj_release(&in);
    CHECK(in.field_mask == 0 && in.buffers == NULL && in.inband == NULL);
    cdt_sobj_release(&in); /* twice: nothing left to free */
    CHECK_OK(cdt_decoder_free(d));
    free(wire);
}
