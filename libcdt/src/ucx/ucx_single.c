/*
 * ucx_single.c - single-mode messages (docs/TRANSPORT.md §3): the whole frame of an object as
 * one UCX tagged message of a generic datatype. The send side's pack callback copies frame
 * bytes at any offset (cdt_frame_gather); every receive is posted with the receive datatype,
 * whose unpack callback keeps the first bytes in the request's head buffer until it knows the
 * message's mode, and for a single-mode message makes the decoder as soon as the frame header
 * is complete, then hands every later piece to cdt_decoder_write. So UCX's own copies into and
 * out of shared memory are the only copies, there is no staging buffer, and an object is one
 * match, one message and no private tags.
 *
 * The callbacks run inside ucp_worker_progress (or a posting call), with the worker lock held.
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- send ---- */

static void *tx_start(void *context, const void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return (void *)buffer; /* the request */
}

static size_t tx_packed_size(void *state)
{
    cdt_ucx_request r = state;
    return r->single_len;
}

static size_t tx_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    cdt_ucx_request r = state;
    const size_t frame_end = r->single_len - CDT__UCX_TRAILER_SIZE;
    size_t n = r->single_len - offset < max_length ? r->single_len - offset : max_length;
    size_t done = 0;
    unsigned char *out = dest;
    if (offset < CDT__UCX_PREFIX_SIZE) { /* the prefix was written into the head buffer */
        done = CDT__UCX_PREFIX_SIZE - offset < n ? CDT__UCX_PREFIX_SIZE - offset : n;
        memcpy(out, r->head + offset, done);
    }
    size_t frame_stop = offset + n < frame_end ? offset + n : frame_end;
    if (offset + done < frame_stop) {
        /* packs the packed stream now (a deferred frame) */
        size_t k = frame_stop - (offset + done);
        /* an ended send never reads the object again (cdt__ucx_ep_end_sends) */
        int rc = r->detached
                     ? CDT_ERR_PEER
                     : cdt_frame_gather(r->frame, (cdt_count)(offset + done - CDT__UCX_PREFIX_SIZE),
                                        out + done, (cdt_count)k);
        if (rc != CDT_SUCCESS) {
            /* the message is already moving: fill, and let the trailer tell the receiver */
            memset(out + done, 0, k);
            cdt__ucx_request_set_error(r, rc);
        }
        done += k;
    }
    if (r->status == CDT_SUCCESS && offset <= r->tx_high && offset + done > r->tx_high)
        r->tx_high = offset + done;
    if (done < n) { /* (part of) the trailer: whether every frame byte was packed */
        unsigned char t[CDT__UCX_TRAILER_SIZE];
        int status = r->status;
        if (status == CDT_SUCCESS && r->tx_high < frame_end)
            status = CDT_ERR_ORDER; /* asked for out of order: cannot vouch for the frame */
        cdt__ucx_put_trailer(t, status);
        memcpy(out + done, t + (offset + done - frame_end), n - done);
    }
    return n;
}

static void no_finish(void *state)
{
    (void)state; /* the request's completion callback does the cleanup */
}

/* ---- receive ---- */

static void *rx_start(void *context, void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return buffer; /* the request */
}

static size_t rx_packed_size(void *state)
{
    (void)state;
    return (size_t)INT64_MAX; /* any size: the frame header says how much, checked on arrival */
}

/* lock held: the single-mode receive failed; what still arrives is dropped */
static void rx_fail(cdt_ucx_request r, int status)
{
    if (!r->single) { /* bytes that are no single-mode frame: judged at completion */
        cdt__ucx_request_set_error(r, status);
        r->discard = true;
        return;
    }
    cdt__ucx_recv_fail(r, status); /* discards the rest and completes the receive */
}

/* message bytes [offset, offset + len) after the prefix: the frame's into the decoder, the
 * trailer's into r->trailer */
static int to_decoder(cdt_ucx_request r, size_t offset, const unsigned char *src, size_t len)
{
    if (offset < CDT__UCX_PREFIX_SIZE) /* a piece overlapping the prefix again */
        return CDT_ERR_FRAME_MALFORMED;
    const size_t frame_end = CDT__UCX_PREFIX_SIZE + (size_t)r->frame_size;
    if (offset + len > frame_end) {
        size_t from = offset > frame_end ? offset : frame_end;
        if (offset + len - frame_end > CDT__UCX_TRAILER_SIZE)
            return CDT_ERR_FRAME_MALFORMED; /* longer than frame and trailer */
        for (size_t at = from; at < offset + len; at++) {
            unsigned bit = 1u << (at - frame_end);
            if (r->trailer_got & bit)
                return CDT_ERR_FRAME_MALFORMED;
            r->trailer[at - frame_end] = src[at - offset];
            r->trailer_got |= bit;
        }
        len = from - offset;
    }
    if (len == 0)
        return CDT_SUCCESS;
    return cdt_decoder_write(r->dec, (cdt_count)(offset - CDT__UCX_PREFIX_SIZE), src,
                             (cdt_count)len);
}

