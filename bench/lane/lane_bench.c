/*
 * lane_bench.c - what the lane (libcdt/src/lane, docs/TRANSPORT.md §10) moves between two
 * processes, by fragment and ring size, against the one-pass references: one memcpy in one
 * process, and one process_vm_readv of the sender's memory (raw's path on libcdt's default,
 * cross-memory attach). The producer copies an object from its private memory into the ring
 * fragment by fragment (a pack at its cheapest) while the consumer copies each fragment out into
 * its own memory (an unpack), as the transport will. Every configuration runs once per round,
 * rounds alternate the configurations, and min / median of the rounds are printed (MB = 10^6 B).
 *
 *   lane_bench [--mib OBJECT_MIB] [--objects N] [--rounds R]
 *   lane_bench --latency [--rounds R]: half round trip of 8 bytes through two lanes (one each
 *   way, the consumer's grant posted ahead) against a TCP socket pair on loopback and a pipe
 */
#define _GNU_SOURCE
#include "lane/lane.h"
#include "seed_types.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t obj_bytes;
static int objects;
static unsigned char *src; /* the producer's object, in every process (fork) */

typedef struct config {
    const char *name;
    int kind; /* 0 lane, 1 memcpy, 2 process_vm_readv, 3 three passes */
    uint64_t ring;
    uint32_t frag;
    int object; /* -1: obj_bytes of plain bytes; else typed[object], packed by the engine */
} config;

/* an object of the demo (examples/c/transfer_demo.c), sent and received with the engine */
typedef struct typed {
    const char *name;
    void *buf; /* the sender's object */
    cdt_count count;
    cdt_type type;
    size_t packed;
    size_t extent; /* bytes of the receiver's object */
} typed;
static typed objs[2];

static int pack_at(cdt_op op, size_t off, unsigned char *d, size_t n, size_t *used)
{
    cdt_count u = 0;
    int rc = cdt_op_pack(op, (cdt_count)off, d, (cdt_count)n, &u);
    *used = (size_t)u;
    return rc;
}

static unsigned char *fresh_dst(void)
{
    unsigned char *d = malloc(obj_bytes);
    if (d == NULL)
        exit(1);
    memset(d, 1, obj_bytes); /* the receiver's memory reused: no page faults in the timing */
    return d;
}

/* seconds to move `objects` objects, measured by the consumer */
static double run_lane(const config *c)
{
    const typed *ty = c->object >= 0 ? &objs[c->object] : NULL;
    size_t bytes = ty ? ty->packed : obj_bytes;
    cdt__lane p;
    cdt__lane_offer o;
    cdt__lane_params prm = {.ring_bytes = c->ring, .grant_slots = 64, .frag_bytes = c->frag};
    if (cdt__lane_create(&prm, &p, &o) != CDT_SUCCESS)
        return -1;
    int res[2];
    if (pipe(res) != 0)
        return -1;
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane l;
        if (cdt__lane_attach(&o, &l) != CDT_SUCCESS)
            _exit(1);
        unsigned char *dst = ty ? malloc(ty->extent) : fresh_dst();
        if (ty)
            memset(dst, 1, ty->extent);
        double t0 = now_s();
        uint64_t start;
        for (int k = 0; k < objects; k++) {
            while (cdt__lane_post_grant(&l, (uint64_t)k, bytes, &start) == CDT_ERR_BUSY)
                sched_yield();
            cdt_op op = NULL;
            if (ty && cdt_op_unpack_begin(dst, ty->count, ty->type, &op) != CDT_SUCCESS)
                _exit(5);
            size_t got = 0;
            while (got < bytes) {
                const unsigned char *s;
                size_t n;
                if (cdt__lane_read_span(&l, &s, &n) != CDT_SUCCESS)
                    _exit(2);
                if (n == 0) { /* the other side may share our core: let it run */
                    sched_yield();
                    continue;
                }
                if (n > bytes - got)
                    n = bytes - got;
                if (ty) {
                    if (cdt_op_unpack(op, (cdt_count)got, s, (cdt_count)n) != CDT_SUCCESS)
                        _exit(6);
                } else {
                    memcpy(dst + got, s, n);
                }
                cdt__lane_release(&l, n);
                got += n;
            }
            if (op)
                cdt_op_end(op);
        }
        double t = now_s() - t0;
        if (write(res[1], &t, sizeof t) != sizeof t)
            _exit(3);
        _exit(ty || dst[obj_bytes / 2] == src[obj_bytes / 2] ? 0 : 4);
    }
    while (cdt__lane_attached(&p) == 0)
        sched_yield();
    for (int k = 0; k < objects; k++) {
        cdt__lane_grant g;
        while (cdt__lane_take_grant(&p, &g) == 0)
            sched_yield();
        cdt_op op = NULL;
        if (ty && cdt_op_pack_begin(ty->buf, ty->count, ty->type, &op) != CDT_SUCCESS)
            return -1;
        size_t off = 0;
        while (off < bytes) {
            unsigned char *d;
            size_t n;
            if (cdt__lane_write_span(&p, &d, &n) != CDT_SUCCESS)
                return -1;
            if (n == 0) {
                sched_yield();
                continue;
            }
            if (n > bytes - off)
                n = bytes - off;
            if (ty) {
                if (pack_at(op, off, d, n, &n) != CDT_SUCCESS)
                    return -1;
            } else {
                memcpy(d, src + off, n);
            }
            cdt__lane_publish(&p, n);
            off += n;
        }
        if (op)
            cdt_op_end(op);
    }
    double t = -1;
    if (read(res[0], &t, sizeof t) != sizeof t)
        t = -1;
    int st;
    waitpid(kid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        t = -1;
    close(res[0]);
    close(res[1]);
    cdt__lane_close(&p);
    return t;
}

