/*
 * cases_lane_setup.c - the lane's setup and end as the transport does them (docs/TRANSPORT.md
 * §10.2, §10.5): a peer's offer or no-lane record read as soon as it comes, also in a later
 * stream chunk than its id; an endpoint closed with lane sends pending (one waiting for its
 * grant, one half packed into the lane); the fallbacks that can be forced here (a peer with the
 * lane off, a producer whose descriptors cannot be opened, a limit on file sizes), each
 * visible in cdt_ucx_ep_transports while objects still move the version 6 way; the bound on a
 * worker's producer lanes, and the descriptors they hold once attached.
 */
#include "cases.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucp/api/ucp.h>

/* raw UCX tag messages between the two sides (libcdt posts no receive in these cases) */
#define RAW_TAG UINT64_C(0x4C414E45)

static void raw_wait(peer *p, void *q)
{
    CHECK(!UCS_PTR_IS_ERR(q));
    if (q == NULL)
        return;
    while (ucp_request_check_status(q) == UCS_INPROGRESS)
        cdt_ucx_worker_progress(p->w);
    CHECK(ucp_request_check_status(q) == UCS_OK);
    ucp_request_free(q);
}

static void raw_tag_send(peer *p, uint64_t tag)
{
    static unsigned char byte = 1;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), &byte, 1, tag, &prm));
}

/* progress until the raw message on `tag` came: everything the peer sent before it on the
 * endpoint was handled by UCX in this or an earlier progress call */
static void raw_tag_recv(peer *p, uint64_t tag)
{
    unsigned char byte;
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_tag_recv_nbx((ucp_worker_h)cdt_ucx_worker_handle(p->w), &byte, 1, tag,
                                 UINT64_MAX, &prm));
}

static void raw_stream_send(peer *p, const void *b, size_t n)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    raw_wait(p, ucp_stream_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), b, n, &prm));
}

/* The client writes its stream by hand: its endpoint's id, a marker; once the server has read
 * the id (its answer), a no-lane record and a second marker, so that the record comes in a
 * later chunk than the id. The server must have read the record by the time the second marker
 * came: a worker reads the stream on every progress call while an endpoint owes its record. */
static void late_offer_client(peer *p)
{
    unsigned char id[8];
    uint64_t v = cdt_ucx_ep_id(p->ep);
    for (int i = 0; i < 8; i++)
        id[i] = (unsigned char)(v >> (8 * i));
    raw_stream_send(p, id, sizeof(id));
    raw_tag_send(p, RAW_TAG);
    raw_tag_recv(p, RAW_TAG + 1);
    unsigned char rec[44] = {'C', 'D', 'T', 'N', 'l', 'a', 't', 'e'};
    raw_stream_send(p, rec, sizeof(rec));
    raw_tag_send(p, RAW_TAG + 2);
}

static void late_offer_server(peer *p)
{
    raw_tag_recv(p, RAW_TAG);
    CHECK(cdt_ucx_ep_peer_id(p->ep) != 0);
    raw_tag_send(p, RAW_TAG + 1);
    raw_tag_recv(p, RAW_TAG + 2);
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    fprintf(stderr, "server transports: %s\n", t);
    CHECK(strstr(t, "lane=none/peer-late") != NULL);
}

int lane_late_offer_case(void)
{
    static const cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    return run_pair(late_offer_server, late_offer_client, &wp, &wp, 0);
}

/* ---------------------------------------------------------------- close ----------------- */

/* a custom type of CP_LEN bytes whose pack callback says when the stream passed CP_AT: the
 * send is then half way through the lane (its ring holds 1 MiB). The receiver's unpack waits
 * at CP_AT until the sender has closed its endpoint (a flag in memory both processes share):
 * without that hold a fast receiver can drain the ring so quickly that the sender finishes the
 * object in the progress call that passed CP_AT, or in its close's flush (which moves granted
 * lane sends on: docs/TRANSPORT.md §10.5), and the case would test a delivery. */
