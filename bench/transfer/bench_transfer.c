/*
 * bench_transfer.c - two processes over UCX on this machine (OSU style). For each object type
 * of the seed paper and each size: latency (half round trip of a ping-pong) and bandwidth
 * (windows of non-blocking sends, then a 1-byte acknowledgement), for
 *   raw          ucp_tag_send_nbx of a contiguous buffer of the same byte count (the roofline),
 *                on libcdt's endpoint (peer error handling)
 *   raw_nopeer   the same on an endpoint without peer error handling (UCX's fastest choice)
 *   libcdt       cdt_ucx_isend / cdt_ucx_irecv of the object (one matched message)
 *   manual_pack  hand-written pack into bytes, raw send, raw receive, hand-written unpack
 *   ucx_iov      one UCX IOV message: packed fields first, then every region (as the seed)
 *   ucx_generic  one UCX message of a generic datatype (ucp_dt_make_generic): its pack callback
 *                copies the frame (cdt_frame_gather), its unpack callback feeds the decoder
 *                (cdt_decoder_write), so packing happens inside UCX's own copies
 * Every buffer is written before it is first sent (no untouched zero pages).
 * Usage: bench_transfer [--quick] [--csv FILE] [--transports FILE] [--cases A,B] [--methods A,B]
 *        (forks the peer itself; --cases / --methods run only the named ones)
 * MB = 10^6 bytes.
 */
#include "seed_types.h"

#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)
#define OK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != CDT_SUCCESS)                                                                    \
            DIE("%s:%d: %s: %s", __FILE__, __LINE__, #expr, cdt_err_name(rc_));                    \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct env {
    cdt_ucx_worker w;
    cdt_ucx_ep ep;
    ucp_worker_h uw;
    ucp_ep_h uep;
    ucp_ep_h uep_nopeer; /* same peer, no peer error handling */
    ucp_datatype_t gen_dt;
    int server;
    int quick;
} env;

/* ---- raw UCX ---- */
static void *raw_send_on(ucp_ep_h ep, const void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = dt};
    void *q = ucp_tag_send_nbx(ep, buf, len, tag, &p);
    if (UCS_PTR_IS_ERR(q))
        DIE("raw send: %s", ucs_status_string(UCS_PTR_STATUS(q)));
    return q;
}
static void *raw_send(env *e, const void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    return raw_send_on(e->uep, buf, len, tag, dt);
}
static void *raw_recv(env *e, void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = dt};
    void *q = ucp_tag_recv_nbx(e->uw, buf, len, tag, UINT64_MAX, &p);
    if (UCS_PTR_IS_ERR(q))
        DIE("raw recv: %s", ucs_status_string(UCS_PTR_STATUS(q)));
    return q;
}
static void raw_wait(env *e, void *q)
{
    if (q == NULL)
        return;
    double t0 = now();
    while (ucp_request_check_status(q) == UCS_INPROGRESS) {
        ucp_worker_progress(e->uw);
        if (now() - t0 > 60)
            DIE("raw wait timed out");
    }
    ucs_status_t st = ucp_request_check_status(q);
    if (st != UCS_OK)
        DIE("raw request: %s", ucs_status_string(st));
    ucp_request_free(q);
}

/* ---- objects ---- */
enum kase { K_BYTES, K_SIMPLE, K_NOGAP, K_STRUCTVEC, K_DOUBLEVEC };
enum method { M_RAW, M_RAW_NOPEER, M_LIBCDT, M_MANUAL, M_IOV, M_GENERIC, M_COUNT };
static const char *method_name[] = {"raw",         "raw_nopeer", "libcdt",
                                    "manual_pack", "ucx_iov",    "ucx_generic"};

typedef struct obj {
    enum kase k;
    cdt_count size; /* data bytes of the object */
    cdt_count count;
    void *mem;         /* struct arrays / bytes */
    double_vec dv;     /* send object, or shape of the expected object */
    double_vec *dv_in; /* receive targets (one per message of a window) */
    int window;
    unsigned char *pack; /* manual pack buffer */
    cdt_count pack_len;
    ucp_dt_iov_t *iov;
    size_t niov;
    unsigned char *fields; /* packed fields for the iov method */
} obj;

