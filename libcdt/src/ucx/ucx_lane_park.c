/*
 * ucx_lane_park.c - ring heads parked for their receive (docs/TRANSPORT.md §10.6, Hand-off):
 * the consumer copies a record out of the head ring into a slot's buffer (the one private copy)
 * and hands its worker a 32-byte descriptor of it, not its bytes, so that UCX matches the head
 * (tag, mask, order) without copying it again. The head receive that matches a descriptor
 * claims the slot and parses the head from its buffer.
 *
 * A descriptor names a slot, its generation and the worker's park secret (random, never sent to
 * a peer): a peer cannot forge one, and a slot is claimed once. Slots keep their HEAD_MAX
 * buffer for the next record while few are parked (a large record's buffer, its own length,
 * is freed with its slot); beyond PARK_KEEP parked heads (a receiver
 * that posts no receives) a parked buffer is shrunk to its head's bytes, so that memory follows
 * what UCX's unexpected queue would have held. Every function runs with the worker's lock
 * held.
 */
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

#define PARK_MAGIC UINT32_C(0x50544443) /* "CDTP" little-endian */
#define PARK_NONE UINT32_MAX
#define PARK_KEEP 64 /* parked heads that keep a whole head buffer each */

struct cdt__ucx_park_slot {
    unsigned char *buf; /* cap bytes; CDT__UCX_HEAD_MAX while the slot serves records */
    size_t cap, len;
    uint64_t gen;  /* advances at each claim: a descriptor is taken once */
    uint32_t next; /* the next free slot */
    bool used;     /* parked: its descriptor went to the worker */
    bool reserved; /* handed out by cdt__ucx_park_buf, not yet parked or given back */
};

unsigned char *cdt__ucx_park_buf(cdt_ucx_worker w, size_t len, uint32_t *slot)
{
    uint32_t i = w->park_free;
    if (i == PARK_NONE) {
        if (w->park_n == w->park_cap) {
            uint32_t cap = w->park_cap == 0 ? 8 : w->park_cap * 2;
            if (cap <= w->park_cap || cap >= PARK_NONE)
                return NULL;
            cdt__ucx_park_slot *grown = realloc(w->park, cap * sizeof(*grown));
            if (grown == NULL)
                return NULL;
            w->park = grown;
            w->park_cap = cap;
        }
        i = w->park_n++;
        w->park[i] = (cdt__ucx_park_slot){.next = PARK_NONE};
    } else {
        w->park_free = w->park[i].next;
    }
    cdt__ucx_park_slot *s = &w->park[i];
    /* a large record (§10.6, Large records) gets a buffer of its own checked length, freed when
     * its slot is (slot_free: a cap other than HEAD_MAX) */
    size_t want = len > CDT__UCX_HEAD_MAX ? len : CDT__UCX_HEAD_MAX;
    if (s->cap != want) { /* none yet, or a shrunk one that was freed */
        free(s->buf);
        s->cap = 0;
        s->buf = malloc(want);
        if (s->buf == NULL) {
            s->next = w->park_free;
            w->park_free = i;
            return NULL;
        }
        s->cap = want;
    }
    s->reserved = true;
    *slot = i;
    return s->buf;
}

static void slot_free(cdt_ucx_worker w, uint32_t i)
{
    cdt__ucx_park_slot *s = &w->park[i];
    s->used = false;
    s->reserved = false;
    if (s->cap != CDT__UCX_HEAD_MAX) { /* shrunk: not a record's buffer any more */
        free(s->buf);
        s->buf = NULL;
        s->cap = 0;
    }
    s->next = w->park_free;
    w->park_free = i;
}

void cdt__ucx_park_unreserve(cdt_ucx_worker w, uint32_t slot)
{
    slot_free(w, slot);
}

void cdt__ucx_park_commit(cdt_ucx_worker w, uint32_t slot, size_t len,
                          unsigned char desc[CDT__UCX_PARK_DESC_SIZE])
{
    cdt__ucx_park_slot *s = &w->park[slot];
    s->reserved = false;
    s->used = true;
    s->len = len;
    if (++w->park_used > PARK_KEEP && len < s->cap) {
        /* many parked: keep only the head's bytes (realloc shrinks in place) */
        unsigned char *small = realloc(s->buf, len);
        if (small != NULL) {
            s->buf = small;
            s->cap = len;
        }
    }
    cdt__put_u32(desc, PARK_MAGIC);
    cdt__put_u32(desc + 4, slot);
    cdt__put_u64(desc + 8, s->gen);
    memcpy(desc + 16, w->park_secret, 16);
}

bool cdt__ucx_park_claim(cdt_ucx_worker w, const unsigned char *msg, size_t len,
                         const unsigned char **head, size_t *head_len, uint32_t *slot)
{
    if (len != CDT__UCX_PARK_DESC_SIZE || cdt__get_u32(msg) != PARK_MAGIC)
        return false;
    uint32_t i = cdt__get_u32(msg + 4);
    if (i >= w->park_n || !w->park[i].used || w->park[i].gen != cdt__get_u64(msg + 8) ||
        memcmp(msg + 16, w->park_secret, 16) != 0)
        return false;
    cdt__ucx_park_slot *s = &w->park[i];
    s->used = false; /* claimed: the same descriptor again names nothing */
    s->reserved = true;
    s->gen++;
    w->park_used--;
    *head = s->buf;
    *head_len = s->len;
    *slot = i;
    return true;
}

void cdt__ucx_park_release(cdt_ucx_worker w, uint32_t slot)
{
    slot_free(w, slot);
}

size_t cdt__ucx_park_count(cdt_ucx_worker w)
{
    return w->park_used;
}

void cdt__ucx_park_free_all(cdt_ucx_worker w)
{
    for (uint32_t i = 0; i < w->park_n; i++)
        free(w->park[i].buf);
    free(w->park);
    w->park = NULL;
    w->park_n = w->park_cap = w->park_used = 0;
    w->park_free = PARK_NONE;
}
