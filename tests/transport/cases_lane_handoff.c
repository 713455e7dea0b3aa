/*
 * cases_lane_handoff.c - how a ring head reaches the receiver's matching (docs/TRANSPORT.md
 * §10.6, Hand-off): the consumer parks its one private copy of a record and hands its worker a
 * 32-byte descriptor over the endpoint to itself, not the head's bytes, so UCX's `self` copy,
 * the copy into the receive's head buffer and (above 8 KiB) the fragments of a multi-part
 * message are gone. 8 KiB and 16 KiB objects, received by receives posted before and after
 * they arrive: each byte for byte, and the receiving process's tagged sends carry at most 64
 * bytes an object (the head's bytes, 8-16 KiB an object, before). Then descriptor-shaped
 * messages sent over UCX by the peer, for every slot and generation the receiver can have used
 * while a head is parked there: each fails its receive with CDT_ERR_FRAME_MAGIC (without the
 * receiver's secret it is no descriptor, and no head), and the parked object reaches its own
 * receive.
 *
 * This program's ucp_tag_send_nbx counts the bytes of every contiguous send (and the sends to
 * the endpoint tag_count_ep names, for cases_lane_ring_commit.c) and then calls
 * UCX's (the library's calls resolve to it: the executable, which exports it, comes first in
 * the symbol lookup), so every other case behaves as before.
 */
#include "cases.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_llong tag_send_bytes;
/* the tagged sends to one endpoint (tag_count_ep), any datatype: cases_lane_ring_commit.c */
static _Atomic(void *) counted_ep;
static atomic_llong counted_sends;

void tag_count_ep(void *ep)
{
    atomic_store(&counted_ep, ep);
}

long long tag_count(void)
{
    return atomic_load(&counted_sends);
}

typedef ucs_status_ptr_t (*tag_send_fn)(ucp_ep_h, const void *, size_t, ucp_tag_t,
                                        const ucp_request_param_t *);

__attribute__((visibility("default"))) ucs_status_ptr_t
ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                 const ucp_request_param_t *param)
{
    static tag_send_fn real;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "ucp_tag_send_nbx");
    if (param != NULL &&
        !(param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) /* contiguous: count is bytes */
        atomic_fetch_add(&tag_send_bytes, (long long)count);
    if (ep != NULL && (void *)ep == atomic_load(&counted_ep))
        atomic_fetch_add(&counted_sends, 1);
    return real(ep, buffer, count, tag, param);
}

static const cdt_ucx_worker_params handoff_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE,
                                                 .lane = 1};

/* objects; the forged case: object A's tag, the forged descriptors' tag, and the slots and
 * generations they name (A, the first object through the ring, is parked in slot 0 at
 * generation 0) */
enum { HO_N = 200, HO_A = 50, HO_FORGED = 51, HO_SLOTS = 8, HO_GENS = 8 };

/* object i: 8 KiB or 16 KiB of int64 values */
static cdt_count ho_count(int i)
{
    return i % 2 == 0 ? 1024 : 2048;
}

/* both sides, before the objects: the lane offered (tag 1), the ring switched on at both
 * ends, the server's word to go (tag 2); returns a buffer of 2,048 int64 values */
static int64_t *ho_client_start(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    lane_wait_heads(p);
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    int64_t *v = malloc(2048 * sizeof(int64_t));
    CHECK(v != NULL);
    return v;
}

static int64_t *ho_server_start(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    lane_wait_heads(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    int64_t *v = malloc(2048 * sizeof(int64_t));
    CHECK(v != NULL);
    return v;
}

static void handoff_client(peer *p)
{
    int64_t one = 1;
    int64_t *v = ho_client_start(p);
    for (int i = 0; i < HO_N; i++) {
        for (cdt_count k = 0; k < ho_count(i); k++)
            v[k] = (int64_t)i * 1000003 + k;
        CHECK_RC(
            cdt_ucx_send(p->ep, v, ho_count(i), CDT_INT64, 100 + (cdt_ucx_tag)i, T_TIMEOUT_MS));
        if (i == HO_N / 2) /* the second half waits in the server's matching (unexpected) */
            CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                                  T_TIMEOUT_MS));
    }
    free(v);
}

