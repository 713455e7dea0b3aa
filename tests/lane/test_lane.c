/*
 * test_lane.c - the lane (libcdt/src/lane, docs/TRANSPORT.md §10) between real processes: the
 * offer and the header checks, objects streamed through the rings byte-exact, a peer scribbling
 * random bytes over the whole segment while objects move (the other side must never use a
 * position out of bounds, and must end, with its objects or CDT_ERR_PEER), a producer killed
 * while it writes and a consumer killed while it reads (the survivor learns it through the
 * pidfd within a bound, and nothing stays mapped or in /dev/shm). One case per run:
 * `test_lane CASE`.
 */
#define _GNU_SOURCE
#include "../core/check.h"
#include "lane/lane.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* nothing to do on lane l yet: 0 to try again (after yielding: the peer may be waiting for
 * this core), -2 past the deadline, CDT_ERR_PEER once the peer is gone */
static int idle_step(cdt__lane *l, double deadline)
{
    if (now_s() > deadline)
        return -2;
    if (!cdt__lane_peer_alive(l))
        return CDT_ERR_PEER;
    sched_yield();
    return 0;
}

/* the byte at stream position p of object `key`: every byte's value says where it belongs */
static unsigned char pattern(uint64_t key, uint64_t p)
{
    uint64_t x = (key * UINT64_C(0x9E3779B97F4A7C15)) ^ (p * UINT64_C(0xBF58476D1CE4E5B9));
    return (unsigned char)(x >> 56);
}

static uint64_t object_len(uint64_t key)
{
    /* 0 B to ~600 KiB: empty objects, objects inside one fragment, objects across the ring */
    static const uint64_t lens[] = {0, 1, 100, 4095, 32768, 65537, 300000, 600001};
    return lens[key % (sizeof lens / sizeof lens[0])];
}

/* ---- the producer's and the consumer's loops, as a transport would run them ---- */

/* Serves grants in order, each with its object's pattern; keys must come as 0, 1, 2, ...
 * Returns 0 when `objects` were written, the lane's error, or -2 when the deadline passed. */
static int produce(cdt__lane *l, uint64_t objects, double deadline, int die_at_fragment)
{
    uint64_t served = 0;
    int fragments = 0;
    while (served < objects) {
        cdt__lane_grant g;
        int rc = cdt__lane_take_grant(l, &g);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            if ((rc = idle_step(l, deadline)) != 0)
                return rc;
            continue;
        }
        /* a transport looks the key up among its offered objects; here it must be the next */
        if (g.key != served || g.stream_len != object_len(g.key))
            return CDT_ERR_PEER;
        uint64_t off = 0;
        while (off < g.stream_len) {
            unsigned char *dst;
            size_t n;
            rc = cdt__lane_write_span(l, &dst, &n);
            if (rc < 0)
                return rc;
            if (n == 0) {
                if ((rc = idle_step(l, deadline)) != 0)
                    return rc;
                continue;
            }
            if (n > g.stream_len - off)
                n = (size_t)(g.stream_len - off);
            for (size_t i = 0; i < n; i++)
                dst[i] = pattern(g.key, off + i);
            if (die_at_fragment >= 0 && fragments++ == die_at_fragment) {
                /* half a fragment written and not published: the consumer must not use it */
                raise(SIGKILL);
            }
            rc = cdt__lane_publish(l, n);
            if (rc < 0)
                return rc;
            off += n;
        }
        served++;
    }
    return 0;
}

/* Grants objects 0..objects-1 (at most `window` ahead) and checks every byte. A span out of the
 * mapping or the ring is a failed CHECK (and stops). Returns 0 when all arrived intact, the
 * lane's error, -2 at the deadline, -3 when a byte was wrong (only a scribbler may cause it). */
static int consume(cdt__lane *l, uint64_t objects, int window, double deadline, int die_after,
                   uint64_t *bad_bytes)
{
    uint64_t granted = 0, done = 0, got = 0; /* got: bytes of object `done` received */
    uint64_t start[64];
    int reads = 0;
    int wrong = 0;
    while (done < objects) {
        while (granted < objects && granted - done < (uint64_t)window) {
            int rc = cdt__lane_post_grant(l, granted, object_len(granted), &start[granted % 64]);
            if (rc == CDT_ERR_BUSY)
                break;
            if (rc < 0)
                return rc;
            granted++;
        }
        uint64_t len = object_len(done);
        if (got == len) {
            done++;
            got = 0;
            continue;
        }
        const unsigned char *src;
        size_t n;
        int rc = cdt__lane_read_span(l, &src, &n);
        if (rc < 0)
            return rc;
        if (n == 0) {
            if ((rc = idle_step(l, deadline)) != 0)
                return rc;
            continue;
        }
        /* the span lies in the data ring, whatever the peer wrote */
        const unsigned char *ring = l->base + l->data_off;
        if (!(src >= ring && src + n <= ring + l->ring_bytes)) {
            CHECK(!"read span outside the data ring");
            return -4;
        }
        CHECK(cdt__lane_position(l) == start[done % 64] + got);
        if (n > len - got)
            n = (size_t)(len - got);
        for (size_t i = 0; i < n; i++)
            if (src[i] != pattern(done, got + i)) {
                wrong = 1;
                (*bad_bytes)++;
            }
        if (die_after >= 0 && reads++ == die_after)
            raise(SIGKILL);
        rc = cdt__lane_release(l, n);
        if (rc < 0)
            return rc;
        got += n;
    }
    return wrong ? -3 : 0;
}

/* ---- helpers: processes, the offer through a pipe, what is left behind ---- */

static int send_offer(int fd, const cdt__lane_offer *o)
{
    unsigned char b[CDT__LANE_OFFER_SIZE];
    cdt__lane_offer_encode(o, b);
    return write(fd, b, sizeof b) == (ssize_t)sizeof b ? 0 : -1;
}

static int recv_offer(int fd, cdt__lane_offer *o)
{
    unsigned char b[CDT__LANE_OFFER_SIZE];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = read(fd, b + got, sizeof b - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return cdt__lane_offer_parse(b, sizeof b, o) == CDT_SUCCESS ? 0 : -1;
}

/* mappings of lane segments in this process (memfds show as "/memfd:cdt-lane") */
static int lane_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "memfd:cdt-lane") != NULL)
            n++;
    fclose(f);
    return n;
}

/* Entries in /dev/shm, less those of UCX's and the MPIs' shared-memory transports: other tests
 * that run beside this one (ctest -j) make and remove theirs at any time, and the lane (a memfd)
 * names nothing there. */
static int dev_shm_entries(void)
{
    static const char *const others[] = {"ucx_", "vader", "mpich", "sem.", "psm"};
    DIR *d = opendir("/dev/shm");
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int counted = e->d_name[0] != '.';
        for (size_t i = 0; counted && i < sizeof others / sizeof others[0]; i++)
            counted = strncmp(e->d_name, others[i], strlen(others[i])) != 0;
        n += counted;
    }
    closedir(d);
    return n;
}

