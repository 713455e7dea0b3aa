/*
 * ucx_recv.c - receive one object: match its head message (the only match the application
 * sees), validate prefix and frame header, bind the destination, unpack the inline stream,
 * then post each large region's message straight into its destination memory.
 */
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

static unsigned char discard_byte[8]; /* drained messages land here, truncated */

static void body_link(cdt_ucx_request r)
{
    cdt_ucx_worker w = r->w;
    r->prev = NULL;
    r->next = w->body_recvs;
    if (w->body_recvs != NULL)
        w->body_recvs->prev = r;
    w->body_recvs = r;
    r->in_body = true;
}

static void body_unlink(cdt_ucx_request r)
{
    if (!r->in_body)
        return;
    cdt_ucx_worker w = r->w;
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        w->body_recvs = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->in_body = false;
}

static void recv_done(cdt_ucx_request r)
{
    if (r->dec != NULL) {
        int rc = r->status == CDT_SUCCESS ? cdt_decoder_finish(r->dec) : CDT_SUCCESS;
        int rc2 = cdt_decoder_free(r->dec);
        r->dec = NULL;
        if (rc == CDT_SUCCESS)
            rc = rc2;
        if (rc != CDT_SUCCESS)
            cdt__ucx_request_set_error(r, rc);
    }
    for (cdt_count i = 0; i < r->nsubs; i++)
        cdt__ucx_buf_put(r->w, r->subs[i].tmp, (size_t)r->subs[i].len);
    free(r->subs);
    r->subs = NULL;
    r->nsubs = 0;
    cdt__ucx_buf_put(r->w, r->stream, (size_t)r->stream_len);
    r->stream = NULL;
    body_unlink(r);
    r->done = true;
}

/* lock held: stop waiting for the rest of the message */
static void cancel_subs(cdt_ucx_request r)
{
    if (r->tail_sub.ucx != NULL)
        ucp_request_cancel(r->w->ucp, r->tail_sub.ucx);
    for (cdt_count i = 0; i < r->nsubs; i++)
        if (r->subs[i].ucx != NULL)
            ucp_request_cancel(r->w->ucp, r->subs[i].ucx);
}

static void fail(cdt_ucx_request r, int status)
{
    cdt__ucx_request_set_error(r, status);
    cancel_subs(r);
}

void cdt__ucx_fail_body_recvs(cdt_ucx_worker w, int status)
{
    for (cdt_ucx_request r = w->body_recvs; r != NULL; r = r->next)
        fail(r, status);
}

static void sub_cb(void *ucx_req, ucs_status_t st, const ucp_tag_recv_info_t *info,
                   void *user_data);

/* lock held. The callback may run inside ucp_tag_recv_nbx (UCP_OP_ATTR_FLAG_NO_IMM_CMPL on an
 * unexpected eager message), so the count is taken first and the handle kept only if the
 * callback has not run yet. */
static int post_recv(cdt_ucx_request r, cdt__ucx_sub *s, void *dst, size_t len, uint64_t tag,
                     uint64_t mask, ucp_tag_recv_nbx_callback_t cb)
{
    s->req = r;
    s->fired = false;
    s->ucx = NULL;
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = cb,
        .user_data = s,
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
    return post_recv(r, s, dst, len, tag, UINT64_MAX, sub_cb);
}

/* The sender sent these regions on their own; we will not receive them into the object (the
 * receive failed). Post truncating receives so the sender's operations complete. */
static void drain_regions(cdt_ucx_request r, cdt_count from)
{
    cdt_frame_info in;
    if (r->dec == NULL || cdt_decoder_info(r->dec, &in) != CDT_SUCCESS)
        return;
    for (cdt_count i = from; i < in.region_count; i++) {
        cdt_count len;
        if (cdt_decoder_region_info(r->dec, i, &len, NULL, NULL) != CDT_SUCCESS ||
            !cdt__ucx_separate(len, r->threshold, i))
            continue;
        ucp_request_param_t p = {.op_attr_mask = 0};
        void *q = ucp_tag_recv_nbx(r->w->ucp, discard_byte, 0,
                                   cdt__ucx_private_tag(r->key, (uint64_t)i), UINT64_MAX, &p);
        if (q != NULL && !UCS_PTR_IS_ERR(q))
            ucp_request_free(q); /* completes on its own */
    }
}

