/*
 * cases_async.c - requests that overlap, wait or sleep: non-blocking sends and receives,
 * cancel and a receive that times out, eight threads on one endpoint, an application's
 * event loop on the worker's fd (CDT_UCX_WAKEUP=1), and an object that reaches its receiver
 * while its sender does not progress.
 */
#include "cases.h"

/* ---------------------------------------------------------------- non-blocking overlap --- */

enum { NB_N = 64 };

void nonblocking_client(peer *p)
{
    double_vec dv[NB_N];
    cdt_ucx_request req[NB_N];
    for (int i = 0; i < NB_N; i++) {
        CHECK_RC(double_vec_init(&dv[i], 1 + i % 5, (i % 3) ? 20000 : 10, i));
        CHECK_RC(cdt_ucx_isend(p->ep, &dv[i], 1, double_vec_type(), (cdt_ucx_tag)i, &req[i]));
    }
    for (int i = NB_N - 1; i >= 0; i--) {
        CHECK_RC(cdt_ucx_request_wait(req[i], T_TIMEOUT_MS));
        CHECK_RC(cdt_ucx_request_free(req[i]));
        double_vec_clear(&dv[i]);
    }
}

/* the i-th object nonblocking_client sends, received into *got (then cleared) */
static void check_nb_object(double_vec *got, int i)
{
    double_vec ref;
    CHECK_RC(double_vec_init(&ref, 1 + i % 5, (i % 3) ? 20000 : 10, i));
    CHECK(double_vec_equal(&ref, got));
    double_vec_clear(&ref);
    double_vec_clear(got);
}

void nonblocking_server(peer *p)
{
    double_vec dv[NB_N];
    cdt_ucx_request req[NB_N];
    memset(dv, 0, sizeof(dv));
    /* posted in reverse tag order; each matches its own tag */
    for (int i = NB_N - 1; i >= 0; i--)
        CHECK_RC(cdt_ucx_irecv(p->w, &dv[i], 1, double_vec_type(), (cdt_ucx_tag)i,
                               CDT_UCX_TAG_MASK_FULL, NULL, &req[i]));
    int left = NB_N;
    int64_t deadline = (int64_t)time(NULL) + 20;
    while (left > 0 && (int64_t)time(NULL) < deadline) {
        for (int i = 0; i < NB_N; i++) {
            if (req[i] == NULL)
                continue;
            int rc = cdt_ucx_request_test(req[i]);
            if (rc == CDT_INPROGRESS)
                continue;
            CHECK_RC(rc);
            cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL};
            CHECK_RC(cdt_ucx_request_recv_info(req[i], &info));
            CHECK(info.tag == (cdt_ucx_tag)i);
            CHECK_RC(cdt_ucx_request_free(req[i]));
            req[i] = NULL;
            check_nb_object(&dv[i], i);
            left--;
        }
    }
    CHECK(left == 0);
}

/* ---------------------------------------------------------------- cancel ------------------ */

void cancel_client(peer *p)
{
    int32_t v = 5;
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, CDT_INT32, 2, T_TIMEOUT_MS));
}

