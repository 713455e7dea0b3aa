/*
 * cases_failures.c - what goes wrong ends with a clear status, never a hang: a peer or a
 * receiver that exits mid-object, a connection refused, a close with a send never received,
 * a send that times out, and malformed frames on the wire.
 */
#include "cases.h"

/* ---------------------------------------------------------------- peer failure ------------ */

void peer_exit_client(peer *p)
{
    /* 512 MB in zero-copy regions: start sending, then die before the receiver is done */
    double_vec v;
    CHECK_RC(double_vec_init(&v, 64, 2 * 1024 * 1024, 1));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG, &r));
    for (int i = 0; i < 200; i++)
        cdt_ucx_request_test(r);
    _exit(3);
}

void peer_exit_server(peer *p)
{
    double_vec v = {0};
    int64_t t0 = cdt_ucx_version_string() != NULL ? (int64_t)time(NULL) : 0;
    int rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS);
    fprintf(stderr, "receive from a peer that exited: %s after %lld s\n", cdt_err_name(rc),
            (long long)(time(NULL) - t0));
    CHECK(rc != CDT_SUCCESS);
    CHECK(rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT || rc == CDT_ERR_TRANSPORT);
    double_vec_clear(&v);
    /* sends on the endpoint fail instead of hanging */
    int32_t x = 1;
    int64_t deadline = (int64_t)time(NULL) + 15;
    int src = CDT_SUCCESS;
    while (src == CDT_SUCCESS && (int64_t)time(NULL) < deadline)
        src = cdt_ucx_send(p->ep, &x, 1, CDT_INT32, TAG, 2000);
    fprintf(stderr, "send to a peer that exited: %s\n", cdt_err_name(src));
    CHECK(src != CDT_SUCCESS);
    /* the failure names the peer (where its connection came from) and this side's UCX (the
     * lanes: receiver_exit_client) */
    char detail[512], line[512], want[128];
    CHECK_RC(cdt_ucx_last_error(detail, sizeof(detail)));
    CHECK_RC(cdt_ucx_ep_describe(p->ep, line, sizeof(line)));
    fprintf(stderr, "  %s\n  endpoint: %s\n", detail, line);
    snprintf(want, sizeof(want), " (UCX %s; lanes: ", cdt_ucx_version_string());
    CHECK(strncmp(detail, "send to 127.0.0.1:", 18) == 0 && strstr(detail, want) != NULL);
    CHECK(strstr(detail, cdt_err_name(src)) != NULL);
    CHECK(strncmp(line, "127.0.0.1:", 10) == 0 && strstr(line, want) != NULL);
    CHECK(cdt_ucx_ep_describe(NULL, line, sizeof(line)) == CDT_ERR_INVALID_ARG);
    cdt_ucx_ep_close(p->ep, 100);
    p->ep = NULL;
}

/* A receiver that dies while a large object is on its way to it: the sender's request must end
 * with CDT_ERR_PEER, not wait forever. Over shared memory UCX 1.13 keeps such a rendezvous send
 * pending for ever; libcdt ends it when the endpoint fails (cdt__ucx_ep_end_sends), so the
 * send ends within about the keepalive interval, and its object may be freed at once. */
void receiver_exit_client(peer *p)
{
    /* a first small object: the server exits only once the endpoint is up (without it, a
     * server that spins quickly could exit while this side is still connecting) */
    int32_t hello = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &hello, 1, CDT_INT32, TAG + 1, T_TIMEOUT_MS));
    double_vec v;
    CHECK_RC(double_vec_init(&v, 64, 2 * 1024 * 1024, 1));
    int rc = cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG, T_TIMEOUT_MS);
    fprintf(stderr, "send to a receiver that exited: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_PEER);
    /* the failure names the peer, this side's UCX and the lanes the endpoint had at its first
     * send (UCX reports placeholders once it failed): a dead peer, not a configuration
     * problem */
    char detail[512], want[192];
    CHECK_RC(cdt_ucx_last_error(detail, sizeof(detail)));
    fprintf(stderr, "  %s\n", detail);
    char lanes[256];
    CHECK(cdt_ucx_ep_transports(p->ep, lanes, sizeof(lanes)) == CDT_ERR_PEER);
    CHECK(strncmp(detail, "send to 127.0.0.1:", 18) == 0);
    snprintf(want, sizeof(want), " (UCX %s; lanes: am=", cdt_ucx_version_string());
    CHECK(strstr(detail, want) != NULL && strstr(detail, ": CDT_ERR_PEER") != NULL);
    double_vec_clear(&v);
    cdt_ucx_ep_close(p->ep, 100);
    p->ep = NULL;
}

