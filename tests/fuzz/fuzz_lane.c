/*
 * fuzz_lane.c - libFuzzer target: the lane's control data (libcdt/src/lane, docs/TRANSPORT.md
 * §10). The first 40 bytes are an offer as a head message carries it, parsed as a consumer
 * parses it, and the first 44 the record that follows an endpoint's id on its stream (an offer
 * or a no-lane record); the rest is a schedule of calls by both sides of a lane over plain memory,
 * mixed with a hostile peer's writes to any byte of the header and the grant ring (positions,
 * counts, grants, sizes), and objects whose grant ends with a commit word (§10.3, Commit in the
 * ring). Any crash, over-read or undefined behaviour is a bug, and so is a
 * broken promise of the component: a span outside the data ring or longer than a fragment, a
 * position this side did not reach by its own calls, an error that does not stay.
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

static void offer_roundtrip(const uint8_t *data, size_t size)
{
    cdt__lane_offer o;
    size_t n = size < CDT__LANE_OFFER_SIZE ? size : CDT__LANE_OFFER_SIZE;
    if (cdt__lane_offer_parse(data, n, &o) != CDT_SUCCESS)
        return;
    check(n == CDT__LANE_OFFER_SIZE && o.pid > 0 && o.fd >= 0);
    check(cdt__lane_check_sizes(o.ring_bytes, o.grant_slots, o.frag_bytes) == CDT_SUCCESS);
    unsigned char again[CDT__LANE_OFFER_SIZE];
    cdt__lane_offer_encode(&o, again);
    check(memcmp(again, data, CDT__LANE_OFFER_SIZE) == 0);
}

static uint64_t next64(input *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)next(in) << (8 * i);
    return v;
}

/* the first CDT__LANE_RECORD_SIZE bytes as the record that follows an endpoint's id on its
 * stream: an offer or a no-lane record parses only when it is exactly what its encoder
 * writes */
static void record_roundtrip(const uint8_t *data, size_t size)
{
    if (size < CDT__LANE_RECORD_SIZE)
        return;
    cdt__lane_offer o;
    char why[CDT__LANE_WHY_MAX + 1];
    unsigned char again[CDT__LANE_RECORD_SIZE];
    int kind = cdt__lane_record_parse(data, CDT__LANE_RECORD_SIZE, &o, why);
    if (kind == CDT__LANE_RECORD_OFFER) {
        cdt__lane_record_offer(&o, again);
    } else if (kind == CDT__LANE_RECORD_NONE) {
        size_t n = strlen(why);
        check(n >= 1 && n <= CDT__LANE_WHY_MAX);
        for (size_t i = 0; i < n; i++)
            check((why[i] >= 'a' && why[i] <= 'z') || why[i] == '-');
        cdt__lane_record_none(why, again);
    } else {
        check(kind == CDT_ERR_FRAME_MALFORMED);
        return;
    }
    check(memcmp(again, data, CDT__LANE_RECORD_SIZE) == 0);
}

/* an object whose grant ends with a commit word (docs/TRANSPORT.md §10.3, Commit in the
 * ring): the producer's pack writes stream bytes, then the word with cdt__lane_word_put; the
 * consumer's unpack keeps the stream's bytes and takes the word's with cdt__lane_word_take */
typedef struct word_obj {
    uint64_t stream_len;
    unsigned char word[CDT__LANE_WORD_SIZE]; /* the producer's */
    unsigned char got[CDT__LANE_WORD_SIZE];  /* the consumer's private copy */
    uint64_t stream_seen;                    /* stream bytes the consumer's unpack got */
} word_obj;

static int word_pack(void *state, uint64_t offset, unsigned char *dst, size_t n, size_t *used)
{
    word_obj *o = state;
    if (offset >= o->stream_len) {
        *used = cdt__lane_word_put(o->word, o->stream_len, offset, dst, n);
        check(*used > 0 && *used <= n && offset + *used <= o->stream_len + CDT__LANE_WORD_SIZE);
        return CDT_SUCCESS;
    }
    size_t k = o->stream_len - offset < n ? (size_t)(o->stream_len - offset) : n;
    memset(dst, 0x5C, k);
    *used = k;
    return CDT_SUCCESS;
}