/* 1 once /dev/shm holds as many entries as before, within 2 s: an entry another process makes
 * for a moment passes, one left behind stays and fails the check */
static int dev_shm_back_to(int before)
{
    for (int i = 0; i < 40; i++) {
        if (dev_shm_entries() == before)
            return 1;
        usleep(50 * 1000);
    }
    return 0;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int wait_exit(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    return st;
}

/* ---- cases ---- */

static void case_offer(void)
{
    cdt__lane_offer o = {
        .pid = 1234, .fd = 7, .ring_bytes = 1 << 20, .grant_slots = 64, .frag_bytes = 1 << 15};
    for (int i = 0; i < CDT__LANE_NONCE_SIZE; i++)
        o.nonce[i] = (uint8_t)(i * 17 + 3);
    unsigned char b[CDT__LANE_OFFER_SIZE];
    cdt__lane_offer_encode(&o, b);
    cdt__lane_offer p;
    CHECK_RC(cdt__lane_offer_parse(b, sizeof b, &p), CDT_SUCCESS);
    CHECK(memcmp(&o, &p, sizeof o) == 0);
    CHECK_RC(cdt__lane_offer_parse(b, sizeof b - 1, &p), CDT_ERR_FRAME_MALFORMED);
    /* every size out of range, a pid or fd that cannot be */
    struct {
        uint64_t ring;
        uint32_t slots, frag;
        int32_t pid, fd;
    } bad[] = {
        {1 << 20, 64, 1 << 15, 0, 7},
        {1 << 20, 64, 1 << 15, -5, 7},
        {1 << 20, 64, 1 << 15, 9, -1},
        {(1 << 20) + 1, 64, 1 << 15, 9, 7},
        {1 << 15, 64, 1 << 12, 9, 7},
        {UINT64_C(1) << 27, 64, 1 << 15, 9, 7},
        {1 << 20, 8, 1 << 15, 9, 7},
        {1 << 20, 2048, 1 << 15, 9, 7},
        {1 << 20, 63, 1 << 15, 9, 7},
        {1 << 20, 64, 1 << 11, 9, 7},
        {1 << 20, 64, 1 << 20, 9, 7},
        {1 << 20, 64, (1 << 15) + 4, 9, 7},
        {UINT64_C(1) << 63, 64, 1 << 15, 9, 7},
        {0, 64, 1 << 15, 9, 7},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cdt__lane_offer q = o;
        q.ring_bytes = bad[i].ring;
        q.grant_slots = bad[i].slots;
        q.frag_bytes = bad[i].frag;
        q.pid = bad[i].pid;
        q.fd = bad[i].fd;
        cdt__lane_offer_encode(&q, b);
        CHECK_RC(cdt__lane_offer_parse(b, sizeof b, &p), CDT_ERR_FRAME_MALFORMED);
    }
    /* a view whose header does not repeat the offer, or of the wrong size, is refused */
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    unsigned char *mem = calloc(1, total);
    cdt__lane_format(mem, &o);
    cdt__lane l;
    CHECK_RC(cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &o, &l), CDT_SUCCESS);
    CHECK_RC(cdt__lane_view(mem, total - 1, CDT__LANE_CONSUMER, &o, &l), CDT_ERR_FRAME_MALFORMED);
    CHECK_RC(cdt__lane_view(mem, total + 4096, CDT__LANE_CONSUMER, &o, &l),
             CDT_ERR_FRAME_MALFORMED);
    for (size_t off = 0; off < CDT__LANE_OFF_PROD_POS; off++) {
        if (off >= 40) /* reserved bytes */
            continue;
        mem[off] ^= 0x40;
        CHECK_RC(cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &o, &l), CDT_ERR_FRAME_MALFORMED);
        mem[off] ^= 0x40;
    }
    free(mem);
}

/* Each bound of §10.4 on its own: a lane over plain memory (both sides), one shared field set to
 * a value the peer could not honestly have written, and the call that reads it must break the
 * lane (CDT_ERR_PEER, sticky) instead of using it. */
static void set_u64(cdt__lane *l, size_t off, uint64_t v)
{
    memcpy(l->base + off, &v, 8);
}

static int fresh(unsigned char *mem, size_t total, const cdt__lane_offer *o, cdt__lane *p,
                 cdt__lane *c)
{
    cdt__lane_format(mem, o);
    return cdt__lane_view(mem, total, CDT__LANE_PRODUCER, o, p) == CDT_SUCCESS &&
           cdt__lane_view(mem, total, CDT__LANE_CONSUMER, o, c) == CDT_SUCCESS;
}

/* The CPU words (docs/TRANSPORT.md §10.3, Waiting): each side's lands where the peer reads it,
 * is stored only when it changed, and any value a peer writes is a hint (-1 or a CPU), never
 * an error */
