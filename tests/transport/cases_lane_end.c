/*
 * cases_lane_end.c - an endpoint that ends inside one of its lanes' progress calls: the switch
 * to the head ring, the head ring's progress, the producer's pump, the consumer's pump. UCX can
 * call an endpoint's error handler from within a call libcdt makes there (UCX 1.22 did inside
 * ucp_tag_send_nbx while a peer died), which frees the endpoint's lanes while the call still
 * holds them. That depends on timing; the library's test hook CDT_UCX_TEST_END=<point> ends the
 * endpoint at that point on its first pass instead (docs/TESTING.md, Test hooks). The side whose
 * endpoint ended must see it failed with CDT_ERR_PEER (sends refused, the object in flight
 * complete or failed with CDT_ERR_PEER), hold no lane mapping or descriptor, and close it; and,
 * in the AddressSanitizer build, no call may read the freed lanes afterwards.
 */
#include "cases.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

static const cdt_ucx_worker_params end_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

enum { LE_LARGE = 1 << 17, LE_SMALL_N = 4, LE_HELD_N = 200, LE_HELD_VALUES = 512 };

/* held: the client's word that its heads are posted (the server receives none before) */
static int le_posted[2] = {-1, -1};

static const char *le_point; /* the hook's point, set in the side whose endpoint ends */

static void le_fill(int64_t *v, cdt_count n, int64_t seed)
{
    for (cdt_count k = 0; k < n; k++)
        v[k] = seed * 1000003 + k;
}

static int le_check(const int64_t *v, cdt_count n, int64_t seed)
{
    for (cdt_count k = 0; k < n; k++)
        if (v[k] != seed * 1000003 + k)
            return 0;
    return 1;
}

/* a receive that may meet the end: whole and right, or failed with the endpoint (or, on the
 * side whose peer ended, not at all within `ms`) */
static void le_recv(peer *p, cdt_count n, cdt_ucx_tag tag, int ms)
{
    int64_t *v = calloc((size_t)n, sizeof(int64_t));
    CHECK(v != NULL);
    int rc = cdt_ucx_recv(p->w, v, n, CDT_INT64, tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL, ms);
    fprintf(stderr, "[%d] receive %llu: %s\n", (int)getpid(), (unsigned long long)tag,
            cdt_err_name(rc));
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT);
    if (rc == CDT_SUCCESS)
        CHECK(le_check(v, n, (int64_t)tag));
    free(v);
}

/* a send of n values under tag that may meet the end: completes, or fails with the endpoint */
static void le_send(peer *p, cdt_count n, cdt_ucx_tag tag)
{
    int64_t *v = malloc((size_t)n * sizeof(int64_t));
    CHECK(v != NULL);
    le_fill(v, n, (int64_t)tag);
    cdt_ucx_request q = NULL;
    int rc = cdt_ucx_isend(p->ep, v, n, CDT_INT64, tag, &q);
    if (rc == CDT_SUCCESS) {
        rc = cdt_ucx_request_wait(q, T_TIMEOUT_MS);
        CHECK_RC(cdt_ucx_request_free(q));
    }
    fprintf(stderr, "[%d] send %llu: %s\n", (int)getpid(), (unsigned long long)tag,
            cdt_err_name(rc));
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_PEER);
    free(v);
}

/* the side whose endpoint the hook ended: the endpoint reports CDT_ERR_PEER (10 s at most:
 * progress reaches the point), refuses sends, and its lanes are gone; then it is closed */
