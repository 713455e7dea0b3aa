/*
 * safety_limits.c - test_safety's cases of what a peer announces and what a receiver holds
 * (safety.h).
 */
#include "safety.h"

/* ------------------------------------------- the receive holds its own type reference ---- */

static cdt_type strided(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_vector(20000, 1, 2, CDT_DOUBLE, &t));
    CHECK_RC(cdt_type_commit(&t));
    return t;
}

void type_ref_client(peer *p)
{
    double *d = malloc(40000 * sizeof(double));
    CHECK(d != NULL);
    for (int i = 0; i < 40000; i++)
        d[i] = i;
    cdt_type t = strided();
    wait_fd(0, p); /* the receive was posted and its type handle freed */
    CHECK_RC(cdt_ucx_send(p->ep, d, 1, t, TAG, T_TIMEOUT_MS));
    cdt_type_free(&t);
    free(d);
}

/* A params struct with a bit this library does not know (a field of a later library) is
 * refused by every function that takes one, and a receive of an uncommitted type is refused
 * when it is posted, not when its object arrives. */
static void refused_arguments(peer *p)
{
    const uint64_t later = UINT64_C(1) << 40;
    cdt_ucx_context c = NULL;
    cdt_ucx_context_params cp = {.field_mask = later};
    CHECK(cdt_ucx_context_create(&cp, &c) == CDT_ERR_INVALID_ARG && c == NULL);
    cdt_ucx_worker w = NULL;
    cdt_ucx_worker_params wp = {.field_mask = later};
    CHECK(cdt_ucx_worker_create(p->ctx, &wp, &w) == CDT_ERR_INVALID_ARG && w == NULL);
    cdt_ucx_listener l = NULL;
    cdt_ucx_listener_params lp = {.field_mask = later};
    CHECK(cdt_ucx_listener_create(p->w, &lp, &l) == CDT_ERR_INVALID_ARG && l == NULL);
    cdt_ucx_request r = NULL;
    double d[4];
    cdt_ucx_recv_params rp = {.field_mask = later};
    CHECK(cdt_ucx_irecv(p->w, d, 4, CDT_DOUBLE, TAG, CDT_UCX_TAG_MASK_FULL, &rp, &r) ==
              CDT_ERR_INVALID_ARG &&
          r == NULL);
    cdt_type raw;
    CHECK_RC(cdt_type_contiguous(4, CDT_DOUBLE, &raw));
    CHECK(cdt_ucx_irecv(p->w, d, 1, raw, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &r) ==
              CDT_ERR_NOT_COMMITTED &&
          r == NULL);
    CHECK_RC(cdt_type_free(&raw));
}

void type_ref_server(peer *p)
{
    refused_arguments(p);
    double *d = calloc(40000, sizeof(double));
    CHECK(d != NULL);
    cdt_type t = strided();
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, d, 1, t, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    CHECK_RC(cdt_type_free(&t)); /* as everywhere in the API: the operation keeps its own */
    /* reuse the freed memory, so that a dangling use reads garbage even without a sanitizer */
    void *junk[64];
    for (int i = 0; i < 64; i++) {
        junk[i] = malloc((size_t)(16 + 16 * i));
        CHECK(junk[i] != NULL);
        memset(junk[i], 0xA5, (size_t)(16 + 16 * i));
    }
    signal_fd(0);
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    for (int i = 0; i < 40000; i++)
        CHECK(d[i] == (i % 2 == 0 ? (double)i : 0.0));
    for (int i = 0; i < 64; i++)
        free(junk[i]);
    free(d);
}

/* ------------------------------------------- limits on what a peer announces ------------- */

void limits_client(peer *p)
{
    unsigned char *head = calloc(1, HEAD_MAX);
    CHECK(head != NULL);
    /* 104 bytes announcing one region of 16 GiB */
    size_t hl = make_head(head, 0x51, 1024, 0, 1, (uint64_t)16 << 30);
    CHECK(hl == 104);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    /* 3 regions of 64 KiB against a limit of 2 */
    hl = make_head(head, 0x52, 1024, 0, 3, 65536);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    /* a full head announcing a 512 GiB tail of a 1 TiB frame (4000 regions of 256 MiB) */
    memset(head, 0, HEAD_MAX);
    make_head(head, 0x53, 1024, (uint64_t)1 << 39, 4000, (uint64_t)256 << 20);
    CHECK(raw_send(p, head, HEAD_MAX, TAG, T_TIMEOUT_MS) == UCS_OK);
    free(head);
    /* then a real object within the limits */
    static char inband[] = "in-band";
    cdt_sobj_buffer b = {calloc(1, 100000), 100000, CDT_KIND_BYTE};
    CHECK(b.base != NULL);
    cdt_sobj o = {.inband = inband, .inband_len = sizeof(inband), .buffers = &b, .nbuffers = 1};
    CHECK_RC(cdt_ucx_send(p->ep, &o, 1, cdt_sobj_type(), TAG, T_TIMEOUT_MS));
    free(b.base);
}

static int counting_alloc(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    (void)index;
    (void)kind;
    int *calls = user;
    ++*calls;
    *base = malloc(len > 0 ? (size_t)len : 1);
    return *base != NULL ? CDT_SUCCESS : CDT_ERR_NO_MEMORY;
}