static void case_cpu(void)
{
    cdt__lane_offer o = {
        .pid = 1, .fd = 0, .ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    unsigned char *mem = calloc(1, total);
    cdt__lane p, c;
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK(cdt__lane_peer_cpu(&p) == -1 && cdt__lane_peer_cpu(&c) == -1); /* an earlier peer */
    cdt__lane_note_cpu(&p, 3);
    CHECK(cdt__lane_peer_cpu(&c) == 3 && cdt__lane_peer_cpu(&p) == -1);
    cdt__lane_note_cpu(&c, 0);
    CHECK(cdt__lane_peer_cpu(&p) == 0 && cdt__lane_peer_cpu(&c) == 3);
    uint32_t w;
    memcpy(&w, mem + CDT__LANE_OFF_PROD_CPU, 4);
    CHECK(w == 4);
    memcpy(&w, mem + CDT__LANE_OFF_CONS_CPU, 4);
    CHECK(w == 1);
    /* the same CPU again: no store (the line the peer polls is written once a migration) */
    memset(mem + CDT__LANE_OFF_PROD_CPU, 0, 4);
    cdt__lane_note_cpu(&p, 3);
    CHECK(cdt__lane_peer_cpu(&c) == -1);
    cdt__lane_note_cpu(&p, 4);
    CHECK(cdt__lane_peer_cpu(&c) == 4);
    cdt__lane_note_cpu(&p, -1); /* not known: nothing written */
    CHECK(cdt__lane_peer_cpu(&c) == 4);
    /* positions and the CPU words do not overlap */
    CHECK(cdt__lane_position(&c) == 0);
    /* a peer's any value: a hint, never an error */
    memset(mem + CDT__LANE_OFF_CONS_CPU, 0xff, 4);
    CHECK(cdt__lane_peer_cpu(&p) == -1);
    uint32_t big = (uint32_t)INT32_MAX;
    memcpy(mem + CDT__LANE_OFF_CONS_CPU, &big, 4);
    CHECK(cdt__lane_peer_cpu(&p) == INT32_MAX - 1);
    CHECK(p.error == CDT_SUCCESS && c.error == CDT_SUCCESS);
    /* a lane to this very process (two workers of one program): no hint */
    CHECK(cdt__lane_peer_cpu(&c) == 4);
    c.same_process = 1;
    CHECK(cdt__lane_peer_cpu(&c) == -1);
    free(mem);
}

/* A SPLIT destination record's claim and revocation (docs/TRANSPORT.md §10.3, Regions moved by
 * both cores, rule 6): whoever swaps the slot first decides whether the producer writes into
 * the consumer's memory; a revocation tells "under way" from "over"; a slot the peer scribbled
 * over breaks the producer's lane and never holds the consumer */
static void case_record_claim(void)
{
    cdt__lane_offer o = {
        .pid = 1, .fd = 0, .ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    unsigned char *mem = calloc(1, total);
    cdt__lane p, c;
    cdt__lane_grant g;
    const uint64_t key = (UINT64_C(1) << 63) | 77;
    uint64_t pos = 0, value = 0, start;

    /* claimed, written, done: a revocation after it finds the writes over */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK(cdt__lane_claim_record(&p, key, &value) == 0); /* nothing posted yet */
    CHECK_RC(cdt__lane_post_record(&c, key, 0x1000, &pos), CDT_SUCCESS);
    CHECK(pos == 0);
    CHECK(cdt__lane_claim_record(&p, key, &value) == 1 && value == 0x1000);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 0); /* under way: the consumer must wait */
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 0); /* repeatable */
    CHECK_RC(cdt__lane_record_done(&p), CDT_SUCCESS);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 1);
    CHECK(p.error == CDT_SUCCESS && c.error == CDT_SUCCESS);
    /* the grant ring goes on after it */
    CHECK_RC(cdt__lane_post_grant(&c, 5, 10, &start), CDT_SUCCESS);
    CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == 5 && g.stream_len == 10);

    /* revoked before the claim: the producer takes it, writes nothing, and goes on */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_record(&c, key, 0x2000, &pos), CDT_SUCCESS);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 1);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 1);
    CHECK(cdt__lane_claim_record(&p, key, &value) == 2);
    CHECK_RC(cdt__lane_post_grant(&c, 6, 20, &start), CDT_SUCCESS);
    CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == 6 && g.stream_len == 20);
    CHECK(p.error == CDT_SUCCESS && c.error == CDT_SUCCESS);

    /* a record at another position than the first: positions are the consumer's own count */
    CHECK(fresh(mem, total, &o, &p, &c));
    for (int k = 0; k < 20; k++) { /* past the ring's wrap */
        CHECK_RC(cdt__lane_post_grant(&c, (uint64_t)k, 1, &start), CDT_SUCCESS);
        CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == (uint64_t)k);
    }
    CHECK_RC(cdt__lane_post_record(&c, key, 0x3000, &pos), CDT_SUCCESS);
    CHECK(pos == 20);
    CHECK(cdt__lane_claim_record(&p, key, &value) == 1 && value == 0x3000);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 0);
    CHECK_RC(cdt__lane_record_done(&p), CDT_SUCCESS);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 1);
    /* a position never posted, a key with the swapped bits */
    CHECK_RC(cdt__lane_revoke_record(&c, 21, key), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_post_record(&c, key | CDT__LANE_RECORD_CLAIMED, 1, &pos),
             CDT_ERR_INVALID_ARG);

    /* the producer expects another record, or the slot was scribbled over: the lane breaks,
     * and the consumer's revocation does not wait on it */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_record(&c, key, 0x4000, &pos), CDT_SUCCESS);
    CHECK_RC(cdt__lane_claim_record(&p, key + 1, &value), CDT_ERR_PEER);
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_record(&c, key, 0x4000, &pos), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_GRANTS, key | CDT__LANE_RECORD_CLAIMED | 0x55);
    CHECK_RC(cdt__lane_claim_record(&p, key, &value), CDT_ERR_PEER);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 1);
    /* a producer that swapped CLAIMED and died: the consumer sees "under way" (its pidfd, not
     * the slot, ends the wait: ucx_lane_split.c) */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_record(&c, key, 0x4000, &pos), CDT_SUCCESS);
    CHECK(cdt__lane_claim_record(&p, key, &value) == 1);
    CHECK(cdt__lane_revoke_record(&c, pos, key) == 0);
    free(mem);
}

/* the record after an endpoint's id: an offer, or a no-lane record and why; anything else is
 * malformed */
static void case_record(void)
{
    cdt__lane_offer o = {.pid = 99,
                         .fd = 4,
                         .ring_bytes = 1 << 20,
                         .grant_slots = 64,
                         .frag_bytes = 1 << 14},
                    q;
    o.nonce[3] = 7;
    unsigned char r[CDT__LANE_RECORD_SIZE];
    char why[CDT__LANE_WHY_MAX + 1];
    cdt__lane_record_offer(&o, r);
    CHECK(memcmp(r, "CDTO", 4) == 0);
    CHECK(cdt__lane_record_parse(r, sizeof r, &q, why) == CDT__LANE_RECORD_OFFER);
    CHECK(memcmp(&o, &q, sizeof o) == 0);
    CHECK_RC(cdt__lane_record_parse(r, sizeof r - 1, &q, why), CDT_ERR_FRAME_MALFORMED);
    r[4 + 16] = 0; /* pid 0 */
    r[4 + 17] = r[4 + 18] = r[4 + 19] = 0;
    CHECK_RC(cdt__lane_record_parse(r, sizeof r, &q, why), CDT_ERR_FRAME_MALFORMED);
    cdt__lane_record_none("not-local", r);
    CHECK(memcmp(r, "CDTNnot-local\0", 14) == 0);
    CHECK(cdt__lane_record_parse(r, sizeof r, &q, why) == CDT__LANE_RECORD_NONE);
    CHECK(strcmp(why, "not-local") == 0);
    cdt__lane_record_none("a-why-longer-than-twenty-three", r); /* truncated */
    CHECK(cdt__lane_record_parse(r, sizeof r, &q, why) == CDT__LANE_RECORD_NONE);
    CHECK(strlen(why) == CDT__LANE_WHY_MAX);
    /* an empty why, a byte outside [a-z-], a byte after the padding, another magic */
    static const char *bad[] = {"", "Off", "of f", "off\n", "%s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cdt__lane_record_none(bad[i], r);
        CHECK_RC(cdt__lane_record_parse(r, sizeof r, &q, why), CDT_ERR_FRAME_MALFORMED);
    }
    cdt__lane_record_none("off", r);
    r[CDT__LANE_RECORD_SIZE - 1] = 1;
    CHECK_RC(cdt__lane_record_parse(r, sizeof r, &q, why), CDT_ERR_FRAME_MALFORMED);
    cdt__lane_record_none("off", r);
    r[3] = 'X';
    CHECK_RC(cdt__lane_record_parse(r, sizeof r, &q, why), CDT_ERR_FRAME_MALFORMED);
}

