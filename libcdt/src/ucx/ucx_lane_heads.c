/*
 * ucx_lane_heads.c - small objects through the lane (docs/TRANSPORT.md §10.6): the producer's
 * switch and its heads written into the head ring of a version 2 segment (held in send order
 * while the ring is full); the consumer's receive of the switch, each record copied out, parked
 * (ucx_lane_park.c) and its descriptor handed to its own worker through an endpoint to itself
 * (UCX's `self` transport), where UCX's tag matching matches it with the application's
 * receives as a head that came over UCX (the receive parses the parked copy); the
 * doorbell in the worker's wakeup set. On by default where the lane is; CDT_UCX_LANE_HEADS=off
 * keeps every head on UCX. Every function runs with the worker's lock held.
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define SWITCH_INDEX UINT64_C(0xFFFFD)
#define SWITCH_SIZE 24
#define SWITCH_MAGIC UINT32_C(0x53544443) /* "CDTS" little-endian */
/* records one progress call hands to the worker at most (the rest in the next call) */
#define RECORDS_PER_CALL 64
/* a large record is parsed as a ring head (ucx_head.c): its bound covers the lane's */
_Static_assert(CDT__UCX_RING_HEAD_MAX >= CDT__LANE_HEAD_LARGE_MAX, "ring head bound");

int cdt__ucx_lane_heads_env(bool *on)
{
    /* on by default (docs/TRANSPORT.md §10.6); off: every head over UCX, as before lane
     * version 2 */
    return cdt__ucx_env_switch("CDT_UCX_LANE_HEADS", true, on);
}

int cdt__ucx_lane_large_env(bool *on)
{
    /* off by default: since a LANE object's commit goes in the data ring, the LANE way is as
     * fast or faster at 32-64 KiB (docs/TRANSPORT.md §10.6, Large records); on: 32-64 KiB
     * objects whole as one head ring record */
    return cdt__ucx_env_switch("CDT_UCX_LANE_LARGE", false, on);
}

/* the switch's tag: private(lane_key, 0xFFFFD), lane_key the nonce's first 8 bytes mod 2^43 */
static uint64_t switch_tag(const cdt__lane *lane)
{
    uint64_t key = cdt__get_u64(lane->nonce) & ((UINT64_C(1) << 43) - 1);
    return cdt__ucx_private_tag(key, SWITCH_INDEX);
}

static void switch_encode(const cdt__lane *lane, unsigned char out[SWITCH_SIZE])
{
    memset(out, 0, SWITCH_SIZE);
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(SWITCH_MAGIC >> (8 * i));
    memcpy(out + 8, lane->nonce, CDT__LANE_NONCE_SIZE);
}

/* the endpoint to this worker itself (made once); false where it cannot be made */
static bool self_ep(cdt_ucx_worker w)
{
    if (w->self_ep != NULL || w->self_failed)
        return w->self_ep != NULL;
    ucp_address_t *addr = NULL;
    size_t addr_len = 0;
    w->self_failed = true;
    if (ucp_worker_get_address(w->ucp, &addr, &addr_len) != UCS_OK)
        return false;
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = addr};
    ucp_ep_h ep = NULL;
    if (ucp_ep_create(w->ucp, &p, &ep) == UCS_OK) {
        w->self_ep = ep;
        w->self_failed = false;
    }
    ucp_worker_release_address(w->ucp, addr);
    return w->self_ep != NULL;
}

void cdt__ucx_lane_heads_close_self(cdt_ucx_worker w)
{
    if (w->self_ep == NULL)
        return;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *q = ucp_ep_close_nbx(w->self_ep, &p);
    w->self_ep = NULL;
    if (q == NULL || UCS_PTR_IS_ERR(q))
        return;
    while (ucp_request_check_status(q) == UCS_INPROGRESS)
        ucp_worker_progress(w->ucp);
    ucp_request_free(q);
}

uint32_t cdt__ucx_lane_heads_features(cdt_ucx_worker w)
{
    /* without an endpoint to itself the worker cannot hand ring heads to its matching: heads
     * keep coming over UCX (§10.6, Hand-off) */
    if (!w->lane_heads || !cdt__ucx_tls_has_self() || !self_ep(w))
        return 0u;
    /* large records (§10.6) are head ring records: only with HEADS */
    return CDT__LANE_FEATURE_HEADS | (w->lane_large ? CDT__LANE_FEATURE_LARGE : 0u);
}

static void switch_recv_cb(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                           void *user_data)
{
    cdt__ucx_switch_recv *sw = user_data;
    ucp_request_free(req);
    if (sw->gone) {
        free(sw);
        return;
    }
    sw->done = true;
    sw->ok = st == UCS_OK;
    sw->len = st == UCS_OK ? info->length : 0;
}

