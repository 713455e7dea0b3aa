/*
 * soak.c - long-running reliability soak of the UCX transport (bench/run soak).
 *
 * A supervisor forks P peer processes (default 4). Each peer listens on 127.0.0.1 (any free
 * port, reported to the supervisor, which tells every peer where the others are) and runs
 * several threads on one worker: senders that send random objects to random other peers, one
 * receiver per object family, and an acceptor. Objects are
 *   derived  MPI-style derived types (contiguous, vector, hvector, indexed, indexed_block,
 *            hindexed_block, struct + resized, subarray) built from a seed; the receiver
 *            binds, in a prepare callback, a layout of its own chosen from the frame's length
 *   sobj     the serialized-object adapter (in-band bytes + typed out-of-band buffers);
 *            the receiver allocates from the header (cdt_sobj_recv_prepare)
 *   dvec     the seed example's double_vec (list of int32 arrays; the type's callbacks
 *            allocate), received with the blocking cdt_ucx_recv and a short timeout
 * from 0 B to 64 MiB (mostly small). Every byte of an object is a function of its tag
 * (family, sender, incarnation, thread, sequence) and the run seed, so the receiver checks
 * every byte without a second message.
 *
 * Every few seconds the supervisor SIGKILLs a random mortal peer (all but the first
 * --immortal peers) and starts a new incarnation of it; the others must only see clean
 * statuses (CDT_ERR_PEER, CDT_ERR_TIMEOUT, CDT_ERR_CANCELED) and reconnect. At the end, with
 * no more kills, every sender thread sends a fixed number of objects to every peer, and each
 * must arrive (no silent loss) within the final phase's bound (--final-s, default 60 s; what
 * was left then is reported, and sends still pending are given up as the peers stop). The
 * report gives the length of the final phase and of everything after the traffic. The run
 * fails (exit 1) on a wrong byte, an unexpected status, a peer that dies without being
 * killed, a hang (a thread that makes no progress for --hang-s seconds), a receive or send
 * that stays pending after it was timed out and canceled or its endpoint closed, or a lost
 * final object.
 *
 * The supervisor samples every peer's VmRSS once a second and writes a report.
 * Usage: soak [--minutes M] [--seconds S] [--peers P] [--immortal I] [--senders N]
 *             [--kill-every S] [--max-mib M] [--seed X] [--csv FILE] [--md FILE]
 *             [--dvec-timeout-ms T] [--final-s S] [--random-sender-ids]
 */
#include "seed_types.h"

#include <cdt_sobj.h>
#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PEERS 8
#define MAX_SENDERS 4
#define NSTATUS 32
#define KiB ((cdt_count)1024)
#define MiB (1024 * KiB)

/* ------------------------------------------------------------------------------------------
 * options, time, random numbers, content
 * ---------------------------------------------------------------------------------------- */

typedef struct options {
    double seconds;
    int peers, immortal, senders;
    double kill_every;
    cdt_count max_bytes;
    uint64_t seed;
    int hang_s;
    int random_sender_ids;
    const char *csv, *md;
    int final_per_target;
    double final_s; /* the final phase's bound: what has not arrived by then is reported */
    int dvec_timeout_ms;
} options;

static options opt = {.seconds = 180,
                      .peers = 4,
                      .immortal = 1,
                      .senders = 2,
                      .kill_every = 5,
                      .max_bytes = 64 * MiB,
                      .seed = 1,
                      .hang_s = 60,
                      .final_per_target = 8,
                      .final_s = 60,
                      .dvec_timeout_ms = 700};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(double ms)
{
    long long us = (long long)(ms * 1000);
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;
static uint64_t rnd(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}
/* uniform in [lo, hi] */
static cdt_count rnd_in(rng *r, cdt_count lo, cdt_count hi)
{
    if (hi <= lo)
        return lo;
    return lo + (cdt_count)(rnd(r) % (uint64_t)(hi - lo + 1));
}
static double rnd_unit(rng *r)
{
    return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Content: byte `off` of a part whose key is `key` is byte (off & 7) of word (off >> 3). */
static inline uint64_t content_word(uint64_t key, uint64_t w)
{
    return mix64(key ^ (w * 0xd6e8feb86659fd93ull));
}

static void content_fill(void *dst, cdt_count len, uint64_t key, cdt_count off)
{
    unsigned char *p = dst;
    while (len > 0 && (off & 7) != 0) {
        *p++ = (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8));
        off++;
        len--;
    }
    for (; len >= 8; len -= 8, off += 8, p += 8) {
        uint64_t v = content_word(key, (uint64_t)off >> 3);
        memcpy(p, &v, 8);
    }
    for (; len > 0; len--, off++)
        *p++ = (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8));
}

/* -1 when [src, src+len) holds the content of [off, off+len), else the first bad offset */
static cdt_count content_check(const void *src, cdt_count len, uint64_t key, cdt_count off)
{
    const unsigned char *p = src;
    while (len > 0 && (off & 7) != 0) {
        if (*p != (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8)))
            return off;
        p++, off++, len--;
    }
    for (; len >= 8; len -= 8, off += 8, p += 8) {
        uint64_t v = content_word(key, (uint64_t)off >> 3), g;
        memcpy(&g, p, 8);
        if (g != v)
            for (int i = 0; i < 8; i++)
                if (p[i] != (unsigned char)(v >> (8 * i)))
                    return off + i;
    }
    for (; len > 0; len--, off++, p++)
        if (*p != (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8)))
            return off;
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * tags: family (2) | final (1) | sender peer (3) | incarnation (16) | thread (2) | seq (39)
 * ---------------------------------------------------------------------------------------- */

enum family { FAM_DERIVED, FAM_SOBJ, FAM_DVEC, NFAM };
static const char *fam_name[NFAM] = {"derived", "sobj", "dvec"};

#define TAG_FAM_SHIFT 61
#define TAG_FAM_MASK ((cdt_ucx_tag)3 << TAG_FAM_SHIFT)
#define TAG_FINAL ((cdt_ucx_tag)1 << 60)

static cdt_ucx_tag tag_make(int fam, int final, int peer, int gen, int thread, uint64_t seq)
{
    return ((cdt_ucx_tag)fam << TAG_FAM_SHIFT) | (final ? TAG_FINAL : 0) |
           ((cdt_ucx_tag)(peer & 7) << 57) | ((cdt_ucx_tag)(gen & 0xffff) << 41) |
           ((cdt_ucx_tag)(thread & 3) << 39) | (seq & (((cdt_ucx_tag)1 << 39) - 1));
}
static int tag_fam(cdt_ucx_tag t)
{
    return (int)(t >> TAG_FAM_SHIFT) & 3;
}
static int tag_final(cdt_ucx_tag t)
{
    return (t & TAG_FINAL) != 0;
}
static int tag_peer(cdt_ucx_tag t)
{
    return (int)(t >> 57) & 7;
}

/* the object's key: everything its bytes depend on */
static uint64_t tag_key(cdt_ucx_tag t)
{
    return mix64(t ^ mix64(opt.seed));
}

/* object size in bytes: mostly small, some large */
static cdt_count pick_size(rng *r, int final)
{
    double u = rnd_unit(r);
    cdt_count lo, hi;
    if (u < 0.03)
        return 0;
    if (u < 0.58)
        lo = 1, hi = 4 * KiB;
    else if (u < 0.86)
        lo = 4 * KiB, hi = 256 * KiB;
    else if (u < 0.975)
        lo = 256 * KiB, hi = 8 * MiB;
    else
        lo = 8 * MiB, hi = opt.max_bytes;
    if (final && hi > MiB)
        lo = 1, hi = MiB;
    if (hi > opt.max_bytes)
        hi = opt.max_bytes;
    if (lo > hi)
        lo = hi;
    /* log-uniform within the class */
    double x = (double)lo * pow((double)hi / (double)lo, rnd_unit(r));
    cdt_count n = (cdt_count)x;
    return n < lo ? lo : n > hi ? hi : n;
}

/* ------------------------------------------------------------------------------------------
 * objects: the same description is built by the sender (to fill) and the receiver (to check)
 * ---------------------------------------------------------------------------------------- */

/* split total into n parts (random, each >= 0) */
static void split(rng *r, cdt_count total, int n, cdt_count *parts)
{
    cdt_count left = total;
    for (int i = 0; i < n; i++) {
        if (i == n - 1) {
            parts[i] = left;
            break;
        }
        cdt_count cap = 2 * left / (n - i);
        parts[i] = rnd_in(r, 0, cap < left ? cap : left);
        left -= parts[i];
    }
}

typedef struct dspec {
    cdt_type type; /* committed, count 1 */
    cdt_count size, true_lb, true_extent;
    int shape;
} dspec;

static const char *shape_name[] = {"contiguous",     "vector",   "hvector",       "indexed",
                                   "struct+resized", "subarray", "indexed_block", "hindexed_block"};
#define NSHAPES 8

