/*
 * ucx_endpoint.c - endpoints: listener on host:port, connect, from a worker address; peer
 * error handling; close.
 */
#include "ucx_internal.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

/* called from ucp_worker_progress (lock held) when the peer fails */
static void ep_error_cb(void *arg, ucp_ep_h ucp_ep, ucs_status_t status)
{
    (void)ucp_ep;
    (void)status;
    struct cdt_ucx_ep_s *ep = arg;
    ep->status = CDT_ERR_PEER;
    cdt__ucx_ep_end_sends(ep, CDT_ERR_PEER);
    /* a receive part-way through an object of this peer waits for parts that may never come;
     * those of other peers go on (docs/TRANSPORT.md §6) */
    cdt__ucx_fail_body_recvs(ep, CDT_ERR_PEER);
}

static void ep_link(cdt_ucx_worker w, struct cdt_ucx_ep_s *ep)
{
    ep->prev = NULL;
    ep->next = w->eps;
    if (w->eps != NULL)
        w->eps->prev = ep;
    w->eps = ep;
}

static void ep_unlink(cdt_ucx_worker w, struct cdt_ucx_ep_s *ep)
{
    if (ep->prev != NULL)
        ep->prev->next = ep->next;
    else
        w->eps = ep->next;
    if (ep->next != NULL)
        ep->next->prev = ep->prev;
}

/* lock held; fills p's common fields and creates the endpoint */
static int ep_create_locked(cdt_ucx_worker w, ucp_ep_params_t *p, cdt_ucx_ep *out)
{
    struct cdt_ucx_ep_s *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return CDT_ERR_NO_MEMORY;
    ep->w = w;
    ep->wired = true;
    p->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                     UCP_EP_PARAM_FIELD_USER_DATA;
    p->user_data = ep; /* how ucp_stream_worker_poll names it (ucx_hello.c) */
    p->err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p->err_handler.cb = ep_error_cb;
    p->err_handler.arg = ep;
    ucs_status_t st = ucp_ep_create(w->ucp, p, &ep->ucp);
    if (st != UCS_OK) {
        free(ep);
        return cdt__ucx_status(st);
    }
    ep_link(w, ep);
    cdt__ucx_hello_init(ep);
    *out = ep;
    return CDT_SUCCESS;
}

static void conn_cb(ucp_conn_request_h req, void *arg)
{
    struct cdt_ucx_listener_s *l = arg;
    /* a worker being destroyed accepts nothing more: refused at once, the connecting side's
     * wait ends now, not when the destroy's waits are over (cdt_ucx_worker_destroy) */
    if (l->queued == CDT__UCX_CONN_QUEUE || l->w->destroying) {
        ucp_listener_reject(l->ucp, req);
        return;
    }
    l->queue[l->queued++] = req;
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL)
        return CDT_ERR_INVALID_ARG;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        return CDT_ERR_INVALID_ARG;
    return CDT_SUCCESS;
}

int cdt_ucx_listener_create(cdt_ucx_worker worker, const cdt_ucx_listener_params *params,
                            cdt_ucx_listener *listener)
{
    if (worker == NULL || listener == NULL)
        return CDT_ERR_INVALID_ARG;
    uint64_t fm = params != NULL ? params->field_mask : 0;
    if (fm & ~(uint64_t)(CDT_UCX_LISTENER_PARAM_HOST | CDT_UCX_LISTENER_PARAM_PORT))
        return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
    const char *host =
        (fm & CDT_UCX_LISTENER_PARAM_HOST) && params->host != NULL ? params->host : "0.0.0.0";
    uint16_t port = (fm & CDT_UCX_LISTENER_PARAM_PORT) ? params->port : 0;
    struct sockaddr_storage ss;
    socklen_t sslen;
    int rc = resolve(host, port, &ss, &sslen);
    if (rc != CDT_SUCCESS)
        return rc;
    struct cdt_ucx_listener_s *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return CDT_ERR_NO_MEMORY;
    l->w = worker;
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)&ss, .addrlen = sslen},
        .conn_handler = {.cb = conn_cb, .arg = l},
    };
    pthread_mutex_lock(&worker->lock);
    ucs_status_t st = ucp_listener_create(worker->ucp, &lp, &l->ucp);
    if (st == UCS_OK) {
        l->next = worker->listeners;
        if (worker->listeners != NULL)
            worker->listeners->prev = l;
        worker->listeners = l;
    }
    pthread_mutex_unlock(&worker->lock);
    if (st != UCS_OK) {
        free(l);
        return CDT_ERR_TRANSPORT;
    }
    *listener = l;
    return CDT_SUCCESS;
}

