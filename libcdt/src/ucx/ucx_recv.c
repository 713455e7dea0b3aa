/*
 * ucx_recv.c - receive one object: match its head message (the only match the application
 * sees), validate prefix and frame header, bind the destination, unpack the inline stream,
 * then post each large region's message straight into its destination memory.
 */
#include "frame/frame_format.h"
#include "core/core.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

static void sub_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                   void *user_data);

/* lock held. The callback may run inside ucp_tag_recv_nbx (UCP_OP_ATTR_FLAG_NO_IMM_CMPL on an
 * unexpected eager message), so the count is taken first and the handle kept only if the
 * callback has not run yet. */
static int post_recv(cdt_ucx_request r, cdt__ucx_sub *s, void *dst, size_t len, ucp_datatype_t dt,
                     uint64_t tag, uint64_t mask, ucp_tag_recv_nbx_callback_t cb)
{
    s->req = r;
    s->fired = false;
    s->ucx = NULL;
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = cb,
        .user_data = s,
        .datatype = dt,
    };
    r->outstanding++;
    void *q = ucp_tag_recv_nbx(r->w->ucp, dst, len, tag, mask, &p);
    if (UCS_PTR_IS_ERR(q)) {
        r->outstanding--;
        return cdt__ucx_status(UCS_PTR_STATUS(q));
    }
    if (!s->fired)
        s->ucx = q;
    return CDT_SUCCESS;
}

/* lock held: post a receive of exactly one private message */
static int post(cdt_ucx_request r, cdt__ucx_sub *s, void *dst, size_t len, uint64_t tag)
{
    return post_recv(r, s, dst, len, ucp_dt_make_contig(1), tag, UINT64_MAX, sub_cb);
}

/* The sender sent these regions on their own; we will not receive them into the object (the
 * receive failed). Post truncating receives for regions `from` on so the sender's operations
 * complete. The lengths come straight from the header bytes at the start of the inline stream
 * S: that needs no allocation, so it works also when the decoder could not be made (no memory,
 * or a header it refused). Only entries wholly inside S are read; a region the sender did not
 * send on its own is at worst a drain that expires at its deadline. */
static void drain_regions(cdt_ucx_request r, const unsigned char *S, cdt_count slen, cdt_count from)
{
    int64_t deadline = cdt__ucx_drain_deadline(r);
    if (r->commit && r->commit_sub.ucx == NULL && !r->commit_sub.fired)
        /* the commit is sent after every part completed: drained parts complete */
        cdt__ucx_post_drain(r->w, cdt__ucx_private_tag(r->key, CDT__UCX_COMMIT_INDEX), deadline);
    cdt_count header_size;
    if (cdt_frame_header_size(S, slen, &header_size) != CDT_SUCCESS || header_size > slen)
        return;
    cdt_count n = (header_size - CDT_FRAME_FIXED_HEADER_SIZE) / CDT_FRAME_REGION_ENTRY_SIZE;
    for (cdt_count i = from; i < n; i++) {
        uint64_t len = cdt__get_u64(S + CDT_FRAME_FIXED_HEADER_SIZE +
                                    i * CDT_FRAME_REGION_ENTRY_SIZE + CDT__REG_OFF_LEN);
        if (len <= INT64_MAX && cdt__ucx_separate((cdt_count)len, r->threshold, i))
            cdt__ucx_post_drain(r->w, cdt__ucx_private_tag(r->key, (uint64_t)i), deadline);
    }
}

/* lock held: the decoder of the inline stream S (r->dec), and the frame's sizes in *in and
 * r->info. A receive abandoned meanwhile fails here with its abandon status: nothing goes into
 * its memory. */
static int open_decoder(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                        cdt_frame_info *in)
{
    /* the limits were checked on the fixed header already when it was in the head message
     * (cdt__ucx_parse_head); the decoder checks them before anything is sized in any case */
    cdt_decoder_params dp = cdt__ucx_decoder_params(&r->limits);
    int rc = cdt_decoder_create_advanced(S, slen, &dp, &r->dec);
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_info(r->dec, in);
    if (rc != CDT_SUCCESS)
        return rc;
    if (r->abandon != CDT_SUCCESS)
        return r->abandon;
    r->info.frame_size = in->frame_size;
    r->info.packed_size = in->packed_size;
    r->info.region_count = in->region_count;
    r->info.region_bytes = in->region_bytes;
    return CDT_SUCCESS;
}