/* the sender's derived type of the object with this key (about `target` bytes of data) */
static int derived_build(uint64_t key, cdt_count target, dspec *d)
{
    rng r = {key ^ 0x5eed};
    cdt_type t = NULL, tmp = NULL;
    int rc = CDT_SUCCESS;
    int shape = (int)rnd_in(&r, 0, NSHAPES - 1);
    d->shape = shape;
    switch (shape) {
    case 1: { /* vector of doubles */
        cdt_count b = rnd_in(&r, 1, 64), n = target / (8 * b);
        rc = cdt_type_vector(n, b, b + rnd_in(&r, 0, b), CDT_DOUBLE, &t);
        break;
    }
    case 2: { /* hvector of int32, any byte stride */
        cdt_count b = rnd_in(&r, 1, 256), n = target / (4 * b);
        rc = cdt_type_hvector(n, b, 4 * b + rnd_in(&r, 0, 4 * b), CDT_INT32, &t);
        break;
    }
    case 3: { /* indexed int32, up to 32 blocks with gaps */
        int k = (int)rnd_in(&r, 1, 32);
        cdt_count bl[32], disp[32], at = rnd_in(&r, 0, 8);
        split(&r, target / 4, k, bl);
        for (int i = 0; i < k; i++) {
            disp[i] = at;
            at += bl[i] + rnd_in(&r, 0, bl[i] < 64 ? 64 : bl[i]);
        }
        rc = cdt_type_indexed(k, bl, disp, CDT_INT32, &t);
        break;
    }
    case 4: { /* {int32; double; char[3]} resized to 24 bytes, contiguous */
        cdt_count bl[3] = {1, 1, 3}, disp[3] = {0, 8, 16};
        cdt_type ts[3] = {CDT_INT32, CDT_DOUBLE, CDT_CHAR};
        cdt_type st = NULL;
        rc = cdt_type_struct(3, bl, disp, ts, &st);
        if (rc == CDT_SUCCESS)
            rc = cdt_type_resized(st, 0, 24, &tmp);
        cdt_type_free(&st);
        if (rc == CDT_SUCCESS)
            rc = cdt_type_contiguous(target / 15, tmp, &t);
        break;
    }
    case 5: { /* 2-d subarray of doubles */
        cdt_count cols = rnd_in(&r, 1, 512), rows = target / (8 * cols);
        if (rows == 0) {
            rc = cdt_type_contiguous(target, CDT_BYTE, &t);
            break;
        }
        cdt_count sizes[2] = {rows + rnd_in(&r, 0, 2), cols + rnd_in(&r, 0, cols)};
        cdt_count subs[2] = {rows, cols};
        cdt_count starts[2] = {rnd_in(&r, 0, sizes[0] - rows), rnd_in(&r, 0, sizes[1] - cols)};
        int order = rnd_in(&r, 0, 1) ? CDT_ORDER_C : CDT_ORDER_FORTRAN;
        if (order == CDT_ORDER_FORTRAN) { /* same shape, Fortran order: swap the dimensions */
            cdt_count x;
            x = sizes[0], sizes[0] = sizes[1], sizes[1] = x;
            x = subs[0], subs[0] = subs[1], subs[1] = x;
            x = starts[0], starts[0] = starts[1], starts[1] = x;
        }
        rc = cdt_type_subarray(2, sizes, subs, starts, order, CDT_DOUBLE, &t);
        break;
    }
    case 6:   /* indexed_block of int64 */
    case 7: { /* hindexed_block of bytes */
        cdt_count esz = shape == 6 ? 8 : 1;
        cdt_count bl = rnd_in(&r, 1, 128), n;
        if (target / (esz * bl) > 4096)
            bl = target / (esz * 4096) + 1;
        n = target / (esz * bl);
        cdt_count *disp = malloc((size_t)(n ? n : 1) * sizeof(cdt_count));
        if (disp == NULL)
            return CDT_ERR_NO_MEMORY;
        cdt_count at = 0;
        for (cdt_count i = 0; i < n; i++) {
            disp[i] = at; /* elements of int64, or bytes */
            at += bl + rnd_in(&r, 0, bl);
        }
        rc = shape == 6 ? cdt_type_indexed_block(n, bl, disp, CDT_INT64, &t)
                        : cdt_type_hindexed_block(n, bl, disp, CDT_BYTE, &t);
        free(disp);
        break;
    }
    default:
        rc = cdt_type_contiguous(target, CDT_BYTE, &t);
        break;
    }
    cdt_type_free(&tmp);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_commit(&t);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_size(t, &d->size);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_true_extent(t, &d->true_lb, &d->true_extent);
    if (rc != CDT_SUCCESS) {
        cdt_type_free(&t);
        return rc;
    }
    d->type = t;
    return CDT_SUCCESS;
}

/* The receiver's own layout for a stream of P bytes: blocks of B bytes with gaps, then the
 * remainder (hvector, or struct of hvector + contiguous). */
static int recv_layout(cdt_count P, cdt_type *type, cdt_count *extent)
{
    cdt_count B = (cdt_count)1 << (4 + P % 9);
    cdt_type t = NULL;
    int rc;
    if (P < B) {
        rc = cdt_type_contiguous(P, CDT_BYTE, &t);
        *extent = P;
    } else {
        cdt_count q = P / B, rem = P % B, pad = B >= 64 ? B / 8 : 8;
        cdt_type hv = NULL, tail = NULL;
        rc = cdt_type_hvector(q, B, B + pad, CDT_BYTE, &hv);
        *extent = q * (B + pad) + rem;
        if (rc == CDT_SUCCESS && rem == 0) {
            t = hv;
            hv = NULL;
        } else if (rc == CDT_SUCCESS) {
            rc = cdt_type_contiguous(rem, CDT_BYTE, &tail);
            cdt_count bl[2] = {1, 1}, disp[2] = {0, q * (B + pad)};
            cdt_type ts[2] = {hv, tail};
            if (rc == CDT_SUCCESS)
                rc = cdt_type_struct(2, bl, disp, ts, &t);
        }
        cdt_type_free(&hv);
        cdt_type_free(&tail);
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_type_commit(&t);
    if (rc != CDT_SUCCESS) {
        cdt_type_free(&t);
        return rc;
    }
    *type = t;
    return CDT_SUCCESS;
}

typedef struct iov_cursor {
    const void *buf;
    cdt_type type;
    cdt_count next, n, i;
    cdt_iov iov[256];
    const char *p; /* current piece */
    cdt_count left;
} iov_cursor;

static int cursor_take(iov_cursor *c)
{
    while (c->left == 0) {
        if (c->i == c->n) {
            int rc = cdt_iov_get(c->buf, 1, c->type, c->next, 256, c->iov, &c->n);
            if (rc != CDT_SUCCESS)
                return rc;
            c->next += c->n;
            c->i = 0;
            if (c->n == 0)
                return 1; /* end */
        }
        c->p = c->iov[c->i].base;
        c->left = c->iov[c->i].len;
        c->i++;
    }
    return CDT_SUCCESS;
}

/* Compare the data of (rbuf, 1, rtype) with the content the sender's layout d holds for key.
 * Returns -1 when equal, else the first wrong stream offset; *rc gets a library error. */
static cdt_count derived_verify(const dspec *d, uint64_t key, const void *rbuf, cdt_type rtype,
                                int *rc)
{
    static char fake_mem_anchor[1];
    /* the sender's memory starts at a fake address: only offsets from it are used */
    const char *fake_mem = fake_mem_anchor;
    iov_cursor s = {.buf = fake_mem - d->true_lb, .type = d->type};
    iov_cursor r = {.buf = rbuf, .type = rtype};
    cdt_count pos = 0;
    *rc = CDT_SUCCESS;
    for (;;) {
        int a = cursor_take(&s), b = cursor_take(&r);
        if (a < 0 || b < 0) {
            *rc = a < 0 ? a : b;
            return pos;
        }
        if (a == 1 || b == 1)
            return a == b ? -1 : pos; /* both must end together */
        cdt_count n = s.left < r.left ? s.left : r.left;
        cdt_count bad = content_check(r.p, n, key, (cdt_count)(s.p - fake_mem));
        if (bad >= 0)
            return pos + (bad - (cdt_count)(s.p - fake_mem));
        s.p += n, s.left -= n, r.p += n, r.left -= n, pos += n;
    }
}

/* sobj: in-band bytes + up to 8 typed buffers */
typedef struct sspec {
    cdt_count inband_len;
    int nbuf;
    cdt_count len[8];
    cdt_kind kind[8];
} sspec;

static void sobj_spec(uint64_t key, cdt_count target, sspec *s)
{
    rng r = {key ^ 0x50b1};
    static const cdt_kind kinds[3] = {CDT_KIND_BYTE, CDT_KIND_INT32, CDT_KIND_DOUBLE};
    s->inband_len = target < 64 ? target : rnd_in(&r, 0, target < 16 * KiB ? target : 16 * KiB);
    cdt_count rest = target - s->inband_len;
    s->nbuf = rest == 0 ? (int)rnd_in(&r, 0, 2) : (int)rnd_in(&r, 1, 8);
    split(&r, rest, s->nbuf, s->len);
    for (int i = 0; i < s->nbuf; i++) {
        s->kind[i] = kinds[rnd_in(&r, 0, 2)];
        s->len[i] -= s->len[i] % cdt_kind_size(s->kind[i]);
    }
}
static uint64_t part_key(uint64_t key, int part)
{
    return mix64(key + 0x1000 + (uint64_t)part);
}

/* dvec: up to 16 int32 arrays */
typedef struct vspec {
    int n;
    cdt_count len[16]; /* elements */
} vspec;

static void dvec_spec(uint64_t key, cdt_count target, vspec *v)
{
    rng r = {key ^ 0xd7ec};
    v->n = (int)rnd_in(&r, 0, 16);
    if (v->n > 0)
        split(&r, target / 4, v->n, v->len);
}

/* ------------------------------------------------------------------------------------------
 * statistics and messages between peers and the supervisor
 * ---------------------------------------------------------------------------------------- */

typedef struct stats {
    uint64_t sent[NFAM], sent_bytes, recv[NFAM], recv_bytes, verified, verified_bytes;
    uint64_t wrong;       /* objects with a wrong byte or a wrong shape */
    uint64_t unexpected;  /* statuses outside the clean set */
    uint64_t stuck;       /* requests still pending after cancel / close / hang limit */
    uint64_t tmo_matched; /* dvec: cdt_ucx_recv timed out with the object partly written */
    uint64_t late_write;  /* dvec: a timed-out receive's object written after the return */
    uint64_t connects, reconnects, accepts, idle_timeouts;
    uint64_t recv_canceled_unasked; /* CDT_ERR_CANCELED on a receive the soak did not cancel */
    /* the soak's cancel of a receive that had matched (prepare ran) ended it CDT_ERR_CANCELED:
     * a single-mode receive completes at once when canceled (docs/TRANSPORT.md §6) */
    uint64_t recv_canceled_matched;
    uint64_t err_send[NSTATUS], err_recv[NSTATUS], err_conn[NSTATUS];
    uint64_t final_sent[MAX_PEERS], final_recv[MAX_PEERS], final_send_err, final_done;
    uint64_t largest;
    uint64_t quarantined_bytes; /* gauge: dvec arrays held by timed-out receives */
} stats;

enum { M_HELLO, M_STATS, M_FAIL, M_NOTE, M_INFO, M_UP, M_DOWN, M_QUIESCE, M_FINAL, M_STOP, M_BYE };

typedef struct msg {
    int type, peer, gen, port;
    stats st;
    char text[4096];
} msg;

static int st_idx(int rc)
{
    return rc < 0 && rc > -NSTATUS + 1 ? -rc : NSTATUS - 1;
}
static int clean(int rc)
{
    return rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT || rc == CDT_ERR_CANCELED;
}
#define ADD(field, n) __atomic_fetch_add(&(field), (uint64_t)(n), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------------------------------
 * peer process
 * ---------------------------------------------------------------------------------------- */

static int g_me, g_gen, g_sock;
static cdt_ucx_context g_ctx;
static cdt_ucx_worker g_w;
static cdt_ucx_listener g_l;
static stats g_st;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* table, socket writes */
static int tab_port[MAX_PEERS], tab_gen[MAX_PEERS];
static atomic_int g_stop, g_quiesce, g_final, g_info_sent;
#define MAX_THREADS 16
static _Atomic double g_beat[MAX_THREADS];
static const char *g_thread_name[MAX_THREADS];

static void send_msg(msg *m)
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
static void report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(M_FAIL, fmt, ap);
    va_end(ap);
}

