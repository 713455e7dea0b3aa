/*
 * cases_lane_split_cancel.c - receives of SPLIT objects (docs/TRANSPORT.md §10.3, Regions moved
 * by both cores) canceled at every point of their life: before a message matched, while the
 * stream comes, while the record waits, while the sender pushes its share, after the word. The
 * receiver posts a receive (with a bound type, or through a prepare callback as a wildcard
 * receiver does), progresses a random number of times and cancels it. Every cancel must
 * complete within CANCEL_BOUND_MS, every receive that completes must hold its sender's object
 * byte for byte, and the endpoint goes on: the next object arrives. CDT_TEST_STRESS_S runs it
 * longer than the test's default seconds (a search for a rare path, not part of the suite).
 */
#include "cases.h"

enum { SC_DATA = 100, SC_END = 101, SC_TAG_SHIFT = 8, CANCEL_BOUND_MS = 5000 };

/* the shapes sent in turn: all SPLIT where the lane splits (32 KiB of 8 KiB regions at least) */
static const struct {
    cdt_count n, len;
} sc_shapes[] = {{4, 2048}, {5, 4096}, {2, 65536}, {16, 2048}, {3, 100003}, {64, 4096}};
enum { SC_NSHAPES = sizeof(sc_shapes) / sizeof(sc_shapes[0]) };

static int64_t stress_ms(void)
{
    const char *s = getenv("CDT_TEST_STRESS_S");
    return s != NULL && atoi(s) > 0 ? (int64_t)atoi(s) * 1000 : 4000;
}

static void split_cancel_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    wait_lane(p);
    int64_t sent = 0;
    cdt_ucx_request end = NULL;
    int64_t stop = 0;
    CHECK_RC(cdt_ucx_irecv(p->w, &stop, 1, CDT_INT64, SC_END, CDT_UCX_TAG_MASK_FULL, NULL, &end));
    /* WINDOW objects in flight, so that a receive usually finds a message to match */
    enum { WINDOW = 4 };
    cdt_ucx_request q[WINDOW] = {0};
    double_vec v[WINDOW] = {0};
    while (cdt_ucx_request_test(end) == CDT_INPROGRESS) {
        int slot = (int)(sent % WINDOW), k = (int)(sent % SC_NSHAPES);
        while (q[slot] != NULL && cdt_ucx_request_test(q[slot]) == CDT_INPROGRESS &&
               cdt_ucx_request_test(end) == CDT_INPROGRESS)
            cdt_ucx_worker_progress(p->w);
        if (q[slot] != NULL && cdt_ucx_request_test(q[slot]) == CDT_INPROGRESS)
            break; /* the end came */
        if (q[slot] != NULL) {
            CHECK_RC(cdt_ucx_request_test(q[slot])); /* a canceled receive fails no send */
            cdt_ucx_request_free(q[slot]);
            double_vec_clear(&v[slot]);
        }
        CHECK_RC(double_vec_init(&v[slot], sc_shapes[k].n, sc_shapes[k].len, (int)(sent & 0xffff)));
        uint64_t tag = SC_DATA | ((uint64_t)(sent & 0xffff) << SC_TAG_SHIFT);
        CHECK_RC(cdt_ucx_isend(p->ep, &v[slot], 1, double_vec_type(), tag, &q[slot]));
        sent++;
    }
    /* the server ended: what it did not take is let go with the endpoint */
    cdt_ucx_ep_close(p->ep, 2000);
    p->ep = NULL;
    for (int i = 0; i < WINDOW; i++)
        if (q[i] != NULL) {
            cdt_ucx_request_wait(q[i], T_TIMEOUT_MS);
            cdt_ucx_request_free(q[i]);
            double_vec_clear(&v[i]);
        }
    CHECK_RC(cdt_ucx_request_wait(end, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(end));
    fprintf(stderr, "client: %lld objects sent\n", (long long)sent);
}

/* the prepare callback's receive: its object's memory, bound once the header is in */
typedef struct sc_prep {
    double_vec v;
    int prepared;
} sc_prep;

