/*
 * ucx_ep_park.c - endpoints whose close waits for a flush in flight: parked with it, and closed
 * by force from progress once it ended. Below the endpoints (ucx_endpoint.c) and progress.
 */
#include "ucx_internal.h"

/* lock held: the close of an endpoint with a flush still in flight waits for that flush. UCX
 * 1.22 keeps a resume callback of a pending flush that reads the endpoint and runs it after a
 * forced close freed the endpoint (a crash in ucp_ep_flush_progress, found by the soak on UCX
 * 1.22; `transport.close_pending_flush`). So the endpoint is parked with its flush, its sends
 * ended, and closed by force when the flush ends (cdt__ucx_close_parked, from progress); its
 * memory stays with the worker. */
void cdt__ucx_ep_park(struct cdt_ucx_ep_s *ep, void *flush)
{
    ep->parked_flush = flush;
    ep->closing = true;
    ep->w->parked++;
    cdt__ucx_ep_end_sends(ep, ep->status != CDT_SUCCESS ? ep->status : CDT_ERR_CANCELED);
}

void cdt__ucx_close_parked(cdt_ucx_worker w)
{
    if (w->parked == 0)
        return;
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next) {
        if (ep->parked_flush == NULL ||
            ucp_request_check_status(ep->parked_flush) == UCS_INPROGRESS)
            continue;
        ucp_request_free(ep->parked_flush);
        ep->parked_flush = NULL;
        w->parked--;
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
        void *req = ucp_ep_close_nbx(ep->ucp, &p);
        if (req != NULL && !UCS_PTR_IS_ERR(req))
            ucp_request_free(req); /* UCX completes it; the endpoint stays closing */
    }
}
