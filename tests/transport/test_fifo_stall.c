/*
 * test_fifo_stall.c - over a shared-memory FIFO (CDT_UCX_SHARED_MEMORY=copy), a send to a live
 * receiver whose FIFO a dead peer wedged ends with CDT_ERR_TIMEOUT after the worker's FIFO
 * stall bound (cdt_ucx_worker_params.fifo_stall_timeout_ms), never an endless wait.
 *
 * Three processes: R listens and progresses (it never posts a receive: UCX still drains its
 * FIFO into the unexpected queue, so only a wedge stops it); V connects and sends R one raw UCP
 * message of a generic datatype whose pack callback raises SIGKILL, that is inside UCX's send
 * window, after the slot of R's FIFO was reserved and before it was published
 * (docs/TRANSPORT.md §9.1, bench/ucx_wedge); S then sends R 4 KiB objects with cdt_ucx_send and
 * no timeout of its own. R's FIFO fills behind the unpublished slot and S's sends cannot
 * progress: the send that cannot must return CDT_ERR_TIMEOUT within a few seconds of the
 * bound (2 s here). Without the bound it waits for ever (the alarm ends the test).
 * Usage: test_fifo_stall (one ctest test).
 */
#include "harness.h"

#include <ucp/api/ucp.h>

#define TAG 7
#define MSG_BYTES 4096
#define STALL_MS 2000

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* V's generic datatype: the first pack call dies inside UCX's send */
static void *start_pack(void *context, const void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return (void *)buffer;
}
static void *start_unpack(void *context, void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return buffer;
}
static size_t packed_size(void *state)
{
    (void)state;
    return MSG_BYTES;
}
static size_t pack(void *state, size_t offset, void *dest, size_t max_length)
{
    (void)state;
    (void)offset;
    (void)dest;
    (void)max_length;
    raise(SIGKILL); /* after R's FIFO slot was reserved, before it is published */
    return 0;
}
static ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length)
{
    (void)state;
    (void)offset;
    (void)src;
    (void)length;
    return UCS_OK;
}
static void finish(void *state)
{
    (void)state;
}

static void victim(uint16_t port)
{
    peer p = {0};
    peer_open(&p, NULL);
    CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
    /* a first object over the endpoint wires its FIFO lane up */
    int32_t v = 1;
    CHECK_RC(cdt_ucx_send(p.ep, &v, 1, CDT_INT32, TAG + 1, T_TIMEOUT_MS));
    char t[256];
    CHECK_RC(cdt_ucx_ep_transports(p.ep, t, sizeof(t)));
    fprintf(stderr, "victim: transports %s\n", t);
    static const ucp_generic_dt_ops_t ops = {.start_pack = start_pack,
                                             .start_unpack = start_unpack,
                                             .packed_size = packed_size,
                                             .pack = pack,
                                             .unpack = unpack,
                                             .finish = finish};
    ucp_datatype_t dt;
    CHECK(ucp_dt_create_generic(&ops, NULL, &dt) == UCS_OK);
    ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE, .datatype = dt};
    static char payload[MSG_BYTES];
    void *q = ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p.ep), payload, 1, TAG, &prm);
    for (int i = 0; i < 1000000 && q != NULL && !UCS_PTR_IS_ERR(q); i++)
        cdt_ucx_worker_progress(p.w);
    fprintf(stderr, "victim: the pack callback never ran\n");
    _exit(3);
}

static void sender(uint16_t port, int go_fd)
{
    peer p = {0};
    cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_FIFO_STALL_TIMEOUT,
                                .fifo_stall_timeout_ms = STALL_MS};
    peer_open(&p, &wp);
    CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
    char go;
    CHECK(read(go_fd, &go, 1) == 1); /* the victim died inside its send */
    static unsigned char obj[MSG_BYTES];
    for (int i = 0; i < 20000; i++) {
        int64_t t0 = now_ms();
        int rc = cdt_ucx_send(p.ep, obj, MSG_BYTES, CDT_BYTE, TAG, CDT_UCX_INFINITE);
        int64_t took = now_ms() - t0;
        if (rc == CDT_SUCCESS)
            continue;
        char t[256];
        CHECK_RC(cdt_ucx_ep_transports(p.ep, t, sizeof(t)));
        fprintf(stderr, "sender (%s): object %d of 4 KiB: %s after %lld ms\n", t, i,
                cdt_err_name(rc), (long long)took);
        CHECK(strstr(t, "am=sysv/memory") != NULL || strstr(t, "am=posix/memory") != NULL);
        CHECK(rc == CDT_ERR_TIMEOUT);
        CHECK(took >= STALL_MS - 100 && took < STALL_MS + 10000);
        _exit(0); /* UCX keeps the stalled operations: no orderly teardown */
    }
    fprintf(stderr, "sender: 20000 objects went through: R's FIFO did not wedge\n");
    _exit(4);
}

int main(void)
{
    int port_pipe[2], go_pipe[2];
    CHECK(pipe(port_pipe) == 0 && pipe(go_pipe) == 0);
    fflush(stderr);
    pid_t rpid = fork();
    CHECK(rpid >= 0);
    if (rpid == 0) { /* R: accepts both, progresses, receives nothing */
        alarm(60);
        peer p = {.is_server = 1};
        peer_open(&p, NULL);
        uint16_t port = peer_listen(&p);
        for (int i = 0; i < 2; i++)
            CHECK(write(port_pipe[1], &port, sizeof(port)) == sizeof(port));
        cdt_ucx_ep a, b;
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &a));
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &b));
        for (;;)
            cdt_ucx_worker_progress(p.w);
    }
    uint16_t port = 0;
    CHECK(read(port_pipe[0], &port, sizeof(port)) == sizeof(port));
    pid_t vpid = fork();
    CHECK(vpid >= 0);
    if (vpid == 0) {
        alarm(60);
        victim(port);
    }
    CHECK(read(port_pipe[0], &port, sizeof(port)) == sizeof(port));
    pid_t spid = fork();
    CHECK(spid >= 0);
    if (spid == 0) {
        alarm(60); /* without the bound the sender waits until this ends it */
        sender(port, go_pipe[0]);
    }
    int st = 0;
    CHECK(waitpid(vpid, &st, 0) == vpid);
    int victim_killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    fprintf(stderr, "victim: %s\n", victim_killed ? "died inside its send" : "did not die");
    CHECK(write(go_pipe[1], "g", 1) == 1);
    CHECK(waitpid(spid, &st, 0) == spid);
    int ok = victim_killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok)
        fprintf(stderr, "sender: status 0x%x\n", st);
    kill(rpid, SIGKILL);
    waitpid(rpid, &st, 0);
    return ok ? 0 : 1;
}
