/*
 * test_sleeper.c - an application that sleeps on the worker's event fd (cdt_ucx_worker_fd)
 * must be woken for everything that ends a request it waits on, not only for messages:
 *
 *   cancel    a receive that will never match, canceled from another thread while this one
 *             sleeps (one process, no peer: nothing else can make the fd readable);
 *   deadline  a receive whose head came and whose rest never does (a hand-written head from a
 *             peer that then stops progressing): its rest_timeout_ms passes with nothing on the
 *             wire, and the worker's timer must make the fd readable.
 *
 * The loop is the one cdt_ucx.h describes: progress until it returns 0, test, arm, poll. A
 * missed wakeup is detected by a bounded poll: the fd must become readable within
 * SLEEP_BOUND_MS, twenty times the deadline of the case (no other timing is checked). Runs with
 * CDT_UCX_WAKEUP=1 (ctest sets it), and without keepalive traffic (UCX_KEEPALIVE_INTERVAL=inf),
 * which would otherwise wake a sleeper every second and hide a missed wakeup.
 */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

#define SLEEP_BOUND_MS 2000
#define REST_TIMEOUT_MS 100
#define TAG 7

typedef void(armed_fn)(void *arg);

/* The application's loop around one request; armed(arg) runs after each successful arm, just
 * before the sleep. Returns the request's final status. */
static int sleep_until_done(cdt_ucx_worker w, cdt_ucx_request r, armed_fn *armed, void *arg)
{
    int fd = -1;
    CHECK_RC(cdt_ucx_worker_fd(w, &fd));
    for (;;) {
        while (cdt_ucx_worker_progress(w) > 0) {
        }
        int rc = cdt_ucx_request_test(r);
        if (rc != CDT_INPROGRESS)
            return rc;
        rc = cdt_ucx_worker_arm(w);
        CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_BUSY);
        if (rc == CDT_ERR_BUSY)
            continue;
        if (armed != NULL)
            armed(arg);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n;
        while ((n = poll(&pfd, 1, SLEEP_BOUND_MS)) < 0 && errno == EINTR) {
        }
        CHECK(n >= 0);
        if (n == 0) {
            fprintf(stderr, "missed wakeup: the worker's fd stayed unreadable for %d ms\n",
                    SLEEP_BOUND_MS);
            _exit(1);
        }
    }
}

/* ------------------------------------------------ cancel from another thread ------------ */

typedef struct canceler {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool go;
    cdt_ucx_request r;
} canceler;

static void *cancel_main(void *arg)
{
    canceler *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->go)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    CHECK_RC(cdt_ucx_request_cancel(c->r));
    return NULL;
}

/* the first time the sleeper armed: the other thread cancels (while the sleeper sleeps or is
 * about to: either way the fd must be readable once the cancel returned) */
static void start_cancel(void *arg)
{
    canceler *c = arg;
    pthread_mutex_lock(&c->lock);
    c->go = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static int cancel_case(void)
{
    alarm(60);
    cdt_ucx_context ctx;
    cdt_ucx_worker w;
    cdt_ucx_context_params cp = {.field_mask = CDT_UCX_CONTEXT_PARAM_WAKEUP, .wakeup = 1};
    CHECK_RC(cdt_ucx_context_create(&cp, &ctx));
    CHECK_RC(cdt_ucx_worker_create(ctx, NULL, &w));
    int32_t v = 0;
    canceler c = {.go = false};
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.cond, NULL);
    CHECK_RC(cdt_ucx_irecv(w, &v, 1, CDT_INT32, TAG, CDT_UCX_TAG_MASK_FULL, NULL, &c.r));
    CHECK(pthread_create(&c.thread, NULL, cancel_main, &c) == 0);
    int rc = sleep_until_done(w, c.r, start_cancel, &c);
    start_cancel(&c); /* in case the request ended before the first sleep (it cannot) */
    pthread_join(c.thread, NULL);
    CHECK(rc == CDT_ERR_CANCELED);
    CHECK_RC(cdt_ucx_request_free(c.r));
    pthread_cond_destroy(&c.cond);
    pthread_mutex_destroy(&c.lock);
    cdt_ucx_worker_destroy(w);
    cdt_ucx_context_destroy(ctx);
    return 0;
}

/* ------------------------------------------------ a deadline with nothing arriving -------- */

static int server_done[2]; /* the server tells the client it has its result */

static void le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* prefix (version 6, split mode) + FORMAT.md header of a frame of one byte region of `len`
 * bytes sent on its own (its length over the threshold) and no packed stream: a head whose
 * region the receiver then waits for (the layout test_safety.c writes too) */
static size_t make_head(unsigned char *out, uint64_t key, uint64_t len)
{
    memset(out, 0, 40 + 64);
    memcpy(out, "CDTU\x07\0\0\0", 8);
    le64(out + 8, key);
    le64(out + 16, 1024); /* zcopy threshold */
    le64(out + 24, 0);    /* no tail */
    le64(out + 32, 0x5e); /* sender: any id but 0 */
    unsigned char *h = out + 40;
    memcpy(h, "CDTF\x01\0\0\0", 8);
    le64(h + 8, 64);        /* header_size: 48 + 16 per region */
    le64(h + 16, 0);        /* packed_size */
    le64(h + 24, 1);        /* region_count */
    le64(h + 32, 64 + len); /* frame_size */
    le64(h + 48, len);
    h[56] = 1; /* kind byte */
    return 40 + 64;
}

static void deadline_client(peer *p)
{
    unsigned char head[104];
    size_t n = make_head(head, 0x5eef, 65536);
    ucp_request_param_t prm = {.op_attr_mask = 0};
    void *q = ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), head, n, TAG, &prm);
    CHECK(!UCS_PTR_IS_ERR(q));
    while (q != NULL && ucp_request_check_status(q) == UCS_INPROGRESS)
        cdt_ucx_worker_progress(p->w);
    if (q != NULL)
        ucp_request_free(q);
    /* then nothing, not even progress (no keepalive either), until the server has its result
     * (or has failed: the server decides the case; the bound only ends this side) */
    struct pollfd pfd = {.fd = server_done[0], .events = POLLIN};
    poll(&pfd, 1, 30000);
}

static void deadline_server(peer *p)
{
    unsigned char *buf = calloc(1, 65536);
    CHECK(buf != NULL);
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = REST_TIMEOUT_MS};
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, buf, 65536, CDT_BYTE, TAG, CDT_UCX_TAG_MASK_FULL, &rp, &r));
    int rc = sleep_until_done(p->w, r, NULL, NULL);
    fprintf(stderr, "head without its region, asleep on the fd: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_TIMEOUT);
    CHECK_RC(cdt_ucx_request_free(r));
    free(buf);
    CHECK(write(server_done[1], "d", 1) == 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s cancel|deadline\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "cancel") == 0)
        return cancel_case();
    if (strcmp(argv[1], "deadline") == 0) {
        if (getenv("CDT_UCX_WAKEUP") == NULL) {
            printf("skipped: runs with CDT_UCX_WAKEUP=1\n");
            return 77;
        }
        CHECK(pipe(server_done) == 0);
        return run_pair(deadline_server, deadline_client, NULL, NULL, 0);
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
