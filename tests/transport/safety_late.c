/*
 * safety_late.c - test_safety's cases of parts that come late or never (safety.h).
 */
#include "safety.h"

/* ------------------------------------------- a region that arrives after the timeout ----- */

/* Round r: the head at once; the region only after the receiver's cdt_ucx_recv returned. */
static const uint64_t late_len[3] = {4096, 4096, 1 << 20};

static void late_region_client(peer *p)
{
    for (int r = 0; r < 3; r++) {
        uint64_t key = 0x1234500 + (uint64_t)r, len = late_len[r];
        unsigned char head[128];
        size_t hl = make_head(head, key, 1024, 0, 1, len);
        CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
        wait_fd(0, p); /* the receiver's call returned */
        /* the receiver discards it: the send completes (it is not left in the queues) */
        ucs_status_t st = send_region(p, key, len, T_TIMEOUT_MS);
        fprintf(stderr, "late region of %llu bytes: %s\n", (unsigned long long)len,
                ucs_status_string(st));
        CHECK(st == UCS_OK);
        send_marker(p, TAG_DONE);
    }
}

void late_region_server(peer *p)
{
    for (int r = 0; r < 3; r++) {
        size_t len = (size_t)late_len[r];
        unsigned char *buf = calloc(1, len);
        CHECK(buf != NULL);
        int64_t t0 = now_ms();
        int rc = cdt_ucx_recv(p->w, buf, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, 2000);
        fprintf(stderr, "receive with the region late: %s after %lld ms\n", cdt_err_name(rc),
                (long long)(now_ms() - t0));
        CHECK(rc == CDT_ERR_TIMEOUT);
        unsigned char *watch = buf;
        if (r == 1) { /* the caller frees its buffer; a new allocation may get the address */
            free(buf);
            buf = malloc(len);
            CHECK(buf != NULL);
            watch = buf;
        }
        memset(watch, 0x5A, len);
        signal_fd(0);
        recv_marker(p, TAG_DONE); /* the region arrived before this (same endpoint) */
        for (int i = 0; i < 100; i++)
            cdt_ucx_worker_progress(p->w);
        check_untouched(watch, len, 0x5A);
        free(buf);
    }
    /* the worker still works */
    recv_marker(p, TAG_MARK);
}

void late_region_client_tail(peer *p)
{
    late_region_client(p);
    send_marker(p, TAG_MARK);
}

/* ------------------------------------------- abandoning a matched non-blocking receive --- */

void cancel_matched_client(peer *p)
{
    uint64_t key = 0x777000, len = 65536;
    unsigned char head[128];
    size_t hl = make_head(head, key, 1024, 0, 1, len);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_MARK);
    wait_fd(0, p);
    CHECK(send_region(p, key, len, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_DONE);
}

void cancel_matched_server(peer *p)
{
    size_t len = 65536;
    unsigned char *buf = calloc(1, len);
    CHECK(buf != NULL);
    cdt_ucx_request r;
    CHECK_RC(
        cdt_ucx_irecv(p->w, buf, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    recv_marker(p, TAG_MARK); /* the head matched before the marker */
    CHECK(cdt_ucx_request_test(r) == CDT_INPROGRESS);
    CHECK(cdt_ucx_request_free(r) == CDT_ERR_BUSY);
    CHECK_RC(cdt_ucx_request_cancel(r)); /* a matched receive can be abandoned */
    CHECK(cdt_ucx_request_wait(r, T_TIMEOUT_MS) == CDT_ERR_CANCELED);
    CHECK_RC(cdt_ucx_request_free(r));
    memset(buf, 0x5A, len);
    signal_fd(0);
    recv_marker(p, TAG_DONE);
    check_untouched(buf, len, 0x5A);
    free(buf);
}

/* ------------------------------------------- a single-mode sender that stops progressing - */

/* One message of 8 MiB in single mode: the sender posts it and then does not progress for a
 * while (its rendezvous data moves only when it does). The receiver's blocking receive must
 * still end at its timeout, UCX must never write into the caller's buffer after that (it is
 * freed and its address reused: ASan and a pattern check), the message must be discarded when
 * it finally moves (the sender completes), and the next object must arrive whole. */
enum { STALL_LEN = 8 << 20 };

void single_stall_client(peer *p)
{
    unsigned char *data = malloc(STALL_LEN);
    CHECK(data != NULL);
    memset(data, 0xC3, STALL_LEN);
    cdt_ucx_protocol proto;
    CHECK_RC(cdt_ucx_ep_protocol(p->ep, &proto));
    CHECK(proto == CDT_UCX_PROTOCOL_SINGLE);
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, data, STALL_LEN, CDT_BYTE, TAG, &r));
    wait_fd(0, NULL); /* no progress here until the receiver gave up */
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS)); /* discarded by the receiver */
    CHECK_RC(cdt_ucx_request_free(r));
    double_vec v;
    CHECK_RC(double_vec_init(&v, 3, 70000, 4));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
    double_vec_clear(&v);
    send_marker(p, TAG_DONE);
    free(data);
}

