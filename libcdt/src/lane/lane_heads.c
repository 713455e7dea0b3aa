/*
 * lane_heads.c - the head ring of a version 2 lane (docs/TRANSPORT.md §10.6): whole head
 * messages that the producer writes without a grant and the consumer copies out, so that a
 * small object reaches the receiving process without a TCP message and is then matched there
 * by UCX (the transport hands each copy to its own worker). This file knows records and
 * positions only; what a head means is the transport's.
 *
 * The peer can write any byte of the segment at any time, so, as in lane_ring.c: positions are
 * checked against this side's own copies each time they are read, a record's 16 bytes are
 * copied into private memory once and checked there, its head is copied out of the ring before
 * anyone parses it, and anything out of its bounds breaks the lane (sticky CDT_ERR_PEER)
 * instead of being used. A record never crosses the ring's end (a pad stands for the bytes
 * before it), so no read ever wraps.
 *
 * The doorbell: heads_pos is stored and asleep loaded sequentially consistently by the
 * producer, asleep stored and heads_pos loaded so by the consumer, so of two sides that race
 * at least one sees the other (the consumer the record, or the producer the sleeper).
 */
#include "lane/lane_internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static unsigned char *at_off(const cdt__lane *lane, size_t off)
{
    return lane->base + off;
}

static uint64_t *u64_at(const cdt__lane *lane, size_t off)
{
    return (uint64_t *)(void *)at_off(lane, off);
}

static uint32_t *u32_at(const cdt__lane *lane, size_t off)
{
    return (uint32_t *)(void *)at_off(lane, off);
}

/* cdt__lane_usable, and the lane has a head ring (a version 2 segment) */
static int heads_usable(const cdt__lane *lane, cdt__lane_role role)
{
    int rc = cdt__lane_usable(lane, role);
    if (rc != CDT_SUCCESS)
        return rc;
    return lane->head_ring_bytes == 0 ? CDT_ERR_UNSUPPORTED : CDT_SUCCESS;
}

