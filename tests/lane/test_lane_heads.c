/*
 * test_lane_heads.c - the head ring of a version 2 lane (libcdt/src/lane/lane_heads.c,
 * docs/TRANSPORT.md §10.6): records byte for byte across the ring's end, a full ring holding
 * the next record, every bound a hostile producer or consumer could break, the segment's
 * versions at setup, the doorbell's sleep/ring order, and records between real processes with
 * a consumer asleep on the doorbell. One case per run: `test_lane_heads CASE`.
 */
#define _GNU_SOURCE
#include "../core/check.h"
#include "lane/lane.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HEADS CDT__LANE_HEAD_RING_MIN

static const cdt__lane_offer small_offer = {
    .pid = 1, .fd = 0, .ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};

static size_t v1_bytes(const cdt__lane_offer *o)
{
    return cdt__lane_data_offset(o->grant_slots) + (size_t)o->ring_bytes;
}

/* a version 2 lane over plain memory, both sides */
static int fresh(unsigned char *mem, cdt__lane *p, cdt__lane *c)
{
    size_t total = v1_bytes(&small_offer) + HEADS;
    memset(mem, 0, total);
    cdt__lane_format_heads(mem, &small_offer, HEADS, -1);
    return cdt__lane_view(mem, total, CDT__LANE_PRODUCER, &small_offer, p) == CDT_SUCCESS &&
           cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &small_offer, c) == CDT_SUCCESS;
}

static unsigned char *v2_memory(void)
{
    return calloc(1, v1_bytes(&small_offer) + HEADS);
}

/* the byte i of head k: every byte says where it belongs */
static unsigned char pat(uint64_t k, size_t i)
{
    uint64_t x = (k * UINT64_C(0x9E3779B97F4A7C15)) ^ ((uint64_t)i * UINT64_C(0xBF58476D1CE4E5B9));
    return (unsigned char)(x >> 56);
}

static size_t head_len(uint64_t k)
{
    static const size_t lens[] = {40, 41, 47, 48, 100, 1000, 4096, 8191, 32768, 64};
    return lens[k % (sizeof lens / sizeof lens[0])];
}

static void fill(unsigned char *b, uint64_t k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(k, i);
}

static int same(const unsigned char *b, uint64_t k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(k, i))
            return 0;
    return 1;
}

static void set_u64(unsigned char *mem, size_t off, uint64_t v)
{
    memcpy(mem + off, &v, 8);
}

static void set_u32(unsigned char *mem, size_t off, uint32_t v)
{
    memcpy(mem + off, &v, 4);
}

static unsigned char head[CDT__LANE_HEAD_MAX], out[CDT__LANE_HEAD_MAX];

/* records of 40 bytes to HEAD_MAX, many laps of the ring (pads at its end), byte for byte and
 * in order; a full ring holds the next record until the consumer released room */
