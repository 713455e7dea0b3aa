/*
 * repro_recv_timeout.c - reproducer for what the soak reports as "cdt_ucx_recv returned
 * CDT_ERR_TIMEOUT after its double_vec was partly written" and "a dvec receive that returned
 * CDT_ERR_TIMEOUT wrote the caller's double_vec later".
 *
 * A sender sends one double_vec of 16 arrays of 4 MiB (each a zero-copy region). The receiver
 * waits until the head is surely queued, then calls cdt_ucx_recv with a 5 ms timeout: the head
 * matches at once, the regions cannot all arrive in 5 ms. The call returns CDT_ERR_TIMEOUT,
 * but the receive stays live: the type's callbacks have already allocated the arrays into the
 * caller's double_vec, and the region receives keep writing into them after the return,
 * while the caller believes the receive is over (and may free or reuse the object).
 * Exit status: 1 when the object changed after CDT_ERR_TIMEOUT was returned, 0 otherwise.
 * Usage: repro_recv_timeout   (UCX_TLS etc. from the environment; forks the sender)
 */
#include "seed_types.h"

#include <cdt_ucx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAYS 16
#define LEN (1 << 20) /* int32 elements: 4 MiB per array */
#define TAG 7

#define OK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cdt_err_name(rc_));      \
            _exit(2);                                                                              \
        }                                                                                          \
    } while (0)

static uint64_t sum(const double_vec *v)
{
    uint64_t s = 0;
    for (cdt_count i = 0; v->data != NULL && i < v->n; i++)
        for (cdt_count j = 0; v->data[i] != NULL && j < v->lens[i]; j += 997)
            s = s * 31 + (uint32_t)v->data[i][j];
    return s;
}

int main(void)
{
    setenv("UCX_KEEPALIVE_INTERVAL", "1s", 0);
    setenv("UCX_TLS", "sm,self,tcp", 0);
    setenv("UCX_NET_DEVICES", "lo", 0);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 0);
    int fds[2];
    if (pipe(fds) != 0)
        return 2;
    pid_t pid = fork();
    if (pid == 0) { /* sender */
        close(fds[1]);
        uint16_t port;
        if (read(fds[0], &port, sizeof(port)) != sizeof(port))
            _exit(2);
        cdt_ucx_context ctx;
        cdt_ucx_worker w;
        cdt_ucx_ep ep;
        OK(cdt_ucx_context_create(NULL, &ctx));
        OK(cdt_ucx_worker_create(ctx, NULL, &w));
        OK(cdt_ucx_ep_connect(w, "127.0.0.1", port, 10000, &ep));
        double_vec v;
        OK(double_vec_init(&v, ARRAYS, LEN, 1));
        int rc = cdt_ucx_send(ep, &v, 1, double_vec_type(), TAG, 30000);
        fprintf(stderr, "sender: cdt_ucx_send -> %s\n", cdt_err_name(rc));
        cdt_ucx_ep_close(ep, 2000);
        _exit(0);
    }
    close(fds[0]);
    cdt_ucx_context ctx;
    cdt_ucx_worker w;
    cdt_ucx_listener l;
    cdt_ucx_ep ep;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &w));
    cdt_ucx_listener_params lp = {.field_mask =
                                      CDT_UCX_LISTENER_PARAM_HOST | CDT_UCX_LISTENER_PARAM_PORT,
                                  .host = "127.0.0.1"};
    OK(cdt_ucx_listener_create(w, &lp, &l));
    uint16_t port;
    OK(cdt_ucx_listener_port(l, &port));
    if (write(fds[1], &port, sizeof(port)) != sizeof(port))
        return 2;
    OK(cdt_ucx_listener_accept(l, 10000, &ep));
    /* let the head arrive and wait in the unexpected queue */
    for (int i = 0; i < 2000; i++) {
        cdt_ucx_worker_progress(w);
        usleep(1000);
    }
    double_vec *dv = calloc(1, sizeof(*dv));
    int rc = cdt_ucx_recv(w, dv, 1, double_vec_type(), TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL, 5);
    cdt_count n0 = dv->n;
    uint64_t s0 = sum(dv);
    printf("cdt_ucx_recv(timeout 5 ms) -> %s; the caller's double_vec then: %lld arrays, "
           "checksum %016llx\n",
           cdt_err_name(rc), (long long)n0, (unsigned long long)s0);
    int changed = 0;
    if (rc == CDT_ERR_TIMEOUT) {
        /* the caller goes on using the worker; its object must not change any more */
        for (int i = 0; i < 3000; i++) {
            cdt_ucx_worker_progress(w);
            usleep(1000);
        }
        uint64_t s1 = sum(dv);
        changed = dv->n != n0 || s1 != s0;
        printf("3 s later: %lld arrays, checksum %016llx: %s\n", (long long)dv->n,
               (unsigned long long)s1,
               changed ? "WRITTEN AFTER CDT_ERR_TIMEOUT WAS RETURNED" : "unchanged");
        if (n0 > 0 && !changed)
            printf("(the receive had matched and written part of the object, as cdt_ucx.h "
                   "allows; nothing was written after it returned)\n");
    }
    fflush(stdout);
    int status;
    waitpid(pid, &status, 0);
    /* the double_vec is deliberately not freed: the library may still own it */
    cdt_ucx_ep_close(ep, 1000);
    cdt_ucx_listener_destroy(l);
    cdt_ucx_worker_destroy(w);
    cdt_ucx_context_destroy(ctx);
    return changed ? 1 : 0;
}
