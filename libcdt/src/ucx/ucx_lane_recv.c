/*
 * ucx_lane_recv.c - an object whose inline stream comes through its sender's lane
 * (docs/TRANSPORT.md §10.3-10.4): the LANE head is matched through UCX as any head, its limits
 * and the frame's header checked, the destination bound; then a grant {key, length} asks the
 * sender for the stream, and each fragment is unpacked straight out of the segment (out of a
 * private copy of it for a custom type) while the sender packs the next. Every length and place
 * comes from the matched head and this side's own sums, never from the segment. A receive that
 * fails keeps its place on the lane: its bytes are released unread, so the next object's hold.
 * A header that no head message holds (HEADER) comes through the lane ahead of the stream: its
 * bytes are copied into private memory as they arrive and the decoder is made from that copy
 * once it is whole (§10.3, Headers through the lane).
 */
#include "core/core.h"
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(((struct cdt_ucx_request_s *)0)->trailer) == CDT__LANE_WORD_SIZE &&
                   CDT__UCX_COMMIT_SIZE == CDT__LANE_WORD_SIZE,
               "the commit word is a commit message, copied into the receive's trailer");

/* the endpoint whose consumer lane has this id (the first 8 bytes of its nonce) */
static struct cdt_ucx_ep_s *lane_ep(cdt_ucx_worker w, uint64_t lane_id)
{
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next)
        if (ep->status == CDT_SUCCESS && ep->lane != NULL && ep->lane->rx_attached &&
            cdt__get_u64(ep->lane->rx.nonce) == lane_id)
            return ep;
    return NULL;
}

/* a place for an object's stream on the lane, after every place before it (grants are posted
 * in this order: cdt__ucx_lane_pump_recv) */
static cdt__ucx_lane_in *enqueue(cdt__ucx_lane_ep *l, uint64_t key, uint64_t len)
{
    cdt__ucx_lane_in *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        /* the stream could not be consumed: every later object's place would be wrong */
        l->rx.error = CDT_ERR_PEER;
        return NULL;
    }
    e->key = key;
    e->len = len;
    if (l->in_tail != NULL)
        l->in_tail->next = e;
    else
        l->in_head = e;
    l->in_tail = e;
    return e;
}

/* a LANE head whose lane is not (or no longer) mapped here: CDT_ERR_PEER when no live endpoint
 * has its sender for peer (the sender's endpoint failed or was closed, and its lane with it:
 * a peer that died in its send), else CDT_ERR_FRAME_MALFORMED (a live peer that names a lane
 * it never offered on that endpoint) */
static int lane_missing(cdt_ucx_worker w, uint64_t sender)
{
    for (struct cdt_ucx_ep_s *ep = w->eps; ep != NULL; ep = ep->next)
        if (ep->status == CDT_SUCCESS && ep->peer_id == sender)
            return CDT_ERR_FRAME_MALFORMED;
    return CDT_ERR_PEER;
}

/* whether the head's object carries its commit as a word after its stream in the data ring
 * (§10.3, Commit in the ring): a head without COMMIT, on a lane whose consumer (this side)
 * announced it takes one. A consumer that did not reads no word, as an earlier release. */
static bool head_word(const cdt__ucx_lane_ep *l, const cdt__ucx_head *h)
{
    return !h->commit && (l->rx.own_features & CDT__LANE_FEATURE_RING_COMMIT) != 0;
}

/* the lane bytes of the head's object: its stream, and its commit word where it has one */
static uint64_t head_lane_bytes(const cdt__ucx_lane_ep *l, const cdt__ucx_head *h)
{
    return (uint64_t)(h->stream_len - h->part_len) + (head_word(l, h) ? CDT__UCX_COMMIT_SIZE : 0);
}

/* the lane bytes of r's stream alone (its place's length, less the commit word) */
static uint64_t stream_bytes(cdt_ucx_request r)
{
    return r->lane_in->len - (r->lane_word ? CDT__UCX_COMMIT_SIZE : 0);
}

void cdt__ucx_lane_discard(cdt_ucx_worker w, const cdt__ucx_head *h)
{
    struct cdt_ucx_ep_s *ep = lane_ep(w, h->lane_id);
    if (ep == NULL || ep->peer_id != h->sender)
        return;
    cdt__ucx_lane_in *e = enqueue(ep->lane, h->key, head_lane_bytes(ep->lane, h));
    if (e != NULL && h->split) { /* its record goes with address 0: the sender pushes nothing */
        e->split = true;
        e->split_ready = true;
    }
}