static double run_memcpy(void)
{
    unsigned char *dst = fresh_dst();
    double t0 = now_s();
    for (int k = 0; k < objects; k++)
        memcpy(dst, src, obj_bytes);
    double t = now_s() - t0;
    free(dst);
    return t;
}

/* the consumer reads the producer's memory by cross-memory attach, as raw does on the default;
 * three: the producer packs each object into its staging buffer when asked, the consumer copies
 * the stream over and unpacks it (today's default, one object in flight, TCP aside) */
static double run_cma(const config *c, int three)
{
    const typed *ty = c->object >= 0 ? &objs[c->object] : NULL;
    size_t bytes = ty ? ty->packed : obj_bytes;
    int ask[2];
    if (pipe(ask) != 0)
        return -1;
    int res[2];
    if (pipe(res) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t kid = fork();
    if (kid == 0) {
        unsigned char *dst = fresh_dst();
        unsigned char *obj = ty ? malloc(ty->extent) : NULL;
        if (obj)
            memset(obj, 1, ty->extent);
        double t0 = now_s();
        for (int k = 0; k < objects; k++) {
            char b = 'p';
            if (three && (write(ask[1], &b, 1) != 1 || read(res[0], &b, 1) != 1))
                _exit(4);
            struct iovec l = {dst, bytes}, r = {src, bytes};
            if (process_vm_readv(parent, &l, 1, &r, 1, 0) != (ssize_t)bytes)
                _exit(2);
            cdt_op op;
            if (three && (cdt_op_unpack_begin(obj, ty->count, ty->type, &op) != CDT_SUCCESS ||
                          cdt_op_unpack(op, 0, dst, (cdt_count)bytes) != CDT_SUCCESS ||
                          cdt_op_end(op) != CDT_SUCCESS))
                _exit(5);
        }
        double t = now_s() - t0;
        if (three) {
            char b = 'q';
            (void)!write(ask[1], &b, 1);
        }
        _exit(write(res[1], &t, sizeof t) == sizeof t ? 0 : 3);
    }
    if (three) { /* pack each object into src (the staging buffer) when asked */
        char b;
        while (read(ask[0], &b, 1) == 1 && b == 'p') {
            cdt_op op;
            size_t used;
            if (cdt_op_pack_begin(ty->buf, ty->count, ty->type, &op) != CDT_SUCCESS ||
                pack_at(op, 0, src, bytes, &used) != CDT_SUCCESS || used != bytes)
                break;
            cdt_op_end(op);
            (void)!write(res[1], &b, 1);
        }
    }
    double t = -1;
    int st;
    waitpid(kid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || read(res[0], &t, sizeof t) != sizeof t)
        t = -1;
    close(res[0]);
    close(res[1]);
    close(ask[0]);
    close(ask[1]);
    return t;
}

/* ---- latency: ping-pong of 8 bytes ---- */

enum { PINGS = 20000 };

/* one message through a lane whose consumer granted it ahead: the producer's side */
static int lane_send8(cdt__lane *p, uint64_t v)
{
    cdt__lane_grant g;
    while (cdt__lane_take_grant(p, &g) == 0)
        sched_yield(); /* as in the transport: the peer may be waiting for this core */
    unsigned char *d;
    size_t n;
    for (;;) {
        if (cdt__lane_write_span(p, &d, &n) != CDT_SUCCESS)
            return -1;
        if (n >= 8)
            break;
        sched_yield();
    }
    memcpy(d, &v, 8);
    return cdt__lane_publish(p, 8);
}

static int lane_recv8(cdt__lane *c, uint64_t key, uint64_t *v)
{
    const unsigned char *s;
    size_t n;
    for (;;) {
        if (cdt__lane_read_span(c, &s, &n) != CDT_SUCCESS)
            return -1;
        if (n >= 8)
            break;
        sched_yield();
    }
    memcpy(v, s, 8);
    cdt__lane_release(c, 8);
    uint64_t start; /* the next message's grant, ahead */
    return cdt__lane_post_grant(c, key + 1, 8, &start);
}

static double lat_lane(void)
{
    cdt__lane a2b, b2a;
    cdt__lane_offer oa, ob;
    if (cdt__lane_create(NULL, &a2b, &oa) != CDT_SUCCESS ||
        cdt__lane_create(NULL, &b2a, &ob) != CDT_SUCCESS)
        return -1;
    int res[2];
    if (pipe(res) != 0)
        return -1;
    pid_t kid = fork();
    if (kid == 0) { /* B: consumer of a2b, producer of b2a */
        cdt__lane in;
        uint64_t start, v;
        if (cdt__lane_attach(&oa, &in) != CDT_SUCCESS ||
            cdt__lane_post_grant(&in, 0, 8, &start) != CDT_SUCCESS)
            _exit(1);
        while (cdt__lane_attached(&b2a) == 0)
            ;
        for (uint64_t k = 0; k < PINGS; k++)
            if (lane_recv8(&in, k, &v) != 0 || lane_send8(&b2a, v + 1) != 0)
                _exit(2);
        _exit(0);
    }
    cdt__lane in;
    uint64_t start, v = 0;
    if (cdt__lane_attach(&ob, &in) != CDT_SUCCESS ||
        cdt__lane_post_grant(&in, 0, 8, &start) != CDT_SUCCESS)
        return -1;
    while (cdt__lane_attached(&a2b) == 0)
        ;
    double t0 = now_s();
    for (uint64_t k = 0; k < PINGS; k++)
        if (lane_send8(&a2b, v) != 0 || lane_recv8(&in, k, &v) != 0)
            return -1;
    double t = now_s() - t0;
    int st;
    waitpid(kid, &st, 0);
    cdt__lane_close(&in);
    cdt__lane_close(&a2b);
    cdt__lane_close(&b2a);
    close(res[0]);
    close(res[1]);
    return v == (uint64_t)PINGS ? t / PINGS / 2 * 1e6 : -1;
}

static int read_full(int fd, void *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)b + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* fds: [0] A's end, [1] B's end (a socket pair over TCP on loopback, or two pipes) */
static double lat_fds(int a_in, int a_out, int b_in, int b_out)
{
    pid_t kid = fork();
    if (kid == 0) {
        uint64_t v;
        for (int k = 0; k < PINGS; k++) {
            if (read_full(b_in, &v, 8) != 0)
                _exit(1);
            v++;
            if (write(b_out, &v, 8) != 8)
                _exit(2);
        }
        _exit(0);
    }
    uint64_t v = 0;
    double t0 = now_s();
    for (int k = 0; k < PINGS; k++) {
        v++;
        if (write(a_out, &v, 8) != 8 || read_full(a_in, &v, 8) != 0)
            return -1;
    }
    double t = now_s() - t0;
    int st;
    waitpid(kid, &st, 0);
    return t / PINGS / 2 * 1e6;
}

static double lat_tcp(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) != 0)
        return -1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    int s = accept(l, NULL, NULL);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double t = lat_fds(c, c, s, s);
    close(c);
    close(s);
    close(l);
    return t;
}