static void case_heads(void)
{
    unsigned char *mem = v2_memory();
    cdt__lane p, c;
    CHECK(fresh(mem, &p, &c));
    CHECK(p.version == 2 && c.head_ring_bytes == HEADS);
    uint64_t tag;
    size_t n;
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 0);
    CHECK_RC(cdt__lane_heads_pending(&c), 0);
    uint64_t put = 0, took = 0, fulls = 0, pads_before = 0;
    while (took < 3000) {
        /* the producer writes while it can, up to 40 ahead (more than the ring holds) */
        while (put < 3000 && put - took < 40) {
            size_t len = head_len(put);
            fill(head, put, len);
            int rc = cdt__lane_head_put(&p, put * 3, head, len);
            if (rc == 0) {
                fulls++;
                break;
            }
            CHECK_RC(rc, 1);
            put++;
        }
        CHECK_RC(cdt__lane_heads_pending(&c), 1);
        uint64_t before = c.heads_read;
        int rc = cdt__lane_head_take(&c, &tag, out, sizeof out, &n);
        CHECK_RC(rc, 1);
        if (rc != 1)
            break;
        pads_before += (c.heads_read - before) > (16 + ((n + 7) & ~(size_t)7));
        CHECK(tag == took * 3 && n == head_len(took) && same(out, took, n));
        took++;
    }
    CHECK(fulls > 0 && pads_before > 0); /* both paths were taken */
    CHECK_RC(cdt__lane_heads_pending(&c), 0);
    CHECK(p.heads_pos == c.heads_read);
    /* full: the ring takes records until no room is left, then 0 until the consumer takes one */
    int k = 0;
    fill(head, 0, CDT__LANE_HEAD_MAX);
    while (cdt__lane_head_put(&p, 1, head, CDT__LANE_HEAD_MAX) == 1)
        k++;
    CHECK(k >= 2 && (uint64_t)k <= HEADS / (16 + CDT__LANE_HEAD_MAX));
    CHECK_RC(cdt__lane_head_put(&p, 1, head, CDT__LANE_HEAD_MAX), 0);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK_RC(cdt__lane_head_put(&p, 1, head, CDT__LANE_HEAD_MAX), 1);
    /* arguments: a head outside 40..HEAD_MAX, a private tag, a short buffer */
    CHECK_RC(cdt__lane_head_put(&p, 1, head, 39), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_head_put(&p, 1, head, CDT__LANE_HEAD_MAX + 1), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_head_put(&p, UINT64_C(1) << 63, head, 40), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, 100, &n), CDT_ERR_INVALID_ARG);
    CHECK(p.error == CDT_SUCCESS && c.error == CDT_SUCCESS);
    free(mem);
}

/* each bound of §10.6 on its own: the field a peer could scribble, and the call that reads it
 * breaks the lane (CDT_ERR_PEER, sticky) instead of using it; nothing is copied out */
