/*
 * fuzz_lane_heads.c - libFuzzer target: the head ring of a version 2 lane
 * (libcdt/src/lane/lane_heads.c, docs/TRANSPORT.md §10.6). The input is a schedule of calls by
 * both sides of a lane over plain memory (records of any length and tag written by the producer,
 * taken by the consumer, the consumer going to sleep), mixed with a hostile peer's writes to the
 * positions, the asleep word and any byte of the head ring. Any crash, over-read or undefined
 * behaviour is a bug, and so is a broken promise of the component: a record handed out whose
 * length or tag is out of range, a position this side did not reach by its own calls, an error
 * that does not stay, and, while nothing was scribbled, a record that is not the one written.
 * An input whose first byte is 0xB2 runs with large records (§10.6, Large records): a 256 KiB
 * head ring whose consumer announced them, records up to 72 KiB, taken through a getter that
 * must never be asked for more than the bound (other inputs run as before the large records).
 */
#include "lane/lane.h"
#include "fuzz_input.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

/* the byte i of record k */
static unsigned char pat(uint64_t k, size_t i)
{
    return (unsigned char)((k * 131u) ^ (i * 7u) ^ (i >> 8));
}

FUZZ_UNTRACED static void fill(unsigned char *b, uint64_t k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(k, i);
}

FUZZ_UNTRACED static int same(const unsigned char *b, uint64_t k, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(k, i))
            return 0;
    return 1;
}

#define QUEUE 64 /* records the schedule remembers: ring of 128 KiB holds at most 3,276 of 40 */

static unsigned char head[CDT__LANE_HEAD_LARGE_MAX], out[CDT__LANE_HEAD_LARGE_MAX];

#define LARGE_MODE 0xB2