/* lock held: the bound decoder gets what S carries after the header: the packed stream, then
 * the small regions, which follow each other in S. *nsep: the regions sent on their own. */
static int inline_write(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                        const cdt_frame_info *in, cdt_count *nsep)
{
    cdt_count pos = in->header_size + in->packed_size;
    if (pos > slen)
        return CDT_ERR_FRAME_MALFORMED;
    int rc = cdt_decoder_write(r->dec, in->header_size, S + in->header_size, in->packed_size);
    /* small regions that also follow each other in the frame (no padding between them) are
     * written with one call */
    cdt_count run_off = 0, run_len = 0, run_pos = pos;
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < in->region_count; i++) {
        cdt_count len, off;
        rc = cdt_decoder_region_info(r->dec, i, &len, NULL, &off);
        if (rc != CDT_SUCCESS)
            break;
        if (cdt__ucx_separate(len, r->threshold, i)) {
            (*nsep)++;
            continue;
        }
        if (len > slen - pos) {
            rc = CDT_ERR_FRAME_MALFORMED;
            break;
        }
        if (run_len > 0 && off != run_off + run_len) {
            rc = cdt_decoder_write(r->dec, run_off, S + run_pos, run_len);
            run_len = 0;
        }
        if (run_len == 0) {
            run_off = off;
            run_pos = pos;
        }
        run_len += len;
        pos += len;
    }
    if (rc == CDT_SUCCESS && run_len > 0)
        rc = cdt_decoder_write(r->dec, run_off, S + run_pos, run_len);
    if (rc == CDT_SUCCESS && pos != slen)
        rc = CDT_ERR_FRAME_MALFORMED;
    return rc;
}

/* lock held: where the large region `index` of `len` bytes is received: straight into the
 * destination when that is one piece, else into a staging buffer (s->tmp) that sub_cb writes
 * through the decoder */
static int region_dst(cdt_ucx_request r, cdt__ucx_sub *s, cdt_count index, cdt_count len,
                      void **dst)
{
    cdt_count npieces;
    *dst = NULL;
    int rc = cdt_decoder_region_iov_count(r->dec, index, &npieces);
    if (rc != CDT_SUCCESS)
        return rc;
    if (npieces == 1) {
        cdt_iov iov = {0};
        cdt_count got = 0;
        rc = cdt_decoder_region_iov(r->dec, index, 0, 1, &iov, &got);
        if (rc == CDT_SUCCESS && (got != 1 || iov.len != len))
            rc = CDT_ERR_FRAME_MISMATCH;
        *dst = iov.base;
        return rc;
    }
    s->tmp = cdt__ucx_buf_get(r->w, (size_t)len);
    *dst = s->tmp;
    return s->tmp == NULL ? CDT_ERR_NO_MEMORY : CDT_SUCCESS;
}

/* lock held: a receive for each large region (r->subs has room for them all). On failure the
 * regions from the failed one on are drained; those posted already are canceled by
 * cdt__ucx_recv_fail (sub_cb drains the message of a canceled one). */
static void post_regions(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                         const cdt_frame_info *in)
{
    for (cdt_count i = 0; i < in->region_count; i++) {
        cdt_count len;
        int rc = cdt_decoder_region_info(r->dec, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS || !cdt__ucx_separate(len, r->threshold, i))
            continue;
        cdt__ucx_sub *s = &r->subs[r->nsubs++];
        s->index = i;
        s->len = len;
        void *dst;
        rc = region_dst(r, s, i, len, &dst);
        if (rc == CDT_SUCCESS)
            rc = post(r, s, dst, (size_t)len, cdt__ucx_private_tag(r->key, (uint64_t)i));
        if (rc != CDT_SUCCESS) {
            r->nsubs--;
            cdt__ucx_buf_put(r->w, s->tmp, (size_t)s->len);
            s->tmp = NULL;
            drain_regions(r, S, slen, i);
            cdt__ucx_recv_fail(r, rc);
            return;
        }
    }
}