static void case_heads_hostile(void)
{
    unsigned char *mem = v2_memory();
    cdt__lane p, c;
    uint64_t tag;
    size_t n;
    const size_t ring = v1_bytes(&small_offer); /* the head ring's offset */
    fill(head, 5, 200);

    /* consumer: heads_pos beyond the room it released, and taken back */
    CHECK(fresh(mem, &p, &c));
    set_u64(mem, CDT__LANE_OFF_HEADS_POS, HEADS + 8);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_PEER);
    CHECK_RC(cdt__lane_heads_pending(&c), CDT_ERR_PEER); /* sticky */
    CHECK(fresh(mem, &p, &c));
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    set_u64(mem, CDT__LANE_OFF_HEADS_POS, 8);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_PEER);
    /* consumer: a record's len out of 40..HEAD_MAX, past what was published, past the ring's end;
     * a nonzero reserved word; a private tag; a pad whose bytes to the ring's end were not
     * published */
    static const struct {
        size_t off;
        uint32_t v32;
        int wide;
        uint64_t v64;
    } bad[] = {
        {0, 39, 0, 0},  {0, CDT__LANE_HEAD_MAX + 1, 0, 0},
        {0, 201, 0, 0}, /* 201: past published */
        {4, 1, 0, 0},   {8, 0, 1, UINT64_C(1) << 63},
        {0, 0, 0, 0}, /* a pad, not published to the end */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(fresh(mem, &p, &c));
        CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
        if (bad[i].wide)
            set_u64(mem, ring + bad[i].off, bad[i].v64);
        else
            set_u32(mem, ring + bad[i].off, bad[i].v32);
        memset(out, 0xEE, sizeof out);
        CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_PEER);
        CHECK(out[0] == 0xEE); /* nothing copied out */
    }
    /* consumer: a pad at the ring's start (a producer never writes one: every record fits
     * there), even with the whole ring published */
    CHECK(fresh(mem, &p, &c));
    set_u64(mem, CDT__LANE_OFF_HEADS_POS, HEADS);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_PEER);
    /* consumer: the pad scribbled into a record. One that fits before the ring's end is at
     * worst another head of that peer (then the pad's last bytes, then the honest record); one
     * that would cross the end breaks the lane */
    for (int crossing = 0; crossing < 2; crossing++) {
        CHECK(fresh(mem, &p, &c));
        c.heads_read = p.heads_pos = p.heads_cons_seen = HEADS - 64; /* both sides near the end */
        set_u64(mem, CDT__LANE_OFF_HEADS_CONS, HEADS - 64);
        CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1); /* a pad, then the record at 0 */
        set_u32(mem, ring + HEADS - 64, crossing ? 49 : 40);
        set_u64(mem, ring + HEADS - 56, 1);
        if (crossing) {
            CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_PEER);
            continue;
        }
        CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
        CHECK(n == 40 && tag == 1);
        CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
        CHECK(n == 200 && tag == 9 && same(out, 5, 200));
    }
    /* the same without the scribble: a pad, then the record */
    CHECK(fresh(mem, &p, &c));
    c.heads_read = p.heads_pos = p.heads_cons_seen = HEADS - 64;
    set_u64(mem, CDT__LANE_OFF_HEADS_CONS, HEADS - 64);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK(n == 200 && tag == 9 && same(out, 5, 200) && c.heads_read == HEADS + 216);

    /* producer: heads released that were never published, and a release taken back */
    CHECK(fresh(mem, &p, &c));
    set_u64(mem, CDT__LANE_OFF_HEADS_CONS, 8);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), CDT_ERR_PEER);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), CDT_ERR_PEER); /* sticky */
    CHECK(fresh(mem, &p, &c));
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
    set_u64(mem, CDT__LANE_OFF_HEADS_CONS, 0);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), CDT_ERR_PEER);
    /* the header is read once: a head ring size scribbled later changes nothing here */
    CHECK(fresh(mem, &p, &c));
    set_u32(mem, CDT__LANE_OFF_HEAD_RING_BYTES, 1u << 30);
    CHECK_RC(cdt__lane_head_put(&p, 9, head, 200), 1);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK(c.head_ring_bytes == HEADS && same(out, 5, 200));
    free(mem);
}

/* a version 2 header is taken only with its head ring's bytes, a version 1 one only without;
 * a version 1 lane has no head ring */
