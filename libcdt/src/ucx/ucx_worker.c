/*
 * ucx_worker.c - workers: creation (protocol, thresholds, sender id, key secret), progress,
 * addresses, and destruction, which tears down every other part of the transport in order
 * (drains, listeners, endpoints, the UCX worker, then the memory UCX no longer holds). The
 * top of the transport: it may call any other file here; none calls it.
 */
#include "ucx_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* how long a worker's destroy waits for the flushes of parked endpoints (ucx_ep_park.c) */
#define PARKED_FLUSH_WAIT_MS 5000

/* random bytes from the kernel; a mix of clocks and ids when it has none to give */
static void random_bytes(void *out, size_t n)
{
    if (getrandom(out, n, GRND_NONBLOCK) == (ssize_t)n)
        return;
    static uint64_t counter;
    unsigned char *p = out;
    for (size_t i = 0; i < n; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^
                     (uint64_t)(uintptr_t)out ^ ++counter * 0xbf58476d1ce4e5b9ull;
        p[i] = (unsigned char)(v >> 29);
    }
}

static uint32_t random_sender_id(void)
{
    uint32_t v = 0;
    random_bytes(&v, sizeof(v));
    return v & ((UINT32_C(1) << CDT_UCX_SENDER_ID_BITS) - 1);
}

