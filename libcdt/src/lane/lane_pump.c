/*
 * lane_pump.c - one object's stream through a lane (docs/TRANSPORT.md §10.3-4): the producer
 * packs straight into the ring fragment by fragment and publishes each at once; the consumer
 * unpacks each published fragment straight out of the ring, or out of a private copy for a
 * type whose callbacks may read a byte twice (a length checked, then used), and releases it.
 * The stream's length and the consumer's position are the caller's (from the matched head),
 * never the segment's.
 */
#include "lane/lane.h"

#include <string.h>

int cdt__lane_pump_out(cdt__lane *lane, cdt__lane_pack_fn *pack, void *state, uint64_t *offset,
                       uint64_t len)
{
    if (lane == NULL || pack == NULL || offset == NULL || *offset > len)
        return CDT_ERR_INVALID_ARG;
    while (*offset < len) {
        unsigned char *dst;
        size_t room;
        int rc = cdt__lane_write_span(lane, &dst, &room);
        if (rc != CDT_SUCCESS)
            return rc;
        if (room == 0)
            return 0;
        size_t n = len - *offset < room ? (size_t)(len - *offset) : room;
        /* the whole span is packed before it is published, however many calls the callback
         * takes (a transport's callback stops at each small region): one release store, one
         * cache line handed to the consumer, per fragment, not per call (§10.3) */
        size_t filled = 0;
        while (rc == CDT_SUCCESS && filled < n) {
            size_t used = 0;
            rc = pack(state, *offset + filled, dst + filled, n - filled, &used);
            if (rc == CDT_SUCCESS && (used == 0 || used > n - filled))
                rc = CDT_ERR_CALLBACK;
            if (rc == CDT_SUCCESS)
                filled += used;
        }
        /* what was packed before a failure is published all the same, as it was packed */
        int prc = filled > 0 ? cdt__lane_publish(lane, filled) : CDT_SUCCESS;
        if (prc == CDT_SUCCESS)
            *offset += filled;
        if (rc != CDT_SUCCESS)
            return rc;
        if (prc != CDT_SUCCESS)
            return prc;
    }
    return 1;
}

int cdt__lane_pump_in(cdt__lane *lane, cdt__lane_unpack_fn *unpack, void *state, uint64_t *offset,
                      uint64_t len, unsigned char *bounce)
{
    if (lane == NULL || offset == NULL || *offset > len)
        return CDT_ERR_INVALID_ARG;
    while (*offset < len) {
        const unsigned char *src;
        size_t avail;
        int rc = cdt__lane_read_span(lane, &src, &avail);
        if (rc != CDT_SUCCESS)
            return rc;
        if (avail == 0)
            return 0;
        /* the span may run on into the next object's bytes: only this object's are taken */
        size_t n = len - *offset < avail ? (size_t)(len - *offset) : avail;
        if (bounce != NULL && n > lane->frag_bytes)
            n = lane->frag_bytes;
        if (unpack != NULL) {
            const unsigned char *from = src;
            if (bounce != NULL) {
                memcpy(bounce, src, n);
                from = bounce;
            }
            rc = unpack(state, *offset, from, n);
            if (rc != CDT_SUCCESS)
                return rc;
        }
        rc = cdt__lane_release(lane, n);
        if (rc != CDT_SUCCESS)
            return rc;
        *offset += n;
    }
    return 1;
}

size_t cdt__lane_word_put(const unsigned char word[CDT__LANE_WORD_SIZE], uint64_t stream_len,
                          uint64_t offset, unsigned char *dst, size_t n)
{
    size_t at = (size_t)(offset - stream_len), k = CDT__LANE_WORD_SIZE - at;
    if (k > n)
        k = n;
    memcpy(dst, word + at, k);
    return k;
}

size_t cdt__lane_word_take(unsigned char word[CDT__LANE_WORD_SIZE], uint64_t stream_len,
                           uint64_t offset, const unsigned char *src, size_t n)
{
    if (offset + n <= stream_len)
        return n;
    /* the word's bytes in this piece: it may start before them (the stream's end) and, where
     * the word crosses the ring's end, end before the word does */
    uint64_t from = offset > stream_len ? offset : stream_len;
    memcpy(word + (from - stream_len), src + (from - offset), (size_t)(offset + n - from));
    return (size_t)(from - offset);
}