static void case_heads_version(void)
{
    size_t v1 = v1_bytes(&small_offer);
    unsigned char *mem = calloc(1, v1 + 2 * HEADS);
    cdt__lane l;
    cdt__lane_format_heads(mem, &small_offer, HEADS, 7);
    CHECK_RC(cdt__lane_view(mem, v1 + HEADS, CDT__LANE_CONSUMER, &small_offer, &l), CDT_SUCCESS);
    CHECK(l.version == 2 && l.heads_off == v1 && l.doorbell_num == 7 && l.doorbell == -1);
    /* what a version 1 consumer sees: the size it computes from the offer, and version 2 */
    CHECK_RC(cdt__lane_view(mem, v1, CDT__LANE_CONSUMER, &small_offer, &l),
             CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt__lane_view(mem, v1 + 2 * HEADS, CDT__LANE_CONSUMER, &small_offer, &l),
             CDT_ERR_FRAME_MALFORMED);
    /* a head ring size out of range or not a power of two, and a version 3 */
    static const uint32_t sizes[] = {0, HEADS / 2, HEADS + 8, CDT__LANE_HEAD_RING_MAX * 2};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cdt__lane_format_heads(mem, &small_offer, sizes[i], -1);
        CHECK_RC(cdt__lane_view(mem, v1 + sizes[i], CDT__LANE_CONSUMER, &small_offer, &l),
                 CDT_ERR_FRAME_MALFORMED);
    }
    cdt__lane_format_heads(mem, &small_offer, HEADS, -1);
    set_u32(mem, CDT__LANE_OFF_VERSION, 3);
    CHECK_RC(cdt__lane_view(mem, v1 + HEADS, CDT__LANE_CONSUMER, &small_offer, &l),
             CDT_ERR_FRAME_MALFORMED);
    /* version 1: no head ring, and the head functions say so */
    cdt__lane_format(mem, &small_offer);
    CHECK_RC(cdt__lane_view(mem, v1, CDT__LANE_PRODUCER, &small_offer, &l), CDT_SUCCESS);
    CHECK(l.version == 1 && l.head_ring_bytes == 0);
    fill(head, 1, 40);
    CHECK_RC(cdt__lane_head_put(&l, 1, head, 40), CDT_ERR_UNSUPPORTED);
    CHECK_RC(cdt__lane_view(mem, v1 + HEADS, CDT__LANE_CONSUMER, &small_offer, &l),
             CDT_ERR_FRAME_MALFORMED);
    free(mem);

    /* a real segment: created with a head ring, attached through /proc/self, doorbell opened */
    cdt__lane_params prm = {.head_ring_bytes = 1};
    cdt__lane p, c;
    cdt__lane_offer o;
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
    CHECK(p.head_ring_bytes == CDT__LANE_DEFAULT_HEAD_RING && p.doorbell >= 0);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    CHECK(c.version == 2 && c.doorbell >= 0 && c.doorbell != p.doorbell);
    int rd = p.doorbell_rd;
    CHECK_RC(cdt__lane_attached(&p), 1);
    CHECK(p.doorbell_rd == -1 && fcntl(rd, F_GETFD) < 0); /* the producer's read end closed */
    fill(head, 3, 333);
    CHECK_RC(cdt__lane_head_put(&p, 42, head, 333), 1);
    uint64_t tag;
    size_t n;
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK(tag == 42 && n == 333 && same(out, 3, 333));
    cdt__lane_close(&c);
    cdt__lane_close(&p);
    /* a doorbell that is not a pipe (here an eventfd, then the segment's own memfd) is refused
     * unopened, as is none */
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
    int efd = eventfd(0, EFD_CLOEXEC);
    CHECK(efd >= 0);
    set_u32(p.base, CDT__LANE_OFF_DOORBELL_FD, (uint32_t)efd);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_ERR_FRAME_MALFORMED);
    set_u32(p.base, CDT__LANE_OFF_DOORBELL_FD, (uint32_t)p.memfd);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_ERR_FRAME_MALFORMED);
    set_u32(p.base, CDT__LANE_OFF_DOORBELL_FD, UINT32_MAX); /* -1: none */
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_ERR_FRAME_MALFORMED);
    close(efd);
    cdt__lane_close(&p);
    /* sizes out of range are the caller's error */
    prm.head_ring_bytes = HEADS + 1;
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_ERR_INVALID_ARG);
}

static int readable(int fd, int ms)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    return poll(&pf, 1, ms) == 1 && (pf.revents & POLLIN);
}

/* the doorbell's order: a consumer that said it sleeps is rung after the next record; one that
 * looked again and found a record does not sleep; an awake one is not rung */
static void case_heads_doorbell(void)
{
    cdt__lane_params prm = {.head_ring_bytes = 1};
    cdt__lane p, c;
    cdt__lane_offer o;
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    uint64_t tag;
    size_t n;
    fill(head, 8, 64);
    /* awake: no ring */
    CHECK_RC(cdt__lane_head_put(&p, 1, head, 64), 1);
    CHECK_RC(cdt__lane_heads_ring(&p), 0);
    CHECK(!readable(c.doorbell, 0));
    /* a record pending: the consumer does not sleep */
    CHECK_RC(cdt__lane_heads_sleep(&c), 1);
    CHECK_RC(cdt__lane_heads_asleep(&p), 0);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    /* nothing pending: asleep; the next record rings, the consumer wakes and drains */
    CHECK_RC(cdt__lane_heads_sleep(&c), 0);
    CHECK_RC(cdt__lane_head_put(&p, 2, head, 64), 1);
    CHECK_RC(cdt__lane_heads_ring(&p), 1);
    CHECK(readable(c.doorbell, 1000));
    cdt__lane_heads_awake(&c);
    CHECK(!readable(c.doorbell, 0));
    CHECK_RC(cdt__lane_heads_asleep(&p), 0);
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), 1);
    CHECK(tag == 2 && same(out, 8, 64));
    cdt__lane_close(&c);
    cdt__lane_close(&p);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* producer in a child, consumer here, which sleeps on the doorbell whenever the ring is empty:
 * every record arrives byte for byte and in order, and no sleep lasts its whole bound (a lost
 * ring would); the child writes in bursts with pauses, so the consumer sleeps often */
