/*
 * soak_peer.c - a peer process: its state, its messages to the supervisor, heartbeats and
 * bounded waits, the acceptor thread, and the peer's main, which starts the sender and
 * receiver threads (soak_sender.c, soak_receiver.c) and watches them for hangs (see soak.c).
 */
#include "soak.h"

#include <malloc.h>

/* ------------------------------------------------------------------------------------------
 * peer process
 * ---------------------------------------------------------------------------------------- */

int g_me, g_gen, g_sock;
static cdt_ucx_context g_ctx;
cdt_ucx_worker g_w;
cdt_ucx_listener g_l;
stats g_st;
pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* table, socket writes */
int tab_port[MAX_PEERS], tab_gen[MAX_PEERS];
atomic_int g_stop, g_quiesce, g_final, g_info_sent;
_Atomic double g_beat[MAX_THREADS];
const char *g_thread_name[MAX_THREADS];

void send_msg(msg *m)
{
    pthread_mutex_lock(&g_lock);
    ssize_t n = send(g_sock, m, sizeof(*m), MSG_NOSIGNAL);
    pthread_mutex_unlock(&g_lock);
    (void)n;
}

static void vreport(int type, const char *fmt, va_list ap)
{
    static msg m; /* report is rare: one buffer under its own lock */
    static pthread_mutex_t rl = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&rl);
    memset(&m, 0, sizeof(m));
    m.type = type;
    m.peer = g_me;
    m.gen = g_gen;
    vsnprintf(m.text, sizeof(m.text), fmt, ap);
    fprintf(stderr, "soak: peer %d.%d (pid %d): %s%s\n", g_me, g_gen, (int)getpid(),
            type == M_NOTE ? "note: " : "", m.text);
    send_msg(&m);
    pthread_mutex_unlock(&rl);
}

/* a failure: the run fails */
void report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(M_FAIL, fmt, ap);
    va_end(ap);
}

/* a clean but notable event, listed in the report */
void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(M_NOTE, fmt, ap);
    va_end(ap);
}

void beat(int th)
{
    g_beat[th] = now_s();
}

/* wait without spinning flat out (2 shared cores): test, then back off to 50 us naps */
int wait_req_until(cdt_ucx_request q, int64_t timeout_ms, int th, int until_stop)
{
    double deadline = now_s() + (double)timeout_ms / 1000.0;
    for (unsigned i = 0;; i++) {
        int rc = cdt_ucx_request_test(q);
        if (rc != CDT_INPROGRESS)
            return rc;
        if ((i & 15) == 15) {
            beat(th);
            if (now_s() > deadline || (until_stop && g_stop))
                return CDT_ERR_TIMEOUT;
            sleep_ms(0.05);
        }
    }
}

int wait_req(cdt_ucx_request q, int64_t timeout_ms, int th)
{
    return wait_req_until(q, timeout_ms, th, 0);
}

/* -------- acceptor: accepts connections, closes the ones whose peer died -------- */

/* the peer ids of accepted endpoints that failed, the newest FAILED_IDS */
#define FAILED_IDS 4096
static uint64_t failed_ids[FAILED_IDS];
static size_t failed_n;
static pthread_mutex_t failed_lock = PTHREAD_MUTEX_INITIALIZER;

void ep_failed_note(uint64_t peer_id)
{
    if (peer_id == 0)
        return;
    pthread_mutex_lock(&failed_lock);
    failed_ids[failed_n++ % FAILED_IDS] = peer_id;
    pthread_mutex_unlock(&failed_lock);
}

int ep_failed_seen(uint64_t peer_id)
{
    int seen = 0;
    pthread_mutex_lock(&failed_lock);
    size_t n = failed_n < FAILED_IDS ? failed_n : FAILED_IDS;
    for (size_t i = 0; i < n && !seen; i++)
        seen = peer_id != 0 && failed_ids[i] == peer_id;
    pthread_mutex_unlock(&failed_lock);
    return seen;
}