void receiver_exit_server(peer *p)
{
    int32_t hello = 0;
    CHECK_RC(cdt_ucx_recv(p->w, &hello, 1, CDT_INT32, TAG + 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    double_vec v = {0};
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, &v, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    for (int i = 0; i < 200000 && cdt_ucx_request_test(r) == CDT_INPROGRESS; i++)
        ;
    _exit(3); /* in the middle of the object */
}

/* ---------------------------------------------------------------- connect / close -------- */

/* connecting to a port nobody listens on fails within the timeout, and the worker that tried
 * shuts down cleanly afterwards (UCX aborts a worker destroy that finds a half-made endpoint) */
int connect_refused_case(void)
{
    peer p = {0};
    peer_open(&p, NULL);
    uint16_t port = peer_listen(&p);
    cdt_ucx_listener_destroy(p.l); /* the port is free again: nobody answers there */
    p.l = NULL;
    for (int i = 0; i < 3; i++) {
        time_t t0 = time(NULL);
        cdt_ucx_ep ep = NULL;
        int rc = cdt_ucx_ep_connect(p.w, "127.0.0.1", port, 3000, &ep);
        fprintf(stderr, "connect to a closed port: %s after %lld s\n", cdt_err_name(rc),
                (long long)(time(NULL) - t0));
        CHECK(rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT);
        CHECK(ep == NULL);
        CHECK(time(NULL) - t0 <= 10);
        /* what a C caller can tell the user: the peer, this side's UCX, no lanes, what to do */
        char detail[512], want[160];
        CHECK_RC(cdt_ucx_last_error(detail, sizeof(detail)));
        fprintf(stderr, "  %s\n", detail);
        snprintf(want, sizeof(want),
                 "connect to 127.0.0.1:%u (UCX %s; lanes: none (no connection)): %s",
                 (unsigned)port, cdt_ucx_version_string(), cdt_err_name(rc));
        CHECK(strncmp(detail, want, strlen(want)) == 0);
        CHECK(strstr(detail, "peers must use the same UCX minor version") != NULL);
        CHECK(cdt_ucx_last_error(detail, 8) == CDT_ERR_TRUNCATED && strlen(detail) == 7);
        CHECK(cdt_ucx_last_error(NULL, 8) == CDT_ERR_INVALID_ARG);
    }
    peer_close(&p);
    return 0;
}

/* closing an endpoint whose rendezvous send the peer never receives: the close returns within
 * its timeout (UCX may count the send flushed once its rendezvous request left), and the send
 * completes with an error instead of hanging */
void close_stuck_client(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, 4, 8 * 1024 * 1024, 1));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG, &r));
    time_t t0 = time(NULL);
    int rc = cdt_ucx_ep_close(p->ep, 300);
    p->ep = NULL;
    fprintf(stderr, "close with an unreceived send: %s after %lld s\n", cdt_err_name(rc),
            (long long)(time(NULL) - t0));
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_TIMEOUT);
    CHECK(time(NULL) - t0 <= 5);
    rc = cdt_ucx_request_wait(r, 5000);
    fprintf(stderr, "the send after the forced close: %s\n", cdt_err_name(rc));
    CHECK(rc != CDT_SUCCESS && rc != CDT_ERR_TIMEOUT);
    CHECK_RC(cdt_ucx_request_free(r));
    double_vec_clear(&v);
}

/* a blocking send that times out (the peer never receives) is abandoned, not leaked: closing
 * the endpoint ends it, the object may then be freed, and the worker frees the request (the
 * ASan build checks for leaks) */
