/*
 * lane_format.c - the lane's wire and memory formats, pure: the offer a producer sends in a head
 * message, the segment's header, and a side of a lane over memory already mapped. No system
 * call, no allocation, so tests/fuzz/fuzz_lane.c drives it directly. docs/TRANSPORT.md §10.1-2.
 */
#include "lane/lane.h"
#include "frame/frame_format.h"

#include <string.h>

/* the header and the grant ring never share a page with the data ring; 4 KiB pages or larger */
#define CDT__LANE_PAGE 4096u

static int is_pow2_64(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

size_t cdt__lane_data_offset(uint32_t grant_slots)
{
    size_t end = CDT__LANE_OFF_GRANTS + (size_t)grant_slots * CDT__LANE_GRANT_SIZE;
    return (end + CDT__LANE_PAGE - 1) / CDT__LANE_PAGE * CDT__LANE_PAGE;
}

int cdt__lane_check_sizes(uint64_t ring_bytes, uint32_t grant_slots, uint32_t frag_bytes)
{
    if (!is_pow2_64(ring_bytes) || ring_bytes < CDT__LANE_RING_MIN ||
        ring_bytes > CDT__LANE_RING_MAX)
        return CDT_ERR_FRAME_MALFORMED;
    if (!is_pow2_64(grant_slots) || grant_slots < CDT__LANE_GRANTS_MIN ||
        grant_slots > CDT__LANE_GRANTS_MAX)
        return CDT_ERR_FRAME_MALFORMED;
    /* at most half the ring: the producer packs one fragment while the consumer reads another */
    if (!is_pow2_64(frag_bytes) || frag_bytes < CDT__LANE_FRAG_MIN || frag_bytes > ring_bytes / 2)
        return CDT_ERR_FRAME_MALFORMED;
    return CDT_SUCCESS;
}

int cdt__lane_check_head_ring(uint64_t head_ring_bytes)
{
    if (!is_pow2_64(head_ring_bytes) || head_ring_bytes < CDT__LANE_HEAD_RING_MIN ||
        head_ring_bytes > CDT__LANE_HEAD_RING_MAX)
        return CDT_ERR_FRAME_MALFORMED;
    return CDT_SUCCESS;
}

/* offer: nonce (16), pid (4), fd (4), ring_bytes (8), grant_slots (4), frag_bytes (4) */
void cdt__lane_offer_encode(const cdt__lane_offer *o, unsigned char out[CDT__LANE_OFFER_SIZE])
{
    memcpy(out, o->nonce, CDT__LANE_NONCE_SIZE);
    cdt__put_u32(out + 16, (uint32_t)o->pid);
    cdt__put_u32(out + 20, (uint32_t)o->fd);
    cdt__put_u64(out + 24, o->ring_bytes);
    cdt__put_u32(out + 32, o->grant_slots);
    cdt__put_u32(out + 36, o->frag_bytes);
}

int cdt__lane_offer_parse(const unsigned char *p, size_t len, cdt__lane_offer *out)
{
    if (p == NULL || out == NULL || len != CDT__LANE_OFFER_SIZE)
        return CDT_ERR_FRAME_MALFORMED;
    cdt__lane_offer o;
    memcpy(o.nonce, p, CDT__LANE_NONCE_SIZE);
    o.pid = (int32_t)cdt__get_u32(p + 16);
    o.fd = (int32_t)cdt__get_u32(p + 20);
    o.ring_bytes = cdt__get_u64(p + 24);
    o.grant_slots = cdt__get_u32(p + 32);
    o.frag_bytes = cdt__get_u32(p + 36);
    if (o.pid <= 0 || o.fd < 0)
        return CDT_ERR_FRAME_MALFORMED;
    int rc = cdt__lane_check_sizes(o.ring_bytes, o.grant_slots, o.frag_bytes);
    if (rc != CDT_SUCCESS)
        return rc;
    *out = o;
    return CDT_SUCCESS;
}

void cdt__lane_format(unsigned char *mem, const cdt__lane_offer *o)
{
    memset(mem, 0, cdt__lane_data_offset(o->grant_slots));
    cdt__put_u32(mem + CDT__LANE_OFF_MAGIC, CDT__LANE_MAGIC);
    cdt__put_u32(mem + CDT__LANE_OFF_VERSION, CDT__LANE_VERSION);
    memcpy(mem + CDT__LANE_OFF_NONCE, o->nonce, CDT__LANE_NONCE_SIZE);
    cdt__put_u64(mem + CDT__LANE_OFF_RING_BYTES, o->ring_bytes);
    cdt__put_u32(mem + CDT__LANE_OFF_GRANT_SLOTS, o->grant_slots);
    cdt__put_u32(mem + CDT__LANE_OFF_FRAG_BYTES, o->frag_bytes);
}

void cdt__lane_format_heads(unsigned char *mem, const cdt__lane_offer *o, uint32_t head_ring_bytes,
                            int32_t doorbell_fd)
{
    cdt__lane_format(mem, o);
    cdt__put_u32(mem + CDT__LANE_OFF_VERSION, CDT__LANE_VERSION_HEADS);
    cdt__put_u32(mem + CDT__LANE_OFF_HEAD_RING_BYTES, head_ring_bytes);
    cdt__put_u32(mem + CDT__LANE_OFF_DOORBELL_FD, (uint32_t)doorbell_fd);
}

int cdt__lane_view(unsigned char *mem, size_t bytes, cdt__lane_role role, const cdt__lane_offer *o,
                   cdt__lane *lane)
{
    if (mem == NULL || o == NULL || lane == NULL ||
        (role != CDT__LANE_PRODUCER && role != CDT__LANE_CONSUMER))
        return CDT_ERR_INVALID_ARG;
    int rc = cdt__lane_check_sizes(o->ring_bytes, o->grant_slots, o->frag_bytes);
    if (rc != CDT_SUCCESS)
        return rc;
    size_t data_off = cdt__lane_data_offset(o->grant_slots);
    if (bytes < data_off || bytes - data_off < o->ring_bytes)
        return CDT_ERR_FRAME_MALFORMED;
    /* bytes past the data ring: none in version 1, the head ring in version 2 (§10.6) */
    uint64_t extra = (uint64_t)(bytes - data_off) - o->ring_bytes;
    /* the header is read once, into private memory: a peer that changes it later changes
     * nothing here */
    unsigned char h[CDT__LANE_OFF_PROD_POS];
    memcpy(h, mem, sizeof h);
    uint32_t version = cdt__get_u32(h + CDT__LANE_OFF_VERSION);
    uint32_t head_ring = cdt__get_u32(h + CDT__LANE_OFF_HEAD_RING_BYTES);
    if (version == CDT__LANE_VERSION) {
        if (extra != 0)
            return CDT_ERR_FRAME_MALFORMED;
        head_ring = 0;
    } else if (version != CDT__LANE_VERSION_HEADS || extra != head_ring ||
               cdt__lane_check_head_ring(head_ring) != CDT_SUCCESS) {
        return CDT_ERR_FRAME_MALFORMED;
    }
    if (cdt__get_u32(h + CDT__LANE_OFF_MAGIC) != CDT__LANE_MAGIC ||
        memcmp(h + CDT__LANE_OFF_NONCE, o->nonce, CDT__LANE_NONCE_SIZE) != 0 ||
        cdt__get_u64(h + CDT__LANE_OFF_RING_BYTES) != o->ring_bytes ||
        cdt__get_u32(h + CDT__LANE_OFF_GRANT_SLOTS) != o->grant_slots ||
        cdt__get_u32(h + CDT__LANE_OFF_FRAG_BYTES) != o->frag_bytes)
        return CDT_ERR_FRAME_MALFORMED;
    memset(lane, 0, sizeof *lane);
    lane->base = mem;
    lane->map_bytes = bytes;
    lane->data_off = data_off;
    lane->ring_bytes = o->ring_bytes;
    lane->grant_slots = o->grant_slots;
    lane->frag_bytes = o->frag_bytes;
    memcpy(lane->nonce, o->nonce, CDT__LANE_NONCE_SIZE);
    lane->role = role;
    lane->memfd = -1;
    lane->pidfd = -1;
    lane->version = version;
    lane->head_ring_bytes = head_ring;
    lane->heads_off = data_off + (size_t)o->ring_bytes;
    lane->doorbell = -1;
    lane->doorbell_rd = -1;
    lane->doorbell_num = head_ring != 0 ? (int32_t)cdt__get_u32(h + CDT__LANE_OFF_DOORBELL_FD) : -1;
    return CDT_SUCCESS;
}

void cdt__lane_record_offer(const cdt__lane_offer *o, unsigned char out[CDT__LANE_RECORD_SIZE])
{
    cdt__put_u32(out, CDT__LANE_RECORD_OFFER_MAGIC);
    cdt__lane_offer_encode(o, out + 4);
}

void cdt__lane_record_none(const char *why, unsigned char out[CDT__LANE_RECORD_SIZE])
{
    memset(out, 0, CDT__LANE_RECORD_SIZE);
    cdt__put_u32(out, CDT__LANE_RECORD_NONE_MAGIC);
    memcpy(out + 4, why, strnlen(why, CDT__LANE_WHY_MAX));
}

int cdt__lane_record_parse(const unsigned char *p, size_t len, cdt__lane_offer *offer,
                           char why[CDT__LANE_WHY_MAX + 1])
{
    if (p == NULL || len != CDT__LANE_RECORD_SIZE)
        return CDT_ERR_FRAME_MALFORMED;
    uint32_t magic = cdt__get_u32(p);
    if (magic == CDT__LANE_RECORD_OFFER_MAGIC)
        return cdt__lane_offer_parse(p + 4, CDT__LANE_OFFER_SIZE, offer) == CDT_SUCCESS
                   ? CDT__LANE_RECORD_OFFER
                   : CDT_ERR_FRAME_MALFORMED;
    if (magic != CDT__LANE_RECORD_NONE_MAGIC)
        return CDT_ERR_FRAME_MALFORMED;
    const unsigned char *w = p + 4;
    size_t n = 0;
    while (n < CDT__LANE_WHY_MAX && w[n] != 0) {
        if (!((w[n] >= 'a' && w[n] <= 'z') || w[n] == '-'))
            return CDT_ERR_FRAME_MALFORMED;
        n++;
    }
    for (size_t i = n; i < CDT__LANE_OFFER_SIZE; i++)
        if (w[i] != 0)
            return CDT_ERR_FRAME_MALFORMED;
    if (n == 0)
        return CDT_ERR_FRAME_MALFORMED;
    memcpy(why, w, n);
    why[n] = '\0';
    return CDT__LANE_RECORD_NONE;
}
