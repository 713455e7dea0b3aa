/*
 * cases_lane.c - the lane (docs/TRANSPORT.md §10) in the transport: large objects of every kind
 * through it (derived, strided, custom, large regions beside it, grants out of send order, a
 * receive that fails part-way and the object after it); a sender killed while it packs into
 * the lane and a receiver killed while it unpacks from it, with a third process beside them;
 * a sender that scribbles over its own segment while objects move.
 */
/* RUSAGE_THREAD (the wakeup case counts its own thread's sleeps) */
#define _GNU_SOURCE
#include "cases.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

/* both sides of every case here have the lane on (whatever CDT_UCX_LANE says) */
static const cdt_ucx_worker_params lane_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

void lane_ack_send(peer *p)
{
    int32_t a = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &a, 1, CDT_INT32, LANE_ACK_TAG, T_TIMEOUT_MS));
}

void lane_ack_recv(peer *p)
{
    int32_t a = 0;
    CHECK_RC(cdt_ucx_recv(p->w, &a, 1, CDT_INT32, LANE_ACK_TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
}

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* progress until the endpoint reports its lane (the peer mapped it after the first object) */
void wait_lane(peer *p)
{
    char t[512];
    int64_t end = now_ms() + 10000;
    for (;;) {
        CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
        if (strstr(t, "lane=memfd") != NULL)
            break;
        CHECK(now_ms() < end);
        cdt_ucx_worker_progress(p->w);
    }
    fprintf(stderr, "[%d] transports: %s\n", (int)getpid(), t);
}

void progress_for(peer *p, int64_t ms)
{
    for (int64_t end = now_ms() + ms; now_ms() < end;)
        cdt_ucx_worker_progress(p->w);
}

uint64_t lane_stat(peer *p, uint64_t field)
{
    cdt_ucx_worker_stats s = {.field_mask = field};
    CHECK_RC(cdt_ucx_worker_stats_get(p->w, &s));
    return field == CDT_UCX_WORKER_STATS_LANE_SENT ? s.lane_sent : s.lane_received;
}

/* lines of /proc/self/maps and links of /proc/self/fd that are a lane's (or a pidfd) */
int lane_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, "cdt-lane") != NULL;
    fclose(f);
    return n;
}

int lane_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], link[256];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, link, sizeof(link) - 1);
        if (len <= 0)
            continue;
        link[len] = '\0';
        n += strstr(link, "cdt-lane") != NULL || strstr(link, "pidfd") != NULL;
    }
    closedir(d);
    return n;
}

/* ---------------------------------------------------------------- objects --------------- */

enum { LN_SIMPLE = 65536, LN_STRIDED = 1000 * 1000 };

static cdt_type ln_strided(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_vector(LN_STRIDED, 1, 2, CDT_DOUBLE, &t));
    CHECK_RC(cdt_type_commit(&t));
    return t;
}

