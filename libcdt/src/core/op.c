/*
 * op.c - the operation engine: one resumable pack/unpack driver for every kind of type.
 * Custom types go through their callbacks (with contract checks, inorder buffering and
 * exactly-once state_free); predefined and derived types go straight to the kernels of their
 * committed form (pack_kernels.c), with no allocation.
 */
#include "op.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cdt__pending {
    cdt__pending *next;
    cdt_count offset, len;
    unsigned char data[];
};

int cdt__op_init(struct cdt_op_s *op, void *buf, cdt_count count, cdt_type type, bool is_pack)
{
    if (type == NULL || count < 0)
        return CDT_ERR_INVALID_ARG;
    if (!(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED;
    /* every field (op.h) set one by one: a memset of the whole struct was a `rep stos`, the
     * largest part of a small operation's fixed cost */
    op->type = type;
    op->is_pack = is_pack;
    op->buf = buf;
    op->count = count;
    op->state = NULL;
    op->form = NULL;
    op->size_known = false;
    op->packed_size = 0;
    op->next_offset = 0;
    op->arrived.items = NULL; /* the empty set (ranges.h); inline_items unused until then */
    op->arrived.n = op->arrived.cap = op->arrived.total = 0;
    op->pending = NULL;
    op->delivered = 0;
    op->retry_offset = 0;
    op->retry_end = -1;
    op->regions_known = false;
    op->region_count = 0;
    op->region_bases = NULL;
    op->region_lens = NULL;
    op->region_types = NULL;

    int rc;
    if (type->cls == CDT__CLASS_CUSTOM) {
        if (!is_pack && type->custom->unpack_fn == NULL)
            return CDT_ERR_UNSUPPORTED;
        if (type->custom->state_fn != NULL) {
            rc = type->custom->state_fn(type->custom->context, buf, count, &op->state);
            if (rc != CDT_SUCCESS)
                return rc;
        }
    } else {
        if (cdt__mul_overflows(count, type->size, &op->packed_size))
            return CDT_ERR_OVERFLOW;
        op->size_known = true;
        op->regions_known = true; /* layout types have no regions */
        struct cdt__node *form;
        rc = type->ops->form(type, &form);
        if (rc != CDT_SUCCESS)
            return rc;
        op->form = form;
    }
    cdt__type_retain(type);
    return CDT_SUCCESS;
}

/* One finished operation's storage is kept per thread for that thread's next begin: a
 * message-sized pack or unpack then costs no allocator call and no atomic operation (begin/end
 * around one fragment is the common pattern). A thread-specific key frees the kept storage when
 * its thread exits (the main thread's stays reachable until the process ends). Sanitizer
 * builds skip the cache, so that a use after cdt_op_end is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define CDT__OP_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define CDT__OP_CACHE 0
#endif
#endif
#ifndef CDT__OP_CACHE
#define CDT__OP_CACHE 1
#endif

#if CDT__OP_CACHE
/* the default (dynamic) TLS model: libcdt is often dlopen()ed (Python's ctypes), where the
 * initial-exec model would compete for the loader's small static TLS reserve */
#define CDT__TLS _Thread_local
static CDT__TLS struct cdt_op_s *op_spare; /* this thread's kept storage */
static CDT__TLS bool op_spare_armed;       /* the key will free op_spare at thread exit */
static pthread_key_t op_spare_key;
static pthread_once_t op_spare_once = PTHREAD_ONCE_INIT;
static bool op_spare_key_ok;

static void op_spare_exit(void *unused)
{
    (void)unused;
    free(op_spare);
    op_spare = NULL;
}

static void op_spare_key_make(void)
{
    op_spare_key_ok = pthread_key_create(&op_spare_key, op_spare_exit) == 0;
}

/* an unloaded library must leave no destructor behind for the threads still running. Only
 * the unloading thread's spare can be freed here: the spares of other threads still alive at
 * dlclose stay allocated (one operation's storage, about 150 bytes, per such thread): a
 * bounded leak, accepted rather than a global registry of spares kept under a lock as threads
 * come and go (docs/ENGINE.md, "Cost of an operation": the cache saves 118 instructions per
 * operation). */
__attribute__((destructor)) static void op_spare_unload(void)
{
    if (op_spare_key_ok)
        pthread_key_delete(op_spare_key);
    op_spare_exit(NULL);
}
#endif

static cdt_op op_alloc(void)
{
#if CDT__OP_CACHE
    cdt_op op = op_spare;
    if (op != NULL) {
        op_spare = NULL;
        return op;
    }
#endif
    return malloc(sizeof(struct cdt_op_s));
}

static void op_dealloc(cdt_op op)
{
#if CDT__OP_CACHE
    if (op_spare == NULL) {
        if (!op_spare_armed) {
            pthread_once(&op_spare_once, op_spare_key_make);
            if (!op_spare_key_ok || pthread_setspecific(op_spare_key, &op_spare_armed) != 0) {
                free(op);
                return;
            }
            op_spare_armed = true;
        }
        op_spare = op;
        return;
    }
#endif
    free(op);
}

static int op_begin(void *buf, cdt_count count, cdt_type type, bool is_pack, cdt_op *out)
{
    if (out == NULL)
        return CDT_ERR_INVALID_ARG;
    cdt_op op = op_alloc();
    if (op == NULL)
        return CDT_ERR_NO_MEMORY;
    int rc = cdt__op_init(op, buf, count, type, is_pack);
    if (rc != CDT_SUCCESS) {
        op_dealloc(op);
        return rc;
    }
    *out = op;
    return CDT_SUCCESS;
}

int cdt_op_pack_begin(const void *buf, cdt_count count, cdt_type type, cdt_op *op)
{
    return op_begin((void *)buf, count, type, true, op);
}

int cdt_op_unpack_begin(void *buf, cdt_count count, cdt_type type, cdt_op *op)
{
    return op_begin(buf, count, type, false, op);
}

static int op_query(cdt_op op)
{
    if (op->size_known)
        return CDT_SUCCESS;
    cdt_count size = -1;
    int rc = op->type->custom->query_fn(op->state, op->buf, op->count, &size);
    if (rc != CDT_SUCCESS)
        return rc;
    if (size < 0)
        return CDT_ERR_CALLBACK;
    op->packed_size = size;
    op->size_known = true;
    return CDT_SUCCESS;
}

int cdt_op_packed_size(cdt_op op, cdt_count *packed_size)
{
    if (op == NULL || packed_size == NULL)
        return CDT_ERR_INVALID_ARG;
    int rc = op_query(op);
    if (rc == CDT_SUCCESS)
        *packed_size = op->packed_size;
    return rc;
}

int cdt__op_set_stream_size(cdt_op op, cdt_count size)
{
    if (op->is_pack || size < 0)
        return CDT_ERR_INVALID_ARG;
    if (op->type->cls != CDT__CLASS_CUSTOM) {
        /* a layout receives at most its own size; less is a short message, as in MPI */
        if (size > op->packed_size)
            return CDT_ERR_TRUNCATED;
    }
    if (op->arrived.n > 0 && op->arrived.items[op->arrived.n - 1].end > size)
        return CDT_ERR_TRUNCATED;
    op->packed_size = size;
    op->size_known = true;
    return CDT_SUCCESS;
}

int cdt_op_pack(cdt_op op, cdt_count offset, void *dst, cdt_count dst_size, cdt_count *used)
{
    if (op == NULL || used == NULL || offset < 0 || dst_size < 0 || (dst == NULL && dst_size > 0))
        return CDT_ERR_INVALID_ARG;
    if (!op->is_pack)
        return CDT_ERR_ORDER;
    int rc = op_query(op);
    if (rc != CDT_SUCCESS)
        return rc;
    if (offset > op->packed_size)
        return CDT_ERR_INVALID_ARG;
    cdt_count want = op->packed_size - offset;
    if (want > dst_size)
        want = dst_size;
    if (want == 0) {
        *used = 0;
        return CDT_SUCCESS;
    }

    if (op->form != NULL) {
        op->type->ops->pack(op->form, op->type->extent, op->buf, offset, want, dst);
        *used = want;
        return CDT_SUCCESS;
    }

    const cdt_custom_params *c = op->type->custom;
    if (c->inorder && offset != op->next_offset)
        return CDT_ERR_ORDER;
    cdt_count got = -1;
    rc = c->pack_fn(op->state, op->buf, op->count, offset, dst, want, &got);
    if (rc != CDT_SUCCESS)
        return rc;
    /* a callback that makes no progress or claims more than it was given would make the
     * caller loop forever or read past dst */
    if (got <= 0 || got > want)
        return CDT_ERR_CALLBACK;
    op->next_offset = offset + got;
    *used = got;
    return CDT_SUCCESS;
}

static int deliver(cdt_op op, cdt_count offset, const void *src, cdt_count len)
{
    int rc = CDT_SUCCESS;
    if (op->form != NULL)
        op->type->ops->unpack(op->form, op->type->extent, op->buf, offset, len, src);
    else
        rc = op->type->custom->unpack_fn(op->state, op->buf, op->count, offset, src, len);
    if (rc == CDT_SUCCESS) {
        op->delivered += len;
        op->next_offset = offset + len;
    }
    return rc;
}

/* inorder custom types: keep an early fragment until the bytes before it have arrived */
static int hold(cdt_op op, cdt_count offset, const void *src, cdt_count len)
{
    cdt__pending *p = malloc(sizeof(*p) + (size_t)len);
    if (p == NULL)
        return CDT_ERR_NO_MEMORY;
    p->offset = offset;
    p->len = len;
    memcpy(p->data, src, (size_t)len);
    cdt__pending **at = &op->pending;
    while (*at != NULL && (*at)->offset < offset)
        at = &(*at)->next;
    p->next = *at;
    *at = p;
    return CDT_SUCCESS;
}

static int drain(cdt_op op)
{
    while (op->pending != NULL && op->pending->offset == op->next_offset) {
        cdt__pending *p = op->pending;
        int rc = deliver(op, p->offset, p->data, p->len);
        if (rc != CDT_SUCCESS)
            return rc;
        op->pending = p->next;
        free(p);
    }
    return CDT_SUCCESS;
}

int cdt__op_deliver_whole(cdt_op op, const void *src, cdt_count len)
{
    int rc = cdt__op_set_stream_size(op, len);
    if (rc == CDT_SUCCESS && len > 0)
        rc = deliver(op, 0, src, len);
    return rc;
}

int cdt__op_unpack_whole(void *buf, cdt_count count, cdt_type type, const void *src, cdt_count len)
{
    struct cdt_op_s op;
    int rc = cdt__op_init(&op, buf, count, type, false);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt__op_deliver_whole(&op, src, len);
    if (rc == CDT_SUCCESS && op.form == NULL) {
        /* a custom receiver confirms that it expects no regions, as a decoder's finish does */
        rc = cdt__op_fetch_regions(&op);
        if (rc == CDT_SUCCESS && op.region_count != 0)
            rc = CDT_ERR_FRAME_MISMATCH;
    }
    int frc = cdt__op_fini(&op);
    return rc != CDT_SUCCESS ? rc : frc;
}

int cdt_op_unpack(cdt_op op, cdt_count offset, const void *src, cdt_count src_size)
{
    if (op == NULL || offset < 0 || src_size < 0 || (src == NULL && src_size > 0))
        return CDT_ERR_INVALID_ARG;
    if (op->is_pack)
        return CDT_ERR_ORDER;
    cdt_count end;
    if (cdt__add_overflows(offset, src_size, &end))
        return CDT_ERR_OVERFLOW;
    if (op->size_known && end > op->packed_size)
        return CDT_ERR_TRUNCATED;
    bool inorder = op->form == NULL && op->type->custom->inorder;
    int rc;
    if (src_size > 0 && offset == op->retry_offset && end == op->retry_end) {
        /* the fragment of a call that took it and then failed delivering held fragments:
         * giving it again resumes that delivery */
        if ((rc = drain(op)) == CDT_SUCCESS)
            op->retry_end = -1;
        return rc;
    }
    /* held fragments whose delivery failed before are tried again first */
    rc = inorder ? drain(op) : CDT_SUCCESS;
    if (rc != CDT_SUCCESS || src_size == 0) {
        if (rc == CDT_SUCCESS)
            op->retry_end = -1; /* delivered: nothing to resume any more */
        return rc;
    }
    op->retry_end = -1;
    /* the range is recorded only once its bytes were delivered or held: after a failure the
     * same fragment can be given again */
    rc = cdt__ranges_check(&op->arrived, offset, end);
    if (rc != CDT_SUCCESS)
        return rc == CDT_ERR_INVALID_ARG ? CDT_ERR_TRUNCATED : rc; /* overlap: cdt.h */
    if (inorder && offset != op->next_offset)
        rc = hold(op, offset, src, src_size);
    else
        rc = deliver(op, offset, src, src_size);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt__ranges_add(&op->arrived, offset, end); /* cannot fail after the check */
    if (!inorder || (rc = drain(op)) == CDT_SUCCESS)
        return CDT_SUCCESS;
    op->retry_offset = offset;
    op->retry_end = end;
    return rc;
}

int cdt_op_unpacked_bytes(cdt_op op, cdt_count *bytes)
{
    if (op == NULL || bytes == NULL)
        return CDT_ERR_INVALID_ARG;
    *bytes = op->delivered;
    return CDT_SUCCESS;
}

void cdt__op_move(struct cdt_op_s *dst, const struct cdt_op_s *src)
{
    *dst = *src;
    if (src->arrived.items == src->arrived.inline_items)
        dst->arrived.items = dst->arrived.inline_items;
    if (src->region_bases == src->region_inline_bases) {
        dst->region_bases = dst->region_inline_bases;
        dst->region_lens = dst->region_inline_lens;
        dst->region_types = dst->region_inline_types;
    }
}

int cdt__op_fini(struct cdt_op_s *op)
{
    int rc = CDT_SUCCESS;
    if (op->type->cls == CDT__CLASS_CUSTOM && op->type->custom->state_free_fn != NULL)
        rc = op->type->custom->state_free_fn(op->state);
    while (op->pending != NULL) {
        cdt__pending *p = op->pending;
        op->pending = p->next;
        free(p);
    }
    if (op->arrived.items != NULL)
        cdt__ranges_free(&op->arrived);
    if (op->region_bases != op->region_inline_bases)
        free(op->region_bases); /* one block with the lens and types (or NULL) */
    cdt__type_release(op->type);
    return rc;
}

int cdt_op_end(cdt_op op)
{
    if (op == NULL)
        return CDT_SUCCESS;
    int rc = cdt__op_fini(op);
    op_dealloc(op);
    return rc;
}

int cdt__layout_range_iov(void *buf, cdt_count count, cdt_type type, cdt_count start, cdt_count len,
                          cdt_count first, cdt_count max, cdt_iov *iov, cdt_count *n_out)
{
    return type->ops->range_iov(buf, count, type, start, len, first, max, iov, n_out);
}
