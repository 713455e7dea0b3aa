/*
 * ucx_context.c - UCX context and worker: setup, progress, addresses, status mapping.
 */
#include "ucx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int cdt__ucx_status(ucs_status_t st)
{
    switch (st) {
    case UCS_OK:
        return CDT_SUCCESS;
    case UCS_INPROGRESS:
        return CDT_INPROGRESS;
    case UCS_ERR_CANCELED:
        return CDT_ERR_CANCELED;
    case UCS_ERR_NO_MEMORY:
        return CDT_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:
        return CDT_ERR_INVALID_ARG;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return CDT_ERR_FRAME_MALFORMED; /* a message longer than the protocol allows */
    case UCS_ERR_TIMED_OUT:
        return CDT_ERR_TIMEOUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
        return CDT_ERR_PEER;
    default:
        return CDT_ERR_TRANSPORT;
    }
}

int64_t cdt__ucx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *cdt_ucx_version_string(void)
{
    return ucp_get_version_string();
}

/* Shared memory with peer-failure detection (cdt_ucx.h, cdt_ucx_context_create): UCX 1.13's
 * sysv/posix transports expose error handling only when told to, and cma its rendezvous only
 * with MEMORY_INVALIDATE. A variable the environment sets is the user's choice and is left. */
/* whether UCX_TLS (unset: "all") makes one of the transports `names` available */
static bool tls_selects(const char *const *names, int n)
{
    const char *tls = getenv("UCX_TLS");
    if (tls == NULL || *tls == '\0')
        return true;
    bool exclude = tls[0] == '^';
    if (exclude)
        tls++;
    bool listed = false;
    for (const char *p = tls; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == 3 && strncmp(p, "all", 3) == 0)
            listed = !exclude; /* "all" selects; "^all" is not a UCX spelling */
        for (int i = 0; i < n && names[i] != NULL; i++)
            if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0)
                listed = true;
        p += len;
        if (*p == ',')
            p++;
    }
    return exclude ? !listed : listed;
}

static int shared_memory_config(ucp_config_t *config, cdt_ucx_shared_memory mode)
{
    /* ucp_config_modify hands names it does not know to every transport's configuration,
     * which knows its fields without the transport's prefix: "MM_ERROR_HANDLING" reaches sysv and
     * posix (UCX_SYSV_ / UCX_POSIX_ / UCX_MM_ERROR_HANDLING), "MEMORY_INVALIDATE" cma */
    static const struct {
        const char *field;
        const char *env[3];
        const char *tls[4];          /* UCX_TLS names that select the transport */
        cdt_ucx_shared_memory needs; /* the mode from which it is set */
    } settings[] = {
        {"MM_ERROR_HANDLING",
         {"UCX_SYSV_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_MM_ERROR_HANDLING"},
         {"sm", "shm", "sysv", "posix"},
         CDT_UCX_SHM_COPY},
        {"MEMORY_INVALIDATE",
         {"UCX_CMA_MEMORY_INVALIDATE", NULL, NULL},
         {"sm", "shm", "cma", NULL},
         CDT_UCX_SHM_FULL},
    };
    if (mode == CDT_UCX_SHM_OFF)
        return CDT_SUCCESS;
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        bool user_set = false;
        for (int e = 0; e < 3 && settings[i].env[e] != NULL; e++)
            user_set |= getenv(settings[i].env[e]) != NULL;
        /* a setting for a transport UCX_TLS leaves out would only draw UCX's warning about
         * an unused variable */
        if (user_set || mode < settings[i].needs || !tls_selects(settings[i].tls, 4))
            continue;
        if (ucp_config_modify(config, settings[i].field, "y") != UCS_OK)
            return CDT_ERR_TRANSPORT;
    }
    return CDT_SUCCESS;
}