/* lock held: the inline stream S (header, packed stream, small regions) is complete */
static void body_ready(cdt_ucx_request r, const unsigned char *S, cdt_count slen)
{
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    cdt_count nsep = 0;
    int rc = open_decoder(r, S, slen, &in);
    if (rc == CDT_SUCCESS)
        rc = r->prepare != NULL ? r->prepare(r->prepare_arg, r->dec)
                                : cdt_decoder_bind(r->dec, r->buf, r->count, r->type);
    if (rc == CDT_SUCCESS)
        rc = inline_write(r, S, slen, &in, &nsep);
    if (rc == CDT_SUCCESS && nsep > 0) {
        r->subs = calloc((size_t)nsep, sizeof(*r->subs));
        if (r->subs == NULL)
            rc = CDT_ERR_NO_MEMORY;
    }
    if (rc != CDT_SUCCESS) {
        /* nothing was posted: the sender may still have sent regions on their own */
        drain_regions(r, S, slen, 0);
        cdt__ucx_recv_fail(r, rc);
        return;
    }
    post_regions(r, S, slen, &in);
}

static void sub_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info, void *user_data)
{
    cdt__ucx_sub *s = user_data;
    cdt_ucx_request r = s->req;
    size_t length = st == UCS_OK ? info->length : 0; /* info lives in the UCX request */
    ucp_request_free(ucx_req);
    s->ucx = NULL;
    s->fired = true;
    int rc = cdt__ucx_status(st);
    /* cdt__ucx_recv_fail() and abandoning set the receive's status before they cancel its parts: a
     * part canceled while the status is still clean was aborted by UCX itself, because the endpoint
     * its data came from failed or was closed (cdt_ucx.h promises CDT_ERR_PEER for that) */
    if (st == UCS_ERR_CANCELED && r->status == CDT_SUCCESS)
        rc = CDT_ERR_PEER;
    if (rc == CDT_ERR_PEER && r->status == CDT_SUCCESS)
        cdt__ucx_recv_failed_by(r, CDT_UCX_RECV_FAILURE_MESSAGE, 0);
    if (st == UCS_ERR_CANCELED) /* the sender's message is discarded */
        cdt__ucx_post_drain(
            r->w,
            cdt__ucx_private_tag(r->key, s->index < 0 ? CDT__UCX_TAIL_INDEX : (uint64_t)s->index),
            cdt__ucx_drain_deadline(r));
    if (rc == CDT_SUCCESS && (cdt_count)length != s->len)
        rc = CDT_ERR_FRAME_TRUNCATED;
    if (rc != CDT_SUCCESS) {
        if (r->status == CDT_SUCCESS)
            cdt__ucx_recv_fail(r, rc);
    } else if (r->status == CDT_SUCCESS) {
        if (s == &r->commit_sub) {
            /* every other message was taken: the sender's status says whether all were sent */
            rc = cdt__ucx_commit_status(r->trailer);
            if (rc != CDT_SUCCESS)
                cdt__ucx_recv_fail(r, rc == CDT_ERR_FRAME_MALFORMED ? rc : CDT_ERR_FRAME_TRUNCATED);
            if (--r->outstanding == 0)
                cdt__ucx_recv_done(r);
            return;
        }
        if (s->index < 0) { /* the tail: the inline stream is complete */
            body_ready(r, r->stream, r->stream_len);
            cdt__ucx_buf_put(r->w, r->stream, (size_t)r->stream_len);
            r->stream = NULL;
            if (--r->outstanding == 0)
                cdt__ucx_recv_done(r);
            return;
        }
        cdt_count off;
        rc = cdt_decoder_region_info(r->dec, s->index, NULL, NULL, &off);
        if (rc == CDT_SUCCESS)
            rc = s->tmp != NULL ? cdt_decoder_write(r->dec, off, s->tmp, s->len)
                                : cdt_decoder_region_done(r->dec, s->index);
        cdt__ucx_buf_put(r->w, s->tmp, (size_t)s->len);
        s->tmp = NULL;
        if (rc != CDT_SUCCESS)
            cdt__ucx_recv_fail(r, rc);
    }
    if (--r->outstanding == 0)
        cdt__ucx_recv_done(r);
}

/* lock held: another receive in flight uses `key` (colliding keys, or a peer that forged
 * one): the messages of the two objects could cross, so both fail */
static cdt_ucx_request key_in_use(cdt_ucx_request r, uint64_t key)
{
    for (cdt_ucx_request o = r->w->body_recvs; o != NULL; o = o->next)
        if (o != r && o->has_key && o->key == key)
            return o;
    return NULL;
}

/* lock held: a head refused by a receiver limit. Every private message of the object (tail,
 * regions, commit) is discarded by one sweep that takes them one after the other (one posted
 * receive at a time, whatever the header lists), so that its sender completes at once and the
 * endpoint stays usable. Never on a key another receive uses (its parts would be taken). */
