/*
 * ucx_request_pool.c - a request's memory: taken from and given back to the worker's pool,
 * kept in the worker's orphan list while UCX still holds a freed request, and what a send
 * request keeps (frame, staging buffers) released. Below send, receive and the request API.
 */
#include "ucx_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* a request from one of the worker's slots (acquire: what its last owner wrote is seen) */
static cdt_ucx_request slot_take(cdt_ucx_worker w)
{
    for (int i = 0; i < CDT__UCX_REQ_SLOTS; i++) {
        if (__atomic_load_n(&w->req_slot[i], __ATOMIC_RELAXED) == NULL)
            continue;
        cdt_ucx_request r = __atomic_exchange_n(&w->req_slot[i], NULL, __ATOMIC_ACQUIRE);
        if (r != NULL)
            return r;
    }
    return NULL;
}

/* r into an empty slot of its worker (release); false when every slot is full */
static bool slot_put(cdt_ucx_worker w, cdt_ucx_request r)
{
    for (int i = 0; i < CDT__UCX_REQ_SLOTS; i++) {
        cdt_ucx_request empty = NULL;
        if (__atomic_load_n(&w->req_slot[i], __ATOMIC_RELAXED) == NULL &&
            __atomic_compare_exchange_n(&w->req_slot[i], &empty, r, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

cdt_ucx_request cdt__ucx_request_new(cdt_ucx_worker w, bool is_send)
{
    /* from the worker's slots or pool when it has one; the head buffer need not be zeroed,
     * only the fields before it */
    cdt_ucx_request r = slot_take(w);
    if (r == NULL) {
        pthread_mutex_lock(&w->cache_lock);
        r = w->req_pool;
        if (r != NULL) {
            w->req_pool = r->next;
            w->req_pooled--;
        }
        pthread_mutex_unlock(&w->cache_lock);
    }
    if (r == NULL)
        r = malloc(sizeof(*r));
    if (r == NULL)
        return NULL;
    memset(r, 0, offsetof(struct cdt_ucx_request_s, head));
    r->w = w;
    r->is_send = is_send;
    r->head_sub.req = r;
    r->head_sub.index = -1;
    r->tail_sub.req = r;
    r->tail_sub.index = -1;
    r->commit_sub.req = r;
    r->commit_sub.index = CDT__UCX_COMMIT_INDEX;
    return r;
}

void cdt__ucx_request_set_error(cdt_ucx_request r, int status)
{
    if (r->status == CDT_SUCCESS)
        r->status = status;
}

/* lock held: the request goes to w->orphans, to be released when UCX lets go of it */
void cdt__ucx_orphan(cdt_ucx_request r)
{
    cdt_ucx_worker w = r->w;
    r->orphaned = true;
    r->prev = NULL;
    r->next = w->orphans;
    if (w->orphans != NULL)
        w->orphans->prev = r;
    w->orphans = r;
}

void cdt__ucx_orphan_release(cdt_ucx_request r)
{
    cdt_ucx_worker w = r->w;
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        w->orphans = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    cdt__ucx_request_release(r);
}

void cdt__ucx_orphans_free_all(cdt_ucx_worker w)
{
    while (w->orphans != NULL) {
        if (w->orphans->is_send) /* the frame of a send UCX never let go of */
            cdt__ucx_send_release(w->orphans);
        cdt__ucx_orphan_release(w->orphans);
    }
}

void cdt__ucx_request_release(cdt_ucx_request r)
{
    cdt_ucx_worker w = r->w;
    if (r->is_send && r->head_exposed && r->status == CDT_ERR_PEER) {
        /* ended by its endpoint's failure: the peer died or closed its endpoint, and copies
         * nothing more out of this memory (UCX let go of the operation before this release) */
        pthread_mutex_lock(&w->cache_lock);
        w->q_released++;
        pthread_mutex_unlock(&w->cache_lock);
    } else if (r->is_send && r->head_exposed && (r->status != CDT_SUCCESS || r->detached)) {
        /* a live receiver may still copy the head message out of r->head (a rendezvous it
         * matches late): the memory keeps those bytes while one may (cdt__ucx_quarantine_scan),
         * where reuse would hand it another object's */
        r->q_gone = 0;
        cdt_ucx_request dropped = NULL;
        pthread_mutex_lock(&w->cache_lock);
        r->next = w->quarantine;
        w->quarantine = r;
        if (++w->quarantined > CDT__UCX_QUARANTINE_MAX) {
            /* the bound: the oldest goes (its endpoint most likely long gone) */
            cdt_ucx_request *pp = &w->quarantine;
            while ((*pp)->next != NULL)
                pp = &(*pp)->next;
            dropped = *pp;
            *pp = NULL;
            w->quarantined--;
            w->q_dropped++;
        }
        pthread_mutex_unlock(&w->cache_lock);
        free(dropped);
        return;
    }
    if (slot_put(w, r))
        return;
    pthread_mutex_lock(&w->cache_lock);
    if (w->req_pooled < CDT__UCX_REQ_POOL) {
        r->next = w->req_pool;
        w->req_pool = r;
        w->req_pooled++;
        r = NULL;
    }
    pthread_mutex_unlock(&w->cache_lock);
    free(r);
}

/* worker lock held: an endpoint with this id is open and usable */
static bool ep_live(cdt_ucx_worker w, uint64_t id)
{
    for (const struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next)
        if (ep->id == id && ep->status == CDT_SUCCESS && !ep->closing)
            return true;
    return false;
}

void cdt__ucx_quarantine_scan(cdt_ucx_worker w, int64_t now)
{
    if (now < w->q_next_scan)
        return;
    w->q_next_scan = now + 1000;
    cdt_ucx_request gone = NULL;
    pthread_mutex_lock(&w->cache_lock);
    for (cdt_ucx_request *pp = &w->quarantine; *pp != NULL;) {
        cdt_ucx_request r = *pp;
        /* a send ended here (its endpoint closed, a stall bound): the peer may copy until it
         * notices that the endpoint is gone, which it does within the grace */
        if (r->q_gone == 0 && !ep_live(w, r->q_ep))
            r->q_gone = now;
        if (r->q_gone != 0 && now - r->q_gone >= CDT__UCX_QUARANTINE_GRACE_MS) {
            *pp = r->next;
            r->next = gone;
            gone = r;
            w->quarantined--;
            w->q_released++;
            continue;
        }
        pp = &r->next;
    }
    pthread_mutex_unlock(&w->cache_lock);
    while (gone != NULL) {
        cdt_ucx_request r = gone;
        gone = r->next;
        free(r);
    }
}

void cdt__ucx_request_pool_clear(cdt_ucx_worker w)
{
    for (cdt_ucx_request r; (r = slot_take(w)) != NULL;)
        free(r);
    while (w->req_pool != NULL) {
        cdt_ucx_request r = w->req_pool;
        w->req_pool = r->next;
        free(r);
    }
    w->req_pooled = 0;
    while (w->quarantine != NULL) {
        cdt_ucx_request r = w->quarantine;
        w->quarantine = r->next;
        free(r);
    }
    w->quarantined = 0;
}

void cdt__ucx_send_release(cdt_ucx_request r)
{
    cdt_frame_free(r->frame); /* state_free of the send: nothing to report to the peer */
    r->frame = NULL;
    cdt__ucx_buf_put(r->w, r->bounce, r->bounce_len);
    r->bounce = NULL;
    for (cdt_count i = 0; i < r->nsubs; i++)
        cdt__ucx_buf_put(r->w, r->subs[i].tmp, (size_t)r->subs[i].len);
    free(r->subs);
    r->subs = NULL;
    r->nsubs = 0;
    free(r->split_iov);
    r->split_iov = NULL;
    r->split_n = 0;
}