int cdt_ucx_worker_create(cdt_ucx_context context, const cdt_ucx_worker_params *params,
                          cdt_ucx_worker *worker)
{
    if (context == NULL || worker == NULL)
        return CDT_ERR_INVALID_ARG;
    uint64_t fm = params != NULL ? params->field_mask : 0;
    if (fm & ~(uint64_t)(CDT_UCX_WORKER_PARAM_SENDER_ID | CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD |
                         CDT_UCX_WORKER_PARAM_BUFFER_CACHE | CDT_UCX_WORKER_PARAM_PROTOCOL |
                         CDT_UCX_WORKER_PARAM_FIFO_STALL_TIMEOUT | CDT_UCX_WORKER_PARAM_LANE))
        return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
    uint32_t sender_id = random_sender_id();
    cdt_count threshold = CDT__UCX_DEFAULT_ZCOPY_THRESHOLD;
    if (fm & CDT_UCX_WORKER_PARAM_SENDER_ID) {
        if (params->sender_id >= (UINT32_C(1) << CDT_UCX_SENDER_ID_BITS))
            return CDT_ERR_INVALID_ARG;
        sender_id = params->sender_id;
    }
    if (fm & CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD) {
        if (params->zcopy_threshold < 1)
            return CDT_ERR_INVALID_ARG;
        threshold = params->zcopy_threshold;
    }
    size_t cache_limit = CDT__UCX_DEFAULT_CACHE_LIMIT;
    if (fm & CDT_UCX_WORKER_PARAM_BUFFER_CACHE)
        cache_limit = params->buffer_cache_bytes;
    cdt_ucx_protocol protocol = CDT_UCX_PROTOCOL_AUTO;
    const char *env = getenv("CDT_UCX_PROTOCOL");
    if (fm & CDT_UCX_WORKER_PARAM_PROTOCOL) {
        protocol = params->protocol;
        if (protocol != CDT_UCX_PROTOCOL_AUTO && protocol != CDT_UCX_PROTOCOL_SPLIT &&
            protocol != CDT_UCX_PROTOCOL_SINGLE && protocol != CDT_UCX_PROTOCOL_AUTO_SINGLE)
            return CDT_ERR_INVALID_ARG;
    } else if (env != NULL && *env != '\0') {
        if (strcmp(env, "auto") == 0)
            protocol = CDT_UCX_PROTOCOL_AUTO;
        else if (strcmp(env, "split") == 0)
            protocol = CDT_UCX_PROTOCOL_SPLIT;
        else if (strcmp(env, "single") == 0)
            protocol = CDT_UCX_PROTOCOL_SINGLE;
        else if (strcmp(env, "auto-single") == 0)
            protocol = CDT_UCX_PROTOCOL_AUTO_SINGLE;
        else
            return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    }
    int64_t stall_ms = CDT_UCX_DEFAULT_FIFO_STALL_TIMEOUT_MS;
    const char *stall_env = getenv("CDT_UCX_FIFO_STALL_TIMEOUT_MS");
    if (fm & CDT_UCX_WORKER_PARAM_FIFO_STALL_TIMEOUT) {
        stall_ms = params->fifo_stall_timeout_ms;
    } else if (stall_env != NULL && *stall_env != '\0') {
        char *end;
        long long v = strtoll(stall_env, &end, 10);
        if (*end != '\0')
            return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
        stall_ms = (int64_t)v;
    }
    bool lane_on = true;
    if (fm & CDT_UCX_WORKER_PARAM_LANE) {
        if (params->lane != 0 && params->lane != 1)
            return CDT_ERR_INVALID_ARG;
        lane_on = params->lane == 1;
    } else if (cdt__ucx_lane_env(&lane_on) != CDT_SUCCESS) {
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    }
    bool lane_heads = false; /* small objects through the lane (docs/TRANSPORT.md §10.6) */
    if (cdt__ucx_lane_heads_env(&lane_heads) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    bool lane_large = false;        /* whole 32-64 KiB objects as head ring records (§10.6) */
    if (cdt__ucx_lane_large_env(&lane_large) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;       /* a misspelt setting must not pass unnoticed */
    cdt_count lane_threshold = threshold; /* a threshold the caller named holds on lanes too */
    if (!(fm & CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD) &&
        cdt__ucx_lane_region_env(&lane_threshold) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    /* the test hook CDT_UCX_TEST_END (docs/TESTING.md, Test hooks) */
    int end_point = 0;
    long end_at = 0;
    if (cdt__ucx_test_end_env(&end_point, &end_at) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    bool lane_split = true;         /* large regions copied by both processes (§10.3) */
    if (cdt__ucx_lane_split_env(&lane_split) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    bool no_ring_commit = false;
    if (cdt__ucx_test_ring_commit_env(&no_ring_commit) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;
    bool word_regions = false;
    if (cdt__ucx_test_word_regions_env(&word_regions) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;
    int64_t split_hold_ms = 0;
    bool split_hold_in_push = false;
    if (cdt__ucx_test_split_hold_env(&split_hold_ms, &split_hold_in_push) != CDT_SUCCESS)
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_worker w = calloc(1, sizeof(*w));
    if (w == NULL)
        return CDT_ERR_NO_MEMORY;
    w->test_split_hold_ms = split_hold_ms;
    w->test_split_hold_in_push = split_hold_in_push;
    w->test_end_point = end_point;
    w->test_end_at = end_at;
    w->test_no_ring_commit = no_ring_commit;
    w->test_word_regions = word_regions;
    w->lane_on = lane_on;
    w->lane_heads = lane_on && lane_heads;
    w->lane_large = w->lane_heads && lane_large;
    w->lane_threshold = lane_threshold;
    w->lane_split = lane_on && lane_split;
    w->fifo_stall_ms = stall_ms < 0 ? -1 : stall_ms;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return CDT_ERR_NO_MEMORY;
    }
    if (pthread_mutex_init(&w->cache_lock, NULL) != 0) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_NO_MEMORY;
    }
    w->cache_limit = cache_limit;
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_CLIENT_ID,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
        .client_id = cdt__ucx_client_id(), /* a listener checks it (ucx_peer_version.c) */
    };
    ucs_status_t st = ucp_worker_create(context->ucp, &wp, &w->ucp);
    if (st != UCS_OK) {
        pthread_mutex_destroy(&w->cache_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_TRANSPORT;
    }
    w->ctx = context;
    if (cdt__ucx_wakeup_open(w) != CDT_SUCCESS) {
        ucp_worker_destroy(w->ucp);
        pthread_mutex_destroy(&w->cache_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_TRANSPORT;
    }
    if (cdt__ucx_single_dt_create(w) != CDT_SUCCESS) {
        ucp_worker_destroy(w->ucp);
        cdt__ucx_wakeup_close(w);
        pthread_mutex_destroy(&w->cache_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_TRANSPORT;
    }
    w->protocol = protocol;
    w->sender_id = sender_id;
    random_bytes(w->key_secret, sizeof(w->key_secret));
    random_bytes(w->park_secret, sizeof(w->park_secret));
    w->park_free = UINT32_MAX; /* no slot yet */
    w->zcopy_threshold = threshold;
    *worker = w;
    return CDT_SUCCESS;
}

void cdt_ucx_worker_destroy(cdt_ucx_worker worker)
{
    if (worker == NULL)
        return;
    pthread_mutex_lock(&worker->lock);
    worker->destroying = true; /* canceled receives post no drains from here on */
    cdt__ucx_drains_cancel_all(worker);
    /* requests not accepted are refused now, and those that come meanwhile at once (conn_cb):
     * a peer's connect must not wait for the waits below (its own bounded alike) */
    for (struct cdt_ucx_listener_s *l = worker->listeners; l != NULL; l = l->next) {
        for (int i = 0; i < l->queued; i++)
            ucp_listener_reject(l->ucp, l->queue[i]);
        l->queued = 0;
    }
    /* A parked endpoint's flush ends before UCX tears its endpoint down: UCX 1.13 aborts
     * ("pending request ... should have been flushed") when ucp_worker_destroy finds such a
     * flush still queued on an endpoint whose wireup never finished (connects that timed out
     * under load, then closed: transport.close_pending_flush). The flush ends once the peer
     * answers or the connection fails; the wait is bounded and happens only with parked ones. */
    int64_t parked_until = cdt__ucx_now_ms() + PARKED_FLUSH_WAIT_MS;
    while (worker->parked > 0 && cdt__ucx_now_ms() < parked_until) {
        ucp_worker_progress(worker->ucp);
        cdt__ucx_close_parked(worker);
    }
    cdt__ucx_ep_force_close_all(worker);
    cdt__ucx_lane_heads_close_self(worker); /* after the lanes whose heads it carried */
    /* The listeners go last, right before UCX's worker: a connection UCX's listener accepted
     * whose request comes after ucp_listener_destroy calls back into the freed listener from
     * UCX's async thread (ucp_cm_server_conn_request_cb; UCX 1.13.1 to 1.22, TCP sockcm),
     * and only ucp_worker_destroy closes such connections. Destroyed first, they left that
     * window open for the waits above (up to PARKED_FLUSH_WAIT_MS): a client's connect that
     * timed out and finished its wireup late crashed the server in
     * transport.close_pending_flush (docs/TRANSPORT.md §8, Listeners). */
    while (worker->listeners != NULL) {
        struct cdt_ucx_listener_s *l = worker->listeners;
        worker->listeners = l->next;
        ucp_listener_destroy(l->ucp); /* nothing queued since (conn_cb refuses) */
        free(l);
    }
    /* nobody sleeps on the worker any more: the completions ucp_worker_destroy still calls
     * back must not signal a UCX worker half torn down (cdt__ucx_wake) */
    worker->wake_pending = true;
    pthread_mutex_unlock(&worker->lock);
    ucp_worker_destroy(worker->ucp);
    cdt__ucx_wakeup_close(worker);      /* UCX closed its own event fd */
    cdt__ucx_single_dt_destroy(worker); /* no request uses them any more */
    cdt__ucx_drains_free_all(worker);   /* UCX calls back no more */
    cdt__ucx_orphans_free_all(worker);
    cdt__ucx_park_free_all(worker); /* descriptors UCX still held are gone with it */
    cdt__ucx_buf_cache_clear(worker);
    cdt__ucx_request_pool_clear(worker);
    pthread_mutex_destroy(&worker->cache_lock);
    pthread_mutex_destroy(&worker->lock);
    free(worker);
}

int cdt_ucx_worker_progress(cdt_ucx_worker worker)
{
    if (worker == NULL)
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&worker->lock);
    unsigned n = cdt__ucx_progress(worker);
    pthread_mutex_unlock(&worker->lock);
    return (int)n;
}

int cdt_ucx_worker_address(cdt_ucx_worker worker, void **address, size_t *length)
{
    if (worker == NULL || address == NULL || length == NULL)
        return CDT_ERR_INVALID_ARG;
    ucp_address_t *a;
    size_t len;
    pthread_mutex_lock(&worker->lock);
    ucs_status_t st = ucp_worker_get_address(worker->ucp, &a, &len);
    pthread_mutex_unlock(&worker->lock);
    if (st != UCS_OK)
        return cdt__ucx_status(st);
    *address = a;
    *length = len;
    return CDT_SUCCESS;
}

void cdt_ucx_worker_address_free(cdt_ucx_worker worker, void *address)
{
    if (worker == NULL || address == NULL)
        return;
    pthread_mutex_lock(&worker->lock);
    ucp_worker_release_address(worker->ucp, address);
    pthread_mutex_unlock(&worker->lock);
}

uint32_t cdt_ucx_worker_sender_id(cdt_ucx_worker worker)
{
    return worker != NULL ? worker->sender_id : 0;
}

int cdt_ucx_worker_stats_get(cdt_ucx_worker worker, cdt_ucx_worker_stats *stats)
{
    if (worker == NULL || stats == NULL || stats->field_mask == 0 ||
        (stats->field_mask & ~(uint64_t)CDT_UCX_WORKER_STATS_ALL) != 0)
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&worker->cache_lock);
    if (stats->field_mask & CDT_UCX_WORKER_STATS_QUARANTINED)
        stats->quarantined = worker->quarantined;
    if (stats->field_mask & CDT_UCX_WORKER_STATS_QUARANTINE_RELEASED)
        stats->quarantine_released = worker->q_released;
    if (stats->field_mask & CDT_UCX_WORKER_STATS_QUARANTINE_DROPPED)
        stats->quarantine_dropped = worker->q_dropped;
    pthread_mutex_unlock(&worker->cache_lock);
    pthread_mutex_lock(&worker->lock);
    if (stats->field_mask & CDT_UCX_WORKER_STATS_LANE_SENT)
        stats->lane_sent = worker->lane_sent;
    if (stats->field_mask & CDT_UCX_WORKER_STATS_LANE_RECEIVED)
        stats->lane_received = worker->lane_received;
    if (stats->field_mask & CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT)
        stats->lane_split_sent = worker->lane_split_sent;
    if (stats->field_mask & CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED)
        stats->lane_split_received = worker->lane_split_received;
    pthread_mutex_unlock(&worker->lock);
    return CDT_SUCCESS;
}

void *cdt_ucx_worker_handle(cdt_ucx_worker worker)
{
    return worker != NULL ? (void *)worker->ucp : NULL;
}