void lane_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    struct_simple *s = malloc(LN_SIMPLE * sizeof(*s));
    double *d = malloc(2 * LN_STRIDED * sizeof(double));
    CHECK(s != NULL && d != NULL);
    struct_simple_fill(s, LN_SIMPLE, 7);
    for (int i = 0; i < 2 * LN_STRIDED; i++)
        d[i] = i * 0.25;
    CHECK_RC(cdt_ucx_send(p->ep, s, LN_SIMPLE, struct_simple_type(), 2, T_TIMEOUT_MS));
    cdt_type st = ln_strided();
    CHECK_RC(cdt_ucx_send(p->ep, d, 1, st, 3, T_TIMEOUT_MS));
    /* a custom type: 64 small regions travel in the lane's stream; then large regions beside it */
    double_vec v;
    CHECK_RC(double_vec_init(&v, 64, 1000, 11));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), 4, T_TIMEOUT_MS));
    double_vec_clear(&v);
    CHECK_RC(double_vec_init(&v, 40, 20000, 12)); /* 160 KB regions: zero-copy */
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), 5, T_TIMEOUT_MS));
    double_vec_clear(&v);
    /* two objects at once, received in the other order: grants come out of send order */
    cdt_ucx_request a, b;
    CHECK_RC(cdt_ucx_isend(p->ep, s, LN_SIMPLE, struct_simple_type(), 6, &a));
    CHECK_RC(cdt_ucx_isend(p->ep, d, 1, st, 7, &b));
    CHECK_RC(cdt_ucx_request_wait(a, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_wait(b, T_TIMEOUT_MS));
    cdt_ucx_request_free(a);
    cdt_ucx_request_free(b);
    /* the receiver fails the first part-way; the second still arrives whole */
    CHECK_RC(cdt_ucx_send(p->ep, s, LN_SIMPLE, struct_simple_type(), 8, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_send(p->ep, s, LN_SIMPLE, struct_simple_type(), 9, T_TIMEOUT_MS));
    /* a custom type whose regions all go zero-copy (this send's threshold: 1 KiB) and whose
     * packed stream (the 1,900 lengths) goes through the lane: its receiver learns where the
     * regions go only from the packed stream, so their receives are posted after it. Sent
     * behind an 8 MiB object, whose stream holds the lane while the regions could move. */
    CHECK_RC(double_vec_init(&v, 1900, 160, 13));
    cdt_ucx_send_params sp = {.field_mask = CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD,
                              .zcopy_threshold = 1024};
    CHECK_RC(cdt_ucx_isend(p->ep, d, 1, st, 11, &b));
    CHECK_RC(cdt_ucx_isend_advanced(p->ep, &v, 1, double_vec_type(), 10, &sp, &a));
    CHECK_RC(cdt_ucx_request_wait(a, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_wait(b, T_TIMEOUT_MS));
    cdt_ucx_request_free(a);
    cdt_ucx_request_free(b);
    double_vec_clear(&v);
    uint64_t sent = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
    fprintf(stderr, "objects sent through the lane: %llu\n", (unsigned long long)sent);
    CHECK(sent >= 9); /* all but the one whose regions all go zero-copy */
    cdt_type_free(&st);
    free(s);
    free(d);
}

void lane_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    struct_simple *s = calloc(LN_SIMPLE, sizeof(*s)), *ref = malloc(LN_SIMPLE * sizeof(*s));
    double *d = calloc(2 * LN_STRIDED, sizeof(double));
    CHECK(s != NULL && ref != NULL && d != NULL);
    struct_simple_fill(ref, LN_SIMPLE, 7);
    CHECK_RC(cdt_ucx_recv(p->w, s, LN_SIMPLE, struct_simple_type(), 2, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    CHECK(struct_simple_equal(s, ref, LN_SIMPLE));
    cdt_type st = ln_strided();
    CHECK_RC(cdt_ucx_recv(p->w, d, 1, st, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int i = 0; i < 2 * LN_STRIDED; i++)
        CHECK(d[i] == (i % 2 == 0 ? i * 0.25 : 0.0));
    for (int k = 0; k < 2; k++) {
        double_vec v = {0}, want;
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), 4 + k, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS));
        CHECK_RC(double_vec_init(&want, k == 0 ? 64 : 40, k == 0 ? 1000 : 20000, 11 + k));
        CHECK(double_vec_equal(&v, &want));
        double_vec_clear(&v);
        double_vec_clear(&want);
    }
    memset(d, 0, 2 * LN_STRIDED * sizeof(double));
    CHECK_RC(cdt_ucx_recv(p->w, d, 1, st, 7, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    CHECK(d[2] == 0.5 && d[2 * LN_STRIDED - 2] == (2 * LN_STRIDED - 2) * 0.25);
    memset(s, 0, LN_SIMPLE * sizeof(*s));
    CHECK_RC(cdt_ucx_recv(p->w, s, LN_SIMPLE, struct_simple_type(), 6, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    CHECK(struct_simple_equal(s, ref, LN_SIMPLE));
    int rc = cdt_ucx_recv(p->w, s, 100, struct_simple_type(), 8, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS);
    fprintf(stderr, "a receive too small for a lane object: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_TRUNCATED || rc == CDT_ERR_FRAME_MISMATCH);
    memset(s, 0, LN_SIMPLE * sizeof(*s));
    CHECK_RC(cdt_ucx_recv(p->w, s, LN_SIMPLE, struct_simple_type(), 9, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    CHECK(struct_simple_equal(s, ref, LN_SIMPLE));
    double_vec v = {0}, want;
    cdt_ucx_request a, b;
    CHECK_RC(cdt_ucx_irecv(p->w, d, 1, st, 11, CDT_UCX_TAG_MASK_FULL, NULL, &b));
    CHECK_RC(cdt_ucx_irecv(p->w, &v, 1, double_vec_type(), 10, CDT_UCX_TAG_MASK_FULL, NULL, &a));
    CHECK_RC(cdt_ucx_request_wait(a, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_wait(b, T_TIMEOUT_MS));
    cdt_ucx_request_free(a);
    cdt_ucx_request_free(b);
    CHECK_RC(double_vec_init(&want, 1900, 160, 13));
    CHECK(double_vec_equal(&v, &want));
    double_vec_clear(&v);
    double_vec_clear(&want);
    uint64_t got = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
    fprintf(stderr, "objects received through the lane: %llu\n", (unsigned long long)got);
    CHECK(got >= 8); /* and not the one that failed */
    cdt_type_free(&st);
    free(s);
    free(ref);
    free(d);
}

int lane_case(void)
{
    return run_pair(lane_server, lane_client, &lane_wp, &lane_wp, 0);
}

/* ---------------------------------------------------------------- kills ----------------- */

/* A custom type of KL_LEN bytes whose pack callback kills its own process with SIGKILL once the
 * stream passes KL_AT (kill_in = 1): inside the lane's pump. A receiver is killed while it
 * unpacks (kill_in = 2) by its own thread that watches the destination of a strided object fill
 * up: a custom type's unpack callback gets the packed stream whole, after the lane moved it (the
 * decoder holds it), while a derived type unpacks each fragment straight out of the segment. */
enum { KL_LEN = 8 << 20, KL_AT = 2 << 20, KL_N = 20 };
static int kill_in;

static int kl_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    if (kill_in == 1 && offset > KL_AT)
        raise(SIGKILL);
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

/* the hub's strided object, 64 MiB packed (values never 0), so that the victim's watcher sees
 * the first tenth of it written long before the last fragment comes */
enum { KL_STRIDED = 8 << 20, KL_WATCH = 2 * (KL_STRIDED / 10) };
static cdt_type kl_strided(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_vector(KL_STRIDED, 1, 2, CDT_DOUBLE, &t));
    CHECK_RC(cdt_type_commit(&t));
    return t;
}

static const double *kl_strided_src(void)
{
    double *d = malloc(2 * (size_t)KL_STRIDED * sizeof(double));
    CHECK(d != NULL);
    for (int i = 0; i < 2 * KL_STRIDED; i++)
        d[i] = 1.0 + i;
    return d;
}

/* the victim's watcher: once element KL_WATCH of the strided destination was written (the
 * receive is unpacking fragment after fragment), the victim kills itself */
static void *kl_watch(void *arg)
{
    volatile double *d = arg;
    while (d[KL_WATCH] == 0.0)
        sched_yield();
    raise(SIGKILL);
    return NULL;
}

/* kill_in 3: the victim's double_vec, KR_N regions of 1 MiB in one mapping whose last region
 * is PROT_NONE: the sender's copy of its regions into the lane's stream faults there, with the
 * first KR_N - 1 regions through, and the fault kills the victim */
enum { KR_N = 24, KR_LEN = (1 << 20) / 4 };

static void kr_fault(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

static void kr_object(double_vec *v)
{
    v->n = KR_N;
    v->lens = calloc(KR_N, sizeof(cdt_count));
    v->data = calloc(KR_N, sizeof(int32_t *));
    int32_t *base =
        mmap(NULL, (size_t)KR_N << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(v->lens != NULL && v->data != NULL && base != MAP_FAILED);
    for (int i = 0; i < KR_N; i++) {
        v->lens[i] = KR_LEN;
        v->data[i] = base + (size_t)i * KR_LEN;
    }
    for (size_t j = 0; j < (size_t)(KR_N - 1) * KR_LEN; j++)
        base[j] = (int32_t)j;
    CHECK(mprotect(v->data[KR_N - 1], 1 << 20, PROT_NONE) == 0);
    struct sigaction sa = {.sa_handler = kr_fault};
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
}

static cdt_type kl_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, kl_pack, bytes_unpack, NULL, NULL,
                                    NULL, 0, &t));
    return t;
}

/* The hub listens; the victim connects first, the bystander second (the hub's first endpoint
 * is the victim's). kill_in 1: the victim sends the hub an object and dies packing it; 2: the
 * hub sends the victim one and the victim dies unpacking it. Meanwhile the bystander and the
 * hub move objects through their own lane. The hub checks that its endpoint to the victim
 * fails with CDT_ERR_PEER within the bound, the bystander's objects all arrive, and that no
 * lane is left mapped or open once its endpoints are closed. */
static void hub(uint16_t *port_out, int port_fd, int go_fd)
{
    peer p = {.is_server = 1};
    peer_open(&p, &lane_wp);
    uint16_t port = peer_listen(&p);
    CHECK(write(port_fd, &port, sizeof(port)) == sizeof(port));
    (void)port_out;
    cdt_ucx_ep victim, by;
    CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &victim));
    char go = 'g';
    CHECK(write(go_fd, &go, 1) == 1); /* now the bystander connects */
    CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &by));
    int64_t one = 0;
    /* a first object from each: they offer their lanes */
    for (int k = 0; k < 2; k++)
        CHECK_RC(cdt_ucx_recv(p.w, &one, 1, CDT_INT64, 10 + k, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
    char *buf = malloc(KL_LEN);
    CHECK(buf != NULL);
    memset(buf, 0x5A, KL_LEN);
    cdt_type t = kl_type();
    /* both peers' lanes mapped before anything can kill: an offer follows its sender's id on
     * the stream and may be read on a later progress call than the sender's first object; one
     * mapped after the kill would hide the victim's unmap in the count below */
    for (int64_t end = now_ms() + T_TIMEOUT_MS; lane_maps() < 2 && now_ms() < end;)
        progress_for(&p, 1);
    CHECK(lane_maps() >= 2);
    cdt_ucx_request vr;
    double_vec dv = {0};
    if (kill_in == 1) {
        CHECK_RC(cdt_ucx_irecv(p.w, buf, KL_LEN, t, 20, CDT_UCX_TAG_MASK_FULL, NULL, &vr));
    } else if (kill_in == 3) {
        CHECK_RC(
            cdt_ucx_irecv(p.w, &dv, 1, double_vec_type(), 20, CDT_UCX_TAG_MASK_FULL, NULL, &vr));
    } else {
        /* the hub's first object to the victim offers it the hub's lane; the victim's answer
         * comes once it mapped it */
        CHECK_RC(cdt_ucx_send(victim, &one, 1, CDT_INT64, 12, T_TIMEOUT_MS));
        CHECK_RC(cdt_ucx_recv(p.w, &one, 1, CDT_INT64, 13, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
        progress_for(&p, 100);
        CHECK_RC(cdt_ucx_isend(victim, kl_strided_src(), 1, kl_strided(), 20, &vr));
    }
    int maps_before = lane_maps();
    struct_simple *s = calloc(LN_SIMPLE, sizeof(*s)), *ref = malloc(LN_SIMPLE * sizeof(*s));
    CHECK(s != NULL && ref != NULL);
    struct_simple_fill(ref, LN_SIMPLE, 3);
    int64_t start = now_ms(), failed_at = -1;
    int vrc = CDT_INPROGRESS;
    for (int k = 0; k < KL_N; k++) {
        memset(s, 0, LN_SIMPLE * sizeof(*s));
        CHECK_RC(cdt_ucx_recv(p.w, s, LN_SIMPLE, struct_simple_type(), 30, CDT_UCX_TAG_MASK_FULL,
                              NULL, NULL, T_TIMEOUT_MS));
        CHECK(struct_simple_equal(s, ref, LN_SIMPLE));
        if (vrc == CDT_INPROGRESS && (vrc = cdt_ucx_request_test(vr)) != CDT_INPROGRESS)
            failed_at = now_ms();
    }
    if (vrc == CDT_INPROGRESS) {
        vrc = cdt_ucx_request_wait(vr, 10000);
        failed_at = now_ms();
    }
    fprintf(stderr, "the %s to the killed peer ended with %s after %lld ms\n",
            kill_in != 2 ? "receive" : "send", cdt_err_name(vrc), (long long)(failed_at - start));
    CHECK(vrc == CDT_ERR_PEER);
    if (kill_in != 2) {
        /* named by the endpoint to the killed peer, not left without a cause: a caller (the
         * soak) tells it from another peer's doing by this */
        cdt_ucx_recv_info vi = {.field_mask = CDT_UCX_RECV_INFO_FAILURE | CDT_UCX_RECV_INFO_SENDER};
        CHECK(cdt_ucx_request_recv_info(vr, &vi) == CDT_ERR_PEER);
        fprintf(stderr, "its failure: %d by %016llx (the killed peer: %016llx)\n", vi.failure,
                (unsigned long long)vi.failed_by, (unsigned long long)cdt_ucx_ep_peer_id(victim));
        CHECK(vi.failure == CDT_UCX_RECV_FAILURE_ENDPOINT);
        CHECK(vi.failed_by == cdt_ucx_ep_peer_id(victim));
    }
    double_vec_clear(&dv);           /* what the receive allocated before it failed */
    CHECK(failed_at - start < 5000); /* the keepalive bound (1 s) and then some */
    cdt_ucx_request_free(vr);
    char tr[512];
    CHECK(cdt_ucx_ep_transports(victim, tr, sizeof(tr)) == CDT_ERR_PEER);
    int maps_after = lane_maps();
    fprintf(stderr, "lane mappings: %d before the kill, %d after\n", maps_before, maps_after);
    CHECK(maps_after < maps_before);
    /* the bystander goes on */
    CHECK_RC(cdt_ucx_send(by, ref, LN_SIMPLE, struct_simple_type(), 31, T_TIMEOUT_MS));
    CHECK(cdt_ucx_recv(p.w, &one, 1, CDT_INT64, 32, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                       T_TIMEOUT_MS) == CDT_SUCCESS);
    cdt_ucx_ep_close(victim, 2000);
    cdt_ucx_ep_close(by, 2000);
    p.ep = NULL;
    fprintf(stderr, "after close: %d lane mappings, %d lane or pidfd descriptors\n", lane_maps(),
            lane_fds());
    CHECK(lane_maps() == 0 && lane_fds() == 0);
    cdt_type_free(&t);
    free(buf);
    free(s);
    free(ref);
    peer_close(&p);
}

static void spoke(uint16_t port, int victim)
{
    peer p = {.port = port};
    /* kill_in 3 dies in the stream's copy of a region: a region copied by both processes
     * (docs/TRANSPORT.md §10.3, Regions moved by both cores) faults in no copy of the victim's
     * own; transport.lane_split checks that object's clean failure */
    if (victim && kill_in == 3)
        setenv("CDT_UCX_LANE_SPLIT", "off", 1);
    peer_open(&p, &lane_wp);
    CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p.ep, &one, 1, CDT_INT64, victim ? 10 : 11, T_TIMEOUT_MS));
    if (victim) {
        cdt_type t = kl_type();
        char *buf = malloc(KL_LEN);
        CHECK(buf != NULL);
        memset(buf, 0x5A, KL_LEN);
        if (kill_in == 1) {
            wait_lane(&p);
            cdt_ucx_send(p.ep, buf, KL_LEN, t, 20, T_TIMEOUT_MS); /* dies in it */
        } else if (kill_in == 3) {
            wait_lane(&p);
            double_vec v;
            kr_object(&v);
            cdt_ucx_send(p.ep, &v, 1, double_vec_type(), 20, T_TIMEOUT_MS); /* dies in it */
        } else {
            CHECK_RC(cdt_ucx_recv(p.w, &one, 1, CDT_INT64, 12, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                                  T_TIMEOUT_MS));
            progress_for(&p, 100); /* reads the hub's offer and maps its lane */
            CHECK_RC(cdt_ucx_send(p.ep, &one, 1, CDT_INT64, 13, T_TIMEOUT_MS));
            double *d = calloc(2 * KL_STRIDED, sizeof(double));
            CHECK(d != NULL);
            pthread_t th;
            CHECK(pthread_create(&th, NULL, kl_watch, d) == 0);
            int rc = cdt_ucx_recv(p.w, d, 1, kl_strided(), 20, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                                  T_TIMEOUT_MS); /* dies in it */
            fprintf(stderr, "the victim's receive returned %s\n", cdt_err_name(rc));
        }
        _exit(3); /* never reached */
    }
    wait_lane(&p);
    struct_simple *s = malloc(LN_SIMPLE * sizeof(*s));
    CHECK(s != NULL);
    struct_simple_fill(s, LN_SIMPLE, 3);
    for (int k = 0; k < KL_N; k++)
        CHECK_RC(cdt_ucx_send(p.ep, s, LN_SIMPLE, struct_simple_type(), 30, T_TIMEOUT_MS));
    memset(s, 0, LN_SIMPLE * sizeof(*s));
    CHECK_RC(cdt_ucx_recv(p.w, s, LN_SIMPLE, struct_simple_type(), 31, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    struct_simple *ref = malloc(LN_SIMPLE * sizeof(*s));
    CHECK(ref != NULL);
    struct_simple_fill(ref, LN_SIMPLE, 3);
    CHECK(struct_simple_equal(s, ref, LN_SIMPLE));
    CHECK_RC(cdt_ucx_send(p.ep, &one, 1, CDT_INT64, 32, T_TIMEOUT_MS));
    peer_finish(&p, -1, -1);
    free(s);
    free(ref);
    peer_close(&p);
}

/* the hub in its own process; its pipes' write ends: the port, then the bystander's go */
static int kl_hub_fds[2];
static void hub_side(uint16_t port, int arg)
{
    (void)port;
    (void)arg;
    hub(NULL, kl_hub_fds[0], kl_hub_fds[1]);
}

static void victim_side(uint16_t port, int arg)
{
    (void)arg;
    spoke(port, 1); /* never returns: the victim dies in it */
}

static void bystander_side(uint16_t port, int arg)
{
    (void)arg;
    spoke(port, 0);
}

int lane_kill_case(int where)
{
    kill_in = where;
    harness_alarm_s = 60;
    int port_p[2], go_p[2];
    if (pipe(port_p) != 0 || pipe(go_p) != 0)
        return 1;
    kl_hub_fds[0] = port_p[1];
    kl_hub_fds[1] = go_p[1];
    pid_t hub_pid = harness_fork(hub_side, 0, 0);
    uint16_t port = 0;
    if (read(port_p[0], &port, sizeof(port)) != sizeof(port))
        return 1;
    pid_t victim = harness_fork(victim_side, port, 0);
    char go;
    if (read(go_p[0], &go, 1) != 1)
        return 1;
    pid_t by = harness_fork(bystander_side, port, 0);
    int ok = harness_reap(hub_pid, "hub", 0);
    ok &= harness_reap(by, "bystander", 0);
    ok &= harness_reap(victim, "victim", -SIGKILL);
    return ok ? 0 : 1;
}

/* ---------------------------------------------------------------- a hostile sender ------- */

/* The sender's own thread writes random bytes over the control part of its lane's segment (its
 * positions and counts, the grant ring) while objects move, as a hostile peer that
 * shares the segment may. The receiver's every receive completes or fails with a clear error,
 * within its timeout; it never crashes or waits for ever, and with no scribbled data byte
 * (only control bytes here) a receive that completes may still carry other values only where a
 * scribbled position made it read bytes not yet written: counted, not refused. */
enum { HS_N = 60 };
static volatile int hs_stop;

/* where this process maps a lane's segment now (0: none) */
static uintptr_t hs_segment(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    uintptr_t at = 0;
    while (at == 0 && fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, "cdt-lane") != NULL)
            at = (uintptr_t)strtoull(line, NULL, 16);
    fclose(f);
    return at;
}

static void *hs_scribble(void *arg)
{
    (void)arg;
    /* through /proc/self/mem, and only while the segment is still mapped: the library unmaps
     * it when the lane breaks, and a write there would be this test's own crash */
    int mem = open("/proc/self/mem", O_RDWR);
    CHECK(mem >= 0);
    unsigned seed = (unsigned)getpid();
    bool seen = false;
    while (!hs_stop) {
        uintptr_t seg = hs_segment();
        if (seg == 0 && seen)
            break; /* the lane broke: unmapped */
        seen |= seg != 0;
        if (seg == 0) {
            usleep(1000);
            continue;
        }
        /* the fields either side reads: the positions and counts (64-79, 128-151) and the
         * grant ring's first slots (192 on), one byte at a time */
        unsigned r = (unsigned)rand_r(&seed);
        size_t at = r % 2 ? 64 + r / 2 % 16 : r % 4 ? 128 + r / 4 % 24 : 192 + r / 4 % 256;
        unsigned char b = (unsigned char)rand_r(&seed);
        (void)!pwrite(mem, &b, 1, (off_t)(seg + at));
        usleep(3000);
    }
    close(mem);
    return NULL;
}

void lane_hostile_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    wait_lane(p);
    struct_simple *s = malloc(LN_SIMPLE * sizeof(*s));
    CHECK(s != NULL);
    struct_simple_fill(s, LN_SIMPLE, 5);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, hs_scribble, NULL) == 0);
    int ok = 0, failed = 0;
    for (int k = 0; k < HS_N; k++) {
        int rc = cdt_ucx_send(p->ep, s, LN_SIMPLE, struct_simple_type(), 2, 3000);
        if (rc == CDT_SUCCESS) {
            ok++;
        } else {
            failed++;
            CHECK(rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT);
        }
    }
    hs_stop = 1;
    pthread_join(th, NULL);
    fprintf(stderr, "hostile sender: %d sends completed, %d failed\n", ok, failed);
    free(s);
}

void lane_hostile_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    struct_simple *s = malloc(LN_SIMPLE * sizeof(*s)), *ref = malloc(LN_SIMPLE * sizeof(*s));
    CHECK(s != NULL && ref != NULL);
    struct_simple_fill(ref, LN_SIMPLE, 5);
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_REST_TIMEOUT,
                              .rest_timeout_ms = 2000};
    int same = 0, changed = 0, failed = 0;
    for (int k = 0; k < HS_N; k++) {
        int rc = cdt_ucx_recv(p->w, s, LN_SIMPLE, struct_simple_type(), 2, CDT_UCX_TAG_MASK_FULL,
                              &rp, NULL, 4000);
        if (rc == CDT_SUCCESS) {
            if (struct_simple_equal(s, ref, LN_SIMPLE))
                same++;
            else
                changed++;
            continue;
        }
        failed++;
        fprintf(stderr, "hostile peer: receive %d ended with %s\n", k, cdt_err_name(rc));
        CHECK(rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT || rc == CDT_ERR_FRAME_MALFORMED ||
              rc == CDT_ERR_FRAME_TRUNCATED);
        if (rc == CDT_ERR_TIMEOUT || rc == CDT_ERR_PEER)
            break; /* the sender's lane broke: nothing more comes */
    }
    fprintf(stderr, "hostile peer: %d objects whole, %d with other values, %d failed\n", same,
            changed, failed);
    free(s);
    free(ref);
}

int lane_hostile_case(void)
{
    int rc = run_pair(lane_hostile_server, lane_hostile_client, &lane_wp, &lane_wp, 0);
    return rc != 0 ? rc : lane_hostile_word_case(); /* the commit words, rewritten */
}

/* ---------------------------------------------------------------- wakeup ---------------- */

/* A worker with wakeup sleeps on its event fd once a wait finds nothing to do; a peer's writes
 * into the lane signal nothing there, so a wait whose object is in the lane must not sleep
 * (it would sleep its whole bound, 10 ms, each time). The sender's pack callback stalls
 * WK_STALL_MS once, halfway through the object, while the receiver waits for the rest: the
 * receiver's thread counts its voluntary context switches (a sleep in poll is one; a
 * sched_yield is not) over the receive. Without the rule about 50 (one a 10 ms bound); with it
 * none but a few while the head is on its way. */
enum { WK_LEN = 2 << 20, WK_AT = 512 << 10, WK_STALL_MS = 500, WK_MAX_SLEEPS = 10 };

static int wk_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    static int stalled; /* once an object: it passes WK_AT once */
    (void)state;
    if (offset < WK_AT)
        stalled = 0;
    if (!stalled && offset >= WK_AT) {
        stalled = 1;
        struct timespec ts = {0, (long)WK_STALL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

static cdt_type wk_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, wk_pack, bytes_unpack, NULL, NULL,
                                    NULL, 0, &t));
    return t;
}

