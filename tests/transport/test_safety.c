/*
 * test_safety.c - the UCX transport against late, malicious or colliding peers, between real
 * processes on loopback. Usage: test_safety CASE (each case is one ctest test).
 *
 * Some peers here write the wire protocol by hand (docs/TRANSPORT.md, docs/FORMAT.md) with raw
 * UCX tag sends, to control what arrives when: a head whose region comes after the receiver
 * gave up, a head whose rest never comes, heads that announce more than the receiver allows,
 * messages on another sender's private tags. Ordering between processes never relies on
 * sleeps: a peer signals through a pipe, and UCX matches the messages of one endpoint in the
 * order they were sent, so a marker message received means everything before it arrived.
 */
#include "harness.h"

#include "seed_types.h"
#include <cdt_sobj.h>
#include <ucp/api/ucp.h>

#include <errno.h>
#include <poll.h>

#define TAG 42
#define TAG_MARK 43
#define TAG_DONE 44

/* ---------------------------------------------------------------- wire helpers ----------- */

#define PRIV(key, idx) ((UINT64_C(1) << 63) | ((uint64_t)(key) << 20) | (uint64_t)(idx))
#define HEAD_MAX 32768

static void le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* prefix + FORMAT.md header of a frame with n byte regions of length len and no packed stream;
 * returns the bytes written (the head message, when every region travels on its own) */
static size_t make_head(unsigned char *out, uint64_t key, uint64_t threshold, uint64_t tail_len,
                        uint64_t n, uint64_t len)
{
    memset(out, 0, 32 + 48);
    memcpy(out, "CDTU\x05\0\0\0", 8); /* version 5, split mode */
    le64(out + 8, key);
    le64(out + 16, threshold);
    le64(out + 24, tail_len);
    unsigned char *h = out + 32;
    memcpy(h, "CDTF\x01\0\0\0", 8);
    uint64_t header_size = 48 + 16 * n;
    le64(h + 8, header_size);
    le64(h + 16, 0);                     /* packed_size */
    le64(h + 24, n);                     /* region_count */
    le64(h + 32, header_size + n * len); /* frame_size: regions of multiples of 8 bytes */
    size_t at = 48;
    for (uint64_t i = 0; i < n && 32 + at + 16 <= HEAD_MAX; i++, at += 16) {
        le64(h + at, len);
        memset(h + at + 8, 0, 8);
        h[at + 8] = 1; /* kind byte */
    }
    return 32 + at;
}

/* send raw bytes on the peer's endpoint; wait for completion when wait_ms > 0. Returns the
 * UCX status (UCS_INPROGRESS when it did not complete in time; the request is then freed and
 * the send goes on). */
static ucs_status_t raw_send(peer *p, const void *data, size_t len, uint64_t tag, int wait_ms)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    void *q = ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), data, len, tag, &prm);
    CHECK(!UCS_PTR_IS_ERR(q));
    if (q == NULL)
        return UCS_OK;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ucs_status_t st = ucp_request_check_status(q);
    for (;;) {
        if (st != UCS_INPROGRESS)
            break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= wait_ms)
            break;
        cdt_ucx_worker_progress(p->w);
        st = ucp_request_check_status(q);
    }
    ucp_request_free(q);
    return st;
}

/* send region 0 of object `key`: len bytes of 0xEE on its private tag. A send still in flight
 * keeps its buffer (the caller then ends the process) */
