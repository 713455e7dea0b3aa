/*
 * ucx_lane.c - an endpoint's lanes (docs/TRANSPORT.md §10): the offer that follows the
 * endpoint's id on its UCX stream, the attach of a peer's offer, the progress that serves
 * grants and fragments, peer death seen through the lane's pidfds, the end of both lanes with
 * the endpoint, and what cdt_ucx_ep_transports says of them. Sends: ucx_lane_send.c; receives:
 * ucx_lane_recv.c. Every function here runs with the worker's lock held.
 */
#define _GNU_SOURCE /* sched_getcpu */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(((struct cdt_ucx_ep_s *)0)->lane_wire) == CDT__UCX_LANE_RECORD_SIZE,
               "the offer record's buffer");

int cdt__ucx_env_switch(const char *name, bool dflt, bool *on)
{
    const char *env = getenv(name);
    *on = dflt;
    if (env == NULL || *env == '\0')
        return CDT_SUCCESS;
    if (strcmp(env, "on") == 0 || strcmp(env, "off") == 0) {
        *on = env[1] == 'n';
        return CDT_SUCCESS;
    }
    return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
}

int cdt__ucx_lane_env(bool *on)
{
    return cdt__ucx_env_switch("CDT_UCX_LANE", true, on); /* the default (§10) */
}

static cdt__ucx_lane_ep *lane_of(struct cdt_ucx_ep_s *ep)
{
    if (ep->lane == NULL) {
        ep->lane = calloc(1, sizeof(*ep->lane));
        if (ep->lane != NULL) {
            ep->lane->ep = ep;
            ep->lane->tx.memfd = ep->lane->tx.pidfd = -1;
            ep->lane->rx.memfd = ep->lane->rx.pidfd = -1;
        }
    }
    return ep->lane;
}

static void offer_sent(void *req, ucs_status_t st, void *user_data)
{
    (void)st; /* an offer that could not go: the peer never attaches, the lane stays unused */
    (void)user_data;
    ucp_request_free(req);
}

/* ep's own segment goes (never attached, or the endpoint ends) */
static void tx_drop(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l)
{
    if (l->tx_made) {
        l->tx_made = false;
        ep->w->lanes_made--;
    }
    cdt__lane_close(&l->tx);
}

/* the record in ep->lane_wire goes on the endpoint's stream (right after its id) */
static void record_send(struct cdt_ucx_ep_s *ep)
{
    /* the bytes stay in the endpoint, whose memory outlives UCX's endpoint */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = offer_sent};
    void *q = ucp_stream_send_nbx(ep->ucp, ep->lane_wire, sizeof(ep->lane_wire), &p);
    (void)q; /* NULL: sent; an error: as if lost (never attached); else offer_sent frees it */
}

/* no lane offered on ep: the peer is told why (its owing ends at once; docs/TRANSPORT.md §10.2) */
static void none_send(struct cdt_ucx_ep_s *ep, const char *why)
{
    cdt__lane_record_none(why, ep->lane_wire);
    record_send(ep);
}

void cdt__ucx_lane_offer_send(struct cdt_ucx_ep_s *ep)
{
    if (!ep->w->lane_on) {
        none_send(ep, "off");
        return;
    }
    /* the peer shares this host (it copies this process's memory by cma) and messages do not
     * go through a shared-memory FIFO (those endpoints keep single mode) */
    if (!ep->lanes_known || !ep->peer_accesses_memory || ep->am_fifo) {
        ep->lane_why = !ep->lanes_known ? "no-lanes" : ep->am_fifo ? "fifo" : "not-local";
        none_send(ep, ep->lane_why);
        return;
    }
    cdt__ucx_lane_ep *l = lane_of(ep);
    if (l == NULL) {
        ep->lane_why = "no-memory";
        none_send(ep, ep->lane_why);
        return;
    }
    if (ep->w->lanes_made >= CDT__UCX_LANE_MAX_PEERS) { /* descriptors and memory: a bound */
        ep->lane_why = "limit";
        none_send(ep, ep->lane_why);
        return;
    }
    cdt__lane_offer offer;
    /* with small objects through the lane: a version 2 segment, its head ring (§10.6) */
    cdt__lane_params params = {.head_ring_bytes = ep->w->lane_heads ? 1u : 0u};
    int rc = cdt__lane_create(&params, &l->tx, &offer);
    if (rc != CDT_SUCCESS) {
        ep->lane_why = rc == CDT_ERR_UNSUPPORTED ? "no-memfd" : "limit";
        none_send(ep, ep->lane_why);
        return;
    }
    l->tx_made = true;
    ep->w->lanes_made++;
    ep->lane_why = "not-attached";
    cdt__lane_record_offer(&offer, ep->lane_wire);
    record_send(ep);
}

