/*
 * lane_match_bench.c - can a small object go below TCP's latency through the lane without a
 * second matching engine (docs/TRANSPORT.md §10.6)? Half round trip of an 8-byte message
 * between two processes, three ways, alternated round by round:
 *
 *   tcp:  a UCX tagged message over TCP on loopback (UCX_TLS=tcp): the floor of today's small
 *         objects on the default, whose head is one such message;
 *   lane: the bytes through the lane, the consumer's grant posted ahead (the hand-over alone);
 *   lane+self: the bytes (tag and payload) through the lane, then handed by the consumer to
 *         its own worker as a tagged message on an endpoint to itself (UCX's `self` transport),
 *         where UCX's tag matching (tag, mask, order) matches it with a receive posted ahead:
 *         the lane carrying heads while UCX still matches them.
 *   heads+self: the built head ring of a version 2 lane (libcdt/src/lane/lane_heads.c, §10.6):
 *         a 48-byte head (a 40-byte prefix and the 8 bytes) written as a record without a
 *         grant, copied out and checked by the consumer, then handed to its own worker as
 *         above; `spin` looks at the ring between yields, `doorbell` sleeps in poll() on the
 *         doorbell whenever the ring is empty (a receiver asleep on its worker's fd).
 *
 *   lane_match_bench [--rounds R] [--pings N]   prints min / median / max of the rounds, in us
 */
#define _GNU_SOURCE
#include "lane/lane.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

enum { TAG = 7 };
static int PINGS = 20000; /* round trips per measurement (--pings) */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

/* ---- UCX ---- */

typedef struct ux {
    ucp_context_h ctx;
    ucp_worker_h w;
} ux;

static void ux_open(ux *u, const char *tls)
{
    ucp_config_t *cfg;
    if (ucp_config_read(NULL, NULL, &cfg) != UCS_OK || ucp_config_modify(cfg, "TLS", tls) != UCS_OK)
        DIE("ucp_config");
    ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    if (ucp_init(&p, cfg, &u->ctx) != UCS_OK)
        DIE("ucp_init (%s)", tls);
    ucp_config_release(cfg);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if (ucp_worker_create(u->ctx, &wp, &u->w) != UCS_OK)
        DIE("ucp_worker_create");
}

static void ux_close(ux *u, ucp_ep_h ep)
{
    if (ep != NULL) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
        void *r = ucp_ep_close_nbx(ep, &p);
        while (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(u->w);
        if (UCS_PTR_IS_PTR(r))
            ucp_request_free(r);
    }
    ucp_worker_destroy(u->w);
    ucp_cleanup(u->ctx);
}

static ucp_ep_h ux_ep(ux *u, const void *addr)
{
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                         .address = (const ucp_address_t *)addr};
    ucp_ep_h ep;
    if (ucp_ep_create(u->w, &p, &ep) != UCS_OK)
        DIE("ucp_ep_create");
    return ep;
}

static void ux_wait(ux *u, void *r)
{
    if (r == NULL)
        return;
    if (UCS_PTR_IS_ERR(r))
        DIE("ucx request: %s", ucs_status_string(UCS_PTR_STATUS(r)));
    /* a wait that finds nothing yields its core, as the lane's waits do: the peer it waits
     * for may be waiting for that core */
    while (ucp_request_check_status(r) == UCS_INPROGRESS)
        if (ucp_worker_progress(u->w) == 0)
            sched_yield();
    ucp_request_free(r);
}

static void *ux_send(ucp_ep_h ep, const uint64_t *v)
{
    ucp_request_param_t p = {0};
    return ucp_tag_send_nbx(ep, v, 8, TAG, &p);
}

static void *ux_recv(ux *u, uint64_t *v)
{
    ucp_request_param_t p = {0};
    return ucp_tag_recv_nbx(u->w, v, 8, TAG, ~(ucp_tag_t)0, &p);
}

/* ---- tcp: UCX tagged messages over TCP on loopback between the two processes ---- */

static void exchange(int out, int in, const void *a, size_t alen, void **peer)
{
    size_t plen;
    if (write(out, &alen, sizeof alen) != sizeof alen || write(out, a, alen) != (ssize_t)alen ||
        read(in, &plen, sizeof plen) != sizeof plen)
        DIE("pipe");
    *peer = malloc(plen);
    for (size_t got = 0; got < plen;) {
        ssize_t n = read(in, (char *)*peer + got, plen - got);
        if (n <= 0)
            DIE("pipe");
        got += (size_t)n;
    }
}