static void case_bounds(void)
{
    cdt__lane_offer o = {
        .pid = 1, .fd = 0, .ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    unsigned char *mem = calloc(1, total);
    cdt__lane p, c;
    cdt__lane_grant g;
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    uint64_t start;

    /* producer: more grants posted than the ring holds */
    CHECK(fresh(mem, total, &o, &p, &c));
    set_u64(&p, CDT__LANE_OFF_GRANTS_POSTED, 17);
    CHECK_RC(cdt__lane_take_grant(&p, &g), CDT_ERR_PEER);
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_ERR_PEER); /* sticky */
    /* producer: grants taken back */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, 10, &start), CDT_SUCCESS);
    CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == 0 && g.stream_len == 10);
    set_u64(&p, CDT__LANE_OFF_GRANTS_POSTED, 0);
    CHECK_RC(cdt__lane_take_grant(&p, &g), CDT_ERR_PEER);
    /* producer: bytes released that were never published */
    CHECK(fresh(mem, total, &o, &p, &c));
    set_u64(&p, CDT__LANE_OFF_CONS_POS, 1);
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_ERR_PEER);
    /* producer: a release taken back */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, 100, &start), CDT_SUCCESS);
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_SUCCESS);
    CHECK_RC(cdt__lane_publish(&p, 100), CDT_SUCCESS);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_SUCCESS);
    CHECK(n == 100);
    CHECK_RC(cdt__lane_release(&c, 100), CDT_SUCCESS);
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_SUCCESS);
    set_u64(&p, CDT__LANE_OFF_CONS_POS, 50);
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_ERR_PEER);
    /* consumer: bytes published beyond the room it released */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, o.ring_bytes * 2, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_PROD_POS, o.ring_bytes + 1);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_ERR_PEER);
    CHECK_RC(cdt__lane_release(&c, 0), CDT_ERR_PEER); /* sticky */
    /* consumer: bytes published beyond what it granted */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, 10, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_PROD_POS, 11);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_ERR_PEER);
    /* consumer: a publication taken back */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, 10, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_PROD_POS, 10);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_SUCCESS);
    CHECK_RC(cdt__lane_release(&c, 10), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_PROD_POS, 5);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_ERR_PEER);
    /* consumer: grants taken that were never posted, and taken back */
    CHECK(fresh(mem, total, &o, &p, &c));
    set_u64(&c, CDT__LANE_OFF_GRANTS_TAKEN, 1);
    CHECK_RC(cdt__lane_post_grant(&c, 0, 10, &start), CDT_ERR_PEER);
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 0, 10, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_GRANTS_TAKEN, 1);
    CHECK_RC(cdt__lane_post_grant(&c, 1, 10, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_GRANTS_TAKEN, 0);
    CHECK_RC(cdt__lane_post_grant(&c, 2, 10, &start), CDT_ERR_PEER);
    /* consumer: a full grant ring is CDT_ERR_BUSY, not an error of the lane */
    CHECK(fresh(mem, total, &o, &p, &c));
    for (uint64_t k = 0; k < o.grant_slots; k++)
        CHECK_RC(cdt__lane_post_grant(&c, k, 1, &start), CDT_SUCCESS);
    CHECK_RC(cdt__lane_post_grant(&c, 99, 1, &start), CDT_ERR_BUSY);
    CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == 0);
    CHECK_RC(cdt__lane_post_grant(&c, 99, 1, &start), CDT_SUCCESS);
    CHECK(start == o.grant_slots); /* its own sum of the lengths granted before */
    /* the grant's values are the consumer's to choose: the producer gets them as written (a
     * transport checks them against its offered objects) */
    CHECK(fresh(mem, total, &o, &p, &c));
    CHECK_RC(cdt__lane_post_grant(&c, 7, 3, &start), CDT_SUCCESS);
    set_u64(&p, CDT__LANE_OFF_GRANTS, UINT64_MAX);
    CHECK(cdt__lane_take_grant(&p, &g) == 1 && g.key == UINT64_MAX && g.stream_len == 3);
    /* the header is read once: a peer that changes the sizes later changes nothing here */
    CHECK(fresh(mem, total, &o, &p, &c));
    set_u64(&c, CDT__LANE_OFF_RING_BYTES, UINT64_C(1) << 40);
    CHECK_RC(cdt__lane_post_grant(&c, 0, o.ring_bytes * 4, &start), CDT_SUCCESS);
    set_u64(&c, CDT__LANE_OFF_PROD_POS, o.ring_bytes);
    CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_SUCCESS);
    CHECK(n == o.ring_bytes && src == mem + c.data_off);
    free(mem);
}

/* both sides in this process: attach through /proc/self/fd, objects across the ring's end */
static void case_local(void)
{
    cdt__lane p, c;
    cdt__lane_offer o;
    cdt__lane_params prm = {.ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
    CHECK(cdt__lane_attached(&p) == 0);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    CHECK(p.memfd >= 0);
    CHECK(cdt__lane_attached(&p) == 1);
    CHECK(lane_mappings() == 2);
    /* attached: the producer closed its memfd (the mappings keep the memory), so no other
     * process can open the segment, and it costs no descriptor */
    CHECK(p.memfd == -1);
    cdt__lane again;
    CHECK(cdt__lane_attach(&o, &again) < 0);
    /* interleaved by hand: grant, write what fits, read it, until 40 objects moved */
    uint64_t next_grant = 0, prod_obj = 0, prod_off = 0, cons_obj = 0, cons_off = 0, start;
    int have_grant = 0, steps = 0;
    cdt__lane_grant g = {0, 0};
    while (cons_obj < 40 && steps++ < 1000000) {
        if (next_grant < 40 &&
            cdt__lane_post_grant(&c, next_grant, object_len(next_grant), &start) == CDT_SUCCESS)
            next_grant++;
        if (!have_grant) {
            int rc = cdt__lane_take_grant(&p, &g);
            CHECK(rc >= 0);
            if (rc == 1) {
                CHECK(g.key == prod_obj && g.stream_len == object_len(prod_obj));
                have_grant = 1;
                prod_off = 0;
            }
        }
        if (have_grant) {
            unsigned char *dst;
            size_t n;
            CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_SUCCESS);
            CHECK(n <= 4096);
            if (n > g.stream_len - prod_off)
                n = (size_t)(g.stream_len - prod_off);
            for (size_t i = 0; i < n; i++)
                dst[i] = pattern(g.key, prod_off + i);
            CHECK_RC(cdt__lane_publish(&p, n), CDT_SUCCESS);
            prod_off += n;
            if (prod_off == g.stream_len) {
                have_grant = 0;
                prod_obj++;
            }
        }
        if (cons_obj < next_grant) {
            if (cons_off == object_len(cons_obj)) {
                cons_obj++;
                cons_off = 0;
                continue;
            }
            const unsigned char *src;
            size_t n;
            CHECK_RC(cdt__lane_read_span(&c, &src, &n), CDT_SUCCESS);
            if (n > object_len(cons_obj) - cons_off)
                n = (size_t)(object_len(cons_obj) - cons_off);
            for (size_t i = 0; i < n; i++)
                if (src[i] != pattern(cons_obj, cons_off + i)) {
                    CHECK(!"wrong byte");
                    break;
                }
            CHECK_RC(cdt__lane_release(&c, n), CDT_SUCCESS);
            cons_off += n;
        }
    }
    CHECK(cons_obj == 40);
    /* a span cannot be published or released beyond what was handed out */
    unsigned char *dst;
    size_t n;
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_SUCCESS);
    CHECK_RC(cdt__lane_publish(&p, n + 1), CDT_ERR_INVALID_ARG);
    /* the wrong side's calls are refused */
    CHECK_RC(cdt__lane_write_span(&c, &dst, &n), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt__lane_post_grant(&p, 1, 1, &start), CDT_ERR_INVALID_ARG);
    cdt__lane_close(&c);
    cdt__lane_close(&p);
    CHECK(lane_mappings() == 0);
    cdt__lane_close(&p); /* twice, and a zeroed lane: nothing happens */
    cdt__lane z;
    memset(&z, 0, sizeof z);
    cdt__lane_close(&z);
}