/* a no-lane record: keep the peer's why; a peer whose lane is off never maps this side's
 * segment, which goes at once */
static void none_record(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l, const char *why)
{
    snprintf(ep->lane_peer_why, sizeof(ep->lane_peer_why), "%s", why);
    if (strcmp(why, "off") == 0 && l->tx_made && !l->tx_attached)
        tx_drop(ep, l);
}

/* the peer's whole offer record came: map its segment, or say why not */
static void attach(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l)
{
    cdt_ucx_worker w = ep->w;
    cdt__lane_offer offer;
    char why[CDT__LANE_WHY_MAX + 1];
    if (!w->lane_on) {
        ep->lane_why = "off";
        return;
    }
    int kind = cdt__lane_record_parse(l->record, sizeof(l->record), &offer, why);
    if (kind == CDT__LANE_RECORD_NONE) {
        none_record(ep, l, why);
        return;
    }
    if (kind != CDT__LANE_RECORD_OFFER) {
        ep->lane_why = "bad-offer";
        return;
    }
    if (w->lanes_mapped >= CDT__UCX_LANE_MAX_PEERS) {
        ep->lane_why = "limit";
        return;
    }
    l->bounce = malloc(offer.frag_bytes);
    /* heads through the ring where this worker takes them; the commit in the data ring unless
     * the test hook makes this consumer one of an earlier release */
    uint32_t extra = cdt__ucx_lane_heads_features(w) |
                     (w->test_no_ring_commit ? 0u : CDT__LANE_FEATURE_RING_COMMIT) |
                     (w->lane_split ? CDT__LANE_FEATURE_SPLIT : 0u);
    uint32_t heads = extra & CDT__LANE_FEATURE_HEADS;
    int rc =
        l->bounce == NULL ? CDT_ERR_NO_MEMORY : cdt__lane_attach_features(&offer, &l->rx, extra);
    if (rc != CDT_SUCCESS) {
        free(l->bounce);
        l->bounce = NULL;
        ep->lane_why = rc == CDT_ERR_UNSUPPORTED ? "attach-refused" : "bad-segment";
        return;
    }
    l->rx_attached = true;
    w->lanes_mapped++;
    /* the producer switches this endpoint's heads to the ring: without the switch's receive
     * they would never be read, so the lane breaks (the endpoint fails) */
    if (heads != 0 && l->rx.head_ring_bytes != 0 && cdt__ucx_lane_heads_attached(ep) != 0)
        l->rx.error = CDT_ERR_PEER;
}

void cdt__ucx_lane_stream_bytes(struct cdt_ucx_ep_s *ep, const unsigned char *b, size_t n)
{
    cdt__ucx_lane_ep *l = NULL;
    if (ep->status == CDT_SUCCESS && ep->w->lane_on)
        l = lane_of(ep);
    if (l == NULL || l->record_got >= CDT__UCX_LANE_RECORD_SIZE)
        return; /* more than one offer, or none wanted: ignored */
    while (n > 0 && l->record_got < CDT__UCX_LANE_RECORD_SIZE) {
        l->record[l->record_got++] = *b++;
        n--;
    }
    if (l->record_got == CDT__UCX_LANE_RECORD_SIZE) {
        cdt__ucx_lane_owed_end(ep);
        attach(ep, l);
    }
}