static ucs_status_t send_region(peer *p, uint64_t key, size_t len, int wait_ms)
{
    unsigned char *region = malloc(len);
    CHECK(region != NULL);
    memset(region, 0xEE, len);
    ucs_status_t st = raw_send(p, region, len, PRIV(key, 0), wait_ms);
    if (st != UCS_INPROGRESS)
        free(region);
    return st;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* pipes between the processes of a case: signal / wait for one byte while progressing */
/* 0-3: signals the cases use; 4, 5: client 1 / client 2 of run_three is done */
static int sig_fd[6][2];

static void signal_fd(int which)
{
    char c = 'x';
    CHECK(write(sig_fd[which][1], &c, 1) == 1);
}

static void wait_fd(int which, peer *p)
{
    int64_t deadline = now_ms() + T_TIMEOUT_MS;
    for (;;) {
        struct pollfd pf = {.fd = sig_fd[which][0], .events = POLLIN};
        if (poll(&pf, 1, 1) == 1) {
            char c;
            CHECK(read(sig_fd[which][0], &c, 1) == 1);
            return;
        }
        if (p != NULL)
            cdt_ucx_worker_progress(p->w);
        CHECK(now_ms() < deadline);
    }
}

static void open_pipes(void)
{
    for (int i = 0; i < 6; i++)
        CHECK(pipe(sig_fd[i]) == 0);
}

static void recv_marker(peer *p, cdt_ucx_tag tag)
{
    int32_t v = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &v, 1, CDT_INT32, tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
}

static void send_marker(peer *p, cdt_ucx_tag tag)
{
    int32_t v = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, CDT_INT32, tag, T_TIMEOUT_MS));
}

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

static void check_untouched(const unsigned char *b, size_t len, unsigned char v)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != v) {
            fprintf(stderr, "byte %zu of %zu was written after the receive returned: %#x\n", i, len,
                    b[i]);
            CHECK(0);
        }
}

static void late_region_server(peer *p)
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

static void late_region_client_tail(peer *p)
{
    late_region_client(p);
    send_marker(p, TAG_MARK);
}

/* ------------------------------------------- abandoning a matched non-blocking receive --- */

static void cancel_matched_client(peer *p)
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

static void cancel_matched_server(peer *p)
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

static void single_stall_client(peer *p)
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

static void single_stall_server(peer *p)
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

/* ------------------------------------------- the receive holds its own type reference ---- */

static cdt_type strided(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_vector(20000, 1, 2, CDT_DOUBLE, &t));
    CHECK_RC(cdt_type_commit(&t));
    return t;
}

static void type_ref_client(peer *p)
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

static void type_ref_server(peer *p)
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

/* ------------------------------------------- a head and then nothing --------------------- */

static void rest_timeout_client(peer *p)
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

static void rest_timeout_server(peer *p)
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

static void commit_client(peer *p)
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

static void commit_server(peer *p)
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
static void drain_expiry_client(peer *p)
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

static void drain_expiry_server(peer *p)
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

/* ------------------------------------------- limits on what a peer announces ------------- */