static int prepare_sobj(void *arg, cdt_decoder dec)
{
    int rc = cdt_sobj_recv_prepare(arg, dec);
    return rc != CDT_SUCCESS ? rc : cdt_decoder_bind(dec, arg, 1, cdt_sobj_type());
}

void limits_server(peer *p)
{
    int calls = 0;
    cdt_sobj hooked = {.field_mask = CDT_SOBJ_FIELD_ALLOC,
                       .alloc = counting_alloc,
                       .alloc_user = &calls},
             lib = {0};
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_PREPARE |
                                            CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES |
                                            CDT_UCX_RECV_PARAM_MAX_REGIONS,
                              .prepare = prepare_sobj,
                              .prepare_arg = &hooked,
                              .max_frame_bytes = 1 << 20,
                              .max_regions = 2};
    int rc = cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS);
    fprintf(stderr, "16 GiB announced, 1 MiB allowed: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_LIMIT && calls == 0 && hooked.inband == NULL);
    /* library-allocated: nothing is reserved either */
    rp.prepare_arg = &lib;
    rc = cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_LIMIT && lib.inband == NULL && lib.buffers == NULL);
    rc = cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS);
    fprintf(stderr, "3 regions, 2 allowed: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_LIMIT && lib.inband == NULL);
    /* the tail's buffer is not sized from an announced frame beyond the limit */
    rp.field_mask &= ~(uint64_t)CDT_UCX_RECV_PARAM_MAX_REGIONS;
    rc = cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS);
    fprintf(stderr, "a tail of a 1 TiB frame: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_LIMIT && lib.inband == NULL);
    /* an object within the limits */
    rp.field_mask |= CDT_UCX_RECV_PARAM_MAX_REGIONS;
    CHECK_RC(
        cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS));
    CHECK(lib.nbuffers == 1 && lib.buffers[0].len == 100000 && strcmp(lib.inband, "in-band") == 0);
    cdt_sobj_release(&lib);
    /* negative limits are argument errors */
    rp.max_regions = -1;
    CHECK(cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, 10) ==
          CDT_ERR_INVALID_ARG);
}

/* ------------------------------------------- a refused object ends its sender's send ------ */

/* sobj objects of 40 KiB in band (a tail: their head is cut to 1 KiB) and n buffers of 4 KiB,
 * each its own message (threshold 4096): the 1 KiB head holds the whole frame header up to 58
 * buffers; the receiver refuses every one (max_frame_bytes) */
static const int refused_n[] = {1, 58, 59, 60, 61, 10000};
enum { REFUSED_INBAND = 40960, REFUSED_BUF = 4096 };

void refused_regions_client(peer *p)
{
    static char inband[REFUSED_INBAND];
    memset(inband, 0x11, sizeof(inband));
    unsigned char *mem = malloc((size_t)10000 * REFUSED_BUF);
    cdt_sobj_buffer *b = calloc(10000, sizeof(*b));
    CHECK(mem != NULL && b != NULL);
    memset(mem, 0x22, (size_t)10000 * REFUSED_BUF);
    for (int i = 0; i < 10000; i++)
        b[i] = (cdt_sobj_buffer){mem + (size_t)i * REFUSED_BUF, REFUSED_BUF, CDT_KIND_BYTE};
    cdt_ucx_send_params sp = {.field_mask = CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD,
                              .zcopy_threshold = REFUSED_BUF};
    for (size_t k = 0; k < sizeof(refused_n) / sizeof(refused_n[0]); k++) {
        cdt_sobj o = {
            .inband = inband, .inband_len = sizeof(inband), .buffers = b, .nbuffers = refused_n[k]};
        cdt_ucx_request r;
        int64_t t0 = now_ms();
        CHECK_RC(cdt_ucx_isend_advanced(p->ep, &o, 1, cdt_sobj_type(), TAG, &sp, &r));
        int rc = cdt_ucx_request_wait(r, 15000);
        fprintf(stderr, "refused object of %d regions: the sender's send %s after %lld ms\n",
                refused_n[k], cdt_err_name(rc), (long long)(now_ms() - t0));
        /* the receiver took (and discarded) every message: the send completes, long before
         * the receiver's rest timeout (60 s) and this wait's 15 s */
        CHECK(rc == CDT_SUCCESS);
        CHECK(now_ms() - t0 < 10000);
        CHECK_RC(cdt_ucx_request_free(r));
        send_marker(p, TAG_MARK); /* the endpoint is still usable, in order */
    }
    free(b);
    free(mem);
    recv_marker(p, TAG_DONE);
}

void refused_regions_server(peer *p)
{
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES,
                              .max_frame_bytes = REFUSED_INBAND};
    for (size_t k = 0; k < sizeof(refused_n) / sizeof(refused_n[0]); k++) {
        unsigned char buf[16];
        int rc = cdt_ucx_recv(p->w, buf, sizeof(buf), CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, &rp,
                              NULL, T_TIMEOUT_MS);
        CHECK(rc == CDT_ERR_LIMIT);
        recv_marker(p, TAG_MARK);
    }
    send_marker(p, TAG_DONE);
}