/* lock held: the inline stream S (header, packed stream, small regions) is complete */
static void body_ready(cdt_ucx_request r, const unsigned char *S, cdt_count slen)
{
    int rc = cdt_decoder_create(S, slen, &r->dec);
    cdt_frame_info in;
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_info(r->dec, &in);
    if (rc != CDT_SUCCESS) {
        fail(r, rc);
        return;
    }
    r->info.frame_size = in.frame_size;
    r->info.packed_size = in.packed_size;
    r->info.region_count = in.region_count;
    r->info.region_bytes = in.region_bytes;
    rc = r->prepare != NULL ? r->prepare(r->prepare_arg, r->dec)
                            : cdt_decoder_bind(r->dec, r->buf, r->count, r->type);
    cdt_count pos = in.header_size + in.packed_size;
    if (rc == CDT_SUCCESS && pos > slen)
        rc = CDT_ERR_FRAME_MALFORMED;
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_write(r->dec, in.header_size, S + in.header_size, in.packed_size);
    cdt_count nsep = 0;
    /* small regions follow each other in the inline stream; those that also follow each other
     * in the frame (no padding between them) are written with one call */
    cdt_count run_off = 0, run_len = 0, run_pos = pos;
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < in.region_count; i++) {
        cdt_count len, off;
        rc = cdt_decoder_region_info(r->dec, i, &len, NULL, &off);
        if (rc != CDT_SUCCESS)
            break;
        if (cdt__ucx_separate(len, r->threshold, i)) {
            nsep++;
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
    if (rc == CDT_SUCCESS && nsep > 0) {
        r->subs = calloc((size_t)nsep, sizeof(*r->subs));
        if (r->subs == NULL)
            rc = CDT_ERR_NO_MEMORY;
    }
    if (rc != CDT_SUCCESS) {
        drain_regions(r, 0);
        fail(r, rc);
        return;
    }
    /* large regions: straight into the destination when it is one piece */
    for (cdt_count i = 0; i < in.region_count; i++) {
        cdt_count len, npieces;
        rc = cdt_decoder_region_info(r->dec, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS || !cdt__ucx_separate(len, r->threshold, i))
            continue;
        cdt__ucx_sub *s = &r->subs[r->nsubs++];
        s->index = i;
        s->len = len;
        void *dst = NULL;
        rc = cdt_decoder_region_iov_count(r->dec, i, &npieces);
        if (rc == CDT_SUCCESS && npieces == 1) {
            cdt_iov iov;
            cdt_count got;
            rc = cdt_decoder_region_iov(r->dec, i, 0, 1, &iov, &got);
            if (rc == CDT_SUCCESS && (got != 1 || iov.len != len))
                rc = CDT_ERR_FRAME_MISMATCH;
            dst = iov.base;
        } else if (rc == CDT_SUCCESS) {
            s->tmp = cdt__ucx_buf_get(r->w, (size_t)len);
            dst = s->tmp;
            if (dst == NULL)
                rc = CDT_ERR_NO_MEMORY;
        }
        if (rc == CDT_SUCCESS)
            rc = post(r, s, dst, (size_t)len, cdt__ucx_private_tag(r->key, (uint64_t)i));
        if (rc != CDT_SUCCESS) {
            r->nsubs--;
            cdt__ucx_buf_put(r->w, s->tmp, (size_t)s->len);
            s->tmp = NULL;
            drain_regions(r, i);
            fail(r, rc);
            return;
        }
    }
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
    if (rc == CDT_SUCCESS && (cdt_count)length != s->len)
        rc = CDT_ERR_FRAME_TRUNCATED;
    if (rc != CDT_SUCCESS) {
        if (r->status == CDT_SUCCESS)
            fail(r, rc);
    } else if (r->status == CDT_SUCCESS) {
        if (s->index < 0) { /* the tail: the inline stream is complete */
            body_ready(r, r->stream, r->stream_len);
            cdt__ucx_buf_put(r->w, r->stream, (size_t)r->stream_len);
            r->stream = NULL;
            if (--r->outstanding == 0)
                recv_done(r);
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
            fail(r, rc);
    }
    if (--r->outstanding == 0)
        recv_done(r);
}

/* lock held: the head message matched */
static void head_arrived(cdt_ucx_request r, uint64_t sender_tag, size_t length)
{
    r->matched = true;
    r->info.tag = sender_tag;
    body_link(r);
    const unsigned char *p = r->head;
    uint32_t magic =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (length < CDT__UCX_PREFIX_SIZE || magic != CDT__UCX_PREFIX_MAGIC) {
        fail(r, CDT_ERR_FRAME_MAGIC);
        return;
    }
    if (p[4] != CDT__UCX_PREFIX_VERSION || p[5] != 0 || p[6] != 0 || p[7] != 0) {
        fail(r, CDT_ERR_FRAME_VERSION);
        return;
    }
    r->key = cdt__ucx_get_le64(p + 8);
    uint64_t threshold = cdt__ucx_get_le64(p + 16);
    uint64_t tail_len = cdt__ucx_get_le64(p + 24);
    if (r->key > CDT__UCX_KEY_MASK || threshold < 1 || threshold > (uint64_t)INT64_MAX ||
        tail_len > (uint64_t)INT64_MAX) {
        fail(r, CDT_ERR_FRAME_MALFORMED);
        return;
    }
    r->threshold = (cdt_count)threshold;
    const unsigned char *S = p + CDT__UCX_PREFIX_SIZE;
    cdt_count part = (cdt_count)length - CDT__UCX_PREFIX_SIZE;
    if (tail_len == 0) {
        body_ready(r, S, part);
        return;
    }
    /* a tail follows only a full head message, and fits the frame the header announces */
    cdt_count hs;
    int rc = part == CDT__UCX_HEAD_MAX - CDT__UCX_PREFIX_SIZE ? cdt_frame_header_size(S, part, &hs)
                                                              : CDT_ERR_FRAME_MALFORMED;
    cdt_count frame_size = (cdt_count)cdt__ucx_get_le64(S + 32);
    if (rc == CDT_SUCCESS && (frame_size < 0 || (cdt_count)tail_len > frame_size - part))
        rc = CDT_ERR_FRAME_MALFORMED;
    if (rc == CDT_SUCCESS) {
        r->stream_len = part + (cdt_count)tail_len;
        r->stream = cdt__ucx_buf_get(r->w, (size_t)r->stream_len);
        rc = r->stream == NULL ? CDT_ERR_NO_MEMORY : CDT_SUCCESS;
    }
    if (rc == CDT_SUCCESS) {
        memcpy(r->stream, S, (size_t)part);
        r->tail_sub.index = -1;
        r->tail_sub.len = (cdt_count)tail_len;
        rc = post(r, &r->tail_sub, r->stream + part, (size_t)tail_len,
                  cdt__ucx_private_tag(r->key, CDT__UCX_TAIL_INDEX));
    }
    if (rc != CDT_SUCCESS)
        fail(r, rc);
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
    if (st == UCS_OK)
        head_arrived(r, got.sender_tag, got.length);
    else
        cdt__ucx_request_set_error(r, cdt__ucx_status(st));
    if (--r->outstanding == 0)
        recv_done(r);
}

int cdt_ucx_irecv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type, cdt_ucx_tag tag,
                  cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params, cdt_ucx_request *request)
{
    uint64_t fm = params != NULL ? params->field_mask : 0;
    bool prepare = (fm & CDT_UCX_RECV_PARAM_PREPARE) && params->prepare != NULL;
    if (worker == NULL || request == NULL || tag > CDT_UCX_TAG_MAX ||
        (!prepare && (type == NULL || count < 0)))
        return CDT_ERR_INVALID_ARG;
    cdt_ucx_request r = cdt__ucx_request_new(worker, false);
    if (r == NULL)
        return CDT_ERR_NO_MEMORY;
    r->buf = buf;
    r->count = count;
    r->type = type;
    if (prepare) {
        r->prepare = params->prepare;
        r->prepare_arg = params->prepare_arg;
    }
    /* user tags never have the private bit; the mask always checks it */
    uint64_t mask = (tag_mask & CDT_UCX_TAG_MAX) | CDT__UCX_PRIVATE_BIT;
    pthread_mutex_lock(&worker->lock);
    r->outstanding = 1; /* held while posting: the message may complete inside the call */
    int rc = post_recv(r, &r->head_sub, r->head, CDT__UCX_HEAD_MAX, tag & mask, mask, head_cb);
    if (rc == CDT_SUCCESS && --r->outstanding == 0)
        recv_done(r);
    pthread_mutex_unlock(&worker->lock);
    if (rc != CDT_SUCCESS) {
        free(r);
        return rc;
    }
    *request = r;
    return CDT_SUCCESS;
}