void cdt__ucx_lane_owe(struct cdt_ucx_ep_s *ep)
{
    if (!ep->w->lane_on || ep->status != CDT_SUCCESS || ep->lane_owed ||
        (ep->lane != NULL && ep->lane->record_got >= CDT__UCX_LANE_RECORD_SIZE))
        return; /* nothing wanted, or the record came with the id */
    ep->lane_owed = true;
    ep->lane_owed_since = cdt__ucx_now_ms();
    ep->w->lane_owed++;
}

void cdt__ucx_lane_owed_end(struct cdt_ucx_ep_s *ep)
{
    if (ep->lane_owed) {
        ep->lane_owed = false;
        ep->w->lane_owed--;
    }
}

bool cdt__ucx_lane_ready(struct cdt_ucx_ep_s *ep)
{
    return __atomic_load_n(&ep->lane_ready, __ATOMIC_ACQUIRE);
}

bool cdt__ucx_lane_tx_taken(struct cdt_ucx_ep_s *ep)
{
    cdt__ucx_lane_ep *l = ep->lane;
    uint64_t left = 0;
    if (l == NULL || !l->tx_attached || cdt__lane_unreleased(&l->tx, &left) != CDT_SUCCESS)
        return true;
    return left == 0;
}

void cdt__ucx_lane_ep_end(struct cdt_ucx_ep_s *ep, int status)
{
    cdt__ucx_lane_owed_end(ep);
    cdt__ucx_lane_ep *l = ep->lane;
    if (l == NULL)
        return;
    cdt__ucx_lane_heads_end(ep, status); /* held heads, records left in the ring */
    ep->lane = NULL; /* what ends below may call back here (a send's end, a receive's failure) */
    __atomic_store_n(&ep->lane_ready, false, __ATOMIC_RELEASE);
    ep->lane_why = "ended";
    /* sends: never read their object again, nor commit it */
    cdt_ucx_request q = l->cur;
    if (q != NULL)
        q->lane_next = l->q_head;
    else
        q = l->q_head;
    while (q != NULL) {
        cdt_ucx_request next = q->lane_next;
        q->lane_next = NULL;
        q->detached = true;
        cdt__ucx_send_part_end(q, status);
        q = next;
    }
    /* a SPLIT sender's push under way into a receive's memory ends before the receive does */
    if (l->rx_attached)
        cdt__ucx_lane_split_drain(l);
    /* receives: their stream will never come; named by this endpoint (its failure or close),
     * as cdt__ucx_fail_body_recvs names the receives it fails, so that a caller can tell them
     * from another peer's doing (cdt_ucx_recv_info's failure, failed_by) */
    for (cdt__ucx_lane_in *e = l->in_head, *next; e != NULL; e = next) {
        next = e->next;
        if (e->r != NULL && e->r->status == CDT_SUCCESS)
            cdt__ucx_recv_failed_by(e->r, CDT_UCX_RECV_FAILURE_ENDPOINT, ep->peer_id);
        if (e->r != NULL)
            cdt__ucx_recv_fail(e->r, CDT_ERR_PEER); /* detaches it: e->r = NULL */
        cdt__ucx_lane_split_free(e);                /* and a receive held for the split, let go */
        free(e);
    }
    if (l->rx_attached)
        ep->w->lanes_mapped--;
    tx_drop(ep, l);
    cdt__lane_close(&l->rx);
    free(l->bounce);
    free(l);
}

/* lock held: the lane broke or its peer died: the endpoint fails as on UCX's report of it */
void cdt__ucx_lane_ep_fail(struct cdt_ucx_ep_s *ep)
{
    if (ep->status != CDT_SUCCESS)
        return;
    ep->status = CDT_ERR_PEER;
    cdt__ucx_ep_end_sends(ep, CDT_ERR_PEER);
    cdt__ucx_fail_body_recvs(ep, CDT_ERR_PEER);
}

/* whether the endpoint's lanes have work they wait for the peer to move */
static bool waiting(const cdt__ucx_lane_ep *l)
{
    return l->cur != NULL || l->q_head != NULL || l->in_head != NULL || l->held_head != NULL;
}

