/*
 * transfer_objects.c - the objects bench_transfer sends: made for a case and a size,
 * freed, their libcdt type, and the hand-written pack and unpack of the manual_pack and
 * ucx_iov methods.
 */
#include "bench_transfer.h"

cdt_count elem_size(enum kase k)
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

void obj_make(obj *o, enum kase k, cdt_count target, cdt_count sub, int window)
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
    o->manual = malloc((size_t)o->pack_len * (size_t)window);
    if (o->pack == NULL || o->manual == NULL || (o->mem == NULL && k != K_DOUBLEVEC))
        DIE("out of memory");
    /* written before sent: raw sends o->pack (double_vec) or o->mem (bytes) as they are */
    for (cdt_count i = 0; i < o->pack_len; i++)
        o->pack[i] = (unsigned char)(i * 7 + 1);
    /* touched once, as a program's long-lived buffers are */
    memset(o->manual, 0, (size_t)o->pack_len * (size_t)window);
    if (k == K_BYTES)
        memset(o->mem, 0x5a, (size_t)o->size);
}

void obj_free(obj *o)
{
    double_vec_clear(&o->dv);
    for (int i = 0; o->dv_in != NULL && i < o->window; i++)
        double_vec_clear(&o->dv_in[i]);
    free(o->dv_in);
    free(o->mem);
    free(o->pack);
    free(o->manual);
    free(o->iov);
    free(o->fields);
}

/* struct_simple with its gap declared padding, made once */
static cdt_type padded_simple_type(void)
{
    static cdt_type t;
    if (t == NULL) {
        OK(struct_simple_padded_type_create(&t));
    }
    return t;
}

cdt_type obj_type(const obj *o)
{
    switch (o->k) {
    case K_SIMPLE:
        return o->padded ? padded_simple_type() : struct_simple_type();
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
void pack_fields(const void *mem, cdt_count count, cdt_count stride, unsigned char *dst)
{
    const unsigned char *p = mem;
    for (cdt_count i = 0; i < count; i++, p += stride, dst += 20) {
        memcpy(dst, p, 12);
        memcpy(dst + 12, p + offsetof(struct_simple, d), 8);
    }
}
void unpack_fields(void *mem, cdt_count count, cdt_count stride, const unsigned char *src)
{
    unsigned char *p = mem;
    for (cdt_count i = 0; i < count; i++, p += stride, src += 20) {
        memcpy(p, src, 12);
        memcpy(p + offsetof(struct_simple, d), src + 12, 8);
    }
}

void manual_pack(obj *o, int slot)
{
    unsigned char *buf = o->manual + (size_t)slot * (size_t)o->pack_len;
    switch (o->k) {
    case K_SIMPLE:
        pack_fields(o->mem, o->count, sizeof(struct_simple), buf);
        break;
    case K_STRUCTVEC: {
        struct_vec *v = o->mem;
        unsigned char *d = buf;
        for (cdt_count i = 0; i < o->count; i++) {
            pack_fields(&v[i], 1, 0, d);
            memcpy(d + 20, v[i].data, sizeof(v[i].data));
            d += 20 + sizeof(v[i].data);
        }
        break;
    }
    case K_DOUBLEVEC: {
        unsigned char *d = buf;
        memcpy(d, o->dv.lens, (size_t)o->dv.n * 8);
        d += o->dv.n * 8;
        for (cdt_count i = 0; i < o->dv.n; i++) {
            memcpy(d, o->dv.data[i], (size_t)o->dv.lens[i] * 4);
            d += o->dv.lens[i] * 4;
        }
        break;
    }
    default:
        memcpy(buf, o->mem, (size_t)o->size);
    }
}

/* unpack into the object (double_vec: allocate it from the packed lengths, as a receiver
 * that does not know the shape must) */
void manual_unpack(obj *o, int slot)
{
    const unsigned char *buf = o->manual + (size_t)slot * (size_t)o->pack_len;
    switch (o->k) {
    case K_SIMPLE:
        unpack_fields(o->mem, o->count, sizeof(struct_simple), buf);
        break;
    case K_STRUCTVEC: {
        struct_vec *v = o->mem;
        const unsigned char *s = buf;
        for (cdt_count i = 0; i < o->count; i++) {
            unpack_fields(&v[i], 1, 0, s);
            memcpy(v[i].data, s + 20, sizeof(v[i].data));
            s += 20 + sizeof(v[i].data);
        }
        break;
    }
    case K_DOUBLEVEC: {
        double_vec *t = dv_target(o, slot);
        cdt_count n = o->dv.n;
        if (o->reuse && t->data != NULL) { /* the arrays of the message before: same shape */
            memcpy(t->lens, buf, (size_t)n * 8);
            const unsigned char *s = buf + n * 8;
            for (cdt_count i = 0; i < n; i++) {
                memcpy(t->data[i], s, (size_t)t->lens[i] * 4);
                s += t->lens[i] * 4;
            }
            break;
        }
        double_vec_clear(t);
        t->n = n;
        t->lens = malloc((size_t)n * 8);
        t->data = malloc((size_t)n * sizeof(int32_t *));
        memcpy(t->lens, buf, (size_t)n * 8);
        const unsigned char *s = buf + n * 8;
        for (cdt_count i = 0; i < n; i++) {
            t->data[i] = malloc((size_t)t->lens[i] * 4);
            memcpy(t->data[i], s, (size_t)t->lens[i] * 4);
            s += t->lens[i] * 4;
        }
        break;
    }
    default:
        memcpy(o->mem, buf, (size_t)o->size);
    }
}