/* a clean but notable event, listed in the report */
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(M_NOTE, fmt, ap);
    va_end(ap);
}

static void beat(int th)
{
    g_beat[th] = now_s();
}

/* wait without spinning flat out (2 shared cores): test, then back off to 50 us naps */
static int wait_req_until(cdt_ucx_request q, int64_t timeout_ms, int th, int until_stop)
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

static int wait_req(cdt_ucx_request q, int64_t timeout_ms, int th)
{
    return wait_req_until(q, timeout_ms, th, 0);
}

/* How long a receive waits before the soak abandons it: `normal` during the traffic (short
 * on purpose: abandoned receives are part of what is tested), at least FINAL_RECV_MS in the
 * final phase, where every object must arrive. A final object that a receiver abandoned on its
 * own short timer (the machine being slow, not the transport losing it) was counted as lost,
 * and the phase then waited for it until its bound. */
#define FINAL_RECV_MS 5000
static int64_t recv_patience_ms(int64_t normal)
{
    return g_final && normal < FINAL_RECV_MS ? FINAL_RECV_MS : normal;
}

/* -------- senders -------- */

typedef struct send_obj {
    int fam;
    void *mem; /* derived: the buffer */
    dspec d;
    cdt_sobj so;
    sspec ss;
    double_vec dv;
    cdt_count bytes;
} send_obj;

static void send_obj_free(send_obj *o)
{
    free(o->mem);
    cdt_type_free(&o->d.type);
    if (o->fam == FAM_SOBJ) {
        free(o->so.inband);
        for (cdt_count i = 0; i < o->so.nbuffers; i++)
            free(o->so.buffers[i].base);
        free(o->so.buffers);
    }
    if (o->fam == FAM_DVEC)
        double_vec_clear(&o->dv);
    memset(o, 0, sizeof(*o));
}

static int send_obj_make(send_obj *o, int fam, uint64_t key, cdt_count size)
{
    memset(o, 0, sizeof(*o));
    o->fam = fam;
    if (fam == FAM_DERIVED) {
        int rc = derived_build(key, size, &o->d);
        if (rc != CDT_SUCCESS)
            return rc;
        o->mem = malloc((size_t)o->d.true_extent + 1);
        if (o->mem == NULL)
            return CDT_ERR_NO_MEMORY;
        content_fill(o->mem, o->d.true_extent, key, 0);
        o->bytes = o->d.size;
    } else if (fam == FAM_SOBJ) {
        sobj_spec(key, size, &o->ss);
        o->so.inband_len = o->ss.inband_len;
        o->so.inband = malloc((size_t)o->ss.inband_len + 1);
        o->so.buffers = calloc((size_t)o->ss.nbuf + 1, sizeof(cdt_sobj_buffer));
        o->so.nbuffers = o->ss.nbuf;
        if (o->so.inband == NULL || o->so.buffers == NULL)
            return CDT_ERR_NO_MEMORY;
        content_fill(o->so.inband, o->ss.inband_len, part_key(key, -1), 0);
        o->bytes = o->ss.inband_len;
        for (int i = 0; i < o->ss.nbuf; i++) {
            o->so.buffers[i] =
                (cdt_sobj_buffer){malloc((size_t)o->ss.len[i] + 1), o->ss.len[i], o->ss.kind[i]};
            if (o->so.buffers[i].base == NULL)
                return CDT_ERR_NO_MEMORY;
            content_fill(o->so.buffers[i].base, o->ss.len[i], part_key(key, i), 0);
            o->bytes += o->ss.len[i];
        }
    } else {
        vspec v;
        dvec_spec(key, size, &v);
        if (double_vec_init(&o->dv, v.n, 0, 0) != CDT_SUCCESS)
            return CDT_ERR_NO_MEMORY;
        for (int i = 0; i < v.n; i++) {
            free(o->dv.data[i]);
            o->dv.lens[i] = v.len[i];
            o->dv.data[i] = malloc((size_t)v.len[i] * 4 + 1);
            if (o->dv.data[i] == NULL)
                return CDT_ERR_NO_MEMORY;
            content_fill(o->dv.data[i], v.len[i] * 4, part_key(key, i), 0);
            o->bytes += v.len[i] * 4;
        }
    }
    return CDT_SUCCESS;
}

static cdt_type fam_send_type(const send_obj *o)
{
    return o->fam == FAM_DERIVED ? o->d.type
           : o->fam == FAM_SOBJ  ? cdt_sobj_type()
                                 : double_vec_type();
}
static const void *fam_send_buf(const send_obj *o)
{
    return o->fam == FAM_DERIVED ? (const char *)o->mem - o->d.true_lb
           : o->fam == FAM_SOBJ  ? (const void *)&o->so
                                 : (const void *)&o->dv;
}

typedef struct conn {
    cdt_ucx_ep ep;
    int gen;
    int had; /* connected before: the next connect is a reconnection */
} conn;

static void print_transports(cdt_ucx_ep ep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    ucp_ep_print_info((ucp_ep_h)cdt_ucx_ep_handle(ep), f);
    fclose(f);
    msg *m = calloc(1, sizeof(*m));
    if (m != NULL) {
        m->type = M_INFO;
        m->peer = g_me;
        snprintf(m->text, sizeof(m->text), "%s", text);
        send_msg(m);
        free(m);
    }
    free(text);
}

