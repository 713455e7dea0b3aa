/*
 * transfer_generic.c - the ucx_generic method: UCX generic-datatype callbacks whose
 * pack copies the frame (cdt_frame_gather) and whose unpack feeds the decoder
 * (cdt_decoder_write); the states they work on are in bench_transfer.h.
 */
#include "bench_transfer.h"

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
ucp_generic_dt_ops_t gen_ops = {
    .start_pack = gen_start_pack,
    .start_unpack = gen_start_unpack,
    .packed_size = gen_packed_size,
    .pack = gen_pack,
    .unpack = gen_unpack,
    .finish = gen_finish,
};
