/*
 * test_failinj_ucx.c - failure injection in the UCX transport's receive: every allocation of
 * libcdt during a receive fails in turn (see failinj.h). Two workers of one context in this
 * process, one thread: worker A sends, worker B receives; the test progresses both.
 *
 * For each run: A sends the object with tag 1; B receives it with the failure armed. The
 * receive must succeed with the right bytes or fail with CDT_ERR_NO_MEMORY; the send must then
 * complete (not hang); after a failed receive the same object sent again (tag 2) must be
 * received whole; a message left unmatched is received or canceled; nothing leaks.
 * Usage: test_failinj_ucx SCENARIO|all
 */
#include "failinj.h"

#include <cdt_sobj.h>
#include <cdt_ucx.h>
#include <stdlib.h>
#include <string.h>

static cdt_ucx_context ctx;
static cdt_ucx_worker wa, wb;
static cdt_ucx_ep ep;
static void *wb_addr;
static size_t wb_addr_len;

enum { DEADLINE_SPINS = 2000000 };

/* progress until `r` completes (testing r progresses its worker, armed or not; `other`, the
 * peer's worker, is progressed without the failure); returns its status, CDT_INPROGRESS when
 * it never completes */
static int complete(cdt_ucx_request r, cdt_ucx_worker other, int armed)
{
    for (long i = 0; i < DEADLINE_SPINS; i++) {
        failinj.armed = armed;
        int st = cdt_ucx_request_test(r);
        failinj.armed = 0;
        if (st != CDT_INPROGRESS)
            return st;
        cdt_ucx_worker_progress(other);
    }
    return CDT_INPROGRESS;
}

typedef struct obj_kind {
    const char *name;
    int is_sobj;
} obj_kind;

/* the objects: a serialized object (regions of 100 KiB: zero-copy, and 40 bytes: gathered),
 * and a derived type over 300 KiB (its contiguous block is a region) */
static unsigned char inband[333];
static double big[12800];
static int32_t small_buf[10];
static cdt_sobj_buffer bufs[2];
static cdt_sobj sobj_src;
static cdt_type t_vec;
static int64_t *vec_src;
enum { VEC_N = 40000 };

static int prepare_sobj(void *arg, cdt_decoder d)
{
    int rc = cdt_sobj_recv_prepare(arg, d);
    return rc != CDT_SUCCESS ? rc : cdt_decoder_bind(d, arg, 1, cdt_sobj_type());
}

/* one receive with the failure armed, into a fresh object; 1 when it succeeded and matched */
static int recv_into(int is_sobj, cdt_ucx_tag tag, int armed, int *status)
{
    cdt_sobj r = {0};
    int64_t *v = calloc(VEC_N, sizeof(*v));
    cdt_ucx_recv_params params = {
        .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = prepare_sobj, .prepare_arg = &r};
    cdt_ucx_request req = NULL;
    int ok = 0, st;
    FI_CHECK(v != NULL);
    if (v == NULL)
        return 0;
    failinj.armed = armed;
    st = is_sobj ? cdt_ucx_irecv(wb, NULL, 0, NULL, tag, CDT_UCX_TAG_MASK_FULL, &params, &req)
                 : cdt_ucx_irecv(wb, v, 1, t_vec, tag, CDT_UCX_TAG_MASK_FULL, NULL, &req);
    failinj.armed = 0;
    if (st == CDT_SUCCESS)
        st = complete(req, wa, armed);
    if (st == CDT_INPROGRESS) {
        failinj_problem(__FILE__, __LINE__, "receive never completed", 0);
        cdt_ucx_request_cancel(req);
        st = complete(req, wa, 0);
    }
    if (req != NULL && st != CDT_INPROGRESS)
        FI_CHECK(cdt_ucx_request_free(req) == CDT_SUCCESS);
    if (st == CDT_SUCCESS) {
        if (is_sobj)
            ok = r.inband_len == (cdt_count)sizeof(inband) && r.nbuffers == 2 &&
                 memcmp(r.inband, inband, sizeof(inband)) == 0 &&
                 r.buffers[0].len == (cdt_count)sizeof(big) &&
                 memcmp(r.buffers[0].base, big, sizeof(big)) == 0 &&
                 r.buffers[1].len == (cdt_count)sizeof(small_buf) &&
                 memcmp(r.buffers[1].base, small_buf, sizeof(small_buf)) == 0;
        else
            ok = memcmp(v, vec_src, VEC_N * sizeof(*v)) == 0;
        FI_CHECK(ok);
    }
    cdt_sobj_release(&r);
    free(v);
    *status = st;
    return ok;
}