/* this side's CPU into the segments it shares with the peer (a store only when it changed) */
static void note_cpu(cdt__ucx_lane_ep *l, int cpu)
{
    if (l->tx_attached)
        cdt__lane_note_cpu(&l->tx, cpu);
    if (l->rx_attached)
        cdt__lane_note_cpu(&l->rx, cpu);
}

/* whether the peer last progressed on the CPU this side runs on (either segment says it) */
static bool peer_shares(const cdt__ucx_lane_ep *l, int cpu)
{
    if (cpu < 0)
        return false;
    return (l->rx_attached && cdt__lane_peer_cpu(&l->rx) == cpu) ||
           (l->tx_attached && cdt__lane_peer_cpu(&l->tx) == cpu);
}

/* ep_progress's answer when the endpoint ended inside it (its lanes are freed, l with them) */
enum { EP_ENDED = 1 };

/* one endpoint's lanes: 0, CDT_ERR_PEER when the endpoint must fail, or EP_ENDED when it ended
 * inside this call: a message posted here, a send or a receive completed here can end it (UCX
 * may call the endpoint's error handler from within ucp_tag_send_nbx), and then l is freed and
 * must not be read again. *moved: a grant, data or a release moved; *heads: a head went through
 * the head ring */
static int ep_progress(struct cdt_ucx_ep_s *ep, cdt__ucx_lane_ep *l, bool *moved, bool *heads)
{
    if (l->tx_made && !l->tx_attached) {
        int rc = cdt__lane_attached(&l->tx);
        if (rc < 0) { /* a consumer pid that names no process: no lane, sends go as before */
            tx_drop(ep, l);
            ep->lane_why = "attach-failed";
        } else if (rc == 1) {
            l->tx_attached = true;
            __atomic_store_n(&ep->lane_split, l->tx.split && ep->w->lane_split, __ATOMIC_RELAXED);
            __atomic_store_n(&ep->lane_ready, true, __ATOMIC_RELEASE);
            cdt__ucx_lane_heads_switch(ep); /* when the consumer takes heads from the ring */
            if (ep->lane != l)
                return EP_ENDED;
        }
    }
    if (l->heads_tx || l->sw != NULL || l->heads_rx) {
        if (l->rx_attached && l->rx.error != CDT_SUCCESS)
            return CDT_ERR_PEER;
        bool heads_moved = false;
        int rc = cdt__ucx_lane_heads_progress(ep, &heads_moved);
        if (ep->lane != l)
            return EP_ENDED;
        if (rc != CDT_SUCCESS)
            return CDT_ERR_PEER;
        if (heads_moved)
            l->idle_since = 0;
        *heads = heads_moved;
    }
    uint64_t tx_before = l->tx.prod_pos, rx_before = l->rx.cons_pos;
    uint64_t grants_before = l->rx.grants_posted;
    if (l->tx_attached && (l->cur != NULL || l->q_head != NULL)) {
        int rc = cdt__ucx_lane_pump_send(l);
        if (ep->lane != l)
            return EP_ENDED;
        if (rc < 0)
            return CDT_ERR_PEER;
    }
    if (l->rx_attached && l->in_head != NULL) {
        int rc = cdt__ucx_lane_pump_recv(l);
        if (ep->lane != l)
            return EP_ENDED;
        if (rc < 0)
            return CDT_ERR_PEER;
    }
    *moved = l->tx.prod_pos != tx_before || l->rx.cons_pos != rx_before ||
             l->rx.grants_posted != grants_before;
    if (*moved || !waiting(l)) {
        l->idle_since = 0;
        return CDT_SUCCESS;
    }
    /* waiting for the peer: is it still there? (at most once a CDT__UCX_LANE_POLL_MS) */
    int64_t now = cdt__ucx_now_ms();
    if (l->idle_since == 0) {
        l->idle_since = now;
    } else if (now - l->idle_since >= CDT__UCX_LANE_POLL_MS) {
        l->idle_since = now;
        if ((l->tx_attached && !cdt__lane_peer_alive(&l->tx)) ||
            (l->rx_attached && !cdt__lane_peer_alive(&l->rx)))
            return CDT_ERR_PEER;
    }
    return CDT_SUCCESS;
}

