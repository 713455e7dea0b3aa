/*
 * lane_ring.c - the lane's two single-producer/single-consumer rings (docs/TRANSPORT.md §10.3-4):
 * grants, written by the consumer and read by the producer, and stream bytes, written by the
 * producer and read by the consumer. Positions are 64-bit byte (or grant) counts that only
 * grow; a ring index is a position masked with a size validated when the lane was set up.
 *
 * The peer can write any byte of the segment at any time, so: every position read from the
 * segment is checked against this side's own copies each time it is read, and a value out of
 * its bounds breaks the lane (sticky CDT_ERR_PEER) instead of being used; this side never reads
 * back what it wrote. The acquire load of a position orders the bytes it covers; the release
 * store of one publishes them.
 */
#include "lane/lane_internal.h"

static uint64_t *field(const cdt__lane *lane, size_t off)
{
    return (uint64_t *)(void *)(lane->base + off);
}

static uint64_t load_acquire(const cdt__lane *lane, size_t off)
{
    return __atomic_load_n(field(lane, off), __ATOMIC_ACQUIRE);
}

static void store_release(cdt__lane *lane, size_t off, uint64_t v)
{
    __atomic_store_n(field(lane, off), v, __ATOMIC_RELEASE);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* ---- producer ---- */

static size_t grant_off(const cdt__lane *lane, uint64_t pos)
{
    return CDT__LANE_OFF_GRANTS + (size_t)(pos & (lane->grant_slots - 1)) * CDT__LANE_GRANT_SIZE;
}

/* the producer's next grant slot: 1 and *off, 0 none posted, or the lane broken */
static int next_grant(cdt__lane *lane, size_t *off)
{
    uint64_t posted = load_acquire(lane, CDT__LANE_OFF_GRANTS_POSTED);
    if (posted == lane->grants_taken)
        return 0;
    /* a consumer cannot post more grants than the ring holds, nor take some back */
    if (posted < lane->grants_taken || posted - lane->grants_taken > lane->grant_slots)
        return cdt__lane_broken(lane);
    *off = grant_off(lane, lane->grants_taken);
    return 1;
}

int cdt__lane_take_grant(cdt__lane *lane, cdt__lane_grant *g)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (g == NULL)
        return CDT_ERR_INVALID_ARG;
    size_t off = 0;
    if ((rc = next_grant(lane, &off)) != 1)
        return rc;
    g->key = __atomic_load_n(field(lane, off), __ATOMIC_RELAXED);
    g->stream_len = __atomic_load_n(field(lane, off + 8), __ATOMIC_RELAXED);
    /* copied: the slot may be reused from now on */
    lane->grants_taken++;
    store_release(lane, CDT__LANE_OFF_GRANTS_TAKEN, lane->grants_taken);
    return 1;
}

int cdt__lane_claim_record(cdt__lane *lane, uint64_t key, uint64_t *value)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (value == NULL)
        return CDT_ERR_INVALID_ARG;
    size_t off = 0;
    if ((rc = next_grant(lane, &off)) != 1)
        return rc;
    /* the swap both processes agree on: CLAIMED before any write into the consumer's memory,
     * or the consumer's REVOKED first (§10.3, rule 6) */
    uint64_t seen = key;
    if (__atomic_compare_exchange_n(field(lane, off), &seen, key | CDT__LANE_RECORD_CLAIMED, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        *value = __atomic_load_n(field(lane, off + 8), __ATOMIC_RELAXED);
        return 1; /* taken by cdt__lane_record_done, after the writes */
    }
    if (seen != (key | CDT__LANE_RECORD_REVOKED))
        return cdt__lane_broken(lane); /* not the record this object's stream calls for */
    lane->grants_taken++;
    store_release(lane, CDT__LANE_OFF_GRANTS_TAKEN, lane->grants_taken);
    return 2;
}

int cdt__lane_record_done(cdt__lane *lane)
{
    /* also on a lane that broke meanwhile: the consumer may be waiting for DONE */
    if (lane == NULL || lane->base == NULL || lane->role != CDT__LANE_PRODUCER)
        return CDT_ERR_INVALID_ARG;
    size_t off = grant_off(lane, lane->grants_taken);
    uint64_t key = __atomic_load_n(field(lane, off), __ATOMIC_RELAXED);
    /* the slot is this side's until grants_taken passes it: the consumer only swapped it, and
     * a swap fails against CLAIMED; release: the writes happen before DONE is seen */
    __atomic_store_n(field(lane, off), key | CDT__LANE_RECORD_DONE, __ATOMIC_RELEASE);
    lane->grants_taken++;
    store_release(lane, CDT__LANE_OFF_GRANTS_TAKEN, lane->grants_taken);
    return CDT_SUCCESS;
}

