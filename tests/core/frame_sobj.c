/*
 * frame_sobj.c - the serialized-object adapter in frames: its allocator hook, and
 * region bytes received before the packed stream.
 */
#include "test_frame.h"

/* allocator hook for the serialized-object adapter: counts calls, can fail */
typedef struct alloc_log {
    int calls, fail_at;
    void *ptrs[16];
} alloc_log;

static int log_alloc(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    alloc_log *l = user;
    (void)index;
    (void)kind;
    if (l->calls == l->fail_at)
        return CDT_ERR_USER_BASE - 1;
    *base = l->ptrs[l->calls++] = malloc(len ? (size_t)len : 1);
    return CDT_SUCCESS;
}

void test_sobj(void)
{
    char inband[] = "pickle-stream-bytes";
    double arr1[300];
    int32_t arr2[77];
    for (int i = 0; i < 300; i++)
        arr1[i] = i;
    for (int i = 0; i < 77; i++)
        arr2[i] = -i;
    cdt_sobj_buffer bufs[2] = {{arr1, sizeof(arr1), CDT_KIND_DOUBLE},
                               {arr2, sizeof(arr2), CDT_KIND_INT32}};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);

    for (int hook = 0; hook <= 1; hook++) {
        alloc_log log = {.fail_at = -1};
        cdt_sobj in = {0};
        if (hook) {
            in.field_mask = CDT_SOBJ_FIELD_ALLOC;
            in.alloc = log_alloc;
            in.alloc_user = &log;
        }
        cdt_decoder d;
        CHECK_OK(cdt_decoder_create(wire, size, &d));
        CHECK_OK(cdt_sobj_recv_prepare(&in, d));
        CHECK(in.nbuffers == 2 && in.buffers[0].kind == CDT_KIND_DOUBLE &&
              in.buffers[1].len == sizeof(arr2));
        CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
        CHECK_OK(cdt_decoder_write(d, 0, wire, size));
        CHECK_OK(cdt_decoder_finish(d));
        CHECK_OK(cdt_decoder_free(d));
        CHECK(memcmp(in.inband, inband, sizeof(inband)) == 0);
        CHECK(memcmp(in.buffers[0].base, arr1, sizeof(arr1)) == 0);
        CHECK(memcmp(in.buffers[1].base, arr2, sizeof(arr2)) == 0);
        CHECK(!hook || log.calls == 3);
        if (!hook) { /* one block: in-band bytes, then each buffer on a 64-byte boundary */
            uintptr_t block = (uintptr_t)in.inband;
            CHECK(block % 64 == 0);
            CHECK((uintptr_t)in.buffers[0].base == block + 64);
            CHECK((uintptr_t)in.buffers[1].base == block + 64 + 2432);
        }
        cdt_sobj_release(&in);
        for (int i = 0; i < log.calls; i++)
            free(log.ptrs[i]);
    }
    /* the allocator's error comes back unchanged */
    alloc_log log = {.fail_at = 2};
    cdt_sobj in = {.field_mask = CDT_SOBJ_FIELD_ALLOC, .alloc = log_alloc, .alloc_user = &log};
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_RC(cdt_sobj_recv_prepare(&in, d), CDT_ERR_USER_BASE - 1);
    CHECK(in.buffers == NULL);
    CHECK_OK(cdt_decoder_free(d));
    for (int i = 0; i < log.calls; i++)
        free(log.ptrs[i]);
    free(wire);
}

/* The in-band bytes in pieces (CDT_SOBJ_FIELD_INBAND_PARTS): the frame is the same bytes as the
 * joined stream's, packed at any offset; pieces that do not add up are refused; a receive
 * writes only the fields of the struct's first version (a program built against it has no
 * room for the later ones). */