static void drain_refused(cdt_ucx_request r, const unsigned char *head, size_t length)
{
    cdt__ucx_limits none = {.max_frame_bytes = -1, .max_regions = -1};
    cdt__ucx_head h;
    if (cdt__ucx_parse_ring_head(head, length, &none, &h) != CDT_SUCCESS ||
        key_in_use(r, h.key) != NULL)
        return;
    r->key = h.key;
    r->sender = h.sender;
    r->info.sender = h.sender;
    r->threshold = h.threshold;
    r->commit = h.commit;
    cdt__ucx_post_sweep(r->w, h.key, cdt__ucx_drain_deadline(r));
    if (h.lane)
        cdt__ucx_lane_discard(r->w, &h);
}

/* lock held: a split-mode head that arrived after its receive was abandoned and completed
 * (its bytes were kept in r->head, or parked: `whole`): discard the tail, the regions and the
 * commit, so that the sender completes. */
static void drain_abandoned_head(cdt_ucx_request r, const unsigned char *head, size_t length,
                                 bool whole)
{
    cdt__ucx_limits none = {.max_frame_bytes = -1, .max_regions = -1};
    cdt__ucx_head h;
    if (!whole || cdt__ucx_parse_ring_head(head, length, &none, &h) != CDT_SUCCESS ||
        key_in_use(r, h.key) != NULL)
        return;
    r->key = h.key;
    r->sender = h.sender;
    r->info.sender = h.sender;
    r->threshold = h.threshold;
    r->commit = h.commit;
    cdt__ucx_post_sweep(r->w, h.key, cdt__ucx_drain_deadline(r)); /* none of its parts taken */
    if (h.lane)
        cdt__ucx_lane_discard(r->w, &h);
}

/* lock held: the usual small object in split mode, a frame without regions that is the whole
 * head message after its prefix, into the caller's buffer: validated and decoded in one call
 * (cdt_frame_decode, no decoder). false: not such a message; body_ready takes it. */
static bool decode_plain(cdt_ucx_request r, const unsigned char *S, cdt_count slen)
{
    if (r->prepare != NULL || r->abandon != CDT_SUCCESS || slen < CDT_FRAME_FIXED_HEADER_SIZE ||
        cdt__get_u64(S + CDT__OFF_REGION_COUNT) != 0)
        return false;
    int rc = cdt_frame_decode(S, slen, r->buf, r->count, r->type);
    if (rc != CDT_SUCCESS) {
        cdt__ucx_recv_fail(r, rc); /* no regions: nothing was sent on its own */
        return true;
    }
    r->info.frame_size = slen; /* the decode checked that the frame is exactly S */
    r->info.packed_size = (cdt_count)cdt__get_u64(S + CDT__OFF_PACKED_SIZE);
    r->info.region_count = 0;
    r->info.region_bytes = 0;
    return true;
}

/* lock held: a split-mode head message arrived: in r->head, or parked (a ring head, read
 * until head_cb releases it) */
