/*
 * lane_pull_bench.c - large regions between two local processes: the lane's stream (the sender
 * copies each region into the ring, the receiver copies it out, fragment by fragment, pipelined:
 * one pass per side) against a pull by the receiver (one process_vm_readv with both sides'
 * iovecs, the sender's iovec list and the acknowledgement through pipes, as a lane control
 * record would carry them). docs/TRANSPORT.md §10.3, Regions: which one a region takes is
 * decided by these numbers.
 *
 * The pull's hand-off (the sender's iovec list, the receiver's acknowledgement) goes two ways:
 * through pipes (each side sleeps in read(): a wake-up an object each way) and through a shared
 * page both sides poll, as a lane record in the segment would carry it (neither side sleeps; a
 * waiter yields its core after 256 idle looks, as the lane's waits do: docs/TRANSPORT.md §10.3,
 * Waiting). On a KVM guest the pipes' wake-ups cost the pull half its speed at 1 MiB (an
 * inter-processor interrupt to a halted virtual CPU an object each way), which the lane's
 * polled records never pay. The polled pull runs once more with the sender writing every cache
 * line of its regions before each object: a region that did not change since the object before
 * stays in the receiver's cache (as raw's source does in bench/transfer), one just computed
 * comes from the other core's.
 *
 * Cases: one region of 1, 8 and 64 MiB, and 8 regions of 1 MiB, 128 KiB and 64 KiB (separate
 * allocations). Each
 * path runs between processes (wall time measured by the receiver, and each side's CPU time:
 * CLOCK_PROCESS_CPUTIME_ID, user + system, since this machine's virtual CPUs count no cycles),
 * and in one process (the same copies one after the other: what each pass costs a core alone).
 * The receiver's memory is either reused (touched once before the timing) or fresh per object
 * (mmap'd and unmapped per object, as a new array each receive: its page faults counted in), or
 * fresh with transparent huge pages advised (MADV_HUGEPAGE, as NumPy advises for arrays of
 * 4 MiB and more: 2 MiB pages where the mapping covers them, so far fewer faults).
 * Every configuration runs once per round, rounds alternate them, min / median are printed.
 *
 *   lane_pull_bench [--rounds R] [--quick]
 */
#define _GNU_SOURCE
#include "lane/lane.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_REGIONS = 8 };
/* objects moved before the timing starts, by every path: the first pull of a page the sender
 * shares copy-on-write with its forked child (every page of this program's regions, right after
 * the fork that starts the receiver) makes the kernel copy it for the sender (a read-only pin of
 * a shared anonymous page unshares it), which once cost the pull half its speed at 1 MiB here;
 * a program's long-lived buffers were not just forked */
enum { WARMUP = 2 };

typedef struct bench_case {
    const char *name;
    int regions;
    size_t region_bytes;
    int objects; /* per measurement */
} bench_case;

