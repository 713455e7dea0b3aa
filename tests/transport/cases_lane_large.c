/*
 * cases_lane_large.c - whole 32-64 KiB objects as large records of the head ring
 * (docs/TRANSPORT.md §10.6, Large records): no grant, no data ring, no commit. Small objects,
 * large records (40-64 KiB) and LANE objects (100 KiB, 256 KiB) interleaved on one endpoint,
 * received in batches by receives posted in another order than the objects were sent (the odd
 * ones by their own tags, last first; the even ones by wildcard receives, which must get them in
 * send order), half of the batches posted before the objects come and half after (the records
 * then wait parked): each object byte for byte, and the sender's count of LANE objects is the
 * 100-256 KiB ones and at most half the records (a record that finds the ring full goes the
 * LANE way). Then a large record over the receive's max_frame_bytes: CDT_ERR_LIMIT, the
 * receive's memory untouched, and the next object of the endpoint arrives.
 *
 * Large records are off by default: transport.lane_large runs with CDT_UCX_LANE_LARGE=on.
 * With CDT_UCX_LANE_LARGE=off in the environment (transport.lane_large_off) the receiver does
 * not announce large records while its sender would write them (its own setting on): the same
 * objects, and every 40-64 KiB object goes the LANE way, as toward an earlier release.
 */
#include "cases.h"

#include <stdlib.h>
#include <string.h>

static const cdt_ucx_worker_params large_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

/* a batch of 12 objects, sizes (int64 values) by index mod 6 */
enum { LL_BATCH = 12, LL_BATCHES = 20, LL_N = LL_BATCH * LL_BATCHES, LL_TAG = 1000 };
enum { LL_LIMIT_TAG = 5000, LL_AFTER_TAG = 5001, LL_MAX = 32768 };

static cdt_count ll_count(int i)
{
    static const cdt_count sizes[6] = {8, 5120, 12800, 6144, 8192, 32768};
    return sizes[i % 6]; /* 64 B, 40 KiB, 100 KiB, 48 KiB, 64 KiB, 256 KiB */
}

/* a large record where the consumer takes them: a whole head above 32 KiB, within 72 KiB */
static bool ll_record(int i)
{
    cdt_count bytes = ll_count(i) * 8;
    return bytes > 32768 && bytes <= 65536;
}

/* whether the receiver (the consumer) takes large records: CDT_UCX_LANE_LARGE as the case
 * started; the sender runs with it on either way (client_large_on) */
static bool consumer_large = true;

static bool ll_large_on(void)
{
    return consumer_large;
}

static void client_large_on(uint16_t port)
{
    (void)port;
    setenv("CDT_UCX_LANE_LARGE", "on", 1); /* a producer that would write them */
}

static void large_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    lane_wait_heads(p);
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    int64_t *buf[LL_BATCH];
    for (int k = 0; k < LL_BATCH; k++) {
        buf[k] = malloc(LL_MAX * sizeof(int64_t));
        CHECK(buf[k] != NULL);
    }
    uint64_t lane0 = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
    int want_lane = 0, records = 0;
    for (int b = 0; b < LL_BATCHES; b++) {
        cdt_ucx_request q[LL_BATCH];
        for (int k = 0; k < LL_BATCH; k++) {
            int i = b * LL_BATCH + k;
            lh_fill(buf[k], i, ll_count(i));
            CHECK_RC(cdt_ucx_isend(p->ep, buf[k], ll_count(i), CDT_INT64, LL_TAG + (cdt_ucx_tag)i,
                                   &q[k]));
            if (ll_count(i) * 8 > 32768 && (!ll_record(i) || !ll_large_on()))
                want_lane++;
            records += ll_record(i) && ll_large_on();
        }
        for (int k = 0; k < LL_BATCH; k++) {
            CHECK_RC(cdt_ucx_request_wait(q[k], T_TIMEOUT_MS));
            CHECK_RC(cdt_ucx_request_free(q[k]));
        }
    }
    uint64_t lane_sent = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - lane0;
    fprintf(stderr, "[%d] large records %s: %llu of %d objects sent the LANE way (want %d)\n",
            (int)getpid(), ll_large_on() ? "on" : "off", (unsigned long long)lane_sent, LL_N,
            want_lane);
    /* a record that finds the ring full (the receiver away: a batch is 300 KiB of records
     * against a 256 KiB ring) goes the LANE way, so some may; most must not */
    CHECK(lane_sent >= (uint64_t)want_lane &&
          lane_sent - (uint64_t)want_lane <= (uint64_t)records / 2);
    /* over the receiver's limit, then the endpoint's next object */
    lh_fill(buf[0], 7, 6144);
    CHECK_RC(cdt_ucx_send(p->ep, buf[0], 6144, CDT_INT64, LL_LIMIT_TAG, T_TIMEOUT_MS));
    lh_fill(buf[1], 8, 6144);
    CHECK_RC(cdt_ucx_send(p->ep, buf[1], 6144, CDT_INT64, LL_AFTER_TAG, T_TIMEOUT_MS));
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int k = 0; k < LL_BATCH; k++)
        free(buf[k]);
}