void cdt__ucx_lane_detach(cdt_ucx_request r)
{
    cdt__ucx_lane_in *e = r->lane_in;
    r->lane_in = NULL;
    e->r = NULL;
    if (e->split) {
        /* no region message to discard; held while the sender may write into its memory */
        if (!cdt__ucx_lane_split_detach(e, r))
            r->outstanding--;
        return;
    }
    r->outstanding--; /* the caller (cdt__ucx_recv_fail) holds the request meanwhile */
    if (!r->lane_regions && r->lane_header > 0) {
        /* failed before its large regions were posted: their messages are discarded, so that
         * the sender completes */
        r->lane_regions = true;
        cdt__ucx_recv_drain_regions(r, r->head + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE,
                                    r->lane_header, 0);
    }
}

/* the bound decoder's regions: the bytes of those below the threshold (which the lane carries)
 * and the number of those sent on their own. The header's parse keeps the table's shape: when
 * its longest region is below the threshold, no region needs a look of its own. */
static int lane_region_split(cdt_ucx_request r, cdt_count region_count, cdt_count *inline_bytes,
                             cdt_count *separate)
{
    cdt__region_shape shape = {0};
    cdt__decoder_region_shape(r->dec, &shape);
    *inline_bytes = 0;
    *separate = 0;
    if (shape.longest < r->threshold) {
        *inline_bytes = shape.bytes;
        return CDT_SUCCESS;
    }
    for (cdt_count i = 0; i < region_count; i++) {
        cdt_count len;
        int rc = cdt_decoder_region_info(r->dec, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS)
            return rc;
        if (cdt__ucx_separate(len, r->threshold, i))
            (*separate)++;
        else
            *inline_bytes += len;
    }
    return CDT_SUCCESS;
}

/* the frame's header (r->lane_hdr, private, whole) and the destination: the checks of a LANE
 * head whose header came in the head (cdt__ucx_lane_head), with none of the regions large (a
 * sender puts only such objects' headers in the lane). CDT_SUCCESS or the receive's error. */
static int header_ready(cdt_ucx_request r, uint64_t lane_len)
{
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt__ucx_recv_open_decoder(r, r->lane_hdr, r->lane_hdr_got, &in);
    free(r->lane_hdr); /* the decoder keeps its own copy */
    r->lane_hdr = NULL;
    if (rc == CDT_SUCCESS && in.header_size != r->lane_header)
        rc = CDT_ERR_FRAME_MALFORMED;
    if (rc == CDT_SUCCESS)
        rc = r->prepare != NULL ? r->prepare(r->prepare_arg, r->dec)
                                : cdt_decoder_bind(r->dec, r->buf, r->count, r->type);
    cdt_count inline_bytes = 0, nsep = 0;
    if (rc == CDT_SUCCESS)
        rc = lane_region_split(r, in.region_count, &inline_bytes, &nsep);
    if (rc == CDT_SUCCESS && nsep > 0)
        rc = CDT_ERR_FRAME_MALFORMED; /* no message of its own was announced */
    /* the lane carries the rest of the header, the packed stream and the regions, nothing else */
    if (rc == CDT_SUCCESS && (uint64_t)(in.header_size - r->lane_base) + (uint64_t)in.packed_size +
                                     (uint64_t)inline_bytes !=
                                 lane_len)
        rc = CDT_ERR_FRAME_MALFORMED;
    r->lane_packed = in.packed_size;
    cdt__ucx_lane_cursor_init(r, r->lane_header, in.packed_size);
    return rc;
}

/* header bytes [r->lane_hdr_got, +n) out of the ring, into the private copy, grown as they come
 * (at most the header's size, which the limits bounded): a peer that announces a large table
 * and sends none of it costs what it sent */
static int header_bytes(cdt_ucx_request r, const unsigned char *src, size_t n, uint64_t lane_len)
{
    cdt_count need = r->lane_hdr_got + (cdt_count)n;
    if (need > r->lane_hdr_cap) {
        cdt_count cap = r->lane_hdr_cap * 2 > need ? r->lane_hdr_cap * 2 : need;
        if (cap > r->lane_header)
            cap = r->lane_header;
        unsigned char *p = realloc(r->lane_hdr, (size_t)cap);
        if (p == NULL)
            return CDT_ERR_NO_MEMORY;
        r->lane_hdr = p;
        r->lane_hdr_cap = cap;
    }
    memcpy(r->lane_hdr + r->lane_hdr_got, src, n);
    r->lane_hdr_got = need;
    return r->lane_hdr_got == r->lane_header ? header_ready(r, lane_len) : CDT_SUCCESS;
}