int cdt__lane_revoke_record(cdt__lane *lane, uint64_t pos, uint64_t key)
{
    if (lane == NULL || lane->base == NULL || lane->role != CDT__LANE_CONSUMER)
        return CDT_ERR_INVALID_ARG;
    if (pos >= lane->grants_posted)
        return CDT_ERR_INVALID_ARG; /* a position this side never posted */
    uint64_t taken = load_acquire(lane, CDT__LANE_OFF_GRANTS_TAKEN);
    if (taken > pos)
        return 1; /* taken: DONE or REVOKED was in the slot first (or the peer lies: it could
                   * write anyway) */
    size_t off = grant_off(lane, pos);
    uint64_t seen = key;
    if (__atomic_compare_exchange_n(field(lane, off), &seen, key | CDT__LANE_RECORD_REVOKED, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 1;
    return seen == (key | CDT__LANE_RECORD_CLAIMED) ? 0 : 1;
}

int cdt__lane_unreleased(cdt__lane *lane, uint64_t *bytes)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    uint64_t cons = load_acquire(lane, CDT__LANE_OFF_CONS_POS);
    if (cons < lane->cons_seen || cons > lane->prod_pos)
        return cdt__lane_broken(lane);
    lane->cons_seen = cons;
    *bytes = lane->prod_pos - cons;
    return CDT_SUCCESS;
}

int cdt__lane_write_span(cdt__lane *lane, unsigned char **dst, size_t *len)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (dst == NULL || len == NULL)
        return CDT_ERR_INVALID_ARG;
    uint64_t cons = load_acquire(lane, CDT__LANE_OFF_CONS_POS);
    /* the consumer releases only what was published, and never takes a release back */
    if (cons < lane->cons_seen || cons > lane->prod_pos)
        return cdt__lane_broken(lane);
    lane->cons_seen = cons;
    uint64_t room = cons + lane->ring_bytes - lane->prod_pos; /* prod_pos - cons <= ring_bytes */
    uint64_t at = lane->prod_pos & (lane->ring_bytes - 1);
    uint64_t n = min_u64(min_u64(room, lane->ring_bytes - at), lane->frag_bytes);
    *dst = lane->base + lane->data_off + at;
    *len = (size_t)n;
    lane->span = (size_t)n;
    return CDT_SUCCESS;
}

int cdt__lane_publish(cdt__lane *lane, size_t len)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_PRODUCER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (len > lane->span)
        return CDT_ERR_INVALID_ARG;
    lane->span -= len;
    lane->prod_pos += len;
    store_release(lane, CDT__LANE_OFF_PROD_POS, lane->prod_pos);
    return CDT_SUCCESS;
}

/* ---- consumer ---- */

/* one entry {key, value} into the grant ring: CDT_SUCCESS, CDT_ERR_BUSY (full) or the lane's
 * error; grants_posted is published by the caller */
static int post_slot(cdt__lane *lane, uint64_t key, uint64_t value)
{
    uint64_t taken = load_acquire(lane, CDT__LANE_OFF_GRANTS_TAKEN);
    /* the producer takes only grants that were posted, and never gives one back */
    if (taken < lane->grants_taken_seen || taken > lane->grants_posted)
        return cdt__lane_broken(lane);
    lane->grants_taken_seen = taken;
    if (lane->grants_posted - taken >= lane->grant_slots)
        return CDT_ERR_BUSY;
    size_t slot = (size_t)(lane->grants_posted & (lane->grant_slots - 1));
    size_t off = CDT__LANE_OFF_GRANTS + slot * CDT__LANE_GRANT_SIZE;
    __atomic_store_n(field(lane, off), key, __ATOMIC_RELAXED);
    __atomic_store_n(field(lane, off + 8), value, __ATOMIC_RELAXED);
    return CDT_SUCCESS;
}

int cdt__lane_post_grant(cdt__lane *lane, uint64_t key, uint64_t stream_len, uint64_t *start)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (start == NULL || stream_len > UINT64_MAX / 2 - lane->granted_end)
        return CDT_ERR_INVALID_ARG;
    rc = post_slot(lane, key, stream_len);
    if (rc != CDT_SUCCESS)
        return rc;
    /* the object's place is this side's own sum, never read from the segment */
    *start = lane->granted_end;
    lane->granted_end += stream_len;
    lane->grants_posted++;
    store_release(lane, CDT__LANE_OFF_GRANTS_POSTED, lane->grants_posted);
    return CDT_SUCCESS;
}

int cdt__lane_post_record(cdt__lane *lane, uint64_t key, uint64_t value, uint64_t *pos)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (pos == NULL ||
        (key & (CDT__LANE_RECORD_CLAIMED | CDT__LANE_RECORD_DONE | CDT__LANE_RECORD_REVOKED)) != 0)
        return CDT_ERR_INVALID_ARG;
    rc = post_slot(lane, key, value);
    if (rc != CDT_SUCCESS)
        return rc;
    *pos = lane->grants_posted;
    lane->grants_posted++; /* no stream bytes: the places of the objects after it hold */
    store_release(lane, CDT__LANE_OFF_GRANTS_POSTED, lane->grants_posted);
    return CDT_SUCCESS;
}

int cdt__lane_read_span(cdt__lane *lane, const unsigned char **src, size_t *len)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (src == NULL || len == NULL)
        return CDT_ERR_INVALID_ARG;
    uint64_t prod = load_acquire(lane, CDT__LANE_OFF_PROD_POS);
    /* a producer writes only into released room, and only the streams it was granted */
    if (prod < lane->cons_pos || prod - lane->cons_pos > lane->ring_bytes ||
        prod > lane->granted_end)
        return cdt__lane_broken(lane);
    uint64_t at = lane->cons_pos & (lane->ring_bytes - 1);
    uint64_t n = min_u64(prod - lane->cons_pos, lane->ring_bytes - at);
    *src = lane->base + lane->data_off + at;
    *len = (size_t)n;
    lane->span = (size_t)n;
    return CDT_SUCCESS;
}

int cdt__lane_release(cdt__lane *lane, size_t len)
{
    int rc = cdt__lane_usable(lane, CDT__LANE_CONSUMER);
    if (rc != CDT_SUCCESS)
        return rc;
    if (len > lane->span)
        return CDT_ERR_INVALID_ARG;
    lane->span -= len;
    lane->cons_pos += len;
    store_release(lane, CDT__LANE_OFF_CONS_POS, lane->cons_pos);
    return CDT_SUCCESS;
}

uint64_t cdt__lane_position(const cdt__lane *lane)
{
    return lane->role == CDT__LANE_PRODUCER ? lane->prod_pos : lane->cons_pos;
}
