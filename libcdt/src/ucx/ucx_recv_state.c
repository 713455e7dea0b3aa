/*
 * ucx_recv_state.c - the life of a receive after its post, shared by both modes: the list of
 * matched receives and their rest deadlines, failing, abandoning and completing a receive, and
 * the drains that discard the parts of an object nobody receives. ucx_single.c, ucx_recv.c and
 * the worker's progress (ucx_progress.c) build on it; it calls none of them.
 */
#include "core/core.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

static unsigned char discard_byte[8]; /* drained messages land here, truncated */

/* ---- drains: receive and discard the parts of an object that is not received ---- */

static void drain_unlink(cdt__ucx_drain *d)
{
    cdt_ucx_worker w = d->w;
    if (d->prev != NULL)
        d->prev->next = d->next;
    else
        w->drains = d->next;
    if (d->next != NULL)
        d->next->prev = d->prev;
    d->linked = false;
}

static void drain_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                     void *user_data);

/* lock held: post d's receive (a zero-byte, truncating one) until one stays pending: a sweep's
 * receive may complete inside its post (a message already there), and then goes on with the
 * next. false: the drain ended (completed and not to go on, or the post failed). */
static bool drain_post(cdt__ucx_drain *d)
{
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = drain_cb,
        .user_data = d,
    };
    const uint64_t mask = d->sweep ? ~CDT__UCX_INDEX_MASK : UINT64_MAX;
    d->posting = true;
    for (;;) {
        d->fired = d->again = false;
        void *q = ucp_tag_recv_nbx(d->w->ucp, discard_byte, 0, d->tag, mask, &p);
        if (UCS_PTR_IS_ERR(q) || (d->fired && !d->again)) {
            d->posting = false;
            return false;
        }
        if (!d->fired) {
            d->ucx = q;
            d->posting = false;
            return true;
        }
    }
}

static void drain_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                     void *user_data)
{
    cdt__ucx_drain *d = user_data;
    /* a sweep goes on with the object's next message, until its commit (the sender's last)
     * or its deadline; a canceled one (deadline, destroy) ends */
    d->again = d->sweep && st != UCS_ERR_CANCELED && !d->w->destroying && info != NULL &&
               (info->sender_tag & CDT__UCX_INDEX_MASK) != CDT__UCX_COMMIT_INDEX &&
               d->deadline != INT64_MAX && cdt__ucx_now_ms() <= d->deadline;
    ucp_request_free(ucx_req);
    d->fired = true;
    d->ucx = NULL;
    if (d->posting)
        return; /* inside drain_post, which goes on or ends it */
    if (d->again && drain_post(d))
        return;
    if (d->linked) {
        drain_unlink(d);
        free(d);
    }
}

/* lock held: link a posted drain into the worker's list */
static void drain_link(cdt_ucx_worker w, cdt__ucx_drain *d)
{
    d->prev = NULL;
    d->next = w->drains;
    if (w->drains != NULL)
        w->drains->prev = d;
    w->drains = d;
    d->linked = true;
    cdt__ucx_deadline_added(w, d->deadline);
}

static void drain_start(cdt_ucx_worker w, uint64_t tag, bool sweep, int64_t deadline)
{
    if (w->destroying)
        return;
    cdt__ucx_drain *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return; /* the sender's operation then waits for its own timeout or close */
    d->w = w;
    d->tag = tag;
    d->sweep = sweep;
    d->deadline = deadline;
    if (!drain_post(d)) {
        free(d);
        return;
    }
    drain_link(w, d);
}

/* lock held: discard the private message `tag` when it comes, at the latest until `deadline` */
void cdt__ucx_post_drain(cdt_ucx_worker w, uint64_t tag, int64_t deadline)
{
    drain_start(w, tag, false, deadline);
}

void cdt__ucx_post_sweep(cdt_ucx_worker w, uint64_t key, int64_t deadline)
{
    drain_start(w, cdt__ucx_private_tag(key, 0), true, deadline);
}

void cdt__ucx_drains_cancel_all(cdt_ucx_worker w)
{
    for (cdt__ucx_drain *d = w->drains, *next; d != NULL; d = next) {
        next = d->next;
        d->deadline = INT64_MAX;
        ucp_request_cancel(w->ucp, d->ucx); /* may call drain_cb, which frees d */
    }
}