/* one object to `target`; returns the status (clean statuses are counted, not fatal) */
static int send_one(int th, conn *c, int target, int final, uint64_t *seq, rng *r)
{
    pthread_mutex_lock(&g_lock);
    int port = tab_port[target], gen = tab_gen[target];
    pthread_mutex_unlock(&g_lock);
    if (port == 0)
        return CDT_ERR_PEER;
    if (c->ep != NULL && (c->gen != gen || cdt_ucx_ep_status(c->ep) != CDT_SUCCESS)) {
        cdt_ucx_ep_close(c->ep, 0);
        c->ep = NULL;
    }
    if (c->ep == NULL) {
        int rc = cdt_ucx_ep_connect(g_w, "127.0.0.1", (uint16_t)port, 3000, &c->ep);
        beat(th);
        if (rc != CDT_SUCCESS) {
            c->ep = NULL;
            ADD(g_st.err_conn[st_idx(rc)], 1);
            if (!clean(rc) && rc != CDT_ERR_TRANSPORT) {
                ADD(g_st.unexpected, 1);
                report("connect to peer %d.%d: %s", target, gen, cdt_err_name(rc));
            }
            return rc;
        }
        c->gen = gen;
        ADD(g_st.connects, 1);
        if (c->had)
            ADD(g_st.reconnects, 1);
        c->had = 1;
        if (g_me == 0 && g_gen == 0 && !atomic_exchange(&g_info_sent, 1))
            print_transports(c->ep);
    }
    int fam = (int)(rnd(r) % NFAM);
    cdt_ucx_tag tag = tag_make(fam, final, g_me, g_gen, th, ++*seq);
    uint64_t key = tag_key(tag);
    rng kr = {key};
    send_obj o;
    int rc = send_obj_make(&o, fam, key, pick_size(&kr, final));
    if (rc != CDT_SUCCESS) {
        report("building a %s object: %s", fam_name[fam], cdt_err_name(rc));
        ADD(g_st.unexpected, 1);
        send_obj_free(&o);
        return rc;
    }
    cdt_ucx_request q;
    rc = cdt_ucx_isend(c->ep, fam_send_buf(&o), 1, fam_send_type(&o), tag, &q);
    if (rc == CDT_SUCCESS) {
        double t0 = now_s();
        /* a send still pending when the peer is told to stop (the final phase's bound passed)
         * is given up like one that timed out: its endpoint is closed and it must end */
        rc = wait_req_until(q, 30000, th, 1);
        if (rc == CDT_ERR_TIMEOUT) {
            pthread_mutex_lock(&g_lock);
            int still = tab_port[target] != 0 && tab_gen[target] == gen;
            pthread_mutex_unlock(&g_lock);
            note("send of a %s object (%" PRId64 " B, tag 0x%016" PRIx64 ") to peer %d.%d "
                 "pending after %.0f s (peer %s); endpoint closed",
                 fam_name[fam], o.bytes, (uint64_t)tag, target, gen, now_s() - t0,
                 still ? "still alive" : "gone since");
            /* close by force: the send must then complete (with an error) */
            cdt_ucx_ep_close(c->ep, 0);
            c->ep = NULL;
            int rc2 = wait_req(q, 10000, th);
            if (rc2 == CDT_ERR_TIMEOUT) {
                ADD(g_st.stuck, 1);
                report("send to peer %d.%d (%s, %" PRId64 " B) still pending 10 s after its "
                       "endpoint was closed; object leaked",
                       target, gen, fam_name[fam], o.bytes);
                return rc;
            }
        }
        cdt_ucx_request_free(q);
    }
    if (rc == CDT_SUCCESS) {
        ADD(g_st.sent[fam], 1);
        ADD(g_st.sent_bytes, o.bytes);
        if (final)
            ADD(g_st.final_sent[target], 1);
    } else {
        ADD(g_st.err_send[st_idx(rc)], 1);
        if (!clean(rc)) {
            ADD(g_st.unexpected, 1);
            report("send of %s object (%" PRId64 " B) to peer %d.%d: %s", fam_name[fam], o.bytes,
                   target, gen, cdt_err_name(rc));
        }
        if (c->ep != NULL) {
            cdt_ucx_ep_close(c->ep, 0);
            c->ep = NULL;
        }
    }
    send_obj_free(&o);
    return rc;
}

static void *sender_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    rng r = {mix64(opt.seed ^ ((uint64_t)g_me << 40) ^ ((uint64_t)g_gen << 8) ^ (uint64_t)th)};
    conn c[MAX_PEERS] = {{0}};
    uint64_t seq = 0;
    int final_done = 0;
    while (!g_stop) {
        beat(th);
        if (g_final && !final_done) {
            for (int t = 0; t < opt.peers; t++)
                for (int k = 0; t != g_me && k < opt.final_per_target; k++)
                    if (send_one(th, &c[t], t, 1, &seq, &r) != CDT_SUCCESS) {
                        ADD(g_st.final_send_err, 1);
                        report("final object to peer %d not sent", t);
                    }
            final_done = 1;
            ADD(g_st.final_done, 1);
            continue;
        }
        if (g_quiesce || final_done) {
            sleep_ms(20);
            continue;
        }
        int cand[MAX_PEERS], n = 0;
        pthread_mutex_lock(&g_lock);
        for (int t = 0; t < opt.peers; t++)
            if (t != g_me && tab_port[t] != 0)
                cand[n++] = t;
        pthread_mutex_unlock(&g_lock);
        if (n == 0) {
            sleep_ms(20);
            continue;
        }
        int t = cand[rnd(&r) % (uint64_t)n];
        if (send_one(th, &c[t], t, 0, &seq, &r) != CDT_SUCCESS)
            sleep_ms(10);
    }
    for (int t = 0; t < opt.peers; t++)
        if (c[t].ep != NULL)
            cdt_ucx_ep_close(c[t].ep, 500);
    return NULL;
}

/* -------- receivers -------- */

typedef struct rctx {
    int fam;
    void *mem; /* derived: receive layout's memory */
    cdt_type type;
    cdt_count stream;
    cdt_sobj so;
    int prepared, so_prepared;
} rctx;

static int prepare_cb(void *arg, cdt_decoder d)
{
    rctx *x = arg;
    x->prepared = 1;
    if (x->fam == FAM_SOBJ) {
        memset(&x->so, 0, sizeof(x->so));
        int rc = cdt_sobj_recv_prepare(&x->so, d);
        if (rc != CDT_SUCCESS)
            return rc;
        x->so_prepared = 1;
        return cdt_decoder_bind(d, &x->so, 1, cdt_sobj_type());
    }
    cdt_frame_info fi = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt_decoder_info(d, &fi);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count P = fi.packed_size + fi.region_bytes, extent;
    if (P > 4 * opt.max_bytes)
        return CDT_ERR_USER_BASE;
    rc = recv_layout(P, &x->type, &extent);
    if (rc != CDT_SUCCESS)
        return rc;
    x->stream = P;
    x->mem = malloc((size_t)extent + 1);
    if (x->mem == NULL)
        return CDT_ERR_NO_MEMORY;
    return cdt_decoder_bind(d, x->mem, 1, x->type);
}

static void rctx_clear(rctx *x)
{
    free(x->mem);
    cdt_type_free(&x->type);
    if (x->so_prepared)
        cdt_sobj_release(&x->so);
    int fam = x->fam;
    memset(x, 0, sizeof(*x));
    x->fam = fam;
}

static void wrong(cdt_ucx_tag tag, const char *what, cdt_count at)
{
    ADD(g_st.wrong, 1);
    report("WRONG DATA: %s object from peer %d (tag 0x%016" PRIx64 "): %s at byte %" PRId64,
           fam_name[tag_fam(tag)], tag_peer(tag), (uint64_t)tag, what, at);
}

/* check a received object against what its tag says; returns its bytes, -1 when wrong */
static cdt_count verify(rctx *x, double_vec *dv, cdt_ucx_tag tag)
{
    uint64_t key = tag_key(tag);
    rng kr = {key};
    cdt_count size = pick_size(&kr, tag_final(tag)), bytes = -1;
    if (tag_fam(tag) != x->fam) {
        wrong(tag, "family does not match the receive's mask", 0);
        return -1;
    }
    if (x->fam == FAM_DERIVED) {
        dspec d;
        int rc = derived_build(key, size, &d);
        if (rc != CDT_SUCCESS) {
            report("rebuilding the sender's type: %s", cdt_err_name(rc));
            ADD(g_st.unexpected, 1);
            return -1;
        }
        if (d.size != x->stream) {
            wrong(tag, "stream length differs from the sender's type size", x->stream);
        } else {
            cdt_count bad = derived_verify(&d, key, x->mem, x->type, &rc);
            if (rc != CDT_SUCCESS) {
                report("iov of a derived type: %s", cdt_err_name(rc));
                ADD(g_st.unexpected, 1);
            } else if (bad >= 0) {
                char what[128];
                snprintf(what, sizeof(what), "%s, %" PRId64 " B: stream byte differs",
                         shape_name[d.shape], d.size);
                wrong(tag, what, bad);
            } else {
                bytes = d.size;
            }
        }
        cdt_type_free(&d.type);
        return bytes;
    }
    if (x->fam == FAM_SOBJ) {
        sspec s;
        sobj_spec(key, size, &s);
        if (x->so.inband_len != s.inband_len || x->so.nbuffers != s.nbuf) {
            wrong(tag, "sobj shape (in-band length or buffer count)", 0);
            return -1;
        }
        cdt_count bad = content_check(x->so.inband, s.inband_len, part_key(key, -1), 0);
        if (bad >= 0) {
            wrong(tag, "sobj in-band byte", bad);
            return -1;
        }
        bytes = s.inband_len;
        for (int i = 0; i < s.nbuf; i++) {
            if (x->so.buffers[i].len != s.len[i] || x->so.buffers[i].kind != s.kind[i]) {
                wrong(tag, "sobj buffer length or kind", i);
                return -1;
            }
            bad = content_check(x->so.buffers[i].base, s.len[i], part_key(key, i), 0);
            if (bad >= 0) {
                wrong(tag, "sobj buffer byte", bad);
                return -1;
            }
            bytes += s.len[i];
        }
        return bytes;
    }
    vspec v;
    dvec_spec(key, size, &v);
    if (dv->n != v.n) {
        wrong(tag, "dvec array count", dv->n);
        return -1;
    }
    bytes = 0;
    for (int i = 0; i < v.n; i++) {
        if (dv->lens[i] != v.len[i]) {
            wrong(tag, "dvec array length", i);
            return -1;
        }
        cdt_count bad = content_check(dv->data[i], v.len[i] * 4, part_key(key, i), 0);
        if (bad >= 0) {
            wrong(tag, "dvec array byte", bad);
            return -1;
        }
        bytes += v.len[i] * 4;
    }
    return bytes;
}

