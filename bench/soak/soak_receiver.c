/*
 * soak_receiver.c - a peer's receiver threads: derived and sobj objects through irecv with a
 * prepare callback, dvec objects through the blocking receive, whose timed-out objects are
 * watched for late writes (see soak.c).
 */
#include "soak.h"

/* -------- receivers -------- */

/* How long a receive waits before the soak abandons it: `normal` during the traffic (short
 * on purpose: abandoned receives are part of what is tested), at least FINAL_RECV_MS in the
 * final phase, where every object must arrive. A final object that a receiver abandoned on its
 * own short timer (the machine being slow, not the transport losing it) was counted as lost,
 * and the phase then waited for it until its bound. The patience counts from the post, so an
 * object matched late in it has less: 15 s (the phase's bound is 60 s), and a final object
 * abandoned after it matched is named in the report's notes. */
#define FINAL_RECV_MS 15000
static int64_t recv_patience_ms(int64_t normal)
{
    return g_final && normal < FINAL_RECV_MS ? FINAL_RECV_MS : normal;
}

static int prepare_cb(void *arg, cdt_decoder d)
{
    rctx *x = arg;
    x->prepared = 1;
    x->frame = (cdt_frame_info){.field_mask = CDT_FRAME_INFO_ALL};
    if (cdt_decoder_info(d, &x->frame) != CDT_SUCCESS)
        x->frame.field_mask = 0;
    if (x->fam == FAM_SOBJ) {
        memset(&x->so, 0, sizeof(x->so));
        int rc = cdt_sobj_recv_prepare(&x->so, d);
        if (rc != CDT_SUCCESS)
            return rc;
        x->so_prepared = 1;
        return cdt_decoder_bind(d, &x->so, 1, cdt_sobj_type());
    }
    cdt_frame_info fi = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt_decoder_info(d, &fi);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count P = fi.packed_size + fi.region_bytes, extent;
    if (P > 4 * opt.max_bytes)
        return CDT_ERR_USER_BASE;
    rc = recv_layout(P, &x->type, &extent);
    if (rc != CDT_SUCCESS)
        return rc;
    x->stream = P;
    x->mem = malloc((size_t)extent + 1);
    if (x->mem == NULL)
        return CDT_ERR_NO_MEMORY;
    return cdt_decoder_bind(d, x->mem, 1, x->type);
}

static void rctx_clear(rctx *x)
{
    free(x->mem);
    cdt_type_free(&x->type);
    if (x->so_prepared)
        cdt_sobj_release(&x->so);
    int fam = x->fam;
    memset(x, 0, sizeof(*x));
    x->fam = fam;
}

static void received(rctx *x, double_vec *dv, cdt_ucx_tag tag)
{
    ADD(g_st.recv[x->fam], 1);
    cdt_count bytes = verify(x, dv, tag);
    if (bytes < 0)
        return; /* verify() reported it */
    ADD(g_st.recv_bytes, bytes);
    ADD(g_st.verified, 1);
    ADD(g_st.verified_bytes, bytes);
    if ((uint64_t)bytes > g_st.largest)
        g_st.largest = (uint64_t)bytes;
    if (tag_final(tag))
        ADD(g_st.final_recv[tag_peer(tag)], 1);
}

static void recv_failed(int fam, int rc)
{
    ADD(g_st.err_recv[st_idx(rc)], 1);
    if (!clean(rc)) {
        ADD(g_st.unexpected, 1);
        report("%s receive: %s", fam_name[fam], cdt_err_name(rc));
    }
}

/* Collateral failures. A receive that fails with CDT_ERR_PEER still names its sender's tag once
 * its message matched (cdt_ucx_request_recv_info); the tag names the sending peer and its
 * incarnation. That incarnation should be dead: when one is still up COLLATERAL_S later (the
 * supervisor's M_DOWN comes within a second of a kill), what ended the receive decides. Its
 * own endpoint to that sender (the library names it: failed_by is the sender's endpoint id,
 * or the acceptor saw the endpoint of that id fail by then): the sender lived but its
 * endpoint to this peer failed or was closed, which is no other peer's doing (counted apart,
 * noted). Anything else: collateral, a failure of the soak. */
#define COLLATERAL_S 5.0
#define NO_TAG (~(cdt_ucx_tag)0)
#define PEER_INFO_MASK                                                                             \
    (CDT_UCX_RECV_INFO_TAG | CDT_UCX_RECV_INFO_SENDER | CDT_UCX_RECV_INFO_FAILURE)
typedef struct peer_fail {
    int fam, peer, gen;
    double at;
    cdt_ucx_recv_info info;
} peer_fail;
static const char *failure_name(int f)
{
    return f == CDT_UCX_RECV_FAILURE_ENDPOINT  ? "its endpoint failed"
           : f == CDT_UCX_RECV_FAILURE_MESSAGE ? "UCX aborted a message"
                                               : "no cause recorded";
}
static peer_fail pf[1024];
static int npf;
static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;