int cdt__ucx_lane_heads_attached(struct cdt_ucx_ep_s *ep)
{
    cdt_ucx_worker w = ep->w;
    cdt__ucx_lane_ep *l = ep->lane;
    l->sw = calloc(1, sizeof(*l->sw));
    if (l->sw == NULL)
        return CDT_ERR_NO_MEMORY;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA |
                                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
                             .cb.recv = switch_recv_cb,
                             .user_data = l->sw};
    /* a longer message (a collision or a hostile peer) is truncated: the lane then breaks */
    void *q = ucp_tag_recv_nbx(w->ucp, l->sw->buf, sizeof(l->sw->buf), switch_tag(&l->rx),
                               UINT64_MAX, &p);
    if (UCS_PTR_IS_ERR(q))
        return cdt__ucx_status(UCS_PTR_STATUS(q));
    l->sw->req = q;
    if (w->efd >= 0 && l->rx.doorbell >= 0) { /* a record wakes a sleeper on the worker's fd */
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = l->rx.doorbell};
        if (epoll_ctl(w->efd, EPOLL_CTL_ADD, l->rx.doorbell, &ev) != 0)
            return CDT_ERR_TRANSPORT;
    }
    return CDT_SUCCESS;
}

static void switch_sent(void *req, ucs_status_t st, void *user_data)
{
    (void)st; /* a switch that could not go: the endpoint fails (UCX reports it) */
    (void)user_data;
    ucp_request_free(req);
}

void cdt__ucx_lane_heads_switch(struct cdt_ucx_ep_s *ep)
{
    cdt__ucx_lane_ep *l = ep->lane;
    if (!ep->w->lane_heads || l->heads_tx || l->tx.version != CDT__LANE_VERSION_HEADS ||
        !(l->tx.peer_features & CDT__LANE_FEATURE_HEADS))
        return;
    /* every head posted before goes over UCX ahead of this message, every later one into the
     * ring: the consumer reads no record before the switch matched (§10.6, The switch) */
    switch_encode(&l->tx, ep->lane_switch);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = switch_sent};
    void *q = ucp_tag_send_nbx(ep->ucp, ep->lane_switch, SWITCH_SIZE, switch_tag(&l->tx), &p);
    cdt__ucx_test_end(ep, CDT__UCX_END_SWITCH);
    if (ep->lane != l)
        return; /* the endpoint ended inside the send (UCX's error handler): l is freed */
    if (UCS_PTR_IS_ERR(q))
        return; /* heads keep going over UCX */
    l->heads_tx = true;
    __atomic_store_n(&ep->lane_heads_on, true, __ATOMIC_RELEASE);
}

/* a head written into the ring touches no socket, so UCX learns nothing of a consumer that
 * died, and a send that completes at its post never progresses: its pidfd is polled when a
 * head is written instead, at most once every CDT__UCX_LANE_POLL_MS. true: it died (the
 * endpoint failed, its lanes freed) */
static bool consumer_dead(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l)
{
    int64_t now = cdt__ucx_now_ms();
    if (now - l->heads_alive_at < CDT__UCX_LANE_POLL_MS)
        return false;
    l->heads_alive_at = now;
    if (cdt__lane_peer_alive(&l->tx))
        return false;
    cdt__ucx_lane_ep_fail(ep); /* frees the lanes */
    return true;
}

int cdt__ucx_lane_heads_post_whole(struct cdt_ucx_ep_s *ep, size_t len, uint64_t tag,
                                   cdt__ucx_head_fill_fn *fill, void *arg)
{
    cdt__ucx_lane_ep *l = ep->lane;
    /* only where the consumer takes it, and only now: a head held before it keeps its place
     * (the LANE head of this object then waits behind it, §10.6, Order) */
    if (l == NULL || !l->heads_tx || ep->status != CDT_SUCCESS || l->held_head != NULL ||
        len <= CDT__LANE_HEAD_MAX || len > cdt__lane_head_bound(&l->tx))
        return 0;
    if (consumer_dead(ep, l))
        return CDT_ERR_PEER;
    unsigned char *dst;
    int rc = cdt__lane_head_reserve(&l->tx, len, &dst);
    if (rc <= 0)
        return rc < 0 ? CDT_ERR_PEER : 0; /* full: the LANE path holds its head */
    /* packed straight into the record's place: nothing is published if it fails */
    rc = fill(arg, dst, len);
    if (rc != CDT_SUCCESS)
        return rc;
    if (cdt__lane_head_publish(&l->tx, tag) != 1)
        return CDT_ERR_PEER;
    cdt__lane_heads_ring(&l->tx);
    return 1;
}

