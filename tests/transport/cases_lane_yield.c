/*
 * cases_lane_yield.c - how a wait for the lane gives up its core (docs/TRANSPORT.md §10.3,
 * Waiting). With the two processes on two CPUs, a progress call that finds the lane idle while
 * objects are in flight yields only after CDT__UCX_LANE_IDLE_SPINS such calls in a row: a yield
 * at once cost milliseconds an object on a busy machine (the core goes to another program for
 * its time slice while the peer, on the other core, had moved within microseconds). With both
 * on one CPU (lane_yield_shared), every such call yields: the peer waits for that very core,
 * and spinning out the idle calls first held it from the peer once a hand-over.
 *
 * This program's sched_yield counts its calls and then yields (the library's calls resolve to
 * it: the executable, which exports it, comes first in the symbol lookup), so every other case
 * behaves as before.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "cases.h"

#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static atomic_long yields;

__attribute__((visibility("default"))) int sched_yield(void)
{
    atomic_fetch_add(&yields, 1);
    return (int)syscall(SYS_sched_yield);
}

/* the CPUs each side runs on (set before the fork); -1: not pinned */
static int server_cpu = -1, client_cpu = -1;

static void pin(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK(sched_setaffinity(0, sizeof(set), &set) == 0);
}

/* the first `n` CPUs this process may run on into cpus[]; how many there are (at most n) */
static int allowed_cpus(int *cpus, int n)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    int got = 0;
    for (int c = 0; c < CPU_SETSIZE && got < n; c++)
        if (CPU_ISSET(c, &set))
            cpus[got++] = c;
    return got;
}

static const cdt_ucx_worker_params yield_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

enum { LY_N = 1 << 18 }; /* int64 values: 2 MiB, through the lane's data ring */

/* the client's word that it counted its calls (0: the idle calls of its send, 1: those of its
 * receive): the server does not progress until then. A server that slept 1 s instead had
 * granted the send before a client kept off the CPU that long made its calls (3 of them then
 * moved data and did not yield: 97 of 100, UCX 1.22 at load 15). */
static int ly_word[2][2] = {{-1, -1}, {-1, -1}};

static void ly_say(int which)
{
    CHECK(write(ly_word[which][1], "c", 1) == 1);
}

/* the server waits without progress for the client's word (T_TIMEOUT_MS at most) */
static void ly_hear(int which)
{
    struct pollfd pfd = {.fd = ly_word[which][0], .events = POLLIN};
    CHECK(poll(&pfd, 1, T_TIMEOUT_MS) == 1);
    char c;
    CHECK(read(ly_word[which][0], &c, 1) == 1);
}

/* the client's 2 MiB send waits for the server, which does not progress until the client
 * counted: each of the client's first progress calls finds the lane idle with its object in
 * flight */
static void yield_client(peer *p)
{
    pin(client_cpu);
    bool shared = client_cpu == server_cpu;
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
    fprintf(stderr, "[%d] yields in 100 idle progress calls (%s): %ld\n", (int)getpid(),
            shared ? "one CPU" : "two CPUs", spun);
    if (shared) {
        CHECK(spun == 100); /* the peer last ran here: each idle call lets it run */
    } else {
        CHECK(spun == 0); /* a yield at once: 100 */
    }
    for (int i = 0; i < 1000; i++)
        cdt_ucx_worker_progress(p->w);
    long later = atomic_load(&yields) - before;
    fprintf(stderr, "[%d] yields in 1,100: %ld\n", (int)getpid(), later);
    CHECK(later > 0); /* a peer that shares this core still gets it */
    /* the server may receive now */
    ly_say(0);
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    free(v);
    /* a receive waiting for a message the peer has not sent yet (the server sleeps before it
     * sends): nothing in flight on the lane, nothing moves. With the peer on this CPU every
     * such call yields (its message comes only once it runs); on another CPU none does */
    int64_t last = 0;
    CHECK_RC(cdt_ucx_irecv(p->w, &last, 1, CDT_INT64, 4, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    for (int i = 0; i < 8; i++)
        cdt_ucx_worker_progress(p->w);
    before = atomic_load(&yields);
    for (int i = 0; i < 100; i++)
        cdt_ucx_worker_progress(p->w);
    long idle = atomic_load(&yields) - before;
    ly_say(1); /* the server may send now */
    fprintf(stderr, "[%d] yields in 100 progress calls waiting for a message (%s): %ld\n",
            (int)getpid(), shared ? "one CPU" : "two CPUs", idle);
    if (shared) {
        CHECK(idle >= 90); /* a call that handled a UCX event does not yield */
    } else {
        CHECK(idle == 0);
    }
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    CHECK(last == 4);
}

static void yield_server(peer *p)
{
    pin(server_cpu);
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    wait_lane(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    ly_hear(0); /* the client counts its idle calls meanwhile */
    int64_t *v = malloc(LY_N * sizeof(int64_t));
    CHECK(v != NULL);
    CHECK_RC(
        cdt_ucx_recv(p->w, v, LY_N, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int64_t k = 0; k < LY_N; k++)
        CHECK(v[k] == k);
    free(v);
    ly_hear(1); /* the client waits for this message meanwhile */
    int64_t last = 4;
    CHECK_RC(cdt_ucx_send(p->ep, &last, 1, CDT_INT64, 4, T_TIMEOUT_MS));
}

/* the two processes on two CPUs (skipped where this process may use only one) */
int lane_yield_case(void)
{
    int cpus[2];
    if (allowed_cpus(cpus, 2) < 2) {
        fprintf(stderr, "one CPU allowed: no two CPUs to put the peers on\n");
        return 77;
    }
    server_cpu = cpus[0];
    client_cpu = cpus[1];
    CHECK(pipe(ly_word[0]) == 0 && pipe(ly_word[1]) == 0);
    return run_pair(yield_server, yield_client, &yield_wp, &yield_wp, 0);
}

/* both processes on one CPU */
int lane_yield_shared_case(void)
{
    int cpus[1];
    CHECK(allowed_cpus(cpus, 1) == 1);
    server_cpu = client_cpu = cpus[0];
    CHECK(pipe(ly_word[0]) == 0 && pipe(ly_word[1]) == 0);
    return run_pair(yield_server, yield_client, &yield_wp, &yield_wp, 0);
}