/* a LANE head whose header continues in the lane (HEADER): the head's fixed header was checked
 * and the limits applied to it (parse); the rest comes with the stream */
static void header_head(cdt_ucx_request r, cdt__ucx_lane_ep *l, const cdt__ucx_head *h)
{
    r->lane_base = h->part_len;
    r->lane_header = h->header_size;
    r->lane_regions = true; /* none is large */
    /* the packed stream's size is known once the header is in (header_ready) */
    cdt__ucx_lane_cursor_init(r, h->header_size, 0);
    r->lane_hdr_cap = h->part_len * 64 < h->header_size ? h->part_len * 64 : h->header_size;
    r->lane_hdr = malloc((size_t)r->lane_hdr_cap);
    if (r->lane_hdr == NULL) {
        cdt__ucx_recv_fail(r, CDT_ERR_NO_MEMORY); /* its stream is released unread */
        return;
    }
    memcpy(r->lane_hdr, h->part, (size_t)h->part_len);
    r->lane_hdr_got = h->part_len;
    cdt__ucx_lane_pump_recv(l); /* the grant goes now; a broken lane shows in progress */
}

void cdt__ucx_lane_head(cdt_ucx_request r, const cdt__ucx_head *h)
{
    struct cdt_ucx_ep_s *ep = lane_ep(r->w, h->lane_id);
    /* the lane belongs to the endpoint its offer came through: a head that names another
     * endpoint's lane is not that sender's */
    if (ep == NULL || ep->peer_id != h->sender) {
        if (!h->split) /* a SPLIT object sends no region message */
            cdt__ucx_recv_drain_regions(r, h->part, h->part_len, 0);
        int rc = lane_missing(r->w, h->sender);
        if (rc == CDT_ERR_PEER) /* the sender's endpoint here failed or was closed */
            cdt__ucx_recv_failed_by(r, CDT_UCX_RECV_FAILURE_ENDPOINT, h->sender);
        cdt__ucx_recv_fail(r, rc);
        return;
    }
    const uint64_t lane_len = (uint64_t)(h->stream_len - h->part_len);
    cdt__ucx_lane_in *e = enqueue(ep->lane, h->key, head_lane_bytes(ep->lane, h));
    if (e == NULL) {
        if (!h->split)
            cdt__ucx_recv_drain_regions(r, h->part, h->part_len, 0);
        cdt__ucx_recv_fail(r, CDT_ERR_NO_MEMORY);
        return;
    }
    e->split = h->split; /* until its record is ready, later grants wait (pump_recv) */
    e->r = r;
    r->lane_in = e;
    r->lane_word = head_word(ep->lane, h);
    r->outstanding++; /* the lane's part */
    if (h->header_in_lane) {
        header_head(r, ep->lane, h);
        return;
    }
    /* the head holds the frame's header exactly; the limits were applied to it (parse) */
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt__ucx_recv_open_decoder(r, h->part, h->part_len, &in);
    if (rc == CDT_SUCCESS && in.header_size != h->part_len)
        rc = CDT_ERR_FRAME_MALFORMED;
    if (rc == CDT_SUCCESS)
        rc = r->prepare != NULL ? r->prepare(r->prepare_arg, r->dec)
                                : cdt_decoder_bind(r->dec, r->buf, r->count, r->type);
    cdt_count inline_bytes = 0, nsep = 0;
    if (rc == CDT_SUCCESS)
        rc = lane_region_split(r, in.region_count, &inline_bytes, &nsep);
    /* what the lane carries is the packed stream and the small regions, nothing else */
    if (rc == CDT_SUCCESS && (uint64_t)in.packed_size + (uint64_t)inline_bytes != lane_len)
        rc = CDT_ERR_FRAME_MALFORMED;
    /* a large region completes over UCX: its object ends with a commit message, never a word;
     * a SPLIT object's are copied by both processes and it always ends with a word */
    if (h->split) {
        if (rc == CDT_SUCCESS)
            rc = cdt__ucx_lane_split_head(ep->lane, e, h, nsep);
        if (rc == CDT_SUCCESS && !r->lane_word)
            rc = CDT_ERR_FRAME_MALFORMED;
    } else if (rc == CDT_SUCCESS && nsep > 0 && r->lane_word) {
        rc = CDT_ERR_FRAME_MALFORMED;
    }
    if (rc == CDT_SUCCESS && nsep > 0 && !h->split) {
        r->subs = calloc((size_t)nsep, sizeof(*r->subs));
        if (r->subs == NULL)
            rc = CDT_ERR_NO_MEMORY;
    }
    if (rc != CDT_SUCCESS) {
        if (!h->split)
            cdt__ucx_recv_drain_regions(r, h->part, h->part_len, 0);
        cdt__ucx_recv_fail(r, rc); /* its stream is released unread (a record of address 0) */
        return;
    }
    r->lane_header = in.header_size;
    r->lane_base = in.header_size;
    r->lane_hdr_got = in.header_size;
    r->lane_packed = in.packed_size;
    cdt__ucx_lane_cursor_init(r, in.header_size, in.packed_size);
    r->lane_regions = nsep == 0;
    cdt__ucx_lane_pump_recv(ep->lane); /* the grant goes now; a broken lane shows in progress */
}