enum { CP_LEN = 16 << 20, CP_AT = 4 << 20 };
static volatile int cp_packed_past;
/* what the two processes share (MAP_SHARED, made before the fork) */
struct cp_shared {
    int sender_closed; /* the second case's close is done */
    int third_rc;      /* the third case's send ended with this */
    int third_done;
};
static volatile struct cp_shared *cp_shared;

static int cp_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    if (offset > CP_AT)
        cp_packed_past = 1;
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

static int cp_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                     cdt_count src_size)
{
    if (offset + src_size > CP_AT)
        for (int64_t end = now_ms() + T_TIMEOUT_MS; !cp_shared->sender_closed && now_ms() < end;)
            usleep(1000);
    return bytes_unpack(state, buf, count, offset, src, src_size);
}

static cdt_type cp_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, cp_pack, cp_unpack, NULL, NULL, NULL,
                                    0, &t));
    return t;
}

/* close p->ep with the lane send q pending, which the close's flush cannot finish (its
 * receiver has not posted it, or holds it): q ends with CDT_ERR_CANCELED, and nothing of the
 * lane is left mapped or open */
static void close_with(peer *p, cdt_ucx_request q, const char *what)
{
    CHECK(cdt_ucx_request_test(q) == CDT_INPROGRESS);
    int64_t t0 = now_ms();
    int close_rc = cdt_ucx_ep_close(p->ep, 300);
    p->ep = NULL;
    int64_t t1 = now_ms();
    int rc = cdt_ucx_request_wait(q, 5000);
    fprintf(
        stderr,
        "a send %s, its endpoint closed (%s in %lld ms): %s; %d lane mappings, %d descriptors\n",
        what, cdt_err_name(close_rc), (long long)(t1 - t0), cdt_err_name(rc), lane_maps(),
        lane_fds());
    CHECK(rc == CDT_ERR_CANCELED);
    cdt_ucx_request_free(q);
    CHECK(lane_maps() == 0 && lane_fds() == 0);
}

/* The client closes its endpoint three times with a lane send pending, each time on a new
 * endpoint: while the send waits for its grant (the server has not posted its receive); while
 * it is half packed into the lane and the server holds it (both must fail); while it is half
 * packed and the server takes it at full speed (the close's flush may finish it: then the
 * server has it whole, else both fail). */
static void close_pending_client(peer *p)
{
    int64_t one = 1;
    char *buf = malloc(CP_LEN);
    CHECK(buf != NULL);
    memset(buf, 0x5A, CP_LEN);
    cdt_type t = cp_type();
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    cdt_ucx_request q;
    CHECK_RC(cdt_ucx_isend(p->ep, buf, CP_LEN, t, 2, &q));
    progress_for(p, 50);
    close_with(p, q, "waiting for its grant");
    CHECK_RC(cdt_ucx_ep_connect(p->w, "127.0.0.1", p->port, T_TIMEOUT_MS, &p->ep));
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 3, T_TIMEOUT_MS));
    wait_lane(p);
    CHECK_RC(cdt_ucx_isend(p->ep, buf, CP_LEN, t, 4, &q));
    for (int64_t end = now_ms() + T_TIMEOUT_MS; !cp_packed_past && now_ms() < end;)
        CHECK(cdt_ucx_request_test(q) == CDT_INPROGRESS);
    CHECK(cp_packed_past);
    close_with(p, q, "half packed into the lane");
    cp_shared->sender_closed = 1;
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) == 0);
    /* third: half packed while the receiver takes it at full speed, closed with time to
     * flush: the close may finish it or cancel it, and the receiver must agree either way */
    CHECK_RC(cdt_ucx_ep_connect(p->w, "127.0.0.1", p->port, T_TIMEOUT_MS, &p->ep));
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 5, T_TIMEOUT_MS));
    wait_lane(p);
    cp_packed_past = 0;
    CHECK_RC(cdt_ucx_isend(p->ep, buf, CP_LEN, t, 6, &q));
    for (int64_t end = now_ms() + T_TIMEOUT_MS; !cp_packed_past && now_ms() < end;)
        if (cdt_ucx_request_test(q) != CDT_INPROGRESS)
            break;
    int close_rc = cdt_ucx_ep_close(p->ep, 5000);
    p->ep = NULL;
    int rc = cdt_ucx_request_wait(q, 5000);
    cdt_ucx_request_free(q);
    fprintf(stderr, "a send half packed, its endpoint closed with time to flush (%s): %s\n",
            cdt_err_name(close_rc), cdt_err_name(rc));
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_CANCELED);
    cp_shared->third_rc = rc;
    __atomic_store_n(&cp_shared->third_done, 1, __ATOMIC_RELEASE);
    cdt_type_free(&t);
    free(buf);
}

