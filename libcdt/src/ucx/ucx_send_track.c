/*
 * ucx_send_track.c - the sends of an endpoint that are posted and not done: the endpoint's list
 * of them, ending them all when the endpoint fails or is closed, and the stall bound of sends
 * over a shared-memory FIFO. Below the send itself (ucx_send.c), the endpoints and progress.
 */
#include "ucx_internal.h"

void cdt__ucx_send_unlink(cdt_ucx_request r)
{
    struct cdt_ucx_ep_s *ep = r->ep;
    if (ep == NULL)
        return;
    if (r->fifo_counted) {
        r->fifo_counted = false;
        ep->w->fifo_sends--;
    }
    if (r->ep_prev != NULL)
        r->ep_prev->ep_next = r->ep_next;
    else
        ep->sends = r->ep_next;
    if (r->ep_next != NULL)
        r->ep_next->ep_prev = r->ep_prev;
    r->ep_next = r->ep_prev = NULL;
    r->ep = NULL;
}

void cdt__ucx_send_track(struct cdt_ucx_ep_s *ep, cdt_ucx_request r)
{
    if (r->done)
        return;
    r->ep = ep;
    r->ep_prev = NULL;
    r->ep_next = ep->sends;
    if (ep->sends != NULL)
        ep->sends->ep_prev = r;
    ep->sends = r;
    if (ep->am_fifo && ep->w->fifo_stall_ms >= 0) {
        /* a FIFO wedged by a peer that died inside its send never drains: bound the send */
        r->fifo_counted = true;
        ep->w->fifo_sends++;
        r->stall_deadline = cdt__ucx_now_ms() + ep->w->fifo_stall_ms;
        cdt__ucx_deadline_added(ep->w, r->stall_deadline);
    }
    if (ep->status != CDT_SUCCESS) /* it failed while the send was posted */
        cdt__ucx_ep_end_sends(ep, CDT_ERR_PEER);
}

void cdt__ucx_expire_sends(cdt_ucx_worker w, int64_t now)
{
    if (w->fifo_sends == 0)
        return;
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next) {
        for (cdt_ucx_request r = ep->sends, next; r != NULL; r = next) {
            next = r->ep_next;
            if (!r->fifo_counted || now <= r->stall_deadline)
                continue;
            /* ended as an endpoint's failure ends it: the object is never read again by this
             * process; over cma a late copy by the peer cannot complete an object (commit) */
            cdt__ucx_send_unlink(r);
            cdt__ucx_request_set_error(r, CDT_ERR_TIMEOUT);
            r->detached = true;
            cdt__ucx_request_finish(r);
        }
    }
}

int64_t cdt__ucx_next_stall(cdt_ucx_worker w)
{
    int64_t next = INT64_MAX;
    if (w->fifo_sends == 0)
        return next;
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next)
        for (cdt_ucx_request r = ep->sends; r != NULL; r = r->ep_next)
            if (r->fifo_counted && r->stall_deadline < next)
                next = r->stall_deadline;
    return next;
}

/* UCX 1.13 keeps a rendezvous send whose receiver died pending for ever when the endpoint's
 * keepalive runs over shared memory, also after the endpoint is closed (bench/results/
 * soak.findings.md). The endpoint's failure is still reported (its error callback runs), so
 * libcdt ends the sends itself: the request is done with `status` at once, and what UCX still
 * holds (the operation, the frame it may ask to pack) stays with the request until UCX lets go
 * (send_cb; a freed request waits in w->orphans). From here the object is never read again by
 * this process: the caller may free it as the status says.
 * Where the peer copies this process's memory itself (cma), an endpoint's failure does not say
 * that the peer died (a peer that closes its endpoint fails ours the same way), and UCX cannot
 * revoke its access (UCX_CMA_MEMORY_INVALIDATE only claims it): a live receiver may still copy
 * a region after the caller freed or changed it. The protocol makes that harmless: such an
 * object is complete only with its commit message, which an ended send never sends
 * (commit_send), so a late copy can only fail the receive; and the head buffer the receiver
 * may copy a head message from is quarantined, never reused (cdt__ucx_request_release). */
void cdt__ucx_ep_end_sends(struct cdt_ucx_ep_s *ep, int status)
{
    cdt__ucx_lane_ep_end(ep, status); /* the lane goes with the endpoint's sends */
    while (ep->sends != NULL) {
        cdt_ucx_request r = ep->sends;
        cdt__ucx_send_unlink(r); /* the endpoint may be freed before UCX ends the send */
        cdt__ucx_request_set_error(r, status);
        r->detached = true;
        cdt__ucx_request_finish(r);
    }
}
