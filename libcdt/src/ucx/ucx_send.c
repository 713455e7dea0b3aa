/*
 * ucx_send.c - send one object: encode its frame, then either (split mode) send the head
 * message (prefix + header + packed stream + small regions), the tail of an inline stream
 * longer than a head message, and every large region as its own contiguous message straight
 * from the object's memory; or (single mode) the whole frame as one message that UCX packs
 * through libcdt's callbacks (ucx_single.c). docs/TRANSPORT.md says which and why.
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

static void send_done(cdt_ucx_request r)
{
    cdt__ucx_send_unlink(r);
    cdt__ucx_send_release(r);
    cdt__ucx_request_finish(r);
}

/* lock not held: a send whose first message could not be posted (nothing was sent) goes back
 * unseen: no caller ever had it, and no sleeper waits for it */
static void send_unposted(cdt_ucx_request r)
{
    r->outstanding = 0;
    r->head_exposed = false; /* no peer ever saw it */
    cdt__ucx_send_release(r);
    cdt__ucx_request_release(r);
}

static int post(cdt_ucx_request r, ucp_ep_h ep, const void *data, size_t len, uint64_t tag,
                cdt__ucx_sub *s);

/* lock held: every other message of an object that ends with a commit has completed (the
 * receiver took each: a rendezvous completes on its acknowledgement), so the receiver has
 * copied all it will ever copy from this process: the commit tells it the object is whole.
 * Never for a send that was ended (its endpoint failed or was closed: `ucp` is NULL) or
 * detached: its caller may have reused the memory a late reader copies. */
static void commit_send(cdt_ucx_request r, ucp_ep_h ucp)
{
    if (ucp == NULL || r->detached)
        return;
    cdt__ucx_put_commit(r->trailer, r->status);
    int rc = post(r, ucp, r->trailer, CDT__UCX_COMMIT_SIZE,
                  cdt__ucx_private_tag(r->key, CDT__UCX_COMMIT_INDEX), &r->commit_sub);
    if (rc != CDT_SUCCESS) /* the receiver's rest timeout ends its receive */
        cdt__ucx_request_set_error(r, rc);
}

/* lock held: one message of a send completed with `status` (UCX's callback, or a head that
 * waited for room in the lane's head ring) */
static void sub_end(cdt__ucx_sub *s, int status)
{
    cdt_ucx_request r = s->req;
    s->ucx = NULL;
    s->fired = true;
    if (status != CDT_SUCCESS)
        cdt__ucx_request_set_error(r, status);
    if (r->commit && s != &r->commit_sub && --r->parts_pending == 0)
        commit_send(r, r->ep != NULL ? r->ep->ucp : NULL);
    if (--r->outstanding == 0) {
        send_done(r);
        if (r->orphaned) /* freed by the caller after it was ended early */
            cdt__ucx_orphan_release(r);
    }
}

static void send_cb(void *ucx_req, ucs_status_t st, void *user_data)
{
    ucp_request_free(ucx_req);
    sub_end(user_data, st == UCS_OK ? CDT_SUCCESS : cdt__ucx_status(st));
}

/* lock held, released here: every message of the send was posted (the hold taken while
 * posting is dropped). A send that completed inside the posting call is settled: nothing in
 * UCX or in any list refers to it, and cdt_ucx_request_free takes no lock for it. */
static int send_posted(struct cdt_ucx_ep_s *ep, cdt_ucx_request r, cdt_ucx_request *request)
{
    if (--r->outstanding == 0)
        send_done(r);
    cdt__ucx_send_track(ep, r);
    r->settled = r->done && r->outstanding == 0;
    pthread_mutex_unlock(&ep->w->lock);
    *request = r;
    return CDT_SUCCESS;
}

/* lock held: post one message of `len` elements of `dt`; the sub completes it */
static int post_dt(cdt_ucx_request r, ucp_ep_h ep, const void *data, size_t len, ucp_datatype_t dt,
                   uint64_t tag, cdt__ucx_sub *s)
{
    s->req = r;
    s->fired = false;
    s->ucx = NULL;
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE,
        .cb.send = send_cb,
        .user_data = s,
        .datatype = dt,
    };
    r->outstanding++;
    void *q = ucp_tag_send_nbx(ep, data, len, tag, &p);
    if (q == NULL || UCS_PTR_IS_ERR(q)) { /* done already, or failed: no callback */
        r->outstanding--;
        return q == NULL ? CDT_SUCCESS : cdt__ucx_status(UCS_PTR_STATUS(q));
    }
    if (!s->fired)
        s->ucx = q;
    return CDT_SUCCESS;
}