int cdt__ucx_lane_heads_post(struct cdt_ucx_ep_s *ep, struct cdt_ucx_request_s *r, const void *data,
                             size_t len, uint64_t tag, struct cdt__ucx_sub *s)
{
    cdt__ucx_lane_ep *l = ep->lane;
    if (l == NULL || !l->heads_tx || ep->status != CDT_SUCCESS)
        return 0;
    if (len < CDT__LANE_HEAD_MIN || len > CDT__LANE_HEAD_MAX)
        return CDT_ERR_INVALID_ARG; /* no head of this library */
    if (consumer_dead(ep, l))
        return CDT_ERR_PEER;
    s->req = r;
    s->fired = false;
    s->ucx = NULL;
    if (l->held_head == NULL) { /* nothing before it waits: it may go now */
        int rc = cdt__lane_head_put(&l->tx, tag, data, len);
        if (rc == 1) {
            cdt__lane_heads_ring(&l->tx);
            return 1; /* done: the record is the consumer's copy */
        }
        if (rc < 0)
            return CDT_ERR_PEER;
    }
    /* the ring is full, or earlier heads wait: this one waits behind them (§10.6, Order) */
    cdt__ucx_held_head *h = malloc(sizeof(*h));
    if (h == NULL)
        return CDT_ERR_NO_MEMORY;
    *h = (cdt__ucx_held_head){.s = s, .data = data, .len = len, .tag = tag};
    if (l->held_tail != NULL)
        l->held_tail->next = h;
    else
        l->held_head = h;
    l->held_tail = h;
    r->outstanding++; /* completed when written (cdt__ucx_send_sub_end) */
    return 1;
}

static void handed(void *req, ucs_status_t st, void *user_data)
{
    (void)st; /* a descriptor the worker could not take to itself: no receive matches it */
    ucp_request_free(req);
    free(user_data);
}

/* one parked record's descriptor to the worker itself (§10.6, Hand-off): UCX matches the
 * 32 bytes with the application's receives, and the receive that matches them parses the
 * parked copy. Its sender field names the lane's endpoint. */
static int hand_off(struct cdt_ucx_ep_s *ep, uint64_t tag, uint32_t slot, unsigned char *copy,
                    size_t len)
{
    cdt_ucx_worker w = ep->w;
    /* a split-mode prefix's sender is the endpoint's peer id, whatever the producer wrote:
     * receives so name the endpoint and fail with it alone (§10.6, Hand-off). A single-mode
     * message is whole and keeps its zero bytes. */
    if (len >= CDT__UCX_PREFIX_SIZE && copy[5] == CDT__UCX_MODE_SPLIT)
        cdt__put_u64(copy + 32, ep->peer_id);
    unsigned char desc[CDT__UCX_PARK_DESC_SIZE];
    cdt__ucx_park_commit(w, slot, len, desc); /* parked first: the match may run in the send */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL};
    void *q = ucp_tag_send_nbx(w->self_ep, desc, sizeof desc, tag, &p);
    if (q == NULL)
        return CDT_SUCCESS; /* UCX took the 32 bytes (self's short message: the usual case) */
    if (UCS_PTR_IS_ERR(q) && UCS_PTR_STATUS(q) != UCS_ERR_NO_RESOURCE)
        return cdt__ucx_status(UCS_PTR_STATUS(q));
    /* not at once: the send keeps its own copy of the descriptor until it completes */
    unsigned char *kept = malloc(sizeof desc);
    if (kept == NULL)
        return CDT_ERR_NO_MEMORY;
    memcpy(kept, desc, sizeof desc);
    ucp_request_param_t pk = {.op_attr_mask =
                                  UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                              .cb.send = handed,
                              .user_data = kept};
    q = ucp_tag_send_nbx(w->self_ep, kept, sizeof desc, tag, &pk);
    if (q == NULL) {
        free(kept);
        return CDT_SUCCESS;
    }
    if (UCS_PTR_IS_ERR(q)) {
        free(kept);
        return cdt__ucx_status(UCS_PTR_STATUS(q));
    }
    return CDT_SUCCESS; /* handed frees it */
}

/* the parked copy of a record whose length passed the lane's checks (cdt__lane_head_take_into) */
struct park_get {
    cdt_ucx_worker w;
    uint32_t slot;
    unsigned char *copy;
};

static unsigned char *park_get(void *arg, size_t len)
{
    struct park_get *g = arg;
    g->copy = cdt__ucx_park_buf(g->w, len, &g->slot);
    return g->copy;
}