static void received(rctx *x, double_vec *dv, cdt_ucx_tag tag)
{
    ADD(g_st.recv[x->fam], 1);
    cdt_count bytes = verify(x, dv, tag);
    if (bytes < 0)
        return; /* verify() reported it */
    ADD(g_st.recv_bytes, bytes);
    ADD(g_st.verified, 1);
    ADD(g_st.verified_bytes, bytes);
    if ((uint64_t)bytes > g_st.largest)
        g_st.largest = (uint64_t)bytes;
    if (tag_final(tag))
        ADD(g_st.final_recv[tag_peer(tag)], 1);
}

static void recv_failed(int fam, int rc)
{
    ADD(g_st.err_recv[st_idx(rc)], 1);
    if (!clean(rc)) {
        ADD(g_st.unexpected, 1);
        report("%s receive: %s", fam_name[fam], cdt_err_name(rc));
    }
}

/* derived and sobj: irecv with a prepare callback, wait, cancel when idle */
static void *receiver_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    int fam = th - opt.senders;
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = prepare_cb};
    while (!g_stop) {
        beat(th);
        rctx *x = calloc(1, sizeof(*x));
        x->fam = fam;
        rp.prepare_arg = x;
        cdt_ucx_request q;
        int rc = cdt_ucx_irecv(g_w, NULL, 0, NULL, (cdt_ucx_tag)fam << TAG_FAM_SHIFT, TAG_FAM_MASK,
                               &rp, &q);
        if (rc != CDT_SUCCESS) {
            recv_failed(fam, rc);
            free(x);
            sleep_ms(10);
            continue;
        }
        rc = wait_req_until(q, recv_patience_ms(1000), th, 1);
        int idle = 0;
        if (rc == CDT_ERR_CANCELED)
            ADD(g_st.recv_canceled_unasked, 1);
        if (rc == CDT_ERR_TIMEOUT) {
            int c = cdt_ucx_request_cancel(q);
            int64_t more = c == CDT_ERR_BUSY ? (int64_t)opt.hang_s * 500 : 10000;
            rc = wait_req(q, more, th);
            if (rc == CDT_ERR_TIMEOUT) {
                ADD(g_st.stuck, 1);
                report("%s receive still pending %" PRId64 " ms after cancel (%s); request and "
                       "buffers leaked",
                       fam_name[fam], more, c == CDT_ERR_BUSY ? "matched" : "not matched");
                continue;
            }
            idle = rc == CDT_ERR_CANCELED && !x->prepared;
            if (rc == CDT_ERR_CANCELED && x->prepared)
                ADD(g_st.recv_canceled_matched, 1); /* our cancel ended a matched receive */
        }
        if (rc == CDT_SUCCESS) {
            cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL};
            int ri = cdt_ucx_request_recv_info(q, &info);
            if (ri != CDT_SUCCESS)
                recv_failed(fam, ri);
            else
                received(x, NULL, info.tag);
        } else if (idle) {
            ADD(g_st.idle_timeouts, 1);
        } else {
            recv_failed(fam, rc);
        }
        cdt_ucx_request_free(q);
        rctx_clear(x);
        free(x);
    }
    return NULL;
}

/* dvec: the blocking cdt_ucx_recv with a short timeout. cdt_ucx.h: a receive that returned
 * never writes the caller's object again, though it may have written part of it. A timed-out
 * double_vec waits here for a while: if it changes, the receive was not really over; if not,
 * it is cleared and freed like any other. */
typedef struct quarantined {
    double_vec *dv;
    cdt_count n;       /* arrays when the call returned */
    int32_t **data;    /* the array list when the call returned */
    uint64_t checksum; /* of the arrays written by then */
    double release_at; /* freed after this time when unchanged */
} quarantined;

static uint64_t dvec_checksum(const double_vec *dv)
{
    uint64_t h = 1469598103934665603ull;
    for (cdt_count k = 0; dv->data != NULL && dv->lens != NULL && k < dv->n; k++)
        for (cdt_count i = 0; dv->data[k] != NULL && i < dv->lens[k]; i++)
            h = (h ^ (uint32_t)dv->data[k][i]) * 1099511628211ull;
    return h;
}

static void *dvec_receiver_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    quarantined *qs = NULL;
    size_t nq = 0, capq = 0;
    double next_scan = now_s() + 1;
    rctx x = {.fam = FAM_DVEC};
    while (!g_stop) {
        beat(th);
        double_vec *dv = calloc(1, sizeof(*dv));
        cdt_ucx_recv_info info = {.field_mask = CDT_UCX_RECV_INFO_ALL};
        int rc = cdt_ucx_recv(g_w, dv, 1, double_vec_type(), (cdt_ucx_tag)FAM_DVEC << TAG_FAM_SHIFT,
                              TAG_FAM_MASK, NULL, &info, recv_patience_ms(opt.dvec_timeout_ms));
        beat(th);
        if (rc == CDT_SUCCESS) {
            received(&x, dv, info.tag);
            double_vec_clear(dv);
            free(dv);
        } else if (rc == CDT_ERR_TIMEOUT) {
            if (dv->n != 0 || dv->data != NULL)
                ADD(g_st.tmo_matched, 1); /* matched, abandoned part-way: clean */
            else
                ADD(g_st.idle_timeouts, 1);
            if (nq == capq) {
                capq = capq ? 2 * capq : 256;
                qs = realloc(qs, capq * sizeof(*qs));
            }
            qs[nq++] = (quarantined){dv, dv->n, dv->data, dvec_checksum(dv), now_s() + 3};
        } else {
            recv_failed(FAM_DVEC, rc);
            double_vec_clear(dv);
            free(dv);
        }
        if (now_s() > next_scan) {
            next_scan = now_s() + 1;
            uint64_t held = 0;
            size_t keep = 0;
            for (size_t i = 0; i < nq; i++) {
                quarantined *q = &qs[i];
                if (q->dv->n != q->n || q->dv->data != q->data ||
                    dvec_checksum(q->dv) != q->checksum) {
                    ADD(g_st.late_write, 1);
                    report("a dvec receive that returned CDT_ERR_TIMEOUT wrote the caller's "
                           "double_vec later (%" PRId64 " arrays)",
                           q->dv->n);
                    q->n = q->dv->n; /* reported once; kept, never freed */
                    q->data = q->dv->data;
                    q->checksum = dvec_checksum(q->dv);
                    q->release_at = INFINITY;
                }
                if (now_s() > q->release_at) {
                    double_vec_clear(q->dv);
                    free(q->dv);
                    continue;
                }
                for (cdt_count k = 0; q->dv->data != NULL && q->dv->lens != NULL && k < q->dv->n;
                     k++)
                    held += (uint64_t)q->dv->lens[k] * 4;
                qs[keep++] = *q;
            }
            nq = keep;
            __atomic_store_n(&g_st.quarantined_bytes, held, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* -------- acceptor: accepts connections, closes the ones whose peer died -------- */

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

static void send_stats(int type)
{
    msg *m = calloc(1, sizeof(*m));
    m->type = type;
    m->peer = g_me;
    m->gen = g_gen;
    memcpy(&m->st, &g_st, sizeof(g_st));
    send_msg(m);
    free(m);
}

static int peer_main(int me, int gen, int sock)
{
    g_me = me, g_gen = gen, g_sock = sock;
    signal(SIGSEGV, crash_handler);
    signal(SIGBUS, crash_handler);
    signal(SIGABRT, crash_handler);
    signal(SIGFPE, crash_handler);
    signal(SIGPIPE, SIG_IGN);
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
    cdt_ucx_listener_destroy(g_l);
    cdt_ucx_worker_destroy(g_w);
    cdt_ucx_context_destroy(g_ctx);
    send_stats(M_BYE);
    free(m);
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * supervisor
 * ---------------------------------------------------------------------------------------- */

typedef struct incarnation {
    int peer, gen;
    pid_t pid;
    double t0, t1;
    int killed, died_badly, bye;
    stats st;
    long rss_first, rss_last, rss_max;
} incarnation;

typedef struct slot {
    pid_t pid;
    int sock, gen, port, alive, ready;
    size_t inc;
} slot;

typedef struct sample {
    double t;
    size_t inc;
    long rss_kib, quarantined_kib;
} sample;

static incarnation *incs;
static size_t ninc;
static slot slots[MAX_PEERS];
static sample *samples;
static size_t nsamples, capsamples;
static double t_start;
static int n_fail_msgs, n_bad_deaths, deaths, n_notes;
/* when the phases after the traffic began and ended (0: not reached) */
static struct {
    double traffic, final, final_done, stop, stopped;
    int final_bounded;
} ends;
static char *note_log;
static size_t note_log_len;
static char *fail_log; /* the first failures, for the report */
static size_t fail_log_len;
static char *transports;
static FILE *csv;

static void fail_note(const char *fmt, ...)
{
    char line[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("[%7.1f s] FAIL %s\n", now_s() - t_start, line);
    fflush(stdout);
    if (fail_log_len < 64 * 1024) {
        size_t n = strlen(line);
        fail_log = realloc(fail_log, fail_log_len + n + 16);
        fail_log_len += (size_t)sprintf(fail_log + fail_log_len, "- %s\n", line);
    }
}

static void spawn(int i)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
        perror("socketpair");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    if (csv)
        fflush(csv);
    int gen = slots[i].pid == 0 && ninc < (size_t)opt.peers ? 0 : slots[i].gen + 1;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(sv[0]);
        for (int k = 0; k < opt.peers; k++)
            if (slots[k].alive)
                close(slots[k].sock);
        _exit(peer_main(i, gen, sv[1]));
    }
    close(sv[1]);
    slots[i] = (slot){.pid = pid, .sock = sv[0], .gen = gen, .alive = 1, .inc = ninc};
    incs = realloc(incs, (ninc + 1) * sizeof(*incs));
    incs[ninc++] = (incarnation){.peer = i, .gen = gen, .pid = pid, .t0 = now_s() - t_start};
}

static void tell(int i, int type, int peer, int gen, int port)
{
    msg m = {.type = type, .peer = peer, .gen = gen, .port = port};
    if (slots[i].alive && send(slots[i].sock, &m, sizeof(m), MSG_NOSIGNAL) < 0) {
        /* the peer died: the reaper notices */
    }
}
static void tell_all(int type)
{
    for (int k = 0; k < opt.peers; k++)
        if (slots[k].ready)
            tell(k, type, 0, 0, 0);
}

static void handle(int i, msg *m)
{
    incarnation *in = &incs[slots[i].inc];
    switch (m->type) {
    case M_HELLO:
        slots[i].port = m->port;
        slots[i].ready = 1;
        for (int k = 0; k < opt.peers; k++)
            if (k != i && slots[k].ready) {
                tell(i, M_UP, k, slots[k].gen, slots[k].port);
                tell(k, M_UP, i, slots[i].gen, slots[i].port);
            }
        break;
    case M_STATS:
    case M_BYE:
        in->st = m->st;
        in->bye |= m->type == M_BYE;
        break;
    case M_FAIL:
        n_fail_msgs++;
        fail_note("peer %d.%d (pid %d): %s", m->peer, m->gen, (int)in->pid, m->text);
        break;
    case M_NOTE:
        n_notes++;
        printf("[%7.1f s] note: peer %d.%d: %s\n", now_s() - t_start, m->peer, m->gen, m->text);
        if (note_log_len < 32 * 1024) {
            size_t n = strlen(m->text);
            note_log = realloc(note_log, note_log_len + n + 64);
            note_log_len += (size_t)sprintf(note_log + note_log_len, "- [%.0f s] peer %d.%d: %s\n",
                                            now_s() - t_start, m->peer, m->gen, m->text);
        }
        break;
    case M_INFO:
        if (transports == NULL)
            transports = strdup(m->text);
        break;
    }
}

static void close_slot(int i)
{
    close(slots[i].sock);
    slots[i].alive = slots[i].ready = 0;
    slots[i].port = 0;
    incs[slots[i].inc].t1 = now_s() - t_start;
    for (int k = 0; k < opt.peers; k++)
        if (k != i && slots[k].ready)
            tell(k, M_DOWN, i, slots[i].gen, 0);
}

static int stopping;

static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < opt.peers; i++) {
            if (!slots[i].alive || slots[i].pid != pid)
                continue;
            incarnation *in = &incs[slots[i].inc];
            int ok = stopping && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (!ok) {
                in->died_badly = 1;
                n_bad_deaths++;
                if (WIFSIGNALED(status))
                    fail_note("peer %d.%d (pid %d) died of signal %d without being killed", i,
                              slots[i].gen, (int)pid, WTERMSIG(status));
                else
                    fail_note("peer %d.%d (pid %d) exited with %d%s", i, slots[i].gen, (int)pid,
                              WEXITSTATUS(status), stopping ? "" : " before the end");
            }
            close_slot(i);
            if (!stopping)
                spawn(i);
        }
    }
}

