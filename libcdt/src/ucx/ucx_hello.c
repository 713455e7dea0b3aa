/*
 * ucx_hello.c - each endpoint's first message: its id, to the peer, on the endpoint's UCX stream
 * (a stream message, unlike a tag message, is read from the endpoint it came through), so that a
 * receiver knows which endpoint each object's head came through and a peer's failure fails that
 * peer's receives only (docs/TRANSPORT.md §4, Senders, and §6). It goes before the endpoint's
 * first object, not when the endpoint is made: UCX 1.13 aborts in ucp_worker_destroy on a stream
 * send left pending on an endpoint whose wireup never finished (a connect that timed out;
 * transport.close_pending_flush), and only a peer that sends objects needs to be placed. Below
 * progress, endpoints and sends.
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

static void hello_sent(void *req, ucs_status_t st, void *user_data)
{
    (void)st; /* a hello that could not go: the peer cannot place this side's objects */
    (void)user_data;
    ucp_request_free(req);
}

void cdt__ucx_hello_init(struct cdt_ucx_ep_s *ep)
{
    ep->id = cdt__ucx_next_ep_id(ep->w);
    cdt__put_u64(ep->id_wire, ep->id);
    ep->hello_wait = true;
    ep->w->hello_waiting++;
}

void cdt__ucx_hello_send(struct cdt_ucx_ep_s *ep)
{
    if (ep->hello_sent)
        return;
    ep->hello_sent = true;
    /* the bytes stay in the endpoint, whose memory outlives UCX's endpoint */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = hello_sent};
    void *q = ucp_stream_send_nbx(ep->ucp, ep->id_wire, sizeof(ep->id_wire), &p);
    (void)q;                      /* NULL: sent; an error: as if lost; else hello_sent frees it */
    cdt__ucx_lane_offer_send(ep); /* right after the id, on the same stream */
}

/* lock held: the stream bytes that came on one endpoint: the first 8 are the peer's id,
 * then a lane offer may follow (ucx_lane.c) (ep NULL: an endpoint UCX made for a peer that
 * connected by address, which the application does not hold: its bytes are read and dropped) */
static void take(ucp_ep_h ucp, struct cdt_ucx_ep_s *ep)
{
    for (;;) {
        size_t len = 0;
        void *data = ucp_stream_recv_data_nb(ucp, &len);
        if (data == NULL || UCS_PTR_IS_ERR(data))
            return;
        const unsigned char *b = data;
        size_t i = 0;
        for (; ep != NULL && i < len && ep->peer_got < sizeof(ep->peer_wire); i++)
            ep->peer_wire[ep->peer_got++] = b[i];
        if (ep != NULL && i < len) /* after the id: a lane offer (ucx_lane.c) */
            cdt__ucx_lane_stream_bytes(ep, b + i, len - i);
        ucp_stream_data_release(ucp, data);
        if (ep != NULL && ep->hello_wait && ep->peer_got == sizeof(ep->peer_wire)) {
            uint64_t id = cdt__get_u64(ep->peer_wire);
            ep->peer_id = id != 0 ? id : 1;
            ep->hello_wait = false;
            ep->w->hello_waiting--;
            cdt__ucx_lane_owe(ep); /* its offer (or no-lane record) follows */
            /* the peer's first object is coming: the lanes are up (for error messages) */
            if (ep->lanes_seen[0] == '\0' && ep->status == CDT_SUCCESS)
                cdt__ucx_ep_keep_lanes(ep, NULL);
        }
    }
}

void cdt__ucx_hello_poll(cdt_ucx_worker w)
{
    /* UCX names the endpoints with stream data (it keeps their lifetime: an endpoint being
     * closed or torn down is not named) */
    ucp_stream_poll_ep_t ready[16];
    ssize_t n;
    do {
        n = ucp_stream_worker_poll(w->ucp, ready, 16, 0);
        for (ssize_t i = 0; i < n; i++)
            take(ready[i].ep, ready[i].user_data);
    } while (n == 16);
}

void cdt__ucx_hello_forget(struct cdt_ucx_ep_s *ep)
{
    cdt__ucx_lane_owed_end(ep);
    if (ep->hello_wait) {
        ep->hello_wait = false;
        ep->w->hello_waiting--;
    }
}
