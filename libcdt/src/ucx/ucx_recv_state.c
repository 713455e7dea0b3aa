/*
 * ucx_recv_state.c - the life of a receive after its post, shared by both modes: the list of
 * matched receives and their rest deadlines, failing, abandoning and completing a receive,
 * the drains that discard the parts of an object nobody receives, and the worker's progress
 * (UCX's, then those deadlines), the timer and signal that wake a sleeper on the worker's
 * event fd at a deadline or a completion, sleeping on that fd (contexts with wakeup), and
 * waiting on one UCX request. ucx_single.c and ucx_recv.c
 * build on it; it calls neither.
 */
#include "core/core.h"
#include "ucx_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

static unsigned char discard_byte[8]; /* drained messages land here, truncated */

/* ---- the deadline timer (wakeup): the worker's event fd becomes readable when its earliest
 * deadline is due, so that a thread asleep on it learns of a deadline with nothing arriving
 * on the wire. Armed early (a new deadline before the timer), and moved later only once it
 * fired: a deadline that ends early (its receive completed) costs one spurious wakeup, not
 * a system call per receive. ---- */

/* lock held: the timer fires at `at` (ms of cdt__ucx_now_ms, CLOCK_MONOTONIC), or never */
static void timer_set(cdt_ucx_worker w, int64_t at)
{
    struct itimerspec its = {0}; /* all zero: disarmed (its expiration count reset too) */
    if (at != INT64_MAX) {
        its.it_value.tv_sec = (time_t)(at / 1000);
        its.it_value.tv_nsec = (long)(at % 1000) * 1000000L;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1; /* zero would disarm it */
    }
    if (timerfd_settime(w->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        w->timer_at = at;
    else
        w->timer_at = 0; /* cannot happen with a valid fd; progress then expires every call */
}

/* lock held: a receive, drain or send is due at `deadline` (expired once now > deadline) */
void cdt__ucx_deadline_added(cdt_ucx_worker w, int64_t deadline)
{
    if (w->timer_fd >= 0 && deadline < INT64_MAX - 1 && deadline + 1 < w->timer_at)
        timer_set(w, deadline + 1);
}

/* lock held, after the deadlines were looked at: the timer at the earliest one left */
static void timer_rearm(cdt_ucx_worker w)
{
    int64_t next = INT64_MAX;
    for (cdt_ucx_request r = w->body_recvs; r != NULL; r = r->next)
        if (r->status == CDT_SUCCESS && r->rest_deadline < next)
            next = r->rest_deadline;
    for (cdt__ucx_drain *d = w->drains; d != NULL; d = d->next)
        if (d->deadline < next)
            next = d->deadline;
    int64_t stall = cdt__ucx_next_stall(w);
    if (stall < next)
        next = stall;
    timer_set(w, next < INT64_MAX - 1 ? next + 1 : INT64_MAX);
}

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
                     void *user_data)
{
    (void)st;
    (void)info;
    cdt__ucx_drain *d = user_data;
    ucp_request_free(ucx_req);
    d->fired = true;
    if (d->linked) {
        drain_unlink(d);
        free(d);
    }
}

/* lock held: discard the private message `tag` when it comes, at the latest until `deadline` */
void cdt__ucx_post_drain(cdt_ucx_worker w, uint64_t tag, int64_t deadline)
{
    if (w->destroying)
        return;
    cdt__ucx_drain *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return; /* the sender's operation then waits for its own timeout or close */
    d->w = w;
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = drain_cb,
        .user_data = d,
    };
    void *q = ucp_tag_recv_nbx(w->ucp, discard_byte, 0, tag, UINT64_MAX, &p);
    if (UCS_PTR_IS_ERR(q) || d->fired) {
        free(d);
        return;
    }
    d->ucx = q;
    d->deadline = deadline;
    d->prev = NULL;
    d->next = w->drains;
    if (w->drains != NULL)
        w->drains->prev = d;
    w->drains = d;
    d->linked = true;
    cdt__ucx_deadline_added(w, deadline);
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
        r->discard = true; /* the rest of its message arrives into nothing */
    r->outstanding++;      /* r->subs stays valid while the callbacks run */
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

void cdt__ucx_fail_body_recvs(cdt_ucx_worker w, int status)
{
    for (cdt_ucx_request r = w->body_recvs, next; r != NULL; r = next) {
        next = r->next;
        /* a single-mode message is one UCX operation: UCX fails it itself when its own
         * sender fails, and a receive from a healthy sender goes on */
        if (!r->single)
            cdt__ucx_recv_fail(r, status);
    }
}

void cdt__ucx_expire(cdt_ucx_worker w, int64_t now)
{
    cdt__ucx_expire_sends(w, now);
    cdt__ucx_close_parked(w);
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

void cdt__ucx_wake(cdt_ucx_worker w)
{
    if (w->efd >= 0 && !w->wake_pending) {
        ucp_worker_signal(w->ucp);
        w->wake_pending = true;
    }
}

unsigned cdt__ucx_progress(cdt_ucx_worker w)
{
    unsigned n = ucp_worker_progress(w->ucp);
    if (n > 0 && w->efd >= 0)
        cdt__ucx_wake(w); /* another thread asleep may have work in what this call handled */
    if (w->body_recvs != NULL || w->drains != NULL || w->fifo_sends > 0 || w->parked > 0 ||
        w->timer_at != INT64_MAX) {
        int64_t now = cdt__ucx_now_ms();
        bool timer_due = now >= w->timer_at;
        if (now >= w->next_expiry_ms || timer_due) {
            w->next_expiry_ms = now + 10;
            cdt__ucx_expire(w, now);
            if (timer_due)
                timer_rearm(w); /* also makes the event fd unreadable again */
        }
    }
    return n;
}

/* Sleeping instead of spinning (contexts with wakeup). UCX's rule: a thread may wait for the
 * event fd only after ucp_worker_arm said nothing is pending, and arm is only meaningful right
 * after progress returned 0; both run under the worker lock. Another thread may then progress
 * and complete the sleeper's request, consuming the events that would have woken it: every
 * completion signals the worker (cdt__ucx_request_finish), as does progress that handled
 * events; the deadline timer makes the fd readable when a rest deadline or drain is due; and
 * every sleep is bounded by CDT__UCX_SLEEP_MAX_MS, which keeps UCX's own timers (keepalive)
 * running. */
void cdt__ucx_sleep(cdt_ucx_worker w, int64_t deadline)
{
    if (w->efd < 0)
        return;
    pthread_mutex_lock(&w->lock);
    /* arm only when progress finds nothing more: UCX reports BUSY otherwise */
    bool armed = false;
    if (cdt__ucx_progress(w) == 0) {
        armed = ucp_worker_arm(w->ucp) == UCS_OK;
        cdt__ucx_armed(w);
    }
    pthread_mutex_unlock(&w->lock);
    if (!armed)
        return;
    int64_t wait = CDT__UCX_SLEEP_MAX_MS;
    if (deadline != INT64_MAX) {
        int64_t left = deadline - cdt__ucx_now_ms();
        wait = left < 0 ? 0 : left < wait ? left : wait;
    }
    struct pollfd pfd = {.fd = w->efd, .events = POLLIN};
    while (poll(&pfd, 1, (int)wait) < 0 && errno == EINTR) {
    }
}

/* lock not held: progress until the UCX request completes or the deadline passes.
 * Returns the UCX status, or UCS_ERR_TIMED_OUT (the request is then still pending). */
ucs_status_t cdt__ucx_wait_request(cdt_ucx_worker w, void *req, int64_t deadline)
{
    if (req == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    for (unsigned spin = 1;; spin++) {
        pthread_mutex_lock(&w->lock);
        cdt__ucx_progress(w);
        ucs_status_t st = ucp_request_check_status(req);
        if (st != UCS_INPROGRESS)
            ucp_request_free(req);
        pthread_mutex_unlock(&w->lock);
        if (st != UCS_INPROGRESS)
            return st;
        if (cdt__ucx_now_ms() > deadline)
            return UCS_ERR_TIMED_OUT;
        if (spin % CDT__UCX_SPINS_BEFORE_SLEEP == 0)
            cdt__ucx_sleep(w, deadline);
    }
}