static cdt_count elem_size(enum kase k)
{
    switch (k) {
    case K_SIMPLE:
        return sizeof(struct_simple);
    case K_NOGAP:
        return sizeof(struct_simple_no_gap);
    case K_STRUCTVEC:
        return sizeof(struct_vec);
    default:
        return 1;
    }
}

static void obj_make(obj *o, enum kase k, cdt_count target, cdt_count sub, int window)
{
    memset(o, 0, sizeof(*o));
    o->k = k;
    o->window = window;
    if (k == K_DOUBLEVEC) {
        cdt_count len = target < sub ? target : sub;
        if (len < 4)
            len = 4;
        cdt_count n = target / len > 0 ? target / len : 1;
        OK(double_vec_init(&o->dv, n, len / 4, 1));
        o->size = n * (len / 4) * 4;
        o->dv_in = calloc((size_t)window, sizeof(double_vec));
        o->pack_len = n * 8 + o->size;
        o->niov = (size_t)n + 1;
        o->iov = calloc(o->niov, sizeof(ucp_dt_iov_t));
        o->iov[0] = (ucp_dt_iov_t){o->dv.lens, (size_t)n * 8};
        for (cdt_count i = 0; i < n; i++)
            o->iov[i + 1] = (ucp_dt_iov_t){o->dv.data[i], (size_t)o->dv.lens[i] * 4};
    } else {
        cdt_count es = elem_size(k);
        o->count = target / es > 0 ? target / es : 1;
        o->size = o->count * es;
        o->mem = calloc((size_t)o->count, (size_t)es);
        if (k == K_SIMPLE)
            struct_simple_fill(o->mem, o->count, 1);
        else if (k == K_NOGAP)
            struct_simple_no_gap_fill(o->mem, o->count, 1);
        else if (k == K_STRUCTVEC)
            struct_vec_fill(o->mem, o->count, 1);
        o->pack_len = k == K_SIMPLE ? o->count * 20 : o->size;
        if (k == K_STRUCTVEC) {
            o->pack_len = o->count * (20 + STRUCT_VEC_DATA_LEN * 4);
            o->fields = malloc((size_t)o->count * 20);
            o->niov = (size_t)o->count + 1;
            o->iov = calloc(o->niov, sizeof(ucp_dt_iov_t));
            o->iov[0] = (ucp_dt_iov_t){o->fields, (size_t)o->count * 20};
            struct_vec *v = o->mem;
            for (cdt_count i = 0; i < o->count; i++)
                o->iov[i + 1] = (ucp_dt_iov_t){v[i].data, STRUCT_VEC_DATA_LEN * 4};
        }
    }
    o->pack = malloc((size_t)o->pack_len);
    if (o->pack == NULL || (o->mem == NULL && k != K_DOUBLEVEC))
        DIE("out of memory");
    /* written before sent: raw sends o->pack (double_vec) or o->mem (bytes) as they are */
    for (cdt_count i = 0; i < o->pack_len; i++)
        o->pack[i] = (unsigned char)(i * 7 + 1);
    if (k == K_BYTES)
        memset(o->mem, 0x5a, (size_t)o->size);
}

static void obj_free(obj *o)
{
    double_vec_clear(&o->dv);
    for (int i = 0; o->dv_in != NULL && i < o->window; i++)
        double_vec_clear(&o->dv_in[i]);
    free(o->dv_in);
    free(o->mem);
    free(o->pack);
    free(o->iov);
    free(o->fields);
}

static cdt_type obj_type(const obj *o)
{
    switch (o->k) {
    case K_SIMPLE:
        return struct_simple_type();
    case K_NOGAP:
        return struct_simple_no_gap_type();
    case K_STRUCTVEC:
        return struct_vec_type();
    case K_DOUBLEVEC:
        return double_vec_type();
    default:
        return CDT_BYTE;
    }
}

/* hand-written pack of the fields (a, b, c, d) of struct_simple / struct_vec */
static void pack_fields(const void *mem, cdt_count count, cdt_count stride, unsigned char *dst)
{
    const unsigned char *p = mem;
    for (cdt_count i = 0; i < count; i++, p += stride, dst += 20) {
        memcpy(dst, p, 12);
        memcpy(dst + 12, p + offsetof(struct_simple, d), 8);
    }
}
static void unpack_fields(void *mem, cdt_count count, cdt_count stride, const unsigned char *src)
{
    unsigned char *p = mem;
    for (cdt_count i = 0; i < count; i++, p += stride, src += 20) {
        memcpy(p, src, 12);
        memcpy(p + offsetof(struct_simple, d), src + 12, 8);
    }
}