static void head_arrived(cdt_ucx_request r, const unsigned char *head, size_t length)
{
    cdt__ucx_recv_matched(r);
    cdt__ucx_head h;
    /* a parked ring head may be a large record (docs/TRANSPORT.md §10.6, Large records) */
    int rc = head == r->head ? cdt__ucx_parse_head(head, length, &r->limits, &h)
                             : cdt__ucx_parse_ring_head(head, length, &r->limits, &h);
    if (rc != CDT_SUCCESS) {
        if (rc == CDT_ERR_LIMIT)
            drain_refused(r, head, length);
        cdt__ucx_recv_fail(r, rc);
        return;
    }
    if (h.lane && head != r->head) {
        /* a LANE head's receive reads its header again later, from r->head (ucx_lane_recv.c) */
        memcpy(r->head, head, length);
        h.part = r->head + (h.part - head);
    }
    r->key = h.key;
    r->sender = h.sender;
    r->info.sender = h.sender;
    r->threshold = h.threshold;
    r->commit = h.commit;
    cdt_ucx_request other = key_in_use(r, h.key);
    r->has_key = true;
    if (other != NULL) {
        cdt__ucx_recv_fail(other, CDT_ERR_FRAME_MALFORMED);
        r->abandon = CDT_ERR_FRAME_MALFORMED; /* its parts are drained */
    }
    if (r->commit) {
        /* the object is whole only when its commit comes (the sender's memory may be copied
         * after its send ended: docs/TRANSPORT.md §4, Commit). Posted first: every failure
         * from here cancels it (its message is then drained) like the other parts. */
        r->commit_sub.len = CDT__UCX_COMMIT_SIZE;
        rc = post(r, &r->commit_sub, r->trailer, CDT__UCX_COMMIT_SIZE,
                  cdt__ucx_private_tag(r->key, CDT__UCX_COMMIT_INDEX));
        if (rc != CDT_SUCCESS) {
            if (h.tail_len > 0)
                cdt__ucx_post_drain(r->w, cdt__ucx_private_tag(r->key, CDT__UCX_TAIL_INDEX),
                                    cdt__ucx_drain_deadline(r));
            drain_regions(r, h.part, h.part_len, 0);
            if (h.lane)
                cdt__ucx_lane_discard(r->w, &h);
            cdt__ucx_recv_fail(r, rc);
            return;
        }
    }
    if (h.lane) { /* the rest of the inline stream comes through the sender's lane */
        cdt__ucx_lane_head(r, &h);
        return;
    }
    if (h.tail_len == 0) {
        if (!decode_plain(r, h.part, h.part_len))
            body_ready(r, h.part, h.part_len);
        return;
    }
    /* the limits on the frame were checked: the inline stream fits them */
    r->stream_len = h.stream_len;
    r->stream = cdt__ucx_buf_get(r->w, (size_t)r->stream_len);
    rc = r->stream == NULL ? CDT_ERR_NO_MEMORY : CDT_SUCCESS;
    if (rc == CDT_SUCCESS) {
        memcpy(r->stream, h.part, (size_t)h.part_len);
        r->tail_sub.index = -1;
        r->tail_sub.len = h.tail_len;
        rc = post(r, &r->tail_sub, r->stream + h.part_len, (size_t)h.tail_len,
                  cdt__ucx_private_tag(r->key, CDT__UCX_TAIL_INDEX));
    }
    if (rc != CDT_SUCCESS) {
        /* the tail and the regions are not taken: discard them so that the sender completes
         * (the regions only when the whole header came in the head message) */
        cdt__ucx_post_drain(r->w, cdt__ucx_private_tag(r->key, CDT__UCX_TAIL_INDEX),
                            cdt__ucx_drain_deadline(r));
        drain_regions(r, h.part, h.part_len, 0);
        cdt__ucx_recv_fail(r, rc);
    }
}

static void head_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                    void *user_data)
{
    cdt__ucx_sub *s = user_data;
    cdt_ucx_request r = s->req;
    ucp_tag_recv_info_t got = {0};
    if (st == UCS_OK)
        got = *info; /* info lives in the UCX request */
    ucp_request_free(ucx_req);
    s->ucx = NULL;
    s->fired = true;
    /* a ring head's descriptor (docs/TRANSPORT.md §10.6, Hand-off): the head is the parked
     * copy it names, taken by this receive alone and released below */
    const unsigned char *head = r->head;
    size_t head_len = got.length;
    uint32_t slot = 0;
    bool parked = st == UCS_OK && !r->single && r->pre_fill == got.length &&
                  cdt__ucx_park_claim(r->w, r->head, got.length, &head, &head_len, &slot);
    if (r->done) {
        /* a receive that completed before its message did (abandoned, or a failed single-mode
         * message): UCX has let go of it now. A split-mode head's parts are drained. */
        if (st == UCS_OK && r->abandon != CDT_SUCCESS)
            drain_abandoned_head(r, head, head_len, parked || r->pre_fill == got.length);
        if (parked)
            cdt__ucx_park_release(r->w, slot);
        if (r->orphaned)
            cdt__ucx_orphan_release(r);
        return;
    }
    if (st == UCS_OK) {
        r->info.tag = got.sender_tag;
        r->tag_known = true;
        if (parked && head_len >= CDT__UCX_PREFIX_SIZE &&
            cdt__ucx_prefix_mode(head) == CDT__UCX_MODE_SINGLE) {
            /* a single-mode message in the ring (a send that chose its mode before the
             * switch): the whole object, through the single-mode path from the parked copy */
            r->pre_fill = 0; /* what the descriptor's bytes left there */
            cdt__ucx_single_unpack(r, 0, head, head_len);
            got.length = head_len;
        }
        if (!cdt__ucx_single_complete(r, got.length))
            head_arrived(r, head, head_len);
        if (parked)
            cdt__ucx_park_release(r->w, slot);
    } else {
        /* a head receive this library did not cancel (no abandon, worker alive) was aborted by
         * UCX: a rendezvous head whose sender's endpoint failed (seen over shared memory) */
        int rc = cdt__ucx_status(st);
        if (st == UCS_ERR_CANCELED && r->abandon == CDT_SUCCESS && !r->w->destroying)
            rc = CDT_ERR_PEER;
        cdt__ucx_request_set_error(r, rc);
    }
    if (--r->outstanding == 0)
        cdt__ucx_recv_done(r);
}

