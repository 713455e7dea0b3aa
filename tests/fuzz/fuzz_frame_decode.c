/*
 * fuzz_frame_decode.c - libFuzzer target: arbitrary bytes as a frame, decoded into every kind
 * of receiver (a byte layout, a fixed custom type with regions at two counts, a dynamic custom
 * type, the serialized-object adapter with a capped allocator, and the streaming decoder in
 * two pieces).
 * Any crash, over-read, leak or undefined behaviour is a bug; error codes are the expected
 * outcome for almost all inputs.
 */
#include "cdt_sobj.h"
#include "seed_types.h"

#include <stdlib.h>
#include <string.h>

/* never let a hostile header make us allocate more than this */
#define ALLOC_CAP (64 << 20)

static int capped_alloc(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    cdt_count *total = user;
    (void)index;
    (void)kind;
    if (len > ALLOC_CAP || *total + len > ALLOC_CAP)
        return CDT_ERR_NO_MEMORY;
    *total += len;
    *base = malloc(len ? (size_t)len : 1);
    return *base ? CDT_SUCCESS : CDT_ERR_NO_MEMORY;
}

static void free_sobj(cdt_sobj *obj)
{
    free(obj->inband);
    for (cdt_count i = 0; i < obj->nbuffers; i++)
        free(obj->buffers[i].base);
    cdt_sobj_release(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cdt_count len = (cdt_count)size;
    /* a fixed-size byte layout */
    unsigned char bytes[4096];
    (void)cdt_frame_decode(data, len, bytes, sizeof(bytes), CDT_BYTE);

    /* a custom type with regions of fixed length, with the count of the seed frame and with
     * one object fewer than the header's object_count (refused before anything is written) */
    struct_vec *sv = malloc(2 * sizeof(*sv));
    if (sv != NULL) {
        (void)cdt_frame_decode(data, len, sv, 2, struct_vec_type());
        (void)cdt_frame_decode(data, len, sv, 1, struct_vec_type());
        free(sv);
    }

    /* a dynamic custom type that allocates from what it reads */
    double_vec dv = {0};
    (void)cdt_frame_decode(data, len, &dv, 1, double_vec_type());
    double_vec_clear(&dv);

    /* the adapter, with the streaming decoder: head first, then the rest */
    cdt_decoder d;
    if (cdt_decoder_create(data, len, &d) == CDT_SUCCESS) {
        cdt_count total = 0;
        cdt_sobj obj = {
            .field_mask = CDT_SOBJ_FIELD_ALLOC, .alloc = capped_alloc, .alloc_user = &total};
        cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
        cdt_decoder_info(d, &info);
        if (info.frame_size == len && cdt_sobj_recv_prepare(&obj, d) == CDT_SUCCESS) {
            if (cdt_decoder_bind(d, &obj, 1, cdt_sobj_type()) == CDT_SUCCESS) {
                cdt_count head = info.header_size + info.packed_size;
                if (cdt_decoder_write(d, head, data + head, len - head) != CDT_SUCCESS ||
                    cdt_decoder_write(d, 0, data, head) == CDT_SUCCESS)
                    (void)cdt_decoder_finish(d);
            }
        }
        cdt_decoder_free(d);
        free_sobj(&obj);
    }
    return 0;
}