static void manual_pack(obj *o)
{
    switch (o->k) {
    case K_SIMPLE:
        pack_fields(o->mem, o->count, sizeof(struct_simple), o->pack);
        break;
    case K_STRUCTVEC: {
        struct_vec *v = o->mem;
        unsigned char *d = o->pack;
        for (cdt_count i = 0; i < o->count; i++) {
            pack_fields(&v[i], 1, 0, d);
            memcpy(d + 20, v[i].data, sizeof(v[i].data));
            d += 20 + sizeof(v[i].data);
        }
        break;
    }
    case K_DOUBLEVEC: {
        unsigned char *d = o->pack;
        memcpy(d, o->dv.lens, (size_t)o->dv.n * 8);
        d += o->dv.n * 8;
        for (cdt_count i = 0; i < o->dv.n; i++) {
            memcpy(d, o->dv.data[i], (size_t)o->dv.lens[i] * 4);
            d += o->dv.lens[i] * 4;
        }
        break;
    }
    default:
        memcpy(o->pack, o->mem, (size_t)o->size);
    }
}

/* unpack into the object (double_vec: allocate it from the packed lengths, as a receiver
 * that does not know the shape must) */
static void manual_unpack(obj *o, int slot)
{
    switch (o->k) {
    case K_SIMPLE:
        unpack_fields(o->mem, o->count, sizeof(struct_simple), o->pack);
        break;
    case K_STRUCTVEC: {
        struct_vec *v = o->mem;
        const unsigned char *s = o->pack;
        for (cdt_count i = 0; i < o->count; i++) {
            unpack_fields(&v[i], 1, 0, s);
            memcpy(v[i].data, s + 20, sizeof(v[i].data));
            s += 20 + sizeof(v[i].data);
        }
        break;
    }
    case K_DOUBLEVEC: {
        double_vec *t = &o->dv_in[slot];
        double_vec_clear(t);
        cdt_count n = o->dv.n;
        t->n = n;
        t->lens = malloc((size_t)n * 8);
        t->data = malloc((size_t)n * sizeof(int32_t *));
        memcpy(t->lens, o->pack, (size_t)n * 8);
        const unsigned char *s = o->pack + n * 8;
        for (cdt_count i = 0; i < n; i++) {
            t->data[i] = malloc((size_t)t->lens[i] * 4);
            memcpy(t->data[i], s, (size_t)t->lens[i] * 4);
            s += t->lens[i] * 4;
        }
        break;
    }
    default:
        memcpy(o->mem, o->pack, (size_t)o->size);
    }
}

/* ---- one generic-datatype message (ucx_generic) ----
 * Send: the buffer handed to UCX is a gen_send; pack copies frame bytes at any offset.
 * Receive: the buffer is a gen_recv; the first bytes are the frame header, from which the
 * decoder is made and bound; every later piece goes to cdt_decoder_write at its offset. */
typedef struct gen_send {
    int is_recv; /* 0: the callbacks tell the two states apart by this first field */
    cdt_frame f; /* objects with regions: the frame */
    cdt_op op;   /* objects without: the packed stream straight from the object */
    cdt_count size;
} gen_send;

typedef struct gen_recv {
    int is_recv; /* 1 */
    void *buf;   /* bind target */
    cdt_count count;
    cdt_type type;
    cdt_decoder d;
    cdt_op op;           /* objects without regions: unpack straight into the object */
    unsigned char *head; /* header bytes before the decoder exists (when split over pieces) */
    cdt_count have, cap;
} gen_recv;