static int word_unpack(void *state, uint64_t offset, const unsigned char *src, size_t n)
{
    word_obj *o = state;
    check(offset + n <= o->stream_len + CDT__LANE_WORD_SIZE);
    size_t k = cdt__lane_word_take(o->got, o->stream_len, offset, src, n);
    /* the stream's bytes of the piece: all of them before the stream's end, none after it */
    uint64_t before = offset >= o->stream_len ? 0 : o->stream_len - offset;
    check(k == (before < n ? before : n));
    o->stream_seen += k;
    return CDT_SUCCESS;
}

/* one object with a word through a lane that has nothing in flight, both sides taking turns
 * until it is through or a side stops (a hostile write broke the lane). Through whole, the
 * consumer's copy of the word is the producer's, and it got exactly the stream's bytes. */
static void word_object(cdt__lane *p, cdt__lane *c, input *in)
{
    if (p->error || c->error || cdt__lane_position(c) != c->granted_end ||
        cdt__lane_position(p) != c->granted_end || p->grants_taken != c->grants_posted)
        return;
    word_obj o = {.stream_len = next16(in) * (uint64_t)(1 + next(in) % 4)};
    for (int i = 0; i < CDT__LANE_WORD_SIZE; i++)
        o.word[i] = (unsigned char)next(in);
    uint64_t start, out = 0, got = 0, len = o.stream_len + CDT__LANE_WORD_SIZE;
    if (cdt__lane_post_grant(c, 7, len, &start) != CDT_SUCCESS)
        return;
    cdt__lane_grant g;
    if (cdt__lane_take_grant(p, &g) != 1)
        return;
    check(g.key == 7 && g.stream_len == len);
    int po = 0, pi = 0;
    for (int turns = 0; turns < 4096 && (po != 1 || pi != 1); turns++) {
        if (po != 1 && (po = cdt__lane_pump_out(p, word_pack, &o, &out, len)) < 0)
            return;
        if (pi != 1 && (pi = cdt__lane_pump_in(c, word_unpack, &o, &got, len, NULL)) < 0)
            return;
    }
    check(po == 1 && pi == 1);
    check(o.stream_seen == o.stream_len && memcmp(o.got, o.word, CDT__LANE_WORD_SIZE) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    offer_roundtrip(data, size);
    record_roundtrip(data, size);
    if (size <= CDT__LANE_OFFER_SIZE)
        return 0;
    input in = {data + CDT__LANE_OFFER_SIZE, size - CDT__LANE_OFFER_SIZE, 0};
    cdt__lane_offer o = {.pid = 1,
                         .fd = 0,
                         .ring_bytes = CDT__LANE_RING_MIN,
                         .grant_slots = CDT__LANE_GRANTS_MIN,
                         .frag_bytes = CDT__LANE_FRAG_MIN};
    size_t total = cdt__lane_data_offset(o.grant_slots) + (size_t)o.ring_bytes;
    unsigned char *mem = calloc(1, total);
    if (mem == NULL)
        return 0;
    cdt__lane_format(mem, &o);
    cdt__lane p, c;
    check(cdt__lane_view(mem, total, CDT__LANE_PRODUCER, &o, &p) == CDT_SUCCESS);
    check(cdt__lane_view(mem, total, CDT__LANE_CONSUMER, &o, &c) == CDT_SUCCESS);
    const unsigned char *ring = mem + p.data_off;
    static const size_t fields[] = {CDT__LANE_OFF_PROD_POS, CDT__LANE_OFF_GRANTS_TAKEN,
                                    CDT__LANE_OFF_CONS_POS, CDT__LANE_OFF_GRANTS_POSTED,
                                    CDT__LANE_OFF_GRANTS,   CDT__LANE_OFF_GRANTS + 8};
    uint64_t prod_before, cons_before;
    unsigned sum = 0;
    for (int steps = 0; steps < 4096 && in.at < in.n; steps++) {
        int p_err = p.error, c_err = c.error;
        prod_before = cdt__lane_position(&p);
        cons_before = cdt__lane_position(&c);
        int rc = 0;
        /* op 255 (which earlier inputs read as op 3): an object with its commit word after the
         * stream, while nothing else moves */
        unsigned op = next(&in);
        if (op == 255)
            word_object(&p, &c, &in);
        else
            switch (op % 7) {
            case 0: { /* the consumer grants an object whose length its matched head gave */
                uint64_t start, len = next16(&in) * (uint64_t)(1 + next(&in) % 8);
                uint64_t end_before = c.granted_end;
                rc = cdt__lane_post_grant(&c, next16(&in), len, &start);
                if (rc == CDT_SUCCESS)
                    check(start == end_before && c.granted_end == end_before + len);
                break;
            }
            case 1: {
                cdt__lane_grant g;
                rc = cdt__lane_take_grant(&p, &g);
                check(rc == 0 || rc == 1 || rc == CDT_ERR_PEER);
                break;
            }
            case 2: { /* the producer writes part of a span and publishes it */
                unsigned char *dst;
                size_t n;
                rc = cdt__lane_write_span(&p, &dst, &n);
                if (rc == CDT_SUCCESS) {
                    check(dst >= ring && dst + n <= ring + o.ring_bytes && n <= o.frag_bytes);
                    size_t k = next16(&in) % (n + 1);
                    memset(dst, 0xA5, k);
                    check(cdt__lane_publish(&p, k) == CDT_SUCCESS);
                    check(cdt__lane_position(&p) == prod_before + k);
                }
                break;
            }
            case 3: { /* the consumer reads part of a span and releases it */
                const unsigned char *src;
                size_t n;
                rc = cdt__lane_read_span(&c, &src, &n);
                if (rc == CDT_SUCCESS) {
                    check(src >= ring && src + n <= ring + o.ring_bytes);
                    check(cons_before + n <= c.granted_end);
                    for (size_t i = 0; i < n; i++)
                        sum += src[i];
                    size_t k = next16(&in) % (n + 1);
                    check(cdt__lane_release(&c, k) == CDT_SUCCESS);
                    check(cdt__lane_position(&c) == cons_before + k);
                }
                break;
            }
            case 4: /* the hostile peer: one byte anywhere in the header and the grant ring */
                mem[next16(&in) % p.data_off] = (unsigned char)next(&in);
                break;
            case 5: { /* the hostile peer: a whole position, count or grant */
                uint64_t v = next64(&in);
                memcpy(mem + fields[next(&in) % (sizeof fields / sizeof fields[0])], &v, 8);
                break;
            }
            case 6: { /* releases and publications beyond the last span are refused */
                check(cdt__lane_publish(&p, p.span + 1) != CDT_SUCCESS);
                check(cdt__lane_release(&c, c.span + 1) != CDT_SUCCESS);
                break;
            }
            }
        check(rc == CDT_SUCCESS || rc == 0 || rc == 1 || rc == CDT_ERR_BUSY || rc == CDT_ERR_PEER ||
              rc == CDT_ERR_INVALID_ARG);
        /* errors stay; positions only grow, and only by this side's own calls */
        check(p_err == CDT_SUCCESS || p.error == p_err);
        check(c_err == CDT_SUCCESS || c.error == c_err);
        check(cdt__lane_position(&p) >= prod_before && cdt__lane_position(&c) >= cons_before);
        check(cdt__lane_position(&c) <= c.granted_end);
        check(cdt__lane_position(&p) - p.cons_seen <= o.ring_bytes);
    }
    free(mem);
    return (int)(sum & 0);
}