void send_timeout_client(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, 4, 8 * 1024 * 1024, 1));
    int rc = cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG, 300);
    fprintf(stderr, "send nobody receives, 300 ms: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_TIMEOUT);
    rc = cdt_ucx_ep_close(p->ep, 300);
    p->ep = NULL;
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_TIMEOUT);
    double_vec_clear(&v);
}

void close_stuck_server(peer *p)
{
    /* never post a receive; keep the connection alive while the client gives up */
    time_t t0 = time(NULL);
    while (time(NULL) - t0 < 3)
        cdt_ucx_worker_progress(p->w);
}

/* A late reader over cross-memory attach: the sender's send ends before the receiver took the
 * object (the sender closes its endpoint), and the caller then reuses the object's memory. A
 * live receiver that matches the object afterwards copies the regions out of the sender's
 * memory (UCX cannot revoke that), so it sees the reused bytes: the object must never complete
 * with them. With the commit protocol it never completes at all (no commit comes: the rest
 * timeout ends it); without it, the receive succeeded with the reused bytes (the soak's wrong
 * byte). Over TCP and copy the data never moves after the end, with the same result.
 * The receiver receives once the sender says it reused the memory (a pipe): a receiver that
 * waited 2 s instead received the whole object inside the sender's close on a loaded machine
 * (the send then ended with CDT_SUCCESS, the ASan build at load 15), before anything was late. */
static int lr_pipe[2] = {-1, -1};

int late_reader_setup(void)
{
    return pipe(lr_pipe);
}

void late_reader_client(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, 4, 1024 * 1024, 3)); /* four rendezvous regions */
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG, &r));
    for (int i = 0; i < 1000; i++) /* the head and the regions' rendezvous reach the peer */
        cdt_ucx_worker_progress(p->w);
    int rc = cdt_ucx_ep_close(p->ep, 300);
    p->ep = NULL;
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_TIMEOUT);
    rc = cdt_ucx_request_wait(r, 5000);
    fprintf(stderr, "late_reader: the send after the close: %s\n", cdt_err_name(rc));
    CHECK(rc != CDT_SUCCESS && rc != CDT_ERR_TIMEOUT);
    CHECK_RC(cdt_ucx_request_free(r));
    /* the caller may reuse the object now: it does */
    for (cdt_count i = 0; i < v.n; i++)
        memset(v.data[i], 0xee, (size_t)v.lens[i] * sizeof(int32_t));
    CHECK(write(lr_pipe[1], "r", 1) == 1); /* the receiver may receive now */
    time_t t0 = time(NULL);
    while (time(NULL) - t0 < 7) /* alive (and its memory readable) while the peer receives */
        cdt_ucx_worker_progress(p->w);
    double_vec_clear(&v);
}

void late_reader_server(peer *p)
{
    char reused = 0; /* the sender gives up and reuses the memory meanwhile */
    for (int64_t end = now_ms() + T_TIMEOUT_MS; reused == 0;) {
        struct pollfd pfd = {.fd = lr_pipe[0], .events = POLLIN};
        if (poll(&pfd, 1, 0) == 1)
            CHECK(read(lr_pipe[0], &reused, 1) == 1);
        else
            cdt_ucx_worker_progress(p->w);
        CHECK(now_ms() < end);
    }
    double_vec got = {0}, want;
    CHECK_RC(double_vec_init(&want, 4, 1024 * 1024, 3));
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = 2000};
    int rc =
        cdt_ucx_recv(p->w, &got, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, 4000);
    int same = rc == CDT_SUCCESS && double_vec_equal(&got, &want);
    fprintf(stderr, "late_reader: the late receive: %s%s\n", cdt_err_name(rc),
            rc == CDT_SUCCESS ? (same ? " (the bytes sent)" : " WITH REUSED BYTES") : "");
    CHECK(rc != CDT_SUCCESS || same); /* never an object built from bytes never sent */
    double_vec_clear(&got);
    double_vec_clear(&want);
}

/* ---------------------------------------------------------------- malformed -------------- */

