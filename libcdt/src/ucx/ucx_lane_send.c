/*
 * ucx_lane_send.c - a large object sent through the endpoint's lane (docs/TRANSPORT.md §10.3):
 * a LANE head (prefix, lane id and stream length, the frame's header) matched through UCX as
 * any head, the large regions as their own messages as in version 6, and the rest of the inline
 * stream (packed stream, small regions) packed by the operation engine straight into the
 * segment, fragment by fragment, once the receiver granted it. The frame stays deferred: the
 * sender packs each byte once, into memory the receiver unpacks from. A header that no head
 * message holds (more than 2,041 regions) goes through the lane ahead of the stream, the head
 * carrying its fixed part only (HEADER, §10.3, Headers through the lane).
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

void cdt__ucx_lane_cursor_init(cdt_ucx_request r, cdt_count header, cdt_count packed)
{
    r->lane_seg = -1;
    r->lane_seg_start = header;
    r->lane_run_off = header;
    r->lane_run_len = packed;
    r->lane_run_grown = false;
}

static int region_at(cdt_frame frame, cdt_decoder dec, cdt_count i, cdt_count *len, cdt_count *off)
{
    return frame != NULL ? cdt_frame_region_info(frame, i, len, NULL, off)
                         : cdt_decoder_region_info(dec, i, len, NULL, off);
}

static int region_count(cdt_frame frame, cdt_decoder dec, cdt_count *n)
{
    if (frame != NULL)
        return cdt_frame_region_count(frame, n);
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_REGION_COUNT};
    int rc = cdt_decoder_info(dec, &in);
    *n = in.region_count;
    return rc;
}

/* the run grows by the inline regions that follow it in the frame without a gap (no padding,
 * no large region between): their lane bytes are consecutive frame bytes too, so one gather
 * (one decoder write) takes many small regions. Each region joins one run once: the cursor
 * costs O(1) a region, not a lookup a region. */
static int grow_run(cdt_ucx_request r, cdt_frame frame, cdt_decoder dec)
{
    cdt_count n;
    int rc = region_count(frame, dec, &n);
    /* the packed stream's run, and every region inline with no padding (the table's shape,
     * taken by the walk that built or parsed it) starting where the run ends: all join it, as
     * the loop below would find them one by one */
    cdt__region_shape shape;
    if (frame != NULL)
        cdt__frame_region_shape(frame, &shape);
    else
        cdt__decoder_region_shape(dec, &shape);
    cdt_count off0;
    if (rc == CDT_SUCCESS && r->lane_seg == -1 && n > 0 && shape.gapless &&
        shape.longest < r->threshold &&
        (rc = region_at(frame, dec, 0, NULL, &off0)) == CDT_SUCCESS &&
        off0 == r->lane_run_off + r->lane_run_len) {
        r->lane_run_len += shape.bytes;
        r->lane_seg = n - 1;
        r->lane_run_grown = true;
        return CDT_SUCCESS;
    }
    for (cdt_count i = r->lane_seg + 1; rc == CDT_SUCCESS && i < n; i++) {
        cdt_count len, off;
        if ((rc = region_at(frame, dec, i, &len, &off)) != CDT_SUCCESS)
            break;
        if (len == 0)
            continue;
        if (cdt__ucx_separate(len, r->threshold, i) || off != r->lane_run_off + r->lane_run_len)
            break;
        r->lane_run_len += len;
        r->lane_seg = i;
    }
    r->lane_run_grown = true;
    return rc;
}

/* the run after the current one: the next region that travels inline, grown */
static int next_run(cdt_ucx_request r, cdt_frame frame, cdt_decoder dec)
{
    cdt_count n;
    int rc = region_count(frame, dec, &n);
    if (rc != CDT_SUCCESS)
        return rc;
    for (cdt_count i = r->lane_seg + 1; i < n; i++) {
        cdt_count len, off;
        if ((rc = region_at(frame, dec, i, &len, &off)) != CDT_SUCCESS)
            return rc;
        if (len == 0 || cdt__ucx_separate(len, r->threshold, i))
            continue;
        r->lane_seg_start += r->lane_run_len;
        r->lane_run_off = off;
        r->lane_run_len = len;
        r->lane_seg = i;
        return grow_run(r, frame, dec);
    }
    return CDT_ERR_FRAME_MALFORMED; /* past the inline stream's end */
}

