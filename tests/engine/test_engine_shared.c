/*
 * test_engine_shared.c - the struct of block-indexed members over one index list (LAMMPS's
 * atom exchange: a 24-byte position array and three 8-byte arrays gathered at the same
 * particle indices), which commit packs with one list for all members (docs/ENGINE.md,
 * "Commit-time sharing"), against a hand-written gather: whole messages, fragments that
 * start and stop at every byte offset of a two-element stream, unpack, and the iov pieces.
 */
#include "../core/check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NIDX 100 /* more than the 64 blocks below which lists are flattened into runs */
#define DIM 400
#define EXT (DIM * 48) /* one element: the four arrays, 24 + 3 * 8 bytes per particle */

static int64_t idx[NIDX];

/* member a's array starts at a * DIM * 8 inside an element (the position array holds 3 per
 * particle, so it spans the first three eighths), members in the order 24, 8, 8, 8 bytes */
static const int64_t width[4] = {24, 8, 8, 8};
static const int64_t start[4] = {0, 3 * DIM * 8, 4 * DIM * 8, 5 * DIM * 8};

static void hand_pack(const unsigned char *buf, int64_t count, unsigned char *out)
{
    for (int64_t e = 0; e < count; e++)
        for (int a = 0; a < 4; a++)
            for (int64_t i = 0; i < NIDX; i++, out += width[a])
                memcpy(out, buf + e * EXT + start[a] + idx[i] * width[a], (size_t)width[a]);
}

/* the LAMMPS shape, each member its own type (equal ones built separately, as codes do);
 * reversed: member 2's list in the opposite order, which must not share the others' list */
static cdt_type lammps(int reversed)
{
    int64_t d3[NIDX], d1[NIDX], d1r[NIDX];
    for (int64_t i = 0; i < NIDX; i++) {
        d3[i] = 3 * idx[i];
        d1[i] = idx[i];
        d1r[i] = idx[NIDX - 1 - i];
    }
    cdt_type m[4], t;
    CHECK_OK(cdt_type_indexed_block(NIDX, 3, d3, CDT_DOUBLE, &m[0]));
    for (int a = 1; a < 4; a++)
        CHECK_OK(cdt_type_indexed_block(NIDX, 1, reversed && a == 2 ? d1r : d1, CDT_DOUBLE, &m[a]));
    cdt_count bls[4] = {1, 1, 1, 1};
    CHECK_OK(cdt_type_struct(4, bls, start, m, &t));
    for (int a = 0; a < 4; a++)
        cdt_type_free(&m[a]); /* the struct keeps what it needs */
    cdt_type r;
    CHECK_OK(cdt_type_resized(t, 0, EXT, &r));
    cdt_type_free(&t);
    CHECK_OK(cdt_type_commit(&r));
    return r;
}

static void check_layout(int reversed)
{
    cdt_type t = lammps(reversed);
    enum { COUNT = 2, BYTES = COUNT * NIDX * 48 };
    unsigned char *buf = malloc(COUNT * EXT), *back = calloc(COUNT, EXT);
    unsigned char *want = malloc(BYTES), *got = malloc(BYTES);
    for (int64_t i = 0; i < COUNT * EXT; i++)
        buf[i] = (unsigned char)(i * 131 + (i >> 9));
    if (reversed) { /* the hand loop's member 2 walks the list backwards */
        hand_pack(buf, COUNT, want);
        for (int64_t e = 0; e < COUNT; e++)
            for (int64_t i = 0; i < NIDX; i++)
                memcpy(want + e * NIDX * 48 + NIDX * 32 + i * 8,
                       buf + e * EXT + start[2] + idx[NIDX - 1 - i] * 8, 8);
    } else {
        hand_pack(buf, COUNT, want);
    }

    cdt_count pos = 0;
    CHECK_OK(cdt_pack(buf, COUNT, t, got, BYTES, &pos));
    CHECK(pos == BYTES && memcmp(got, want, BYTES) == 0);
    pos = 0;
    CHECK_OK(cdt_unpack(want, BYTES, &pos, back, COUNT, t));
    pos = 0;
    CHECK_OK(cdt_pack(back, COUNT, t, got, BYTES, &pos));
    CHECK(memcmp(got, want, BYTES) == 0);

    /* a stream stopped and resumed anywhere: fragments [a, b) for a over every offset and b at
     * a few lengths past it (one byte, within a run, across members and elements) */
    static const cdt_count lens[] = {1, 5, 8, 23, 800, 2400, 4801, BYTES};
    int bad = 0;
    for (cdt_count a = 0; a < BYTES && !bad; a++)
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]) && !bad; l++) {
            cdt_count n = lens[l] < BYTES - a ? lens[l] : BYTES - a, used = 0;
            cdt_op op;
            memset(got, 0, BYTES);
            CHECK_OK(cdt_op_pack_begin(buf, COUNT, t, &op));
            CHECK_OK(cdt_op_pack(op, a, got + a, n, &used));
            CHECK_OK(cdt_op_end(op));
            if (used != n || memcmp(got + a, want + a, (size_t)n) != 0) {
                fprintf(stderr, "fragment [%lld, %lld) differs\n", (long long)a,
                        (long long)(a + n));
                bad = 1;
            }
        }
    CHECK(!bad);

    /* unpacked in fragments, in reverse order */
    memset(back, 0, COUNT * EXT);
    cdt_op op;
    CHECK_OK(cdt_op_unpack_begin(back, COUNT, t, &op));
    for (cdt_count b = BYTES; b > 0; b -= 777) {
        cdt_count a = b > 777 ? b - 777 : 0;
        CHECK_OK(cdt_op_unpack(op, a, want + a, b - a));
    }
    CHECK_OK(cdt_op_end(op));
    pos = 0;
    CHECK_OK(cdt_pack(back, COUNT, t, got, BYTES, &pos));
    CHECK(memcmp(got, want, BYTES) == 0);

    /* iov: the pieces in packed order cover the same bytes */
    cdt_count npieces = 0, k = 0;
    CHECK_OK(cdt_iov_count(buf, COUNT, t, &npieces));
    cdt_iov *iov = malloc((size_t)npieces * sizeof(*iov));
    CHECK_OK(cdt_iov_get(buf, COUNT, t, 0, npieces, iov, &npieces));
    for (cdt_count i = 0; i < npieces; i++) {
        if (k + (cdt_count)iov[i].len > BYTES || memcmp(iov[i].base, want + k, iov[i].len) != 0) {
            CHECK(!"iov piece differs");
            break;
        }
        k += (cdt_count)iov[i].len;
    }
    CHECK(k == BYTES);
    free(iov);
    free(buf);
    free(back);
    free(want);
    free(got);
    cdt_type_free(&t);
}

int main(void)
{
    uint64_t r = 88172645463325252ull;
    for (int64_t i = 0; i < NIDX; i++) { /* random indices, some repeated (blocks overlap) */
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        idx[i] = (int64_t)(r % DIM);
    }
    check_layout(0);
    check_layout(1);
    return check_report("test_engine_shared");
}