static long read_rss(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static void sample_rss(void)
{
    double t = now_s() - t_start;
    for (int i = 0; i < opt.peers; i++) {
        if (!slots[i].alive)
            continue;
        incarnation *in = &incs[slots[i].inc];
        long kib = read_rss(slots[i].pid);
        if (kib < 0)
            continue;
        if (in->rss_first == 0)
            in->rss_first = kib;
        in->rss_last = kib;
        if (kib > in->rss_max)
            in->rss_max = kib;
        if (nsamples == capsamples) {
            capsamples = capsamples ? 2 * capsamples : 4096;
            samples = realloc(samples, capsamples * sizeof(*samples));
        }
        long qk = (long)(in->st.quarantined_bytes / 1024);
        samples[nsamples++] = (sample){t, slots[i].inc, kib, qk};
        uint64_t sent = 0, recvd = 0;
        for (int f = 0; f < NFAM; f++)
            sent += in->st.sent[f], recvd += in->st.recv[f];
        if (csv)
            fprintf(csv, "%.1f,%d,%d,%d,%ld,%ld,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                    t, i, in->gen, (int)in->pid, kib, qk, sent, recvd, in->st.verified,
                    in->st.verified_bytes);
    }
}

/* run the event loop for `secs` (or until done() says so) */
static double next_sample, next_kill, next_progress;
static rng sup_rng;
static int killing;

static void kill_one(void)
{
    int cand[MAX_PEERS], n = 0;
    for (int i = opt.immortal; i < opt.peers; i++)
        if (slots[i].ready)
            cand[n++] = i;
    if (n == 0)
        return;
    int i = cand[rnd(&sup_rng) % (uint64_t)n];
    kill(slots[i].pid, SIGKILL);
    int status;
    waitpid(slots[i].pid, &status, 0);
    incs[slots[i].inc].killed = 1;
    deaths++;
    close_slot(i);
    spawn(i);
}

static void totals(stats *t)
{
    memset(t, 0, sizeof(*t));
    uint64_t largest = 0;
    for (size_t k = 0; k < ninc; k++) {
        const uint64_t *s = (const uint64_t *)&incs[k].st;
        uint64_t *d = (uint64_t *)t;
        for (size_t j = 0; j < sizeof(stats) / 8; j++)
            d[j] += s[j];
        if (incs[k].st.largest > largest)
            largest = incs[k].st.largest;
    }
    t->largest = largest;
}

static void progress_line(void)
{
    stats t;
    totals(&t);
    uint64_t sent = t.sent[0] + t.sent[1] + t.sent[2];
    printf("[%7.1f s] sent %" PRIu64 " verified %" PRIu64 " (%.2f GB) deaths %d reconnects %" PRIu64
           " peer-errors %" PRIu64 " timeouts %" PRIu64 " failures %d\n",
           now_s() - t_start, sent, t.verified, (double)t.verified_bytes / 1e9, deaths,
           t.reconnects, t.err_send[st_idx(CDT_ERR_PEER)] + t.err_recv[st_idx(CDT_ERR_PEER)],
           t.err_send[st_idx(CDT_ERR_TIMEOUT)] + t.err_recv[st_idx(CDT_ERR_TIMEOUT)],
           n_fail_msgs + n_bad_deaths);
    fflush(stdout);
}

static void pump(double secs, int (*done)(void))
{
    double end = now_s() + secs;
    while (now_s() < end && !(done && done())) {
        struct pollfd pfd[MAX_PEERS];
        int idx[MAX_PEERS], n = 0;
        for (int i = 0; i < opt.peers; i++)
            if (slots[i].alive) {
                pfd[n] = (struct pollfd){slots[i].sock, POLLIN, 0};
                idx[n++] = i;
            }
        poll(pfd, (nfds_t)n, 50);
        msg *m = malloc(sizeof(*m));
        for (int k = 0; k < n; k++)
            if (pfd[k].revents & POLLIN)
                while (slots[idx[k]].alive &&
                       recv(slots[idx[k]].sock, m, sizeof(*m), MSG_DONTWAIT) > 0)
                    handle(idx[k], m);
        free(m);
        reap();
        double t = now_s();
        if (t >= next_sample) {
            next_sample = t + 1;
            sample_rss();
        }
        if (t >= next_progress) {
            next_progress = t + 10;
            progress_line();
        }
        if (killing && t >= next_kill) {
            next_kill = t + opt.kill_every * (0.5 + rnd_unit(&sup_rng));
            kill_one();
        }
    }
}

static int all_ready(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (!slots[i].ready)
            return 0;
    return 1;
}
static int final_sent_all(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (incs[slots[i].inc].st.final_done < (uint64_t)opt.senders)
            return 0;
    return 1;
}
static int final_matches(int print)
{
    int ok = 1;
    for (int i = 0; i < opt.peers; i++)
        for (int j = 0; j < opt.peers; j++) {
            if (i == j)
                continue;
            uint64_t s = incs[slots[i].inc].st.final_sent[j];
            uint64_t r = incs[slots[j].inc].st.final_recv[i];
            uint64_t want = (uint64_t)opt.senders * (uint64_t)opt.final_per_target;
            if (s != r || s != want) {
                ok = 0;
                if (print)
                    fail_note("final phase: peer %d sent %" PRIu64 " of %" PRIu64
                              " objects to peer %d, which received %" PRIu64,
                              i, s, want, j, r);
            }
        }
    return ok;
}
static int final_received(void)
{
    return final_sent_all() && final_matches(0);
}
/* what the final phase left when its bound passed: sender threads that had not sent all
 * their final objects, per peer (a send may still wait for its peer), and every pair whose
 * objects did not all arrive */
static void final_left(void)
{
    for (int i = 0; i < opt.peers; i++) {
        uint64_t done = incs[slots[i].inc].st.final_done;
        if (done < (uint64_t)opt.senders)
            fail_note("final phase: peer %d: %" PRIu64 " of %d sender threads done", i, done,
                      opt.senders);
    }
    final_matches(1);
}

static int all_bye(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (slots[i].alive)
            return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * report
 * ---------------------------------------------------------------------------------------- */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* median RSS of an incarnation's samples in [from, to) of its life (fractions) */
static long median_rss(size_t inc, double from, double to, int minus_quarantine)
{
    const incarnation *in = &incs[inc];
    double life = in->t1 - in->t0;
    long *v = malloc(nsamples * sizeof(long) + 1);
    size_t n = 0;
    for (size_t k = 0; k < nsamples; k++)
        if (samples[k].inc == inc && samples[k].t >= in->t0 + from * life &&
            samples[k].t < in->t0 + to * life + 1e-9)
            v[n++] = samples[k].rss_kib - (minus_quarantine ? samples[k].quarantined_kib : 0);
    long m = 0;
    if (n > 0) {
        qsort(v, n, sizeof(long), cmp_long);
        m = v[n / 2];
    }
    free(v);
    return m;
}

static void machine(FILE *f)
{
    char line[512], cpu[256] = "unknown";
    FILE *c = fopen("/proc/cpuinfo", "r");
    while (c && fgets(line, sizeof(line), c))
        if (sscanf(line, "model name : %255[^\n]", cpu) == 1)
            break;
    if (c)
        fclose(c);
    long mem_kib = 0;
    FILE *m = fopen("/proc/meminfo", "r");
    while (m && fgets(line, sizeof(line), m))
        if (sscanf(line, "MemTotal: %ld", &mem_kib) == 1)
            break;
    if (m)
        fclose(m);
    struct utsname u;
    uname(&u);
    const char *tls = getenv("UCX_TLS");
    fprintf(f, "| machine | |\n|---|---|\n");
    fprintf(f, "| CPU | %s |\n| cores | %ld |\n| memory | %.1f GiB |\n| kernel | %s %s |\n", cpu,
            sysconf(_SC_NPROCESSORS_ONLN), (double)mem_kib / (1024.0 * 1024.0), u.sysname,
            u.release);
    fprintf(f, "| UCX | %s |\n| UCX_TLS | %s |\n| UCX_KEEPALIVE_INTERVAL | %s |\n",
            ucp_get_version_string(), tls ? tls : "(all)",
            getenv("UCX_KEEPALIVE_INTERVAL") ? getenv("UCX_KEEPALIVE_INTERVAL")
                                             : "(1s, libcdt's default)");
    const char *nd = getenv("UCX_NET_DEVICES");
    fprintf(f, "| UCX_NET_DEVICES | %s |\n", nd ? nd : "(all)");
    const char *proto = getenv("CDT_UCX_PROTOCOL"), *shm = getenv("CDT_UCX_SHARED_MEMORY");
    fprintf(f, "| CDT_UCX_PROTOCOL | %s |\n| CDT_UCX_SHARED_MEMORY | %s |\n\n",
            proto ? proto : "(auto)", shm ? shm : "(off, the default)");
}

static void write_report(FILE *f, int pass, double secs, const char *cmdline)
{
    stats t;
    totals(&t);
    uint64_t sent = t.sent[0] + t.sent[1] + t.sent[2], recvd = t.recv[0] + t.recv[1] + t.recv[2];
    fprintf(f, "# Soak: %s\n\n", pass ? "PASS" : "FAIL");
    fprintf(f, "`%s` — %.1f minutes of traffic with kills, then a final phase without kills.\n\n",
            cmdline, secs / 60);
    fprintf(f,
            "%d peer processes on 127.0.0.1 (peer 0%s never killed), each with %d sender "
            "threads, one receiver thread per object family (derived, sobj, dvec) and an "
            "acceptor on one worker; objects 0 B to %.0f MiB (3%% empty, 55%% up to 4 KiB, "
            "28%% up to 256 KiB, 11.5%% up to 8 MiB, 2.5%% up to the maximum); a random mortal "
            "peer SIGKILLed and restarted every %.1f s on average; seed %" PRIu64 ".\n\n",
            opt.peers, opt.immortal > 1 ? " and the next" : "", opt.senders,
            (double)opt.max_bytes / (double)MiB, opt.kill_every, opt.seed);
    machine(f);
    fprintf(f, "| result | |\n|---|---:|\n");
    fprintf(f,
            "| objects sent (derived / sobj / dvec) | %" PRIu64 " (%" PRIu64 " / %" PRIu64
            " / %" PRIu64 ") |\n",
            sent, t.sent[0], t.sent[1], t.sent[2]);
    fprintf(f,
            "| objects received (derived / sobj / dvec) | %" PRIu64 " (%" PRIu64 " / %" PRIu64
            " / %" PRIu64 ") |\n",
            recvd, t.recv[0], t.recv[1], t.recv[2]);
    fprintf(f, "| objects verified byte for byte | %" PRIu64 " |\n", t.verified);
    fprintf(f, "| bytes sent / verified | %.3f GB / %.3f GB |\n", (double)t.sent_bytes / 1e9,
            (double)t.verified_bytes / 1e9);
    fprintf(f, "| largest object verified | %.1f MiB |\n", (double)t.largest / (double)MiB);
    fprintf(f, "| peer deaths survived (SIGKILL) | %d |\n", deaths);
    fprintf(f, "| incarnations | %zu |\n", ninc);
    fprintf(
        f, "| connections (reconnections) / accepted | %" PRIu64 " (%" PRIu64 ") / %" PRIu64 " |\n",
        t.connects, t.reconnects, t.accepts);
    fprintf(f, "| idle receives timed out or canceled (no message) | %" PRIu64 " |\n",
            t.idle_timeouts);
    fprintf(
        f, "| derived/sobj receives that ended CDT_ERR_CANCELED without a cancel | %" PRIu64 " |\n",
        t.recv_canceled_unasked);
    fprintf(
        f,
        "| matched derived/sobj receives ended by the soak's cancel after 1 s (CDT_ERR_CANCELED) "
        "| %" PRIu64 " |\n",
        t.recv_canceled_matched);
    fprintf(f, "| wrong objects | %" PRIu64 " |\n| unexpected statuses | %" PRIu64 " |\n", t.wrong,
            t.unexpected);
    fprintf(f, "| requests stuck after cancel/close | %" PRIu64 " |\n", t.stuck);
    fprintf(f, "| cdt_ucx_recv timeouts with the object partly written | %" PRIu64 " |\n",
            t.tmo_matched);
    fprintf(f, "| timed-out receives written later | %" PRIu64 " |\n", t.late_write);
    fprintf(f, "| peers dead without a kill, or hung | %d |\n", n_bad_deaths);
    fprintf(f, "| final phase (%d objects per sender thread and peer pair) | %s |\n",
            opt.final_per_target, final_matches(0) ? "all arrived" : "LOST OBJECTS");
    if (ends.final > 0)
        fprintf(f, "| final phase length (bound %.0f s) | %.1f s%s |\n", opt.final_s,
                ends.final_done - ends.final, ends.final_bounded ? ", ended at its bound" : "");
    if (ends.traffic > 0 && ends.stopped > 0)
        fprintf(f,
                "| after the traffic: settling and quiescing / final phase / stopping | %.1f s "
                "(%.1f / %.1f / %.1f s) |\n",
                ends.stopped - ends.traffic, ends.final > 0 ? ends.final - ends.traffic : 0.0,
                ends.final > 0 ? ends.final_done - ends.final : 0.0, ends.stopped - ends.stop);
    fprintf(f, "\n");
    fprintf(f,
            "Errors seen, by status (clean: CDT_ERR_PEER, CDT_ERR_TIMEOUT, CDT_ERR_CANCELED):\n\n");
    fprintf(f, "| status | sends | receives | connects/accepts |\n|---|---:|---:|---:|\n");
    for (int s = 1; s < NSTATUS; s++)
        if (t.err_send[s] + t.err_recv[s] + t.err_conn[s] > 0)
            fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
                    s == NSTATUS - 1 ? "other" : cdt_err_name(-s), t.err_send[s], t.err_recv[s],
                    t.err_conn[s]);
    double total = now_s() - t_start;
    const char *csv_name = opt.csv ? strrchr(opt.csv, '/') : NULL;
    csv_name = csv_name ? csv_name + 1 : opt.csv ? opt.csv : "no CSV";
    fprintf(f,
            "\nReceiver RSS (VmRSS, sampled every second; %s) of the "
            "processes that lived through more than half of the run. Growth: median of the "
            "last quarter of its life against the median of its second quarter (the first "
            "quarter warms the buffer caches); it grew when that rose by more than 10%% and "
            "32 MiB.\n\n",
            csv_name);
    fprintf(f, "A timed-out dvec receive's object is watched for late writes for 3 s before it "
               "is freed: those bytes are the soak's own quarantine, shown apart, and growth is "
               "judged on RSS minus them.\n\n");
    fprintf(f, "| process | life (s) | first MiB | 2nd-quarter median | last-quarter median | "
               "last MiB | max MiB | quarantined MiB at end | 2nd / last quarter, minus "
               "quarantine | grew |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    int grew_any = 0;
    for (size_t k = 0; k < ninc; k++) {
        incarnation *in = &incs[k];
        if (in->t1 - in->t0 < total / 2)
            continue;
        long early = median_rss(k, 0.25, 0.5, 0), late = median_rss(k, 0.75, 1.0, 0);
        long early_q = median_rss(k, 0.25, 0.5, 1), late_q = median_rss(k, 0.75, 1.0, 1);
        int grew = late_q - early_q > 32 * 1024 && late_q > early_q + early_q / 10;
        grew_any |= grew;
        fprintf(f,
                "| peer %d.%d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | %s "
                "|\n",
                in->peer, in->gen, in->t1 - in->t0, in->rss_first / 1024.0, early / 1024.0,
                late / 1024.0, in->rss_last / 1024.0, in->rss_max / 1024.0,
                (double)in->st.quarantined_bytes / (double)MiB, early_q / 1024.0, late_q / 1024.0,
                grew ? "**yes**" : "no");
    }
    long mortal_max = 0;
    double life_sum = 0;
    int nm = 0;
    for (size_t k = 0; k < ninc; k++)
        if (incs[k].killed) {
            nm++;
            life_sum += incs[k].t1 - incs[k].t0;
            if (incs[k].rss_max > mortal_max)
                mortal_max = incs[k].rss_max;
        }
    fprintf(f, "\nRSS %s. Killed incarnations: %d, mean life %.1f s, largest RSS %.1f MiB.\n\n",
            grew_any ? "GREW in a long-lived process" : "did not grow in any long-lived process",
            nm, nm ? life_sum / nm : 0.0, mortal_max / 1024.0);
    /* RSS over time of the long-lived processes, about 12 rows */
    fprintf(f, "RSS over time (MiB):\n\n| t (s) |");
    size_t ll[MAX_PEERS * 4];
    int nll = 0;
    for (size_t k = 0; k < ninc && nll < MAX_PEERS * 4; k++)
        if (incs[k].t1 - incs[k].t0 >= total / 2) {
            ll[nll++] = k;
            fprintf(f, " peer %d.%d |", incs[k].peer, incs[k].gen);
        }
    fprintf(f, "\n|---:|");
    for (int j = 0; j < nll; j++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int row = 0; row <= 12; row++) {
        double at = total * row / 12.0;
        fprintf(f, "| %.0f |", at);
        for (int j = 0; j < nll; j++) {
            long best = -1, bq = 0;
            double bd = 1e30;
            for (size_t k = 0; k < nsamples; k++)
                if (samples[k].inc == ll[j] && fabs(samples[k].t - at) < bd) {
                    bd = fabs(samples[k].t - at);
                    best = samples[k].rss_kib;
                    bq = samples[k].quarantined_kib;
                }
            if (bq > 0)
                fprintf(f, " %.1f (%.1f quarantined) |", best / 1024.0, bq / 1024.0);
            else
                fprintf(f, " %.1f |", best / 1024.0);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nTransports of one peer-to-peer endpoint (ucp_ep_print_info):\n\n```\n%s```\n\n",
            transports ? transports : "(not captured)\n");
    if (note_log != NULL)
        fprintf(f, "Notes (clean statuses worth a look, %d in all):\n\n%s\n", n_notes, note_log);
    if (fail_log != NULL)
        fprintf(f, "Failures (first ones):\n\n%s\n", fail_log);
    fprintf(f, "Counts of a killed process are those of its last report (one a second), so sent, "
               "received and verified differ by what was in flight at the kills.\n");
}

static void usage(void)
{
    fprintf(stderr, "usage: soak [--minutes M] [--seconds S] [--peers P] [--immortal I] "
                    "[--senders N] [--kill-every S] [--max-mib M] [--seed X] [--hang-s S] "
                    "[--dvec-timeout-ms T] [--final-s S] "
                    "[--csv FILE] [--md FILE] [--random-sender-ids]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char cmdline[512] = "soak";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--random-sender-ids") == 0) {
            opt.random_sender_ids = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--minutes") == 0)
            opt.seconds = 60 * atof(v);
        else if (strcmp(a, "--seconds") == 0)
            opt.seconds = atof(v);
        else if (strcmp(a, "--peers") == 0)
            opt.peers = atoi(v);
        else if (strcmp(a, "--immortal") == 0)
            opt.immortal = atoi(v);
        else if (strcmp(a, "--senders") == 0)
            opt.senders = atoi(v);
        else if (strcmp(a, "--kill-every") == 0)
            opt.kill_every = atof(v);
        else if (strcmp(a, "--max-mib") == 0)
            opt.max_bytes = (cdt_count)(atof(v) * (double)MiB);
        else if (strcmp(a, "--seed") == 0)
            opt.seed = strtoull(v, NULL, 0);
        else if (strcmp(a, "--dvec-timeout-ms") == 0)
            opt.dvec_timeout_ms = atoi(v);
        else if (strcmp(a, "--hang-s") == 0)
            opt.hang_s = atoi(v);
        else if (strcmp(a, "--final-s") == 0)
            opt.final_s = atof(v);
        else if (strcmp(a, "--csv") == 0)
            opt.csv = v;
        else if (strcmp(a, "--md") == 0)
            opt.md = v;
        else
            usage();
    }
    if (opt.peers < 2 || opt.peers > MAX_PEERS || opt.senders < 1 || opt.senders > MAX_SENDERS ||
        opt.immortal < 0 || opt.immortal >= opt.peers || opt.max_bytes < 1 || opt.hang_s < 5 ||
        opt.final_s < 1)
        usage();
    snprintf(cmdline, sizeof(cmdline),
             "soak --seconds %.0f --peers %d --immortal %d --senders %d --kill-every %.1f "
             "--max-mib %.0f --seed %" PRIu64 " --dvec-timeout-ms %d --final-s %.0f",
             opt.seconds, opt.peers, opt.immortal, opt.senders, opt.kill_every,
             (double)opt.max_bytes / (double)MiB, opt.seed, opt.dvec_timeout_ms, opt.final_s);
    /* only this machine: shared memory and loopback (libcdt's own keepalive interval has dead
     * peers noticed within about a second) */
    setenv("UCX_TLS", "sm,self,tcp", 0);
    setenv("UCX_NET_DEVICES", "lo", 0);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 0);
    signal(SIGPIPE, SIG_IGN);
    if (opt.csv != NULL) {
        csv = fopen(opt.csv, "w");
        if (csv == NULL) {
            perror(opt.csv);
            return 2;
        }
        fprintf(csv, "t_s,peer,gen,pid,rss_kib,quarantined_kib,sent,received,verified,"
                     "verified_bytes\n");
    }
    sup_rng.s = mix64(opt.seed ^ 0x50a4);
    t_start = now_s();
    printf("%s\n", cmdline);
    for (int i = 0; i < opt.peers; i++)
        spawn(i);
    pump(30, all_ready);
    if (!all_ready()) {
        fail_note("peers did not start within 30 s");
    } else {
        killing = 1;
        next_kill = now_s() + opt.kill_every;
        pump(opt.seconds, NULL);
        killing = 0;
        ends.traffic = now_s();
        /* final phase: everybody alive, no kills: every object sent must arrive */
        pump(30, all_ready);
        pump(3, NULL);
        tell_all(M_QUIESCE);
        pump(5, NULL);
        ends.final = now_s();
        printf("[%7.1f s] final phase (bound %.0f s)\n", now_s() - t_start, opt.final_s);
        tell_all(M_FINAL);
        pump(opt.final_s, final_received);
        ends.final_done = now_s();
        if (final_received()) {
            printf("[%7.1f s] final phase: all arrived after %.1f s\n", now_s() - t_start,
                   ends.final_done - ends.final);
        } else {
            ends.final_bounded = 1;
            fail_note("final phase: ended at its bound of %.0f s with objects missing",
                      opt.final_s);
            final_left();
        }
    }
    ends.stop = now_s();
    stopping = 1;
    tell_all(M_STOP);
    pump(60, all_bye);
    ends.stopped = now_s();
    for (int i = 0; i < opt.peers; i++)
        if (slots[i].alive) {
            fail_note("peer %d.%d did not stop within 60 s", i, slots[i].gen);
            n_bad_deaths++;
            kill(slots[i].pid, SIGKILL);
            waitpid(slots[i].pid, NULL, 0);
            close_slot(i);
        }
    progress_line();
    int pass = n_fail_msgs == 0 && n_bad_deaths == 0 && fail_log == NULL;
    write_report(stdout, pass, opt.seconds, cmdline);
    if (opt.md != NULL) {
        FILE *f = fopen(opt.md, "w");
        if (f != NULL) {
            write_report(f, pass, opt.seconds, cmdline);
            fclose(f);
        }
    }
    if (csv)
        fclose(csv);
    return pass ? 0 : 1;
}