static void *gen_start_pack(void *context, const void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return (void *)buffer;
}
static void *gen_start_unpack(void *context, void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return buffer;
}
static size_t gen_packed_size(void *state)
{
    /* the send side knows its frame; a receive accepts any size (the header says it) */
    gen_send *g = state;
    return g->is_recv ? (size_t)INT64_MAX : (size_t)g->size;
}
static size_t gen_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    gen_send *g = state;
    size_t n = (size_t)g->size - offset < max_length ? (size_t)g->size - offset : max_length;
    if (g->op != NULL) {
        cdt_count used;
        OK(cdt_op_pack(g->op, (cdt_count)offset, dest, (cdt_count)n, &used));
        return (size_t)used;
    }
    OK(cdt_frame_gather(g->f, (cdt_count)offset, dest, (cdt_count)n));
    return n;
}
static ucs_status_t gen_unpack(void *state, size_t offset, const void *src, size_t length)
{
    gen_recv *g = state;
    if (g->op != NULL) {
        OK(cdt_op_unpack(g->op, (cdt_count)offset, src, (cdt_count)length));
        return UCS_OK;
    }
    if (g->d == NULL) {
        cdt_count hs;
        if (offset == 0 && cdt_frame_header_size(src, (cdt_count)length, &hs) == CDT_SUCCESS &&
            hs <= (cdt_count)length) { /* the usual case: the first piece holds the header */
            OK(cdt_decoder_create(src, (cdt_count)length, &g->d));
            OK(cdt_decoder_bind(g->d, g->buf, g->count, g->type));
            OK(cdt_decoder_write(g->d, 0, src, (cdt_count)length));
            return UCS_OK;
        }
        if ((cdt_count)offset != g->have)
            DIE("ucx_generic: header piece at %zu out of order", offset);
        if (g->have + (cdt_count)length > g->cap) {
            /* grow to the header size once the fixed part is known */
            cdt_count want = g->have + (cdt_count)length;
            unsigned char *grown = realloc(g->head, (size_t)want);
            if (grown == NULL)
                DIE("out of memory");
            g->head = grown;
            g->cap = want;
        }
        memcpy(g->head + g->have, src, length);
        g->have += (cdt_count)length;
        if (cdt_frame_header_size(g->head, g->have, &hs) != CDT_SUCCESS || hs > g->have)
            return UCS_OK; /* more header to come */
        OK(cdt_decoder_create(g->head, g->have, &g->d));
        OK(cdt_decoder_bind(g->d, g->buf, g->count, g->type));
        OK(cdt_decoder_write(g->d, 0, g->head, g->have));
        return UCS_OK;
    }
    OK(cdt_decoder_write(g->d, (cdt_count)offset, src, (cdt_count)length));
    return UCS_OK;
}
static void gen_finish(void *state)
{
    (void)state; /* the waiter finishes the decoder or frees the frame */
}
static ucp_generic_dt_ops_t gen_ops = {
    .start_pack = gen_start_pack,
    .start_unpack = gen_start_unpack,
    .packed_size = gen_packed_size,
    .pack = gen_pack,
    .unpack = gen_unpack,
    .finish = gen_finish,
};

/* ---- one message, any method ---- */
typedef struct handle {
    void *ucx;
    cdt_ucx_request req;
    int unpack_slot; /* manual / iov receive: unpack after completion (-1: nothing) */
    gen_send *gs;    /* ucx_generic */
    gen_recv *gr;
} handle;

static void *obj_buf(obj *o, int slot)
{
    return o->k == K_DOUBLEVEC ? (void *)&o->dv_in[slot] : o->mem;
}

