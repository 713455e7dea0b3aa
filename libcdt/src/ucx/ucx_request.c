/*
 * ucx_request.c - requests: test, wait (bounded), cancel, free; the blocking send and receive.
 */
#include "ucx_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* lock held: UCX still holds the done request's memory. A single-mode receive completes when
 * it fails, while UCX may still deliver the rest of its message (into nothing), and a send
 * ended by its endpoint's failure or close may still be held by UCX. */
static bool held_by_ucx(cdt_ucx_request r)
{
    return r->is_send ? r->outstanding > 0 : r->head_sub.ucx != NULL;
}

int cdt_ucx_request_test(cdt_ucx_request request)
{
    if (request == NULL)
        return CDT_ERR_INVALID_ARG;
    /* a done request's status is final: no lock needed to read it */
    if (__atomic_load_n(&request->done, __ATOMIC_ACQUIRE))
        return request->status;
    cdt_ucx_worker w = request->w;
    pthread_mutex_lock(&w->lock);
    if (!request->done)
        cdt__ucx_progress(w);
    int rc = request->done ? request->status : CDT_INPROGRESS;
    /* done and seen under the lock: whoever completed it has let go, and nothing refers to it
     * any more unless UCX still holds it; the free then needs no lock */
    if (request->done && !held_by_ucx(request))
        request->settled = true;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int cdt_ucx_request_wait(cdt_ucx_request request, int64_t timeout_ms)
{
    if (request == NULL)
        return CDT_ERR_INVALID_ARG;
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : cdt__ucx_now_ms() + timeout_ms;
    for (unsigned spin = 1;; spin++) {
        int rc = cdt_ucx_request_test(request);
        if (rc != CDT_INPROGRESS)
            return rc;
        if ((spin & 63) == 0) {
            if (cdt__ucx_now_ms() > deadline)
                return CDT_ERR_TIMEOUT;
            /* with wakeup, sleep once a short spin found nothing (no-op without it) */
            if (spin >= CDT__UCX_SPINS_BEFORE_SLEEP) {
                cdt__ucx_sleep(request->w, deadline);
                spin = 0;
            }
        }
    }
}

int cdt_ucx_request_cancel(cdt_ucx_request request)
{
    if (request == NULL)
        return CDT_ERR_INVALID_ARG;
    if (request->is_send)
        return CDT_ERR_UNSUPPORTED;
    cdt_ucx_worker w = request->w;
    pthread_mutex_lock(&w->lock);
    if (!request->done)
        cdt__ucx_recv_abandon(request, CDT_ERR_CANCELED);
    pthread_mutex_unlock(&w->lock);
    return CDT_SUCCESS;
}

static bool recv_info_mask_valid(const cdt_ucx_recv_info *info)
{
    return info->field_mask != 0 && (info->field_mask & ~(uint64_t)CDT_UCX_RECV_INFO_ALL) == 0;
}

/* only the fields asked for: a caller compiled against an older header has no others */
static void recv_info_copy(cdt_ucx_recv_info *dst, const cdt_ucx_recv_info *src)
{
    uint64_t mask = dst->field_mask;
    if (mask & CDT_UCX_RECV_INFO_TAG)
        dst->tag = src->tag;
    if (mask & CDT_UCX_RECV_INFO_FRAME_SIZE)
        dst->frame_size = src->frame_size;
    if (mask & CDT_UCX_RECV_INFO_PACKED_SIZE)
        dst->packed_size = src->packed_size;
    if (mask & CDT_UCX_RECV_INFO_REGION_COUNT)
        dst->region_count = src->region_count;
    if (mask & CDT_UCX_RECV_INFO_REGION_BYTES)
        dst->region_bytes = src->region_bytes;
    if (mask & CDT_UCX_RECV_INFO_SENDER)
        dst->sender = src->sender;
    if (mask & CDT_UCX_RECV_INFO_FAILURE) {
        dst->failure = src->failure;
        dst->failed_by = src->failed_by;
    }
}

/* lock held or the request done: a receive that failed after its message matched still says
 * whose message it was (the tag, the sending endpoint) and what failed it, if asked for;
 * nothing else is written */
static void failed_recv_tag(cdt_ucx_recv_info *info, cdt_ucx_request r)
{
    if (!r->done || !r->tag_known)
        return;
    if (info->field_mask & CDT_UCX_RECV_INFO_TAG)
        info->tag = r->info.tag;
    if (info->field_mask & CDT_UCX_RECV_INFO_SENDER)
        info->sender = r->info.sender;
    if (info->field_mask & CDT_UCX_RECV_INFO_FAILURE) {
        info->failure = r->info.failure;
        info->failed_by = r->info.failed_by;
    }
}

int cdt_ucx_request_recv_info(cdt_ucx_request request, cdt_ucx_recv_info *info)
{
    if (request == NULL || info == NULL || request->is_send || !recv_info_mask_valid(info))
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&request->w->lock);
    int rc = !request->done ? CDT_ERR_ORDER : request->status;
    if (rc == CDT_SUCCESS)
        recv_info_copy(info, &request->info);
    else
        failed_recv_tag(info, request);
    pthread_mutex_unlock(&request->w->lock);
    return rc;
}