typedef struct result {
    double wall;     /* seconds, receiver's */
    double cpu_recv; /* seconds of CPU, receiver */
    double cpu_send; /* seconds of CPU, sender (0 in one process) */
} result;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}
static double cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* object k of a loop that moves WARMUP objects before it times any: at k == WARMUP the clocks
 * start (t0: wall, may be NULL; c0: this process's CPU) */
static void start_after_warmup(int k, double *t0, double *c0)
{
    if (k != WARMUP)
        return;
    if (t0 != NULL)
        *t0 = now_s();
    *c0 = cpu_s();
}

static unsigned char *src[MAX_REGIONS]; /* the sender's regions, in every process (fork) */
/* byte i of the sender's region r: what main writes and dst_check compares */
static unsigned char src_byte(int r, size_t i)
{
    return (unsigned char)(i * 7 + (size_t)r + 1);
}

static unsigned char *map_bytes(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        exit(1);
    return p;
}

enum { REUSED, FRESH, FRESH_HUGE, MODES };
static const char *const mode_names[MODES] = {"reused", "fresh", "fresh, huge pages advised"};

/* the receiver's regions: reused (touched once) or fresh (mapped now, faulted in by the copy) */
static void dst_get(const bench_case *c, int fresh, unsigned char **dst)
{
    for (int r = 0; r < c->regions; r++) {
        if (fresh || dst[r] == NULL) {
            dst[r] = map_bytes(c->region_bytes);
            if (fresh == FRESH_HUGE)
                (void)madvise(dst[r], c->region_bytes, MADV_HUGEPAGE);
        }
        if (!fresh && dst[r][0] == 0)
            memset(dst[r], 1, c->region_bytes);
    }
}
static void dst_put(const bench_case *c, int fresh, unsigned char **dst)
{
    for (int r = 0; r < c->regions && fresh; r++) {
        munmap(dst[r], c->region_bytes);
        dst[r] = NULL;
    }
}
static int dst_check(const bench_case *c, unsigned char **dst)
{
    for (int r = 0; r < c->regions; r++)
        if (dst[r][c->region_bytes - 1] != src[r][c->region_bytes - 1] ||
            dst[r][c->region_bytes / 3] != src[r][c->region_bytes / 3])
            return -1;
    return 0;
}

/* copies stream bytes [off, off + n) of the regions to or from a contiguous buffer */
static void copy_stream(const bench_case *c, unsigned char **regs, size_t off, unsigned char *buf,
                        size_t n, int out)
{
    while (n > 0) {
        size_t r = off / c->region_bytes, at = off % c->region_bytes;
        size_t k = c->region_bytes - at < n ? c->region_bytes - at : n;
        if (out)
            memcpy(buf, regs[r] + at, k);
        else
            memcpy(regs[r] + at, buf, k);
        off += k;
        buf += k;
        n -= k;
    }
}

static int read_full(int fd, void *b, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)b + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* ---- between processes ---- */

/* the receiving child's wall and CPU time (its last write on fd), once it exited cleanly; -1
 * when it did not (a short read, a copy that failed or a byte that differed) */
static int child_result(int fd, pid_t kid, result *res)
{
    double t[2];
    int st, ok = read_full(fd, t, sizeof t) == 0;
    waitpid(kid, &st, 0);
    if (!ok || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    res->wall = t[0];
    res->cpu_recv = t[1];
    return 0;
}

/* the lane's stream: the sender (this process) copies into the ring, the receiver (a child)
 * copies out; the child reports its wall and CPU time */
/* the sender writes one byte of every cache line of its regions before each object, keeping the
 * bytes dst_check compares (as a program that computed them since its last send) */
static void rewrite_regions(const bench_case *c)
{
    for (int r = 0; r < c->regions; r++)
        for (size_t i = 0; i < c->region_bytes; i += 64)
            src[r][i] = src_byte(r, i);
}

static int lane(const bench_case *c, int fresh, int rewrite, result *res)
{
    size_t bytes = (size_t)c->regions * c->region_bytes;
    cdt__lane p;
    cdt__lane_offer o;
    if (cdt__lane_create(NULL, &p, &o) != CDT_SUCCESS)
        return -1;
    int pp[2];
    if (pipe(pp) != 0)
        return -1;
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane l;
        if (cdt__lane_attach(&o, &l) != CDT_SUCCESS)
            _exit(1);
        unsigned char *dst[MAX_REGIONS] = {0};
        if (!fresh)
            dst_get(c, 0, dst);
        double t0 = 0, c0 = 0;
        int bad = 0;
        for (int k = 0; k < WARMUP + c->objects; k++) {
            start_after_warmup(k, &t0, &c0);
            uint64_t start;
            while (cdt__lane_post_grant(&l, (uint64_t)k, bytes, &start) == CDT_ERR_BUSY)
                sched_yield();
            dst_get(c, fresh, dst);
            for (size_t got = 0; got < bytes;) {
                const unsigned char *s;
                size_t n;
                if (cdt__lane_read_span(&l, &s, &n) != CDT_SUCCESS)
                    _exit(2);
                if (n == 0) {
                    sched_yield(); /* the sender may share this core */
                    continue;
                }
                if (n > bytes - got)
                    n = bytes - got;
                copy_stream(c, dst, got, (unsigned char *)s, n, 0);
                cdt__lane_release(&l, n);
                got += n;
            }
            bad |= dst_check(c, dst);
            dst_put(c, fresh, dst);
        }
        double t[2] = {now_s() - t0, cpu_s() - c0};
        _exit(write(pp[1], t, sizeof t) == sizeof t && !bad ? 0 : 3);
    }
    while (cdt__lane_attached(&p) == 0)
        sched_yield();
    double c0 = 0;
    for (int k = 0; k < WARMUP + c->objects; k++) {
        start_after_warmup(k, NULL, &c0);
        if (rewrite)
            rewrite_regions(c);
        cdt__lane_grant g;
        while (cdt__lane_take_grant(&p, &g) == 0)
            sched_yield();
        for (size_t off = 0; off < bytes;) {
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
            copy_stream(c, src, off, d, n, 1);
            cdt__lane_publish(&p, n);
            off += n;
        }
    }
    res->cpu_send = cpu_s() - c0;
    int rc = child_result(pp[0], kid, res);
    close(pp[0]);
    close(pp[1]);
    cdt__lane_close(&p);
    return rc;
}

static int lane_procs(const bench_case *c, int fresh, result *res)
{
    return lane(c, fresh, 0, res);
}
static int lane_rewritten_procs(const bench_case *c, int fresh, result *res)
{
    return lane(c, fresh, 1, res);
}

/* The pull: the sender (this process) hands the receiver (a child) its iovec list and waits for
 * its acknowledgement; the receiver reads every region with one process_vm_readv. The hand-off
 * goes through pipes (each side sleeps in read()) or through a shared page both sides poll: the
 * sender publishes an object's iovec list and its sequence number, the receiver the number of
 * objects it pulled. */
enum handoff { PIPES, POLLED };

typedef struct pull_page {
    _Alignas(64) uint64_t posted; /* sender: objects whose iovec list is in `remote` */
    _Alignas(64) uint64_t done;   /* receiver: objects pulled */
    _Alignas(64) struct iovec remote[MAX_REGIONS];
    /* the push (POLLED only): the receiver posts where its regions are, the sender says when it
     * wrote its share of them */
    _Alignas(64) uint64_t ready;  /* receiver: objects whose destinations are in `dst` */
    _Alignas(64) uint64_t pushed; /* sender: objects whose share it wrote */
    _Alignas(64) struct iovec dst[MAX_REGIONS];
} pull_page;

typedef struct pull_link {
    enum handoff how;
    int req[2], ack[2]; /* PIPES */
    pull_page *pg;      /* POLLED */
} pull_link;

static void wait_for(const uint64_t *word, uint64_t value)
{
    for (unsigned idle = 0; __atomic_load_n(word, __ATOMIC_ACQUIRE) < value; idle++)
        if (idle >= 256)
            sched_yield();
}

/* the sender's side of object k: post the iovec list, wait until it was pulled */
static int link_post(pull_link *l, const struct iovec *remote, int n, int k)
{
    if (l->how == POLLED) {
        memcpy(l->pg->remote, remote, sizeof(struct iovec) * (size_t)n);
        __atomic_store_n(&l->pg->posted, (uint64_t)k + 1, __ATOMIC_RELEASE);
        wait_for(&l->pg->done, (uint64_t)k + 1);
        return 0;
    }
    char b;
    if (write(l->req[1], remote, sizeof(struct iovec) * (size_t)n) < 0 ||
        read_full(l->ack[0], &b, 1) != 0)
        return -1;
    return 0;
}

/* the receiver's side of object k: take the iovec list; then say it was pulled */
static int link_take(pull_link *l, struct iovec *remote, int n, int k)
{
    if (l->how == POLLED) {
        wait_for(&l->pg->posted, (uint64_t)k + 1);
        memcpy(remote, l->pg->remote, sizeof(struct iovec) * (size_t)n);
        return 0;
    }
    return read_full(l->req[0], remote, sizeof(struct iovec) * (size_t)n);
}
static int link_done(pull_link *l, int k)
{
    if (l->how == POLLED) {
        __atomic_store_n(&l->pg->done, (uint64_t)k + 1, __ATOMIC_RELEASE);
        return 0;
    }
    char b = 'a';
    return write(l->ack[1], &b, 1) == 1 ? 0 : -1;
}

/* The push's share of region r: its first `share` of bytes, whole pages (the rest is pulled) */
static size_t pushed_bytes(const bench_case *c, double share)
{
    size_t n = (size_t)((double)c->region_bytes * share) & ~(size_t)4095;
    return share >= 1.0 ? c->region_bytes : n;
}

/* the iovecs of one side's parts [from, to) of every region */
static int parts(const bench_case *c, const struct iovec *whole, size_t from, size_t to,
                 struct iovec *out)
{
    int n = 0;
    for (int r = 0; r < c->regions && to > from; r++)
        out[n++] = (struct iovec){(unsigned char *)whole[r].iov_base + from, to - from};
    return n;
}

/* `push` of every region's bytes: 0 the receiver pulls them all; 1 the sender writes them all
 * into the receiver's regions (process_vm_writev, once the receiver posted where they are); in
 * between, the sender writes the first share while the receiver pulls the rest, both at once */
static int pull(const bench_case *c, int fresh, enum handoff how, int rewrite, double push,
                result *res)
{
    pull_link l = {.how = how};
    int pp[2];
    if (pipe(pp) != 0)
        return -1;
    if (how == PIPES && (pipe(l.req) != 0 || pipe(l.ack) != 0))
        return -1;
    if (how == POLLED) {
        l.pg = mmap(NULL, sizeof(pull_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                    0);
        if (l.pg == MAP_FAILED)
            return -1;
        memset(l.pg, 0, sizeof *l.pg);
    }
    pid_t sender = getpid();
    pid_t kid = fork();
    if (kid == 0) {
        unsigned char *dst[MAX_REGIONS] = {0};
        if (!fresh)
            dst_get(c, 0, dst);
        double t0 = 0, c0 = 0;
        int bad = 0;
        for (int k = 0; k < WARMUP + c->objects; k++) {
            start_after_warmup(k, &t0, &c0);
            struct iovec remote[MAX_REGIONS], local[MAX_REGIONS];
            if (link_take(&l, remote, c->regions, k) != 0)
                _exit(1);
            dst_get(c, fresh, dst);
            for (int r = 0; r < c->regions; r++)
                local[r] = (struct iovec){dst[r], c->region_bytes};
            size_t skip = pushed_bytes(c, push);
            if (skip > 0) { /* where the sender is to write (POLLED: checked in main) */
                memcpy(l.pg->dst, local, sizeof(struct iovec) * (size_t)c->regions);
                __atomic_store_n(&l.pg->ready, (uint64_t)k + 1, __ATOMIC_RELEASE);
            }
            struct iovec mine[MAX_REGIONS], theirs[MAX_REGIONS];
            int n = parts(c, local, skip, c->region_bytes, mine);
            (void)parts(c, remote, skip, c->region_bytes, theirs);
            ssize_t want = (ssize_t)((size_t)c->regions * (c->region_bytes - skip));
            if (n > 0 && process_vm_readv(sender, mine, (unsigned long)n, theirs, (unsigned long)n,
                                          0) != want)
                _exit(2);
            if (skip > 0)
                wait_for(&l.pg->pushed, (uint64_t)k + 1);
            if (link_done(&l, k) != 0)
                _exit(3);
            bad |= dst_check(c, dst);
            dst_put(c, fresh, dst);
        }
        double t[2] = {now_s() - t0, cpu_s() - c0};
        _exit(write(pp[1], t, sizeof t) == sizeof t && !bad ? 0 : 4);
    }
    double c0 = 0;
    int rc = 0;
    for (int k = 0; k < WARMUP + c->objects && rc == 0; k++) {
        start_after_warmup(k, NULL, &c0);
        struct iovec remote[MAX_REGIONS];
        if (rewrite)
            rewrite_regions(c);
        for (int r = 0; r < c->regions; r++)
            remote[r] = (struct iovec){src[r], c->region_bytes};
        size_t share = pushed_bytes(c, push);
        if (share > 0) { /* post, write the share once the receiver said where, then wait */
            memcpy(l.pg->remote, remote, sizeof(struct iovec) * (size_t)c->regions);
            __atomic_store_n(&l.pg->posted, (uint64_t)k + 1, __ATOMIC_RELEASE);
            wait_for(&l.pg->ready, (uint64_t)k + 1);
            struct iovec dst[MAX_REGIONS], mine[MAX_REGIONS], theirs[MAX_REGIONS];
            memcpy(dst, l.pg->dst, sizeof(struct iovec) * (size_t)c->regions);
            int n = parts(c, remote, 0, share, mine);
            (void)parts(c, dst, 0, share, theirs);
            if (process_vm_writev(kid, mine, (unsigned long)n, theirs, (unsigned long)n, 0) !=
                (ssize_t)((size_t)n * share))
                rc = -1;
            __atomic_store_n(&l.pg->pushed, (uint64_t)k + 1, __ATOMIC_RELEASE);
            wait_for(&l.pg->done, (uint64_t)k + 1);
            continue;
        }
        rc = link_post(&l, remote, c->regions, k);
    }
    res->cpu_send = cpu_s() - c0;
    if (rc != 0)
        kill(kid, SIGKILL); /* it may wait for a hand-off that will not come */
    if (child_result(pp[0], kid, res) != 0)
        rc = -1;
    close(pp[0]);
    close(pp[1]);
    if (how == PIPES)
        for (int i = 0; i < 2; i++) {
            close(l.req[i]);
            close(l.ack[i]);
        }
    else
        munmap(l.pg, sizeof *l.pg);
    return rc;
}

static int pull_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, PIPES, 0, 0, res);
}