/* lock held: post one contiguous message */
static int post(cdt_ucx_request r, ucp_ep_h ep, const void *data, size_t len, uint64_t tag,
                cdt__ucx_sub *s)
{
    return post_dt(r, ep, data, len, ucp_dt_make_contig(1), tag, s);
}

/* lock held: post one message of an object; one more to wait for before its commit while it
 * is pending */
static int post_part(cdt_ucx_request r, ucp_ep_h ep, const void *data, size_t len, uint64_t tag,
                     cdt__ucx_sub *s)
{
    int before = r->outstanding;
    int rc = post(r, ep, data, len, tag, s);
    if (r->outstanding > before)
        r->parts_pending++;
    return rc;
}

/* lock held: post an object's head message (its user tag): into the lane's head ring once the
 * endpoint switched (docs/TRANSPORT.md §10.6; a head held for a full ring is one more part),
 * else over UCX */
static int post_head(cdt_ucx_request r, struct cdt_ucx_ep_s *ep, const void *data, size_t len,
                     uint64_t tag, cdt__ucx_sub *s, bool part)
{
    int before = r->outstanding;
    int taken = cdt__ucx_lane_heads_post(ep, r, data, len, tag, s);
    if (taken < 0)
        return taken;
    int rc = taken == 1 ? CDT_SUCCESS : post(r, ep->ucp, data, len, tag, s);
    if (part && r->outstanding > before)
        r->parts_pending++;
    return rc;
}

/* everything that does not touch UCX: the frame, and which part goes where */
typedef struct send_plan {
    const unsigned char *head; /* frame head: header + packed stream */
    cdt_count head_len;
    cdt_count nregions;
    cdt_count inline_len; /* head_len + small regions */
    cdt_count nsep;       /* regions sent on their own */
    bool small_regions;
} send_plan;

static int plan(cdt_ucx_request r, cdt_count threshold, send_plan *pl)
{
    const void *head;
    int rc = cdt_frame_head(r->frame, &head, &pl->head_len);
    if (rc == CDT_SUCCESS)
        rc = cdt_frame_region_count(r->frame, &pl->nregions);
    if (rc != CDT_SUCCESS)
        return rc;
    pl->head = head;
    pl->inline_len = pl->head_len;
    pl->nsep = 0;
    pl->small_regions = false;
    for (cdt_count i = 0; i < pl->nregions; i++) {
        cdt_count len;
        rc = cdt_frame_region_info(r->frame, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS)
            return rc;
        if (cdt__ucx_separate(len, threshold, i)) {
            pl->nsep++;
        } else if (len > 0) {
            pl->inline_len += len;
            pl->small_regions = true;
        }
    }
    return CDT_SUCCESS;
}

/* How much of the inline stream the head message carries. An object whose inline stream fits
 * HEAD_MAX sends it whole (large regions, if any, follow as their own messages). An object with
 * a tail puts at most CDT__UCX_EAGER_SURE bytes in its head, so the head is always eager: the
 * receiver has it as soon as the sender posted it, and copies the tail and the regions (rendezvous
 * it runs itself over cma) while the sender is busy elsewhere, e.g. packing its next objects. A
 * longer head is a rendezvous received through a generic datatype, whose data moves only when the
 * sender's worker progresses: a sender that posts objects back to back held every receiver's copies
 * back until it waited (up to 1.5x slower, 1.2-1.4x from 1 MiB:
 * bench/results/transport_default_findings.md §9). */
static cdt_count head_room(const send_plan *pl)
{
    const cdt_count whole = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE;
    if (pl->inline_len <= whole)
        return whole;
    return CDT__UCX_EAGER_SURE - CDT__UCX_PREFIX_SIZE;
}

/* lay out prefix + inline stream: the head message in r->head (or r->bounce) and the tail.
 * head_in_buffer: the head message always goes from r->head (copied there from r->bounce),
 * whose memory is quarantined if the send fails (a peer that copies it itself: cma). */