void single_stall_server(peer *p)
{
    unsigned char *buf = calloc(1, STALL_LEN);
    CHECK(buf != NULL);
    int64_t t0 = now_ms();
    int rc =
        cdt_ucx_recv(p->w, buf, STALL_LEN, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL, 1000);
    int64_t took = now_ms() - t0;
    fprintf(stderr, "single-mode message from a sender that does not progress: %s after %lld ms\n",
            cdt_err_name(rc), (long long)took);
    CHECK(rc == CDT_ERR_TIMEOUT);
    CHECK(took < 5000);
    free(buf); /* the caller's memory is its own again: a new allocation may reuse it */
    unsigned char *watch = malloc(STALL_LEN);
    CHECK(watch != NULL);
    memset(watch, 0x5A, STALL_LEN);
    signal_fd(0);
    double_vec v = {0}, ref;
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&ref, 3, 70000, 4));
    CHECK(double_vec_equal(&v, &ref));
    recv_marker(p, TAG_DONE);
    for (int i = 0; i < 100; i++)
        cdt_ucx_worker_progress(p->w);
    check_untouched(watch, STALL_LEN, 0x5A);
    double_vec_clear(&v);
    double_vec_clear(&ref);
    free(watch);
}

/* ------------------------------------------- a head and then nothing --------------------- */

void rest_timeout_client(peer *p)
{
    uint64_t key = 0x4242, len = 65536;
    unsigned char head[128];
    size_t hl = make_head(head, key, 1024, 0, 1, len);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    wait_fd(0, p); /* the receiver gave up on the rest */
    /* discarded by the receiver within its rest timeout: the send completes */
    CHECK(send_region(p, key, len, T_TIMEOUT_MS) == UCS_OK);
    double_vec v;
    CHECK_RC(double_vec_init(&v, 2, 20000, 9));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
    double_vec_clear(&v);
}

void rest_timeout_server(peer *p)
{
    size_t len = 65536;
    unsigned char *buf = calloc(1, len);
    CHECK(buf != NULL);
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = 1000};
    int64_t t0 = now_ms();
    /* the caller would wait without bound; the rest timeout ends the receive */
    int rc = cdt_ucx_recv(p->w, buf, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, &rp,
                          NULL, CDT_UCX_INFINITE);
    int64_t took = now_ms() - t0;
    fprintf(stderr, "head without its region: %s after %lld ms\n", cdt_err_name(rc),
            (long long)took);
    CHECK(rc == CDT_ERR_TIMEOUT);
    CHECK(took >= 900 && took < 10000);
    memset(buf, 0x5A, len);
    signal_fd(0);
    double_vec v = {0}, ref;
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&ref, 2, 20000, 9));
    CHECK(double_vec_equal(&v, &ref));
    check_untouched(buf, len, 0x5A);
    double_vec_clear(&v);
    double_vec_clear(&ref);
    free(buf);
}

/* ------------------------------------------- the commit message ----------------------- */

/* An object whose head carries the commit flag is complete only with its commit message
 * (docs/TRANSPORT.md §4, Commit): every region arrived but no commit came (a sender whose send
 * ended early over cma: its memory may have been reused) fails at the rest timeout; a commit
 * that reports the sender's error fails at once; an unknown flag is a later protocol; a valid
 * commit completes the object. */