void cdt__ucx_drains_free_all(cdt_ucx_worker w)
{
    while (w->drains != NULL) {
        cdt__ucx_drain *d = w->drains;
        drain_unlink(d);
        free(d);
    }
}

/* how long the drains of r's object wait for the sender */
int64_t cdt__ucx_drain_deadline(cdt_ucx_request r)
{
    int64_t ms = r->rest_timeout_ms >= 0 ? r->rest_timeout_ms : CDT__UCX_DEFAULT_REST_TIMEOUT_MS;
    return cdt__ucx_now_ms() + ms;
}

void cdt__ucx_body_link(cdt_ucx_request r)
{
    cdt_ucx_worker w = r->w;
    r->prev = NULL;
    r->next = w->body_recvs;
    if (w->body_recvs != NULL)
        w->body_recvs->prev = r;
    w->body_recvs = r;
    r->in_body = true;
}

static void body_unlink(cdt_ucx_request r)
{
    if (!r->in_body)
        return;
    cdt_ucx_worker w = r->w;
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        w->body_recvs = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->in_body = false;
}

void cdt__ucx_recv_done(cdt_ucx_request r)
{
    if (r->dec != NULL) {
        int rc = r->status == CDT_SUCCESS ? cdt_decoder_finish(r->dec) : CDT_SUCCESS;
        int rc2 = cdt_decoder_free(r->dec);
        r->dec = NULL;
        if (rc == CDT_SUCCESS)
            rc = rc2;
        if (rc != CDT_SUCCESS)
            cdt__ucx_request_set_error(r, rc);
    }
    for (cdt_count i = 0; i < r->nsubs; i++)
        cdt__ucx_buf_put(r->w, r->subs[i].tmp, (size_t)r->subs[i].len);
    free(r->subs);
    r->subs = NULL;
    r->nsubs = 0;
    cdt__ucx_buf_put(r->w, r->stream, (size_t)r->stream_len);
    r->stream = NULL;
    free(r->lane_hdr); /* a header that was still coming through the lane */
    r->lane_hdr = NULL;
    cdt__ucx_single_clear(r);
    body_unlink(r);
    cdt__type_release(r->type); /* the reference irecv took */
    r->type = NULL;
    cdt__ucx_request_finish(r);
}

/* lock held: stop the receive with `status`. Its receives that have not matched a message are
 * canceled (their callbacks run inside ucp_request_cancel and post drains); those that have
 * finish on their own, and the request completes after the last of them: until then UCX may
 * still write into the receive's memory. */
void cdt__ucx_recv_fail(cdt_ucx_request r, int status)
{
    if (r->done)
        return;
    cdt__ucx_request_set_error(r, status);
    if (r->single)
        r->discard = true;  /* the rest of its message arrives into nothing */
    r->outstanding++;       /* r->subs stays valid while the callbacks run */
    if (r->lane_in != NULL) /* its lane stream goes on, released unread */
        cdt__ucx_lane_detach(r);
    if (r->tail_sub.ucx != NULL)
        ucp_request_cancel(r->w->ucp, r->tail_sub.ucx);
    if (r->commit_sub.ucx != NULL)
        ucp_request_cancel(r->w->ucp, r->commit_sub.ucx);
    for (cdt_count i = 0; i < r->nsubs; i++)
        if (r->subs[i].ucx != NULL)
            ucp_request_cancel(r->w->ucp, r->subs[i].ucx);
    if (--r->outstanding == 0 || r->single)
        /* a single-mode message still moving writes nothing more (discard): the receive
         * completes now, not when a slow or stalled sender finishes the message. The
         * request's memory stays until UCX lets go of the message (head_cb). */
        cdt__ucx_recv_done(r);
}