static void case_heads_processes(void)
{
    enum { RECORDS = 4000 };
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane_params prm = {.head_ring_bytes = 1};
        cdt__lane p;
        cdt__lane_offer o;
        unsigned char b[CDT__LANE_OFFER_SIZE];
        if (cdt__lane_create(&prm, &p, &o) != CDT_SUCCESS)
            _exit(2);
        cdt__lane_offer_encode(&o, b);
        if (write(pfd[1], b, sizeof b) != (ssize_t)sizeof b)
            _exit(2);
        double t0 = now_s();
        while (cdt__lane_attached(&p) == 0)
            if (now_s() - t0 > 10)
                _exit(3);
        for (uint64_t k = 0; k < RECORDS; k++) {
            size_t len = head_len(k);
            fill(head, k, len);
            int rc;
            while ((rc = cdt__lane_head_put(&p, k, head, len)) == 0) {
                if (now_s() - t0 > 60 || !cdt__lane_peer_alive(&p))
                    _exit(4);
                sched_yield();
            }
            if (rc != 1)
                _exit(5);
            cdt__lane_heads_ring(&p);
            if (k % 64 == 63)
                usleep(2000); /* the consumer goes to sleep meanwhile */
        }
        char x;
        (void)!read(pfd[0], &x, 1); /* stay until the consumer has them all */
        cdt__lane_close(&p);
        _exit(0);
    }
    unsigned char b[CDT__LANE_OFFER_SIZE];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = read(pfd[0], b + got, sizeof b - got);
        CHECK(r > 0);
        if (r <= 0)
            return;
        got += (size_t)r;
    }
    cdt__lane_offer o;
    CHECK_RC(cdt__lane_offer_parse(b, sizeof b, &o), CDT_SUCCESS);
    cdt__lane c;
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    uint64_t k = 0, bad = 0, sleeps = 0, long_sleeps = 0;
    double t0 = now_s();
    while (k < RECORDS && now_s() - t0 < 60) {
        uint64_t tag;
        size_t n;
        int rc = cdt__lane_head_take(&c, &tag, out, sizeof out, &n);
        if (rc == 1) {
            bad += tag != k || n != head_len(k) || !same(out, k, n);
            k++;
            continue;
        }
        CHECK_RC(rc, 0);
        if (rc != 0)
            break;
        if (cdt__lane_heads_sleep(&c) == 0) {
            sleeps++;
            /* a lost ring would sleep the whole 5 s */
            long_sleeps += !readable(c.doorbell, 5000);
        }
        cdt__lane_heads_awake(&c);
    }
    CHECK(k == RECORDS && bad == 0);
    CHECK(sleeps > 0 && long_sleeps == 0);
    printf("heads_processes: %llu records, %llu sleeps\n", (unsigned long long)k,
           (unsigned long long)sleeps);
    CHECK(write(pfd[1], "x", 1) == 1);
    int st = 0;
    while (waitpid(kid, &st, 0) < 0 && errno == EINTR)
        ;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    cdt__lane_close(&c);
    close(pfd[0]);
    close(pfd[1]);
}

