/*
 * cases_lane_heads.c - small objects through the lane's head ring (docs/TRANSPORT.md §10.6),
 * the default (CDT_UCX_LANE_HEADS unset or on; `off` keeps every head on UCX): objects of
 * 8 B to 4 KiB interleaved with large ones on one endpoint, sent while the endpoint switches
 * its heads to the ring, received in order by wildcard receives that name their source; a ring
 * filled while the receiver does not progress; a sleeper on the worker's fd woken by the
 * doorbell; a sender killed with heads in the ring, a third process beside it; a receiver that
 * dies while small objects go into its ring; a sender scribbling over its own head ring; a
 * receiver whose heads stay off, or whose UCX_TLS leaves `self` out (its lane takes no heads,
 * objects go as before); both sides with the switch unset (the ring), and both with it off.
 */
#include "cases.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* both sides have the lane on (whatever CDT_UCX_LANE says) */
static const cdt_ucx_worker_params heads_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

enum {
    LH_N = 3000,
    LH_EARLY = 1500,
    LH_LARGE = 1 << 17,
    LH_FULL_N = 4000,
    LH_PINGS = 100,
    LH_KILL_N = 40
};

/* object i: int64 values i * 1000003 + k; small (1 to 512 values: 8 B - 4 KiB) except every
 * 100th, which is large (1 MiB: its stream goes through the lane's data ring) */
static cdt_count lh_count(int i)
{
    return i % 100 == 50 ? LH_LARGE : 1 + (cdt_count)((i * 37) % 512);
}

void lh_fill(int64_t *v, int i, cdt_count n)
{
    for (cdt_count k = 0; k < n; k++)
        v[k] = (int64_t)i * 1000003 + k;
}

int lh_check(const int64_t *v, int i, cdt_count n)
{
    for (cdt_count k = 0; k < n; k++)
        if (v[k] != (int64_t)i * 1000003 + k)
            return 0;
    return 1;
}

static bool has_heads(peer *p)
{
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    fprintf(stderr, "[%d] transports: %s\n", (int)getpid(), t);
    return strstr(t, "lane=memfd+heads") != NULL;
}

/* progress until the endpoint says its heads go through the ring (10 s at most) */
void lane_wait_heads(peer *p)
{
    char t[512];
    for (int64_t end = now_ms() + 10000;;) {
        CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
        if (strstr(t, "+heads") != NULL)
            return;
        CHECK(now_ms() < end);
        cdt_ucx_worker_progress(p->w);
    }
}

/* the two sides of an endpoint's switch. The client's first object (tag 1) offers its lane; each
 * side then progresses until its heads go through the ring; with `answer` the server sends an
 * object (tag 2) that tells the client the server reads heads from the ring now. */
static void client_switch(peer *p, bool answer)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    lane_wait_heads(p);
    if (answer)
        CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
}

static void server_switch(peer *p, bool answer)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    lane_wait_heads(p);
    if (answer)
        CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
}

/* objects the receiver of a case received so far, in memory both its processes share (NULL:
 * not counted): the sender's waits last while it grows */
static atomic_long *lh_received;

/* a send's wait: it may need the receiver to take every object posted before it (the order
 * case's first ring heads wait behind 1,500 objects over TCP, 15 of them 1 MiB through the
 * lane), which took over 20 s at a load of 18 on UCX 1.22 while the receiver kept receiving.
 * So the bound is T_TIMEOUT_MS without a received object, where the receiver counts them. */
static int lh_wait(cdt_ucx_request q)
{
    long seen = lh_received != NULL ? atomic_load(lh_received) : 0;
    for (int64_t since = now_ms();;) {
        int rc = cdt_ucx_request_wait(q, 100);
        if (rc != CDT_ERR_TIMEOUT)
            return rc;
        long now_seen = lh_received != NULL ? atomic_load(lh_received) : seen;
        if (now_seen != seen) {
            seen = now_seen;
            since = now_ms();
        } else if (now_ms() - since >= T_TIMEOUT_MS) {
            return CDT_ERR_TIMEOUT;
        }
    }
}

