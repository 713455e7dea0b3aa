/*
 * cases_lane_ring_first.c - a worker that takes heads from a ring polls it first
 * (docs/TRANSPORT.md §10.6, Polling): ucp_worker_progress, on the default the TCP interface's
 * epoll system call, runs in one progress call in CDT__UCX_RING_TURNS (16) while the rings are
 * polled in every one, and UCX's own traffic still moves: a third process without a lane
 * connects (wire-up over TCP) and ping-pongs over TCP while the ring is busy with a stream of
 * small objects.
 *
 * This program's ucp_worker_progress counts its calls and then calls UCX's (the library's calls
 * resolve to it: the executable, which exports it, comes first in the symbol lookup), so every
 * other case behaves as before.
 */
#include "cases.h"

#include <dlfcn.h>
#include <stdatomic.h>

static atomic_long ucx_progress_calls;

__attribute__((visibility("default"))) unsigned ucp_worker_progress(ucp_worker_h worker)
{
    typedef unsigned (*progress_fn)(ucp_worker_h);
    static progress_fn real;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "ucp_worker_progress");
    atomic_fetch_add(&ucx_progress_calls, 1);
    return real(worker);
}

static const cdt_ucx_worker_params rf_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
/* the third process: no lane, so every message of its endpoint is a TCP message */
static const cdt_ucx_worker_params rf_nolane_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE,
                                                   .lane = 0};

enum {
    RF_TURNS = 3200,  /* idle progress calls counted */
    RF_EVERY = 16,    /* CDT__UCX_RING_TURNS */
    RF_N = 2000,      /* small objects streamed through the ring */
    RF_PINGS = 100,   /* the third process's round trips over TCP */
    RF_VALUES = 1024, /* 8 KiB: a head with its whole stream */
    RF_BASE = 5000,
    RF_PING = 20000,
    RF_PONG = 30000
};
static int rf_go[2] = {-1, -1}, rf_pid = -1;

static bool rf_heads(peer *p)
{
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    return strstr(t, "lane=memfd+heads") != NULL;
}

/* the third process: connects when the server says so, then RF_PINGS round trips over TCP */
static void rf_third_side(uint16_t port, int go_fd)
{
    close(rf_go[1]);
    char go;
    CHECK(read(go_fd, &go, 1) == 1);
    peer p = {.is_server = 0, .port = port};
    peer_open(&p, &rf_nolane_wp);
    CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
    for (int i = 0; i < RF_PINGS; i++) {
        int64_t v = i;
        CHECK_RC(cdt_ucx_send(p.ep, &v, 1, CDT_INT64, RF_PING + (cdt_ucx_tag)i, T_TIMEOUT_MS));
        CHECK_RC(cdt_ucx_recv(p.w, &v, 1, CDT_INT64, RF_PONG + (cdt_ucx_tag)i,
                              CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
        CHECK(v == -i);
    }
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p.ep, t, sizeof(t)));
    fprintf(stderr, "[%d] third process: %d round trips, transports: %s\n", (int)getpid(), RF_PINGS,
            t);
    CHECK(strstr(t, "+heads") == NULL); /* its objects went over TCP */
    peer_close(&p);
}

/* forked between the server and the client (harness_before_client) */
static void rf_third(uint16_t port)
{
    rf_pid = harness_fork(rf_third_side, port, rf_go[0]);
    close(rf_go[0]);
}

static void rf_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    lane_wait_heads(p);
    CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* the server takes heads from the ring now */
    CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* its idle calls were counted */
    int64_t *v = malloc(RF_VALUES * sizeof(int64_t));
    CHECK(v != NULL);
    for (int i = 0; i < RF_N; i++) { /* one at a time: the ring busy, never full */
        lh_fill(v, i, RF_VALUES);
        CHECK_RC(
            cdt_ucx_send(p->ep, v, RF_VALUES, CDT_INT64, RF_BASE + (cdt_ucx_tag)i, T_TIMEOUT_MS));
    }
    free(v);
    CHECK(rf_heads(p));
    CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 4, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* all arrived */
}