int cdt_ucx_listener_port(cdt_ucx_listener listener, uint16_t *port)
{
    if (listener == NULL || port == NULL)
        return CDT_ERR_INVALID_ARG;
    ucp_listener_attr_t a = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    pthread_mutex_lock(&listener->w->lock);
    ucs_status_t st = ucp_listener_query(listener->ucp, &a);
    pthread_mutex_unlock(&listener->w->lock);
    if (st != UCS_OK)
        return CDT_ERR_TRANSPORT;
    if (a.sockaddr.ss_family == AF_INET)
        *port = ntohs(((struct sockaddr_in *)&a.sockaddr)->sin_port);
    else if (a.sockaddr.ss_family == AF_INET6)
        *port = ntohs(((struct sockaddr_in6 *)&a.sockaddr)->sin6_port);
    else
        return CDT_ERR_TRANSPORT;
    return CDT_SUCCESS;
}

int cdt_ucx_listener_accept(cdt_ucx_listener listener, int64_t timeout_ms, cdt_ucx_ep *ep)
{
    if (listener == NULL || ep == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_worker w = listener->w;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : cdt__ucx_now_ms() + timeout_ms;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        cdt__ucx_progress(w);
        if (listener->queued > 0) {
            ucp_conn_request_h req = listener->queue[0];
            memmove(listener->queue, listener->queue + 1,
                    (size_t)(listener->queued - 1) * sizeof(listener->queue[0]));
            listener->queued--;
            char peer[80];
            int rc = cdt__ucx_check_peer_version(req, peer, sizeof(peer));
            if (rc != CDT_SUCCESS) {
                ucp_listener_reject(listener->ucp, req);
                pthread_mutex_unlock(&w->lock);
                return rc;
            }
            ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
                                 .conn_request = req};
            rc = ep_create_locked(w, &p, ep);
            if (rc == CDT_SUCCESS) {
                (*ep)->wired = false; /* its first send waits for the wireup (ucx_ep_info.c) */
                snprintf((*ep)->peer, sizeof((*ep)->peer), "%s", peer);
            } else {
                cdt__ucx_fail_detail("accept from", peer, NULL, rc, CDT__UCX_VERSION_HINT);
            }
            pthread_mutex_unlock(&w->lock);
            return rc;
        }
        pthread_mutex_unlock(&w->lock);
        if (cdt__ucx_now_ms() > deadline)
            return CDT_ERR_TIMEOUT;
    }
}

void cdt_ucx_listener_destroy(cdt_ucx_listener listener)
{
    if (listener == NULL)
        return;
    cdt_ucx_worker w = listener->w;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < listener->queued; i++)
        ucp_listener_reject(listener->ucp, listener->queue[i]);
    ucp_listener_destroy(listener->ucp);
    if (listener->prev != NULL)
        listener->prev->next = listener->next;
    else
        w->listeners = listener->next;
    if (listener->next != NULL)
        listener->next->prev = listener->prev;
    pthread_mutex_unlock(&w->lock);
    free(listener);
}

static int ep_close(cdt_ucx_ep ep, int64_t timeout_ms, void *pending_flush);

/* lock not held: wait for the flush of a new endpoint, which completes once the connection is
 * established and its lanes are wired up. On failure the endpoint is closed. */