int cdt__ucx_lane_seek(cdt_ucx_request r, cdt_frame frame, cdt_decoder dec, cdt_count s,
                       cdt_count *frame_off, cdt_count *avail)
{
    if (s < r->lane_header) { /* the header's bytes (a header that continues in the lane) */
        *frame_off = s;
        *avail = r->lane_header - s;
        return CDT_SUCCESS;
    }
    if (s < r->lane_seg_start)
        return CDT_ERR_FRAME_MALFORMED; /* the cursor only moves forward */
    /* the first run is the packed stream's: the regions right after it join it */
    if (!r->lane_run_grown) {
        int rc = grow_run(r, frame, dec);
        if (rc != CDT_SUCCESS)
            return rc;
    }
    while (s - r->lane_seg_start >= r->lane_run_len) {
        int rc = next_run(r, frame, dec);
        if (rc != CDT_SUCCESS)
            return rc;
    }
    *frame_off = r->lane_run_off + (s - r->lane_seg_start);
    *avail = r->lane_run_len - (s - r->lane_seg_start);
    return CDT_SUCCESS;
}

/* the lane's pack callback: lane bytes [offset, offset + n) are inline-stream bytes from
 * r->lane_base on (the header's end, or the fixed header's when the header continues in the
 * lane). A pack that fails (a custom type's callback) still fills the fragment, so
 * the stream keeps its length; the object's commit carries the error to the receiver: the
 * commit word that follows the stream (lane bytes [lane_len, lane_len + 8)), or its message. */
static int pack(void *state, uint64_t offset, unsigned char *dst, size_t n, size_t *used)
{
    cdt_ucx_request r = state;
    if (offset >= r->lane_len) {
        /* the commit word after the stream (§10.3, Commit in the ring): every stream byte was
         * packed before it, so the status is final: a pack that failed part-way, or a send
         * ended meanwhile */
        unsigned char word[CDT__LANE_WORD_SIZE];
        cdt__ucx_put_commit(word, r->detached                ? CDT_ERR_CANCELED
                                  : r->status != CDT_SUCCESS ? r->status
                                                             : r->split_status);
        *used = cdt__lane_word_put(word, r->lane_len, offset, dst, n);
        return CDT_SUCCESS;
    }
    if ((uint64_t)n > r->lane_len - offset)
        n = (size_t)(r->lane_len - offset); /* the stream's bytes only: the word is its own */
    cdt_count foff = 0, avail = 0;
    int rc = r->detached || r->status != CDT_SUCCESS ? CDT_ERR_CANCELED : CDT_SUCCESS;
    if (rc == CDT_SUCCESS)
        rc = cdt__ucx_lane_seek(r, r->frame, NULL, r->lane_base + (cdt_count)offset, &foff, &avail);
    size_t k = n;
    if (rc == CDT_SUCCESS) {
        if ((uint64_t)avail < k)
            k = (size_t)avail;
        rc = cdt_frame_gather(r->frame, foff, dst, (cdt_count)k);
    }
    if (rc != CDT_SUCCESS) {
        if (!r->detached)
            cdt__ucx_request_set_error(r, rc);
        k = n;
        memset(dst, 0, k);
    }
    *used = k;
    return CDT_SUCCESS;
}

/* the bytes the receiver grants: the lane's stream, and the commit word after it where the
 * object carries its commit in the ring */
static uint64_t lane_granted(cdt_ucx_request r)
{
    return r->lane_len + (r->lane_word ? CDT__UCX_COMMIT_SIZE : 0);
}

int cdt__ucx_lane_pump_send(cdt__ucx_lane_ep *l)
{
    struct cdt_ucx_ep_s *ep = l->ep; /* read while l is alive */
    for (;;) {
        if (l->cur == NULL) {
            cdt__lane_grant g;
            int rc = cdt__lane_take_grant(&l->tx, &g);
            if (rc <= 0)
                return rc;
            /* the grant's values are the peer's: a key this side did not offer, or another
             * length, breaks the lane (§10.5) */
            cdt_ucx_request prev = NULL, r = l->q_head;
            while (r != NULL && r->key != g.key) {
                prev = r;
                r = r->lane_next;
            }
            if (r == NULL || lane_granted(r) != g.stream_len) {
                l->tx.error = CDT_ERR_PEER;
                return CDT_ERR_PEER;
            }
            if (prev != NULL)
                prev->lane_next = r->lane_next;
            else
                l->q_head = r->lane_next;
            if (l->q_tail == r)
                l->q_tail = prev;
            r->lane_next = NULL;
            l->cur = r;
        }
        cdt_ucx_request r = l->cur;
        /* a SPLIT object's word goes only after its regions' share (ucx_lane_split.c) */
        uint64_t upto = r->lane_split ? r->lane_len : lane_granted(r);
        int rc = r->lane_off < upto ? cdt__lane_pump_out(&l->tx, pack, r, &r->lane_off, upto) : 1;
        if (rc == 1 && r->lane_split)
            rc = cdt__ucx_lane_split_send(l, r, pack);
        if (rc <= 0)
            return rc;
        l->cur = NULL;
        ep->w->lane_sent++; /* before the request completes, as for receives */
        ep->w->lane_split_sent += r->lane_split;
        cdt__ucx_send_part_end(r, CDT_SUCCESS); /* may free r's frame: done with it */
        cdt__ucx_test_end(ep, CDT__UCX_END_PUMP_SEND);
        if (ep->lane != l)
            return 1; /* the endpoint ended in the commit's send: l is freed */
    }
}