static void peer_failed(int fam, const cdt_ucx_recv_info *info)
{
    cdt_ucx_tag tag = info->tag;
    if (tag == NO_TAG) {
        ADD(g_st.peer_fail_unplaced, 1);
        return;
    }
    pthread_mutex_lock(&pf_lock);
    if (npf < (int)(sizeof(pf) / sizeof(pf[0])))
        pf[npf++] = (peer_fail){fam, tag_peer(tag), tag_gen(tag), now_s(), *info};
    pthread_mutex_unlock(&pf_lock);
}

static void collateral_scan(void)
{
    double t = now_s();
    pthread_mutex_lock(&pf_lock);
    int keep = 0;
    for (int i = 0; i < npf; i++) {
        if (t - pf[i].at < COLLATERAL_S) {
            pf[keep++] = pf[i];
            continue;
        }
        pthread_mutex_lock(&g_lock);
        int up = tab_gen[pf[i].peer] == pf[i].gen && tab_port[pf[i].peer] != 0;
        pthread_mutex_unlock(&g_lock);
        const cdt_ucx_recv_info *in = &pf[i].info;
        int by_lib = in->sender != 0 && in->failed_by == in->sender;
        int own = by_lib || ep_failed_seen(in->sender);
        if (up && own) {
            ADD(g_st.own_ep_live, 1);
            if (in->failure == CDT_UCX_RECV_FAILURE_ENDPOINT)
                ADD(g_st.own_ep_by_endpoint, 1);
            else
                ADD(g_st.own_ep_by_message, 1);
            note("%s receive from peer %d (incarnation %d, endpoint %016" PRIx64 ") failed "
                 "with CDT_ERR_PEER while that sender lived: this peer's endpoint to it failed "
                 "or was closed (%s%s)",
                 fam_name[pf[i].fam], pf[i].peer, pf[i].gen, in->sender, failure_name(in->failure),
                 by_lib ? "" : "; the acceptor saw it fail");
        } else if (up) {
            ADD(g_st.collateral, 1);
            report("%s receive from peer %d (incarnation %d, endpoint %016" PRIx64 ") failed "
                   "with CDT_ERR_PEER (%s, by endpoint %016" PRIx64 "), and that sender was "
                   "still up %.0f s later with its endpoint to this peer not failed: another "
                   "peer's failure took it",
                   fam_name[pf[i].fam], pf[i].peer, pf[i].gen, in->sender,
                   failure_name(in->failure), in->failed_by, COLLATERAL_S);
        }
    }
    npf = keep;
    pthread_mutex_unlock(&pf_lock);
}

/* derived and sobj: irecv with a prepare callback, wait, cancel when idle */
void *receiver_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    int fam = th - opt.senders;
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = prepare_cb};
    while (!g_stop) {
        beat(th);
        rctx *x = calloc(1, sizeof(*x));
        x->fam = fam;
        rp.prepare_arg = x;
        cdt_ucx_request q;
        int rc = cdt_ucx_irecv(g_w, NULL, 0, NULL, (cdt_ucx_tag)fam << TAG_FAM_SHIFT, TAG_FAM_MASK,
                               &rp, &q);
        if (rc != CDT_SUCCESS) {
            recv_failed(fam, rc);
            free(x);
            sleep_ms(10);
            continue;
        }
        rc = wait_req_until(q, recv_patience_ms(1000), th, 1);
        int idle = 0;
        if (rc == CDT_ERR_CANCELED)
            ADD(g_st.recv_canceled_unasked, 1);
        if (rc == CDT_ERR_TIMEOUT) {
            int c = cdt_ucx_request_cancel(q);
            int64_t more = c == CDT_ERR_BUSY ? (int64_t)opt.hang_s * 500 : 10000;
            rc = wait_req(q, more, th);
            if (rc == CDT_ERR_TIMEOUT) {
                ADD(g_st.stuck, 1);
                /* whether a message had matched it (its prepare callback ran) and that frame's
                 * shape: which of the transport's paths the object took */
                report("%s receive still pending %" PRId64 " ms after cancel (cancel %s; %s: "
                       "frame %lld B, packed stream %lld B, %lld regions of %lld B); request "
                       "and buffers leaked",
                       fam_name[fam], more, cdt_err_name(c),
                       x->prepared ? "matched" : "no message matched",
                       (long long)x->frame.frame_size, (long long)x->frame.packed_size,
                       (long long)x->frame.region_count, (long long)x->frame.region_bytes);
                continue;
            }
            idle = rc == CDT_ERR_CANCELED && !x->prepared;
            if (rc == CDT_ERR_CANCELED && x->prepared) {
                ADD(g_st.recv_canceled_matched, 1); /* our cancel ended a matched receive */
                if (g_final)
                    note("final phase: a matched %s receive abandoned after %" PRId64
                         " ms of patience: its object is lost to the soak",
                         fam_name[fam], recv_patience_ms(1000));
            }
        }
        if (rc == CDT_SUCCESS) {
            cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL};
            int ri = cdt_ucx_request_recv_info(q, &info);
            if (ri != CDT_SUCCESS)
                recv_failed(fam, ri);
            else
                received(x, NULL, info.tag);
        } else if (idle) {
            ADD(g_st.idle_timeouts, 1);
        } else {
            recv_failed(fam, rc);
            if (rc == CDT_ERR_PEER) {
                cdt_ucx_recv_info info = {.field_mask = PEER_INFO_MASK, .tag = NO_TAG};
                cdt_ucx_request_recv_info(q, &info);
                peer_failed(fam, &info);
            }
        }
        collateral_scan();
        cdt_ucx_request_free(q);
        rctx_clear(x);
        free(x);
    }
    return NULL;
}

