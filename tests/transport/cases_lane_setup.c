/*
 * cases_lane_setup.c - the lane's setup as the transport does it (docs/TRANSPORT.md §10.2): a
 * peer's offer or no-lane record read as soon as it comes, also in a later stream chunk than
 * its id.
 */
#include "cases.h"

#include <ucp/api/ucp.h>

/* raw UCX tag messages between the two sides (libcdt posts no receive in these cases) */
#define RAW_TAG UINT64_C(0x4C414E45)

static void raw_wait(peer *p, void *q)
{
    CHECK(!UCS_PTR_IS_ERR(q));
    if (q == NULL)
        return;
    while (ucp_request_check_status(q) == UCS_INPROGRESS)
        cdt_ucx_worker_progress(p->w);
    CHECK(ucp_request_check_status(q) == UCS_OK);
    ucp_request_free(q);
}

static void raw_tag_send(peer *p, uint64_t tag)
{
    static unsigned char byte = 1;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), &byte, 1, tag, &prm));
}

/* progress until the raw message on `tag` came: everything the peer sent before it on the
 * endpoint was handled by UCX in this or an earlier progress call */
static void raw_tag_recv(peer *p, uint64_t tag)
{
    unsigned char byte;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_tag_recv_nbx((ucp_worker_h)cdt_ucx_worker_handle(p->w), &byte, 1, tag,
                                 UINT64_MAX, &prm));
}

static void raw_stream_send(peer *p, const void *b, size_t n)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_stream_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), b, n, &prm));
}

/* The client writes its stream by hand: its endpoint's id, a marker; once the server has read
 * the id (its answer), a no-lane record and a second marker, so that the record comes in a
 * later chunk than the id. The server must have read the record by the time the second marker
 * came: a worker reads the stream on every progress call while an endpoint owes its record. */
static void late_offer_client(peer *p)
{
    unsigned char id[8];
    uint64_t v = cdt_ucx_ep_id(p->ep);
    for (int i = 0; i < 8; i++)
        id[i] = (unsigned char)(v >> (8 * i));
    raw_stream_send(p, id, sizeof(id));
    raw_tag_send(p, RAW_TAG);
    raw_tag_recv(p, RAW_TAG + 1);
    unsigned char rec[44] = {'C', 'D', 'T', 'N', 'l', 'a', 't', 'e'};
    raw_stream_send(p, rec, sizeof(rec));
    raw_tag_send(p, RAW_TAG + 2);
}

static void late_offer_server(peer *p)
{
    raw_tag_recv(p, RAW_TAG);
    CHECK(cdt_ucx_ep_peer_id(p->ep) != 0);
    raw_tag_send(p, RAW_TAG + 1);
    raw_tag_recv(p, RAW_TAG + 2);
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    fprintf(stderr, "server transports: %s\n", t);
    CHECK(strstr(t, "lane=none/peer-late") != NULL);
}

int lane_late_offer_case(void)
{
    static const cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    return run_pair(late_offer_server, late_offer_client, &wp, &wp, 0);
}
