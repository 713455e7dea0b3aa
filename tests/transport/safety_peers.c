/*
 * safety_peers.c - test_safety's cases of a peer that dies while another sends (safety.h).
 */
#include "safety.h"

#include <inttypes.h>

/* ------------------------------------------- one peer's death, another peer's object ----- */

/* The live sender's object, written by hand (safety_wire.c): 1,500 regions of 8 KiB, each its
 * own message. The dying sender's, sent by the library: 64 arrays of 16 KiB. */
enum { LIVE_REGIONS = 1500, LIVE_LEN = 8192, DYING_ARRAYS = 64, DYING_LEN = 2048 };
#define LIVE_KEY UINT64_C(0x150)

static unsigned char live_byte(size_t i)
{
    return (unsigned char)(i * 131 + i / LIVE_LEN);
}

/* the live sender: the head now, its regions only once the other sender died and the receiver
 * saw it, so that its receive is part-way then whatever the timing. The regions are posted all
 * at once and move while this side waits for the receiver's word: sent one by one, each waited
 * for, they were 1,500 round trips between two processes, each a wait for the other's turn on
 * a loaded machine (the receiver's wait for them ran up to its 20 s bound at a load of 13-15) */
void isolation_live(peer *p)
{
    const size_t total = (size_t)LIVE_REGIONS * LIVE_LEN;
    unsigned char *head = calloc(1, HEAD_MAX), *data = malloc(total);
    CHECK(head != NULL && data != NULL);
    size_t hl = make_head(head, LIVE_KEY, 1024, 0, LIVE_REGIONS, LIVE_LEN);
    /* a rendezvous (24 KiB): it completes once the receiver posts its receive */
    ucs_status_t st = raw_send(p, head, hl, TAG + 10, 0);
    CHECK(st == UCS_OK || st == UCS_INPROGRESS);
    send_marker(p, TAG_MARK);
    signal_fd(3);
    wait_fd(1, p);
    for (size_t i = 0; i < total; i++)
        data[i] = live_byte(i);
    for (uint64_t k = 0; k < LIVE_REGIONS; k++) {
        ucs_status_t rst = raw_send(p, data + k * LIVE_LEN, LIVE_LEN, PRIV(LIVE_KEY, k), 0);
        CHECK(rst == UCS_OK || rst == UCS_INPROGRESS); /* data outlives the sends */
    }
    wait_fd(2, p); /* the receiver compared the object */
    free(head);
    free(data);
}

/* the dying sender: the object and a marker after it (waited for: everything before it went
 * out); the receiver has not posted its receive, so no part of the object completes here yet.
 * Then no more progress: over cma the receiver copies the regions itself and waits for the
 * commit message, which this side would send only when it progresses (docs/TRANSPORT.md §4,
 * Commit), so its receive is part-way when this process raises SIGKILL. */
void isolation_dying(peer *p)
{
    double_vec v;
    CHECK_RC(double_vec_init(&v, DYING_ARRAYS, DYING_LEN, 12));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), TAG + 20, &r));
    send_marker(p, TAG_MARK + 100);
    signal_fd(6);
    wait_fd(0, NULL);
    signal_fd(5); /* client 2 of run_three is done */
    raise(SIGKILL);
}

void isolation_server(peer *p)
{
    const size_t total = (size_t)LIVE_REGIONS * LIVE_LEN;
    unsigned char *a = malloc(total);
    CHECK(a != NULL);
    double_vec b = {0};
    cdt_ucx_request ra, rb;
    /* each sender's head came before its marker and is not matched yet */
    recv_marker(p, TAG_MARK);
    recv_marker(p, TAG_MARK + 100);
    wait_fd(3, p);
    wait_fd(6, p);
    CHECK_RC(cdt_ucx_irecv(p->w, a, (cdt_count)total, CDT_BYTE, TAG + 10, CDT_UCX_TAG_MASK_FULL,
                           NULL, &ra));
    CHECK_RC(
        cdt_ucx_irecv(p->w, &b, 1, double_vec_type(), TAG + 20, CDT_UCX_TAG_MASK_FULL, NULL, &rb));
    for (int i = 0; i < 1000; i++) /* the dying sender's regions are copied, not its commit */
        cdt_ucx_worker_progress(p->w);
    CHECK(cdt_ucx_request_test(ra) == CDT_INPROGRESS);
    CHECK(cdt_ucx_request_test(rb) == CDT_INPROGRESS);
    signal_fd(0); /* the second sender dies */
    int rcb = cdt_ucx_request_wait(rb, T_TIMEOUT_MS);
    int rca = cdt_ucx_request_test(ra);
    fprintf(stderr, "dead sender's object: %s; live sender's object then: %s\n", cdt_err_name(rcb),
            rca == CDT_INPROGRESS ? "in progress" : cdt_err_name(rca));
    CHECK(rcb == CDT_ERR_PEER);
    /* the failed receive still names whose object it was */
    cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL, .tag = 0};
    CHECK(cdt_ucx_request_recv_info(rb, &info) == CDT_ERR_PEER && info.tag == TAG + 20);
    /* and what failed it: its own sender's endpoint (the endpoint's failure, or UCX aborting a
     * message of the object once that endpoint had failed), named by the sender's id */
    fprintf(stderr, "failed receive: sender %016" PRIx64 ", failure %d by %016" PRIx64 "\n",
            info.sender, info.failure, info.failed_by);
    CHECK(info.sender != 0 && info.failed_by == info.sender);
    CHECK(info.failure == CDT_UCX_RECV_FAILURE_ENDPOINT ||
          info.failure == CDT_UCX_RECV_FAILURE_MESSAGE);
    CHECK(rca == CDT_INPROGRESS); /* another peer's death does not touch it */
    signal_fd(1);                 /* the live sender sends its regions */
    CHECK_RC(cdt_ucx_request_wait(ra, T_TIMEOUT_MS));
    for (size_t i = 0; i < total; i++) /* byte for byte */
        CHECK(a[i] == live_byte(i));
    /* a receive that succeeded names its sender and no failure */
    info = (cdt_ucx_recv_info){.field_mask = CDT_UCX_RECV_INFO_ALL, .failure = -1};
    CHECK_RC(cdt_ucx_request_recv_info(ra, &info));
    CHECK(info.failure == CDT_UCX_RECV_FAILURE_NONE && info.failed_by == 0);
    CHECK_RC(cdt_ucx_request_free(ra));
    CHECK_RC(cdt_ucx_request_free(rb));
    free(a);
    signal_fd(2); /* b: whatever the failed receive left in it is not touched */
}