static int finish_connect(cdt_ucx_worker w, cdt_ucx_ep e, void *flush, int64_t deadline,
                          const char *peer)
{
    ucs_status_t st = cdt__ucx_wait_request(w, flush, deadline);
    if (st == UCS_OK && e->status != CDT_SUCCESS)
        st = UCS_ERR_UNREACHABLE;
    if (st == UCS_OK)
        return CDT_SUCCESS;
    int rc = st == UCS_ERR_TIMED_OUT ? CDT_ERR_TIMEOUT : CDT_ERR_PEER;
    /* the half-made endpoint must be closed by force: a graceful close would try to flush
     * towards a peer that never answered */
    pthread_mutex_lock(&w->lock);
    if (e->status == CDT_SUCCESS)
        e->status = CDT_ERR_PEER;
    cdt__ucx_fail_detail("connect to", peer, NULL, rc,
                         "the peer is gone or unreachable, or " CDT__UCX_VERSION_HINT);
    pthread_mutex_unlock(&w->lock);
    ep_close(e, 0, st == UCS_ERR_TIMED_OUT ? flush : NULL);
    return rc;
}

int cdt_ucx_ep_connect(cdt_ucx_worker worker, const char *host, uint16_t port, int64_t timeout_ms,
                       cdt_ucx_ep *ep)
{
    cdt_ucx_connect_params p = {.field_mask = CDT_UCX_CONNECT_PARAM_TIMEOUT,
                                .timeout_ms = timeout_ms};
    return cdt_ucx_ep_connect_advanced(worker, host, port, &p, ep);
}

int cdt_ucx_ep_connect_advanced(cdt_ucx_worker worker, const char *host, uint16_t port,
                                const cdt_ucx_connect_params *params, cdt_ucx_ep *ep)
{
    if (worker == NULL || host == NULL || ep == NULL)
        return CDT_ERR_INVALID_ARG;
    int64_t timeout_ms = CDT__UCX_WIREUP_TIMEOUT_MS;
    uint64_t flags = 0;
    if (params != NULL) {
        if (params->field_mask &
            ~(uint64_t)(CDT_UCX_CONNECT_PARAM_TIMEOUT | CDT_UCX_CONNECT_PARAM_FLAGS))
            return CDT_ERR_INVALID_ARG;
        if (params->field_mask & CDT_UCX_CONNECT_PARAM_TIMEOUT)
            timeout_ms = params->timeout_ms;
        if (params->field_mask & CDT_UCX_CONNECT_PARAM_FLAGS)
            flags = params->flags;
        if (flags & ~(uint64_t)CDT_UCX_CONNECT_NO_WAIT)
            return CDT_ERR_INVALID_ARG;
    }
    struct sockaddr_storage ss;
    socklen_t sslen;
    int rc = resolve(host, port, &ss, &sslen);
    if (rc != CDT_SUCCESS)
        return rc;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : cdt__ucx_now_ms() + timeout_ms;
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS,
        /* the worker's client id carries its UCX version to the listener */
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID,
        .sockaddr = {.addr = (const struct sockaddr *)&ss, .addrlen = sslen},
    };
    cdt_ucx_ep e = NULL;
    char peer[80];
    snprintf(peer, sizeof(peer), "%s:%u", host, (unsigned)port);
    pthread_mutex_lock(&worker->lock);
    rc = ep_create_locked(worker, &p, &e);
    if (rc == CDT_SUCCESS)
        snprintf(e->peer, sizeof(e->peer), "%s", peer);
    else
        cdt__ucx_fail_detail("connect to", peer, NULL, rc, NULL);
    if (rc == CDT_SUCCESS && (flags & CDT_UCX_CONNECT_NO_WAIT)) {
        e->wired = false; /* the first send waits for the connection (cdt__ucx_ep_wait_wired) */
        pthread_mutex_unlock(&worker->lock);
        *ep = e;
        return CDT_SUCCESS;
    }
    void *flush = NULL;
    if (rc == CDT_SUCCESS) {
        ucp_request_param_t fp = {.op_attr_mask = 0};
        flush = ucp_ep_flush_nbx(e->ucp, &fp);
    }
    pthread_mutex_unlock(&worker->lock);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = finish_connect(worker, e, flush, deadline, peer);
    if (rc == CDT_SUCCESS)
        *ep = e;
    return rc;
}