/* ---- one object's stream through the pumps, with the engine (lane_pump.c) ---- */

static const unsigned char *seg_lo, *seg_hi; /* the consumer's mapping */
static int ring_reads;                       /* custom unpacks that were handed the ring */

static int op_pack(void *state, uint64_t off, unsigned char *dst, size_t n, size_t *used)
{
    cdt_count u = 0;
    int rc = cdt_op_pack((cdt_op)state, (cdt_count)off, dst, (cdt_count)n, &u);
    *used = (size_t)u;
    return rc;
}

static int op_unpack(void *state, uint64_t off, const unsigned char *src, size_t n)
{
    return cdt_op_unpack((cdt_op)state, (cdt_count)off, src, (cdt_count)n);
}

static int op_pack_nothing(void *state, uint64_t off, unsigned char *dst, size_t n, size_t *used)
{
    (void)state, (void)off, (void)dst, (void)n;
    *used = 0;
    return CDT_SUCCESS;
}

static int fail_unpack(void *state, uint64_t off, const unsigned char *src, size_t n)
{
    (void)state, (void)off, (void)src, (void)n;
    return CDT_ERR_USER_BASE - 1;
}

/* a custom type whose packed stream is the object's bytes; its unpack notes whether it was
 * handed bytes inside the segment */
static int bytes_query(void *st, const void *buf, cdt_count count, cdt_count *size)
{
    (void)st, (void)buf;
    *size = count;
    return CDT_SUCCESS;
}