/* the object's inline stream, from its deferred frame: false when it does not go through the
 * lane (it fits a head message, a large region is in pieces, or its header does not fit a head
 * message and a region is large: a receiver that failed before the whole table came could not
 * name the regions to discard). Whether the receiver takes a header through the lane is asked
 * under the lock (cdt__ucx_lane_isend). */
static bool lane_plan(cdt_ucx_request r, cdt_count threshold, bool split, cdt_count *nsep,
                      cdt_count *sep_bytes, int *rc)
{
    cdt_count n;
    *rc = cdt_frame_region_count(r->frame, &n);
    if (*rc != CDT_SUCCESS)
        return false;
    const cdt_count room = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE - CDT__UCX_LANE_EXT_SIZE;
    const bool in_lane = n > (room - CDT_FRAME_FIXED_HEADER_SIZE) / CDT_FRAME_REGION_ENTRY_SIZE;
    cdt_count header = CDT_FRAME_FIXED_HEADER_SIZE + n * CDT_FRAME_REGION_ENTRY_SIZE;
    unsigned char *h = r->head + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE;
    *rc = cdt_frame_gather(r->frame, 0, h, in_lane ? CDT_FRAME_FIXED_HEADER_SIZE : header);
    if (*rc != CDT_SUCCESS)
        return false;
    cdt_count inline_len = header + (cdt_count)cdt__get_u64(h + CDT__OFF_PACKED_SIZE);
    *nsep = 0;
    *sep_bytes = 0;
    /* none is large (the table's longest, taken when the frame was laid out): all travel in
     * the lane, with no look at each */
    cdt__region_shape shape;
    cdt__frame_region_shape(r->frame, &shape);
    const bool all_inline = shape.longest < threshold;
    if (all_inline)
        inline_len += shape.bytes;
    for (cdt_count i = 0; !all_inline && i < n; i++) {
        cdt_count len, pieces;
        *rc = cdt_frame_region_info(r->frame, i, &len, NULL, NULL);
        if (*rc != CDT_SUCCESS)
            return false;
        if (!cdt__ucx_separate(len, threshold, i)) {
            inline_len += len;
            continue;
        }
        if (in_lane)
            return false;
        /* a large region in pieces is staged by the version 6 path (a gather out of order,
         * which a deferred frame of an in-order type refuses) */
        *rc = cdt_frame_region_iov_count(r->frame, i, &pieces);
        if (*rc != CDT_SUCCESS || pieces != 1)
            return false;
        (*nsep)++;
        *sep_bytes += len;
    }
    /* one head message carries it: no grant to wait for; a SPLIT object's large regions are
     * copied by both processes whatever its stream's size (§10.3, Regions moved by both cores) */
    if (inline_len <= CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE && !(split && *nsep > 0))
        return false;
    r->lane_header = header;
    r->lane_packed = (cdt_count)cdt__get_u64(h + CDT__OFF_PACKED_SIZE);
    r->lane_base = in_lane ? CDT_FRAME_FIXED_HEADER_SIZE : header;
    r->lane_len = (uint64_t)(inline_len - r->lane_base);
    r->lane_off = 0;
    r->threshold = threshold;
    cdt__ucx_lane_cursor_init(r, header, r->lane_packed);
    return true;
}

/* a large record's head message (§10.6, Large records), written straight into the head ring:
 * the prefix, the header lane_plan gathered into r->head, then the rest of the inline stream
 * packed from the deferred frame in order (the cursor of the lane's stream) */