int cdt_ucx_request_free(cdt_ucx_request request)
{
    if (request == NULL)
        return CDT_SUCCESS;
    if (request->settled) {
        cdt__ucx_request_release(request);
        return CDT_SUCCESS;
    }
    cdt_ucx_worker w = request->w;
    pthread_mutex_lock(&w->lock);
    bool done = request->done;
    bool live = done && held_by_ucx(request); /* the request's memory is UCX's until then */
    if (live)
        cdt__ucx_orphan(request);
    pthread_mutex_unlock(&w->lock);
    if (!done)
        return CDT_ERR_BUSY;
    if (!live)
        cdt__ucx_request_release(request);
    return CDT_SUCCESS;
}

int cdt_ucx_send(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                 int64_t timeout_ms)
{
    cdt_ucx_request r;
    int rc = cdt_ucx_isend(ep, buf, count, type, tag, &r);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt_ucx_request_wait(r, timeout_ms);
    if (rc != CDT_SUCCESS) { /* whom, over what: cdt_ucx_last_error */
        pthread_mutex_lock(&ep->w->lock);
        cdt__ucx_fail_detail("send to", NULL, ep, rc, NULL);
        pthread_mutex_unlock(&ep->w->lock);
    }
    if (rc != CDT_ERR_TIMEOUT) {
        cdt_ucx_request_free(r);
        return rc;
    }
    /* on timeout the send goes on (UCX still reads the object): the worker frees the request
     * when it completes, or at cdt_ucx_worker_destroy */
    cdt_ucx_worker w = r->w;
    pthread_mutex_lock(&w->lock);
    bool finished = r->done && r->outstanding == 0; /* it completed after the wait gave up */
    if (!finished)
        cdt__ucx_orphan(r);
    pthread_mutex_unlock(&w->lock);
    if (finished)
        cdt__ucx_request_release(r);
    return rc;
}

int cdt_ucx_recv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                 cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params, cdt_ucx_recv_info *info,
                 int64_t timeout_ms)
{
    if (info != NULL && !recv_info_mask_valid(info))
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_request r;
    int rc = cdt_ucx_irecv(worker, buf, count, type, tag, tag_mask, params, &r);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt_ucx_request_wait(r, timeout_ms);
    if (rc == CDT_ERR_TIMEOUT) {
        /* Abandon the receive and wait until UCX can no longer write into the caller's memory:
         * receives not matched yet are canceled at once; a region whose data is already moving
         * finishes (or fails with its peer). Never return while one is still posted. */
        cdt_ucx_request_cancel(r);
        rc = cdt_ucx_request_wait(r, CDT_UCX_INFINITE);
        if (rc == CDT_ERR_CANCELED)
            rc = CDT_ERR_TIMEOUT;
    }
    if (rc == CDT_SUCCESS && info != NULL)
        recv_info_copy(info, &r->info);
    else if (info != NULL)
        failed_recv_tag(info, r);
    cdt_ucx_request_free(r);
    return rc;
}