static void le_ended(peer *p)
{
    char t[512];
    int rc = CDT_SUCCESS;
    for (int64_t end = now_ms() + 10000; rc == CDT_SUCCESS && now_ms() < end;) {
        cdt_ucx_worker_progress(p->w);
        rc = cdt_ucx_ep_transports(p->ep, t, sizeof(t));
    }
    if (rc != CDT_ERR_PEER)
        fprintf(stderr, "[%d] the endpoint did not end at %s: %s\n", (int)getpid(), le_point,
                cdt_err_name(rc));
    CHECK(rc == CDT_ERR_PEER);
    int64_t one = 1;
    CHECK(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 5, T_TIMEOUT_MS) == CDT_ERR_PEER);
    progress_for(p, 50);
    CHECK(lane_maps() == 0); /* both segments unmapped, their descriptors closed */
    CHECK(lane_fds() == 0);
    cdt_ucx_ep_close(p->ep, 2000);
    p->ep = NULL;
}

/* both sides: the client's first object offers its lane; each side waits until its heads go
 * through the ring (the client's lane attached by the server, the switch sent and matched) */
static void le_client_start(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    if (strcmp(le_point, "switch") != 0)
        lane_wait_heads(p);
}

static void le_server_start(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    if (strcmp(le_point, "switch") != 0)
        lane_wait_heads(p);
}

/* ---- switch: the client's endpoint ends as its switch to the ring is sent ---- */

static void switch_client(peer *p)
{
    le_client_start(p);
    le_ended(p);
}

static void switch_server(peer *p)
{
    le_server_start(p);
}

/* ---- heads: the server's endpoint ends as it hands the first ring record off ---- */

static void heads_client(peer *p)
{
    le_client_start(p);
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int i = 0; i < LE_SMALL_N; i++)
        le_send(p, 1 + i, 100 + (cdt_ucx_tag)i); /* through the ring */
}

static void heads_server(peer *p)
{
    le_server_start(p);
    int64_t one = 2;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS)); /* the ring is read */
    le_recv(p, 1, 100, T_TIMEOUT_MS);
    le_ended(p);
}

/* ---- held: the client's endpoint ends as a head held for its full ring is written ---- */

static void held_client(peer *p)
{
    le_client_start(p);
    /* 200 heads of 4 KiB against a 256 KiB ring the server does not read yet: most are held */
    static int64_t v[LE_HELD_N][LE_HELD_VALUES];
    cdt_ucx_request q[LE_HELD_N];
    for (int i = 0; i < LE_HELD_N; i++) {
        le_fill(v[i], LE_HELD_VALUES, 200 + i);
        CHECK_RC(
            cdt_ucx_isend(p->ep, v[i], LE_HELD_VALUES, CDT_INT64, 200 + (cdt_ucx_tag)i, &q[i]));
    }
    CHECK(write(le_posted[1], "p", 1) == 1);
    le_ended(p); /* the first held head written as the server reads ends the endpoint */
    int ok = 0, peer_failed = 0;
    for (int i = 0; i < LE_HELD_N; i++) {
        int rc = cdt_ucx_request_wait(q[i], T_TIMEOUT_MS);
        CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_PEER); /* written, or held when it ended */
        ok += rc == CDT_SUCCESS;
        peer_failed += rc == CDT_ERR_PEER;
        CHECK_RC(cdt_ucx_request_free(q[i]));
    }
    fprintf(stderr, "[%d] held heads: %d sent, %d failed with the endpoint\n", (int)getpid(), ok,
            peer_failed);
    CHECK(peer_failed > 0);
}

static void held_server(peer *p)
{
    le_server_start(p);
    struct pollfd pfd = {.fd = le_posted[0], .events = POLLIN};
    CHECK(poll(&pfd, 1, T_TIMEOUT_MS) == 1); /* no progress meanwhile: the ring fills */
    int64_t v[LE_HELD_VALUES];
    for (int i = 0; i < LE_HELD_N; i++) { /* until the client's endpoint ended */
        int rc = cdt_ucx_recv(p->w, v, LE_HELD_VALUES, CDT_INT64, 200 + (cdt_ucx_tag)i,
                              CDT_UCX_TAG_MASK_FULL, NULL, NULL, 2000);
        if (rc != CDT_SUCCESS)
            break;
        CHECK(le_check(v, LE_HELD_VALUES, 200 + i));
    }
}