int cdt_ucx_ep_create_from_address(cdt_ucx_worker worker, const void *address, size_t length,
                                   cdt_ucx_ep *ep)
{
    if (worker == NULL || address == NULL || length == 0 || ep == NULL)
        return CDT_ERR_INVALID_ARG;
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                         .address = (const ucp_address_t *)address};
    pthread_mutex_lock(&worker->lock);
    int rc = ep_create_locked(worker, &p, ep);
    if (rc == CDT_SUCCESS)
        snprintf((*ep)->peer, sizeof((*ep)->peer), "a worker by its address");
    else
        cdt__ucx_fail_detail("connect to", "a worker by its address", NULL, rc,
                             CDT__UCX_VERSION_HINT);
    pthread_mutex_unlock(&worker->lock);
    return rc;
}

int cdt_ucx_ep_status(cdt_ucx_ep ep)
{
    if (ep == NULL)
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&ep->w->lock);
    int st = ep->status;
    pthread_mutex_unlock(&ep->w->lock);
    return st;
}

void *cdt_ucx_ep_handle(cdt_ucx_ep ep)
{
    return ep != NULL ? (void *)ep->ucp : NULL;
}

/* lock not held: start ucp_ep_close_nbx and wait for it until the deadline. A close that
 * does not finish in time is released to UCX (which completes it on its own) and the endpoint
 * stays on the worker's list, marked closing, until the worker is destroyed: UCX may still call
 * its error callback with our pointer. Returns true when the endpoint can be freed now. */
static bool close_ucx_ep(cdt_ucx_worker w, struct cdt_ucx_ep_s *ep, bool force, int64_t deadline)
{
    pthread_mutex_lock(&w->lock);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    void *req = ucp_ep_close_nbx(ep->ucp, &p);
    pthread_mutex_unlock(&w->lock);
    if (cdt__ucx_wait_request(w, req, deadline) != UCS_ERR_TIMED_OUT)
        return true;
    pthread_mutex_lock(&w->lock);
    ucp_request_free(req);
    ep->closing = true;
    pthread_mutex_unlock(&w->lock);
    return false;
}

int cdt_ucx_ep_close(cdt_ucx_ep ep, int64_t timeout_ms)
{
    return ep_close(ep, timeout_ms, NULL);
}

/* pending_flush: a flush of ep that timed out already (a connect's) */
static int ep_close(cdt_ucx_ep ep, int64_t timeout_ms, void *pending_flush)
{
    if (ep == NULL)
        return CDT_SUCCESS;
    cdt_ucx_worker w = ep->w;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : cdt__ucx_now_ms() + timeout_ms;
    if (pending_flush != NULL) {
        pthread_mutex_lock(&w->lock);
        cdt__ucx_ep_park(ep, pending_flush);
        pthread_mutex_unlock(&w->lock);
        return CDT_ERR_TIMEOUT;
    }
    pthread_mutex_lock(&w->lock);
    int rc = ep->status;
    void *flush = NULL;
    if (rc == CDT_SUCCESS) {
        ucp_request_param_t fp = {.op_attr_mask = 0};
        flush = ucp_ep_flush_nbx(ep->ucp, &fp);
    }
    pthread_mutex_unlock(&w->lock);
    if (rc == CDT_SUCCESS) {
        /* flush what was sent, within the caller's time; a flush that does not finish parks
         * the endpoint (above), which is closed by force once the flush ends */
        ucs_status_t st = cdt__ucx_wait_request(w, flush, deadline);
        if (st == UCS_ERR_TIMED_OUT) {
            pthread_mutex_lock(&w->lock);
            cdt__ucx_ep_park(ep, flush);
            pthread_mutex_unlock(&w->lock);
            return CDT_ERR_TIMEOUT;
        }
        if (st != UCS_OK)
            rc = CDT_ERR_PEER;
    }
    /* A lane send completes once its last byte is published, its commit too where that is a
     * word in the ring (docs/TRANSPORT.md §10.3, Commit in the ring), and no UCX message of it
     * is left for the flush to wait for: wait, within the caller's time, for the peer to take
     * what was published, so that a send that completed is delivered whole before the close
     * ends the peer's lane (§10.5, A closed endpoint). The progress moves pending lane sends on
     * as the flush's does. */
    for (unsigned spin = 1; rc == CDT_SUCCESS; spin++) {
        pthread_mutex_lock(&w->lock);
        bool taken = ep->status != CDT_SUCCESS || cdt__ucx_lane_tx_taken(ep);
        if (!taken)
            cdt__ucx_progress(w);
        pthread_mutex_unlock(&w->lock);
        if (taken || cdt__ucx_now_ms() > deadline)
            break;
        if (spin % CDT__UCX_SPINS_BEFORE_SLEEP == 0)
            cdt__ucx_sleep(w, deadline);
    }
    /* a forced close is local and quick; bound it anyway so a sick transport cannot hang us */
    int64_t close_deadline = cdt__ucx_now_ms() + 1000;
    if (rc == CDT_SUCCESS && deadline > close_deadline)
        close_deadline = deadline;
    /* A flush ends once every message is announced, so sends whose receiver never took them (a
     * rendezvous waiting for its receive) can outlive it: the close is then forced, which fails
     * them in UCX. A graceful close would leave them to UCX, which over shared memory keeps
     * them for ever and in 1.13 aborts on them when the worker is destroyed. */
    pthread_mutex_lock(&w->lock);
    bool force = rc != CDT_SUCCESS || ep->sends != NULL;
    pthread_mutex_unlock(&w->lock);
    bool closed = close_ucx_ep(w, ep, force, close_deadline);
    /* sends the close did not end (UCX may keep one for ever: cdt__ucx_ep_end_sends) end now;
     * their requests outlive the endpoint */
    pthread_mutex_lock(&w->lock);
    cdt__ucx_ep_end_sends(ep, ep->status != CDT_SUCCESS ? ep->status : CDT_ERR_CANCELED);
    pthread_mutex_unlock(&w->lock);
    if (closed) {
        pthread_mutex_lock(&w->lock);
        cdt__ucx_hello_forget(ep);
        ep_unlink(w, ep);
        pthread_mutex_unlock(&w->lock);
        free(ep);
    } else if (rc == CDT_SUCCESS) {
        rc = CDT_ERR_TIMEOUT;
    }
    return rc;
}