static handle do_send(env *e, obj *o, enum method m, uint64_t tag)
{
    handle h = {NULL, NULL, -1, NULL, NULL};
    switch (m) {
    case M_RAW:
    case M_RAW_NOPEER:
        h.ucx = raw_send_on(m == M_RAW ? e->uep : e->uep_nopeer,
                            o->k == K_DOUBLEVEC ? (void *)o->pack : o->mem, (size_t)o->size, tag,
                            ucp_dt_make_contig(1));
        break;
    case M_GENERIC:
        h.gs = calloc(1, sizeof(*h.gs));
        /* objects with regions (double_vec, struct_vec's arrays) travel as their frame */
        if (o->k == K_DOUBLEVEC) {
            OK(cdt_frame_encode(&o->dv, 1, double_vec_type(), NULL, &h.gs->f));
            OK(cdt_frame_size(h.gs->f, &h.gs->size));
        } else if (o->k == K_STRUCTVEC) {
            OK(cdt_frame_encode(o->mem, o->count, obj_type(o), NULL, &h.gs->f));
            OK(cdt_frame_size(h.gs->f, &h.gs->size));
        } else {
            OK(cdt_op_pack_begin(o->mem, o->count, obj_type(o), &h.gs->op));
            OK(cdt_op_packed_size(h.gs->op, &h.gs->size));
        }
        h.ucx = raw_send(e, h.gs, 1, tag, e->gen_dt);
        break;
    case M_LIBCDT:
        if (o->k == K_DOUBLEVEC)
            OK(cdt_ucx_isend(e->ep, &o->dv, 1, double_vec_type(), tag, &h.req));
        else
            OK(cdt_ucx_isend(e->ep, o->mem, o->count, obj_type(o), tag, &h.req));
        break;
    case M_MANUAL:
        manual_pack(o);
        h.ucx = raw_send(e, o->pack, (size_t)o->pack_len, tag, ucp_dt_make_contig(1));
        break;
    case M_IOV:
        if (o->k == K_STRUCTVEC)
            pack_fields(o->mem, o->count, sizeof(struct_vec), o->fields);
        h.ucx = raw_send(e, o->iov, o->niov, tag, ucp_dt_make_iov());
        break;
    default:
        break;
    }
    return h;
}

static handle do_recv(env *e, obj *o, enum method m, uint64_t tag, int slot)
{
    handle h = {NULL, NULL, -1, NULL, NULL};
    switch (m) {
    case M_RAW:
    case M_RAW_NOPEER:
        h.ucx = raw_recv(e, o->k == K_DOUBLEVEC ? (void *)o->pack : o->mem, (size_t)o->size, tag,
                         ucp_dt_make_contig(1));
        break;
    case M_GENERIC:
        h.gr = calloc(1, sizeof(*h.gr));
        h.gr->is_recv = 1;
        if (o->k == K_DOUBLEVEC)
            double_vec_clear(&o->dv_in[slot]);
        h.gr->buf = obj_buf(o, slot);
        h.gr->count = o->k == K_DOUBLEVEC ? 1 : o->count;
        h.gr->type = obj_type(o);
        if (o->k != K_DOUBLEVEC && o->k != K_STRUCTVEC)
            OK(cdt_op_unpack_begin(o->mem, o->count, obj_type(o), &h.gr->op));
        h.ucx = raw_recv(e, h.gr, 1, tag, e->gen_dt);
        break;
    case M_LIBCDT:
        if (o->k == K_DOUBLEVEC) {
            double_vec_clear(&o->dv_in[slot]);
            OK(cdt_ucx_irecv(e->w, &o->dv_in[slot], 1, double_vec_type(), tag,
                             CDT_UCX_TAG_MASK_FULL, NULL, &h.req));
        } else {
            OK(cdt_ucx_irecv(e->w, o->mem, o->count, obj_type(o), tag, CDT_UCX_TAG_MASK_FULL, NULL,
                             &h.req));
        }
        break;
    case M_MANUAL:
        h.ucx = raw_recv(e, o->pack, (size_t)o->pack_len, tag, ucp_dt_make_contig(1));
        h.unpack_slot = slot;
        break;
    case M_IOV:
        /* the receiver is given the shape (an advantage ours does not need) */
        h.ucx = raw_recv(e, o->iov, o->niov, tag, ucp_dt_make_iov());
        if (o->k == K_STRUCTVEC)
            h.unpack_slot = slot;
        break;
    default:
        break;
    }
    return h;
}

static void do_wait(env *e, obj *o, enum method m, handle *h)
{
    if (h->req != NULL) {
        OK(cdt_ucx_request_wait(h->req, 60000));
        OK(cdt_ucx_request_free(h->req));
        return;
    }
    raw_wait(e, h->ucx);
    if (h->gs != NULL) {
        if (h->gs->op != NULL)
            OK(cdt_op_end(h->gs->op));
        else
            OK(cdt_frame_free(h->gs->f));
        free(h->gs);
        h->gs = NULL;
    }
    if (h->gr != NULL && h->gr->op != NULL) {
        OK(cdt_op_end(h->gr->op));
        free(h->gr);
        h->gr = NULL;
    }
    if (h->gr != NULL) {
        if (h->gr->d == NULL)
            DIE("ucx_generic: message without a header");
        OK(cdt_decoder_finish(h->gr->d));
        OK(cdt_decoder_free(h->gr->d));
        free(h->gr->head);
        free(h->gr);
        h->gr = NULL;
    }
    if (h->unpack_slot >= 0) {
        if (m == M_MANUAL)
            manual_unpack(o, h->unpack_slot);
        else if (m == M_IOV && o->k == K_STRUCTVEC)
            unpack_fields(o->mem, o->count, sizeof(struct_vec), o->fields);
    }
}

