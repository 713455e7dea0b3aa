/*
 * safety_wire.c - what test_safety's cases share: hand-written wire messages (raw UCX tag
 * sends), pipes between the processes of a case, markers, and three processes on loopback.
 */
#include "safety.h"

#include <errno.h>
#include <poll.h>

static void le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* prefix + FORMAT.md header of a frame with n byte regions of length len and no packed stream;
 * returns the bytes written (the head message, when every region travels on its own) */
size_t make_head(unsigned char *out, uint64_t key, uint64_t threshold, uint64_t tail_len,
                 uint64_t n, uint64_t len)
{
    memset(out, 0, 40 + 48);
    memcpy(out, "CDTU\x07\0\0\0", 8); /* version 7, split mode */
    le64(out + 8, key);
    le64(out + 16, threshold);
    le64(out + 24, tail_len);
    le64(out + 32, HAND_SENDER);
    unsigned char *h = out + 40;
    memcpy(h, "CDTF\x01\0\0\0", 8);
    uint64_t header_size = 48 + 16 * n;
    le64(h + 8, header_size);
    le64(h + 16, 0);                     /* packed_size */
    le64(h + 24, n);                     /* region_count */
    le64(h + 32, header_size + n * len); /* frame_size: regions of multiples of 8 bytes */
    size_t at = 48;
    for (uint64_t i = 0; i < n && 40 + at + 16 <= HEAD_MAX; i++, at += 16) {
        le64(h + at, len);
        memset(h + at + 8, 0, 8);
        h[at + 8] = 1; /* kind byte */
    }
    return 40 + at;
}

/* send raw bytes on the peer's endpoint; wait for completion when wait_ms > 0. Returns the
 * UCX status (UCS_INPROGRESS when it did not complete in time; the request is then freed and
 * the send goes on). */
ucs_status_t raw_send(peer *p, const void *data, size_t len, uint64_t tag, int wait_ms)
{
    ucp_request_param_t prm = {.op_attr_mask = 0};
    void *q = ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(p->ep), data, len, tag, &prm);
    CHECK(!UCS_PTR_IS_ERR(q));
    if (q == NULL)
        return UCS_OK;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ucs_status_t st = ucp_request_check_status(q);
    for (;;) {
        if (st != UCS_INPROGRESS)
            break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= wait_ms)
            break;
        cdt_ucx_worker_progress(p->w);
        st = ucp_request_check_status(q);
    }
    ucp_request_free(q);
    return st;
}

/* send region 0 of object `key`: len bytes of 0xEE on its private tag. A send still in flight
 * keeps its buffer (the caller then ends the process) */
ucs_status_t send_region(peer *p, uint64_t key, size_t len, int wait_ms)
{
    unsigned char *region = malloc(len);
    CHECK(region != NULL);
    memset(region, 0xEE, len);
    ucs_status_t st = raw_send(p, region, len, PRIV(key, 0), wait_ms);
    if (st != UCS_INPROGRESS)
        free(region);
    return st;
}

int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* pipes between the processes of a case: signal / wait for one byte while progressing */
/* 0-3: signals the cases use; 4, 5: client 1 / client 2 of run_three is done */
int sig_fd[7][2];
int run_three_c2_signal;

void signal_fd(int which)
{
    char c = 'x';
    CHECK(write(sig_fd[which][1], &c, 1) == 1);
}

void wait_fd(int which, peer *p)
{
    int64_t deadline = now_ms() + T_TIMEOUT_MS;
    for (;;) {
        struct pollfd pf = {.fd = sig_fd[which][0], .events = POLLIN};
        if (poll(&pf, 1, 1) == 1) {
            char c;
            CHECK(read(sig_fd[which][0], &c, 1) == 1);
            return;
        }
        if (p != NULL)
            cdt_ucx_worker_progress(p->w);
        CHECK(now_ms() < deadline);
    }
}

void open_pipes(void)
{
    for (int i = 0; i < 7; i++)
        CHECK(pipe(sig_fd[i]) == 0);
}

void recv_marker(peer *p, cdt_ucx_tag tag)
{
    int32_t v = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &v, 1, CDT_INT32, tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
}

void send_marker(peer *p, cdt_ucx_tag tag)
{
    int32_t v = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, CDT_INT32, tag, T_TIMEOUT_MS));
}

void check_untouched(const unsigned char *b, size_t len, unsigned char v)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != v) {
            fprintf(stderr, "byte %zu of %zu was written after the receive returned: %#x\n", i, len,
                    b[i]);
            CHECK(0);
        }
}

/* ------------------------------------------- three processes ----------------------------- */

/* The server (receiver) accepts two connections; client 1 and client 2 connect. */
int run_three(side_fn *server, side_fn *c1, side_fn *c2, const cdt_ucx_worker_params *wp1,
              const cdt_ucx_worker_params *wp2)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(stderr);
    pid_t spid = fork();
    CHECK(spid >= 0);
    if (spid == 0) {
        alarm(60);
        peer p = {.is_server = 1};
        peer_open(&p, NULL);
        uint16_t port = peer_listen(&p);
        for (int i = 0; i < 2; i++)
            CHECK(write(fds[1], &port, sizeof(port)) == sizeof(port));
        cdt_ucx_ep second;
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &p.ep));
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &second));
        server(&p);
        /* stay until both clients are done: a client's rendezvous send completes only when
         * the acknowledgement of this side was processed there (see peer_finish) */
        wait_fd(4, &p);
        wait_fd(5, &p);
        cdt_ucx_ep_close(second, 2000);
        peer_close(&p);
        _exit(0);
    }
    pid_t cpid[2];
    for (int k = 0; k < 2; k++) {
        uint16_t port = 0;
        CHECK(read(fds[0], &port, sizeof(port)) == sizeof(port));
        cpid[k] = fork();
        CHECK(cpid[k] >= 0);
        if (cpid[k] == 0) {
            alarm(60);
            peer p = {0};
            peer_open(&p, k == 0 ? wp1 : wp2);
            CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
            (k == 0 ? c1 : c2)(&p);
            signal_fd(4 + k);
            peer_close(&p);
            _exit(0);
        }
    }
    int ok = 1;
    pid_t all[3] = {cpid[0], cpid[1], spid};
    for (int k = 0; k < 3; k++) {
        int st = 0;
        waitpid(all[k], &st, 0);
        bool killed = k == 1 && run_three_c2_signal != 0;
        if (killed ? !WIFSIGNALED(st) || WTERMSIG(st) != run_three_c2_signal
                   : !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "process %d: status 0x%x\n", k, st);
            ok = 0;
        }
    }
    return ok ? 0 : 1;
}

void recv_check(peer *p, cdt_ucx_tag tag, int seed)
{
    double_vec v = {0}, ref;
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), tag, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&ref, OBJ_ARRAYS, OBJ_LEN, seed));
    if (!double_vec_equal(&v, &ref)) {
        fprintf(stderr, "object with tag %llu holds bytes that are not its sender's\n",
                (unsigned long long)tag);
        CHECK(0);
    }
    double_vec_clear(&v);
    double_vec_clear(&ref);
}