static uint64_t padded(size_t len)
{
    return CDT__LANE_HEAD_RECORD + (((uint64_t)len + 7) & ~(uint64_t)7);
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

size_t cdt__lane_head_bound(const cdt__lane *lane)
{
    /* the consumer's own word, or the producer's private copy of it: never the segment's */
    uint32_t f = lane->role == CDT__LANE_PRODUCER ? lane->peer_features : lane->own_features;
    if (!(f & CDT__LANE_FEATURE_LARGE) || !(f & CDT__LANE_FEATURE_HEADS))
        return CDT__LANE_HEAD_MAX;
    size_t share = lane->head_ring_bytes / CDT__LANE_HEAD_LARGE_SHARE;
    size_t large = share < CDT__LANE_HEAD_LARGE_MAX ? share : CDT__LANE_HEAD_LARGE_MAX;
    return large > CDT__LANE_HEAD_MAX ? large : CDT__LANE_HEAD_MAX;
}

/* ---- producer ---- */

int cdt__lane_head_reserve(cdt__lane *lane, size_t len, unsigned char **dst)
{
    int rc = heads_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    lane->heads_resv_len = 0;
    if (dst == NULL || len < CDT__LANE_HEAD_MIN || len > cdt__lane_head_bound(lane))
        return CDT_ERR_INVALID_ARG;
    uint64_t cons = __atomic_load_n(u64_at(lane, CDT__LANE_OFF_HEADS_CONS), __ATOMIC_ACQUIRE);
    /* the consumer releases only what was published, and never takes a release back */
    if (cons < lane->heads_cons_seen || cons > lane->heads_pos)
        return cdt__lane_broken(lane);
    lane->heads_cons_seen = cons;
    const uint64_t size = lane->head_ring_bytes;
    uint64_t need = padded(len);
    uint64_t at = lane->heads_pos & (size - 1);
    uint64_t pad = need > size - at ? size - at : 0; /* the record starts at the ring's start */
    if (lane->heads_pos + pad + need > cons + size)
        return 0; /* full: this head waits, and every later one behind it */
    /* nothing is written yet: the pad too is written at the publish, so that a reserve not
     * published leaves the unpublished bytes as they were */
    lane->heads_resv_len = len;
    lane->heads_resv_pad = pad;
    *dst = at_off(lane, lane->heads_off) + (pad != 0 ? 0 : at) + CDT__LANE_HEAD_RECORD;
    return 1;
}

int cdt__lane_head_publish(cdt__lane *lane, uint64_t tag)
{
    int rc = heads_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    const size_t len = lane->heads_resv_len;
    if (len == 0 || (tag >> 63) != 0)
        return CDT_ERR_INVALID_ARG;
    lane->heads_resv_len = 0;
    const uint64_t pad = lane->heads_resv_pad;
    const uint64_t need = padded(len);
    uint64_t at = lane->heads_pos & (lane->head_ring_bytes - 1);
    unsigned char *ring = at_off(lane, lane->heads_off);
    if (pad != 0) {
        memset(ring + at, 0, 4); /* len 0: a pad to the ring's end */
        at = 0;
    }
    unsigned char rec[CDT__LANE_HEAD_RECORD] = {0};
    uint32_t len32 = (uint32_t)len;
    memcpy(rec, &len32, 4);
    memcpy(rec + 8, &tag, 8);
    memcpy(ring + at, rec, sizeof rec);
    memset(ring + at + CDT__LANE_HEAD_RECORD + len, 0,
           (size_t)(need - CDT__LANE_HEAD_RECORD - len));
    lane->heads_pos += pad + need;
    /* seq_cst: ordered before the load of asleep in cdt__lane_heads_asleep (the doorbell) */
    __atomic_store_n(u64_at(lane, CDT__LANE_OFF_HEADS_POS), lane->heads_pos, __ATOMIC_SEQ_CST);
    return 1;
}

int cdt__lane_head_put(cdt__lane *lane, uint64_t tag, const void *head, size_t len)
{
    unsigned char *dst;
    int rc = heads_usable(lane, CDT__LANE_PRODUCER);
    if (rc == CDT_SUCCESS && (head == NULL || (tag >> 63) != 0))
        rc = CDT_ERR_INVALID_ARG;
    if (rc == CDT_SUCCESS)
        rc = cdt__lane_head_reserve(lane, len, &dst);
    if (rc != 1)
        return rc;
    memcpy(dst, head, len);
    return cdt__lane_head_publish(lane, tag);
}

int cdt__lane_heads_asleep(cdt__lane *lane)
{
    if (heads_usable(lane, CDT__LANE_PRODUCER) != CDT_SUCCESS)
        return 0;
    /* any nonzero value: a peer that scribbles here only costs itself wakeups */
    return __atomic_load_n(u32_at(lane, CDT__LANE_OFF_ASLEEP), __ATOMIC_SEQ_CST) != 0;
}

int cdt__lane_heads_ring(cdt__lane *lane)
{
    if (!cdt__lane_heads_asleep(lane))
        return 0;
    if (lane->doorbell >= 0) {
        char one = 1;
        ssize_t w;
        do
            w = write(lane->doorbell, &one, 1);
        while (w < 0 && errno == EINTR);
        /* EAGAIN: the pipe is full of rings, the consumer is woken anyway */
    }
    return 1;
}

/* ---- consumer ---- */

/* heads_pos, checked: 1 and *prod, or the lane's error */
static int published(cdt__lane *lane, uint64_t *prod, int order)
{
    uint64_t p = __atomic_load_n(u64_at(lane, CDT__LANE_OFF_HEADS_POS), order);
    /* the producer writes only into released room */
    if (p < lane->heads_read || p - lane->heads_read > lane->head_ring_bytes)
        return cdt__lane_broken(lane);
    *prod = p;
    return CDT_SUCCESS;
}

struct into_buf {
    unsigned char *out;
    size_t cap;
};

static unsigned char *fixed_buf(void *arg, size_t len)
{
    struct into_buf *b = arg;
    return len <= b->cap ? b->out : NULL;
}

int cdt__lane_head_take(cdt__lane *lane, uint64_t *tag, unsigned char *out, size_t cap, size_t *len)
{
    int rc = heads_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (out == NULL || cap < CDT__LANE_HEAD_MAX)
        return CDT_ERR_INVALID_ARG;
    struct into_buf b = {out, cap};
    return cdt__lane_head_take_into(lane, tag, fixed_buf, &b, len);
}

int cdt__lane_head_take_into(cdt__lane *lane, uint64_t *tag, cdt__lane_head_buf_fn *get, void *arg,
                             size_t *len)
{
    int rc = heads_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (tag == NULL || get == NULL || len == NULL)
        return CDT_ERR_INVALID_ARG;
    const size_t bound = cdt__lane_head_bound(lane);
    const uint64_t size = lane->head_ring_bytes;
    const unsigned char *ring = at_off(lane, lane->heads_off);
    /* at most a pad, then a record: a pad at the ring's start is refused */
    for (int step = 0; step < 2; step++) {
        uint64_t prod;
        rc = published(lane, &prod, __ATOMIC_ACQUIRE);
        if (rc != CDT_SUCCESS)
            return rc;
        if (prod == lane->heads_read)
            return 0;
        uint64_t avail = prod - lane->heads_read;
        uint64_t at = lane->heads_read & (size - 1); /* a multiple of 8: this side's own sums */
        uint64_t to_end = size - at;
        uint32_t n = get32(ring + at);
        if (n == 0) { /* a pad: every byte to the ring's end, published with what follows it */
            if (at == 0 || avail < to_end)
                return cdt__lane_broken(lane);
            lane->heads_read += to_end;
            __atomic_store_n(u64_at(lane, CDT__LANE_OFF_HEADS_CONS), lane->heads_read,
                             __ATOMIC_RELEASE);
            continue;
        }
        if (to_end < CDT__LANE_HEAD_RECORD)
            return cdt__lane_broken(lane);
        unsigned char rec[CDT__LANE_HEAD_RECORD]; /* read once; only the copy is used */
        memcpy(rec, ring + at, sizeof rec);
        uint32_t rlen = get32(rec);
        uint64_t rtag = get64(rec + 8);
        if (rlen < CDT__LANE_HEAD_MIN || rlen > bound || get32(rec + 4) != 0 || (rtag >> 63) != 0)
            return cdt__lane_broken(lane);
        uint64_t need = padded(rlen);
        if (need > to_end || need > avail)
            return cdt__lane_broken(lane);
        /* checked: only now is memory asked for, at most the bound this side announced */
        unsigned char *out = get(arg, rlen);
        if (out == NULL)
            return CDT_ERR_NO_MEMORY; /* left in the ring (a pad before it was released) */
        memcpy(out, ring + at + CDT__LANE_HEAD_RECORD, rlen);
        lane->heads_read += need;
        __atomic_store_n(u64_at(lane, CDT__LANE_OFF_HEADS_CONS), lane->heads_read,
                         __ATOMIC_RELEASE);
        *tag = rtag;
        *len = rlen;
        return 1;
    }
    return cdt__lane_broken(lane); /* a pad after a pad */
}

int cdt__lane_heads_pending(cdt__lane *lane)
{
    int rc = heads_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc == CDT_ERR_UNSUPPORTED ? 0 : rc; /* no head ring: never a head */
    uint64_t prod;
    rc = published(lane, &prod, __ATOMIC_ACQUIRE);
    if (rc != CDT_SUCCESS)
        return rc;
    return prod != lane->heads_read;
}

int cdt__lane_heads_sleep(cdt__lane *lane)
{
    int rc = heads_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    __atomic_store_n(u32_at(lane, CDT__LANE_OFF_ASLEEP), 1u, __ATOMIC_SEQ_CST);
    uint64_t prod;
    rc = published(lane, &prod, __ATOMIC_SEQ_CST);
    if (rc != CDT_SUCCESS)
        return rc;
    if (prod == lane->heads_read)
        return 0;
    __atomic_store_n(u32_at(lane, CDT__LANE_OFF_ASLEEP), 0u, __ATOMIC_RELAXED);
    return 1;
}

void cdt__lane_heads_awake(cdt__lane *lane)
{
    if (heads_usable(lane, CDT__LANE_CONSUMER) != CDT_SUCCESS)
        return;
    __atomic_store_n(u32_at(lane, CDT__LANE_OFF_ASLEEP), 0u, __ATOMIC_RELAXED);
    if (lane->doorbell >= 0) {
        char rings[256];
        ssize_t r;
        do
            r = read(lane->doorbell, rings, sizeof rings);
        while (r == (ssize_t)sizeof rings || (r < 0 && errno == EINTR));
        /* EAGAIN: nothing (more) rang; 0: the producer's end is closed */
    }
}
