/*
 * ucx_wakeup.c - the worker's event fd for an application's event loop (cdt_ucx_worker_fd,
 * cdt_ucx_worker_arm), and making it (cdt__ucx_wakeup_open). The fd is an epoll set of UCX's
 * own event fd and a timer set to the worker's earliest deadline (cdt__ucx_deadline_added, and
 * progress rearms it: ucx_progress.c), so a sleeper wakes for a deadline too; every completion
 * signals it (cdt__ucx_wake). The library's own blocking calls sleep on the same fd through
 * cdt__ucx_sleep (ucx_progress.c, beside the progress it pairs with). Calls no other file.
 */
#include "ucx_internal.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* ---- the deadline timer (wakeup): the worker's event fd becomes readable when its earliest
 * deadline is due, so that a thread asleep on it learns of a deadline with nothing arriving
 * on the wire. Armed early (a new deadline before the timer), and moved later only once it
 * fired: a deadline that ends early (its receive completed) costs one spurious wakeup, not
 * a system call per receive. ---- */

/* lock held: the timer fires at `at` (ms of cdt__ucx_now_ms, CLOCK_MONOTONIC), or never */
void cdt__ucx_timer_set(cdt_ucx_worker w, int64_t at)
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
        cdt__ucx_timer_set(w, deadline + 1);
}

void cdt__ucx_wake(cdt_ucx_worker w)
{
    if (w->efd >= 0 && !w->wake_pending) {
        ucp_worker_signal(w->ucp);
        w->wake_pending = true;
    }
}

int cdt__ucx_wakeup_open(cdt_ucx_worker w)
{
    w->efd = w->ucx_efd = w->timer_fd = -1;
    w->timer_at = INT64_MAX;
    if (!w->ctx->wakeup)
        return CDT_SUCCESS;
    if (ucp_worker_get_efd(w->ucp, &w->ucx_efd) != UCS_OK)
        return CDT_ERR_TRANSPORT;
    int set = epoll_create1(EPOLL_CLOEXEC);
    int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    /* level-triggered: readable while UCX has events or the timer has fired and was not reset
     * (progress resets it when it looks at the deadlines) */
    struct epoll_event ucx_ev = {.events = EPOLLIN, .data.fd = w->ucx_efd};
    struct epoll_event timer_ev = {.events = EPOLLIN, .data.fd = timer};
    if (set < 0 || timer < 0 || epoll_ctl(set, EPOLL_CTL_ADD, w->ucx_efd, &ucx_ev) != 0 ||
        epoll_ctl(set, EPOLL_CTL_ADD, timer, &timer_ev) != 0) {
        if (set >= 0)
            close(set);
        if (timer >= 0)
            close(timer);
        w->ucx_efd = -1;
        return CDT_ERR_TRANSPORT;
    }
    w->efd = set;
    w->timer_fd = timer;
    return CDT_SUCCESS;
}

void cdt__ucx_wakeup_close(cdt_ucx_worker w)
{
    if (w->efd >= 0)
        close(w->efd);
    if (w->timer_fd >= 0)
        close(w->timer_fd);
    w->efd = w->timer_fd = w->ucx_efd = -1;
}

int cdt_ucx_worker_fd(cdt_ucx_worker worker, int *fd)
{
    if (worker == NULL || fd == NULL)
        return CDT_ERR_INVALID_ARG;
    if (worker->efd < 0)
        return CDT_ERR_UNSUPPORTED;
    *fd = worker->efd;
    return CDT_SUCCESS;
}

int cdt_ucx_worker_arm(cdt_ucx_worker worker)
{
    if (worker == NULL)
        return CDT_ERR_INVALID_ARG;
    if (worker->efd < 0)
        return CDT_ERR_UNSUPPORTED;
    pthread_mutex_lock(&worker->lock);
    /* the peer moves lane objects in flight, which wakes no fd; a head ring's record published
     * before its consumer said it sleeps rings no doorbell (docs/TRANSPORT.md §10.6) */
    /* and UCX itself: progress may have skipped it for the rings (§10.6, Polling), and arming
     * is meaningful only right after a progress that found nothing */
    if ((worker->ring_first && cdt__ucx_progress_ucx(worker) > 0) || worker->lane_waiting ||
        !cdt__ucx_lane_heads_sleep(worker)) {
        pthread_mutex_unlock(&worker->lock);
        return CDT_ERR_BUSY;
    }
    ucs_status_t st = ucp_worker_arm(worker->ucp);
    cdt__ucx_armed(worker); /* the next completion signals again */
    pthread_mutex_unlock(&worker->lock);
    if (st == UCS_OK)
        return CDT_SUCCESS;
    return st == UCS_ERR_BUSY ? CDT_ERR_BUSY : CDT_ERR_TRANSPORT;
}
