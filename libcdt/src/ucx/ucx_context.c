/*
 * ucx_context.c - the bottom of the transport: the UCX context (its configuration, shared
 * memory included), UCX status mapping, the clock, and the object keys. Calls no other file.
 */
#include "ucx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

bool cdt__ucx_tls_has_self(void)
{
    const char *names[] = {"self", NULL};
    return tls_selects(names, 1);
}

/* Whether ucp_config_modify matches a transport's setting by its prefixed name. Up to UCX 1.16
 * it hands a name no table registers to every transport's configuration, which knows its
 * fields without the transport's prefix ("MEMORY_INVALIDATE" reaches cma; a prefixed
 * "CMA_MEMORY_INVALIDATE" is accepted and silently has no effect). From 1.17 names match with
 * the prefix, and from 1.20.1 an unknown name is UCS_ERR_INVALID_PARAM. */
static bool config_names_prefixed(void)
{
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    return major > 1 || (major == 1 && minor >= 17);
}

static int shared_memory_config(ucp_config_t *config, cdt_ucx_shared_memory mode)
{
    /* "MM_ERROR_HANDLING" reaches sysv and posix in every version (UCX_SYSV_ / UCX_POSIX_ /
     * UCX_MM_ERROR_HANDLING: the mm transports' common table has the MM_ prefix) */
    static const struct {
        const char *field;          /* the name up to UCX 1.16 */
        const char *field_prefixed; /* the name from UCX 1.17 */
        const char *env[3];
        const char *tls[4]; /* UCX_TLS names that select the transport */
        unsigned modes;     /* the modes that set it: bit (1 << mode) */
    } settings[] = {
        {"MM_ERROR_HANDLING",
         "MM_ERROR_HANDLING",
         {"UCX_SYSV_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_MM_ERROR_HANDLING"},
         {"sm", "shm", "sysv", "posix"},
         1u << CDT_UCX_SHM_COPY | 1u << CDT_UCX_SHM_FULL},
        {"MEMORY_INVALIDATE",
         "CMA_MEMORY_INVALIDATE",
         {"UCX_CMA_MEMORY_INVALIDATE", NULL, NULL},
         {"sm", "shm", "cma", NULL},
         1u << CDT_UCX_SHM_FULL | 1u << CDT_UCX_SHM_CMA},
    };
    bool prefixed = config_names_prefixed();
    if (mode == CDT_UCX_SHM_OFF)
        return CDT_SUCCESS;
    /* CMA, the default: no shared-memory FIFO at all (sysv, posix and xpmem are UCX's "mm"
     * transports), whatever a UCX version would choose in peer-failure mode: a peer that dies
     * inside its send wedges a FIFO's receiver for every sender (docs/TRANSPORT.md §9). Only
     * where the environment does not choose the transports itself. */
    const char *tls = getenv("UCX_TLS");
    if (mode == CDT_UCX_SHM_CMA && (tls == NULL || *tls == '\0') &&
        ucp_config_modify(config, "TLS", "^mm") != UCS_OK)
        return CDT_ERR_TRANSPORT;
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        bool user_set = false;
        for (int e = 0; e < 3 && settings[i].env[e] != NULL; e++)
            user_set |= getenv(settings[i].env[e]) != NULL;
        /* a setting for a transport UCX_TLS leaves out would only draw UCX's warning about
         * an unused variable */
        if (user_set || !(settings[i].modes & (1u << mode)) || !tls_selects(settings[i].tls, 4))
            continue;
        const char *field = prefixed ? settings[i].field_prefixed : settings[i].field;
        if (ucp_config_modify(config, field, "y") != UCS_OK)
            return CDT_ERR_TRANSPORT;
    }
    return CDT_SUCCESS;
}

int cdt_ucx_context_create(const cdt_ucx_context_params *params, cdt_ucx_context *context)
{
    if (context == NULL)
        return CDT_ERR_INVALID_ARG;
    if (params != NULL &&
        (params->field_mask &
         ~(uint64_t)(CDT_UCX_CONTEXT_PARAM_ESTIMATED_NUM_EPS | CDT_UCX_CONTEXT_PARAM_SHARED_MEMORY |
                     CDT_UCX_CONTEXT_PARAM_WAKEUP)))
        return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
    cdt_ucx_shared_memory shm = CDT_UCX_SHM_CMA;
    const char *env = getenv("CDT_UCX_SHARED_MEMORY");
    if (params != NULL && (params->field_mask & CDT_UCX_CONTEXT_PARAM_SHARED_MEMORY)) {
        shm = params->shared_memory;
        if (shm != CDT_UCX_SHM_OFF && shm != CDT_UCX_SHM_COPY && shm != CDT_UCX_SHM_FULL &&
            shm != CDT_UCX_SHM_CMA)
            return CDT_ERR_INVALID_ARG;
    } else if (env != NULL && *env != '\0') {
        if (strcmp(env, "off") == 0)
            shm = CDT_UCX_SHM_OFF;
        else if (strcmp(env, "copy") == 0)
            shm = CDT_UCX_SHM_COPY;
        else if (strcmp(env, "full") == 0)
            shm = CDT_UCX_SHM_FULL;
        else if (strcmp(env, "cma") == 0)
            shm = CDT_UCX_SHM_CMA;
        else
            return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    }
    bool wakeup = false;
    const char *wenv = getenv("CDT_UCX_WAKEUP");
    if (params != NULL && (params->field_mask & CDT_UCX_CONTEXT_PARAM_WAKEUP)) {
        wakeup = params->wakeup != 0;
    } else if (wenv != NULL && *wenv != '\0') {
        if (strcmp(wenv, "1") == 0 || strcmp(wenv, "y") == 0 || strcmp(wenv, "yes") == 0)
            wakeup = true;
        else if (strcmp(wenv, "0") != 0 && strcmp(wenv, "n") != 0 && strcmp(wenv, "no") != 0)
            return CDT_ERR_INVALID_ARG;
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
        /* the stream carries an endpoint's id to its peer (ucx_hello.c) */
        .features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM,
        .mt_workers_shared = 0,
    };
    c->wakeup = wakeup;
    if (c->wakeup)
        p.features |= UCP_FEATURE_WAKEUP;
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

uint64_t cdt__ucx_next_ep_id(cdt_ucx_worker w)
{
    /* inputs with the top bit set: never an object's key input */
    uint64_t id = siphash_u64(w->key_secret, UINT64_C(1) << 63 | w->ep_seq++);
    return id != 0 ? id : 1;
}