/* the lane's unpack callback: lane bytes from `offset` on are inline-stream bytes from
 * r->lane_base on: the rest of the header (copied aside until it is whole), then bytes written
 * into the decoder at their frame offsets */
static int unpack(void *state, uint64_t offset, const unsigned char *src, size_t n)
{
    cdt_ucx_request r = state;
    /* the commit word's bytes (after the stream: §10.3, Commit in the ring), each copied once
     * into private memory, judged once whole (cdt__ucx_lane_pump_recv) */
    if (r->lane_word && (n = cdt__lane_word_take(r->trailer, stream_bytes(r), offset, src, n)) == 0)
        return CDT_SUCCESS;
    cdt_count s = r->lane_base + (cdt_count)offset;
    if (s < r->lane_header) {
        size_t k = (uint64_t)(r->lane_header - s) < n ? (size_t)(r->lane_header - s) : n;
        if (s != r->lane_hdr_got)
            return CDT_ERR_FRAME_MALFORMED; /* bytes come in order, each once */
        int rc = header_bytes(r, src, k, stream_bytes(r));
        if (rc != CDT_SUCCESS)
            return rc;
        src += k;
        offset += k;
        n -= k;
    }
    while (n > 0) {
        cdt_count foff, avail;
        int rc =
            cdt__ucx_lane_seek(r, NULL, r->dec, r->lane_base + (cdt_count)offset, &foff, &avail);
        if (rc != CDT_SUCCESS)
            return rc;
        size_t k = (uint64_t)avail < n ? (size_t)avail : n;
        rc = cdt_decoder_write(r->dec, foff, src, (cdt_count)k);
        if (rc != CDT_SUCCESS)
            return rc;
        src += k;
        offset += k;
        n -= k;
    }
    return CDT_SUCCESS;
}

/* The large regions' receives are posted once the packed stream is in: a custom type says where
 * its regions go only then (its region callback reads what it unpacked), as in version 6, where
 * the whole inline stream is written before the regions are posted. Their senders' messages
 * wait in UCX meanwhile. The header is the head's part, still in r->head. */
static void post_regions(cdt__ucx_lane_ep *l, cdt_ucx_request r, cdt__ucx_lane_in *e)
{
    if (r->lane_regions || e->off < (uint64_t)(r->lane_header - r->lane_base + r->lane_packed))
        return;
    r->lane_regions = true;
    if (e->split) { /* their destinations to the sender, then this side's share (§10.3) */
        cdt__ucx_lane_split_dest(e);
        if (cdt__ucx_lane_split_record(l, e) < 0)
            l->rx.error = l->rx.error != CDT_SUCCESS ? l->rx.error : CDT_ERR_PEER;
        return;
    }
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    const unsigned char *S = r->head + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE;
    int rc = cdt_decoder_info(r->dec, &in);
    if (rc != CDT_SUCCESS) {
        cdt__ucx_recv_drain_regions(r, S, r->lane_header, 0);
        cdt__ucx_recv_fail(r, rc);
        return;
    }
    cdt__ucx_recv_post_regions(r, S, r->lane_header, &in); /* fails r itself */
}

/* a custom type's callbacks read a private copy of each fragment of the packed stream: bytes
 * they checked cannot change under them (§10.4). The type the decoder is bound to decides,
 * also where a prepare callback bound it: one whose unpack callback reads each byte once
 * (CDT_CUSTOM_FLAG_UNPACK_READS_ONCE), or a predefined or derived type, reads the segment
 * itself, as the engine does for the small regions after the stream (a region's type is a
 * layout: each byte read once). A decoder not bound yet gets the copy. */