static void limits_client(peer *p)
{
    unsigned char *head = calloc(1, HEAD_MAX);
    CHECK(head != NULL);
    /* 96 bytes announcing one region of 16 GiB */
    size_t hl = make_head(head, 0x51, 1024, 0, 1, (uint64_t)16 << 30);
    CHECK(hl == 96);
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

static void limits_server(peer *p)
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

/* ------------------------------------------- two in-flight objects with one key --------- */

static void key_conflict_client(peer *p)
{
    uint64_t key = 0x999, len = 65536;
    unsigned char head[128];
    size_t hl = make_head(head, key, 1024, 0, 1, len);
    CHECK(raw_send(p, head, hl, TAG, T_TIMEOUT_MS) == UCS_OK);
    CHECK(raw_send(p, head, hl, TAG + 100, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_MARK);
    wait_fd(0, p);
    CHECK(send_region(p, key, len, T_TIMEOUT_MS) == UCS_OK);
    send_marker(p, TAG_DONE);
}

static void key_conflict_server(peer *p)
{
    size_t len = 65536;
    unsigned char *a = calloc(1, len), *b = calloc(1, len);
    CHECK(a != NULL && b != NULL);
    cdt_ucx_request ra, rb;
    CHECK_RC(
        cdt_ucx_irecv(p->w, a, (cdt_count)len, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &ra));
    CHECK_RC(cdt_ucx_irecv(p->w, b, (cdt_count)len, CDT_BYTE, TAG + 100, CDT_UCX_TAG_MASK_FULL,
                           NULL, &rb));
    recv_marker(p, TAG_MARK);
    /* both heads matched: the second names the key of the first, in flight */
    int rca = cdt_ucx_request_wait(ra, 5000), rcb = cdt_ucx_request_wait(rb, 5000);
    fprintf(stderr, "two objects with one key: %s, %s\n", cdt_err_name(rca), cdt_err_name(rcb));
    CHECK(rca == CDT_ERR_FRAME_MALFORMED && rcb == CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt_ucx_request_free(ra));
    CHECK_RC(cdt_ucx_request_free(rb));
    memset(a, 0x5A, len);
    memset(b, 0x5A, len);
    signal_fd(0);
    recv_marker(p, TAG_DONE);
    check_untouched(a, len, 0x5A);
    check_untouched(b, len, 0x5A);
    free(a);
    free(b);
}

/* ------------------------------------------- three processes ----------------------------- */

/* The server (receiver) accepts two connections; client 1 and client 2 connect. */
static int run_three(side_fn *server, side_fn *c1, side_fn *c2, const cdt_ucx_worker_params *wp1,
                     const cdt_ucx_worker_params *wp2)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stderr);
    pid_t spid = fork();
    CHECK(spid >= 0);
    if (spid == 0) {
        alarm(60);
        peer p = {.is_server = 1};
        peer_open(&p, NULL);
        uint16_t port = peer_listen(&p);
        for (int i = 0; i < 2; i++)
            CHECK(write(fds[1], &port, sizeof(port)) == sizeof(port));
        cdt_ucx_ep second;
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &p.ep));
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &second));
        server(&p);
        /* stay until both clients are done: a client's rendezvous send completes only when
         * the acknowledgement of this side was processed there (see peer_finish) */
        wait_fd(4, &p);
        wait_fd(5, &p);
        cdt_ucx_ep_close(second, 2000);
        peer_close(&p);
        _exit(0);
    }
    pid_t cpid[2];
    for (int k = 0; k < 2; k++) {
        uint16_t port = 0;
        CHECK(read(fds[0], &port, sizeof(port)) == sizeof(port));
        cpid[k] = fork();
        CHECK(cpid[k] >= 0);
        if (cpid[k] == 0) {
            alarm(60);
            peer p = {0};
            peer_open(&p, k == 0 ? wp1 : wp2);
            CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
            (k == 0 ? c1 : c2)(&p);
            signal_fd(4 + k);
            peer_close(&p);
            _exit(0);
        }
    }
    int ok = 1;
    pid_t all[3] = {cpid[0], cpid[1], spid};
    for (int k = 0; k < 3; k++) {
        int st = 0;
        waitpid(all[k], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "process %d: status 0x%x\n", k, st);
            ok = 0;
        }
    }
    return ok ? 0 : 1;
}

enum { OBJ_ARRAYS = 2, OBJ_LEN = 16384 }; /* 64 KiB arrays: each its own message */

static void recv_check(peer *p, cdt_ucx_tag tag, int seed)
{
    double_vec v = {0}, ref;
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&ref, OBJ_ARRAYS, OBJ_LEN, seed));
    if (!double_vec_equal(&v, &ref)) {
        fprintf(stderr, "object with tag %llu holds bytes that are not its sender's\n",
                (unsigned long long)tag);
        CHECK(0);
    }
    double_vec_clear(&v);
    double_vec_clear(&ref);
}

/* Two senders forced onto one sender id. B's object is in the receiver's queues (unexpected)
 * when A's arrives and the receiver posts A's region receives. */
static void same_id_a(peer *p)
{
    wait_fd(0, NULL);
    double_vec v;
    CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 1));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG + 1, T_TIMEOUT_MS));
    double_vec_clear(&v);
    wait_fd(1, p); /* the receiver is done */
}

static void same_id_b(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 2));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG + 2, &r));
    send_marker(p, TAG_MARK);
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    double_vec_clear(&v);
    wait_fd(2, p);
}