static void large_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    lane_wait_heads(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    int64_t *buf[LL_BATCH];
    for (int k = 0; k < LL_BATCH; k++) {
        buf[k] = malloc(LL_MAX * sizeof(int64_t));
        CHECK(buf[k] != NULL);
    }
    for (int b = 0; b < LL_BATCHES; b++) {
        const int base = b * LL_BATCH;
        if (b % 2 == 1) /* the batch arrives before its receives: its records wait parked */
            progress_for(p, 30);
        cdt_ucx_request q[LL_BATCH];
        int got[LL_BATCH]; /* the object each receive must get */
        int n = 0;
        for (int k = LL_BATCH - 1; k >= 1; k -= 2) { /* the odd ones by tag, last first */
            int i = base + k;
            memset(buf[n], 0, LL_MAX * sizeof(int64_t));
            CHECK_RC(cdt_ucx_irecv(p->w, buf[n], ll_count(i), CDT_INT64, LL_TAG + (cdt_ucx_tag)i,
                                   CDT_UCX_TAG_MASK_FULL, NULL, &q[n]));
            got[n++] = i;
        }
        for (int k = 0; k < LL_BATCH; k += 2) { /* the even ones by wildcards, in send order */
            int i = base + k;
            memset(buf[n], 0, LL_MAX * sizeof(int64_t));
            CHECK_RC(cdt_ucx_irecv(p->w, buf[n], ll_count(i), CDT_INT64, 0, 0, NULL, &q[n]));
            got[n++] = i;
        }
        for (int k = 0; k < n; k++) {
            CHECK_RC(cdt_ucx_request_wait(q[k], T_TIMEOUT_MS));
            cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_TAG};
            CHECK_RC(cdt_ucx_request_recv_info(q[k], &info));
            CHECK(info.tag == LL_TAG + (cdt_ucx_tag)got[k]);
            CHECK(lh_check(buf[k], got[k], ll_count(got[k])));
            CHECK_RC(cdt_ucx_request_free(q[k]));
        }
    }
    /* a large record over max_frame_bytes: refused before the receive writes or sizes anything */
    for (cdt_count k = 0; k < 6144; k++)
        buf[0][k] = -5;
    cdt_ucx_recv_params lim = {.field_mask = CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES,
                               .max_frame_bytes = 32768};
    CHECK(cdt_ucx_recv(p->w, buf[0], 6144, CDT_INT64, LL_LIMIT_TAG, CDT_UCX_TAG_MASK_FULL, &lim,
                       NULL, T_TIMEOUT_MS) == CDT_ERR_LIMIT);
    for (cdt_count k = 0; k < 6144; k++)
        CHECK(buf[0][k] == -5);
    memset(buf[1], 0, 6144 * sizeof(int64_t));
    CHECK_RC(cdt_ucx_recv(p->w, buf[1], 6144, CDT_INT64, LL_AFTER_TAG, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    CHECK(lh_check(buf[1], 8, 6144));
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 3, T_TIMEOUT_MS));
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    CHECK(strstr(t, "lane=memfd+heads") != NULL);
    for (int k = 0; k < LL_BATCH; k++)
        free(buf[k]);
}

/* a misspelt CDT_UCX_LANE_LARGE fails the worker's creation, as the lane's other settings do;
 * on, off and empty (the default) make one */
static void ll_setting_checked(void)
{
    char *saved = getenv("CDT_UCX_LANE_LARGE") ? strdup(getenv("CDT_UCX_LANE_LARGE")) : NULL;
    cdt_ucx_context c = NULL;
    CHECK_RC(cdt_ucx_context_create(NULL, &c));
    static const char *const bad[] = {"yes", "0", "On", "offf"}, *const good[] = {"on", "off", ""};
    cdt_ucx_worker w = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("CDT_UCX_LANE_LARGE", bad[i], 1);
        CHECK(cdt_ucx_worker_create(c, &large_wp, &w) == CDT_ERR_INVALID_ARG && w == NULL);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("CDT_UCX_LANE_LARGE", good[i], 1);
        CHECK_RC(cdt_ucx_worker_create(c, &large_wp, &w));
        cdt_ucx_worker_destroy(w);
        w = NULL;
    }
    cdt_ucx_context_destroy(c);
    if (saved != NULL)
        setenv("CDT_UCX_LANE_LARGE", saved, 1);
    else
        unsetenv("CDT_UCX_LANE_LARGE");
    free(saved);
}

int lane_large_case(void)
{
    ll_setting_checked();
    const char *e = getenv("CDT_UCX_LANE_LARGE");
    consumer_large = e != NULL && strcmp(e, "on") == 0; /* off by default */
    harness_before_client = client_large_on;
    return run_pair(large_server, large_client, &large_wp, &large_wp, 0);
}