static int sc_prepare(void *arg, cdt_decoder d)
{
    sc_prep *x = arg;
    x->prepared = 1;
    return cdt_decoder_bind(d, &x->v, 1, double_vec_type());
}

static void split_cancel_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    const int64_t until = now_ms() + stress_ms();
    uint64_t rng = 0x9e3779b97f4a7c15u;
    long got = 0, canceled = 0, canceled_matched = 0, slow = 0;
    int64_t worst = 0;
    while (now_ms() < until) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        const int with_prepare = (int)(rng & 1);
        /* 0 to 4,095 progress calls, weighted to the short end: most phases of an object */
        const int spins = (int)((rng >> 8) & 4095) >> (int)((rng >> 20) & 7);
        sc_prep *x = calloc(1, sizeof(*x));
        CHECK(x != NULL);
        cdt_ucx_recv_params rp = {
            .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = sc_prepare, .prepare_arg = x};
        cdt_ucx_request r;
        CHECK_RC(cdt_ucx_irecv(p->w, with_prepare ? NULL : &x->v, with_prepare ? 0 : 1,
                               with_prepare ? NULL : double_vec_type(), SC_DATA, 0xff,
                               with_prepare ? &rp : NULL, &r));
        for (int i = 0; i < spins && cdt_ucx_request_test(r) == CDT_INPROGRESS; i++)
            cdt_ucx_worker_progress(p->w);
        int rc = cdt_ucx_request_test(r);
        if (rc == CDT_INPROGRESS) {
            CHECK_RC(cdt_ucx_request_cancel(r));
            int64_t t0 = now_ms();
            rc = cdt_ucx_request_wait(r, CANCEL_BOUND_MS);
            int64_t took = now_ms() - t0;
            worst = took > worst ? took : worst;
            slow += took > 100;
            if (rc == CDT_ERR_TIMEOUT)
                fprintf(stderr,
                        "a receive still pending %d ms after its cancel (%s, %d progress calls "
                        "before it, %s)\n",
                        CANCEL_BOUND_MS, with_prepare ? "prepare callback" : "bound type", spins,
                        x->prepared || x->v.n > 0 ? "matched" : "no message seen matched");
            CHECK(rc != CDT_ERR_TIMEOUT);
        }
        if (rc == CDT_SUCCESS) {
            cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_TAG};
            CHECK_RC(cdt_ucx_request_recv_info(r, &info));
            int seq = (int)(info.tag >> SC_TAG_SHIFT);
            double_vec want;
            int k = 0;
            /* the shape is the sender's count modulo the shapes; its seed the low bits */
            for (k = 0; k < SC_NSHAPES; k++)
                if (sc_shapes[k].n == x->v.n && x->v.n > 0 && x->v.lens[0] == sc_shapes[k].len)
                    break;
            CHECK(k < SC_NSHAPES);
            CHECK_RC(double_vec_init(&want, sc_shapes[k].n, sc_shapes[k].len, seq));
            CHECK(double_vec_equal(&x->v, &want));
            double_vec_clear(&want);
            got++;
        } else {
            CHECK(rc == CDT_ERR_CANCELED);
            canceled++;
            canceled_matched += x->prepared || x->v.n > 0;
        }
        CHECK_RC(cdt_ucx_request_free(r));
        double_vec_clear(&x->v);
        free(x);
    }
    fprintf(stderr,
            "server: %ld objects received whole, %ld receives canceled (%ld after a message "
            "matched), %ld cancels took over 100 ms, the longest %lld ms\n",
            got, canceled, canceled_matched, slow, (long long)worst);
    CHECK(got > 0 && canceled_matched > 0);
    int64_t stop = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &stop, 1, CDT_INT64, SC_END, T_TIMEOUT_MS));
    /* until the client saw the end and closed its endpoint */
    progress_for(p, 200);
}

int lane_split_cancel_case(void)
{
    static const cdt_ucx_worker_params lane = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    harness_alarm_s = (unsigned)(stress_ms() / 1000) + 60;
    return run_pair(split_cancel_server, split_cancel_client, &lane, &lane, 0);
}
