/*
 * transfer_methods.c - the methods of bench_transfer: raw UCX sends and receives, and
 * one message sent, received and waited for by any method.
 */
#include "bench_transfer.h"

/* ---- raw UCX ---- */
static void *raw_send_on(ucp_ep_h ep, const void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = dt};
    void *q = ucp_tag_send_nbx(ep, buf, len, tag, &p);
    if (UCS_PTR_IS_ERR(q))
        DIE("raw send: %s", ucs_status_string(UCS_PTR_STATUS(q)));
    return q;
}
void *raw_send(env *e, const void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    return raw_send_on(e->uep, buf, len, tag, dt);
}
void *raw_recv(env *e, void *buf, size_t len, uint64_t tag, ucp_datatype_t dt)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = dt};
    void *q = ucp_tag_recv_nbx(e->uw, buf, len, tag, UINT64_MAX, &p);
    if (UCS_PTR_IS_ERR(q))
        DIE("raw recv: %s", ucs_status_string(UCS_PTR_STATUS(q)));
    return q;
}
void raw_wait(env *e, void *q)
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

static void *obj_buf(obj *o, int slot)
{
    return o->k == K_DOUBLEVEC ? (void *)dv_target(o, slot) : o->mem;
}

/* one store into every cache line of [p, p + n), of the byte already there (a store makes the
 * line modified in this core's cache whatever it writes; the bytes sent do not change) */
static void rewrite_lines(void *p, size_t n)
{
    volatile unsigned char *b = p;
    for (size_t i = 0; i < n; i += 64)
        b[i] = b[i];
    if (n > 0)
        b[n - 1] = b[n - 1];
}

/* --rewrite: the bytes method m reads to send o, written first */
static void rewrite_sent(obj *o, enum method m)
{
    if (o->k != K_DOUBLEVEC) {
        rewrite_lines(o->mem, (size_t)o->size);
    } else if (m == M_RAW || m == M_RAW_NOPEER) {
        rewrite_lines(o->pack, (size_t)o->size);
    } else {
        rewrite_lines(o->dv.lens, (size_t)o->dv.n * sizeof(cdt_count));
        for (cdt_count i = 0; i < o->dv.n; i++)
            rewrite_lines(o->dv.data[i], (size_t)o->dv.lens[i] * sizeof(int32_t));
    }
}

handle do_send(env *e, obj *o, enum method m, uint64_t tag, int slot)
{
    handle h = {NULL, NULL, -1, NULL, NULL};
    if (rewrite_before_send)
        rewrite_sent(o, m);
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
        manual_pack(o, slot);
        h.ucx = raw_send(e, o->manual + (size_t)slot * (size_t)o->pack_len, (size_t)o->pack_len,
                         tag, ucp_dt_make_contig(1));
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

handle do_recv(env *e, obj *o, enum method m, uint64_t tag, int slot)
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
        if (o->k == K_DOUBLEVEC && !o->reuse)
            double_vec_clear(dv_target(o, slot));
        h.gr->buf = obj_buf(o, slot);
        h.gr->count = o->k == K_DOUBLEVEC ? 1 : o->count;
        h.gr->type = obj_type(o);
        if (o->k != K_DOUBLEVEC && o->k != K_STRUCTVEC)
            OK(cdt_op_unpack_begin(o->mem, o->count, obj_type(o), &h.gr->op));
        h.ucx = raw_recv(e, h.gr, 1, tag, e->gen_dt);
        break;
    case M_LIBCDT:
        if (o->k == K_DOUBLEVEC) {
            if (!o->reuse)
                double_vec_clear(dv_target(o, slot));
            OK(cdt_ucx_irecv(e->w, dv_target(o, slot), 1, double_vec_type(), tag,
                             CDT_UCX_TAG_MASK_FULL, NULL, &h.req));
        } else {
            OK(cdt_ucx_irecv(e->w, o->mem, o->count, obj_type(o), tag, CDT_UCX_TAG_MASK_FULL, NULL,
                             &h.req));
        }
        break;
    case M_MANUAL:
        h.ucx = raw_recv(e, o->manual + (size_t)slot * (size_t)o->pack_len, (size_t)o->pack_len,
                         tag, ucp_dt_make_contig(1));
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

void do_wait(env *e, obj *o, enum method m, handle *h)
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