static double lat_tcp(void)
{
    int ab[2], ba[2];
    if (pipe(ab) != 0 || pipe(ba) != 0)
        DIE("pipe");
    pid_t kid = fork();
    int b = kid == 0;
    ux u;
    ux_open(&u, "tcp");
    ucp_address_t *a;
    size_t alen;
    if (ucp_worker_get_address(u.w, &a, &alen) != UCS_OK)
        DIE("address");
    void *peer;
    exchange(b ? ba[1] : ab[1], b ? ab[0] : ba[0], a, alen, &peer);
    ucp_worker_release_address(u.w, a);
    ucp_ep_h ep = ux_ep(&u, peer);
    free(peer);
    uint64_t v = 0, in = 0;
    double t0 = 0;
    for (int k = -100; k < PINGS; k++) { /* 100 round trips wire the endpoint up first */
        if (k == 0)
            t0 = now_s();
        if (b) {
            ux_wait(&u, ux_recv(&u, &in));
            v = in + 1;
            ux_wait(&u, ux_send(ep, &v));
        } else {
            void *r = ux_recv(&u, &in);
            ux_wait(&u, ux_send(ep, &v));
            ux_wait(&u, r);
            v = in + 1;
        }
    }
    double t = now_s() - t0;
    char c = 0; /* neither side closes while the other may still progress towards it */
    if (write(b ? ba[1] : ab[1], &c, 1) != 1 || read(b ? ab[0] : ba[0], &c, 1) != 1)
        DIE("pipe");
    ux_close(&u, ep);
    if (b)
        _exit(0);
    int st;
    waitpid(kid, &st, 0);
    close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]);
    return t / PINGS / 2 * 1e6;
}

/* ---- lane, and lane + a tagged message to the consumer's own worker ---- */

static int lane_send8(cdt__lane *p, uint64_t v)
{
    cdt__lane_grant g;
    while (cdt__lane_take_grant(p, &g) == 0)
        sched_yield();
    unsigned char *d;
    size_t n;
    for (;;) {
        if (cdt__lane_write_span(p, &d, &n) != CDT_SUCCESS)
            return -1;
        if (n >= 8)
            break;
        sched_yield();
    }
    memcpy(d, &v, 8);
    return cdt__lane_publish(p, 8);
}

/* the consumer's side: the 8 bytes, handed to UCX's matching when self != NULL (a receive was
 * posted ahead, as an application's is) */
static int lane_recv8(cdt__lane *c, uint64_t key, uint64_t *v, ux *u, ucp_ep_h self)
{
    const unsigned char *s;
    size_t n;
    uint64_t got, in = 0;
    void *r = self != NULL ? ux_recv(u, &in) : NULL;
    for (;;) {
        if (cdt__lane_read_span(c, &s, &n) != CDT_SUCCESS)
            return -1;
        if (n >= 8)
            break;
        sched_yield();
    }
    memcpy(&got, s, 8); /* into private memory first: the segment is the peer's to change */
    cdt__lane_release(c, 8);
    if (self != NULL) {
        ux_wait(u, ux_send(self, &got));
        ux_wait(u, r);
        got = in;
    }
    *v = got;
    uint64_t start;
    return cdt__lane_post_grant(c, key + 1, 8, &start);
}

static double lat_lane(int with_self)
{
    cdt__lane a2b, b2a;
    cdt__lane_offer oa, ob;
    if (cdt__lane_create(NULL, &a2b, &oa) != CDT_SUCCESS ||
        cdt__lane_create(NULL, &b2a, &ob) != CDT_SUCCESS)
        DIE("lane");
    pid_t kid = fork();
    int b = kid == 0;
    ux u;
    ucp_ep_h self = NULL;
    if (with_self) {
        ux_open(&u, "self");
        ucp_address_t *a;
        size_t alen;
        if (ucp_worker_get_address(u.w, &a, &alen) != UCS_OK)
            DIE("address");
        self = ux_ep(&u, a);
        ucp_worker_release_address(u.w, a);
    }
    cdt__lane in, *out = b ? &b2a : &a2b;
    uint64_t start, v = 0;
    if (cdt__lane_attach(b ? &oa : &ob, &in) != CDT_SUCCESS ||
        cdt__lane_post_grant(&in, 0, 8, &start) != CDT_SUCCESS)
        DIE("attach");
    while (cdt__lane_attached(out) == 0)
        ;
    double t0 = now_s();
    for (uint64_t k = 0; k < (uint64_t)PINGS; k++) {
        if (b) {
            if (lane_recv8(&in, k, &v, &u, self) != 0 || lane_send8(out, v + 1) != 0)
                DIE("lane ping");
        } else if (lane_send8(out, v) != 0 || lane_recv8(&in, k, &v, &u, self) != 0) {
            DIE("lane pong");
        }
    }
    double t = now_s() - t0;
    if (with_self)
        ux_close(&u, self);
    cdt__lane_close(&in);
    cdt__lane_close(&a2b);
    cdt__lane_close(&b2a);
    if (b)
        _exit(0);
    int st;
    waitpid(kid, &st, 0);
    if (v != (uint64_t)PINGS)
        DIE("lane: %llu", (unsigned long long)v);
    return t / PINGS / 2 * 1e6;
}

/* ---- the head ring (lane version 2) + a tagged message to the consumer's own worker ---- */

enum { HEAD_LEN = 48 };