/* the consumer's buffer for a record its checks passed: never longer than the bound */
static size_t get_bound;
static unsigned char *get_out(void *arg, size_t len)
{
    (void)arg;
    check(len >= CDT__LANE_HEAD_MIN && len <= get_bound && len <= sizeof out);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size, 0};
    const int large = size > 0 && data[0] == LARGE_MODE;
    if (large)
        in.at = 1;
    const cdt__lane_offer o = {.pid = 1,
                               .fd = 0,
                               .ring_bytes = CDT__LANE_RING_MIN,
                               .grant_slots = CDT__LANE_GRANTS_MIN,
                               .frag_bytes = CDT__LANE_FRAG_MIN};
    const size_t heads = large ? CDT__LANE_DEFAULT_HEAD_RING : CDT__LANE_HEAD_RING_MIN;
    size_t v1 = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    size_t total = v1 + heads;
    unsigned char *mem = calloc(1, total);
    if (mem == NULL)
        return 0;
    cdt__lane_format_heads(mem, &o, (uint32_t)heads, -1);
    cdt__lane p, c;
    check(cdt__lane_view(mem, total, CDT__LANE_PRODUCER, &o, &p) == CDT_SUCCESS);
    check(cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &o, &c) == CDT_SUCCESS);
    if (large) { /* as cdt__lane_attach_features and the producer's read of it leave them */
        c.own_features = CDT__LANE_FEATURE_HEADS | CDT__LANE_FEATURE_LARGE;
        p.peer_features = c.own_features;
    }
    const size_t bound = cdt__lane_head_bound(&c);
    check(bound == (large ? CDT__LANE_HEAD_LARGE_MAX : CDT__LANE_HEAD_MAX));
    check(cdt__lane_head_bound(&p) == bound);
    get_bound = bound;
    /* records written and not yet taken, while the ring is honest */
    uint64_t q_len[QUEUE], q_tag[QUEUE], q_key[QUEUE];
    unsigned q_first = 0, q_n = 0;
    int scribbled = 0;
    uint64_t written = 0;
    for (int steps = 0; steps < 2048 && in.at < in.n; steps++) {
        int p_err = p.error, c_err = c.error;
        uint64_t p_before = p.heads_pos, c_before = c.heads_read;
        int rc = 0;
        switch (next(&in) % 6) {
        case 0:
        case 1: { /* the producer writes a record */
            size_t len = CDT__LANE_HEAD_MIN + next16(&in) % (bound - 39);
            if (next(&in) % 4 == 0)
                len = CDT__LANE_HEAD_MIN + next(&in) % 64; /* small ones are the usual */
            uint64_t tag = next16(&in) * UINT64_C(0x10001);
            fill(head, written, len);
            rc = cdt__lane_head_put(&p, tag, head, len);
            check(rc == 0 || rc == 1 || rc == CDT_ERR_PEER);
            if (rc == 1) {
                check(p.heads_pos > p_before && p.heads_pos - p_before <= 2 * (16 + len) + 8);
                if (q_n < QUEUE) {
                    unsigned at = (q_first + q_n) % QUEUE;
                    q_len[at] = len;
                    q_tag[at] = tag;
                    q_key[at] = written;
                    q_n++;
                } else {
                    scribbled = 1; /* no longer followed */
                }
                written++;
            }
            break;
        }
        case 2: { /* the consumer takes one */
            uint64_t tag;
            size_t n;
            rc = large ? cdt__lane_head_take_into(&c, &tag, get_out, NULL, &n)
                       : cdt__lane_head_take(&c, &tag, out, CDT__LANE_HEAD_MAX, &n);
            check(rc == 0 || rc == 1 || rc == CDT_ERR_PEER);
            if (rc == 1) {
                check(n >= CDT__LANE_HEAD_MIN && n <= bound && (tag >> 63) == 0);
                check(c.heads_read > c_before && c.heads_read - c_before <= heads);
                if (!scribbled) {
                    check(q_n > 0 && n == q_len[q_first] && tag == q_tag[q_first] &&
                          same(out, q_key[q_first], n));
                    q_first = (q_first + 1) % QUEUE;
                    q_n--;
                }
            } else if (rc == 0 && !scribbled) {
                check(q_n == 0);
            }
            break;
        }
        case 3: { /* the consumer goes to sleep, the producer looks, the consumer wakes */
            rc = cdt__lane_heads_sleep(&c);
            check(rc == 0 || rc == 1 || rc == CDT_ERR_PEER);
            if (rc == 0 && !scribbled)
                check(q_n == 0 && cdt__lane_heads_asleep(&p) == (p.error == CDT_SUCCESS));
            if (next(&in) & 1)
                cdt__lane_heads_awake(&c);
            rc = cdt__lane_heads_pending(&c);
            check(rc == 0 || rc == 1 || rc == CDT_ERR_PEER);
            break;
        }
        case 4: { /* a hostile peer writes a position or the asleep word */
            static const size_t fields[] = {CDT__LANE_OFF_HEADS_POS, CDT__LANE_OFF_HEADS_CONS,
                                            CDT__LANE_OFF_ASLEEP, CDT__LANE_OFF_HEAD_RING_BYTES};
            size_t f = fields[next(&in) % 4];
            uint64_t v;
            memcpy(&v, mem + f, 8);
            unsigned how = next(&in) % 4;
            if (how == 0)
                v += next16(&in);
            else if (how == 1)
                v -= next16(&in);
            else
                v = (uint64_t)next16(&in) << (8 * (next(&in) % 8));
            memcpy(mem + f, &v,
                   f == CDT__LANE_OFF_ASLEEP || f == CDT__LANE_OFF_HEAD_RING_BYTES ? 4 : 8);
            scribbled = 1;
            break;
        }
        default: { /* a hostile peer writes bytes of the head ring */
            size_t off = v1 + (next16(&in) * 8u + next(&in)) % heads;
            size_t n = 1 + next(&in) % 16;
            for (size_t i = 0; i < n && off + i < total; i++)
                mem[off + i] = (unsigned char)next(&in);
            scribbled = 1;
            break;
        }
        }
        /* errors stay; positions move only forward, and only by this side's own calls */
        check(p_err == CDT_SUCCESS || p.error == p_err);
        check(c_err == CDT_SUCCESS || c.error == c_err);
        check(p.heads_pos >= p_before && c.heads_read >= c_before);
        check(p.heads_pos % 8 == 0 && c.heads_read % 8 == 0);
        check(p.head_ring_bytes == heads && c.head_ring_bytes == heads);
        (void)rc;
    }
    free(mem);
    return 0;
}