int cdt_ucx_irecv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                  cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params, cdt_ucx_request *request)
{
    uint64_t fm = params != NULL ? params->field_mask : 0;
    if (fm & ~(uint64_t)(CDT_UCX_RECV_PARAM_PREPARE | CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES |
                         CDT_UCX_RECV_PARAM_MAX_REGIONS | CDT_UCX_RECV_PARAM_REST_TIMEOUT))
        return CDT_ERR_INVALID_ARG; /* a field of a later library: not this one's */
    bool prepare = (fm & CDT_UCX_RECV_PARAM_PREPARE) && params->prepare != NULL;
    if (worker == NULL || request == NULL || tag > CDT_UCX_TAG_MAX ||
        (!prepare && (type == NULL || count < 0)))
        return CDT_ERR_INVALID_ARG;
    if (!prepare && !(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED; /* now, not when the object arrives */
    if (((fm & CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES) && params->max_frame_bytes < 0) ||
        ((fm & CDT_UCX_RECV_PARAM_MAX_REGIONS) && params->max_regions < 0))
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_request r = cdt__ucx_request_new(worker, false);
    if (r == NULL)
        return CDT_ERR_NO_MEMORY;
    r->buf = buf;
    r->count = count;
    r->limits.max_frame_bytes = -1;
    r->limits.max_regions = -1;
    r->rest_timeout_ms = CDT__UCX_DEFAULT_REST_TIMEOUT_MS;
    if (fm & CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES)
        r->limits.max_frame_bytes = params->max_frame_bytes;
    if (fm & CDT_UCX_RECV_PARAM_MAX_REGIONS)
        r->limits.max_regions = params->max_regions;
    if (fm & CDT_UCX_RECV_PARAM_REST_TIMEOUT)
        r->rest_timeout_ms = params->rest_timeout_ms < 0 ? -1 : params->rest_timeout_ms;
    if (prepare) {
        r->prepare = params->prepare;
        r->prepare_arg = params->prepare_arg;
    } else {
        r->type = type;
        cdt__type_retain(type); /* the caller may free its handle while the receive is posted */
    }
    /* user tags never have the private bit; the mask always checks it */
    uint64_t mask = (tag_mask & CDT_UCX_TAG_MAX) | CDT__UCX_PRIVATE_BIT;
    pthread_mutex_lock(&worker->lock);
    r->outstanding = 1; /* held while posting: the message may complete inside the call */
    /* the head is received through the receive datatype (ucx_single.c): a split-mode head
     * lands in r->head, a single-mode message goes on into the decoder */
    r->pre = r->head;
    r->pre_cap = CDT__UCX_HEAD_MAX;
    int rc = post_recv(r, &r->head_sub, r, 1, worker->dt_recv, tag & mask, mask, head_cb);
    if (rc == CDT_SUCCESS && --r->outstanding == 0)
        cdt__ucx_recv_done(r);
    /* completed inside the call, UCX done with it: cdt_ucx_request_free takes no lock */
    r->settled = r->done && r->head_sub.ucx == NULL;
    pthread_mutex_unlock(&worker->lock);
    if (rc != CDT_SUCCESS) {
        if (!r->done)
            cdt__type_release(r->type);
        cdt__ucx_request_release(r);
        return rc;
    }
    *request = r;
    return CDT_SUCCESS;
}

/* ---- for the lane's receives (ucx_lane_recv.c) ---- */

int cdt__ucx_recv_open_decoder(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                               cdt_frame_info *in)
{
    return open_decoder(r, S, slen, in);
}

void cdt__ucx_recv_post_regions(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                                const cdt_frame_info *in)
{
    post_regions(r, S, slen, in);
}

void cdt__ucx_recv_drain_regions(cdt_ucx_request r, const unsigned char *S, cdt_count slen,
                                 cdt_count from)
{
    drain_regions(r, S, slen, from);
}