static int head_send8(cdt__lane *p, uint64_t v)
{
    unsigned char h[HEAD_LEN] = {0};
    memcpy(h + 40, &v, 8);
    int rc;
    while ((rc = cdt__lane_head_put(p, TAG, h, sizeof h)) == 0)
        sched_yield();
    if (rc != 1)
        return -1;
    cdt__lane_heads_ring(p);
    return 0;
}

static int head_recv8(cdt__lane *c, uint64_t *v, ux *u, ucp_ep_h self, int sleep)
{
    static unsigned char out[CDT__LANE_HEAD_MAX];
    uint64_t in[HEAD_LEN / 8], tag;
    size_t n;
    ucp_request_param_t p = {0};
    void *r = ucp_tag_recv_nbx(u->w, in, sizeof in, TAG, ~(ucp_tag_t)0, &p);
    int rc;
    while ((rc = cdt__lane_head_take(c, &tag, out, sizeof out, &n)) == 0) {
        if (sleep && cdt__lane_heads_sleep(c) == 0) {
            struct pollfd pf = {.fd = c->doorbell, .events = POLLIN};
            poll(&pf, 1, 1000);
        } else {
            sched_yield();
        }
        cdt__lane_heads_awake(c);
    }
    if (rc != 1 || n != HEAD_LEN)
        return -1;
    ucp_request_param_t sp = {0};
    ux_wait(u, ucp_tag_send_nbx(self, out, n, tag, &sp));
    ux_wait(u, r);
    *v = in[5];
    return 0;
}

static double lat_heads(int sleep)
{
    cdt__lane a2b, b2a;
    cdt__lane_offer oa, ob;
    cdt__lane_params prm = {.head_ring_bytes = 1};
    if (cdt__lane_create(&prm, &a2b, &oa) != CDT_SUCCESS ||
        cdt__lane_create(&prm, &b2a, &ob) != CDT_SUCCESS)
        DIE("lane");
    pid_t kid = fork();
    int b = kid == 0;
    ux u;
    ux_open(&u, "self");
    ucp_address_t *a;
    size_t alen;
    if (ucp_worker_get_address(u.w, &a, &alen) != UCS_OK)
        DIE("address");
    ucp_ep_h self = ux_ep(&u, a);
    ucp_worker_release_address(u.w, a);
    cdt__lane in, *out = b ? &b2a : &a2b;
    uint64_t v = 0;
    if (cdt__lane_attach(b ? &oa : &ob, &in) != CDT_SUCCESS)
        DIE("attach");
    while (cdt__lane_attached(out) == 0)
        ;
    double t0 = now_s();
    for (uint64_t k = 0; k < (uint64_t)PINGS; k++) {
        if (b) {
            if (head_recv8(&in, &v, &u, self, sleep) != 0 || head_send8(out, v + 1) != 0)
                DIE("heads ping");
        } else if (head_send8(out, v) != 0 || head_recv8(&in, &v, &u, self, sleep) != 0) {
            DIE("heads pong");
        }
    }
    double t = now_s() - t0;
    ux_close(&u, self);
    cdt__lane_close(&in);
    cdt__lane_close(&a2b);
    cdt__lane_close(&b2a);
    if (b)
        _exit(0);
    int st;
    waitpid(kid, &st, 0);
    if (v != (uint64_t)PINGS)
        DIE("heads: %llu", (unsigned long long)v);
    return t / PINGS / 2 * 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pings") == 0 && i + 1 < argc)
            PINGS = atoi(argv[++i]);
        else
            DIE("usage: %s [--rounds R] [--pings N]", argv[0]);
    }
    if (rounds < 1)
        rounds = 1;
    if (PINGS < 1)
        PINGS = 1;
    static const char *names[] = {"UCX tagged message over TCP on loopback (today's small objects)",
                                  "lane hand-over (grant posted ahead)",
                                  "lane + tagged message to the own worker (UCX self, matched)",
                                  "head ring + own worker (built component), spin",
                                  "head ring + own worker, asleep on the doorbell"};
    enum { MODES = 5 };
    double *t = calloc(MODES * (size_t)rounds, sizeof *t);
    for (int r = 0; r < rounds; r++) {
        t[0 * rounds + r] = lat_tcp();
        t[1 * rounds + r] = lat_lane(0);
        t[2 * rounds + r] = lat_lane(1);
        t[3 * rounds + r] = lat_heads(0);
        t[4 * rounds + r] = lat_heads(1);
    }
    printf("# 8-byte ping-pong, %d round trips per measurement, %d rounds alternated; half round "
           "trip in us\n| path | min us | median us | max us |\n|---|---:|---:|---:|\n",
           PINGS, rounds);
    for (int c = 0; c < MODES; c++) {
        qsort(t + c * rounds, (size_t)rounds, sizeof *t, cmp_d);
        printf("| %s | %.2f | %.2f | %.2f |\n", names[c], t[c * rounds], t[c * rounds + rounds / 2],
               t[c * rounds + rounds - 1]);
    }
    free(t);
    return 0;
}