void cdt__ucx_ep_force_close_all(cdt_ucx_worker w)
{
    /* A parked endpoint whose flush is still in flight after the worker's wait for it (a
     * connect to a socket that accepted and never answered: its wireup never ends) is closed
     * by force here, and its flush and close are progressed to their end (bounded) before
     * anything is freed. Left to ucp_worker_destroy, UCX 1.13 aborts the process on that flush
     * ("pending request ... should have been flushed": transport.parked_silent_destroy); the
     * forced close cancels it. Its end is waited for because UCX 1.22 runs a pending flush's
     * resume callback, which reads the endpoint, after a forced close (see park). */
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next) {
        if (ep->parked_flush == NULL)
            continue;
        void *req = NULL;
        if (ucp_request_check_status(ep->parked_flush) == UCS_INPROGRESS) {
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = UCP_EP_CLOSE_FLAG_FORCE};
            req = ucp_ep_close_nbx(ep->ucp, &p);
            if (UCS_PTR_IS_ERR(req))
                req = NULL;
        }
        int64_t deadline = cdt__ucx_now_ms() + 1000;
        while ((ucp_request_check_status(ep->parked_flush) == UCS_INPROGRESS ||
                (req != NULL && ucp_request_check_status(req) == UCS_INPROGRESS)) &&
               cdt__ucx_now_ms() < deadline)
            ucp_worker_progress(w->ucp);
        if (req != NULL)
            ucp_request_free(req);
        ucp_request_free(ep->parked_flush);
        ep->parked_flush = NULL;
        w->parked--;
    }
    while (w->eps != NULL) {
        struct cdt_ucx_ep_s *ep = w->eps;
        if (!ep->closing) { /* closing ones were released to UCX already */
            ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = UCP_EP_CLOSE_FLAG_FORCE};
            void *req = ucp_ep_close_nbx(ep->ucp, &p);
            if (req != NULL && !UCS_PTR_IS_ERR(req)) {
                int64_t deadline = cdt__ucx_now_ms() + 1000;
                while (ucp_request_check_status(req) == UCS_INPROGRESS &&
                       cdt__ucx_now_ms() < deadline)
                    ucp_worker_progress(w->ucp);
                ucp_request_free(req);
            }
        }
        cdt__ucx_ep_end_sends(ep, CDT_ERR_CANCELED);
        cdt__ucx_hello_forget(ep);
        ep_unlink(w, ep);
        free(ep);
    }
}