static void *acceptor_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    cdt_ucx_ep *eps = NULL;
    size_t n = 0, cap = 0;
    double next_check = now_s() + 1;
    while (!g_stop) {
        beat(th);
        cdt_ucx_ep ep;
        int rc = cdt_ucx_listener_accept(g_l, 200, &ep);
        if (rc == CDT_SUCCESS) {
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                eps = realloc(eps, cap * sizeof(*eps));
            }
            eps[n++] = ep;
            ADD(g_st.accepts, 1);
        } else if (rc != CDT_ERR_TIMEOUT) {
            ADD(g_st.err_conn[st_idx(rc)], 1);
            if (!clean(rc) && rc != CDT_ERR_TRANSPORT) {
                ADD(g_st.unexpected, 1);
                report("accept: %s", cdt_err_name(rc));
            }
            sleep_ms(10);
        }
        if (now_s() > next_check) {
            next_check = now_s() + 1;
            for (size_t i = 0; i < n;)
                if (cdt_ucx_ep_status(eps[i]) != CDT_SUCCESS) {
                    ep_failed_note(cdt_ucx_ep_peer_id(eps[i]));
                    cdt_ucx_ep_close(eps[i], 0);
                    eps[i] = eps[--n];
                } else {
                    i++;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        cdt_ucx_ep_close(eps[i], 200);
    free(eps);
    return NULL;
}

/* -------- peer main -------- */

static void crash_handler(int sig)
{
    char line[96];
    int n = snprintf(line, sizeof(line), "soak: peer %d.%d (pid %d): signal %d, stack:\n", g_me,
                     g_gen, (int)getpid(), sig);
    if (write(2, line, (size_t)n) < 0) {
    }
    void *frames[64];
    int k = backtrace(frames, 64);
    backtrace_symbols_fd(frames, k, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void dump_stacks(void)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd),
             "gdb -p %d -batch -ex 'thread apply all bt' 2>/dev/null | grep -v '^\\[' >&2",
             (int)getpid());
    if (system(cmd) != 0) {
    }
}