static char ack_byte;
static void ack(env *e, int send)
{
    void *q = send ? raw_send(e, &ack_byte, 1, 1u << 30, ucp_dt_make_contig(1))
                   : raw_recv(e, &ack_byte, 1, 1u << 30, ucp_dt_make_contig(1));
    raw_wait(e, q);
}

static double latency_us(env *e, obj *o, enum method m, int iters)
{
    int warm = iters / 10 + 2;
    double t0 = 0;
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm)
            t0 = now();
        if (e->server) {
            handle h = do_recv(e, o, m, 7, 0);
            do_wait(e, o, m, &h);
            h = do_send(e, o, m, 8);
            do_wait(e, o, m, &h);
        } else {
            handle h = do_send(e, o, m, 7);
            do_wait(e, o, m, &h);
            h = do_recv(e, o, m, 8, 0);
            do_wait(e, o, m, &h);
        }
    }
    return (now() - t0) / iters / 2 * 1e6;
}

static double bandwidth_mbs(env *e, obj *o, enum method m, int windows)
{
    int w = o->window;
    handle *hs = calloc((size_t)w, sizeof(handle));
    double t0 = 0;
    for (int it = 0; it < windows + 1; it++) {
        if (it == 1)
            t0 = now();
        for (int i = 0; i < w; i++)
            hs[i] = e->server ? do_recv(e, o, m, 9, i) : do_send(e, o, m, 9);
        for (int i = 0; i < w; i++)
            do_wait(e, o, m, &hs[i]);
        ack(e, e->server);
    }
    double t = now() - t0;
    free(hs);
    return (double)o->size * w * windows / t / 1e6;
}

/* whether `name` is one of the comma-separated names in `list` (NULL: every name) */
static int listed(const char *list, const char *name)
{
    if (list == NULL)
        return 1;
    size_t nl = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += nl)
        if ((p == list || p[-1] == ',') && (p[nl] == ',' || p[nl] == '\0'))
            return 1;
    return 0;
}

typedef struct kase_desc {
    const char *name;
    enum kase k;
    cdt_count sub; /* double_vec sub-vector bytes */
} kase_desc;