/* A scribbler (a child that inherits the segment's mapping) writes random bytes into the head
 * ring (even rounds), and into its positions and the asleep word as well (odd rounds), while
 * records move between an honest producer and
 * an honest consumer (both here). Each side must go on or break (CDT_ERR_PEER, sticky), never
 * hand out a record whose length or tag is out of range, never crash; the round ends when a side
 * broke or every record moved. Across the rounds the scribbler must have broken the lane at
 * least once (else it scribbled nothing). */
static void case_heads_scribbler(void)
{
    int broke = 0, whole = 0, changed = 0;
    for (int round = 0; round < 12; round++) {
        cdt__lane_params prm = {.head_ring_bytes = 1};
        cdt__lane p, c;
        cdt__lane_offer o;
        CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
        CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
        CHECK_RC(cdt__lane_attached(&p), 1);
        pid_t scr = fork();
        if (scr == 0) {
            srand((unsigned)round * 7919u + 1);
            for (;;) {
                size_t off;
                /* odd rounds: the positions and the asleep word too, now and then */
                int where = round % 2 == 1 && rand() % 16 == 0 ? rand() % 3 : 3;
                if (where == 0)
                    off = CDT__LANE_OFF_HEADS_POS + (size_t)(rand() % 8);
                else if (where == 1)
                    off = CDT__LANE_OFF_HEADS_CONS + (size_t)(rand() % 8);
                else if (where == 2)
                    off = CDT__LANE_OFF_ASLEEP;
                else if (rand() % 2 == 0) /* anywhere in the ring */
                    off = p.heads_off + (size_t)rand() % p.head_ring_bytes;
                else { /* aimed: the record the consumer reads next, its length and tag */
                    uint64_t next;
                    memcpy(&next, p.base + CDT__LANE_OFF_HEADS_CONS, 8);
                    off = p.heads_off +
                          (size_t)((next + (uint64_t)(rand() % 16)) & (p.head_ring_bytes - 1));
                }
                p.base[off] = (unsigned char)rand();
                usleep((useconds_t)(rand() % 300));
            }
        }
        double t0 = now_s();
        uint64_t put = 0, took = 0;
        int pr = 1, cr = 1;
        while (took < 20000 && now_s() - t0 < 10) {
            if (pr >= 0 && put - took < 16) {
                size_t len = head_len(put);
                fill(head, put, len);
                pr = cdt__lane_head_put(&p, put, head, len);
                CHECK(pr == 0 || pr == 1 || pr == CDT_ERR_PEER);
                put += pr == 1;
            }
            uint64_t tag;
            size_t n;
            cr = cdt__lane_head_take(&c, &tag, out, sizeof out, &n);
            CHECK(cr == 0 || cr == 1 || cr == CDT_ERR_PEER);
            if (cr == 1) {
                CHECK(n >= CDT__LANE_HEAD_MIN && n <= CDT__LANE_HEAD_MAX && (tag >> 63) == 0);
                changed += tag != took || n != head_len(took) || !same(out, took, n);
                took++;
            }
            if (cr < 0 || (pr < 0 && cr == 0))
                break;
        }
        kill(scr, SIGKILL);
        waitpid(scr, NULL, 0);
        if (cr < 0 || pr < 0) {
            broke++;
            /* sticky: the broken side keeps its error */
            if (cr < 0)
                CHECK_RC(cdt__lane_heads_pending(&c), CDT_ERR_PEER);
            if (pr < 0)
                CHECK_RC(cdt__lane_head_put(&p, 1, head, 40), CDT_ERR_PEER);
        } else {
            whole += took == 20000;
        }
        cdt__lane_close(&c);
        cdt__lane_close(&p);
    }
    printf("heads_scribbler: 12 rounds, %d broke the lane, %d moved every record, %d records "
           "changed by the scribbler\n",
           broke, whole, changed);
    CHECK(broke > 0); /* the odd rounds' positions break it; `changed` is the ring bytes' mark */
}