/* sends objects [from, to) with up to 64 in flight */
static void lh_send_range(peer *p, int from, int to, cdt_ucx_tag base)
{
    enum { WIN = 64 };
    cdt_ucx_request q[WIN] = {0};
    int64_t *buf[WIN] = {0};
    for (int i = from; i < to + WIN; i++) {
        int slot = i % WIN;
        if (q[slot] != NULL) {
            CHECK_RC(lh_wait(q[slot]));
            CHECK_RC(cdt_ucx_request_free(q[slot]));
            q[slot] = NULL;
            free(buf[slot]);
            buf[slot] = NULL;
        }
        if (i >= to)
            continue;
        cdt_count n = lh_count(i);
        buf[slot] = malloc((size_t)n * sizeof(int64_t));
        CHECK(buf[slot] != NULL);
        lh_fill(buf[slot], i, n);
        CHECK_RC(cdt_ucx_isend(p->ep, buf[slot], n, CDT_INT64, base + (cdt_ucx_tag)i, &q[slot]));
    }
}

/* receives objects [from, to) by wildcard receives: each in order, byte for byte, from the
 * endpoint's peer */
static void lh_recv_range(peer *p, int from, int to, cdt_ucx_tag base)
{
    int64_t *v = malloc(LH_LARGE * sizeof(int64_t));
    CHECK(v != NULL);
    uint64_t peer_id = cdt_ucx_ep_peer_id(p->ep);
    for (int i = from; i < to; i++) {
        cdt_count n = lh_count(i);
        cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_TAG | CDT_UCX_RECV_INFO_SENDER};
        CHECK_RC(cdt_ucx_recv(p->w, v, n, CDT_INT64, 0, 0, NULL, &info, T_TIMEOUT_MS));
        if (info.tag != base + (cdt_ucx_tag)i)
            fprintf(stderr, "object %d came with tag %llu\n", i,
                    (unsigned long long)(info.tag - base));
        CHECK(info.tag == base + (cdt_ucx_tag)i); /* in send order */
        CHECK(lh_check(v, i, n));
        if (peer_id == 0)
            peer_id = cdt_ucx_ep_peer_id(p->ep);
        CHECK(info.sender == peer_id); /* the endpoint it came through */
        if (lh_received != NULL)
            atomic_fetch_add(lh_received, 1);
    }
    free(v);
}

/* ---- order: the switch happens while objects are in flight ---- */

static void order_client(peer *p)
{
    /* the first objects go over UCX: object 0 (the lane is offered and mapped by the server
     * meanwhile), then LH_EARLY posted without progress (the switch happens in progress only),
     * which wait in the TCP socket while the server pauses; then the switch (the first progress)
     * and the rest through the ring, written while those still wait. None may overtake
     * another. */
    lh_send_range(p, 0, 1, 1000);
    usleep(100 * 1000);
    cdt_ucx_request early[LH_EARLY];
    int64_t *ebuf[LH_EARLY];
    for (int i = 1; i < LH_EARLY; i++) {
        cdt_count n = lh_count(i);
        ebuf[i] = malloc((size_t)n * sizeof(int64_t));
        CHECK(ebuf[i] != NULL);
        lh_fill(ebuf[i], i, n);
        CHECK_RC(cdt_ucx_isend(p->ep, ebuf[i], n, CDT_INT64, 1000 + (cdt_ucx_tag)i, &early[i]));
    }
    lane_wait_heads(p); /* progress: the switch goes behind them */
    lh_send_range(p, LH_EARLY, LH_N, 1000);
    for (int i = 1; i < LH_EARLY; i++) {
        CHECK_RC(lh_wait(early[i]));
        CHECK_RC(cdt_ucx_request_free(early[i]));
        free(ebuf[i]);
    }
    CHECK(has_heads(p));
}

static void order_server(peer *p)
{
    /* the lane attaches with the first objects; then a pause without progress, in which the
     * client switches and TCP heads sent before the switch wait in the socket behind ring
     * heads sent after it: read before the switch matched, the ring would overtake them */
    lh_recv_range(p, 0, 1, 1000);
    usleep(300 * 1000);
    lh_recv_range(p, 1, LH_N, 1000);
    CHECK(has_heads(p));
}