int main(int argc, char **argv)
{
    int quick = 0;
    const char *csv_path = NULL, *transports_path = NULL, *only = NULL, *only_methods = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--transports") == 0 && i + 1 < argc)
            transports_path = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            only = argv[++i]; /* comma-separated case names */
        else if (strcmp(argv[i], "--methods") == 0 && i + 1 < argc)
            only_methods = argv[++i];
        else
            DIE("usage: %s [--quick] [--csv FILE] [--transports FILE] [--cases A,B] [--methods "
                "A,B]",
                argv[0]);
    }
    /* endpoints from exchanged worker addresses (as MPI or a file would bootstrap): UCX then
     * picks shared memory for two processes on one machine */
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
        DIE("pipe");
    pid_t pid = fork();
    env e = {.server = pid == 0, .quick = quick};
    if (e.server)
        alarm(quick ? 300 : 3600);
    cdt_ucx_context ctx;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &e.w));
    cdt_ucx_listener l = NULL;
    void *addr;
    size_t alen;
    OK(cdt_ucx_worker_address(e.w, &addr, &alen));
    int wfd = e.server ? up[1] : down[1], rfd = e.server ? down[0] : up[0];
    if (write(wfd, &alen, sizeof(alen)) != sizeof(alen) || write(wfd, addr, alen) != (ssize_t)alen)
        DIE("pipe write");
    size_t plen;
    if (read(rfd, &plen, sizeof(plen)) != sizeof(plen) || plen > 65536)
        DIE("pipe read");
    unsigned char *paddr = malloc(plen);
    for (size_t got = 0; got < plen;) {
        ssize_t n = read(rfd, paddr + got, plen - got);
        if (n <= 0)
            DIE("pipe read");
        got += (size_t)n;
    }
    cdt_ucx_worker_address_free(e.w, addr);
    OK(cdt_ucx_ep_create_from_address(e.w, paddr, plen, &e.ep));
    e.uw = cdt_ucx_worker_handle(e.w);
    e.uep = cdt_ucx_ep_handle(e.ep);
    ucp_ep_params_t np = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
                          .address = (const ucp_address_t *)paddr,
                          .err_mode = UCP_ERR_HANDLING_MODE_NONE};
    if (ucp_ep_create(e.uw, &np, &e.uep_nopeer) != UCS_OK)
        DIE("ucp_ep_create (no peer error handling)");
    if (ucp_dt_create_generic(&gen_ops, NULL, &e.gen_dt) != UCS_OK)
        DIE("ucp_dt_create_generic");
    free(paddr);
    /* one rendezvous-sized message each way on both endpoints wires up every lane, then the
     * transports in use are reported (they are part of the result) */
    {
        obj w;
        obj_make(&w, K_BYTES, 1 << 20, 0, 1);
        for (int m = M_RAW; m <= M_RAW_NOPEER; m++)
            latency_us(&e, &w, (enum method)m, 2);
        obj_free(&w);
        char t[512];
        OK(cdt_ucx_ep_transports(e.ep, t, sizeof(t)));
        cdt_ucx_protocol proto;
        OK(cdt_ucx_ep_protocol(e.ep, &proto));
        const char *proto_name = proto == CDT_UCX_PROTOCOL_SINGLE
                                     ? "single (the object as one message)"
                                     : "split (head, tail and large regions as messages)";
        char *text = NULL;
        size_t text_len = 0;
        FILE *f = open_memstream(&text, &text_len);
        ucp_ep_print_info(e.uep_nopeer, f);
        fclose(f);
        if (!e.server) {
            FILE *tf = transports_path != NULL ? fopen(transports_path, "w") : NULL;
            for (FILE *out = stdout; out != NULL; out = out == stdout ? tf : NULL) {
                fprintf(out,
                        "UCX %s, UCX_TLS=%s\nlibcdt endpoint (peer error handling): %s\n"
                        "libcdt protocol (cdt_ucx_ep_protocol): %s\n",
                        cdt_ucx_version_string(),
                        getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)", t, proto_name);
                fprintf(out, "raw_nopeer endpoint lanes (ucp_ep_print_info):\n");
                for (char *line = text; line != NULL && *line != '\0';) {
                    char *nl = strchr(line, '\n');
                    if (strstr(line, "lane[") != NULL)
                        fprintf(out, "%.*s\n", nl != NULL ? (int)(nl - line) : (int)strlen(line),
                                line);
                    line = nl != NULL ? nl + 1 : NULL;
                }
            }
            if (tf != NULL)
                fclose(tf);
        }
        free(text);
    }
    FILE *csv = NULL;
    if (!e.server) {
        csv = csv_path != NULL ? fopen(csv_path, "w") : NULL;
        if (csv_path != NULL && csv == NULL)
            DIE("cannot write %s", csv_path);
        if (csv != NULL)
            fprintf(csv, "case,method,size_bytes,metric,value,unit\n");
    }
    const kase_desc kases[] = {
        {"bytes", K_BYTES, 0},
        {"struct_simple", K_SIMPLE, 0},
        {"struct_simple_no_gap", K_NOGAP, 0},
        {"struct_vec", K_STRUCTVEC, 0},
        {"double_vec_64", K_DOUBLEVEC, 64},
        {"double_vec_1k", K_DOUBLEVEC, 1024},
        {"double_vec_4k", K_DOUBLEVEC, 4096},
        {"double_vec_128k", K_DOUBLEVEC, 131072},
    };
    const cdt_count lat_max = quick ? 65536 : 1 << 20;
    const cdt_count bw_min = 1024, bw_max = quick ? (cdt_count)64 << 20 : (cdt_count)256 << 20;
    for (size_t ki = 0; ki < sizeof(kases) / sizeof(kases[0]); ki++) {
        const kase_desc *kd = &kases[ki];
        if (!listed(only, kd->name))
            continue;
        for (int pass = 0; pass < 2; pass++) { /* 0 latency, 1 bandwidth */
            if (quick && pass == 0 && kd->k == K_DOUBLEVEC && kd->sub != 1024)
                continue;
            if (pass == 1 && kd->k == K_DOUBLEVEC && kd->sub != 1024 && kd->sub != 131072)
                continue; /* bandwidth at 1 KiB sub-vectors (the seed) and 128 KiB */
            if (!e.server) {
                printf("# %s %s (MB = 10^6 bytes)\n# Size", kd->name,
                       pass == 0 ? "latency" : "bandwidth");
                for (int m = 0; m < M_COUNT; m++)
                    printf("  %14s", method_name[m]);
                printf("   [%s]\n", pass == 0 ? "Latency (us)" : "Bandwidth (MB/s)");
            }
            cdt_count start = pass == 0 ? 1 : bw_min, end = pass == 0 ? lat_max : bw_max;
            cdt_count step = pass == 0 ? 2 : (quick ? 4 : 2);
            for (cdt_count size = start; size <= end; size *= step) {
                if (kd->k != K_BYTES && size < elem_size(kd->k))
                    continue;
                if (kd->k == K_DOUBLEVEC && size < 4)
                    continue;
                if (!e.server)
                    printf("%-10lld", (long long)size);
                for (int m = 0; m < M_COUNT; m++) {
                    int applicable = (m == M_RAW || m == M_RAW_NOPEER || kd->k != K_BYTES) &&
                                     listed(only_methods, method_name[m]);
                    if (m == M_IOV && (kd->k == K_SIMPLE || kd->k == K_NOGAP))
                        applicable = 0; /* no regions: an IOV message is the manual pack */
                    if (!applicable) {
                        if (!e.server)
                            printf("  %14s", "-");
                        continue;
                    }
                    int window = pass == 0 ? 1
                                           : (int)(size >= ((cdt_count)64 << 20) ? 1
                                                   : ((cdt_count)64 << 20) / size > 64
                                                       ? 64
                                                       : ((cdt_count)64 << 20) / size);
                    obj o;
                    obj_make(&o, kd->k, size, kd->sub, window);
                    double v;
                    if (pass == 0) {
                        int iters = size <= 4096 ? (quick ? 300 : 3000) : quick ? 30 : 300;
                        if (o.size >= (1 << 20))
                            iters = quick ? 10 : 50;
                        v = latency_us(&e, &o, (enum method)m, iters);
                    } else {
                        /* at least 1 GiB per point (256 MiB quick) */
                        cdt_count total = quick ? (cdt_count)256 << 20 : (cdt_count)1 << 30;
                        cdt_count wn = (total + o.size * window - 1) / (o.size * window);
                        int windows = wn < 2 ? 2 : (int)wn;
                        v = bandwidth_mbs(&e, &o, (enum method)m, windows);
                    }
                    if (!e.server) {
                        printf("  %14.2f", v);
                        fflush(stdout);
                        if (csv != NULL)
                            fprintf(csv, "%s,%s,%lld,%s,%.3f,%s\n", kd->name, method_name[m],
                                    (long long)size, pass == 0 ? "latency_us" : "bandwidth_mbs", v,
                                    pass == 0 ? "us" : "MB/s");
                    }
                    obj_free(&o);
                }
                if (!e.server)
                    printf("\n");
            }
        }
    }
    if (csv != NULL)
        fclose(csv);
    ack(&e, e.server); /* both done before closing */
    ucp_dt_destroy(e.gen_dt);
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *cq = ucp_ep_close_nbx(e.uep_nopeer, &cp);
    if (UCS_PTR_IS_PTR(cq)) {
        while (ucp_request_check_status(cq) == UCS_INPROGRESS)
            ucp_worker_progress(e.uw);
        ucp_request_free(cq);
    }
    cdt_ucx_ep_close(e.ep, 2000);
    cdt_ucx_listener_destroy(l);
    cdt_ucx_worker_destroy(e.w);
    cdt_ucx_context_destroy(ctx);
    if (e.server)
        _exit(0);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
