/*
 * fuzz_ucx_single.c - libFuzzer target: the receive side of a single-mode UCX message
 * (libcdt/src/ucx/ucx_single.c), the code that turns the pieces UCX hands to the receive
 * datatype's unpack callback into a decoder. The message is the transport prefix and a VALID
 * frame of a serialized object (cdt_sobj: in-band bytes and up to thousands of regions, so
 * that the frame header may outgrow the head buffer), built from the input; the input may
 * then flip bytes of it, cut it short, and choose the sizes and order of the pieces
 * (out-of-order pieces exercise the stash). The receive uses cdt_sobj_recv_prepare, the path
 * of the Python binding, under receiver limits the input chooses.
 *
 * Oracle: no crash, leak or undefined behaviour; an untouched message delivered whole is
 * received with CDT_SUCCESS (unless over a limit: CDT_ERR_LIMIT) and equals the sent object
 * byte for byte; a message cut short never succeeds.
 *
 * The request and worker are plain zeroed structs: only the fields the receive datatype reads
 * are set, as cdt_ucx_irecv sets them; no UCX worker runs.
 */
#include "cdt_sobj.h"
#include "fuzz_input.h"
#include "ucx/ucx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the functions of ucx_recv.c and ucx_request.c that ucx_single.c calls */
void cdt__ucx_recv_matched(cdt_ucx_request r)
{
    r->matched = true;
}

void cdt__ucx_request_set_error(cdt_ucx_request r, int status)
{
    if (r->status == CDT_SUCCESS)
        r->status = status;
}

/* the receive fails: the rest of its message is dropped (the real one also completes the
 * request at once; here the decoder is freed at the end) */
void cdt__ucx_recv_fail(cdt_ucx_request r, int status)
{
    cdt__ucx_request_set_error(r, status);
    r->discard = true;
}

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_ucx_single: %s\n", what);
    abort();
}

static int prepare(void *arg, cdt_decoder d)
{
    cdt_sobj *o = arg;
    int rc = cdt_sobj_recv_prepare(o, d);
    return rc == CDT_SUCCESS ? cdt_decoder_bind(d, o, 1, cdt_sobj_type()) : rc;
}