static int bytes_pack(void *st, const void *buf, cdt_count count, cdt_count off, void *dst,
                      cdt_count dst_size, cdt_count *used)
{
    (void)st;
    cdt_count n = count - off < dst_size ? count - off : dst_size;
    memcpy(dst, (const char *)buf + off, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}

static int bytes_unpack(void *st, void *buf, cdt_count count, cdt_count off, const void *src,
                        cdt_count n)
{
    (void)st, (void)count;
    const unsigned char *s = src;
    if (s >= seg_lo && s < seg_hi)
        ring_reads++;
    memcpy((char *)buf + off, src, (size_t)n);
    return CDT_SUCCESS;
}

/* a pack callback that packs at most 100 bytes a call (as a transport's stops at each small
 * region) and counts the positions the producer had published when it was called */
typedef struct short_pack {
    const cdt__lane *lane;
    const unsigned char *src;
    uint64_t last_pos;
    int calls, positions;
} short_pack;

static int pack_short(void *state, uint64_t off, unsigned char *dst, size_t n, size_t *used)
{
    short_pack *sp = state;
    uint64_t pos =
        __atomic_load_n((const uint64_t *)(const void *)(sp->lane->base + CDT__LANE_OFF_PROD_POS),
                        __ATOMIC_ACQUIRE);
    if (sp->calls++ == 0 || pos != sp->last_pos)
        sp->positions++;
    sp->last_pos = pos;
    *used = n < 100 ? n : 100;
    memcpy(dst, sp->src + off, *used);
    return CDT_SUCCESS;
}

/* moves (sbuf, count, type) into (rbuf, count, type) through p and c, both pumps alternating;
 * unpack as given (op_unpack, fail_unpack or NULL); returns pump_in's last status */
static int move(cdt__lane *p, cdt__lane *c, const void *sbuf, void *rbuf, cdt_count count,
                cdt_type type, cdt__lane_unpack_fn *unpack, unsigned char *bounce)
{
    cdt_op po, uo;
    cdt_count len;
    if (cdt_op_pack_begin(sbuf, count, type, &po) != CDT_SUCCESS ||
        cdt_op_packed_size(po, &len) != CDT_SUCCESS ||
        cdt_op_unpack_begin(rbuf, count, type, &uo) != CDT_SUCCESS)
        return -100;
    uint64_t start, out = 0, in = 0;
    int rc = cdt__lane_post_grant(c, 1, (uint64_t)len, &start);
    cdt__lane_grant g;
    if (rc != CDT_SUCCESS || cdt__lane_take_grant(p, &g) != 1 || g.stream_len != (uint64_t)len)
        return -101;
    int orc = 0, irc = 0;
    int rounds = 0;
    while ((orc != 1 || irc != 1) && rounds++ < 1000000) {
        if (orc != 1)
            orc = cdt__lane_pump_out(p, op_pack, po, &out, (uint64_t)len);
        if (orc < 0)
            break;
        irc = cdt__lane_pump_in(c, unpack, uo, &in, (uint64_t)len, bounce);
        if (irc < 0)
            break;
    }
    int drc = 1;
    if (irc < 0) { /* the receive failed: its bytes are still taken, unread */
        drc = 0;
        while (drc == 0 && rounds++ < 2000000) {
            if (orc == 0)
                orc = cdt__lane_pump_out(p, op_pack, po, &out, (uint64_t)len);
            drc = cdt__lane_pump_in(c, NULL, NULL, &in, (uint64_t)len, NULL);
        }
    }
    cdt_op_end(po);
    cdt_op_end(uo);
    if (irc < 0)
        return drc == 1 && orc == 1 ? -1 : -102;
    return orc == 1 && irc == 1 ? 0 : -103;
}

static void case_pump(void)
{
    cdt__lane p, c;
    cdt__lane_offer o;
    cdt__lane_params prm = {.ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    seg_lo = c.base;
    seg_hi = c.base + c.map_bytes;
    unsigned char *bounce = malloc(c.frag_bytes);

    /* the demo's strided vector (every other double), 1 MiB packed: 16 times the ring */
    enum { N = 1 << 17 };
    double *sv = malloc(2 * N * sizeof *sv), *rv = calloc(2 * N, sizeof *rv);
    for (int i = 0; i < 2 * N; i++)
        sv[i] = i * 0.5;
    cdt_type vec;
    CHECK_RC(cdt_type_vector(N, 1, 2, CDT_DOUBLE, &vec), CDT_SUCCESS);
    CHECK_RC(cdt_type_commit(&vec), CDT_SUCCESS);
    CHECK_RC(move(&p, &c, sv, rv, 1, vec, op_unpack, NULL), 0);
    int same = 1;
    for (int i = 0; i < 2 * N; i++)
        same &= rv[i] == (i % 2 == 0 ? sv[i] : 0.0);
    CHECK(same);

    /* a custom type: its unpack never sees the segment when the pump copies first */
    cdt_type bytes;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, bytes_pack, bytes_unpack, NULL, NULL,
                                    NULL, 0, &bytes),
             CDT_SUCCESS);
    enum { B = 200000 };
    unsigned char *sb = malloc(B), *rb = calloc(1, B);
    for (int i = 0; i < B; i++)
        sb[i] = (unsigned char)(i * 13 + 1);
    ring_reads = 0;
    CHECK_RC(move(&p, &c, sb, rb, B, bytes, op_unpack, bounce), 0);
    CHECK(memcmp(sb, rb, B) == 0);
    CHECK(ring_reads == 0);
    /* (without the copy it would have read the ring: what the copy is for) */
    memset(rb, 0, B);
    CHECK_RC(move(&p, &c, sb, rb, B, bytes, op_unpack, NULL), 0);
    CHECK(memcmp(sb, rb, B) == 0);
    CHECK(ring_reads > 0);

    /* a receive whose unpack fails: its stream is released unread, the next object whole */
    CHECK_RC(move(&p, &c, sb, rb, B, bytes, fail_unpack, bounce), -1);
    memset(rv, 0, 2 * N * sizeof *rv);
    CHECK_RC(move(&p, &c, sv, rv, 1, vec, op_unpack, NULL), 0);
    same = 1;
    for (int i = 0; i < 2 * N; i++)
        same &= rv[i] == (i % 2 == 0 ? sv[i] : 0.0);
    CHECK(same);
    CHECK(cdt__lane_position(&c) == cdt__lane_position(&p));

    /* a fragment is published once, whole, however many calls its packing takes: 20,000
     * bytes in 4 KiB fragments are 5 publications, 6 where the ring's end cuts one (the
     * producer's position seen by that many values across 200-odd calls), not one a call */
    {
        uint64_t start, o2 = 0, i2 = 0;
        cdt__lane_grant g;
        CHECK_RC(cdt__lane_post_grant(&c, 2, 20000, &start), CDT_SUCCESS);
        CHECK_RC(cdt__lane_take_grant(&p, &g), 1);
        short_pack sp = {.lane = &p, .src = sb};
        CHECK_RC(cdt__lane_pump_out(&p, pack_short, &sp, &o2, 20000), 1);
        CHECK(o2 == 20000);
        CHECK(sp.calls >= 200);
        CHECK(sp.positions >= 5 && sp.positions <= 6);
        CHECK_RC(cdt__lane_pump_in(&c, NULL, NULL, &i2, 20000, NULL), 1);
        CHECK(cdt__lane_position(&c) == cdt__lane_position(&p));
    }

    /* a pack callback that packs nothing is a broken callback, not a hang */
    uint64_t off = 0;
    CHECK_RC(cdt__lane_pump_out(&p, op_pack_nothing, NULL, &off, 10), CDT_ERR_CALLBACK);

    cdt_type_free(&vec);
    cdt_type_free(&bytes);
    free(sv);
    free(rv);
    free(sb);
    free(rb);
    free(bounce);
    cdt__lane_close(&c);
    cdt__lane_close(&p);
}

/* a file that is not a sealed segment of the offer's size is refused; no refusal, and no lane
 * closed, leaves a descriptor or a mapping behind */
/* consumer_features (docs/TRANSPORT.md §10.1-10.2): a consumer announces at attach that it
 * takes headers through the lane; the producer reads the word once, when it sees the attach, so
 * a consumer of an earlier release (the word left zero) is never sent one, and a later scribble
 * changes nothing on the producer's side */
static void case_features(void)
{
    cdt__lane_params prm = {.ring_bytes = 1 << 16, .grant_slots = 16, .frag_bytes = 4096};
    for (int old = 0; old < 2; old++) {
        cdt__lane p, c;
        cdt__lane_offer o;
        CHECK_RC(cdt__lane_create(&prm, &p, &o), CDT_SUCCESS);
        CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
        uint32_t *word = (uint32_t *)(void *)(c.base + CDT__LANE_OFF_CONSUMER_FEATURES);
        CHECK(*word == CDT__LANE_FEATURES && (*word & CDT__LANE_FEATURE_HEADERS) != 0);
        if (old)
            *word = 0; /* as an earlier release leaves it */
        CHECK(cdt__lane_attached(&p) == 1);
        CHECK(p.peer_features == (old ? 0u : CDT__LANE_FEATURES));
        *word = old ? CDT__LANE_FEATURES : 0; /* read once: no effect now */
        CHECK(cdt__lane_attached(&p) == 1);
        CHECK(p.peer_features == (old ? 0u : CDT__LANE_FEATURES));
        cdt__lane_close(&c);
        cdt__lane_close(&p);
    }
}