static double lat_pipe(void)
{
    int ab[2], ba[2];
    if (pipe(ab) != 0 || pipe(ba) != 0)
        return -1;
    double t = lat_fds(ba[0], ab[1], ab[0], ba[1]);
    close(ab[0]);
    close(ab[1]);
    close(ba[0]);
    close(ba[1]);
    return t;
}

static int cmp_d(const void *a, const void *b);

static int latency(int rounds)
{
    static const char *names[] = {"lane (grant posted ahead)", "TCP on loopback (TCP_NODELAY)",
                                  "pipe"};
    double *t = calloc(3 * (size_t)rounds, sizeof *t);
    for (int r = 0; r < rounds; r++) {
        t[0 * rounds + r] = lat_lane();
        t[1 * rounds + r] = lat_tcp();
        t[2 * rounds + r] = lat_pipe();
    }
    printf("# 8-byte ping-pong, %d round trips per measurement, %d rounds alternated; half round "
           "trip in us\n| path | min us | median us | max us |\n|---|---:|---:|---:|\n",
           PINGS, rounds);
    for (int c = 0; c < 3; c++) {
        qsort(t + c * rounds, (size_t)rounds, sizeof *t, cmp_d);
        printf("| %s | %.2f | %.2f | %.2f |\n", names[c], t[c * rounds], t[c * rounds + rounds / 2],
               t[c * rounds + rounds - 1]);
    }
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int mib = 8, rounds = 7, lat = 0;
    objects = 16;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--latency") == 0)
            lat = 1;
    for (int i = 1 + lat; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mib") == 0)
            mib = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--objects") == 0)
            objects = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
    }
    if (lat)
        return latency(rounds);
    obj_bytes = (size_t)mib << 20;
    src = malloc(obj_bytes);
    for (size_t i = 0; i < obj_bytes; i++)
        src[i] = (unsigned char)(i * 7);
    /* the demo's strided vector (every other double of 2 x 2^20) and struct_simple x65536 */
    enum { STRIDED_N = 1 << 20, N_SS = 65536 };
    double *strided = malloc(2 * STRIDED_N * sizeof(double));
    for (int i = 0; i < 2 * STRIDED_N; i++)
        strided[i] = i * 0.25;
    cdt_type vec;
    if (cdt_type_vector(STRIDED_N, 1, 2, CDT_DOUBLE, &vec) != CDT_SUCCESS ||
        cdt_type_commit(&vec) != CDT_SUCCESS)
        return 1;
    objs[0] = (typed){"strided double 8 MiB",        strided, 1, vec, STRIDED_N * 8,
                      2 * STRIDED_N * sizeof(double)};
    struct_simple *ss = calloc(N_SS, sizeof *ss);
    struct_simple_fill(ss, N_SS, 2);
    objs[1] = (typed){"struct_simple x65536", ss, N_SS, struct_simple_type(), 0, N_SS * sizeof *ss};
    for (int i = 0; i < 2; i++) {
        cdt_op op;
        cdt_count ps;
        if (cdt_op_pack_begin(objs[i].buf, objs[i].count, objs[i].type, &op) != CDT_SUCCESS ||
            cdt_op_packed_size(op, &ps) != CDT_SUCCESS || (size_t)ps > obj_bytes)
            return 1;
        cdt_op_end(op);
        objs[i].packed = (size_t)ps;
    }
    static const config cfgs[] = {
        {"bytes: memcpy, one process (one pass)", 1, 0, 0, -1},
        {"bytes: process_vm_readv (raw's one pass)", 2, 0, 0, -1},
        {"bytes: lane ring 1 MiB frag 4 KiB", 0, 1 << 20, 4096, -1},
        {"bytes: lane ring 1 MiB frag 16 KiB", 0, 1 << 20, 16384, -1},
        {"bytes: lane ring 1 MiB frag 32 KiB", 0, 1 << 20, 32768, -1},
        {"bytes: lane ring 1 MiB frag 64 KiB", 0, 1 << 20, 65536, -1},
        {"bytes: lane ring 1 MiB frag 256 KiB", 0, 1 << 20, 262144, -1},
        {"bytes: lane ring 256 KiB frag 32 KiB", 0, 1 << 18, 32768, -1},
        {"bytes: lane ring 4 MiB frag 64 KiB", 0, 1 << 22, 65536, -1},
        {"strided 8 MiB: raw (process_vm_readv of the packed bytes)", 2, 0, 0, 0},
        {"strided 8 MiB: three passes (pack, process_vm_readv, unpack)", 3, 0, 0, 0},
        {"strided 8 MiB: lane (pack into the ring, unpack out of it)", 0, 1 << 20, 16384, 0},
        {"struct_simple x65536: raw (process_vm_readv of the packed bytes)", 2, 0, 0, 1},
        {"struct_simple x65536: three passes", 3, 0, 0, 1},
        {"struct_simple x65536: lane", 0, 1 << 20, 16384, 1},
    };
    enum { N = sizeof cfgs / sizeof cfgs[0] };
    double *t = calloc((size_t)N * (size_t)rounds, sizeof *t);
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < N; c++) {
            const config *cf = &cfgs[c];
            double s = cf->kind == 0   ? run_lane(cf)
                       : cf->kind == 1 ? run_memcpy()
                                       : run_cma(cf, cf->kind == 3);
            size_t b = cf->object >= 0 ? objs[cf->object].packed : obj_bytes;
            t[c * rounds + r] = s > 0 ? (double)b * objects / s / 1e6 : 0;
        }
    printf("# %d MiB objects, %d per measurement, %d rounds alternated; MB/s (10^6 B/s)\n", mib,
           objects, rounds);
    printf("| path | min MB/s | median MB/s | max MB/s |\n|---|---:|---:|---:|\n");
    for (int c = 0; c < N; c++) {
        qsort(t + c * rounds, (size_t)rounds, sizeof *t, cmp_d);
        printf("| %s | %.0f | %.0f | %.0f |\n", cfgs[c].name, t[c * rounds],
               t[c * rounds + rounds / 2], t[c * rounds + rounds - 1]);
    }
    return 0;
}