/* RssAnon of this process in KiB (-1 when unreadable) */
static long self_anon_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f != NULL && fgets(line, sizeof(line), f))
        if (sscanf(line, "RssAnon: %ld", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

/* the arenas malloc_info lists (one <heap> element each) */
static uint64_t heap_arenas(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return 0;
    malloc_info(0, f);
    fclose(f);
    uint64_t n = 0;
    for (const char *p = text; p != NULL && (p = strstr(p, "<heap nr=")) != NULL; p++)
        n++;
    free(text);
    return n;
}

/* the allocator's view beside RssAnon (soak.h, stats): what the heap holds, uses, keeps free */
static void heap_gauges(stats *st)
{
    static uint64_t arenas;
    static int tick;
    struct mallinfo2 mi = mallinfo2();
    st->heap_arena = mi.arena;
    st->heap_inuse = mi.uordblks;
    st->heap_free = mi.fordblks;
    st->heap_mmap = mi.hblkhd;
    if (tick++ % 10 == 0)
        arenas = heap_arenas();
    st->heap_arenas = arenas;
}

static void send_stats(int type)
{
    msg *m = calloc(1, sizeof(*m));
    m->type = type;
    m->peer = g_me;
    m->gen = g_gen;
    memcpy(&m->st, &g_st, sizeof(g_st));
    cdt_ucx_worker_stats ws = {
        .field_mask = CDT_UCX_WORKER_STATS_LANE_SENT | CDT_UCX_WORKER_STATS_LANE_RECEIVED |
                      CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT |
                      CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED | CDT_UCX_WORKER_STATS_QUARANTINED};
    if (g_w != NULL && cdt_ucx_worker_stats_get(g_w, &ws) == CDT_SUCCESS) {
        m->st.lane_sent = ws.lane_sent;
        m->st.lane_received = ws.lane_received;
        m->st.lane_split_sent = ws.lane_split_sent;
        m->st.lane_split_received = ws.lane_split_received;
        m->st.worker_quarantined = ws.quarantined;
    }
    heap_gauges(&m->st);
    send_msg(m);
    free(m);
}

volatile sig_atomic_t g_die_in_send;

static void die_in_send_handler(int sig)
{
    (void)sig;
    g_die_in_send = 1;
}

int peer_main(int me, int gen, int sock)
{
    g_me = me, g_gen = gen, g_sock = sock;
    signal(SIGSEGV, crash_handler);
    signal(SIGBUS, crash_handler);
    signal(SIGABRT, crash_handler);
    signal(SIGFPE, crash_handler);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, die_in_send_handler);
    int rc = cdt_ucx_context_create(NULL, &g_ctx);
    cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_BUFFER_CACHE,
                                .buffer_cache_bytes = 64 << 20};
    if (!opt.random_sender_ids) { /* unique per incarnation, as a bootstrap would give */
        wp.field_mask |= CDT_UCX_WORKER_PARAM_SENDER_ID;
        wp.sender_id = ((uint32_t)gen << 3 | (uint32_t)me) & ((1u << CDT_UCX_SENDER_ID_BITS) - 1);
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_ucx_worker_create(g_ctx, &wp, &g_w);
    cdt_ucx_listener_params lp = {.field_mask =
                                      CDT_UCX_LISTENER_PARAM_HOST | CDT_UCX_LISTENER_PARAM_PORT,
                                  .host = "127.0.0.1"};
    if (rc == CDT_SUCCESS)
        rc = cdt_ucx_listener_create(g_w, &lp, &g_l);
    uint16_t port = 0;
    if (rc == CDT_SUCCESS)
        rc = cdt_ucx_listener_port(g_l, &port);
    if (rc != CDT_SUCCESS) {
        report("start-up: %s", cdt_err_name(rc));
        return 1;
    }
    msg *m = calloc(1, sizeof(*m));
    m->type = M_HELLO;
    m->peer = me;
    m->gen = gen;
    m->port = port;
    send_msg(m);

    int nthreads = opt.senders + NFAM + 1;
    pthread_t tids[MAX_THREADS];
    for (int t = 0; t < nthreads; t++) {
        void *(*fn)(void *) = t < opt.senders               ? sender_main
                              : t < opt.senders + FAM_DVEC  ? receiver_main
                              : t == opt.senders + FAM_DVEC ? dvec_receiver_main
                                                            : acceptor_main;
        g_thread_name[t] = t < opt.senders          ? "sender"
                           : t < opt.senders + NFAM ? "receiver"
                                                    : "acceptor";
        beat(t);
        pthread_create(&tids[t], NULL, fn, (void *)(intptr_t)t);
    }
    double next_stats = now_s();
    int stopping = 0;
    while (!stopping) {
        struct pollfd pfd = {sock, POLLIN, 0};
        int pr = poll(&pfd, 1, 100);
        if (pr > 0 && (pfd.revents & (POLLHUP | POLLERR)) && !(pfd.revents & POLLIN))
            _exit(3); /* the supervisor is gone */
        if (pr > 0 && (pfd.revents & POLLIN)) {
            ssize_t got = recv(sock, m, sizeof(*m), 0);
            if (got <= 0)
                _exit(3);
            pthread_mutex_lock(&g_lock);
            if (m->type == M_UP) {
                tab_port[m->peer] = m->port;
                tab_gen[m->peer] = m->gen;
            } else if (m->type == M_DOWN) {
                tab_port[m->peer] = 0;
            }
            pthread_mutex_unlock(&g_lock);
            if (m->type == M_QUIESCE)
                g_quiesce = 1;
            if (m->type == M_FINAL)
                g_final = 1;
            if (m->type == M_STOP)
                stopping = 1;
        }
        double t = now_s();
        if (t >= next_stats) {
            next_stats = t + 1;
            send_stats(M_STATS);
        }
        for (int k = 0; k < nthreads; k++)
            if (t - g_beat[k] > opt.hang_s) {
                report("HANG: %s thread %d made no progress for %.0f s; stacks follow on stderr",
                       g_thread_name[k], k, t - g_beat[k]);
                dump_stacks();
                _exit(4);
            }
    }
    g_stop = 1;
    double t0 = now_s();
    for (int t = 0; t < nthreads; t++)
        pthread_join(tids[t], NULL);
    if (now_s() - t0 > 30)
        report("threads took %.0f s to stop", now_s() - t0);
    /* with every object freed and the worker still up: how much of RssAnon is free memory
     * the heap keeps (returned by malloc_trim) rather than memory the program holds */
    long before = self_anon_kib();
    malloc_trim(0);
    long after = self_anon_kib();
    g_st.trim_before_kib = before > 0 ? (uint64_t)before : 0;
    g_st.trim_after_kib = after > 0 ? (uint64_t)after : 0;
    cdt_ucx_listener_destroy(g_l);
    cdt_ucx_worker_destroy(g_w);
    cdt_ucx_context_destroy(g_ctx);
    send_stats(M_BYE);
    free(m);
    return 0;
}