static void run_kind(int is_sobj)
{
    cdt_ucx_request s1 = NULL, s2 = NULL; /* a send that never completes is released with the
                                             worker at exit */
    int st;
    const void *buf = is_sobj ? (const void *)&sobj_src : (const void *)vec_src;
    cdt_type type = is_sobj ? cdt_sobj_type() : t_vec;
    if (cdt_ucx_isend(ep, buf, 1, type, 1, &s1) != CDT_SUCCESS) {
        failinj_problem(__FILE__, __LINE__, "isend failed", 0);
        return;
    }
    int before = failinj.fired;
    recv_into(is_sobj, 1, 1, &st);
    int met = !before && failinj.fired;
    if (st != CDT_SUCCESS && (!met || st != CDT_ERR_NO_MEMORY))
        failinj_problem(__FILE__, __LINE__,
                        met ? "receive met the failure, returned"
                            : "receive failed with no failure injected",
                        st);
    if (st == CDT_SUCCESS) {
        FI_CHECK(complete(s1, wb, 0) == CDT_SUCCESS);
        cdt_ucx_request_free(s1);
        return;
    }
    if (st != CDT_SUCCESS) {
        /* the same receive, without the failure, of the object sent again */
        FI_CHECK(cdt_ucx_isend(ep, buf, 1, type, 2, &s2) == CDT_SUCCESS);
        int st2;
        if (!recv_into(is_sobj, 2, 0, &st2))
            failinj_problem(__FILE__, __LINE__, "receive again without the failure", st2);
        if (s2 != NULL && complete(s2, wb, 0) == CDT_SUCCESS)
            cdt_ucx_request_free(s2);
        else
            failinj_problem(__FILE__, __LINE__, "second send did not complete", 0);
        /* a tag-1 message the failed receive did not match is still there: take it */
        cdt_sobj r = {0};
        int64_t *v = calloc(VEC_N, sizeof(*v));
        cdt_ucx_recv_params params = {
            .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = prepare_sobj, .prepare_arg = &r};
        cdt_ucx_request q = NULL;
        if (v != NULL &&
            (is_sobj ? cdt_ucx_irecv(wb, NULL, 0, NULL, 1, CDT_UCX_TAG_MASK_FULL, &params, &q)
                     : cdt_ucx_irecv(wb, v, 1, t_vec, 1, CDT_UCX_TAG_MASK_FULL, NULL, &q)) ==
                CDT_SUCCESS) {
            for (int i = 0; i < 20000 && cdt_ucx_request_test(q) == CDT_INPROGRESS; i++)
                cdt_ucx_worker_progress(wa);
            if (cdt_ucx_request_test(q) == CDT_INPROGRESS)
                cdt_ucx_request_cancel(q);
            int qs = complete(q, wa, 0);
            FI_CHECK(qs == CDT_SUCCESS || qs == CDT_ERR_CANCELED);
            if (qs == CDT_SUCCESS && !is_sobj)
                FI_CHECK(memcmp(v, vec_src, VEC_N * sizeof(*v)) == 0);
            if (qs != CDT_INPROGRESS)
                cdt_ucx_request_free(q);
        }
        cdt_sobj_release(&r);
        free(v);
        /* the first send completes whatever became of its message (received now, or
         * abandoned by the failed receive) */
        if (complete(s1, wb, 0) == CDT_INPROGRESS) {
            failinj_problem(__FILE__, __LINE__,
                            "the send stays pending after the receiver's failed receive", 0);
            /* closing the endpoint ends the send; a fresh endpoint for the next run */
            cdt_ucx_ep_close(ep, 100);
            ep = NULL;
            if (complete(s1, wb, 0) == CDT_INPROGRESS)
                failinj_problem(__FILE__, __LINE__, "the send stays pending after ep_close", 0);
            else
                cdt_ucx_request_free(s1);
            if (cdt_ucx_ep_create_from_address(wa, wb_addr, wb_addr_len, &ep) != CDT_SUCCESS)
                failinj_problem(__FILE__, __LINE__, "endpoint again", 0);
        } else {
            cdt_ucx_request_free(s1);
        }
    }
}

static void sc_recv_sobj(void)
{
    run_kind(1);
}

static void sc_recv_derived(void)
{
    run_kind(0);
}

#define ALLOC (1 << FAILINJ_ALLOC)
static const failinj_scenario scenarios[] = {
    {"ucx_recv_sobj", sc_recv_sobj, ALLOC},
    {"ucx_recv_derived", sc_recv_derived, ALLOC},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(inband); i++)
        inband[i] = (unsigned char)(i * 7 + 1);
    for (int i = 0; i < 12800; i++)
        big[i] = i * 0.5;
    for (int i = 0; i < 10; i++)
        small_buf[i] = -i;
    bufs[0] = (cdt_sobj_buffer){big, sizeof(big), CDT_KIND_DOUBLE};
    bufs[1] = (cdt_sobj_buffer){small_buf, sizeof(small_buf), CDT_KIND_INT32};
    sobj_src =
        (cdt_sobj){.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    vec_src = malloc(VEC_N * sizeof(*vec_src));
    if (vec_src == NULL)
        return 1;
    for (int i = 0; i < VEC_N; i++)
        vec_src[i] = (int64_t)i * 1000003;
    /* no buffer cache: every run allocates the same way */
    cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_BUFFER_CACHE,
                                .buffer_cache_bytes = 0};
    if (cdt_ucx_context_create(NULL, &ctx) != CDT_SUCCESS ||
        cdt_ucx_worker_create(ctx, &wp, &wa) != CDT_SUCCESS ||
        cdt_ucx_worker_create(ctx, &wp, &wb) != CDT_SUCCESS ||
        cdt_ucx_worker_address(wb, &wb_addr, &wb_addr_len) != CDT_SUCCESS ||
        cdt_ucx_ep_create_from_address(wa, wb_addr, wb_addr_len, &ep) != CDT_SUCCESS ||
        cdt_type_contiguous(VEC_N, CDT_INT64, &t_vec) != CDT_SUCCESS ||
        cdt_type_commit(&t_vec) != CDT_SUCCESS) {
        printf("skipped: UCX setup failed\n");
        return 77;
    }
    int rc = failinj_main(argc, argv, scenarios, (int)(sizeof(scenarios) / sizeof(scenarios[0])));
    cdt_ucx_worker_address_free(wb, wb_addr);
    if (ep != NULL)
        cdt_ucx_ep_close(ep, 2000);
    cdt_ucx_worker_destroy(wa);
    cdt_ucx_worker_destroy(wb);
    cdt_ucx_context_destroy(ctx);
    cdt_type_free(&t_vec);
    free(vec_src);
    return rc;
}
