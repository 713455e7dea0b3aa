/*
 * ucx_progress.c - the worker's progress: UCX's (only when due while a head ring is polled),
 * the lanes, then the deadlines of every layer below (rest
 * timeouts and drains of the receive side, FIFO stall bounds of sends, parked endpoints), the
 * timer that wakes a sleeper on the worker's event fd at the earliest of them, sleeping on that
 * fd (contexts with wakeup), and waiting on one UCX request. Above ucx_recv_state.c,
 * ucx_send_track.c and ucx_ep_park.c; below everything that blocks.
 */
#include "ucx_internal.h"

#include <errno.h>
#include <poll.h>

/* lock held, after the deadlines were looked at: the timer at the earliest one left */
static void timer_rearm(cdt_ucx_worker w)
{
    int64_t next = cdt__ucx_recv_next_deadline(w);
    int64_t stall = cdt__ucx_next_stall(w);
    if (stall < next)
        next = stall;
    cdt__ucx_timer_set(w, next < INT64_MAX - 1 ? next + 1 : INT64_MAX);
}

/* lock held: what is due at `now` ends: sends past their FIFO stall bound, parked endpoints
 * whose flush ended, receives past their rest deadline, expired drains, quarantined head
 * buffers no reader can reach any more */
void cdt__ucx_expire(cdt_ucx_worker w, int64_t now)
{
    cdt__ucx_expire_sends(w, now);
    cdt__ucx_close_parked(w);
    cdt__ucx_expire_recvs(w, now);
    cdt__ucx_quarantine_scan(w, now);
}

/* Ring first (docs/TRANSPORT.md §10.6, Polling): while some endpoint takes heads from its ring,
 * ucp_worker_progress (on the default a system call: TCP's epoll poll) runs only when due, so a
 * spinning wait polls the rings many times between two of them instead of once after each;
 * a ring record needs no UCX progress (its hand-off matches inside the send on `self`). Not
 * while lane objects are in flight: the waits of §10.3 count calls, tuned on calls that each
 * made the system call */
static unsigned progress(cdt_ucx_worker w, bool ucx)
{
    unsigned n = 0;
    if (ucx || !w->ring_first || w->ucx_busy || w->lane_waiting ||
        ++w->ring_turns >= CDT__UCX_RING_TURNS) {
        w->ring_turns = 0;
        n = ucp_worker_progress(w->ucp);
        w->ucx_busy = n > 0; /* UCX has work: on the next call too */
    }
    if (w->hello_waiting > 0)
        cdt__ucx_hello_poll(w); /* peer ids that came (ucx_hello.c) */
    if (w->lane_on || w->lanes_mapped > 0)
        cdt__ucx_lane_progress(w, n); /* heads, offers, grants, fragments (ucx_lane.c) */
    else
        w->ring_first = false;
    if (n > 0 && w->efd >= 0)
        cdt__ucx_wake(w); /* another thread asleep may have work in what this call handled */
    if (w->body_recvs != NULL || w->drains != NULL || w->fifo_sends > 0 || w->parked > 0 ||
        w->timer_at != INT64_MAX || __atomic_load_n(&w->quarantined, __ATOMIC_RELAXED) > 0) {
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

unsigned cdt__ucx_progress(cdt_ucx_worker w)
{
    return progress(w, false);
}

unsigned cdt__ucx_progress_ucx(cdt_ucx_worker w)
{
    return progress(w, true);
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
    /* arm only when progress finds nothing more: UCX reports BUSY otherwise. Nor while lane
     * objects are in flight: the peer moves them through shared memory, which wakes nothing
     * (docs/TRANSPORT.md §10.3); the wait spins on, yielding its core when nothing moved */
    bool armed = false;
    if (cdt__ucx_progress_ucx(w) == 0 && !w->lane_waiting && cdt__ucx_lane_heads_sleep(w)) {
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