void cdt__ucx_recv_failed_by(cdt_ucx_request r, int how, uint64_t peer)
{
    if (r->info.failure != CDT_UCX_RECV_FAILURE_NONE)
        return; /* the first cause only */
    if (peer == 0 && r->sender != 0)
        /* UCX aborted a message: was this process's endpoint to the sender failed by then? */
        for (struct cdt_ucx_ep_s *e = r->w->eps; e != NULL; e = e->next)
            if (e->peer_id == r->sender && e->status != CDT_SUCCESS)
                peer = r->sender;
    r->info.failure = how;
    r->info.failed_by = peer;
}

void cdt__ucx_fail_body_recvs(struct cdt_ucx_ep_s *ep, int status)
{
    cdt_ucx_worker w = ep->w;
    /* an endpoint's id comes before its first object, on the same lane: whatever came through
     * this endpoint, its id has arrived, perhaps in this very progress call. Read now, before
     * anything is failed (ucx_hello.c); an endpoint whose id never came brought no object, and
     * fails no receive */
    if (!w->destroying)
        cdt__ucx_hello_poll(w);
    if (ep->peer_id == 0)
        return;
    for (cdt_ucx_request r = w->body_recvs, next; r != NULL; r = next) {
        next = r->next;
        /* a single-mode message is one UCX operation: UCX fails it itself when its own
         * sender fails, and a receive from a healthy sender goes on */
        if (!r->single && r->sender == ep->peer_id) {
            if (r->status == CDT_SUCCESS)
                cdt__ucx_recv_failed_by(r, CDT_UCX_RECV_FAILURE_ENDPOINT, ep->peer_id);
            cdt__ucx_recv_fail(r, status);
        }
    }
}

/* lock held: fail matched receives past their rest deadline, cancel expired drains */
void cdt__ucx_expire_recvs(cdt_ucx_worker w, int64_t now)
{
    for (cdt_ucx_request r = w->body_recvs, next; r != NULL; r = next) {
        next = r->next;
        if (now > r->rest_deadline && r->status == CDT_SUCCESS)
            cdt__ucx_recv_fail(r, CDT_ERR_TIMEOUT); /* the peer did not send the rest in time */
    }
    for (cdt__ucx_drain *d = w->drains, *next; d != NULL; d = next) {
        next = d->next;
        if (now > d->deadline) {
            d->deadline = INT64_MAX; /* cancel once; a message already moving completes */
            ucp_request_cancel(w->ucp, d->ucx);
        }
    }
}

/* lock held: the earliest rest deadline or drain deadline (INT64_MAX: none) */
int64_t cdt__ucx_recv_next_deadline(cdt_ucx_worker w)
{
    int64_t next = INT64_MAX;
    for (cdt_ucx_request r = w->body_recvs; r != NULL; r = r->next)
        if (r->status == CDT_SUCCESS && r->rest_deadline < next)
            next = r->rest_deadline;
    for (cdt__ucx_drain *d = w->drains; d != NULL; d = d->next)
        if (d->deadline < next)
            next = d->deadline;
    return next;
}

void cdt__ucx_recv_abandon(cdt_ucx_request r, int status)
{
    if (r->done)
        return;
    if (!r->matched) {
        /* the head receive is canceled. If UCX had matched a message to it already (a
         * rendezvous whose data has not come, perhaps because its sender does not progress),
         * the cancel cannot take it back: the receive completes now anyway, and what still
         * arrives goes nowhere (discard). head_cb lets go of the request when UCX does, and
         * drains the parts of a split-mode head. */
        r->abandon = status;
        if (r->head_sub.ucx != NULL)
            ucp_request_cancel(r->w->ucp, r->head_sub.ucx);
        if (!r->done && r->head_sub.ucx != NULL) {
            cdt__ucx_request_set_error(r, status);
            r->discard = true;
            cdt__ucx_recv_done(r);
        }
        return;
    }
    if (r->dec == NULL && r->tail_sub.ucx == NULL)
        r->abandon = status; /* the head is being processed: body_ready drains */
    cdt__ucx_recv_fail(r, status);
}

void cdt__ucx_recv_matched(cdt_ucx_request r)
{
    r->matched = true;
    r->rest_deadline = r->rest_timeout_ms < 0 ? INT64_MAX : cdt__ucx_now_ms() + r->rest_timeout_ms;
    cdt__ucx_body_link(r);
    cdt__ucx_deadline_added(r->w, r->rest_deadline);
}
