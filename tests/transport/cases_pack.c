/*
 * cases_pack.c - a custom type's pack callbacks during a send: a pack that fails part-way,
 * and none run inside UCX's send window over a shared-memory FIFO.
 */
#include "cases.h"

/* ---------------------------------------------------------------- a pack that fails ------ */

/* A custom type of PF_LEN packed bytes whose pack callback fails once the stream passes
 * PF_FAIL_AT. Small objects are packed before anything is sent, so the send fails at once; a
 * large one in single mode is packed while UCX moves it: the sender's request fails, the
 * receiver is told by the message's trailer (CDT_ERR_FRAME_TRUNCATED) instead of getting
 * filler, and the next object arrives whole. In split mode the stream is packed at isend. */
enum { PF_LEN = 4 << 20, PF_FAIL_AT = 1 << 20 };

int bytes_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state, (void)buf;
    *size = count;
    return CDT_SUCCESS;
}

void bytes_copy_out(const void *buf, cdt_count count, cdt_count offset, void *dst,
                    cdt_count dst_size, cdt_count *used)
{
    cdt_count n = count - offset < dst_size ? count - offset : dst_size;
    memcpy(dst, (const char *)buf + offset, (size_t)n);
    *used = n;
}

int bytes_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                 cdt_count src_size)
{
    (void)state;
    if (offset + src_size > count)
        return CDT_ERR_TRUNCATED;
    memcpy((char *)buf + offset, src, (size_t)src_size);
    return CDT_SUCCESS;
}

/* the type's context (failing_bytes) handed to its pack as the operation's state */
static int fb_state(void *context, const void *src, cdt_count count, void **state)
{
    (void)src, (void)count;
    *state = context;
    return CDT_SUCCESS;
}

static int fb_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    const failing_bytes *f = state;
    if (offset + dst_size > f->fail_at && count > f->fail_at)
        return f->error;
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

cdt_type failing_bytes_type(const failing_bytes *f)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(fb_state, NULL, bytes_query, fb_pack, bytes_unpack, NULL, NULL,
                                    (void *)f, 0, &t));
    return t;
}

int bytes_bind_prepare(void *arg, cdt_decoder decoder)
{
    const bytes_into *r = arg;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_PACKED_SIZE};
    int rc = cdt_decoder_info(decoder, &info);
    if (rc == CDT_SUCCESS && info.packed_size > r->capacity)
        rc = CDT_ERR_TRUNCATED;
    return rc != CDT_SUCCESS ? rc : cdt_decoder_bind(decoder, r->buf, info.packed_size, r->type);
}

static const failing_bytes pf_fails = {PF_FAIL_AT, CDT_ERR_USER_BASE - 7};

/* whether the endpoint's active messages go through a shared-memory FIFO (sysv, posix) */
static bool ep_am_fifo(peer *p)
{
    char t[256];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    return strstr(t, "am=sysv/") != NULL || strstr(t, "am=posix/") != NULL;
}

void pack_fails_client(peer *p)
{
    cdt_type t = failing_bytes_type(&pf_fails);
    char *data = malloc(PF_LEN);
    CHECK(data != NULL);
    memset(data, 0x3C, PF_LEN);
    int rc = cdt_ucx_send(p->ep, data, PF_LEN, t, TAG, T_TIMEOUT_MS);
    fprintf(stderr, "send of an object whose pack fails part-way: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_USER_BASE - 7);
    CHECK_RC(cdt_ucx_send(p->ep, data, PF_FAIL_AT, t, TAG, T_TIMEOUT_MS)); /* packs whole */
    cdt_type_free(&t);
    free(data);
}

void pack_fails_server(peer *p)
{
    cdt_type t = failing_bytes_type(&pf_fails);
    char *buf = calloc(1, PF_LEN);
    CHECK(buf != NULL);
    cdt_ucx_protocol proto;
    /* which object arrives is known only from its header: a custom receiver's count must be
     * the sender's (the header's object count, FORMAT.md §4), and this type packs one byte per
     * object, so the receive binds with the packed size */
    bytes_into into = {buf, PF_LEN, t};
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_PREPARE,
                              .prepare = bytes_bind_prepare,
                              .prepare_arg = &into};
    int rc = cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, 2000);
    fprintf(stderr, "receive of it: %s\n", cdt_err_name(rc));
    CHECK_RC(cdt_ucx_ep_protocol(p->ep, &proto));
    /* single mode packing late (over TCP): the message moved and its trailer says it is not
     * the object; split mode, and single mode over a shared-memory FIFO (packed before UCX's
     * send, fifo_window below): nothing was sent, and this receive gets the second object */
    if (proto == CDT_UCX_PROTOCOL_SINGLE && !ep_am_fifo(p)) {
        CHECK(rc == CDT_ERR_FRAME_TRUNCATED);
        memset(buf, 0, PF_LEN);
        CHECK_RC(cdt_ucx_recv(p->w, buf, PF_FAIL_AT, t, TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
    } else {
        CHECK_RC(rc);
    }
    for (int i = 0; i < PF_FAIL_AT; i++)
        CHECK(buf[i] == 0x3C);
    cdt_type_free(&t);
    free(buf);
}

/* ---------------------------------------------------------------- fifo_window ---------- */

/* No user code inside UCX's send window over a shared-memory FIFO (TRANSPORT.md §9.1): a
 * custom type's pack callbacks all run before cdt_ucx_isend returns there, so none runs
 * inside UCX's copies during progress. A 4 MiB stream is a multi-fragment message whose later
 * fragments UCX asks for while the request is waited on; the count of pack calls made after
 * isend returned tells where the callbacks ran. Over TCP (transport.single.fifo_window) late
 * packing stays: there a sender's death cannot wedge anyone. */
static atomic_long fw_pack_calls;

static int fw_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    atomic_fetch_add(&fw_pack_calls, 1);
    cdt_count n = count - offset < dst_size ? count - offset : dst_size;
    memcpy(dst, (const char *)buf + offset, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}

static cdt_type fw_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, fw_pack, bytes_unpack, NULL, NULL,
                                    NULL, 0, &t));
    return t;
}

void fifo_window_client(peer *p)
{
    cdt_type t = fw_type();
    unsigned char *data = malloc(PF_LEN);
    CHECK(data != NULL);
    for (size_t i = 0; i < PF_LEN; i++)
        data[i] = (unsigned char)(i * 7 + 3);
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, data, PF_LEN, t, TAG, &r));
    long at_return = atomic_load(&fw_pack_calls);
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    cdt_ucx_request_free(r);
    long late = atomic_load(&fw_pack_calls) - at_return;
    cdt_ucx_protocol proto;
    CHECK_RC(cdt_ucx_ep_protocol(p->ep, &proto));
    fprintf(stderr, "protocol %s, %s: %ld pack calls before isend returned, %ld after\n",
            proto == CDT_UCX_PROTOCOL_SINGLE ? "single" : "split",
            ep_am_fifo(p) ? "shared-memory FIFO" : "no FIFO", at_return, late);
    if (ep_am_fifo(p))
        CHECK(at_return > 0 && late == 0);
    cdt_type_free(&t);
    free(data);
}

void fifo_window_server(peer *p)
{
    cdt_type t = fw_type();
    unsigned char *buf = calloc(1, PF_LEN);
    CHECK(buf != NULL);
    CHECK_RC(
        cdt_ucx_recv(p->w, buf, PF_LEN, t, TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (size_t i = 0; i < PF_LEN; i++)
        CHECK(buf[i] == (unsigned char)(i * 7 + 3));
    cdt_type_free(&t);
    free(buf);
}