static int fill_whole(void *arg, unsigned char *dst, size_t len)
{
    cdt_ucx_request r = arg;
    const size_t header = (size_t)r->lane_header;
    if (len != CDT__UCX_PREFIX_SIZE + header + r->lane_len)
        return CDT_ERR_INVALID_ARG;
    cdt__ucx_put_prefix(dst, r->key, r->threshold, 0, 0, r->sender);
    memcpy(dst + CDT__UCX_PREFIX_SIZE, r->head + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE,
           header);
    unsigned char *out = dst + CDT__UCX_PREFIX_SIZE + header;
    for (uint64_t off = 0; off < r->lane_len;) {
        cdt_count foff = 0, avail = 0;
        int rc =
            cdt__ucx_lane_seek(r, r->frame, NULL, r->lane_base + (cdt_count)off, &foff, &avail);
        if (rc == CDT_SUCCESS && avail <= 0)
            rc = CDT_ERR_FRAME_MALFORMED;
        if (rc != CDT_SUCCESS)
            return rc;
        uint64_t k = r->lane_len - off < (uint64_t)avail ? r->lane_len - off : (uint64_t)avail;
        rc = cdt_frame_gather(r->frame, foff, out + off, (cdt_count)k);
        if (rc != CDT_SUCCESS)
            return rc; /* a custom type's callback: the send fails, nothing published */
        off += k;
    }
    return CDT_SUCCESS;
}