void cancel_server(peer *p)
{
    int32_t v = 0, never = 0;
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, &never, 1, CDT_INT32, 1, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    CHECK(cdt_ucx_request_test(r) == CDT_INPROGRESS);
    CHECK(cdt_ucx_request_free(r) == CDT_ERR_BUSY);
    CHECK_RC(cdt_ucx_request_cancel(r));
    CHECK(cdt_ucx_request_wait(r, T_TIMEOUT_MS) == CDT_ERR_CANCELED);
    CHECK_RC(cdt_ucx_request_free(r));
    /* a blocking receive that times out */
    CHECK(cdt_ucx_recv(p->w, &never, 1, CDT_INT32, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, 200) ==
          CDT_ERR_TIMEOUT);
    /* the worker still works */
    CHECK_RC(
        cdt_ucx_recv(p->w, &v, 1, CDT_INT32, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    CHECK(v == 5 && never == 0);
}

/* ---------------------------------------------------------------- threads ----------------- */

enum { TH_N = 8, TH_MSGS = 1000 };

typedef struct th_arg {
    peer *p;
    int id;
} th_arg;

/* object of thread t, message i: a double_vec whose size varies, some regions zero-copy */
static void th_object(double_vec *v, int t, int i)
{
    cdt_count n = 1 + (i % 3), len = (i % 50 == 0) ? 20000 : 1 + (i % 37);
    CHECK_RC(double_vec_init(v, n, len, t * 100000 + i));
    v->data[0][0] = t;
    if (len > 1)
        v->data[0][1] = i;
}

static void *th_send(void *argp)
{
    th_arg *a = argp;
    for (int i = 0; i < TH_MSGS; i++) {
        double_vec v;
        th_object(&v, a->id, i);
        CHECK_RC(cdt_ucx_send(a->p->ep, &v, 1, double_vec_type(), TAG, T_TIMEOUT_MS));
        double_vec_clear(&v);
    }
    return NULL;
}

void threads_client(peer *p)
{
    pthread_t th[TH_N];
    th_arg args[TH_N];
    for (int t = 0; t < TH_N; t++) {
        args[t] = (th_arg){p, t};
        CHECK(pthread_create(&th[t], NULL, th_send, &args[t]) == 0);
    }
    for (int t = 0; t < TH_N; t++)
        pthread_join(th[t], NULL);
}

void threads_server(peer *p)
{
    int next[TH_N] = {0};
    for (int k = 0; k < TH_N * TH_MSGS; k++) {
        double_vec v = {0};
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS));
        int t = v.data[0][0];
        CHECK(t >= 0 && t < TH_N);
        int i = next[t]++; /* each thread's messages arrive in its order */
        double_vec ref;
        th_object(&ref, t, i);
        CHECK(double_vec_equal(&ref, &v));
        double_vec_clear(&ref);
        double_vec_clear(&v);
    }
    for (int t = 0; t < TH_N; t++)
        CHECK(next[t] == TH_MSGS);
}

/* ---------------------------------------------------------------- wakeup ------------------ */

/* Run with CDT_UCX_WAKEUP=1. The server receives NB_N objects in an application's event loop
 * (the worker's fd in poll, cdt_ucx_worker_arm), then one object the client sends only after
 * WAKEUP_DELAY_MS with a blocking receive, which must sleep rather than spin: its thread's CPU
 * time stays a small part of the wait (a spinning wait uses all of it, or at least a third of
 * it on a machine loaded three times over). */
#define WAKEUP_DELAY_MS 600

void wakeup_client(peer *p)
{
    nonblocking_client(p);
    struct timespec ts = {.tv_sec = 0, .tv_nsec = WAKEUP_DELAY_MS * 1000000L};
    nanosleep(&ts, NULL);
    double_vec dv;
    CHECK_RC(double_vec_init(&dv, 3, 5000, 77));
    CHECK_RC(cdt_ucx_send(p->ep, &dv, 1, double_vec_type(), NB_N, T_TIMEOUT_MS));
    double_vec_clear(&dv);
}

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void wakeup_server(peer *p)
{
    int fd = -1;
    CHECK_RC(cdt_ucx_worker_fd(p->w, &fd));
    CHECK(fd >= 0);
    /* a context without wakeup has no fd, whatever the environment says */
    cdt_ucx_context plain;
    cdt_ucx_worker pw;
    cdt_ucx_context_params cp = {.field_mask = CDT_UCX_CONTEXT_PARAM_WAKEUP, .wakeup = 0};
    CHECK_RC(cdt_ucx_context_create(&cp, &plain));
    CHECK_RC(cdt_ucx_worker_create(plain, NULL, &pw));
    CHECK(cdt_ucx_worker_fd(pw, &fd) == CDT_ERR_UNSUPPORTED);
    CHECK(cdt_ucx_worker_arm(pw) == CDT_ERR_UNSUPPORTED);
    cdt_ucx_worker_destroy(pw);
    cdt_ucx_context_destroy(plain);
    CHECK_RC(cdt_ucx_worker_fd(p->w, &fd));

    double_vec dv[NB_N];
    cdt_ucx_request req[NB_N];
    memset(dv, 0, sizeof(dv));
    for (int i = 0; i < NB_N; i++)
        CHECK_RC(cdt_ucx_irecv(p->w, &dv[i], 1, double_vec_type(), (cdt_ucx_tag)i,
                               CDT_UCX_TAG_MASK_FULL, NULL, &req[i]));
    int left = NB_N, sleeps = 0;
    double t_end = wall_s() + 30;
    while (left > 0 && wall_s() < t_end) {
        while (cdt_ucx_worker_progress(p->w) > 0) {
        }
        for (int i = 0; i < NB_N; i++) {
            if (req[i] == NULL || cdt_ucx_request_test(req[i]) == CDT_INPROGRESS)
                continue;
            CHECK_RC(cdt_ucx_request_test(req[i]));
            CHECK_RC(cdt_ucx_request_free(req[i]));
            req[i] = NULL;
            check_nb_object(&dv[i], i);
            left--;
        }
        int rc = cdt_ucx_worker_arm(p->w);
        CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_BUSY);
        if (rc == CDT_SUCCESS) { /* the timer of the header's advice: 100 ms */
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            poll(&pfd, 1, 100);
            sleeps++;
        }
    }
    CHECK(left == 0);
    /* How often this loop slept depends on timing: a quick peer's objects can all arrive while
     * it progresses, each arm then answering BUSY. Sleeping on the fd until a completion, a
     * cancel or a deadline wakes it is checked deterministically by transport.wakeup.sleeper_*
     * (test_sleeper.c); the blocking receive below must sleep. */
    fprintf(stderr, "event loop: %d sleeps on the worker's fd\n", sleeps);

    double_vec late = {0}, ref;
    double cpu0 = thread_cpu_s(), t0 = wall_s();
    CHECK_RC(cdt_ucx_recv(p->w, &late, 1, double_vec_type(), NB_N, CDT_UCX_TAG_MASK_FULL, NULL,
                          NULL, T_TIMEOUT_MS));
    double cpu = thread_cpu_s() - cpu0, wall = wall_s() - t0;
    CHECK_RC(double_vec_init(&ref, 3, 5000, 77));
    CHECK(double_vec_equal(&ref, &late));
    double_vec_clear(&ref);
    double_vec_clear(&late);
    fprintf(stderr, "blocking receive: %.0f ms waited, %.1f ms of CPU\n", 1e3 * wall, 1e3 * cpu);
    CHECK(wall < 0.2 || cpu < 0.15 * wall);
}

