/*
 * transfer_timing.c - bench_transfer's measurements: the clock, the 1-byte
 * acknowledgement that ends a window, the latency (half round trip of a ping-pong) and the
 * bandwidth (windows of non-blocking sends) of one method on one object.
 */
#include "bench_transfer.h"

double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char ack_byte;
void ack(env *e, int send)
{
    void *q = send ? raw_send(e, &ack_byte, 1, 1u << 30, ucp_dt_make_contig(1))
                   : raw_recv(e, &ack_byte, 1, 1u << 30, ucp_dt_make_contig(1));
    raw_wait(e, q);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double latency_us(env *e, obj *o, enum method m, int iters)
{
    int warm = iters / 10 + 2;
    double t0 = 0;
    /* --lat-median: each round trip timed on its own; the median half round trip (a busy
     * machine's preemptions move the mean by milliseconds, the median not) */
    double *rt = lat_median ? malloc((size_t)iters * sizeof(double)) : NULL;
    for (int i = 0; i < iters + warm; i++) {
        double ti = now();
        if (i == warm)
            t0 = ti;
        if (e->server) {
            handle h = do_recv(e, o, m, 7, 0);
            do_wait(e, o, m, &h);
            h = do_send(e, o, m, 8, 0);
            do_wait(e, o, m, &h);
        } else {
            handle h = do_send(e, o, m, 7, 0);
            do_wait(e, o, m, &h);
            h = do_recv(e, o, m, 8, 0);
            do_wait(e, o, m, &h);
        }
        if (rt != NULL && i >= warm)
            rt[i - warm] = now() - ti;
    }
    if (rt != NULL) {
        qsort(rt, (size_t)iters, sizeof(double), by_value);
        double med = rt[iters / 2];
        free(rt);
        return med / 2 * 1e6;
    }
    return (now() - t0) / iters / 2 * 1e6;
}

double bandwidth_mbs(env *e, obj *o, enum method m, int windows)
{
    int w = o->window;
    handle *hs = calloc((size_t)w, sizeof(handle));
    double t0 = 0;
    for (int it = 0; it < windows + 1; it++) {
        if (it == 1)
            t0 = now();
        for (int i = 0; i < w; i++)
            hs[i] = e->server ? do_recv(e, o, m, 9, i) : do_send(e, o, m, 9, i);
        for (int i = 0; i < w; i++)
            do_wait(e, o, m, &hs[i]);
        ack(e, e->server);
    }
    double t = now() - t0;
    free(hs);
    return (double)o->size * w * windows / t / 1e6;
}