/* ---- pump_send: the client's endpoint ends as its object's stream went whole ---- */

static void pump_send_client(peer *p)
{
    le_client_start(p);
    le_send(p, LE_LARGE, 10); /* through the lane's data ring */
    le_ended(p);
}

static void pump_send_server(peer *p)
{
    le_server_start(p);
    le_recv(p, LE_LARGE, 10, 10000);
}

/* ---- pump_recv: the server's endpoint ends as its object's stream was consumed ---- */

static void pump_recv_client(peer *p)
{
    le_client_start(p);
    le_send(p, LE_LARGE, 10);
}

static void pump_recv_server(peer *p)
{
    le_server_start(p);
    le_recv(p, LE_LARGE, 10, T_TIMEOUT_MS);
    le_ended(p);
}

static void le_hook_client(uint16_t port)
{
    (void)port;
    CHECK(setenv("CDT_UCX_TEST_END", le_point, 1) == 0); /* the client's worker only */
}

static void le_hook_off(uint16_t port)
{
    (void)port;
    CHECK(unsetenv("CDT_UCX_TEST_END") == 0); /* the server's worker only */
}

/* the hook's setting is checked as the library's others: a misspelt one fails the worker */
static int le_settings(void)
{
    static const struct {
        const char *value;
        int rc;
    } settings[] = {{"switch", CDT_SUCCESS},
                    {"pump_recv:3", CDT_SUCCESS},
                    {"", CDT_SUCCESS},
                    {"pump", CDT_ERR_INVALID_ARG},
                    {"switch:0", CDT_ERR_INVALID_ARG},
                    {"heads:", CDT_ERR_INVALID_ARG},
                    {"heads:2x", CDT_ERR_INVALID_ARG},
                    {"pump_send_", CDT_ERR_INVALID_ARG}};
    cdt_ucx_context ctx;
    CHECK_RC(cdt_ucx_context_create(NULL, &ctx));
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        CHECK(setenv("CDT_UCX_TEST_END", settings[i].value, 1) == 0);
        cdt_ucx_worker w = NULL;
        int rc = cdt_ucx_worker_create(ctx, NULL, &w);
        if (rc != settings[i].rc)
            fprintf(stderr, "CDT_UCX_TEST_END=%s: %s\n", settings[i].value, cdt_err_name(rc));
        CHECK(rc == settings[i].rc);
        if (w != NULL)
            cdt_ucx_worker_destroy(w);
    }
    CHECK(unsetenv("CDT_UCX_TEST_END") == 0);
    cdt_ucx_context_destroy(ctx);
    return 0;
}

int lane_end_case(const char *which)
{
    if (strcmp(which, "settings") == 0)
        return le_settings();
    static const struct {
        const char *point;
        side_fn *server, *client;
        bool in_server;
    } cases[] = {{"switch", switch_server, switch_client, false},
                 {"heads", heads_server, heads_client, true},
                 {"heads_held", held_server, held_client, false},
                 {"pump_send", pump_send_server, pump_send_client, false},
                 {"pump_recv", pump_recv_server, pump_recv_client, true}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (strcmp(which, cases[i].point) != 0)
            continue;
        le_point = strcmp(cases[i].point, "heads_held") == 0 ? "heads" : cases[i].point;
        CHECK(pipe(le_posted) == 0);
        if (cases[i].in_server) {
            CHECK(setenv("CDT_UCX_TEST_END", le_point, 1) == 0);
            harness_before_client = le_hook_off;
        } else {
            CHECK(unsetenv("CDT_UCX_TEST_END") == 0);
            harness_before_client = le_hook_client;
        }
        return run_pair(cases[i].server, cases[i].client, &end_wp, &end_wp, 0);
    }
    fprintf(stderr, "lane_end: no point %s\n", which);
    return 2;
}