void test_sobj_parts(void)
{
    unsigned char joined[70000];
    for (size_t i = 0; i < sizeof(joined); i++)
        joined[i] = (unsigned char)(i * 31 + 7);
    double arr[100];
    for (int i = 0; i < 100; i++)
        arr[i] = i * 0.5;
    cdt_sobj_buffer buf = {arr, sizeof(arr), CDT_KIND_DOUBLE};
    cdt_sobj whole = {
        .inband = joined, .inband_len = sizeof(joined), .buffers = &buf, .nbuffers = 1};
    /* a frame's bytes before the payload, the payload, an empty piece, the bytes after */
    const cdt_iov parts[4] = {{joined, 37},
                              {joined + 37, 65536},
                              {joined + 65573, 0},
                              {joined + 65573, sizeof(joined) - 65573}};
    cdt_sobj pieces = {.field_mask = CDT_SOBJ_FIELD_INBAND_PARTS,
                       .inband = NULL,
                       .inband_len = sizeof(joined),
                       .buffers = &buf,
                       .nbuffers = 1,
                       .inband_parts = parts,
                       .inband_nparts = 4};
    cdt_count n1, n2;
    unsigned char *w1 = encode(&whole, 1, cdt_sobj_type(), &n1);
    unsigned char *w2 = encode(&pieces, 1, cdt_sobj_type(), &n2);
    CHECK(n1 == n2 && memcmp(w1, w2, (size_t)n1) == 0);
    /* fragment by fragment, from offsets inside and across the pieces */
    cdt_op op;
    CHECK_OK(cdt_op_pack_begin(&pieces, 1, cdt_sobj_type(), &op));
    unsigned char *out = calloc(1, sizeof(joined));
    CHECK(out != NULL);
    for (cdt_count off = 0, step = 1; off < (cdt_count)sizeof(joined); step = step * 3 + 5) {
        cdt_count used = 0;
        cdt_count len =
            step < (cdt_count)sizeof(joined) - off ? step : (cdt_count)sizeof(joined) - off;
        CHECK_OK(cdt_op_pack(op, off, out + off, len, &used));
        CHECK(used == len);
        off += used;
    }
    CHECK_OK(cdt_op_end(op));
    CHECK(memcmp(out, joined, sizeof(joined)) == 0);
    free(out);
    free(w1);
    free(w2);

    /* pieces that are not the in-band length, a NULL list, a negative piece: refused */
    cdt_frame f = NULL;
    pieces.inband_len = sizeof(joined) - 1;
    CHECK_RC(cdt_frame_encode(&pieces, 1, cdt_sobj_type(), NULL, &f), CDT_ERR_INVALID_ARG);
    pieces.inband_len = sizeof(joined);
    pieces.inband_parts = NULL;
    CHECK_RC(cdt_frame_encode(&pieces, 1, cdt_sobj_type(), NULL, &f), CDT_ERR_INVALID_ARG);
    cdt_iov bad[2] = {{joined, -1}, {joined, (cdt_count)sizeof(joined) + 1}};
    pieces.inband_parts = bad;
    pieces.inband_nparts = 2;
    CHECK_RC(cdt_frame_encode(&pieces, 1, cdt_sobj_type(), NULL, &f), CDT_ERR_INVALID_ARG);
    CHECK(f == NULL);

    /* a receive into the first version's struct: nothing past its alloc_user is written */
    struct {
        cdt_sobj first; /* only its first fields belong to the program */
        unsigned char after[sizeof(cdt_sobj)];
    } old;
    memset(&old, 0xa5, sizeof(old));
    const size_t first_len = offsetof(cdt_sobj, inband_parts);
    memset(&old.first, 0, first_len);
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(w1 = encode(&whole, 1, cdt_sobj_type(), &n1), n1, &d));
    CHECK_OK(cdt_sobj_recv_prepare(&old.first, d));
    CHECK_OK(cdt_decoder_bind(d, &old.first, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, 0, w1, n1));
    CHECK_OK(cdt_decoder_finish(d));
    CHECK_OK(cdt_decoder_free(d));
    CHECK(memcmp(old.first.inband, joined, sizeof(joined)) == 0);
    const unsigned char *tail = (const unsigned char *)&old.first + first_len;
    size_t untouched = 0;
    while (untouched < sizeof(old) - first_len && tail[untouched] == 0xa5)
        untouched++;
    CHECK(untouched == sizeof(old) - first_len);
    cdt_sobj_release(&old.first);
    free(w1);
}

/* Region bytes before the packed stream, for a custom receiver (regression: they were
 * refused with CDT_ERR_ORDER but recorded as arrived, a second try was an overlap, and finish
 * reported success although the buffer never received them). */
void test_region_before_head(void)
{
    char inband[] = "stream";
    unsigned char arr[4096];
    for (int i = 0; i < 4096; i++)
        arr[i] = (unsigned char)(i * 7 + 1);
    cdt_sobj_buffer bufs[1] = {{arr, sizeof(arr), CDT_KIND_BYTE}};
    cdt_sobj out = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 1};
    cdt_count size;
    unsigned char *wire = encode(&out, 1, cdt_sobj_type(), &size);
    cdt_sobj in = {0};
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    CHECK_OK(cdt_decoder_info(d, &info));
    cdt_count head = info.header_size + info.packed_size;
    CHECK_OK(cdt_sobj_recv_prepare(&in, d));
    CHECK_OK(cdt_decoder_bind(d, &in, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, head, wire + head, size - head)); /* padding + region first */
    CHECK_RC(cdt_decoder_finish(d), CDT_ERR_INCOMPLETE);
    CHECK_OK(cdt_decoder_write(d, 0, wire, head));
    CHECK_RC(cdt_decoder_write(d, head, wire + head, size - head), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in.buffers[0].base, arr, sizeof(arr)) == 0);
    CHECK(memcmp(in.inband, inband, sizeof(inband)) == 0);
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in);

    /* a write that fails is not recorded: finish does not report it as arrived */
    cdt_sobj in2 = {0};
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_OK(cdt_sobj_recv_prepare(&in2, d));
    CHECK_OK(cdt_decoder_bind(d, &in2, 1, cdt_sobj_type()));
    unsigned char bad[70]; /* the header and the first stream bytes */
    memcpy(bad, wire, sizeof(bad));
    bad[0] ^= 1; /* header bytes must equal the header given at create */
    CHECK_RC(cdt_decoder_write(d, 0, bad, sizeof(bad)), CDT_ERR_FRAME_MALFORMED);
    CHECK_OK(cdt_decoder_write(d, sizeof(bad), wire + sizeof(bad), size - sizeof(bad)));
    CHECK_RC(cdt_decoder_finish(d), CDT_ERR_INCOMPLETE);
    CHECK_OK(cdt_decoder_write(d, 0, wire, sizeof(bad))); /* the right bytes, again */
    CHECK_OK(cdt_decoder_finish(d));
    CHECK(memcmp(in2.buffers[0].base, arr, sizeof(arr)) == 0);
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in2);

    /* region bytes held, then the decoder freed before the stream came: nothing leaks */
    cdt_sobj in3 = {0};
    CHECK_OK(cdt_decoder_create(wire, size, &d));
    CHECK_OK(cdt_sobj_recv_prepare(&in3, d));
    CHECK_OK(cdt_decoder_bind(d, &in3, 1, cdt_sobj_type()));
    CHECK_OK(cdt_decoder_write(d, size - 100, wire + size - 100, 100));
    CHECK_OK(cdt_decoder_free(d));
    cdt_sobj_release(&in3);
    free(wire);
}