/* the frame header is complete in msg[0, have) (pre, or the first piece itself): make the
 * decoder, bind the destination, and write everything that came so far */
static int make_decoder(cdt_ucx_request r, const unsigned char *msg, size_t have_bytes)
{
    cdt_decoder_params dp = cdt__ucx_decoder_params(&r->limits);
    const unsigned char *frame = msg + CDT__UCX_PREFIX_SIZE;
    cdt_count have = (cdt_count)(have_bytes - CDT__UCX_PREFIX_SIZE);
    cdt_decoder dec;
    int rc = cdt_decoder_create_advanced(frame, have, &dp, &dec);
    if (rc != CDT_SUCCESS)
        return rc;
    r->dec = dec;
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    rc = cdt_decoder_info(dec, &in);
    if (rc != CDT_SUCCESS)
        return rc;
    if (r->abandon != CDT_SUCCESS) /* canceled while the head was coming: nothing is bound */
        return r->abandon;
    r->info.frame_size = in.frame_size;
    r->info.packed_size = in.packed_size;
    r->info.region_count = in.region_count;
    r->info.region_bytes = in.region_bytes;
    rc = r->prepare != NULL ? r->prepare(r->prepare_arg, dec)
                            : cdt_decoder_bind(dec, r->buf, r->count, r->type);
    if (rc == CDT_SUCCESS) /* the header again (checked against itself), and what followed */
        rc = to_decoder(r, CDT__UCX_PREFIX_SIZE, frame, (size_t)have);
    if (r->pre != NULL && r->pre != r->head)
        free(r->pre);
    r->pre = NULL;
    while (rc == CDT_SUCCESS && r->stash != NULL) {
        cdt__ucx_stash *s = r->stash;
        r->stash = s->next;
        rc = to_decoder(r, s->offset, s->data, s->len);
        free(s);
    }
    return rc;
}

/* The usual small object: the whole message in its first piece and a receive into the caller's
 * buffer. The frame is decoded in one call (cdt_frame_decode, which makes no decoder for a
 * frame without regions, or with a few regions into a custom type) and the trailer is kept for
 * the completion's checks. false: not such a message; the decoder path takes it. */
static bool decode_whole(cdt_ucx_request r, const unsigned char *msg, size_t len, int *rc)
{
    const unsigned char *frame = msg + CDT__UCX_PREFIX_SIZE;
    const size_t frame_size = (size_t)r->frame_size;
    if (len != CDT__UCX_PREFIX_SIZE + frame_size + CDT__UCX_TRAILER_SIZE || r->prepare != NULL ||
        r->abandon != CDT_SUCCESS || cdt__ucx_trailer_status(frame + frame_size) != CDT_SUCCESS)
        return false;
    memcpy(r->trailer, frame + frame_size, CDT__UCX_TRAILER_SIZE);
    r->trailer_got = (1u << CDT__UCX_TRAILER_SIZE) - 1;
    r->decoded = true;
    *rc = cdt_frame_decode(frame, r->frame_size, r->buf, r->count, r->type);
    if (*rc == CDT_SUCCESS) { /* the header is valid: what the receive reports */
        uint64_t regions = cdt__get_u64(frame + CDT__OFF_REGION_COUNT), bytes = 0;
        for (uint64_t i = 0; i < regions; i++)
            bytes += cdt__get_u64(frame + CDT_FRAME_FIXED_HEADER_SIZE +
                                  i * CDT_FRAME_REGION_ENTRY_SIZE + CDT__REG_OFF_LEN);
        r->info.frame_size = r->frame_size;
        r->info.packed_size = (cdt_count)cdt__get_u64(frame + CDT__OFF_PACKED_SIZE);
        r->info.region_count = (cdt_count)regions;
        r->info.region_bytes = (cdt_count)bytes;
    }
    return true;
}