static void case_attach_refused(void)
{
    int fds_before = open_fds();
    cdt__lane p, c;
    cdt__lane_offer o;
    CHECK_RC(cdt__lane_create(NULL, &p, &o), CDT_SUCCESS);
    cdt__lane_offer q = o;
    q.nonce[3] ^= 1; /* another segment's nonce */
    CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
    q = o;
    q.ring_bytes *= 2; /* another size */
    CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
    /* descriptors that are not a lane's memfd are refused before they are opened: a pipe
     * (opening its read end would block without O_NONBLOCK), a regular file, a memfd of
     * another name */
    int pp[2];
    CHECK(pipe(pp) == 0);
    int other = memfd_create("not-a-lane", MFD_CLOEXEC);
    int descriptors[] = {pp[0], pp[1], other, 0};
    for (size_t i = 0; i < sizeof descriptors / sizeof descriptors[0]; i++) {
        q = o;
        q.fd = descriptors[i];
        CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
    }
    close(pp[0]);
    close(pp[1]);
    close(other);
    /* ... and never opened: inotify sees no open of a regular file offered as the segment */
    char tmpl[] = "/tmp/cdt-lane-test-XXXXXX";
    int reg = mkstemp(tmpl);
    int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(reg >= 0 && in >= 0 && inotify_add_watch(in, tmpl, IN_OPEN) >= 0);
    q = o;
    q.fd = reg;
    CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
    char ev[256];
    CHECK(read(in, ev, sizeof ev) < 0 && errno == EAGAIN);
    close(in);
    close(reg);
    unlink(tmpl);
    q.fd = 999999; /* no such descriptor */
    CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_UNSUPPORTED);
    /* an unsealed memfd of the right size and header */
    int fd = memfd_create("cdt-lane", MFD_CLOEXEC);
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    CHECK(fd >= 0 && ftruncate(fd, (off_t)total) == 0);
    unsigned char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED);
    cdt__lane_format(m, &o);
    munmap(m, total);
    q = o;
    q.fd = fd;
    CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
    close(fd);
    /* a process that is gone */
    pid_t kid = fork();
    if (kid == 0)
        _exit(0);
    wait_exit(kid);
    q = o;
    q.pid = kid;
    CHECK(cdt__lane_attach(&q, &c) < 0);
    cdt__lane_close(&p);
    CHECK(lane_mappings() == 0);
    /* many lanes made, attached, used and closed */
    for (int i = 0; i < 200; i++) {
        CHECK_RC(cdt__lane_create(NULL, &p, &o), CDT_SUCCESS);
        q = o;
        q.nonce[0] ^= 1;
        CHECK_RC(cdt__lane_attach(&q, &c), CDT_ERR_FRAME_MALFORMED);
        CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
        CHECK(cdt__lane_attached(&p) == 1);
        cdt__lane_close(&c);
        cdt__lane_close(&p);
    }
    CHECK(lane_mappings() == 0);
    CHECK(open_fds() == fds_before);
}

/* Without read access to the producer (here: a producer that made itself non-dumpable, and a
 * consumer without CAP_SYS_PTRACE), the segment cannot be opened: the attach fails with
 * CDT_ERR_UNSUPPORTED, the status on which a transport keeps its version 5 path, and maps
 * nothing. (Yama's ptrace_scope restricts attach access only, which the lane never needs.) */
static void case_not_readable(void)
{
    int pfd[2], done[2];
    CHECK(pipe(pfd) == 0 && pipe(done) == 0);
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane p;
        cdt__lane_offer o;
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || cdt__lane_create(NULL, &p, &o) != 0 ||
            send_offer(pfd[1], &o) != 0)
            _exit(2);
        char b;
        (void)!read(done[0], &b, 1);
        _exit(0);
    }
    cdt__lane_offer o;
    CHECK(recv_offer(pfd[0], &o) == 0);
    pid_t tester = fork();
    if (tester == 0) {
        /* drop CAP_SYS_PTRACE (a root test run has it; it overrides the dumpable flag) */
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) != 0)
            _exit(3);
        d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
        if (syscall(SYS_capset, &h, d) != 0)
            _exit(3);
        cdt__lane c;
        int rc = cdt__lane_attach(&o, &c);
        _exit(rc == CDT_ERR_UNSUPPORTED && lane_mappings() == 0 ? 0 : 4);
    }
    int st = wait_exit(tester);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(write(done[1], "x", 1) == 1);
    wait_exit(kid);
    close(pfd[0]);
    close(pfd[1]);
    close(done[0]);
    close(done[1]);
}

/* producer in a child, consumer here: many objects, byte-exact */
static void case_processes(void)
{
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane p;
        cdt__lane_offer o;
        if (cdt__lane_create(NULL, &p, &o) != CDT_SUCCESS || send_offer(pfd[1], &o) != 0)
            _exit(2);
        double t0 = now_s();
        while (cdt__lane_attached(&p) == 0)
            if (now_s() - t0 > 10)
                _exit(3);
        int rc = produce(&p, 2000, now_s() + 60, -1);
        /* stay until the consumer read the last bytes (they are in our segment, but it must
         * not take our exit for a failure before it has them) */
        char b;
        (void)!read(pfd[0], &b, 1);
        cdt__lane_close(&p);
        _exit(rc == 0 ? 0 : 4);
    }
    cdt__lane_offer o;
    CHECK(recv_offer(pfd[0], &o) == 0);
    cdt__lane c;
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    uint64_t bad = 0;
    CHECK_RC(consume(&c, 2000, 16, now_s() + 60, -1, &bad), 0);
    CHECK(bad == 0);
    CHECK(write(pfd[1], "x", 1) == 1);
    int st = wait_exit(kid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(cdt__lane_peer_alive(&c) == 0); /* it exited: the pidfd says so */
    cdt__lane_close(&c);
    CHECK(lane_mappings() == 0);
}

/* A scribbler (a third process that maps the segment as the peer does) writes random bytes at
 * random places of the whole segment while objects move between an honest producer and an
 * honest consumer. The side under test must never use a span outside the ring, must end (with
 * its objects, or CDT_ERR_PEER when a position it read was out of bounds), and its bytes may be
 * wrong only because the scribbler wrote them. Run with the consumer and then the producer as
 * the side under test (the other side is the same honest loop in a child). */
/* A process that writes random bytes into the segment while the honest peer and the side
 * under test use it. It is forked by the side under test after its lane is mapped and
 * scribbles through that inherited mapping: the segment cannot be opened again once the
 * consumer mapped it (the producer closes its memfd then, docs/TRANSPORT.md §10.2), so a
 * scribbler that attached by itself would find nothing to open and the test would scribble
 * nothing. */
static void scribble(const cdt__lane *mapped, unsigned seed, int data_only)
{
    cdt__lane s = *mapped;
    srand(seed);
    for (;;) {
        size_t off = (size_t)rand() % s.map_bytes;
        if (data_only) /* the stream bytes only: the object's values, nothing else */
            off = s.data_off + (size_t)rand() % (size_t)s.ring_bytes;
        else if (rand() % 4 != 0) /* mostly the header and the grants, where the bounds are */
            off = (size_t)rand() % s.data_off;
        size_t n = 1 + (size_t)rand() % 16;
        if (n > s.map_bytes - off)
            n = s.map_bytes - off;
        for (size_t i = 0; i < n; i++)
            s.base[off + i] = (unsigned char)rand();
        usleep((useconds_t)(rand() % 200));
    }
}