static void handoff_server(peer *p)
{
    int64_t one = 0;
    int64_t *v = ho_server_start(p);
    long long before = atomic_load(&tag_send_bytes);
    for (int i = 0; i < HO_N; i++) {
        if (i == HO_N / 2 + 1) {
            /* the client sends the rest now; they arrive before their receives are posted */
            long long mid = atomic_load(&tag_send_bytes);
            CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 3, T_TIMEOUT_MS));
            before -= atomic_load(&tag_send_bytes) - mid; /* not a hand-off */
            usleep(200 * 1000);
            for (int k = 0; k < 1000; k++)
                cdt_ucx_worker_progress(p->w);
        }
        memset(v, 0, 2048 * sizeof(int64_t));
        cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_TAG};
        CHECK_RC(cdt_ucx_recv(p->w, v, ho_count(i), CDT_INT64, 0, 0, NULL, &info, T_TIMEOUT_MS));
        CHECK(info.tag == 100 + (cdt_ucx_tag)i);
        for (cdt_count k = 0; k < ho_count(i); k++)
            CHECK(v[k] == (int64_t)i * 1000003 + k);
    }
    long long handed = atomic_load(&tag_send_bytes) - before;
    fprintf(stderr, "[%d] bytes handed to the worker for %d objects of 8-16 KiB: %lld\n",
            (int)getpid(), HO_N, handed);
    CHECK(handed <= 64LL * HO_N); /* the heads' bytes: about 12 KiB an object */
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    CHECK(strstr(t, "lane=memfd+heads") != NULL);
    free(v);
}

/* ---- forged: descriptor-shaped messages from the peer while a ring head is parked ---- */

static void forged_client(peer *p)
{
    int64_t one = 1;
    int64_t *v = ho_client_start(p);
    /* forged descriptors: object A through the ring (its head parked at the server, whose
     * receive is not posted), then over UCX descriptor-shaped messages for every slot and
     * generation the server can have used, each without the server's secret */
    for (cdt_count k = 0; k < 2048; k++)
        v[k] = 777 + k;
    CHECK_RC(cdt_ucx_send(p->ep, v, 2048, CDT_INT64, HO_A, T_TIMEOUT_MS));
    for (uint32_t slot = 0; slot < HO_SLOTS; slot++)
        for (uint64_t gen = 0; gen < HO_GENS; gen++) {
            unsigned char d[32] = {'C', 'D', 'T', 'P'};
            memcpy(d + 4, &slot, 4);
            memcpy(d + 8, &gen, 8);
            ucp_request_param_t prm = {.op_attr_mask = 0};
            void *q =
                ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), d, sizeof d, HO_FORGED, &prm);
            CHECK(!UCS_PTR_IS_ERR(q));
            while (q != NULL && ucp_request_check_status(q) == UCS_INPROGRESS)
                cdt_ucx_worker_progress(p->w);
            if (q != NULL)
                ucp_request_free(q);
        }
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 4, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    free(v);
}

static void forged_server(peer *p)
{
    int64_t one = 0;
    int64_t *v = ho_server_start(p);
    usleep(200 * 1000); /* A and the forged messages arrive before any receive is posted */
    for (int k = 0; k < 100; k++) /* A parked, the forged messages in UCX's unexpected queue */
        cdt_ucx_worker_progress(p->w);
    /* every forged descriptor is no head (its magic is a descriptor's); object A reaches its
     * own receive */
    for (int k = 0; k < HO_SLOTS * HO_GENS; k++) {
        int rc = cdt_ucx_recv(p->w, v, 2048, CDT_INT64, HO_FORGED, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS);
        if (rc != CDT_ERR_FRAME_MAGIC)
            fprintf(stderr, "forged descriptor %d: %d\n", k, rc);
        CHECK(rc == CDT_ERR_FRAME_MAGIC);
    }
    memset(v, 0, 2048 * sizeof(int64_t));
    CHECK_RC(cdt_ucx_recv(p->w, v, 2048, CDT_INT64, HO_A, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    for (cdt_count k = 0; k < 2048; k++)
        CHECK(v[k] == 777 + k);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 4, T_TIMEOUT_MS));
    free(v);
}

int lane_handoff_case(const char *which)
{
    if (strcmp(which, "forged") == 0)
        return run_pair(forged_server, forged_client, &handoff_wp, &handoff_wp, 0);
    return run_pair(handoff_server, handoff_client, &handoff_wp, &handoff_wp, 0);
}