/* consumer: hand up to `max` records to the worker; the count, or CDT_ERR_PEER */
static int take_records(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l, int max)
{
    int n = 0;
    while (n < max) {
        /* a slot is reserved only for a record that passed its checks (its length within this
         * side's bound): a scribbled length allocates nothing */
        struct park_get g = {.w = ep->w, .copy = NULL};
        uint64_t tag;
        size_t len;
        int rc = cdt__lane_head_take_into(&l->rx, &tag, park_get, &g, &len);
        if (rc == 0)
            break;
        if (rc < 0) { /* no memory: the endpoint fails rather than lose a head */
            if (g.copy != NULL)
                cdt__ucx_park_unreserve(ep->w, g.slot);
            return CDT_ERR_PEER;
        }
        if (hand_off(ep, tag, g.slot, g.copy, len) != CDT_SUCCESS)
            return CDT_ERR_PEER;
        n++;
        cdt__ucx_test_end(ep, CDT__UCX_END_HEADS);
        if (ep->lane != l)
            return n; /* the endpoint ended in the hand-off: l is freed */
    }
    return n;
}

/* consumer: the switch's receive completed: 1 it is the lane's (records may be read from
 * now on), 0 not yet, -1 it is not (another length or nonce) */
static int switch_came(cdt__ucx_lane_ep *l)
{
    if (l->sw == NULL || !l->sw->done || l->heads_rx)
        return l->heads_rx ? 1 : 0;
    unsigned char want[SWITCH_SIZE];
    switch_encode(&l->rx, want);
    bool ok = l->sw->ok && l->sw->len == SWITCH_SIZE && memcmp(l->sw->buf, want, SWITCH_SIZE) == 0;
    free(l->sw);
    l->sw = NULL;
    l->heads_rx = ok;
    return ok ? 1 : -1;
}

int cdt__ucx_lane_heads_progress(struct cdt_ucx_ep_s *ep, bool *moved)
{
    cdt__ucx_lane_ep *l = ep->lane;
    /* producer: held heads go in order as room was released */
    if (l->heads_tx && l->held_head != NULL) {
        bool wrote = false;
        while (l->held_head != NULL) {
            cdt__ucx_held_head *h = l->held_head;
            int rc = cdt__lane_head_put(&l->tx, h->tag, h->data, h->len);
            if (rc < 0)
                return CDT_ERR_PEER;
            if (rc == 0)
                break;
            l->held_head = h->next;
            if (l->held_head == NULL)
                l->held_tail = NULL;
            wrote = true;
            cdt__ucx_send_sub_end(h->s, CDT_SUCCESS); /* may post its commit */
            free(h);
            cdt__ucx_test_end(ep, CDT__UCX_END_HEADS);
            if (ep->lane != l)
                return CDT_SUCCESS; /* the endpoint ended in the commit's send: l is freed */
        }
        if (wrote) {
            cdt__lane_heads_ring(&l->tx);
            *moved = true;
        }
    }
    /* consumer: the switch first, then the records */
    if (switch_came(l) < 0)
        return CDT_ERR_PEER; /* another length or nonce: the lane breaks */
    if (l->heads_rx) {
        if (l->rx_asleep) {
            cdt__lane_heads_awake(&l->rx);
            l->rx_asleep = false;
        }
        int n = take_records(ep, l, RECORDS_PER_CALL); /* l is freed if ep ended: not read */
        if (n < 0)
            return CDT_ERR_PEER;
        if (n > 0)
            *moved = true;
    }
    return CDT_SUCCESS;
}

void cdt__ucx_lane_heads_end(struct cdt_ucx_ep_s *ep, int status)
{
    cdt__ucx_lane_ep *l = ep->lane;
    for (cdt__ucx_held_head *h = l->held_head, *next; h != NULL; h = next) {
        next = h->next;
        cdt__ucx_send_sub_end(h->s, status);
        free(h);
    }
    l->held_head = l->held_tail = NULL;
    /* whole records of a producer that died are still its objects (§10.6, Failures); also
     * when its switch came in the progress call that saw it die */
    if (switch_came(l) == 1 && l->rx.error == CDT_SUCCESS && ep->w->self_ep != NULL)
        (void)take_records(ep, l, INT32_MAX);
    if (l->sw != NULL) {
        if (l->sw->done || l->sw->req == NULL) {
            free(l->sw);
        } else {
            l->sw->gone = true; /* its callback frees it */
            ucp_request_cancel(ep->w->ucp, l->sw->req);
        }
        l->sw = NULL;
    }
}

bool cdt__ucx_lane_heads_sleep(cdt_ucx_worker w)
{
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next) {
        cdt__ucx_lane_ep *l = ep->lane;
        if (l == NULL || !l->heads_rx || ep->status != CDT_SUCCESS)
            continue;
        int rc = cdt__lane_heads_sleep(&l->rx);
        if (rc != 0) { /* a record came (or the lane broke): progress sees it */
            cdt__lane_heads_awake(&l->rx);
            l->rx_asleep = false;
            return false;
        }
        l->rx_asleep = true;
    }
    return true;
}