static void same_id_server(peer *p)
{
    recv_marker(p, TAG_MARK); /* B's head and regions are here, not received yet */
    signal_fd(0);             /* A sends */
    recv_check(p, TAG + 1, 1);
    recv_check(p, TAG + 2, 2);
    signal_fd(1);
    signal_fd(2);
}

/* A third process forges messages on the private tags of a victim whose sender id it knows
 * (given by the bootstrap: the rank). Under protocol version 1 they were exactly the tags of the
 * victim's first objects. */
static void forger(peer *p)
{
    static unsigned char junk[OBJ_LEN * 4];
    memset(junk, 0xEE, sizeof(junk));
    for (uint64_t seq = 0; seq < 4; seq++)
        for (uint64_t idx = 0; idx < OBJ_ARRAYS; idx++)
            (void)raw_send(p, junk, sizeof(junk), PRIV((UINT64_C(7) << 20) | seq, idx), 0);
    send_marker(p, TAG_MARK);
    wait_fd(1, p); /* stay connected until the receiver is done */
    signal_fd(5);  /* this is client 2 of run_three */
    /* the forged rendezvous sends are never received: UCX 1.13 cannot destroy a worker with
     * such sends still on an endpoint, so this process just ends */
    _exit(0);
}

static void victim(peer *p)
{
    wait_fd(0, NULL);
    for (int i = 0; i < 2; i++) {
        double_vec v;
        CHECK_RC(double_vec_init(&v, OBJ_ARRAYS, OBJ_LEN, 3 + i));
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), TAG + 1, T_TIMEOUT_MS));
        double_vec_clear(&v);
    }
    wait_fd(2, p);
}

static void forged_server(peer *p)
{
    recv_marker(p, TAG_MARK); /* the forged messages are queued here */
    signal_fd(0);
    recv_check(p, TAG + 1, 3);
    recv_check(p, TAG + 1, 4);
    signal_fd(1);
    signal_fd(2);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    open_pipes();
    if (strcmp(c, "late_region") == 0)
        return run_pair(late_region_server, late_region_client_tail, NULL, NULL, 0);
    if (strcmp(c, "single_stall") == 0) {
        cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_PROTOCOL,
                                    .protocol = CDT_UCX_PROTOCOL_SINGLE};
        return run_pair(single_stall_server, single_stall_client, &wp, &wp, 0);
    }
    if (strcmp(c, "cancel_matched") == 0)
        return run_pair(cancel_matched_server, cancel_matched_client, NULL, NULL, 0);
    if (strcmp(c, "type_ref") == 0)
        return run_pair(type_ref_server, type_ref_client, NULL, NULL, 0);
    if (strcmp(c, "commit") == 0)
        return run_pair(commit_server, commit_client, NULL, NULL, 0);
    if (strcmp(c, "rest_timeout") == 0)
        return run_pair(rest_timeout_server, rest_timeout_client, NULL, NULL, 0);
    if (strcmp(c, "drain_expiry") == 0)
        return run_pair(drain_expiry_server, drain_expiry_client, NULL, NULL, 0);
    if (strcmp(c, "limits") == 0)
        return run_pair(limits_server, limits_client, NULL, NULL, 0);
    if (strcmp(c, "key_conflict") == 0)
        return run_pair(key_conflict_server, key_conflict_client, NULL, NULL, 0);
    cdt_ucx_worker_params id5 = {.field_mask = CDT_UCX_WORKER_PARAM_SENDER_ID, .sender_id = 5};
    cdt_ucx_worker_params id7 = {.field_mask = CDT_UCX_WORKER_PARAM_SENDER_ID, .sender_id = 7};
    if (strcmp(c, "same_id") == 0)
        return run_three(same_id_server, same_id_a, same_id_b, &id5, &id5);
    if (strcmp(c, "forged_key") == 0)
        return run_three(forged_server, victim, forger, &id7, NULL);
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
}