/* the receive of an object whose sender closed its endpoint fails with CDT_ERR_PEER within the
 * keepalive bound */
static void recv_fails(peer *p, void *buf, cdt_type t, cdt_ucx_tag tag)
{
    int64_t t0 = now_ms();
    int rc =
        cdt_ucx_recv(p->w, buf, CP_LEN, t, tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS);
    fprintf(stderr, "the receive of object %d, its sender's endpoint closed: %s after %lld ms\n",
            (int)tag, cdt_err_name(rc), (long long)(now_ms() - t0));
    CHECK(rc == CDT_ERR_PEER);
    CHECK(now_ms() - t0 < 5000);
}

static void close_pending_server(peer *p)
{
    int64_t one = 0;
    char *buf = malloc(CP_LEN);
    CHECK(buf != NULL);
    cdt_type t = cp_type();
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    cdt_ucx_ep second;
    CHECK_RC(cdt_ucx_listener_accept(p->l, T_TIMEOUT_MS, &second));
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    recv_fails(p, buf, t, 2);
    recv_fails(p, buf, t, 4);
    fprintf(stderr, "server: %d lane mappings\n", lane_maps());
    CHECK(lane_maps() == 0);
    cdt_ucx_ep_close(second, 2000);
    cdt_ucx_ep_close(p->ep, 2000);
    p->ep = NULL;
    CHECK(lane_fds() == 0);
    /* third: a send ends either way, never both (docs/TRANSPORT.md §10.5) */
    CHECK_RC(cdt_ucx_listener_accept(p->l, T_TIMEOUT_MS, &p->ep));
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 5, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    memset(buf, 0, CP_LEN);
    int rc = cdt_ucx_recv(p->w, buf, CP_LEN, t, 6, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS);
    for (int64_t end = now_ms() + T_TIMEOUT_MS;
         !__atomic_load_n(&cp_shared->third_done, __ATOMIC_ACQUIRE) && now_ms() < end;)
        cdt_ucx_worker_progress(p->w); /* the client's close flushes: it needs this side */
    CHECK(cp_shared->third_done);
    bool whole = true;
    for (size_t i = 0; i < CP_LEN && whole; i++)
        whole = (unsigned char)buf[i] == 0x5A;
    fprintf(stderr, "the receive of object 6: %s (%s), its send: %s\n", cdt_err_name(rc),
            whole ? "whole" : "not whole", cdt_err_name(cp_shared->third_rc));
    CHECK((cp_shared->third_rc == CDT_SUCCESS && rc == CDT_SUCCESS && whole) ||
          (cp_shared->third_rc == CDT_ERR_CANCELED && rc == CDT_ERR_PEER));
    cdt_ucx_ep_close(p->ep, 2000);
    p->ep = NULL;
    cdt_type_free(&t);
    free(buf);
}

int lane_close_pending_case(void)
{
    static const cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    void *shared = mmap(NULL, sizeof(struct cp_shared), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(shared != MAP_FAILED);
    cp_shared = shared;
    memset(shared, 0, sizeof(struct cp_shared));
    int rc = run_pair(close_pending_server, close_pending_client, &wp, &wp, 0);
    munmap(shared, sizeof(struct cp_shared));
    cp_shared = NULL;
    return rc;
}

/* ---------------------------------------------------------------- fallbacks ------------- */

/* the lane on (whatever CDT_UCX_LANE says), and off */
static const cdt_ucx_worker_params fb_on = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
static const cdt_ucx_worker_params fb_off = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 0};
enum { FB_N = 65536 };
static int fb_case; /* 1 peer off, 2 not readable, 3 limit */