static int build(cdt_ucx_request r, const send_plan *pl, uint64_t key, cdt_count threshold,
                 bool head_in_buffer, const unsigned char **msg, size_t *msg_len,
                 const unsigned char **tail, cdt_count *tail_len)
{
    const cdt_count room = head_room(pl);
    *tail_len = pl->inline_len > room ? pl->inline_len - room : 0;
    unsigned char *out = r->head;
    if (pl->small_regions && *tail_len > 0) {
        /* gathering small regions: the whole inline stream is materialised once */
        r->bounce_len = (size_t)(CDT__UCX_PREFIX_SIZE + pl->inline_len);
        r->bounce = cdt__ucx_buf_get(r->w, r->bounce_len);
        if (r->bounce == NULL)
            return CDT_ERR_NO_MEMORY;
        out = r->bounce;
    }
    cdt__ucx_put_prefix(out, key, threshold, *tail_len, r->commit ? CDT__UCX_FLAG_COMMIT : 0,
                        r->sender);
    unsigned char *p = out + CDT__UCX_PREFIX_SIZE;
    cdt_count limit = out == r->head ? room : pl->inline_len;
    cdt_count n = pl->head_len < limit ? pl->head_len : limit;
    memcpy(p, pl->head, (size_t)n);
    p += n;
    if (pl->small_regions) {
        for (cdt_count i = 0; i < pl->nregions; i++) {
            cdt_count len, off;
            int rc = cdt_frame_region_info(r->frame, i, &len, NULL, &off);
            if (rc != CDT_SUCCESS)
                return rc;
            if (len == 0 || cdt__ucx_separate(len, threshold, i))
                continue;
            /* a region in one piece (the usual case) is copied straight from its memory */
            cdt_iov piece;
            cdt_count got = 0;
            rc = cdt_frame_region_iov(r->frame, i, 0, 1, &piece, &got);
            if (rc == CDT_SUCCESS && got == 1 && piece.len == len)
                memcpy(p, piece.base, (size_t)len);
            else if (rc == CDT_SUCCESS)
                rc = cdt_frame_gather(r->frame, off, p, len);
            if (rc != CDT_SUCCESS)
                return rc;
            p += len;
        }
    }
    *msg = out;
    *msg_len = (size_t)(CDT__UCX_PREFIX_SIZE + pl->inline_len - *tail_len);
    if (head_in_buffer && out != r->head) {
        memcpy(r->head, out, *msg_len);
        *msg = r->head;
    }
    if (*tail_len == 0)
        *tail = NULL;
    else if (out == r->bounce)
        *tail = out + CDT__UCX_PREFIX_SIZE + room;
    else
        *tail = pl->head + room; /* zero-copy: the rest of the frame head */
    return CDT_SUCCESS;
}

static bool has_large_region(cdt_frame f, cdt_count threshold)
{
    cdt_count n;
    if (cdt_frame_region_count(f, &n) != CDT_SUCCESS)
        return false;
    for (cdt_count i = 0; i < n; i++) {
        cdt_count len;
        if (cdt_frame_region_info(f, i, &len, NULL, NULL) == CDT_SUCCESS &&
            cdt__ucx_separate(len, threshold, i))
            return true;
    }
    return false;
}

/* the whole frame as one message of the send datatype (ucx_single.c packs it) */
static int send_single(cdt_ucx_ep ep, cdt_ucx_request r, cdt_ucx_tag tag, cdt_ucx_request *request)
{
    cdt_ucx_worker w = ep->w;
    int rc = CDT_SUCCESS;
    bool contiguous = r->frame == NULL; /* the frame was written whole into the head buffer */
    if (!contiguous) {
        cdt_count frame_size;
        rc = cdt_frame_size(r->frame, &frame_size);
        r->single_len = CDT__UCX_PREFIX_SIZE + (size_t)frame_size + CDT__UCX_TRAILER_SIZE;
        /* a message that fits the head buffer is built there now and sent contiguous: UCX's
         * fastest path for a small message, and a failed pack is reported here, before
         * anything was sent */
        contiguous = rc == CDT_SUCCESS && r->single_len <= CDT__UCX_HEAD_MAX;
        if (contiguous)
            rc = cdt_frame_gather(r->frame, 0, r->head + CDT__UCX_PREFIX_SIZE, frame_size);
    }
    cdt__ucx_put_single_prefix(r->head);
    if (contiguous)
        cdt__ucx_put_trailer(r->head + r->single_len - CDT__UCX_TRAILER_SIZE, CDT_SUCCESS);
    pthread_mutex_lock(&w->lock);
    if (rc == CDT_SUCCESS && ep->status != CDT_SUCCESS)
        rc = CDT_ERR_PEER; /* the only failed state of an endpoint */
    r->outstanding = 1;    /* held while posting */
    if (rc == CDT_SUCCESS && contiguous) {
        r->head_exposed = ep->peer_accesses_memory && r->single_len > CDT__UCX_EAGER_SURE;
        r->q_ep = ep->id;
        rc = post_head(r, ep, r->head, r->single_len, tag, &r->head_sub, false);
    } else if (rc == CDT_SUCCESS && ep->lane_heads_on) {
        /* a head that cannot go into the head ring must not go over UCX after the switch (it
         * would match after later ring heads): sent split instead (docs/TRANSPORT.md §10.6) */
        rc = CDT_ERR_BUSY;
    } else if (rc == CDT_SUCCESS)
        rc = post_dt(r, ep->ucp, r, 1, w->dt_send, tag, &r->head_sub);
    if (rc != CDT_SUCCESS) {
        pthread_mutex_unlock(&w->lock);
        send_unposted(r);
        return rc;
    }
    return send_posted(ep, r, request);
}