/* pre holds [0, pre_fill): learn the mode, then the header's size, then make the decoder */
static int advance(cdt_ucx_request r)
{
    if (r->pre_fill < CDT__UCX_PREFIX_SIZE)
        return CDT_SUCCESS;
    if (!r->single) {
        if (cdt__ucx_prefix_mode(r->pre) != CDT__UCX_MODE_SINGLE)
            return CDT_SUCCESS; /* a split-mode head: judged when it completes */
        r->single = true;
    }
    if (r->pre_need == 0) {
        if (r->pre_fill < CDT__UCX_PREFIX_SIZE + CDT_FRAME_FIXED_HEADER_SIZE)
            return CDT_SUCCESS;
        cdt_count header_size, frame_size;
        int rc = cdt__ucx_check_frame_header(r->pre + CDT__UCX_PREFIX_SIZE,
                                             r->pre_fill - CDT__UCX_PREFIX_SIZE, &r->limits,
                                             &header_size, &frame_size);
        if (rc != CDT_SUCCESS)
            return rc;
        r->frame_size = frame_size;
        r->pre_need = CDT__UCX_PREFIX_SIZE + (size_t)header_size;
        if (r->pre_need > r->pre_cap) { /* a region table larger than the head buffer */
            unsigned char *grown = malloc(r->pre_need);
            if (grown == NULL)
                return CDT_ERR_NO_MEMORY;
            memcpy(grown, r->pre, r->pre_fill);
            r->pre = grown;
            r->pre_cap = r->pre_need;
        }
    }
    return r->pre_fill >= r->pre_need ? make_decoder(r, r->pre, r->pre_fill) : CDT_SUCCESS;
}

/* keep a piece that came before the bytes in front of it */
static int stash(cdt_ucx_request r, size_t offset, const unsigned char *src, size_t len)
{
    cdt__ucx_stash *s = malloc(sizeof(*s) + len);
    if (s == NULL)
        return CDT_ERR_NO_MEMORY;
    s->offset = offset;
    s->len = len;
    memcpy(s->data, src, len);
    s->next = r->stash;
    r->stash = s;
    return CDT_SUCCESS;
}

/* the stashed piece that starts at pre_fill, unlinked; NULL if none */
static cdt__ucx_stash *stash_take(cdt_ucx_request r)
{
    for (cdt__ucx_stash **p = &r->stash; *p != NULL; p = &(*p)->next)
        if ((*p)->offset == r->pre_fill) {
            cdt__ucx_stash *s = *p;
            *p = s->next;
            return s;
        }
    return NULL;
}

/* before the decoder exists: bytes in order go to pre, the rest is stashed */
static int take(cdt_ucx_request r, size_t offset, const unsigned char *src, size_t len)
{
    if (offset == 0 && r->pre_fill == 0 &&
        len >= CDT__UCX_PREFIX_SIZE + CDT_FRAME_FIXED_HEADER_SIZE &&
        cdt__ucx_prefix_mode(src) == CDT__UCX_MODE_SINGLE) {
        /* the usual case: the first piece holds the whole frame header, and the decoder is
         * made from it without a copy */
        r->single = true;
        cdt_count header_size, frame_size;
        int rc = cdt__ucx_check_frame_header(src + CDT__UCX_PREFIX_SIZE, len - CDT__UCX_PREFIX_SIZE,
                                             &r->limits, &header_size, &frame_size);
        if (rc != CDT_SUCCESS)
            return rc;
        if ((size_t)header_size <= len - CDT__UCX_PREFIX_SIZE) {
            r->frame_size = frame_size;
            r->pre_need = CDT__UCX_PREFIX_SIZE + (size_t)header_size;
            return decode_whole(r, src, len, &rc) ? rc : make_decoder(r, src, len);
        }
    }
    if (offset != r->pre_fill)
        return offset < r->pre_fill ? CDT_ERR_FRAME_MALFORMED : stash(r, offset, src, len);
    for (;;) {
        size_t room = r->pre_cap - r->pre_fill;
        size_t k = len < room ? len : room;
        memcpy(r->pre + r->pre_fill, src, k);
        r->pre_fill += k;
        src += k;
        len -= k;
        offset += k;
        int rc = advance(r);
        if (rc != CDT_SUCCESS)
            return rc;
        if (r->dec != NULL)
            return len > 0 ? to_decoder(r, offset, src, len) : CDT_SUCCESS;
        if (len > 0 && k == 0) /* longer than a head message, and not a single-mode frame */
            return CDT_ERR_FRAME_MALFORMED;
        if (len == 0) {
            cdt__ucx_stash *s = stash_take(r);
            if (s == NULL)
                return CDT_SUCCESS;
            int rc2 = take(r, s->offset, s->data, s->len);
            free(s);
            return rc2;
        }
    }
}