/* ----------------------------------------------- the receiver copies, the sender packs --- */

/* An object whose inline stream does not fit one head message (a tail follows) must reach its
 * receiver while the sender does something else, as a sender does that packs its next objects
 * before it waits: over cma the receiver copies the tail itself, and the head must not need
 * the sender either (it is eager: docs/TRANSPORT.md §4). The sender posts a 1 MiB object and
 * then blocks, not progressing, until the receiver's prepare callback ran (the inline stream
 * complete) or 10 s passed. When the head was a rendezvous received through a generic
 * datatype, its data moved only when the sender progressed: prepare never ran, the check
 * below failed. Meaningful where the rendezvous is the receiver's copy (the default, cma). */

enum { RC_COUNT = (1 << 20) / (int)sizeof(struct_simple) };
static int rc_pipe[2] = {-1, -1}; /* receiver -> sender: "the inline stream is here" */

int receiver_copies_setup(void)
{
    return pipe(rc_pipe);
}

void receiver_copies_client(peer *p)
{
    close(rc_pipe[1]);
    struct_simple *v = calloc(RC_COUNT, sizeof(*v));
    CHECK(v != NULL);
    struct_simple_fill(v, RC_COUNT, 5);
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_isend(p->ep, v, RC_COUNT, struct_simple_type(), TAG, &r));
    struct pollfd pfd = {.fd = rc_pipe[0], .events = POLLIN};
    int ready = poll(&pfd, 1, 10000); /* no progress of this worker meanwhile */
    char byte = 0;
    CHECK(ready == 1 && read(rc_pipe[0], &byte, 1) == 1 && byte == 'p');
    CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(r));
    free(v);
}

/* arg: the receive's struct_simple array */
static int rc_prepare(void *arg, cdt_decoder dec)
{
    int rc = cdt_decoder_bind(dec, arg, RC_COUNT, struct_simple_type());
    char byte = 'p';
    if (write(rc_pipe[1], &byte, 1) != 1)
        return CDT_ERR_CALLBACK;
    return rc;
}

void receiver_copies_server(peer *p)
{
    close(rc_pipe[0]);
    struct_simple *got = calloc(RC_COUNT, sizeof(*got));
    struct_simple *want = calloc(RC_COUNT, sizeof(*want));
    CHECK(got != NULL && want != NULL);
    struct_simple_fill(want, RC_COUNT, 5);
    cdt_ucx_recv_params rp = {
        .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = rc_prepare, .prepare_arg = got};
    CHECK_RC(
        cdt_ucx_recv(p->w, NULL, 0, NULL, TAG, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS));
    CHECK(struct_simple_equal(got, want, RC_COUNT));
    free(got);
    free(want);
}