/* split mode, a frame without regions already in the head buffer after the prefix: the head
 * message alone (what build() makes of such a frame, without a frame object) */
static int send_plain(cdt_ucx_ep ep, cdt_ucx_request r, cdt_count threshold, cdt_count frame_len,
                      cdt_ucx_tag tag, cdt_ucx_request *request)
{
    cdt_ucx_worker w = ep->w;
    int rc = CDT_SUCCESS;
    pthread_mutex_lock(&w->lock);
    if (ep->status != CDT_SUCCESS)
        rc = CDT_ERR_PEER; /* the only failed state of an endpoint */
    else
        cdt__ucx_hello_send(ep); /* before its first object: the peer places its heads */
    cdt__ucx_put_prefix(r->head, cdt__ucx_next_key(w), threshold, 0, 0, ep->id);
    r->outstanding = 1; /* held while posting */
    size_t len = (size_t)(CDT__UCX_PREFIX_SIZE + frame_len);
    r->head_exposed = ep->peer_accesses_memory && len > CDT__UCX_EAGER_SURE;
    r->q_ep = ep->id;
    if (rc == CDT_SUCCESS)
        rc = post_head(r, ep, r->head, len, tag, &r->head_sub, false);
    if (rc != CDT_SUCCESS) { /* nothing was sent */
        pthread_mutex_unlock(&w->lock);
        send_unposted(r);
        return rc;
    }
    return send_posted(ep, r, request);
}

int cdt_ucx_isend(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                  cdt_ucx_request *request)
{
    return cdt_ucx_isend_advanced(ep, buf, count, type, tag, NULL, request);
}

static int isend(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                 const cdt_ucx_send_params *params, cdt_ucx_request *request);

int cdt_ucx_isend_advanced(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type,
                           cdt_ucx_tag tag, const cdt_ucx_send_params *params,
                           cdt_ucx_request *request)
{
    int rc = isend(ep, buf, count, type, tag, params, request);
    if (rc != CDT_SUCCESS && ep != NULL) { /* whom, over what: cdt_ucx_last_error */
        pthread_mutex_lock(&ep->w->lock);
        cdt__ucx_fail_detail("send to", NULL, ep, rc, NULL);
        pthread_mutex_unlock(&ep->w->lock);
    }
    return rc;
}