int cdt__ucx_lane_isend(struct cdt_ucx_ep_s *ep, cdt_ucx_request r, cdt_count threshold,
                        uint64_t tag, cdt_ucx_request *request)
{
    cdt_ucx_worker w = ep->w;
    cdt_count nsep = 0, sep_bytes = 0;
    int rc = CDT_SUCCESS;
    /* where the lane splits and the application named no threshold, regions from
     * CDT__UCX_LANE_SPLIT_MIN on are moved by both processes (§10.3, Regions moved by both
     * cores); an object that cannot go SPLIT is planned again with the lane's threshold */
    const cdt_count room = CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE - CDT__UCX_LANE_EXT_SIZE;
    bool split = threshold == CDT__UCX_LANE_REGION_THRESHOLD &&
                 __atomic_load_n(&ep->lane_split, __ATOMIC_ACQUIRE);
    bool planned = split && lane_plan(r, CDT__UCX_LANE_SPLIT_MIN, true, &nsep, &sep_bytes, &rc);
    if (planned && (nsep < 1 || nsep > CDT__UCX_SPLIT_MAX || r->lane_base != r->lane_header ||
                    r->lane_header + 8 * nsep > room || sep_bytes < CDT__UCX_LANE_SPLIT_TOTAL))
        planned = false;
    /* a worker that writes large records (§10.6) keeps the objects one would hold as one */
    if (planned && w->lane_large &&
        (uint64_t)r->lane_header + r->lane_len + (uint64_t)sep_bytes <= CDT__LANE_HEAD_LARGE_MAX)
        planned = false;
    split = planned;
    if (split)
        threshold = CDT__UCX_LANE_SPLIT_MIN;
    if (rc == CDT_SUCCESS && !planned)
        planned = lane_plan(r, threshold, false, &nsep, &sep_bytes, &rc);
    if (!planned) {
        if (rc == CDT_SUCCESS)
            return CDT__UCX_LANE_DECLINED;
        cdt_frame_free(r->frame);
        r->frame = NULL;
        cdt__ucx_request_release(r);
        return rc;
    }
    if (split) {
        rc = cdt__ucx_lane_split_plan(r, nsep);
        if (rc != CDT_SUCCESS) {
            cdt_frame_free(r->frame);
            r->frame = NULL;
            cdt__ucx_request_release(r);
            return rc;
        }
    }
    if (nsep > 0 && !split) {
        r->subs = calloc((size_t)nsep, sizeof(*r->subs));
        if (r->subs == NULL) {
            cdt_frame_free(r->frame);
            r->frame = NULL;
            cdt__ucx_request_release(r);
            return CDT_ERR_NO_MEMORY;
        }
        r->nsubs = nsep;
    }
    pthread_mutex_lock(&w->lock);
    if (ep->status != CDT_SUCCESS) { /* the only failed state of an endpoint: nothing sent */
        pthread_mutex_unlock(&w->lock);
        cdt__ucx_send_unposted(r);
        return CDT_ERR_PEER;
    }
    cdt__ucx_lane_ep *l = ep->lane;
    if (l == NULL || !l->tx_attached ||
        (r->lane_base < r->lane_header && !(l->tx.peer_features & CDT__LANE_FEATURE_HEADERS))) {
        /* the lane ended since the caller looked (the endpoint failed or closes), or its
         * consumer (an earlier release) does not take a header through the lane */
        pthread_mutex_unlock(&w->lock);
        free(r->subs);
        r->subs = NULL;
        r->nsubs = 0;
        free(r->split_iov); /* the version 6 way, with the caller's threshold */
        r->split_iov = NULL;
        r->split_n = 0;
        r->lane_split = false;
        return CDT__UCX_LANE_DECLINED;
    }
    uint64_t key = cdt__ucx_next_key(w);
    r->key = key;
    r->sender = ep->id;
    if (nsep == 0 && r->lane_base == r->lane_header) {
        /* the whole object as one large record where the consumer takes it: no grant, no
         * data ring, no commit (§10.6, Large records) */
        size_t whole = CDT__UCX_PREFIX_SIZE + (size_t)r->lane_header + (size_t)r->lane_len;
        r->q_ep = ep->id;
        r->outstanding = 1; /* held while posting */
        rc = cdt__ucx_lane_heads_post_whole(ep, whole, tag, fill_whole, r);
        if (rc == 1)
            return cdt__ucx_send_posted(ep, r, request);
        if (rc != 0) { /* nothing was sent */
            pthread_mutex_unlock(&w->lock);
            cdt__ucx_send_unposted(r);
            return rc;
        }
    }
    /* a lane object always ends with its commit: it carries the sender's status (a pack that
     * failed part-way, whose stream was filled up) and, over cma, the large regions' end. With
     * no large region, to a consumer that takes it, the commit is a word in the data ring after
     * the stream (no message: §10.3, Commit in the ring); else a message after every part */
    r->lane_word = (nsep == 0 || split || w->test_word_regions) &&
                   (l->tx.peer_features & CDT__LANE_FEATURE_RING_COMMIT) != 0;
    r->commit = !r->lane_word;
    unsigned flags = CDT__UCX_FLAG_LANE | (r->commit ? CDT__UCX_FLAG_COMMIT : 0u);
    if (r->lane_base < r->lane_header)
        flags |= CDT__UCX_FLAG_HEADER;
    if (split)
        flags |= CDT__UCX_FLAG_SPLIT; /* the source table follows the header (split_plan) */
    cdt__ucx_put_prefix(r->head, key, threshold, 0, flags, ep->id);
    uint64_t lane_id = cdt__get_u64(l->tx.nonce);
    cdt__ucx_put_lane_ext(r->head + CDT__UCX_PREFIX_SIZE, lane_id,
                          r->lane_base + (cdt_count)r->lane_len);
    size_t msg_len = CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE + (size_t)r->lane_base +
                     (split ? 8 * (size_t)nsep : 0);
    r->head_exposed = ep->peer_accesses_memory && msg_len > CDT__UCX_EAGER_SURE;
    r->q_ep = ep->id;
    r->outstanding = 1;   /* held while posting */
    r->parts_pending = 1; /* held while posting: the commit is sent after the last part */
    rc = cdt__ucx_send_post_head(r, ep, r->head, msg_len, tag, &r->head_sub);
    if (rc != CDT_SUCCESS) { /* nothing was sent */
        pthread_mutex_unlock(&w->lock);
        cdt__ucx_send_unposted(r);
        return rc;
    }
    /* the large regions, each its own message straight from the object's memory (§4); a SPLIT
     * object's are copied by both processes once its stream is out (ucx_lane_split.c) */
    cdt_count regions = 0;
    cdt_frame_region_count(r->frame, &regions);
    for (cdt_count i = 0, k = 0; !split && i < regions && k < nsep; i++) {
        cdt_count len = 0;
        cdt_frame_region_info(r->frame, i, &len, NULL, NULL);
        if (!cdt__ucx_separate(len, threshold, i))
            continue;
        cdt__ucx_sub *s = &r->subs[k++];
        s->index = i;
        s->len = len;
        const uint64_t stag = cdt__ucx_private_tag(key, (uint64_t)i);
        cdt_iov iov = {0};
        cdt_count got = 0;
        int prc = cdt_frame_region_iov(r->frame, i, 0, 1, &iov, &got);
        if (prc == CDT_SUCCESS && (got != 1 || iov.len != len))
            prc = CDT_ERR_CALLBACK;
        if (prc == CDT_SUCCESS)
            prc = cdt__ucx_send_post_part(r, ep->ucp, iov.base, (size_t)len, stag, s);
        if (prc != CDT_SUCCESS) {
            cdt__ucx_request_set_error(r, prc);
            cdt__ucx_send_post_part(r, ep->ucp, NULL, 0, stag, s); /* the abort marker */
        }
    }
    /* the stream: packed into the lane once the receiver grants it (cdt__ucx_lane_pump_send) */
    r->outstanding++;
    r->parts_pending++;
    r->lane_next = NULL;
    if (l->q_tail != NULL)
        l->q_tail->lane_next = r;
    else
        l->q_head = r;
    l->q_tail = r;
    --r->parts_pending; /* the hold: the lane's part is still pending, so no commit yet */
    return cdt__ucx_send_posted(ep, r, request);
}