/* ---- large records (§10.6, Large records) ---- */

#define LARGE_RING (UINT32_C(1) << 18) /* the default head ring: a 72 KiB bound */

static unsigned char big_head[CDT__LANE_HEAD_LARGE_MAX + 64];
static unsigned char big_out[CDT__LANE_HEAD_LARGE_MAX + 64];
static int gets;        /* calls of the getter below */
static size_t got_len;  /* the length it was asked for */
static int get_refuses; /* it answers NULL */

static unsigned char *count_get(void *arg, size_t len)
{
    (void)arg;
    gets++;
    got_len = len;
    return get_refuses ? NULL : big_out;
}

/* a version 2 lane with a head ring of ring bytes, both sides; the consumer announced
 * `features` (as cdt__lane_attach_features records them) and the producer read them */
static int fresh_large(unsigned char *mem, cdt__lane *p, cdt__lane *c, uint32_t ring,
                       uint32_t features)
{
    size_t total = v1_bytes(&small_offer) + ring;
    memset(mem, 0, total);
    cdt__lane_format_heads(mem, &small_offer, ring, -1);
    if (cdt__lane_view(mem, total, CDT__LANE_PRODUCER, &small_offer, p) != CDT_SUCCESS ||
        cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &small_offer, c) != CDT_SUCCESS)
        return 0;
    p->peer_features = features;
    c->own_features = features;
    return 1;
}

/* the bound each side applies; 1,200 records of 40 bytes to 72 KiB through a 256 KiB ring, by
 * put and by reserve + publish, taken through a getter asked for each record's exact length;
 * every record over a side's bound refused (the producer's put, the consumer's take: the lane
 * breaks with nothing asked of the getter); a getter without memory leaves the record */