static void raw_send(peer *p, const void *data, size_t len, uint64_t tag)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    void *q = ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), data, len, tag, &prm);
    CHECK(!UCS_PTR_IS_ERR(q));
    int64_t deadline = (int64_t)time(NULL) + 10;
    while (q != NULL && ucp_request_check_status(q) == UCS_INPROGRESS &&
           (int64_t)time(NULL) < deadline)
        cdt_ucx_worker_progress(p->w);
    if (q != NULL)
        ucp_request_free(q);
}

void malformed_client(peer *p)
{
    unsigned char junk[100];
    memset(junk, 0xab, sizeof(junk));
    raw_send(p, junk, sizeof(junk), TAG); /* no prefix */
    raw_send(p, junk, 3, TAG);            /* too short */
    /* a valid prefix followed by a broken frame header */
    unsigned char bad[40 + 48];
    memset(bad, 0, sizeof(bad));
    memcpy(bad, "CDTU\x07\0\0\0", 8); /* prefix version 7, split mode */
    bad[16] = 0xff;                   /* threshold */
    bad[32] = 0x5e;                   /* sender */
    memcpy(bad + 40, "CDTF\x01\0\0\0", 8);
    bad[40 + 8] = 47; /* header_size wrong */
    raw_send(p, bad, sizeof(bad), TAG);
    /* a huge announced tail that the header does not allow */
    bad[40 + 8] = 48;
    bad[24] = 0xff;
    raw_send(p, bad, sizeof(bad), TAG);
    /* a valid frame whose regions do not match the receiving type */
    struct_vec *sv = calloc(2, sizeof(*sv));
    CHECK(sv != NULL);
    struct_vec_fill(sv, 2, 3);
    CHECK_RC(cdt_ucx_send(p->ep, sv, 2, struct_vec_type(), TAG, T_TIMEOUT_MS));
    /* then good messages */
    struct_vec_fill(sv, 2, 4);
    CHECK_RC(cdt_ucx_send(p->ep, sv, 2, struct_vec_type(), TAG, T_TIMEOUT_MS));
    double_vec dv;
    CHECK_RC(double_vec_init(&dv, 3, 30000, 5));
    CHECK_RC(cdt_ucx_send(p->ep, &dv, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
    /* large regions that the receiver rejects are drained: this send completes */
    CHECK_RC(cdt_ucx_send(p->ep, &dv, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_send(p->ep, &dv, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
    double_vec_clear(&dv);
    free(sv);
}

void malformed_server(peer *p)
{
    struct_vec *sv = calloc(2, sizeof(*sv)), *ref = calloc(2, sizeof(*ref));
    CHECK(sv != NULL && ref != NULL);
    int rc;
    rc = cdt_ucx_recv(p->w, sv, 2, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_FRAME_MAGIC);
    rc = cdt_ucx_recv(p->w, sv, 2, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_FRAME_MAGIC);
    rc = cdt_ucx_recv(p->w, sv, 2, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_FRAME_MALFORMED);
    rc = cdt_ucx_recv(p->w, sv, 2, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_FRAME_MALFORMED);
    /* a receiver whose object holds fewer regions than the frame */
    rc = cdt_ucx_recv(p->w, sv, 1, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc != CDT_SUCCESS);
    CHECK_RC(cdt_ucx_recv(p->w, sv, 2, struct_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    struct_vec_fill(ref, 2, 4);
    CHECK(struct_vec_equal(sv, ref, 2));
    double_vec dv = {0}, dref;
    CHECK_RC(double_vec_init(&dref, 3, 30000, 5));
    CHECK_RC(cdt_ucx_recv(p->w, &dv, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(double_vec_equal(&dv, &dref));
    double_vec_clear(&dv);
    /* a receiver type that rejects the frame (wrong type): the regions are drained */
    int32_t small[4];
    rc = cdt_ucx_recv(p->w, small, 4, CDT_INT32, TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                      T_TIMEOUT_MS);
    CHECK(rc != CDT_SUCCESS);
    CHECK_RC(cdt_ucx_recv(p->w, &dv, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(double_vec_equal(&dv, &dref));
    double_vec_clear(&dv);
    double_vec_clear(&dref);
    free(sv);
    free(ref);
}