static int pull_polled_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 0, 0, res);
}

/* the same, the sender writing one byte of every cache line of its regions before each object
 * (as a program that computed them since its last send): the pull then reads lines the other
 * core holds modified, not lines it still holds from the object before; the sender's writes are
 * in the wall time, not in the receiver's CPU time */
static int pull_rewritten_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 1, 0, res);
}

/* The push: the sender writes every region into the receiver's memory (process_vm_writev),
 * reading what it has in its own cache where it just wrote it; and the split: the sender
 * writes the first half of each region while the receiver pulls the second, both cores copying
 * at once. Each with regions unchanged and written before each object. */
static int push_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 0, 1, res);
}
static int push_rewritten_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 1, 1, res);
}
static int split_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 0, 0.5, res);
}
static int split_rewritten_procs(const bench_case *c, int fresh, result *res)
{
    return pull(c, fresh, POLLED, 1, 0.5, res);
}

/* ---- in one process: each pass alone on one core ---- */

/* the lane's two passes one after the other: into a 16 KiB fragment of a 1 MiB ring, out of it */
static int lane_alone(const bench_case *c, int fresh, result *res)
{
    enum { RING = 1 << 20, FRAG = 16384 };
    static unsigned char *ring;
    if (ring == NULL) {
        ring = map_bytes(RING);
        memset(ring, 1, RING);
    }
    size_t bytes = (size_t)c->regions * c->region_bytes, pos = 0;
    unsigned char *dst[MAX_REGIONS] = {0};
    if (!fresh)
        dst_get(c, 0, dst);
    double t0 = 0, c0 = 0;
    int bad = 0;
    for (int k = 0; k < WARMUP + c->objects; k++) {
        start_after_warmup(k, &t0, &c0);
        dst_get(c, fresh, dst);
        for (size_t off = 0; off < bytes; off += FRAG, pos += FRAG) {
            size_t n = bytes - off < FRAG ? bytes - off : FRAG;
            unsigned char *f = ring + pos % RING;
            copy_stream(c, src, off, f, n, 1);
            copy_stream(c, dst, off, f, n, 0);
        }
        bad |= dst_check(c, dst);
        dst_put(c, fresh, dst);
    }
    res->wall = now_s() - t0;
    res->cpu_recv = cpu_s() - c0;
    res->cpu_send = 0;
    for (int r = 0; r < c->regions && !fresh; r++)
        munmap(dst[r], c->region_bytes);
    return bad;
}