static void case_heads_large(void)
{
    const uint32_t both = CDT__LANE_FEATURE_HEADS | CDT__LANE_FEATURE_LARGE;
    unsigned char *mem = calloc(1, v1_bytes(&small_offer) + LARGE_RING);
    CHECK(mem != NULL);
    cdt__lane p, c;
    uint64_t tag;
    size_t n;
    /* the bounds: half the ring, at most 72 KiB, only with both bits */
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, both));
    CHECK(cdt__lane_head_bound(&p) == 73728 && cdt__lane_head_bound(&c) == 73728);
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, CDT__LANE_FEATURE_HEADS));
    CHECK(cdt__lane_head_bound(&p) == CDT__LANE_HEAD_MAX);
    CHECK(cdt__lane_head_bound(&c) == CDT__LANE_HEAD_MAX);
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, CDT__LANE_FEATURE_LARGE));
    CHECK(cdt__lane_head_bound(&p) == CDT__LANE_HEAD_MAX);
    CHECK(fresh_large(mem, &p, &c, CDT__LANE_HEAD_RING_MIN, both)); /* half: 64 KiB */
    CHECK(cdt__lane_head_bound(&p) == 65536);
    CHECK_RC(cdt__lane_head_put(&p, 1, big_head, 65544), CDT_ERR_INVALID_ARG);
    /* records byte for byte and in order, across the ring's end */
    static const size_t lens[] = {40, 32768, 32776, 40000, 73728, 50001, 1000, 65529};
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, both));
    int put = 0, took = 0, fulls = 0;
    while (took < 1200) {
        int rc;
        if (put < 1200) {
            size_t len = lens[put % 8];
            if (put % 2 == 0) {
                fill(big_head, (uint64_t)put, len);
                rc = cdt__lane_head_put(&p, (uint64_t)put * 5, big_head, len);
            } else {
                unsigned char *dst = NULL;
                rc = cdt__lane_head_reserve(&p, len, &dst);
                if (rc == 1) {
                    fill(dst, (uint64_t)put, len); /* packed straight into the ring */
                    rc = cdt__lane_head_publish(&p, (uint64_t)put * 5);
                }
            }
            CHECK(rc == 0 || rc == 1);
            if (rc == 1) {
                put++;
                continue;
            }
            fulls++;
        }
        gets = 0;
        rc = cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n);
        CHECK_RC(rc, 1);
        if (rc != 1)
            break;
        CHECK(gets == 1 && got_len == n);
        CHECK(n == lens[took % 8] && tag == (uint64_t)took * 5 && same(big_out, (uint64_t)took, n));
        took++;
    }
    CHECK(fulls > 0 && took == 1200 && p.error == CDT_SUCCESS && c.error == CDT_SUCCESS);
    /* the producer: over the bound, or a large record toward a consumer without bit 2 */
    CHECK_RC(cdt__lane_head_put(&p, 1, big_head, 73729), CDT_ERR_INVALID_ARG);
    unsigned char *dst = NULL;
    CHECK_RC(cdt__lane_head_reserve(&p, 73729, &dst), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_head_publish(&p, 1), CDT_ERR_INVALID_ARG); /* nothing reserved */
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, CDT__LANE_FEATURE_HEADS));
    CHECK_RC(cdt__lane_head_put(&p, 1, big_head, 40000), CDT_ERR_INVALID_ARG);
    /* a reserve not published is dropped by the next one: one record comes */
    CHECK(fresh_large(mem, &p, &c, LARGE_RING, both));
    CHECK_RC(cdt__lane_head_reserve(&p, 60000, &dst), 1);
    fill(big_head, 3, 40000);
    CHECK_RC(cdt__lane_head_put(&p, 3, big_head, 40000), 1);
    CHECK_RC(cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n), 1);
    CHECK(n == 40000 && tag == 3 && same(big_out, 3, n));
    CHECK_RC(cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n), 0);
    /* a getter without memory: the record stays, the lane intact; HEAD_MAX's buffer too */
    CHECK_RC(cdt__lane_head_put(&p, 4, big_head, 40000), 1);
    get_refuses = 1;
    CHECK_RC(cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n), CDT_ERR_NO_MEMORY);
    get_refuses = 0;
    CHECK_RC(cdt__lane_head_take(&c, &tag, out, sizeof out, &n), CDT_ERR_NO_MEMORY);
    CHECK_RC(cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n), 1);
    CHECK(n == 40000 && tag == 4 && c.error == CDT_SUCCESS);
    /* the consumer: a record over its bound breaks the lane before the getter is asked */
    const size_t ring_at = v1_bytes(&small_offer);
    for (int round = 0; round < 3; round++) {
        /* 0: a consumer without bit 2 gets a 40,000-byte record; 1: one with it gets a len
         * scribbled to bound + 8; 2: to 2^31 */
        CHECK(fresh_large(mem, &p, &c, LARGE_RING, both));
        if (round == 0)
            c.own_features = CDT__LANE_FEATURE_HEADS;
        CHECK_RC(cdt__lane_head_put(&p, 9, big_head, 40000), 1);
        if (round == 1)
            set_u32(mem, ring_at, 73728 + 8);
        if (round == 2)
            set_u32(mem, ring_at, UINT32_C(1) << 31);
        gets = 0;
        CHECK_RC(cdt__lane_head_take_into(&c, &tag, count_get, NULL, &n), CDT_ERR_PEER);
        CHECK(gets == 0);                                    /* nothing allocated for it */
        CHECK_RC(cdt__lane_heads_pending(&c), CDT_ERR_PEER); /* sticky */
    }
    free(mem);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"heads", case_heads},
        {"heads_hostile", case_heads_hostile},
        {"heads_version", case_heads_version},
        {"heads_doorbell", case_heads_doorbell},
        {"heads_processes", case_heads_processes},
        {"heads_scribbler", case_heads_scribbler},
        {"heads_large", case_heads_large},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].fn();
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