static ucs_status_t rx_unpack(void *state, size_t offset, const void *src, size_t length)
{
    cdt__ucx_single_unpack(state, offset, src, length);
    return UCS_OK; /* errors are the request's: UCX goes on delivering (and we drop) the rest */
}

/* a receive that was abandoned before its mode was known keeps a split-mode head's bytes (in
 * order, at most a head buffer: its own memory) so that its parts can be drained */
static void keep_head(cdt_ucx_request r, size_t offset, const unsigned char *src, size_t len)
{
    if (r->single || offset != r->pre_fill || offset >= CDT__UCX_HEAD_MAX)
        return;
    size_t k = len < CDT__UCX_HEAD_MAX - offset ? len : CDT__UCX_HEAD_MAX - offset;
    memcpy(r->head + offset, src, k);
    r->pre_fill += k;
    if (r->pre_fill >= CDT__UCX_PREFIX_SIZE &&
        cdt__ucx_prefix_mode(r->head) == CDT__UCX_MODE_SINGLE)
        r->single = true;
}

void cdt__ucx_single_unpack(cdt_ucx_request r, size_t offset, const void *src, size_t length)
{
    if (length == 0)
        return;
    if (r->discard) {
        keep_head(r, offset, src, length);
        return;
    }
    int rc = r->decoded       ? CDT_ERR_FRAME_MALFORMED /* bytes beyond the whole message */
             : r->dec != NULL ? to_decoder(r, offset, src, length)
                              : take(r, offset, src, length);
    if (r->single && !r->matched) /* from here the rest deadline runs */
        cdt__ucx_recv_matched(r);
    if (rc != CDT_SUCCESS)
        rx_fail(r, rc);
}

bool cdt__ucx_single_complete(cdt_ucx_request r, size_t length)
{
    if (!r->single) {
        /* a split-mode head (or bytes that are no frame): parsed by the caller unless it could
         * not be kept whole in the head buffer */
        bool bad =
            r->discard || r->stash != NULL || length > CDT__UCX_HEAD_MAX || r->pre_fill != length;
        if (bad)
            cdt__ucx_request_set_error(r, CDT_ERR_FRAME_MALFORMED);
        cdt__ucx_single_clear(r);
        return bad;
    }
    const size_t whole = CDT__UCX_PREFIX_SIZE + (size_t)r->frame_size + CDT__UCX_TRAILER_SIZE;
    if (r->status == CDT_SUCCESS) {
        int rc = CDT_SUCCESS;
        if ((r->dec == NULL && !r->decoded) || length < whole ||
            r->trailer_got != (1u << CDT__UCX_TRAILER_SIZE) - 1)
            rc = CDT_ERR_FRAME_TRUNCATED;
        else if (length != whole)
            rc = CDT_ERR_FRAME_MALFORMED;
        else if (cdt__ucx_trailer_status(r->trailer) != CDT_SUCCESS)
            /* the sender could not pack all of the frame: what arrived is not the object */
            rc = cdt__ucx_trailer_status(r->trailer) == CDT_ERR_FRAME_MALFORMED
                     ? CDT_ERR_FRAME_MALFORMED
                     : CDT_ERR_FRAME_TRUNCATED;
        if (rc != CDT_SUCCESS)
            cdt__ucx_request_set_error(r, rc);
    }
    cdt__ucx_single_clear(r);
    return true;
}

int cdt__ucx_single_dt_create(cdt_ucx_worker w)
{
    static const ucp_generic_dt_ops_t tx = {
        .start_pack = tx_start,
        .packed_size = tx_packed_size,
        .pack = tx_pack,
        .finish = no_finish,
    };
    static const ucp_generic_dt_ops_t rx = {
        .start_unpack = rx_start,
        .packed_size = rx_packed_size,
        .unpack = rx_unpack,
        .finish = no_finish,
    };
    if (ucp_dt_create_generic(&tx, NULL, &w->dt_send) != UCS_OK)
        return CDT_ERR_TRANSPORT;
    if (ucp_dt_create_generic(&rx, NULL, &w->dt_recv) != UCS_OK) {
        ucp_dt_destroy(w->dt_send);
        return CDT_ERR_TRANSPORT;
    }
    return CDT_SUCCESS;
}

void cdt__ucx_single_dt_destroy(cdt_ucx_worker w)
{
    ucp_dt_destroy(w->dt_recv);
    ucp_dt_destroy(w->dt_send);
}