/* ---- a full ring: the receiver does not progress while 16 MB of small heads are sent ---- */

static int full_count(int i)
{
    (void)i;
    return 512; /* 4 KiB */
}

static void full_client(peer *p)
{
    client_switch(p, false);
    enum { WIN = 1024 };
    static int64_t vals[512];
    cdt_ucx_request *q = calloc(LH_FULL_N, sizeof(*q));
    CHECK(q != NULL);
    for (int i = 0; i < LH_FULL_N; i++) {
        lh_fill(vals, 0, full_count(i));
        vals[0] = i;
        /* the object is copied into the ring or held with its head: the buffer may change */
        CHECK_RC(
            cdt_ucx_isend(p->ep, vals, full_count(i), CDT_INT64, 5000 + (cdt_ucx_tag)i, &q[i]));
        if (i >= WIN) {
            CHECK_RC(cdt_ucx_request_wait(q[i - WIN], T_TIMEOUT_MS));
            CHECK_RC(cdt_ucx_request_free(q[i - WIN]));
        }
    }
    for (int i = LH_FULL_N - WIN; i < LH_FULL_N; i++) {
        CHECK_RC(cdt_ucx_request_wait(q[i], T_TIMEOUT_MS));
        CHECK_RC(cdt_ucx_request_free(q[i]));
    }
    free(q);
    CHECK(has_heads(p));
}

static void full_server(peer *p)
{
    server_switch(p, false);
    usleep(500 * 1000); /* no progress: the sender's ring fills, its heads wait in order */
    static int64_t v[512];
    for (int i = 0; i < LH_FULL_N; i++) {
        cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_TAG};
        CHECK_RC(cdt_ucx_recv(p->w, v, full_count(i), CDT_INT64, 0, 0, NULL, &info, T_TIMEOUT_MS));
        CHECK(info.tag == 5000 + (cdt_ucx_tag)i && v[0] == i);
        for (int k = 1; k < full_count(i); k++)
            CHECK(v[k] == k);
    }
}

/* ---- a sleeper on the worker's fd, woken by the doorbell ---- */

/* a receive completed by an application that sleeps on the worker's fd with no bound of its
 * own but 5 s: a head through the ring signals no UCX event, only the doorbell wakes it */
static void sleepy_recv(peer *p, int64_t *v, cdt_ucx_tag tag)
{
    int fd = -1;
    CHECK_RC(cdt_ucx_worker_fd(p->w, &fd));
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, v, 1, CDT_INT64, tag, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    for (;;) {
        cdt_ucx_worker_progress(p->w);
        if (cdt_ucx_request_test(r) == CDT_SUCCESS)
            break;
        int rc = cdt_ucx_worker_arm(p->w);
        if (rc == CDT_ERR_BUSY)
            continue;
        CHECK_RC(rc);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int got = poll(&pfd, 1, 5000);
        if (got == 0)
            fprintf(stderr, "[%d] asleep 5 s with tag %llu due\n", (int)getpid(),
                    (unsigned long long)tag);
        CHECK(got == 1);
    }
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
}

static void wake_client(peer *p)
{
    client_switch(p, false);
    int64_t v = 1;
    sleepy_recv(p, &v, 2); /* the server's lane switched too */
    for (int i = 0; i < LH_PINGS; i++) {
        v = i;
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, CDT_INT64, 100 + (cdt_ucx_tag)i, T_TIMEOUT_MS));
        sleepy_recv(p, &v, 100 + (cdt_ucx_tag)i);
        CHECK(v == i + 1);
    }
    CHECK(has_heads(p));
}

static void wake_server(peer *p)
{
    server_switch(p, true);
    int64_t v = 0;
    for (int i = 0; i < LH_PINGS; i++) {
        usleep(2000); /* the client is asleep by now */
        sleepy_recv(p, &v, 100 + (cdt_ucx_tag)i);
        CHECK(v == i);
        v = i + 1;
        usleep(2000);
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, CDT_INT64, 100 + (cdt_ucx_tag)i, T_TIMEOUT_MS));
    }
    CHECK(has_heads(p));
}

/* ---- a sender killed with heads in the ring, a bystander beside it ---- */