static int isend(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                 const cdt_ucx_send_params *params, cdt_ucx_request *request)
{
    if (ep == NULL || request == NULL || tag > CDT_UCX_TAG_MAX)
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_worker w = ep->w;
    cdt_ucx_protocol protocol = w->protocol;
    cdt_count threshold = w->zcopy_threshold;
    cdt_count lane_threshold = w->lane_threshold; /* an object sent through the lane */
    if (params != NULL) {
        const uint64_t known = CDT_UCX_SEND_PARAM_PROTOCOL | CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD;
        if (params->field_mask & ~known)
            return CDT_ERR_INVALID_ARG;
        if (params->field_mask & CDT_UCX_SEND_PARAM_PROTOCOL) {
            protocol = params->protocol;
            if (protocol != CDT_UCX_PROTOCOL_AUTO && protocol != CDT_UCX_PROTOCOL_SPLIT &&
                protocol != CDT_UCX_PROTOCOL_SINGLE && protocol != CDT_UCX_PROTOCOL_AUTO_SINGLE)
                return CDT_ERR_INVALID_ARG;
        }
        if (params->field_mask & CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD) {
            threshold = lane_threshold = params->zcopy_threshold;
            if (threshold < 1)
                return CDT_ERR_INVALID_ARG;
        }
    }
    int rc = cdt__ucx_ep_wait_wired(ep);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_ucx_request r = cdt__ucx_request_new(w, true);
    if (r == NULL)
        return CDT_ERR_NO_MEMORY;
    /* the endpoint's mode is fixed once known: only the first sends take the lock for it */
    int mode = __atomic_load_n(&ep->mode, __ATOMIC_ACQUIRE) - 1;
    bool local, cma, fifo; /* the lane facts: written before the mode was published, or under
                            * the lock */
    if (mode < 0) {
        pthread_mutex_lock(&w->lock);
        mode = cdt__ucx_ep_mode(ep);
        local = ep->am_local;
        cma = ep->peer_accesses_memory;
        fifo = ep->am_fifo;
        pthread_mutex_unlock(&w->lock);
    } else {
        local = ep->am_local;
        cma = ep->peer_accesses_memory;
        fifo = ep->am_fifo;
    }
    /* a protocol named for this send wins over the worker's; AUTO and AUTO_SINGLE follow the
     * transport of the endpoint's messages */
    if (protocol == CDT_UCX_PROTOCOL_SINGLE)
        mode = CDT__UCX_MODE_SINGLE;
    else if (protocol == CDT_UCX_PROTOCOL_SPLIT)
        mode = CDT__UCX_MODE_SPLIT;
    else if (protocol != w->protocol)
        mode = local ? CDT__UCX_MODE_SINGLE : CDT__UCX_MODE_SPLIT;
    /* an endpoint whose peer mapped its lane sends split heads and a large object's stream
     * through the lane (ucx_lane_send.c; docs/TRANSPORT.md §10.3) */
    const bool lane =
        (protocol != CDT_UCX_PROTOCOL_SINGLE ||
         __atomic_load_n(&ep->lane_heads_on, __ATOMIC_ACQUIRE)) && /* every head in the ring */
        cdt__ucx_lane_ready(ep);
    if (lane)
        mode = CDT__UCX_MODE_SPLIT;
    /* encode outside the lock: it runs the type's callbacks. A single-mode message packs its
     * stream later, inside UCX's copy (a deferred frame); a small one without regions is
     * written whole into the head buffer now (no frame object: the small-object path) */
    cdt_frame_params fp = {.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR,
                           .head_alloc = cdt__ucx_frame_alloc,
                           .head_release = cdt__ucx_frame_release,
                           .head_alloc_arg = w};
    if (mode == CDT__UCX_MODE_SINGLE) {
        const cdt_count room = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE - CDT__UCX_TRAILER_SIZE;
        cdt_count frame_len = 0;
        rc = cdt__frame_encode_small(buf, count, type, &fp, r->head + CDT__UCX_PREFIX_SIZE, room,
                                     &frame_len, &r->frame);
        if (rc == CDT_SUCCESS && r->frame == NULL) {
            r->single_len = CDT__UCX_PREFIX_SIZE + (size_t)frame_len + CDT__UCX_TRAILER_SIZE;
            return send_single(ep, r, tag, request);
        }
    } else if (lane) {
        /* as below, except that a larger frame stays deferred: the lane packs its stream
         * straight into the segment; an object the lane declines is packed now */
        const cdt_count room = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE;
        cdt_count frame_len = 0;
        rc = cdt__frame_encode_plain_deferred(buf, count, type, &fp, r->head + CDT__UCX_PREFIX_SIZE,
                                              room, &frame_len, &r->frame);
        if (rc == CDT_SUCCESS && r->frame == NULL)
            return send_plain(ep, r, threshold, frame_len, tag, request);
        if (rc == CDT_SUCCESS) {
            /* regions below the lane's threshold go in its stream: a copy on each side,
             * pipelined, instead of a rendezvous per region over TCP (§10.3, Regions) */
            rc = cdt__ucx_lane_isend(ep, r, lane_threshold, tag, request);
            if (rc != CDT__UCX_LANE_DECLINED)
                return rc;
            rc = cdt__frame_materialize(r->frame);
        }
    } else {
        /* split mode: a frame without regions that fits the head message is written there
         * whole (the head message is then prefix + frame, no tail) */
        const cdt_count room = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE;
        cdt_count frame_len = 0;
        rc = cdt__frame_encode_plain(buf, count, type, &fp, r->head + CDT__UCX_PREFIX_SIZE, room,
                                     &frame_len, &r->frame);
        if (rc == CDT_SUCCESS && r->frame == NULL)
            return send_plain(ep, r, threshold, frame_len, tag, request);
    }
    bool pack_now = false;
    if (rc == CDT_SUCCESS && mode == CDT__UCX_MODE_SINGLE && protocol == CDT_UCX_PROTOCOL_AUTO &&
        cma && has_large_region(r->frame, threshold)) {
        /* Over cross-memory attach an object with large regions still goes split: each large
         * region moves by one cross-memory copy straight into the receiver's memory, which
         * beats UCX's two copies through its segments when that memory is fresh, as it is for
         * a receiving type that allocates per object (docs/TRANSPORT.md §1). Without cma the
         * rendezvous runs over TCP, and one message through the segments wins. */
        mode = CDT__UCX_MODE_SPLIT;
        pack_now = true;
    } else if (mode == CDT__UCX_MODE_SINGLE && fifo && type->cls == CDT__CLASS_CUSTOM) {
        /* No user code inside UCX's send window over a shared-memory FIFO: there a sender
         * that dies between reserving the receiver's FIFO slot and publishing it wedges the
         * receiver for every other sender (TRANSPORT.md §9.1), and a deferred frame would run
         * the custom type's pack callbacks in that window. Packed now, the window holds
         * memory copies only (the stream from the head buffer, the regions from their
         * memory). Derived types keep packing late: their kernels are the library's copies. */
        pack_now = true;
    }
    if (rc == CDT_SUCCESS && pack_now)
        rc = cdt__frame_materialize(r->frame);
    if (rc != CDT_SUCCESS) {
        cdt_frame_free(r->frame);
        r->frame = NULL;
        cdt__ucx_request_release(r);
        return rc;
    }
    if (mode == CDT__UCX_MODE_SINGLE)
        return send_single(ep, r, tag, request);
    send_plan pl;
    rc = plan(r, threshold, &pl);
    if (rc == CDT_SUCCESS && pl.nsep > 0) {
        r->subs = calloc((size_t)pl.nsep, sizeof(*r->subs));
        rc = r->subs == NULL ? CDT_ERR_NO_MEMORY : CDT_SUCCESS;
        r->nsubs = pl.nsep;
    }
    /* non-contiguous large regions are staged once (a copy; contiguous ones never are) */
    for (cdt_count i = 0, k = 0; rc == CDT_SUCCESS && i < pl.nregions; i++) {
        cdt_count len, off, npieces;
        rc = cdt_frame_region_info(r->frame, i, &len, NULL, &off);
        if (rc != CDT_SUCCESS || !cdt__ucx_separate(len, threshold, i))
            continue;
        cdt__ucx_sub *s = &r->subs[k++];
        s->index = i;
        s->len = len;
        rc = cdt_frame_region_iov_count(r->frame, i, &npieces);
        if (rc == CDT_SUCCESS && npieces != 1) {
            s->tmp = cdt__ucx_buf_get(w, (size_t)len);
            rc = s->tmp == NULL ? CDT_ERR_NO_MEMORY : cdt_frame_gather(r->frame, off, s->tmp, len);
        }
    }
    pthread_mutex_lock(&w->lock);
    if (rc == CDT_SUCCESS && ep->status != CDT_SUCCESS)
        rc = CDT_ERR_PEER; /* the only failed state of an endpoint */
    if (rc == CDT_SUCCESS)
        cdt__ucx_hello_send(ep); /* before its first object: the peer places its heads */
    uint64_t key = cdt__ucx_next_key(w);
    const unsigned char *msg = NULL, *tail = NULL;
    size_t msg_len = 0;
    cdt_count tail_len = 0;
    /* Over cma the receiver copies rendezvous messages out of this process's memory, and may
     * do so after the send ended (above cdt__ucx_ep_end_sends): an object with messages from
     * memory the caller or the library reuses (a tail, large regions) is complete only with
     * its commit, and its head goes from the head buffer, quarantined if the send fails */
    r->commit = cma && (pl.nsep > 0 || pl.inline_len > head_room(&pl));
    r->key = key;
    r->sender = ep->id;
    if (rc == CDT_SUCCESS)
        rc = build(r, &pl, key, threshold, cma, &msg, &msg_len, &tail, &tail_len);
    r->head_exposed = cma && msg_len > CDT__UCX_EAGER_SURE;
    r->q_ep = ep->id;
    r->outstanding = 1;   /* held while posting */
    r->parts_pending = 1; /* held while posting: the commit is sent after the last part */
    if (rc == CDT_SUCCESS)
        rc = post_head(r, ep, msg, msg_len, tag, &r->head_sub, true);
    if (rc != CDT_SUCCESS) { /* nothing was sent */
        pthread_mutex_unlock(&w->lock);
        send_unposted(r);
        return rc;
    }
    /* From here the message exists: later failures are the request's status, and the receiver
     * must learn of them at once. A part that cannot be sent is replaced by an empty message
     * on its tag (no separate part is empty), which fails the receive with
     * CDT_ERR_FRAME_TRUNCATED instead of leaving it waiting; every other part is still sent. */
    bool send_regions = true;
    if (tail_len > 0) {
        rc = post_part(r, ep->ucp, tail, (size_t)tail_len,
                       cdt__ucx_private_tag(key, CDT__UCX_TAIL_INDEX), &r->tail_sub);
        if (rc != CDT_SUCCESS) {
            cdt__ucx_request_set_error(r, rc);
            /* without the tail the receiver never learns of the regions: none is sent */
            send_regions = false;
            post_part(r, ep->ucp, NULL, 0, cdt__ucx_private_tag(key, CDT__UCX_TAIL_INDEX),
                      &r->tail_sub);
        }
    }
    for (cdt_count k = 0; send_regions && k < r->nsubs; k++) {
        cdt__ucx_sub *s = &r->subs[k];
        const uint64_t stag = cdt__ucx_private_tag(key, (uint64_t)s->index);
        const void *data = s->tmp;
        int prc = CDT_SUCCESS;
        if (data == NULL) {
            cdt_iov iov = {0};
            cdt_count got = 0;
            prc = cdt_frame_region_iov(r->frame, s->index, 0, 1, &iov, &got);
            data = iov.base;
            if (prc == CDT_SUCCESS && (got != 1 || iov.len != s->len))
                prc = CDT_ERR_CALLBACK;
        }
        if (prc == CDT_SUCCESS)
            prc = post_part(r, ep->ucp, data, (size_t)s->len, stag, s);
        if (prc != CDT_SUCCESS) {
            cdt__ucx_request_set_error(r, prc);
            post_part(r, ep->ucp, NULL, 0, stag, s); /* the abort marker */
        }
    }
    if (r->commit && --r->parts_pending == 0) /* every part completed while it was posted */
        commit_send(r, ep->ucp);
    return send_posted(ep, r, request);
}