typedef struct piece {
    size_t off, len;
} piece;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size, 0};
    /* flags: 1 many regions, 2 flip bytes, 4 cut short, 8 reorder pieces, 16 tight limits,
     * 32 the sender reports a failed pack */
    unsigned flags = next(&in);
    unsigned seed = next(&in);
    cdt_count inband_len = next16(&in) % 40000;
    cdt_count nb = (flags & 1) ? (cdt_count)(next16(&in) % 3000) : (cdt_count)(next(&in) % 6);
    unsigned char *inband = malloc((size_t)inband_len + 1);
    cdt_sobj_buffer *bufs = calloc((size_t)nb + 1, sizeof(*bufs));
    unsigned char *msg = NULL;
    piece *pieces = NULL;
    cdt_frame f = NULL;
    cdt_sobj got = {0};
    struct cdt_ucx_worker_s *w = calloc(1, sizeof(*w));
    cdt_ucx_request r = calloc(1, sizeof(*r));
    if (inband == NULL || bufs == NULL || w == NULL || r == NULL)
        goto out;
    fuzz_fill(inband, (size_t)inband_len, seed, 7);
    for (cdt_count b = 0; b < nb; b++) {
        cdt_count len = (flags & 1) ? (cdt_count)(next(&in) % 24) : (cdt_count)next16(&in);
        unsigned char *base = malloc((size_t)len + 1);
        if (base == NULL)
            goto out;
        fuzz_fill(base, (size_t)len, seed * 3 + (unsigned)b, 13);
        bufs[b] = (cdt_sobj_buffer){base, len, CDT_KIND_BYTE};
    }
    cdt_sobj sent = {.inband = inband, .inband_len = inband_len, .buffers = bufs, .nbuffers = nb};
    if (cdt_frame_encode(&sent, 1, cdt_sobj_type(), NULL, &f) != CDT_SUCCESS)
        fail("encode of a valid object");
    cdt_count frame_size;
    cdt_frame_size(f, &frame_size);
    size_t total = CDT__UCX_PREFIX_SIZE + (size_t)frame_size + CDT__UCX_TRAILER_SIZE;
    msg = malloc(total);
    if (msg == NULL)
        goto out;
    cdt__ucx_put_single_prefix(msg);
    if (cdt_frame_gather(f, 0, msg + CDT__UCX_PREFIX_SIZE, frame_size) != CDT_SUCCESS)
        fail("gather");
    /* flag 32: a sender whose pack failed part-way says so in the trailer */
    cdt__ucx_put_trailer(msg + total - CDT__UCX_TRAILER_SIZE,
                         (flags & 32) ? CDT_ERR_CALLBACK : CDT_SUCCESS);
    bool touched = (flags & 32) != 0;
    if (flags & 2) {
        for (unsigned k = next(&in) % 4 + 1; k > 0; k--) {
            size_t at = (next16(&in) | (size_t)next(&in) << 16) % total;
            msg[at] ^= (unsigned char)(next(&in) | 1);
        }
        touched = true;
    }
    size_t length = total; /* what UCX reports at completion */
    if (flags & 4) {
        length = (next16(&in) | (size_t)next(&in) << 16) % total;
        touched = true;
    }
    /* piece sizes from the input: UCX's fragments are 1 byte to tens of KiB */
    size_t npieces = 0, cap = 16;
    pieces = malloc(cap * sizeof(*pieces));
    for (size_t off = 0; pieces != NULL && off < length;) {
        /* when the input runs out, the rest is one piece (not a piece per byte) */
        size_t len = in.at < in.n ? (size_t)(next16(&in) % 20000) + 1 : length - off;
        if (len > length - off)
            len = length - off;
        if (npieces == cap) {
            piece *grown = realloc(pieces, 2 * cap * sizeof(*pieces));
            if (grown == NULL)
                goto out;
            pieces = grown;
            cap *= 2;
        }
        pieces[npieces++] = (piece){off, len};
        off += len;
    }
    if (pieces == NULL)
        goto out;
    if (flags & 8) /* swap neighbours where the input says so */
        for (size_t i = 0; i + 1 < npieces; i++)
            if (next(&in) & 1) {
                piece t = pieces[i];
                pieces[i] = pieces[i + 1];
                pieces[i + 1] = t;
                i++;
            }
    /* the receive, as cdt_ucx_irecv posts it */
    r->w = w;
    r->limits.max_frame_bytes = (flags & 16) ? (cdt_count)next16(&in) * 4 : -1;
    r->limits.max_regions = (flags & 16) ? (cdt_count)next16(&in) % 4000 : -1;
    r->rest_timeout_ms = -1;
    r->prepare = prepare;
    r->prepare_arg = &got;
    r->pre = r->head;
    r->pre_cap = CDT__UCX_HEAD_MAX;
    for (size_t i = 0; i < npieces; i++)
        cdt__ucx_single_unpack(r, pieces[i].off, msg + pieces[i].off, pieces[i].len);
    bool single = cdt__ucx_single_complete(r, length);
    int status = r->status;
    if (!single) { /* judged as a split-mode head: the prefix was changed */
        if (!touched)
            fail("an untouched single-mode message taken for a split-mode head");
        cdt__ucx_head h;
        int rc = cdt__ucx_parse_head(r->head, length, &r->limits, &h);
        if (status == CDT_SUCCESS)
            status = rc; /* a split-mode head that parses goes on to its own receive path */
    }
    if (r->dec != NULL) {
        int frc = status == CDT_SUCCESS ? cdt_decoder_finish(r->dec) : CDT_SUCCESS;
        int rc2 = cdt_decoder_free(r->dec);
        r->dec = NULL;
        if (status == CDT_SUCCESS)
            status = frc != CDT_SUCCESS ? frc : rc2;
    } else if (single && status == CDT_SUCCESS) {
        fail("success without a decoder");
    }
    cdt__ucx_single_clear(r);
    if ((flags & 4) && length < total && status == CDT_SUCCESS && single)
        fail("a message cut short was received");
    if ((flags & 32) && !(flags & 2) && status == CDT_SUCCESS && single)
        fail("a message whose sender failed was received");
    if (!touched && !(flags & 16) && status != CDT_SUCCESS) {
        fprintf(stderr, "status %s\n", cdt_err_name(status));
        fail("a whole, untouched message was refused");
    }
    if (!touched && (flags & 16) && status != CDT_SUCCESS && status != CDT_ERR_LIMIT)
        fail("an untouched message refused for something else than a limit");
    if (!touched && status == CDT_SUCCESS) {
        if (got.inband_len != inband_len || got.nbuffers != nb ||
            (inband_len > 0 && memcmp(got.inband, inband, (size_t)inband_len) != 0))
            fail("in-band bytes differ");
        for (cdt_count b = 0; b < nb; b++)
            if (got.buffers[b].len != bufs[b].len ||
                (bufs[b].len > 0 &&
                 memcmp(got.buffers[b].base, bufs[b].base, (size_t)bufs[b].len) != 0))
                fail("a region differs");
    }
out:
    cdt_sobj_release(&got);
    cdt_frame_free(f);
    if (bufs != NULL)
        for (cdt_count b = 0; b < nb; b++)
            free(bufs[b].base);
    free(bufs);
    free(inband);
    free(msg);
    free(pieces);
    free(r);
    free(w);
    return 0;
}