enum { LH_BY_N = 200 };
/* by_go: the server tells the bystander to connect; by_done: the bystander tells the server it
 * has checked its endpoint (the server's exit fails that endpoint: it waits for the word) */
static int by_go[2] = {-1, -1}, by_done[2] = {-1, -1}, by_pid = -1;

/* a third process: connects once the server has the victim's endpoint, sends LH_BY_N small
 * objects through its own ring, and waits for the server's answer after the victim died */
static void bystander_side(uint16_t port, int go_fd)
{
    close(by_go[1]);
    char go;
    CHECK(read(go_fd, &go, 1) == 1);
    peer p = {.is_server = 0, .port = port};
    peer_open(&p, &heads_wp);
    CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
    client_switch(&p, false);
    int64_t one = 1;
    lh_send_range(&p, 0, LH_BY_N, 8000);
    CHECK_RC(cdt_ucx_recv(p.w, &one, 1, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* the server's answer, after the victim died */
    CHECK(has_heads(&p));
    CHECK(write(by_done[1], "d", 1) == 1); /* the server may exit now */
}

/* forked between the server and the client (harness_before_client) */
static void bystander(uint16_t port)
{
    by_pid = harness_fork(bystander_side, port, by_go[0]);
    close(by_go[0]);
}

static void kill_client(peer *p)
{
    client_switch(p, true);
    int64_t v[512];
    for (int i = 0; i < LH_KILL_N; i++) {
        cdt_count n = lh_count(i % 100 == 50 ? i + 1 : i);
        lh_fill(v, i, n);
        CHECK_RC(cdt_ucx_send(p->ep, v, n, CDT_INT64, 7000 + (cdt_ucx_tag)i, T_TIMEOUT_MS));
    }
    raise(SIGKILL); /* the heads wait in the ring, unread */
}

static void kill_server(peer *p)
{
    server_switch(p, false);
    int64_t one = 0;
    /* the bystander connects, and its first objects switch its endpoint's heads too */
    CHECK(write(by_go[1], "g", 1) == 1);
    cdt_ucx_ep by;
    CHECK_RC(cdt_ucx_listener_accept(p->l, T_TIMEOUT_MS, &by));
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    usleep(300 * 1000); /* the client has written its heads and died meanwhile */
    int64_t v[512];
    for (int i = 0; i < LH_KILL_N; i++) { /* whole records are whole objects */
        cdt_count n = lh_count(i % 100 == 50 ? i + 1 : i);
        CHECK_RC(cdt_ucx_recv(p->w, v, n, CDT_INT64, 7000 + (cdt_ucx_tag)i, CDT_UCX_TAG_MASK_FULL,
                              NULL, NULL, T_TIMEOUT_MS));
        CHECK(lh_check(v, i, n));
    }
    /* then the endpoint fails, and the worker goes on */
    char t[512];
    int rc = CDT_SUCCESS;
    for (int64_t end = now_ms() + 10000; rc == CDT_SUCCESS && now_ms() < end;) {
        cdt_ucx_worker_progress(p->w);
        rc = cdt_ucx_ep_transports(p->ep, t, sizeof(t));
    }
    CHECK(rc == CDT_ERR_PEER);
    CHECK(cdt_ucx_recv(p->w, v, 1, CDT_INT64, 9999, CDT_UCX_TAG_MASK_FULL, NULL, NULL, 100) ==
          CDT_ERR_TIMEOUT);
    /* the bystander's endpoint is untouched: its objects, in order, through its ring */
    peer bp = {.w = p->w, .ep = by};
    lh_recv_range(&bp, 0, LH_BY_N, 8000);
    CHECK(has_heads(&bp));
    CHECK_RC(cdt_ucx_send(by, &one, 1, CDT_INT64, 3, T_TIMEOUT_MS));
    /* until the bystander checked its endpoint: an exit before it fails that endpoint, and a
     * bystander kept off the CPU for a while (a loaded machine) would see CDT_ERR_PEER */
    char done = 0;
    for (int64_t end = now_ms() + T_TIMEOUT_MS; done == 0;) {
        struct pollfd pfd = {.fd = by_done[0], .events = POLLIN};
        if (poll(&pfd, 1, 0) == 1)
            CHECK(read(by_done[0], &done, 1) == 1);
        else
            cdt_ucx_worker_progress(p->w);
        CHECK(now_ms() < end);
    }
    _exit(0); /* the finish handshake needs the dead peer */
}

/* ---- a sender that scribbles over its own head ring while small objects move ---- */

enum { LH_HOSTILE_N = 600 };
static atomic_int hh_stop; /* the scribbler's end (read by its thread) */

/* the start of this process's first lane mapping (0: none) */
static uintptr_t hh_segment(void)
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

/* random bytes, through /proc/self/mem while the segment is mapped (the library unmaps it when
 * the lane breaks): into the head ring of a default segment (after 4 KiB of header and grants
 * and the 1 MiB data ring), the head ring's positions and the asleep word */
static void *hh_scribble(void *arg)
{
    (void)arg;
    int mem = open("/proc/self/mem", O_RDWR);
    CHECK(mem >= 0);
    unsigned seed = (unsigned)getpid();
    const size_t heads = 4096 + ((size_t)1 << 20);
    while (!atomic_load(&hh_stop)) {
        uintptr_t seg = hh_segment();
        if (seg == 0)
            break;
        unsigned r = (unsigned)rand_r(&seed);
        size_t at = r % 8 == 0   ? 80 + r / 8 % 8
                    : r % 8 == 1 ? 160 + r / 8 % 12
                                 : heads + r / 8 % ((size_t)1 << 18);
        unsigned char b = (unsigned char)rand_r(&seed);
        (void)!pwrite(mem, &b, 1, (off_t)(seg + at));
        usleep(500);
    }
    close(mem);
    return NULL;
}

static void hostile_client(peer *p)
{
    client_switch(p, true);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, hh_scribble, NULL) == 0);
    int64_t v[512];
    int ok = 0, failed = 0;
    for (int i = 0; i < LH_HOSTILE_N && failed < 3; i++) {
        cdt_count n = 1 + (cdt_count)((i * 37) % 512);
        lh_fill(v, i, n);
        int rc = cdt_ucx_send(p->ep, v, n, CDT_INT64, 1000 + (cdt_ucx_tag)i, 3000);
        if (rc == CDT_SUCCESS)
            ok++;
        else
            failed++;
        CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT);
    }
    atomic_store(&hh_stop, 1);
    pthread_join(th, NULL);
    fprintf(stderr, "hostile sender: %d sends completed, %d failed\n", ok, failed);
    _exit(0); /* the finish handshake may need a lane this side broke */
}