/* dvec: the blocking cdt_ucx_recv with a short timeout. cdt_ucx.h: a receive that returned
 * never writes the caller's object again, though it may have written part of it. A timed-out
 * double_vec waits here for a while: if it changes, the receive was not really over; if not,
 * it is cleared and freed like any other. */
typedef struct quarantined {
    double_vec *dv;
    cdt_count n;       /* arrays when the call returned */
    int32_t **data;    /* the array list when the call returned */
    uint64_t checksum; /* of the arrays written by then */
    double release_at; /* freed after this time when unchanged */
} quarantined;

static uint64_t dvec_checksum(const double_vec *dv)
{
    uint64_t h = 1469598103934665603ull;
    for (cdt_count k = 0; dv->data != NULL && dv->lens != NULL && k < dv->n; k++)
        for (cdt_count i = 0; dv->data[k] != NULL && i < dv->lens[k]; i++)
            h = (h ^ (uint32_t)dv->data[k][i]) * 1099511628211ull;
    return h;
}

void *dvec_receiver_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    quarantined *qs = NULL;
    size_t nq = 0, capq = 0;
    double next_scan = now_s() + 1;
    rctx x = {.fam = FAM_DVEC};
    while (!g_stop) {
        beat(th);
        double_vec *dv = calloc(1, sizeof(*dv));
        cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL, .tag = NO_TAG};
        int rc = cdt_ucx_recv(g_w, dv, 1, double_vec_type(), (cdt_ucx_tag)FAM_DVEC << TAG_FAM_SHIFT,
                              TAG_FAM_MASK, NULL, &info, recv_patience_ms(opt.dvec_timeout_ms));
        beat(th);
        if (rc == CDT_SUCCESS) {
            received(&x, dv, info.tag);
            double_vec_clear(dv);
            free(dv);
        } else if (rc == CDT_ERR_TIMEOUT) {
            if (dv->n != 0 || dv->data != NULL) {
                ADD(g_st.tmo_matched, 1); /* matched, abandoned part-way: clean */
                if (g_final)
                    note("final phase: a matched dvec receive (%" PRId64 " arrays) timed out "
                         "after %" PRId64 " ms of patience: its object is lost to the soak",
                         dv->n, recv_patience_ms(opt.dvec_timeout_ms));
            } else
                ADD(g_st.idle_timeouts, 1);
            if (nq == capq) {
                capq = capq ? 2 * capq : 256;
                qs = realloc(qs, capq * sizeof(*qs));
            }
            qs[nq++] = (quarantined){dv, dv->n, dv->data, dvec_checksum(dv), now_s() + 3};
        } else {
            recv_failed(FAM_DVEC, rc);
            if (rc == CDT_ERR_PEER)
                peer_failed(FAM_DVEC, &info);
            double_vec_clear(dv);
            free(dv);
        }
        collateral_scan();
        if (now_s() > next_scan) {
            next_scan = now_s() + 1;
            uint64_t held = 0;
            size_t keep = 0;
            for (size_t i = 0; i < nq; i++) {
                quarantined *q = &qs[i];
                if (q->dv->n != q->n || q->dv->data != q->data ||
                    dvec_checksum(q->dv) != q->checksum) {
                    ADD(g_st.late_write, 1);
                    report("a dvec receive that returned CDT_ERR_TIMEOUT wrote the caller's "
                           "double_vec later (%" PRId64 " arrays)",
                           q->dv->n);
                    q->n = q->dv->n; /* reported once; kept, never freed */
                    q->data = q->dv->data;
                    q->checksum = dvec_checksum(q->dv);
                    q->release_at = INFINITY;
                }
                if (now_s() > q->release_at) {
                    double_vec_clear(q->dv);
                    free(q->dv);
                    continue;
                }
                for (cdt_count k = 0; q->dv->data != NULL && q->dv->lens != NULL && k < q->dv->n;
                     k++)
                    held += (uint64_t)q->dv->lens[k] * 4;
                qs[keep++] = *q;
            }
            nq = keep;
            __atomic_store_n(&g_st.quarantined_bytes, held, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}