static bool needs_copy(cdt_ucx_request r)
{
    return !cdt__decoder_reads_once(r->dec);
}

/* the object's published bytes, unpacked: the packed stream through the bounce buffer where
 * it needs one, the rest straight out of the ring (cdt__lane_pump_in's results) */
static int pump_object(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e)
{
    cdt_ucx_request r = e->r;
    if (r == NULL)
        return cdt__lane_pump_in(&l->rx, NULL, NULL, &e->off, e->len, NULL);
    /* a header that continues in the lane: copied into private memory by unpack (no bounce) */
    const uint64_t header_end = (uint64_t)(r->lane_header - r->lane_base);
    if (e->off < header_end) {
        int rc = cdt__lane_pump_in(&l->rx, unpack, r, &e->off, header_end, NULL);
        if (rc != 1 || e->off == e->len)
            return rc;
    }
    const uint64_t packed_end = header_end + (uint64_t)r->lane_packed;
    if (needs_copy(r) && e->off < packed_end) {
        int rc = cdt__lane_pump_in(&l->rx, unpack, r, &e->off, packed_end, l->bounce);
        if (rc != 1 || e->off == e->len)
            return rc;
    }
    return cdt__lane_pump_in(&l->rx, unpack, r, &e->off, e->len, NULL);
}

int cdt__ucx_lane_pump_recv(cdt__ucx_lane_ep *l)
{
    struct cdt_ucx_ep_s *ep = l->ep; /* read while l is alive */
    cdt__ucx_lane_split_poll_held(l);
    for (cdt__ucx_lane_in *e = l->in_head; e != NULL; e = e->next) {
        if (!e->granted) {
            uint64_t start;
            int rc = cdt__lane_post_grant(&l->rx, e->key, e->len, &start);
            if (rc == CDT_ERR_BUSY)
                break; /* the grant ring is full: again once the producer took some */
            if (rc != CDT_SUCCESS)
                return rc;
            e->granted = true;
        }
        /* a SPLIT object's destination record goes before any later grant: the producer takes
         * it as the next grant after the object's stream (ucx_lane_split.c) */
        int rc = cdt__ucx_lane_split_record(l, e);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
    }
    cdt__ucx_lane_in *e;
    while ((e = l->in_head) != NULL && e->granted) {
        cdt_ucx_request r = e->r;
        int rc = pump_object(l, e);
        if (rc < 0 && l->rx.error != 0)
            return l->rx.error;
        if (rc < 0) {
            cdt__ucx_recv_fail(r, rc); /* its own failure: the rest is released unread */
            continue;
        }
        if (r != NULL) {
            post_regions(l, r, e); /* the packed stream is in: the regions' places are known */
            r = e->r;              /* NULL: their posting failed the receive */
            if (l->rx.error != CDT_SUCCESS)
                return l->rx.error;
        }
        if (rc == 0)
            return 0;
        l->in_head = e->next;
        if (l->in_head == NULL)
            l->in_tail = NULL;
        const bool split = e->split;
        if (split) {
            if (r != NULL)
                r->lane_in = NULL;
            cdt__ucx_lane_split_end(e); /* staging written, a held receive let go */
        }
        free(e);
        if (r != NULL) {
            /* counted now, before the request completes: a caller that reads the stats after
             * its wait sees this object (a pump outside the worker's progress runs too) */
            ep->w->lane_received++;
            ep->w->lane_split_received += split;
            r->lane_in = NULL;
            if (r->lane_word && r->status == CDT_SUCCESS) {
                /* the sender's status, from the word's private copy: its error (a pack that
                 * failed part-way) or bytes that are no commit fail this object only, as the
                 * commit message does (ucx_recv.c) */
                int st = cdt__ucx_commit_status(r->trailer);
                if (st != CDT_SUCCESS)
                    cdt__ucx_recv_fail(r, st == CDT_ERR_FRAME_MALFORMED ? st
                                                                        : CDT_ERR_FRAME_TRUNCATED);
            }
            if (--r->outstanding == 0)
                cdt__ucx_recv_done(r);
        }
        cdt__ucx_test_end(ep, CDT__UCX_END_PUMP_RECV);
        if (ep->lane != l)
            return 0; /* the endpoint ended meanwhile: l is freed */
    }
    return 0;
}