static void commit_message(peer *p, uint64_t key, int status)
{
    unsigned char c[8] = {'C', 'D', 'T', 'C', 0, 0, 0, 0};
    uint32_t st = (uint32_t)status;
    for (int i = 0; i < 4; i++)
        c[4 + i] = (unsigned char)(st >> (8 * i));
    CHECK(raw_send(p, c, sizeof(c), PRIV(key, 0xFFFFE), T_TIMEOUT_MS) == UCS_OK);
}

void commit_client(peer *p)
{
    uint64_t len = 65536;
    unsigned char head[128];
    for (uint64_t key = 0x6001; key <= 0x6004; key++) {
        size_t hl = make_head(head, key, 1024, 0, 1, len);
        head[6] = key == 0x6003 ? 0x02 : 0x01; /* the commit flag; 0x6003: an unknown flag */
        CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
        if (key == 0x6003)
            continue;
        CHECK(send_region(p, key, len, T_TIMEOUT_MS) == UCS_OK);
        if (key == 0x6002)
            commit_message(p, key, CDT_ERR_PEER);
        else if (key == 0x6004)
            commit_message(p, key, CDT_SUCCESS);
    }
    wait_fd(0, p);
}

void commit_server(peer *p)
{
    size_t len = 65536;
    unsigned char *buf = malloc(len);
    CHECK(buf != NULL);
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = 1000};
    const int want[4] = {CDT_ERR_TIMEOUT, CDT_ERR_FRAME_TRUNCATED, CDT_ERR_FRAME_VERSION,
                         CDT_SUCCESS};
    const char *what[4] = {"regions without a commit", "a commit with the sender's error",
                           "an unknown flag", "a valid commit"};
    for (int i = 0; i < 4; i++) {
        memset(buf, 0, len);
        int rc = cdt_ucx_recv(p->w, buf, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, &rp,
                              NULL, T_TIMEOUT_MS);
        fprintf(stderr, "commit: %s: %s\n", what[i], cdt_err_name(rc));
        CHECK(rc == want[i]);
    }
    check_untouched(buf, len, 0xEE); /* the last object arrived whole */
    signal_fd(0);
    free(buf);
}

/* ------------------------------------------- discarding receives end ------------------- */

/* After a failed receive, the zero-byte receive that discards a region the sender has not sent
 * yet is canceled at its deadline: a region sent later is received by nobody (its rendezvous
 * send does not complete), instead of a receive staying posted forever. */
void drain_expiry_client(peer *p)
{
    uint64_t key = 0x5150, len = 4 << 20;
    unsigned char head[128];
    size_t hl = make_head(head, key, 1024, 0, 1, len);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    wait_fd(0, p); /* the receive failed and its discarding receive expired */
    ucs_status_t st = send_region(p, key, len, 3000);
    fprintf(stderr, "region sent after the discarding receive expired: %s\n",
            ucs_status_string(st));
    CHECK(st == UCS_INPROGRESS);
    signal_fd(1);
    wait_fd(2, p);
    /* UCX 1.13 cannot destroy a worker with a rendezvous send nobody received: just end */
    _exit(0);
}

void drain_expiry_server(peer *p)
{
    size_t len = 4 << 20;
    unsigned char *buf = calloc(1, len);
    CHECK(buf != NULL);
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = 300};
    int rc = cdt_ucx_recv(p->w, buf, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, &rp,
                          NULL, T_TIMEOUT_MS);
    CHECK(rc == CDT_ERR_TIMEOUT);
    memset(buf, 0x5A, len);
    int64_t until = now_ms() + 1500; /* the discarding receive lives 300 ms */
    while (now_ms() < until)
        cdt_ucx_worker_progress(p->w);
    signal_fd(0);
    wait_fd(1, p);
    check_untouched(buf, len, 0x5A);
    free(buf);
    signal_fd(2);
    p->ep = NULL; /* the peer ends without closing: do not flush towards it */
}