/* progress until p->ep's transports contain `want` (10 s at most) */
static void wait_transports(peer *p, const char *want)
{
    char t[512];
    for (int64_t end = now_ms() + 10000;;) {
        CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
        if (strstr(t, want) != NULL || now_ms() >= end)
            break;
        cdt_ucx_worker_progress(p->w);
    }
    fprintf(stderr, "[%s] transports: %s\n", p->is_server ? "server" : "client", t);
    CHECK(strstr(t, want) != NULL);
}

/* files of this process limited to 64 KiB (RLIMIT_FSIZE; SIGXFSZ ignored): a memfd cannot grow
 * to a segment's size (EFBIG). A limit that touches nothing UCX needs, unlike one on
 * descriptors (UCX 1.22 opens files while it sets up its first stream send). Returns the old
 * limit. */
static struct rlimit fb_limit(void)
{
    struct rlimit old, low;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    low = old;
    low.rlim_cur = 64 << 10;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &low) == 0);
    return old;
}

static void fb_undo(struct rlimit old)
{
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
}

/* The client sends a small object (its id and its offer, or its no-lane record), then a packed
 * object of FB_N struct_simple that would go through a lane; the server answers with the same
 * two. Every object arrives; the client's objects never take a lane (the server's may, in the
 * cases where only the client's lane fails), and each side says why. */
static void fb_client(peer *p)
{
    int64_t one = 1;
    struct_simple *s = malloc(FB_N * sizeof(*s)), *ref = malloc(FB_N * sizeof(*s));
    CHECK(s != NULL && ref != NULL);
    struct_simple_fill(ref, FB_N, 5);
    if (fb_case == 2)
        CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0); /* /proc/<pid>/fd: not for the peer */
    if (fb_case == 3) {
        struct rlimit old = fb_limit();
        CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
        fb_undo(old);
    } else {
        CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    }
    if (fb_case == 2)
        CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0); /* the peer's cma reads of this side */
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t))); /* before the server's offer came */
    fprintf(stderr, "[client] transports after its offer: %s\n", t);
    if (fb_case != 1)
        CHECK(strstr(t, fb_case == 2 ? "lane=none/not-attached" : "lane=none/limit") != NULL);
    CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS)); /* the server has read the offer */
    CHECK_RC(cdt_ucx_send(p->ep, ref, FB_N, struct_simple_type(), 3, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_recv(p->w, s, FB_N, struct_simple_type(), 4, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(struct_simple_equal(s, ref, FB_N));
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) == 0);
    if (fb_case == 1) { /* no lane either way; its own segment went when the peer said off */
        wait_transports(p, "lane=none/peer-off");
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) == 0);
        CHECK(lane_maps() == 0);
    }
    free(s);
    free(ref);
}

/* drop CAP_SYS_PTRACE (a root test run has it; it overrides the producer's dumpable flag) */
static void drop_ptrace_cap(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    CHECK(syscall(SYS_capget, &h, d) == 0);
    d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
    CHECK(syscall(SYS_capset, &h, d) == 0);
}

static void fb_server(peer *p)
{
    int64_t one = 0;
    struct_simple *s = malloc(FB_N * sizeof(*s)), *ref = malloc(FB_N * sizeof(*s));
    CHECK(s != NULL && ref != NULL);
    struct_simple_fill(ref, FB_N, 5);
    if (fb_case == 2)
        drop_ptrace_cap();
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    wait_transports(p, fb_case == 1   ? "lane=none/off"
                       : fb_case == 2 ? "lane=none/attach-refused"
                                      : "lane=none/peer-limit");
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_recv(p->w, s, FB_N, struct_simple_type(), 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(struct_simple_equal(s, ref, FB_N));
    CHECK_RC(cdt_ucx_send(p->ep, ref, FB_N, struct_simple_type(), 4, T_TIMEOUT_MS));
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) == 0);
    if (fb_case == 1)
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) == 0);
    free(s);
    free(ref);
}