void cdt__ucx_lane_progress(cdt_ucx_worker w, unsigned ucx_events)
{
    /* an offer follows a peer's id on its stream, perhaps in a later chunk than the id: read
     * on every call while some endpoint owes one, else on one call in 64 (a stream poll on
     * every call slowed objects that do not use the lane; docs/TRANSPORT.md §10.2) */
    if (w->lane_on) {
        bool tick = (++w->lane_polls & 63) == 0;
        if (tick && w->lane_owed > 0) { /* peers that will send none: a bound */
            int64_t now = cdt__ucx_now_ms();
            for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next)
                if (ep->lane_owed && now - ep->lane_owed_since >= CDT__UCX_LANE_OFFER_WAIT_MS)
                    cdt__ucx_lane_owed_end(ep);
        }
        if (tick || w->lane_owed > 0)
            cdt__ucx_hello_poll(w);
    }
    bool any_waiting = false, any_moved = false, any_shared = false, any_heads = false;
    bool any_ring = false;  /* some endpoint takes heads from its ring (§10.6, Polling) */
    bool peer_here = false; /* some lane's peer last ran on this CPU */
    int cpu = -2;           /* asked for once a call, where a lane is attached */
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next) {
        cdt__ucx_lane_ep *l = ep->lane;
        if (l == NULL || ep->status != CDT_SUCCESS)
            continue;
        if (cpu == -2 && (l->tx_attached || l->rx_attached))
            cpu = sched_getcpu();
        note_cpu(l, cpu);
        bool moved = false, heads = false;
        int rc = ep_progress(ep, l, &moved, &heads);
        if (rc == EP_ENDED)
            continue;
        if (rc != CDT_SUCCESS) {
            cdt__ucx_lane_ep_fail(ep); /* frees the lanes */
            continue;
        }
        any_moved |= moved;
        any_waiting |= waiting(l);
        any_heads |= heads;
        any_ring |= l->heads_rx;
        bool here = peer_shares(l, cpu);
        peer_here |= here;
        any_shared |= !moved && waiting(l) && here;
    }
    w->ring_first = any_ring;
    /* a wait does not sleep on the event fd meanwhile: the peer's writes into the lane signal
     * nothing there (cdt__ucx_sleep) */
    w->lane_waiting = any_waiting;
    /* nothing moved while the peer has to: it may be waiting for this core (§10.3, Waiting).
     * At once where the peer last ran on this core: it waits in this core's run queue and
     * moves only once this side lets it run. Else not at once: a peer running on another core
     * moves within microseconds, and a yield on a busy machine hands this core to another
     * program for its whole time slice (milliseconds). And a call in which nothing at all
     * happened (no UCX event, no head, nothing in a lane) while a peer sits in this core's run
     * queue yields too, whatever it waits for: a message that peer is to send (a head, an
     * acknowledgement) comes only once it runs */
    bool nothing = !any_moved && !any_heads && ucx_events == 0;
    if (!any_waiting || any_moved)
        w->lane_idle = 0;
    if (any_shared || (peer_here && nothing))
        sched_yield();
    else if (any_waiting && !any_moved && ++w->lane_idle >= CDT__UCX_LANE_IDLE_SPINS)
        sched_yield();
}

void cdt__ucx_lane_describe(struct cdt_ucx_ep_s *ep, char *buf, size_t size)
{
    const cdt__ucx_lane_ep *l = ep->lane;
    size_t used = strlen(buf);
    if (!ep->w->lane_on) {
        snprintf(buf + used, size - used, " lane=none/off");
        return;
    }
    const char *why = ep->lane_why != NULL ? ep->lane_why : "not-offered";
    if (l != NULL && (l->tx_attached || l->rx_attached))
        snprintf(buf + used, size - used, " lane=memfd%s",
                 l->heads_tx || l->heads_rx ? "+heads" : "");
    else if (ep->lane_peer_why[0] != '\0' &&
             (ep->lane_why == NULL || strcmp(ep->lane_why, "not-attached") == 0))
        snprintf(buf + used, size - used, " lane=none/peer-%s", ep->lane_peer_why);
    else
        snprintf(buf + used, size - used, " lane=none/%s", why);
}
