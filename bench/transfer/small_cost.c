/*
 * small_cost.c - instructions per small object through libcdt's transport, next to the same
 * bytes as one raw UCX message: for callgrind, which counts instructions whatever the
 * machine's load (bench/transfer/small_cost runs it twice and prints the difference per
 * object).
 *
 * One process, two workers of one context, an endpoint from the first to the second (made
 * from the second's address, so UCX picks the transport it would between processes of this
 * machine). Each round sends one object from worker A and receives it at worker B, both
 * progressed by this thread; a round of `raw` is ucp_tag_send_nbx + ucp_tag_recv_nbx of the
 * same packed byte count. After WARM_ROUNDS uncounted rounds, the measured rounds run inside
 * measured_round, which callgrind's --toggle-collect counts alone (no start-up, no shutdown).
 *
 * usage: bench_small_cost METHOD ROUNDS [BYTES [CASE [SIDE]]]
 *   METHOD: libcdt | raw; BYTES: bytes of the object (default 64); CASE: struct_simple (the
 *   default: an array of BYTES / 32 elements) or double_vec_1k (arrays of 256 int32, one
 *   shorter array for less than 1 KiB; each array a region, allocated by the receiving type);
 *   SIDE: send or recv, counted alone (see SIDE below)
 */
#include "cdt_ucx.h"
#include "seed_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif

#define OK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cdt_err_name(rc_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void raw_cb(void *req, ucs_status_t st, void *user)
{
    (void)req;
    (void)st;
    *(int *)user = 1;
}

static void raw_recv_cb(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info, void *user)
{
    (void)req;
    (void)st;
    (void)info;
    *(int *)user = 1;
}

typedef struct round_args {
    int raw;
    cdt_ucx_worker a, b;
    cdt_ucx_ep ep;
    void *src, *dst;
    int dv;   /* double_vec: the received arrays are freed after each round */
    int side; /* the side whose calls callgrind counts in measured rounds (SIDE_*), or 0 */
    long n;
    cdt_type t;
    cdt_count packed;
} round_args;

#define WARM_ROUNDS 200

/* Counting one side: run with --collect-atstart=no and SIDE send or recv; the program turns
 * collection on around that side's calls of the measured rounds only (post, test and free of
 * its request, the progress of its worker). Without callgrind's header, no side is counted. */
enum { SIDE_SEND = 1, SIDE_RECV = 2 };
#ifdef CALLGRIND_TOGGLE_COLLECT
#define SIDE(x, which, call)                                                                       \
    do {                                                                                           \
        if ((x)->side == (which))                                                                  \
            CALLGRIND_TOGGLE_COLLECT;                                                              \
        call;                                                                                      \
        if ((x)->side == (which))                                                                  \
            CALLGRIND_TOGGLE_COLLECT;                                                              \
    } while (0)
#else
#define SIDE(x, which, call) call
#endif

/* one object sent by worker a and received by worker b */
static void one_round(const round_args *x)
{
    if (x->raw) {
        int sent = 0, got = 0;
        ucp_request_param_t sp = {.op_attr_mask =
                                      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                                  .cb.send = raw_cb,
                                  .user_data = &sent};
        ucp_request_param_t rp = {.op_attr_mask =
                                      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
                                  .cb.recv = raw_recv_cb,
                                  .user_data = &got};
        void *s, *r;
        SIDE(x, SIDE_SEND,
             s = ucp_tag_send_nbx(cdt_ucx_ep_handle(x->ep), x->src, (size_t)x->packed, 7, &sp));
        if (s == NULL)
            sent = 1;
        SIDE(x, SIDE_RECV,
             r = ucp_tag_recv_nbx(cdt_ucx_worker_handle(x->b), x->dst, (size_t)x->packed, 7,
                                  UINT64_MAX, &rp));
        if (r == NULL)
            got = 1;
        while (!sent || !got) {
            SIDE(x, SIDE_SEND, ucp_worker_progress(cdt_ucx_worker_handle(x->a)));
            SIDE(x, SIDE_RECV, ucp_worker_progress(cdt_ucx_worker_handle(x->b)));
        }
        if (s != NULL && !UCS_PTR_IS_ERR(s))
            SIDE(x, SIDE_SEND, ucp_request_free(s));
        if (r != NULL && !UCS_PTR_IS_ERR(r))
            SIDE(x, SIDE_RECV, ucp_request_free(r));
        return;
    }
    cdt_ucx_request s, r;
    SIDE(x, SIDE_SEND, OK(cdt_ucx_isend(x->ep, x->src, (cdt_count)x->n, x->t, 7, &s)));
    SIDE(
        x, SIDE_RECV,
        OK(cdt_ucx_irecv(x->b, x->dst, (cdt_count)x->n, x->t, 7, CDT_UCX_TAG_MASK_FULL, NULL, &r)));
    int rs = CDT_INPROGRESS, rr = CDT_INPROGRESS;
    while (rs == CDT_INPROGRESS || rr == CDT_INPROGRESS) {
        if (rs == CDT_INPROGRESS)
            SIDE(x, SIDE_SEND, rs = cdt_ucx_request_test(s));
        if (rr == CDT_INPROGRESS)
            SIDE(x, SIDE_RECV, rr = cdt_ucx_request_test(r));
    }
    OK(rs);
    OK(rr);
    SIDE(x, SIDE_SEND, OK(cdt_ucx_request_free(s)));
    SIDE(x, SIDE_RECV, OK(cdt_ucx_request_free(r)));
    if (x->dv)
        double_vec_clear(x->dst);
}