int cdt_ucx_context_create(const cdt_ucx_context_params *params, cdt_ucx_context *context)
{
    if (context == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_shared_memory shm = CDT_UCX_SHM_COPY;
    const char *env = getenv("CDT_UCX_SHARED_MEMORY");
    if (params != NULL && (params->field_mask & CDT_UCX_CONTEXT_PARAM_SHARED_MEMORY)) {
        shm = params->shared_memory;
        if (shm != CDT_UCX_SHM_OFF && shm != CDT_UCX_SHM_COPY && shm != CDT_UCX_SHM_FULL)
            return CDT_ERR_INVALID_ARG;
    } else if (env != NULL && *env != '\0') {
        if (strcmp(env, "off") == 0)
            shm = CDT_UCX_SHM_OFF;
        else if (strcmp(env, "copy") == 0)
            shm = CDT_UCX_SHM_COPY;
        else if (strcmp(env, "full") == 0)
            shm = CDT_UCX_SHM_FULL;
        else
            return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    }
    cdt_ucx_context c = calloc(1, sizeof(*c));
    if (c == NULL)
        return CDT_ERR_NO_MEMORY;
    ucp_config_t *config;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        free(c);
        return CDT_ERR_TRANSPORT;
    }
    int rc = shared_memory_config(config, shm);
    /* a peer that dies is reported within about a second: over shared memory UCX notices it
     * only on its keepalive timer (20 s by default in UCX 1.13), which also ends the sends
     * libcdt ends on an endpoint's failure (cdt__ucx_ep_end_sends) */
    if (rc == CDT_SUCCESS && getenv("UCX_KEEPALIVE_INTERVAL") == NULL &&
        ucp_config_modify(config, "KEEPALIVE_INTERVAL", CDT__UCX_KEEPALIVE_INTERVAL) != UCS_OK)
        rc = CDT_ERR_TRANSPORT;
    if (rc != CDT_SUCCESS) {
        ucp_config_release(config);
        free(c);
        return rc;
    }
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_TAG,
        .mt_workers_shared = 0,
    };
    if (params != NULL && (params->field_mask & CDT_UCX_CONTEXT_PARAM_ESTIMATED_NUM_EPS)) {
        p.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
        p.estimated_num_eps = params->estimated_num_eps;
    }
    st = ucp_init(&p, config, &c->ucp);
    ucp_config_release(config);
    if (st != UCS_OK) {
        free(c);
        return CDT_ERR_TRANSPORT;
    }
    *context = c;
    return CDT_SUCCESS;
}

void cdt_ucx_context_destroy(cdt_ucx_context context)
{
    if (context == NULL)
        return;
    ucp_cleanup(context->ucp);
    free(context);
}

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

/* SipHash-2-4 of one 64-bit word: a keyed pseudo-random function. Object keys are
 * SipHash(worker secret, sequence number), so no peer can predict the keys of another sender's
 * objects (and so inject bytes into them), and keys of different workers collide only by
 * chance (2^-43 per pair of objects in flight). */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t siphash_u64(const uint64_t k[2], uint64_t m)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ k[0], v1 = 0x646f72616e646f6dull ^ k[1];
    uint64_t v2 = 0x6c7967656e657261ull ^ k[0], v3 = 0x7465646279746573ull ^ k[1];
    uint64_t b = (uint64_t)8 << 56;
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t cdt__ucx_next_key(cdt_ucx_worker w)
{
    return siphash_u64(w->key_secret, w->seq++) & CDT__UCX_KEY_MASK;
}

unsigned cdt__ucx_progress(cdt_ucx_worker w)
{
    unsigned n = ucp_worker_progress(w->ucp);
    if (w->body_recvs != NULL || w->drains != NULL) {
        int64_t now = cdt__ucx_now_ms();
        if (now >= w->next_expiry_ms) {
            w->next_expiry_ms = now + 10;
            cdt__ucx_expire(w, now);
        }
    }
    return n;
}

int cdt_ucx_worker_create(cdt_ucx_context context, const cdt_ucx_worker_params *params,
                          cdt_ucx_worker *worker)
{
    if (context == NULL || worker == NULL)
        return CDT_ERR_INVALID_ARG;
    uint64_t fm = params != NULL ? params->field_mask : 0;
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
    cdt_ucx_worker w = calloc(1, sizeof(*w));
    if (w == NULL)
        return CDT_ERR_NO_MEMORY;
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
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };
    ucs_status_t st = ucp_worker_create(context->ucp, &wp, &w->ucp);
    if (st != UCS_OK) {
        pthread_mutex_destroy(&w->cache_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_TRANSPORT;
    }
    if (cdt__ucx_single_dt_create(w) != CDT_SUCCESS) {
        ucp_worker_destroy(w->ucp);
        pthread_mutex_destroy(&w->cache_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return CDT_ERR_TRANSPORT;
    }
    w->protocol = protocol;
    w->ctx = context;
    w->sender_id = sender_id;
    random_bytes(w->key_secret, sizeof(w->key_secret));
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
    while (worker->listeners != NULL) {
        struct cdt_ucx_listener_s *l = worker->listeners;
        worker->listeners = l->next;
        for (int i = 0; i < l->queued; i++)
            ucp_listener_reject(l->ucp, l->queue[i]);
        ucp_listener_destroy(l->ucp);
        free(l);
    }
    cdt__ucx_ep_force_close_all(worker);
    pthread_mutex_unlock(&worker->lock);
    ucp_worker_destroy(worker->ucp);
    cdt__ucx_single_dt_destroy(worker); /* no request uses them any more */
    cdt__ucx_drains_free_all(worker);   /* UCX calls back no more */
    cdt__ucx_orphans_free_all(worker);
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

void *cdt_ucx_worker_handle(cdt_ucx_worker worker)
{
    return worker != NULL ? (void *)worker->ucp : NULL;
}