/* every receive completes (its bytes are the peer's to choose) or fails with an error code,
 * within its timeout; once the lane broke the endpoint fails with CDT_ERR_PEER */
static void hostile_server(peer *p)
{
    server_switch(p, true);
    int64_t v[512];
    int ok = 0, failed = 0, intact = 0;
    for (int i = 0; i < LH_HOSTILE_N && failed < 3; i++) {
        cdt_count n = 1 + (cdt_count)((i * 37) % 512);
        int rc = cdt_ucx_recv(p->w, v, n, CDT_INT64, 0, 0, NULL, NULL, 3000);
        if (rc == CDT_SUCCESS) {
            ok++;
            intact += lh_check(v, i, n);
        } else {
            failed++;
            CHECK(rc < 0);
        }
    }
    char t[512];
    int rc = cdt_ucx_ep_transports(p->ep, t, sizeof(t));
    fprintf(stderr, "hostile receiver: %d received (%d intact), %d failed; endpoint %d\n", ok,
            intact, failed, rc);
    CHECK(failed == 0 || rc == CDT_ERR_PEER || rc == CDT_SUCCESS);
    _exit(0);
}

/* ---- a consumer that dies while its producer sends small objects now and then ---- */

/* each send completes when its head is written into the ring, touching no socket: the
 * producer learns of the death from the consumer's pidfd (before the fix, only once the ring
 * was full, 256 KiB of heads later: about 13 s at this pace) */