static void rf_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    lane_wait_heads(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    for (int i = 0; i < 64; i++) /* the ring is this worker's from here on */
        cdt_ucx_worker_progress(p->w);

    /* idle: a receive posted, nothing sent. UCX once in RF_EVERY calls, and at least that often
     * (a call after one that handled events runs it again: a keepalive may add a few) */
    cdt_ucx_request r;
    int64_t first = 0;
    CHECK_RC(cdt_ucx_irecv(p->w, &first, 1, CDT_INT64, 99, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    long before = atomic_load(&ucx_progress_calls);
    for (int i = 0; i < RF_TURNS; i++)
        cdt_ucx_worker_progress(p->w);
    long calls = atomic_load(&ucx_progress_calls) - before;
    fprintf(stderr, "[%d] ucp_worker_progress calls in %d idle progress calls: %ld\n",
            (int)getpid(), RF_TURNS, calls);
    CHECK(calls >= RF_TURNS / RF_EVERY);     /* UCX is never starved */
    CHECK(calls <= 2 * RF_TURNS / RF_EVERY); /* every call: RF_TURNS */
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 3, T_TIMEOUT_MS));

    /* busy: the client streams RF_N small objects through the ring while the third process
     * connects and makes RF_PINGS round trips over TCP */
    CHECK(write(rf_go[1], "g", 1) == 1);
    cdt_ucx_ep third;
    CHECK_RC(cdt_ucx_listener_accept(p->l, T_TIMEOUT_MS, &third));
    int64_t *v = malloc(RF_VALUES * sizeof(int64_t));
    CHECK(v != NULL);
    int64_t ping = 0, pong = 0;
    cdt_ucx_request rv = NULL, rp = NULL, sp = NULL;
    int got = 0, pings = 0;
    long calls_before = atomic_load(&ucx_progress_calls);
    for (int64_t end = now_ms() + T_TIMEOUT_MS; got < RF_N || pings < RF_PINGS;) {
        CHECK(now_ms() < end);
        if (rv == NULL && got < RF_N)
            CHECK_RC(cdt_ucx_irecv(p->w, v, RF_VALUES, CDT_INT64, RF_BASE + (cdt_ucx_tag)got,
                                   CDT_UCX_TAG_MASK_FULL, NULL, &rv));
        if (rp == NULL && sp == NULL && pings < RF_PINGS)
            CHECK_RC(cdt_ucx_irecv(p->w, &ping, 1, CDT_INT64, RF_PING + (cdt_ucx_tag)pings,
                                   CDT_UCX_TAG_MASK_FULL, NULL, &rp));
        if (rv != NULL) {
            int rc = cdt_ucx_request_test(rv);
            if (rc != CDT_INPROGRESS) {
                CHECK_RC(rc);
                CHECK_RC(cdt_ucx_request_free(rv));
                rv = NULL;
                CHECK(lh_check(v, got, RF_VALUES));
                got++;
            }
        }
        if (rp != NULL) {
            int rc = cdt_ucx_request_test(rp);
            if (rc != CDT_INPROGRESS) {
                CHECK_RC(rc);
                CHECK_RC(cdt_ucx_request_free(rp));
                rp = NULL;
                CHECK(ping == pings);
                pong = -ping;
                CHECK_RC(
                    cdt_ucx_isend(third, &pong, 1, CDT_INT64, RF_PONG + (cdt_ucx_tag)pings, &sp));
            }
        }
        if (sp != NULL) {
            int rc = cdt_ucx_request_test(sp);
            if (rc != CDT_INPROGRESS) {
                CHECK_RC(rc);
                CHECK_RC(cdt_ucx_request_free(sp));
                sp = NULL;
                pings++;
            }
        }
    }
    fprintf(stderr,
            "[%d] %d objects through the ring, %d round trips over TCP beside them, "
            "%ld ucp_worker_progress calls\n",
            (int)getpid(), got, pings, atomic_load(&ucx_progress_calls) - calls_before);
    free(v);
    CHECK(rf_heads(p));
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 4, T_TIMEOUT_MS));
    CHECK(cdt_ucx_request_test(r) == CDT_INPROGRESS); /* tag 99: never sent */
    CHECK_RC(cdt_ucx_request_cancel(r));
    (void)cdt_ucx_request_wait(r, T_TIMEOUT_MS);
    CHECK_RC(cdt_ucx_request_free(r));
    cdt_ucx_ep_close(third, 2000);
}

int lane_ring_first_case(void)
{
    CHECK(pipe(rf_go) == 0);
    harness_before_client = rf_third;
    int rc = run_pair(rf_server, rf_client, &rf_wp, &rf_wp, 0);
    return harness_reap(rf_pid, "third process", 0) ? rc : 1;
}
