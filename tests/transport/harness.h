/*
 * harness.h - two real processes on loopback for transport tests: the parent forks a child
 * that listens on 127.0.0.1 (any free port) and tells the parent the port through a pipe; the
 * parent connects. Each side then runs its half of the test. Everything is bounded by
 * timeouts: the child is killed if it outlives the parent's patience.
 */
#ifndef CDT_TRANSPORT_HARNESS_H
#define CDT_TRANSPORT_HARNESS_H

#include <cdt_ucx.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T_TIMEOUT_MS 20000

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "[%d] %s:%d: check failed: %s\n", (int)getpid(), __FILE__, __LINE__,   \
                    #cond);                                                                        \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#define CHECK_RC(expr)                                                                             \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            fprintf(stderr, "[%d] %s:%d: %s -> %s (%d)\n", (int)getpid(), __FILE__, __LINE__,      \
                    #expr, cdt_err_name(rc_), rc_);                                                \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

typedef struct peer {
    cdt_ucx_context ctx;
    cdt_ucx_worker w;
    cdt_ucx_listener l;
    cdt_ucx_ep ep;
    int is_server;
    uint16_t port; /* client: the server's listening port */
} peer;

typedef void(side_fn)(peer *p);

/* seconds a side of run_pair may live (a case moving gigabytes raises it) */
static unsigned harness_alarm_s = 60;

static inline void peer_open(peer *p, const cdt_ucx_worker_params *wp)
{
    CHECK_RC(cdt_ucx_context_create(NULL, &p->ctx));
    CHECK_RC(cdt_ucx_worker_create(p->ctx, wp, &p->w));
}

static inline void peer_close(peer *p)
{
    if (p->ep != NULL)
        cdt_ucx_ep_close(p->ep, 2000);
    /* the listener goes with the worker, which destroys it last: destroyed before, a late
     * connection request of the peer (a connect of its that timed out) crashes UCX
     * (docs/TRANSPORT.md §8, Listeners) */
    cdt_ucx_worker_destroy(p->w);
    cdt_ucx_context_destroy(p->ctx);
}

/* Listen on 127.0.0.1, any free port (p->l); returns the port bound. */
static inline uint16_t peer_listen(peer *p)
{
    cdt_ucx_listener_params lp = {.field_mask =
                                      CDT_UCX_LISTENER_PARAM_HOST | CDT_UCX_LISTENER_PARAM_PORT,
                                  .host = "127.0.0.1",
                                  .port = 0};
    CHECK_RC(cdt_ucx_listener_create(p->w, &lp, &p->l));
    uint16_t port;
    CHECK_RC(cdt_ucx_listener_port(p->l, &port));
    return port;
}

/* After its part, each side tells the other it is done and, until the other says the same (or
 * exits), keeps progressing its worker. A side that closed at once could otherwise fail the
 * other's last operations: a rendezvous send completes only when the receiver's
 * acknowledgement has been processed, and over shared memory a peer that has gone is noticed
 * before messages it left behind are read, so the send reports CDT_ERR_PEER. */
static inline void peer_finish(peer *p, int out_fd, int in_fd)
{
    char done = 'd';
    signal(SIGPIPE, SIG_IGN); /* the other side may be gone already */
    if (write(out_fd, &done, 1) != 1)
        return;
    for (int i = 0; i < 2000000; i++) {
        struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) != 0)
            return; /* the other's byte, or its end closed */
        cdt_ucx_worker_progress(p->w);
    }
}

/* A process beside a pair (a hub, a victim, a bystander of the kill cases): forked with the
 * harness's alarm, it runs fn(port, arg) and exits 0 when fn returns. The pid, or -1. */
typedef void harness_side_fn(uint16_t port, int arg);
static inline pid_t harness_fork(harness_side_fn *fn, uint16_t port, int arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(harness_alarm_s); /* never outlive a broken parent */
        fn(port, arg);
        _exit(0);
    }
    return pid;
}

/* waits for a process of harness_fork: 1 when it ended as expected (expect >= 0: exited with
 * it; < 0: killed by signal -expect), else 0, and says how it ended */