/* the rounds callgrind counts (--toggle-collect=measured_round) */
__attribute__((noinline)) void measured_round(const round_args *x);
__attribute__((noinline)) void measured_round(const round_args *x)
{
    one_round(x);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s libcdt|raw ROUNDS [BYTES]\n", argv[0]);
        return 2;
    }
    int raw = strcmp(argv[1], "raw") == 0;
    long rounds = atol(argv[2]);
    long bytes = argc > 3 ? atol(argv[3]) : 64;
    int dv = argc > 4 && strcmp(argv[4], "double_vec_1k") == 0;
    const char *sidearg = argc > 5 ? argv[5] : "";
    int side = strcmp(sidearg, "send") == 0   ? SIDE_SEND
               : strcmp(sidearg, "recv") == 0 ? SIDE_RECV
                                              : 0;
    if (argc > 4 && !dv && strcmp(argv[4], "struct_simple") != 0) {
        fprintf(stderr, "unknown case %s\n", argv[4]);
        return 2;
    }
    long n = bytes / 32 > 0 ? bytes / 32 : 1; /* struct_simple: 32-byte elements */
    cdt_ucx_context ctx;
    cdt_ucx_worker a, b;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &a));
    OK(cdt_ucx_worker_create(ctx, NULL, &b));
    void *addr;
    size_t addr_len;
    OK(cdt_ucx_worker_address(b, &addr, &addr_len));
    cdt_ucx_ep ep;
    OK(cdt_ucx_ep_create_from_address(a, addr, addr_len, &ep));
    cdt_ucx_worker_address_free(b, addr);
    void *src, *dst;
    cdt_type t;
    cdt_count packed;
    double_vec dsrc = {0}, ddst = {0};
    if (dv) {
        long ints = bytes / 4 > 0 ? bytes / 4 : 1;
        OK(double_vec_init(&dsrc, ints > 256 ? ints / 256 : 1, ints > 256 ? 256 : ints, 1));
        src = &dsrc;
        dst = &ddst;
        t = double_vec_type();
        n = 1;
        packed = 4 * (ints > 256 ? ints / 256 * 256 : ints);
    } else {
        struct_simple *ss = calloc((size_t)n, sizeof(*ss));
        if (ss == NULL)
            return 1;
        struct_simple_fill(ss, (cdt_count)n, 1);
        src = ss;
        dst = calloc((size_t)n, sizeof(*ss));
        t = struct_simple_type();
        packed = 20 * (cdt_count)n; /* struct_simple packs 20 of its 32 bytes */
    }
    if (dv && raw) { /* raw: the same bytes as one contiguous message into a reused buffer */
        src = calloc(1, (size_t)packed);
        dst = calloc(1, (size_t)packed);
    }
    if (src == NULL || dst == NULL)
        return 1;
    round_args ra = {raw, a, b, ep, src, dst, dv && !raw, 0, n, t, packed};
    for (long i = 0; i < WARM_ROUNDS; i++) /* pools, caches and lazy binding: not counted */
        one_round(&ra);
    ra.side = side;
    for (long i = 0; i < rounds; i++)
        measured_round(&ra);
    cdt_ucx_protocol proto = CDT_UCX_PROTOCOL_SPLIT;
    cdt_ucx_ep_protocol(ep, &proto);
    char lanes[256] = "";
    cdt_ucx_ep_transports(ep, lanes, sizeof(lanes));
    fprintf(stderr, "%s, %ld rounds of %lld packed bytes; transports %s; protocol %s\n", argv[1],
            rounds, (long long)packed, lanes,
            proto == CDT_UCX_PROTOCOL_SINGLE ? "single" : "split");
    double_vec_clear(&dsrc);
    if (!dv || raw) {
        free(src);
        free(dst);
    }
    cdt_ucx_ep_close(ep, 1000);
    cdt_ucx_worker_destroy(a);
    cdt_ucx_worker_destroy(b);
    cdt_ucx_context_destroy(ctx);
    return 0;
}