/* one process_vm_readv of this process's own regions */
static int pull_alone(const bench_case *c, int fresh, result *res)
{
    unsigned char *dst[MAX_REGIONS] = {0};
    if (!fresh)
        dst_get(c, 0, dst);
    double t0 = 0, c0 = 0;
    int bad = 0;
    for (int k = 0; k < WARMUP + c->objects; k++) {
        start_after_warmup(k, &t0, &c0);
        dst_get(c, fresh, dst);
        struct iovec remote[MAX_REGIONS], local[MAX_REGIONS];
        for (int r = 0; r < c->regions; r++) {
            remote[r] = (struct iovec){src[r], c->region_bytes};
            local[r] = (struct iovec){dst[r], c->region_bytes};
        }
        ssize_t want = (ssize_t)((size_t)c->regions * c->region_bytes);
        if (process_vm_readv(getpid(), local, (unsigned long)c->regions, remote,
                             (unsigned long)c->regions, 0) != want)
            bad = -1;
        bad |= dst_check(c, dst);
        dst_put(c, fresh, dst);
    }
    res->wall = now_s() - t0;
    res->cpu_recv = cpu_s() - c0;
    res->cpu_send = 0;
    for (int r = 0; r < c->regions && !fresh; r++)
        munmap(dst[r], c->region_bytes);
    return bad;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef int(run_fn)(const bench_case *c, int fresh, result *res);

int main(int argc, char **argv)
{
    int rounds = 9, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
    }
    if (rounds < 1)
        rounds = 1;
    static const bench_case cases[] = {
        {"1 x 1 MiB", 1, 1 << 20, 64},     {"1 x 8 MiB", 1, 8 << 20, 8},
        {"1 x 64 MiB", 1, 64 << 20, 1},    {"8 x 1 MiB", 8, 1 << 20, 8},
        {"8 x 128 KiB", 8, 128 << 10, 64}, {"8 x 64 KiB", 8, 64 << 10, 128},
    };
    enum { NCASE = sizeof cases / sizeof cases[0] };
    static const struct {
        const char *name;
        run_fn *fn;
    } paths[] = {
        {"lane stream, 2 processes", lane_procs},
        {"the lane stream, regions written by the sender before each object", lane_rewritten_procs},
        {"pull (process_vm_readv), hand-off through pipes, 2 processes", pull_procs},
        {"pull (process_vm_readv), hand-off through a polled page, 2 processes", pull_polled_procs},
        {"the same, each line of the regions written by the sender before each object",
         pull_rewritten_procs},
        {"push (process_vm_writev by the sender), polled, 2 processes", push_procs},
        {"the push, regions written by the sender before each object", push_rewritten_procs},
        {"split: the sender pushes half of each region while the receiver pulls the other half, "
         "2 processes",
         split_procs},
        {"the split, regions written by the sender before each object", split_rewritten_procs},
        {"lane's two passes, 1 process", lane_alone},
        {"pull (process_vm_readv of itself), 1 process", pull_alone},
    };
    enum { NPATH = sizeof paths / sizeof paths[0] };
    /* the first region is the largest case's; the others are 1 MiB in every case */
    for (int r = 0; r < MAX_REGIONS; r++) {
        size_t n = r == 0 ? (size_t)64 << 20 : (size_t)1 << 20;
        src[r] = map_bytes(n);
        for (size_t i = 0; i < n; i++)
            src[r][i] = src_byte(r, i);
    }
    enum { NCONF = NCASE * NPATH * MODES };
    double *mbs = calloc((size_t)NCONF * (size_t)rounds, sizeof *mbs);
    double *recv_ns = calloc((size_t)NCONF * (size_t)rounds, sizeof *recv_ns);
    double *send_ns = calloc((size_t)NCONF * (size_t)rounds, sizeof *send_ns);
    int ncase = quick ? 1 : NCASE;
    for (int rd = 0; rd < rounds; rd++)
        for (int ci = 0; ci < ncase; ci++)
            for (int fresh = 0; fresh < MODES; fresh++)
                for (int pi = 0; pi < NPATH; pi++) {
                    int k = (ci * MODES + fresh) * NPATH + pi;
                    const bench_case *c = &cases[ci];
                    double mb = (double)c->regions * (double)c->region_bytes * c->objects / 1e6;
                    result res = {0};
                    if (paths[pi].fn(c, fresh, &res) != 0 || res.wall <= 0) {
                        fprintf(stderr, "%s, %s: failed\n", c->name, paths[pi].name);
                        return 1;
                    }
                    mbs[k * rounds + rd] = mb / res.wall;
                    recv_ns[k * rounds + rd] = res.cpu_recv * 1e9 / (mb * 1e6 / 1024);
                    send_ns[k * rounds + rd] = res.cpu_send * 1e9 / (mb * 1e6 / 1024);
                }
    printf("# large regions: the lane's stream against a pull, %d rounds alternated; MB/s "
           "(10^6 B/s), CPU ns per KiB (user + system, min / median)\n",
           rounds);
    printf("| case | receiver's memory | path | min MB/s | median MB/s | receiver CPU ns/KiB | "
           "sender CPU ns/KiB |\n|---|---|---|---:|---:|---:|---:|\n");
    for (int ci = 0; ci < ncase; ci++)
        for (int fresh = 0; fresh < MODES; fresh++)
            for (int pi = 0; pi < NPATH; pi++) {
                int k = (ci * MODES + fresh) * NPATH + pi;
                double *m = mbs + k * rounds, *rn = recv_ns + k * rounds,
                       *sn = send_ns + k * rounds;
                qsort(m, (size_t)rounds, sizeof *m, cmp_d);
                qsort(rn, (size_t)rounds, sizeof *rn, cmp_d);
                qsort(sn, (size_t)rounds, sizeof *sn, cmp_d);
                printf("| %s | %s | %s | %.0f | %.0f | %.0f / %.0f | %.0f / %.0f |\n",
                       cases[ci].name, mode_names[fresh], paths[pi].name, m[0], m[rounds / 2],
                       rn[0], rn[rounds / 2], sn[0], sn[rounds / 2]);
            }
    return 0;
}