static inline int harness_reap(pid_t pid, const char *name, int expect)
{
    int st = 0;
    if (pid <= 0 || waitpid(pid, &st, 0) != pid) {
        fprintf(stderr, "%s: not started or not reaped\n", name);
        return 0;
    }
    int ok = expect < 0 ? WIFSIGNALED(st) && WTERMSIG(st) == -expect
                        : WIFEXITED(st) && WEXITSTATUS(st) == expect;
    if (!ok)
        fprintf(stderr, "%s: status 0x%x\n", name, st);
    return ok;
}

/* runs in this process between the server's fork and the client's (NULL: nothing), with the
 * server's port: a case may change the environment the client's worker reads (the server's
 * worker exists by then) or start a third process */
static __attribute__((unused)) void (*harness_before_client)(uint16_t port);

/* the exit status of the client's process after its part: a case sets 77 where it could not
 * exercise what it tests (skipped, not passed); weak, so that every file of a program that
 * includes this shares one; and the last pair's two statuses (waitpid) */
__attribute__((weak)) int harness_client_exit;
static __attribute__((unused)) int harness_client_status, harness_server_status;

/* Run server(p) in a child that listens and client(p) in this process that connects.
 * Returns 0 when both sides passed. */
static inline int run_pair_ex(side_fn *server, side_fn *client, const cdt_ucx_worker_params *swp,
                              const cdt_ucx_worker_params *cwp, int expect_child_status,
                              int expect_server_status)
{
    int fds[2], sc[2], cs[2]; /* port; server -> client and client -> server "done" */
    if (pipe(fds) != 0 || pipe(sc) != 0 || pipe(cs) != 0)
        return 1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(fds[0]);
        close(sc[0]);
        close(cs[1]);
        alarm(harness_alarm_s); /* never outlive a broken parent */
        peer p = {.is_server = 1};
        peer_open(&p, swp);
        uint16_t port = peer_listen(&p);
        CHECK(write(fds[1], &port, sizeof(port)) == sizeof(port));
        close(fds[1]);
        CHECK_RC(cdt_ucx_listener_accept(p.l, T_TIMEOUT_MS, &p.ep));
        server(&p);
        peer_finish(&p, sc[1], cs[0]);
        peer_close(&p);
        _exit(0);
    }
    close(fds[1]);
    uint16_t port = 0;
    ssize_t got = read(fds[0], &port, sizeof(port));
    close(fds[0]);
    int status = 0;
    if (got != sizeof(port)) {
        waitpid(pid, &status, 0);
        fprintf(stderr, "server did not start\n");
        return 1;
    }
    if (harness_before_client != NULL)
        harness_before_client(port);
    pid_t cpid = fork(); /* the client runs in its own process too, so _exit on failure works */
    if (cpid == 0) {
        close(sc[1]);
        close(cs[0]);
        alarm(harness_alarm_s);
        peer p = {.is_server = 0, .port = port};
        peer_open(&p, cwp);
        CHECK_RC(cdt_ucx_ep_connect(p.w, "127.0.0.1", port, T_TIMEOUT_MS, &p.ep));
        client(&p);
        peer_finish(&p, cs[1], sc[0]);
        peer_close(&p);
        _exit(harness_client_exit);
    }
    close(sc[0]);
    close(sc[1]);
    close(cs[0]);
    close(cs[1]);
    int cstatus = 0;
    waitpid(cpid, &cstatus, 0);
    waitpid(pid, &status, 0);
    harness_client_status = cstatus;
    harness_server_status = status;
    /* a negative expect_child_status: the client dies by that signal */
    int client_ok = expect_child_status < 0
                        ? WIFSIGNALED(cstatus) && WTERMSIG(cstatus) == -expect_child_status
                        : WIFEXITED(cstatus) && WEXITSTATUS(cstatus) == expect_child_status;
    int ok = client_ok && WIFEXITED(status) && WEXITSTATUS(status) == expect_server_status;
    if (!ok)
        fprintf(stderr, "client status 0x%x, server status 0x%x\n", cstatus, status);
    return ok ? 0 : 1;
}

static inline int run_pair(side_fn *server, side_fn *client, const cdt_ucx_worker_params *swp,
                           const cdt_ucx_worker_params *cwp, int expect_child_status)
{
    return run_pair_ex(server, client, swp, cwp, expect_child_status, 0);
}

/* a pair whose sides are expected to exit with these statuses */
static inline int run_pair_status(side_fn *server, side_fn *client, int expect_client,
                                  int expect_server)
{
    return run_pair_ex(server, client, NULL, NULL, expect_client, expect_server);
}

#endif
