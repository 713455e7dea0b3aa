/*
 * cases_lane_yield.c - how a wait for the lane gives up its core (docs/TRANSPORT.md §10.3): a
 * progress call that finds the lane idle while objects are in flight yields only after
 * CDT__UCX_LANE_IDLE_SPINS such calls in a row. A yield at once cost milliseconds an object on a
 * busy machine (the core goes to another program for its time slice while the peer, on the
 * other core, had moved within microseconds).
 *
 * This program's sched_yield counts its calls and then yields (the library's calls resolve to
 * it: the executable, which exports it, comes first in the symbol lookup), so every other case
 * behaves as before.
 */
#include "cases.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static atomic_long yields;

__attribute__((visibility("default"))) int sched_yield(void)
{
    atomic_fetch_add(&yields, 1);
    return (int)syscall(SYS_sched_yield);
}

static const cdt_ucx_worker_params yield_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

enum { LY_N = 1 << 18 }; /* int64 values: 2 MiB, through the lane's data ring */

/* the client's 2 MiB send waits for the server, which does not progress for 1 s: each of the
 * client's first progress calls finds the lane idle with its object in flight */
static void yield_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* the server stops progressing now */
    int64_t *v = malloc(LY_N * sizeof(int64_t));
    CHECK(v != NULL);
    for (int64_t k = 0; k < LY_N; k++)
        v[k] = k;
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, v, LY_N, CDT_INT64, 3, &r));
    for (int i = 0; i < 8; i++) /* the send starts: it fills the ring and waits for room */
        cdt_ucx_worker_progress(p->w);
    long before = atomic_load(&yields);
    for (int i = 0; i < 100; i++)
        cdt_ucx_worker_progress(p->w);
    long spun = atomic_load(&yields) - before;
    fprintf(stderr, "[%d] yields in 100 idle progress calls: %ld\n", (int)getpid(), spun);
    CHECK(spun == 0); /* a yield at once: 100 */
    for (int i = 0; i < 1000; i++)
        cdt_ucx_worker_progress(p->w);
    long later = atomic_load(&yields) - before;
    fprintf(stderr, "[%d] yields in 1,100: %ld\n", (int)getpid(), later);
    CHECK(later > 0); /* a peer that shares this core still gets it */
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    free(v);
}

static void yield_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    wait_lane(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    usleep(1000 * 1000);
    int64_t *v = malloc(LY_N * sizeof(int64_t));
    CHECK(v != NULL);
    CHECK_RC(
        cdt_ucx_recv(p->w, v, LY_N, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int64_t k = 0; k < LY_N; k++)
        CHECK(v[k] == k);
    free(v);
}

int lane_yield_case(void)
{
    return run_pair(yield_server, yield_client, &yield_wp, &yield_wp, 0);
}