static void lane_wakeup_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    unsigned char *b = malloc(WK_LEN);
    CHECK(b != NULL);
    for (int i = 0; i < WK_LEN; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    cdt_type t = wk_type();
    CHECK_RC(cdt_ucx_send(p->ep, b, WK_LEN, t, 2, T_TIMEOUT_MS));
    /* again, for a receiver that waits as an event loop does (arm, then poll the fd) */
    CHECK_RC(cdt_ucx_send(p->ep, b, WK_LEN, t, 3, T_TIMEOUT_MS));
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) == 2);
    cdt_type_free(&t);
    free(b);
}

static long voluntary_switches(void)
{
    struct rusage ru;
    CHECK(getrusage(RUSAGE_THREAD, &ru) == 0);
    return ru.ru_nvcsw;
}

static void lane_wakeup_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    unsigned char *b = calloc(1, WK_LEN);
    CHECK(b != NULL);
    cdt_type t = wk_type();
    long before = voluntary_switches();
    int64_t t0 = now_ms();
    CHECK_RC(cdt_ucx_recv(p->w, b, WK_LEN, t, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    long sleeps = voluntary_switches() - before;
    fprintf(stderr, "a lane receive across a %d ms stall of its sender: %ld ms, %ld sleeps\n",
            WK_STALL_MS, (long)(now_ms() - t0), sleeps);
    for (int i = 0; i < WK_LEN; i++)
        CHECK(b[i] == (unsigned char)(i * 7 + 3));
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) == 1);
    CHECK(sleeps < WK_MAX_SLEEPS);
    /* an event loop: progress, test, arm; on success wait for the fd (10 ms at most). An arm
     * that succeeds while the lane's object is in flight lets the loop sleep its bound */
    memset(b, 0, WK_LEN);
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, b, WK_LEN, t, 3, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    int fd = -1, timeouts = 0, rc;
    CHECK_RC(cdt_ucx_worker_fd(p->w, &fd));
    int64_t end = now_ms() + T_TIMEOUT_MS;
    while ((rc = cdt_ucx_request_test(r)) == CDT_INPROGRESS && now_ms() < end) {
        while (cdt_ucx_worker_progress(p->w) > 0) {
        }
        if (cdt_ucx_worker_arm(p->w) == CDT_SUCCESS) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            timeouts += poll(&pfd, 1, 10) == 0;
        }
    }
    CHECK_RC(rc);
    cdt_ucx_request_free(r);
    fprintf(stderr, "an event loop's lane receive across the stall: %d polls timed out\n",
            timeouts);
    for (int i = 0; i < WK_LEN; i++)
        CHECK(b[i] == (unsigned char)(i * 7 + 3));
    CHECK(timeouts < WK_MAX_SLEEPS);
    cdt_type_free(&t);
    free(b);
}

int lane_wakeup_case(void)
{
    setenv("CDT_UCX_WAKEUP", "1", 1); /* both sides' contexts (made after the fork) */
    return run_pair(lane_wakeup_server, lane_wakeup_client, &lane_wp, &lane_wp, 0);
}