static void dead_client(peer *p)
{
    client_switch(p, true); /* the server switched too, and exits soon */
    int64_t v[16] = {0};
    int rc = CDT_SUCCESS, sent = 0;
    for (int64_t end = now_ms() + 3000; rc == CDT_SUCCESS && now_ms() < end; sent++) {
        rc = cdt_ucx_send(p->ep, v, 16, CDT_INT64, 3, 1000);
        usleep(10 * 1000);
    }
    fprintf(stderr, "dead consumer: %d sends, then %d\n", sent, rc);
    CHECK(rc == CDT_ERR_PEER);
    _exit(0); /* no finish handshake with a dead peer */
}

static void dead_server(peer *p)
{
    server_switch(p, true);
    progress_for(p, 200); /* the client sends meanwhile, its heads taken */
    _exit(0);             /* gone without a close: its lanes and endpoint with it */
}

/* ---- a receiver whose heads stay off ---- */

static void client_heads_on(uint16_t port)
{
    (void)port;
    setenv("CDT_UCX_LANE_HEADS", "on", 1);
}

static void fallback_client(peer *p)
{
    lh_send_range(p, 0, 400, 1000);
    CHECK(!has_heads(p));
}

static void fallback_server(peer *p)
{
    lh_recv_range(p, 0, 400, 1000);
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    CHECK(strstr(t, "lane=memfd") != NULL && strstr(t, "+heads") == NULL);
}

/* ---- the switch unset: heads through the ring, the default ---- */

static void default_client(peer *p)
{
    lh_send_range(p, 0, 400, 1000);
    lane_wait_heads(p);
    CHECK(has_heads(p));
}

static void default_server(peer *p)
{
    lh_recv_range(p, 0, 400, 1000);
    lane_wait_heads(p);
}

int lane_heads_case(const char *which)
{
    if (strcmp(which, "default") == 0) {
        unsetenv("CDT_UCX_LANE_HEADS"); /* both sides: the switch at its default, on */
        return run_pair(default_server, default_client, &heads_wp, &heads_wp, 0);
    }
    if (strcmp(which, "off") == 0) {
        setenv("CDT_UCX_LANE_HEADS", "off", 1); /* both sides: every head over UCX */
        return run_pair(fallback_server, fallback_client, &heads_wp, &heads_wp, 0);
    }
    if (strcmp(which, "order") == 0) {
        lh_received = mmap(NULL, sizeof(*lh_received), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        CHECK(lh_received != MAP_FAILED);
        atomic_init(lh_received, 0);
        return run_pair(order_server, order_client, &heads_wp, &heads_wp, 0);
    }
    if (strcmp(which, "full") == 0)
        return run_pair(full_server, full_client, &heads_wp, &heads_wp, 0);
    if (strcmp(which, "wakeup") == 0)
        return run_pair(wake_server, wake_client, &heads_wp, &heads_wp, 0);
    if (strcmp(which, "kill") == 0) {
        /* the client dies by its own SIGKILL; a third process beside it must not notice */
        CHECK(pipe(by_go) == 0 && pipe(by_done) == 0);
        harness_before_client = bystander;
        int rc = run_pair_ex(kill_server, kill_client, &heads_wp, &heads_wp, -SIGKILL, 0);
        return harness_reap(by_pid, "bystander", 0) ? rc : 1;
    }
    if (strcmp(which, "dead_consumer") == 0)
        return run_pair(dead_server, dead_client, &heads_wp, &heads_wp, 0);
    if (strcmp(which, "hostile") == 0)
        return run_pair(hostile_server, hostile_client, &heads_wp, &heads_wp, 0);
    if (strcmp(which, "noself") == 0) /* UCX_TLS without self: both sides on, no ring */
        return run_pair(fallback_server, fallback_client, &heads_wp, &heads_wp, 0);
    if (strcmp(which, "fallback") == 0) {
        /* the server's worker takes no heads; the client's offers a version 2 segment */
        setenv("CDT_UCX_LANE_HEADS", "off", 1);
        harness_before_client = client_heads_on;
        return run_pair(fallback_server, fallback_client, &heads_wp, &heads_wp, 0);
    }
    fprintf(stderr, "unknown lane_heads case %s\n", which);
    return 2;
}