int lane_fallback_case(const char *which)
{
    fb_case = strcmp(which, "peer_off") == 0 ? 1 : strcmp(which, "not_readable") == 0 ? 2 : 3;
    return run_pair(fb_server, fb_client, fb_case == 1 ? &fb_off : &fb_on, &fb_on, 0);
}

/* ---------------------------------------------------------------- the bound ------------- */

/* The client offers lanes on PL_EPS endpoints to one server: 64 (CDT__UCX_LANE_MAX_PEERS) are
 * attached, the rest say lane=none/limit, and the attached ones hold one descriptor each (the
 * pidfd of the consumer: the memfd was closed once the consumer mapped it). */
enum { PL_EPS = 66, PL_MAX = 64 };

static void producer_limit_client(peer *p)
{
    cdt_ucx_ep eps[PL_EPS];
    eps[0] = p->ep;
    /* connected in the background, 32 at a time (one by one, each connect waits for the
     * server's accept; all at once, more than the listener's queue of 64 requests): the first
     * send on each waits for its connection */
    cdt_ucx_connect_params cp = {.field_mask = CDT_UCX_CONNECT_PARAM_FLAGS,
                                 .flags = CDT_UCX_CONNECT_NO_WAIT};
    int64_t v = 0;
    CHECK_RC(cdt_ucx_send(eps[0], &v, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers */
    for (int first = 1; first < PL_EPS; first += 32) {
        int last = first + 32 < PL_EPS ? first + 32 : PL_EPS;
        for (int i = first; i < last; i++)
            CHECK_RC(cdt_ucx_ep_connect_advanced(p->w, "127.0.0.1", p->port, &cp, &eps[i]));
        for (int i = first; i < last; i++) {
            v = i;
            CHECK_RC(cdt_ucx_send(eps[i], &v, 1, CDT_INT64, 1, T_TIMEOUT_MS));
        }
    }
    int lanes = 0, limited = 0;
    char t[512];
    for (int64_t end = now_ms() + 10000; now_ms() < end;) {
        lanes = limited = 0;
        for (int i = 0; i < PL_EPS; i++) {
            CHECK_RC(cdt_ucx_ep_transports(eps[i], t, sizeof(t)));
            lanes += strstr(t, "lane=memfd") != NULL;
            limited += strstr(t, "lane=none/limit") != NULL;
        }
        if (lanes + limited == PL_EPS)
            break;
        cdt_ucx_worker_progress(p->w);
    }
    fprintf(stderr, "%d endpoints: %d with a lane, %d limit; %d lane mappings, %d descriptors\n",
            PL_EPS, lanes, limited, lane_maps(), lane_fds());
    CHECK(lanes == PL_MAX && limited == PL_EPS - PL_MAX);
    CHECK(lane_maps() == PL_MAX && lane_fds() == PL_MAX);
    int64_t done = 1;
    CHECK_RC(cdt_ucx_send(eps[0], &done, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    /* the others go with the worker (closed one by one, each waits for its flush) */
}

static void producer_limit_server(peer *p)
{
    cdt_ucx_ep eps[PL_EPS];
    for (int i = 1; i < PL_EPS; i++)
        CHECK_RC(cdt_ucx_listener_accept(p->l, T_TIMEOUT_MS, &eps[i]));
    for (int i = 0; i < PL_EPS; i++) {
        int64_t v;
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
    }
    int64_t done;
    CHECK_RC(cdt_ucx_recv(p->w, &done, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
}

int lane_producer_limit_case(void)
{
    harness_alarm_s = 240; /* 65 accepts one after the other: seconds on a loaded machine */
    return run_pair(producer_limit_server, producer_limit_client, &fb_on, &fb_on, 0);
}