static void case_hostile(void)
{
    /* [data only][side under test][0 whole, 1 CDT_ERR_PEER, 2 timed out, 3 scribbled bytes] */
    int results[2][2][4] = {{{0}}};
    for (int round = 0; round < 16; round++) {
        int consumer_under_test = round % 2 == 0;
        int data_only = round % 4 >= 2;
        /* a lane whose positions were scribbled may stall (the honest peer stopped at a grant
         * it did not offer): 2 s; one whose stream bytes only were must finish, however slowly
         * a loaded machine runs it */
        double limit = data_only ? 60 : 2;
        int pfd[2];
        CHECK(pipe(pfd) == 0);
        cdt__lane p, c;
        cdt__lane_offer o;
        pid_t honest, scr;
        int rc;
        uint64_t bad = 0;
        if (consumer_under_test) {
            honest = fork();
            if (honest == 0) {
                if (cdt__lane_create(NULL, &p, &o) != CDT_SUCCESS || send_offer(pfd[1], &o) != 0)
                    _exit(2);
                while (cdt__lane_attached(&p) == 0)
                    ;
                produce(&p, 400, now_s() + 90, -1);
                pause();
                _exit(0);
            }
            CHECK(recv_offer(pfd[0], &o) == 0);
            CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
            scr = fork();
            if (scr == 0)
                scribble(&c, (unsigned)round, data_only);
            rc = consume(&c, 400, 16, now_s() + limit, -1, &bad);
            cdt__lane_close(&c);
        } else {
            CHECK_RC(cdt__lane_create(NULL, &p, &o), CDT_SUCCESS);
            honest = fork();
            if (honest == 0) {
                if (cdt__lane_attach(&o, &c) != CDT_SUCCESS)
                    _exit(2);
                uint64_t b2 = 0;
                consume(&c, 400, 16, now_s() + 90, -1, &b2);
                pause();
                _exit(0);
            }
            while ((rc = cdt__lane_attached(&p)) == 0)
                ;
            scr = fork();
            if (scr == 0)
                scribble(&p, (unsigned)round, data_only);
            rc = rc < 0 ? rc : produce(&p, 400, now_s() + limit, -1);
            /* every span the producer got lay in the ring (write_span computes it from its own
             * position, so only the length could be wrong): checked in produce's writes, which
             * ASan and the mapping bound */
            cdt__lane_close(&p);
        }
        kill(scr, SIGKILL);
        kill(honest, SIGKILL);
        wait_exit(scr);
        wait_exit(honest);
        close(pfd[0]);
        close(pfd[1]);
        int *r = results[data_only][consumer_under_test ? 0 : 1];
        if (rc == 0)
            r[0]++;
        else if (rc == CDT_ERR_PEER)
            r[1]++;
        else if (rc == -2)
            r[2]++;
        else if (rc == -3)
            r[3]++;
        else
            CHECK(!"the side under test failed otherwise");
        /* scribbled stream bytes change values, never where anything is: every object ends */
        if (data_only)
            CHECK(rc == 0 || rc == -3);
        CHECK(lane_mappings() == 0);
    }
    for (int d = 0; d < 2; d++)
        for (int side = 0; side < 2; side++) {
            int *r = results[d][side];
            printf("hostile (%s, %s under test): %d whole, %d CDT_ERR_PEER, %d timed out, %d "
                   "with scribbled bytes\n",
                   d ? "stream bytes" : "whole segment", side ? "producer" : "consumer", r[0], r[1],
                   r[2], r[3]);
        }
    /* the scribbler hits the positions often enough that a lane broke at least once */
    CHECK(results[0][0][1] + results[0][1][1] > 0);
}

/* The producer raises SIGKILL with half a fragment written; the consumer learns it through the
 * pidfd within 1 s, fails with CDT_ERR_PEER, and nothing stays mapped or in /dev/shm. */
static void case_kill_producer(void)
{
    int shm_before = dev_shm_entries();
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane p;
        cdt__lane_offer o;
        if (cdt__lane_create(NULL, &p, &o) != CDT_SUCCESS || send_offer(pfd[1], &o) != 0)
            _exit(2);
        while (cdt__lane_attached(&p) == 0)
            ;
        produce(&p, 1000, now_s() + 20, 50);
        _exit(3); /* not reached: it dies at fragment 50 */
    }
    cdt__lane_offer o;
    CHECK(recv_offer(pfd[0], &o) == 0);
    cdt__lane c;
    CHECK_RC(cdt__lane_attach(&o, &c), CDT_SUCCESS);
    uint64_t bad = 0;
    double t0 = now_s();
    int rc = consume(&c, 1000, 16, now_s() + 20, -1, &bad);
    double waited = now_s() - t0;
    CHECK_RC(rc, CDT_ERR_PEER);
    CHECK(bad == 0); /* the half-written fragment was never read */
    CHECK(waited < 1.0);
    int st = wait_exit(kid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    CHECK(lane_mappings() == 1);
    cdt__lane_close(&c);
    CHECK(lane_mappings() == 0);
    CHECK(dev_shm_back_to(shm_before));
    printf("kill_producer: CDT_ERR_PEER after %.3f s\n", waited);
}

/* The consumer raises SIGKILL in the middle of its reads; the producer, waiting for room, learns
 * it through the pidfd within 1 s, and nothing stays mapped or in /dev/shm. */
static void case_kill_consumer(void)
{
    int shm_before = dev_shm_entries();
    cdt__lane p;
    cdt__lane_offer o;
    CHECK_RC(cdt__lane_create(NULL, &p, &o), CDT_SUCCESS);
    pid_t kid = fork();
    if (kid == 0) {
        cdt__lane c;
        if (cdt__lane_attach(&o, &c) != CDT_SUCCESS)
            _exit(2);
        uint64_t bad = 0;
        consume(&c, 1000, 16, now_s() + 20, 40, &bad);
        _exit(3); /* not reached */
    }
    int rc;
    while ((rc = cdt__lane_attached(&p)) == 0)
        ;
    CHECK(rc == 1);
    double t0 = now_s();
    rc = produce(&p, 1000, now_s() + 20, -1);
    double waited = now_s() - t0;
    CHECK_RC(rc, CDT_ERR_PEER);
    CHECK(waited < 1.0);
    int st = wait_exit(kid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* the lane's error is sticky: nothing more is written */
    unsigned char *dst;
    size_t n;
    CHECK_RC(cdt__lane_write_span(&p, &dst, &n), CDT_ERR_PEER);
    cdt__lane_close(&p);
    CHECK(lane_mappings() == 0);
    CHECK(dev_shm_back_to(shm_before));
    printf("kill_consumer: CDT_ERR_PEER after %.3f s\n", waited);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"offer", case_offer},
        {"record", case_record},
        {"record_claim", case_record_claim},
        {"bounds", case_bounds},
        {"local", case_local},
        {"pump", case_pump},
        {"features", case_features},
        {"attach_refused", case_attach_refused},
        {"not_readable", case_not_readable},
        {"processes", case_processes},
        {"hostile", case_hostile},
        {"kill_producer", case_kill_producer},
        {"kill_consumer", case_kill_consumer},
        {"cpu", case_cpu},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].fn();
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