/* ---- for the lane's sends (ucx_lane_send.c) ---- */

int cdt__ucx_send_post_part(cdt_ucx_request r, ucp_ep_h ep, const void *data, size_t len,
                            uint64_t tag, cdt__ucx_sub *s)
{
    return post_part(r, ep, data, len, tag, s);
}

int cdt__ucx_send_posted(struct cdt_ucx_ep_s *ep, cdt_ucx_request r, cdt_ucx_request *request)
{
    return send_posted(ep, r, request);
}

void cdt__ucx_send_unposted(cdt_ucx_request r)
{
    send_unposted(r);
}

int cdt__ucx_send_post_head(cdt_ucx_request r, struct cdt_ucx_ep_s *ep, const void *data,
                            size_t len, uint64_t tag, cdt__ucx_sub *s)
{
    return post_head(r, ep, data, len, tag, s, true);
}

void cdt__ucx_send_sub_end(cdt__ucx_sub *s, int status)
{
    sub_end(s, status);
}

/* as send_cb does for a UCX message: the lane's part of the object ended */
void cdt__ucx_send_part_end(cdt_ucx_request r, int status)
{
    if (status != CDT_SUCCESS)
        cdt__ucx_request_set_error(r, status);
    if (r->commit && --r->parts_pending == 0)
        commit_send(r, r->ep != NULL ? r->ep->ucp : NULL);
    if (--r->outstanding == 0) {
        send_done(r);
        if (r->orphaned)
            cdt__ucx_orphan_release(r);
    }
}
