/*
 * cases_lane_split.c - large regions copied by both processes (docs/TRANSPORT.md §10.3, Regions
 * moved by both cores): on a lane that splits, objects of 1 to 1,024 regions of 8 KiB and more
 * (32 KiB of them at least) arrive byte for byte with both sides' split counters at one per
 * object, smaller regions or fewer bytes of them do not split, a region count above
 * the table's bound goes through the stream instead, small regions beside large ones stay in
 * the stream; a receive refused by its limits, and objects whose sender's own region cannot be
 * read (in the sender's share, and in the receiver's), fail cleanly while the endpoint's next
 * object arrives whole; CDT_UCX_LANE_SPLIT=off moves the same objects through the stream, and
 * a misspelt value is refused; a derived type's records as their memory (cdt_type_padded) split
 * as one region, gaps included. lane_split_revoke: a receive canceled, and one whose endpoint
 * closes, while the sender holds its claim (below).
 */
#include "cases.h"

#include <sys/mman.h>

/* 1: the lane splits (both counters move); 0: CDT_UCX_LANE_SPLIT=off */
static int expect_split;

/* double_vec objects: a count of arrays of int32 each, or the lengths of each */
typedef struct shape {
    cdt_count n, len;
    const cdt_count *lens; /* NULL: n arrays of len */
    int split;             /* 1: goes SPLIT where the lane splits */
    int head;              /* 1: one head message carries it where it does not split */
} shape;
static const cdt_count mixed[] = {25, 16384, 7, 300000}; /* 100 B, 64 KiB, 28 B, 1.2 MB */
static const shape shapes[] = {
    {4, 2048, NULL, 1, 0},     /* four regions of 8 KiB: the split's minimum region and total */
    {3, 2048, NULL, 0, 1},     /* three: 24 KiB of them, below the total (one head message) */
    {16, 2047, NULL, 0, 0},    /* 8,188-byte regions, below the minimum: through the stream */
    {1, 16384, NULL, 1, 0},    /* one region of 64 KiB */
    {8, 32768, NULL, 1, 0},    /* 128 KiB regions: the demo's double_vec_128k */
    {3, 100003, NULL, 1, 0},   /* 400,012 bytes each: no page multiple */
    {64, 16384, NULL, 1, 0},   /* 4 MiB in 64 regions */
    {1024, 16384, NULL, 1, 0}, /* the source table's bound (IOV_MAX), 64 MiB */
    {1025, 16384, NULL, 0, 0}, /* one more: through the stream */
    {4, 0, mixed, 1, 0},       /* small regions in the stream, large ones split */
    {2, 524288, NULL, 1, 0},   /* 2 MiB regions */
};
enum {
    NSHAPES = sizeof(shapes) / sizeof(shapes[0]),
    LIMITED = 60,
    SHARE_SENDER = 61,
    SHARE_RECEIVER = 62,
    AFTER = 63,
    STRIDED = 64,
    PADDED = 65
};

/* A derived type's records as their memory (cdt_type_padded): 65,536 struct_simple, one
 * contiguous region of 1.5 MiB that splits like a custom type's, gaps included */
enum { PADDED_N = 65536 };
static cdt_type padded_type(void)
{
    cdt_type t;
    CHECK_RC(struct_simple_padded_type_create(&t));
    return t;
}
static unsigned char padded_byte(size_t i)
{
    return (unsigned char)(i * 13 + 5);
}

/* An object of one region of SO_N int32 that the sender keeps contiguous and the receiver
 * takes every other int32 of a twice longer array (a vector type: more than one piece), so the
 * receiver's destination is a staging buffer written through the decoder when the word is in.
 * The packed stream holds nothing but the region's length (8 bytes). */
enum { SO_N = 65536 }; /* 256 KiB */
typedef struct strided_obj {
    int32_t *data;
    int64_t n;
    int strided; /* the receiver's layout */
} strided_obj;
static cdt_type so_vector;

static int so_query(void *state, const void *buf, cdt_count count, cdt_count *packed)
{
    (void)state;
    (void)buf;
    *packed = 8 * count;
    return CDT_SUCCESS;
}
static int so_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    (void)count;
    const strided_obj *o = buf;
    cdt_count k = 8 - offset < dst_size ? 8 - offset : dst_size;
    memcpy(dst, (const char *)&o->n + offset, (size_t)k);
    *used = k;
    return CDT_SUCCESS;
}
static int so_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                     cdt_count n)
{
    (void)state;
    (void)count;
    strided_obj *o = buf;
    if (offset + n > 8)
        return CDT_ERR_TRUNCATED;
    memcpy((char *)&o->n + offset, src, (size_t)n);
    if (offset + n == 8) {
        if (o->n != SO_N)
            return CDT_ERR_TRUNCATED;
        o->data = calloc((size_t)(o->strided ? 2 * SO_N : SO_N), sizeof(int32_t));
        if (o->data == NULL)
            return CDT_ERR_NO_MEMORY;
    }
    return CDT_SUCCESS;
}
static int so_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    (void)buf;
    *n = count;
    return CDT_SUCCESS;
}
static int so_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                      cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    (void)n;
    strided_obj *o = buf;
    bases[0] = o->data;
    lens[0] = o->strided ? 1 : SO_N;
    types[0] = o->strided ? so_vector : CDT_INT32;
    return CDT_SUCCESS;
}
static cdt_type so_type(void)
{
    CHECK_RC(cdt_type_vector(SO_N, 1, 2, CDT_INT32, &so_vector));
    CHECK_RC(cdt_type_commit(&so_vector));
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, so_query, so_pack, so_unpack, so_region_count,
                                    so_regions, NULL, 1, &t));
    return t;
}

static int make(double_vec *v, const shape *s, int seed)
{
    if (s->lens == NULL)
        return double_vec_init(v, s->n, s->len, seed);
    v->n = s->n;
    v->lens = calloc((size_t)s->n, sizeof(cdt_count));
    v->data = calloc((size_t)s->n, sizeof(int32_t *));
    CHECK(v->lens != NULL && v->data != NULL);
    for (cdt_count i = 0; i < s->n; i++) {
        v->lens[i] = s->lens[i];
        v->data[i] = malloc((size_t)s->lens[i] * sizeof(int32_t));
        CHECK(v->data[i] != NULL);
        for (cdt_count j = 0; j < s->lens[i]; j++)
            v->data[i][j] = (int32_t)(seed * 7919 + i * 131 + j);
    }
    return CDT_SUCCESS;
}

static uint64_t stat_of(peer *p, uint64_t field)
{
    cdt_ucx_worker_stats st = {.field_mask = field};
    CHECK_RC(cdt_ucx_worker_stats_get(p->w, &st));
    return field == CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT ? st.lane_split_sent
                                                         : st.lane_split_received;
}

/* two regions of 1 MiB in one mapping, one of them unreadable: the first is the sender's share
 * (it pushes it), the second the receiver's (it pulls it) */
static void unreadable(double_vec *v, int which)
{
    v->n = 2;
    v->lens = calloc(2, sizeof(cdt_count));
    v->data = calloc(2, sizeof(int32_t *));
    int32_t *base =
        mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(v->lens != NULL && v->data != NULL && base != MAP_FAILED);
    memset(base, 0x11, 2u << 20);
    for (int i = 0; i < 2; i++) {
        v->lens[i] = (1 << 20) / 4;
        v->data[i] = base + (size_t)i * ((1 << 20) / 4);
    }
    CHECK(mprotect(v->data[which], 1 << 20, PROT_NONE) == 0);
}

static void split_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    for (int k = 0; k < NSHAPES; k++) {
        double_vec v;
        CHECK_RC(make(&v, &shapes[k], 20 + k));
        uint64_t sent = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT),
                 split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT);
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), 10 + k, T_TIMEOUT_MS));
        lane_ack_recv(p); /* the receiver checked it */
        uint64_t ds = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT) - split;
        fprintf(stderr, "%lld regions: %s\n", (long long)shapes[k].n, ds ? "split" : "not split");
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - sent == (uint64_t)!shapes[k].head);
        CHECK(ds == (uint64_t)(expect_split && shapes[k].split));
        double_vec_clear(&v);
    }
    cdt_type pt = padded_type();
    unsigned char *recs = malloc(PADDED_N * sizeof(struct_simple));
    CHECK(recs != NULL);
    for (size_t i = 0; i < PADDED_N * sizeof(struct_simple); i++)
        recs[i] = padded_byte(i);
    uint64_t psplit = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT);
    CHECK_RC(cdt_ucx_send(p->ep, recs, PADDED_N, pt, PADDED, T_TIMEOUT_MS));
    lane_ack_recv(p);
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT) - psplit == (uint64_t)expect_split);
    free(recs);
    cdt_type_free(&pt);
    if (!expect_split)
        return;
    /* refused by the receiver's limits: this side completes all the same */
    double_vec v;
    CHECK_RC(double_vec_init(&v, 4, 32768, 5));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), LIMITED, T_TIMEOUT_MS));
    double_vec_clear(&v);
    /* the sender's own region unreadable in its share: its push fails, so does its send, and
     * the word tells the receiver; in the receiver's share: the receiver's read fails, the
     * send completes (its own memory was read by the peer, as a send buffer must be readable) */
    double_vec bad;
    unreadable(&bad, 0);
    int rc = cdt_ucx_send(p->ep, &bad, 1, double_vec_type(), SHARE_SENDER, T_TIMEOUT_MS);
    fprintf(stderr, "unreadable region in the sender's share: the send %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_INVALID_ARG);
    CHECK(munmap(bad.data[0], 2u << 20) == 0);
    free(bad.lens);
    free(bad.data);
    unreadable(&bad, 1);
    CHECK_RC(cdt_ucx_send(p->ep, &bad, 1, double_vec_type(), SHARE_RECEIVER, T_TIMEOUT_MS));
    CHECK(munmap(bad.data[0], 2u << 20) == 0);
    free(bad.lens);
    free(bad.data);
    CHECK_RC(double_vec_init(&v, 2, 65536, 6));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), AFTER, T_TIMEOUT_MS));
    double_vec_clear(&v);
    lane_ack_recv(p);
    /* a destination in more than one piece: the receiver's staging buffer */
    cdt_type t = so_type();
    strided_obj o = {.n = SO_N, .data = malloc(SO_N * sizeof(int32_t))};
    CHECK(o.data != NULL);
    for (int i = 0; i < SO_N; i++)
        o.data[i] = i * 3 + 1;
    uint64_t split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT);
    CHECK_RC(cdt_ucx_send(p->ep, &o, 1, t, STRIDED, T_TIMEOUT_MS));
    lane_ack_recv(p);
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT) - split == 1);
    free(o.data);
    cdt_type_free(&t);
    cdt_type_free(&so_vector);
}

static void split_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int k = 0; k < NSHAPES; k++) {
        uint64_t split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED);
        double_vec v = {0}, want;
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), 10 + k, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS));
        CHECK_RC(make(&want, &shapes[k], 20 + k));
        CHECK(double_vec_equal(&v, &want));
        CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED) - split ==
              (uint64_t)(expect_split && shapes[k].split));
        double_vec_clear(&v);
        double_vec_clear(&want);
        lane_ack_send(p);
    }
    cdt_type pt = padded_type();
    unsigned char *recs = calloc(PADDED_N, sizeof(struct_simple));
    CHECK(recs != NULL);
    uint64_t psplit = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED);
    CHECK_RC(cdt_ucx_recv(p->w, recs, PADDED_N, pt, PADDED, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    size_t wrong = 0;
    for (size_t i = 0; i < PADDED_N * sizeof(struct_simple); i++)
        wrong += recs[i] != padded_byte(i);
    fprintf(stderr, "%d records as their memory: %zu bytes wrong, %s\n", PADDED_N, wrong,
            stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED) > psplit ? "split" : "not split");
    CHECK(wrong == 0);
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED) - psplit == (uint64_t)expect_split);
    free(recs);
    cdt_type_free(&pt);
    lane_ack_send(p);
    if (!expect_split)
        return;
    double_vec v = {0};
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES,
                              .max_frame_bytes = 4096};
    int rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), LIMITED, CDT_UCX_TAG_MASK_FULL, &rp, NULL,
                          T_TIMEOUT_MS);
    fprintf(stderr, "512 KiB against max_frame_bytes 4096: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_LIMIT && v.n == 0);
    rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), SHARE_SENDER, CDT_UCX_TAG_MASK_FULL, NULL,
                      NULL, T_TIMEOUT_MS);
    fprintf(stderr, "its sender's share unreadable: the receive %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_FRAME_TRUNCATED);
    double_vec_clear(&v);
    v = (double_vec){0};
    rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), SHARE_RECEIVER, CDT_UCX_TAG_MASK_FULL, NULL,
                      NULL, T_TIMEOUT_MS);
    fprintf(stderr, "the receiver's share unreadable: the receive %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_FRAME_MALFORMED);
    double_vec_clear(&v);
    v = (double_vec){0};
    double_vec want;
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), AFTER, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&want, 2, 65536, 6));
    CHECK(double_vec_equal(&v, &want));
    double_vec_clear(&v);
    double_vec_clear(&want);
    lane_ack_send(p);
    cdt_type t = so_type();
    strided_obj o = {.strided = 1};
    uint64_t split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED);
    CHECK_RC(
        cdt_ucx_recv(p->w, &o, 1, t, STRIDED, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED) - split == 1);
    int bad = 0;
    for (int i = 0; i < SO_N; i++)
        bad += o.data[2 * i] != i * 3 + 1 || o.data[2 * i + 1] != 0;
    fprintf(stderr, "a destination in %d pieces, through a staging buffer: %d ints wrong\n", SO_N,
            bad);
    CHECK(bad == 0);
    free(o.data);
    lane_ack_send(p);
    cdt_type_free(&t);
    cdt_type_free(&so_vector);
}

/* ---- a receive that ends while its sender holds its claim (docs/TRANSPORT.md §10.3, Regions
 * moved by both cores, rule 6). The sender's worker has CDT_UCX_TEST_SPLIT_HOLD_MS: it claims
 * each record HOLD_MS after the object's stream, the window in which the receiver cancels
 * (the cancel completes before the send does: the record was revoked, not waited for) and then
 * closes its endpoint (the receive completes; nothing is written into its memory later; here
 * the sender also learns of the close through UCX before its claim, so the window the
 * revocation closes for a lane's end, a sender that learns later, is lane.record_claim's). ---- */
enum { HOLD_MS = 1500, RV_CANCEL = 70, RV_CANCELED = 71, RV_CLOSE = 72, RV_WORDS = 262144 };

/* progress until q completes, or `other` does first (then 1, q still pending) */
static int spin_until(peer *p, cdt_ucx_request q, cdt_ucx_request other)
{
    for (;;) {
        if (other != NULL && cdt_ucx_request_test(other) != CDT_INPROGRESS)
            return 1;
        if (cdt_ucx_request_test(q) != CDT_INPROGRESS)
            return 0;
        cdt_ucx_worker_progress(p->w);
    }
}

static void revoke_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    wait_lane(p);
    double_vec v;
    CHECK_RC(double_vec_init(&v, 2, RV_WORDS, 9)); /* 2 x 1 MiB: SPLIT */
    uint64_t split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT);
    cdt_ucx_request q, canceled;
    int64_t word = 0;
    CHECK_RC(cdt_ucx_irecv(p->w, &word, 1, CDT_INT64, RV_CANCELED, CDT_UCX_TAG_MASK_FULL, NULL,
                           &canceled));
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), RV_CANCEL, &q));
    /* the receiver's word that its cancel completed comes while this send still holds */
    int first = spin_until(p, q, canceled);
    fprintf(stderr, "the receiver's cancel completed %s this send\n", first ? "before" : "after");
    CHECK(first == 1);
    CHECK_RC(cdt_ucx_request_wait(canceled, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(canceled));
    /* the claim finds the record revoked: nothing pushed, the send completes */
    CHECK_RC(cdt_ucx_request_wait(q, T_TIMEOUT_MS));
    CHECK_RC(cdt_ucx_request_free(q));
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT) - split == 1);
    /* the receiver closes its endpoint while this side holds the next claim */
    CHECK_RC(cdt_ucx_isend(p->ep, &v, 1, double_vec_type(), RV_CLOSE, &q));
    int rc = cdt_ucx_request_wait(q, T_TIMEOUT_MS);
    fprintf(stderr, "the send whose receiver closed: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_SUCCESS || rc == CDT_ERR_PEER);
    CHECK_RC(cdt_ucx_request_free(q));
    double_vec_clear(&v);
}

/* the receive's arrays, written by this side after the receive completed */
static void overwrite(double_vec *v)
{
    for (cdt_count i = 0; i < v->n; i++)
        if (v->data != NULL && v->data[i] != NULL)
            memset(v->data[i], 0x5a, (size_t)v->lens[i] * sizeof(int32_t));
}

static int overwritten_still(const double_vec *v)
{
    int arrays = 0;
    for (cdt_count i = 0; i < v->n; i++) {
        if (v->data == NULL || v->data[i] == NULL)
            continue;
        arrays++;
        for (cdt_count j = 0; j < v->lens[i]; j++)
            if (v->data[i][j] != 0x5a5a5a5a)
                return -1;
    }
    return arrays;
}

static void revoke_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int round = 0; round < 2; round++) {
        double_vec v = {0};
        cdt_ucx_request r;
        CHECK_RC(cdt_ucx_irecv(p->w, &v, 1, double_vec_type(), round == 0 ? RV_CANCEL : RV_CLOSE,
                               CDT_UCX_TAG_MASK_FULL, NULL, &r));
        /* the stream comes and the record goes (the arrays exist once the stream is in); the
         * sender then holds its claim for HOLD_MS */
        int64_t t0 = now_ms();
        while ((v.data == NULL || v.data[v.n - 1] == NULL) && now_ms() - t0 < T_TIMEOUT_MS)
            cdt_ucx_worker_progress(p->w);
        CHECK(v.data != NULL && v.data[v.n - 1] != NULL);
        for (int64_t t1 = now_ms(); now_ms() - t1 < 50;)
            cdt_ucx_worker_progress(p->w); /* the record posted */
        int rc;
        if (round == 0) {
            CHECK_RC(cdt_ucx_request_cancel(r));
            rc = cdt_ucx_request_wait(r, T_TIMEOUT_MS);
        } else {
            cdt_ucx_ep_close(p->ep, 2000);
            p->ep = NULL;
            rc = cdt_ucx_request_wait(r, T_TIMEOUT_MS);
        }
        fprintf(stderr, "%s: the receive %s\n", round == 0 ? "canceled" : "endpoint closed",
                cdt_err_name(rc));
        CHECK(rc == (round == 0 ? CDT_ERR_CANCELED : CDT_ERR_PEER));
        CHECK_RC(cdt_ucx_request_free(r));
        /* the memory is this program's again: written, and never written by the sender */
        overwrite(&v);
        if (round == 0) {
            int64_t word = 1;
            CHECK_RC(cdt_ucx_send(p->ep, &word, 1, CDT_INT64, RV_CANCELED, T_TIMEOUT_MS));
        }
        /* past the sender's claim (it holds HOLD_MS from its stream's end) */
        for (int64_t t1 = now_ms(); now_ms() - t1 < HOLD_MS + 1000;)
            cdt_ucx_worker_progress(p->w);
        int arrays = overwritten_still(&v);
        fprintf(stderr, "%d arrays after the sender's claim: %s\n", arrays,
                arrays > 0 ? "as this side wrote them" : "WRITTEN BY THE SENDER");
        CHECK(arrays == v.n);
        double_vec_clear(&v);
    }
}

/* a pair on lanes whose workers have CDT_UCX_TEST_SPLIT_HOLD_MS=<prefix>HOLD_MS (the sender's
 * hold: the receiver sends no SPLIT object) */
static int run_with_split_hold(const char *prefix, side_fn *server, side_fn *client)
{
    static const cdt_ucx_worker_params lane = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    char hold[24];
    snprintf(hold, sizeof hold, "%s%d", prefix, (int)HOLD_MS);
    setenv("CDT_UCX_TEST_SPLIT_HOLD_MS", hold, 1);
    int rc = run_pair(server, client, &lane, &lane, 0);
    unsetenv("CDT_UCX_TEST_SPLIT_HOLD_MS");
    return rc;
}

int lane_split_revoke_case(void)
{
    return run_with_split_hold("", revoke_server, revoke_client);
}

/* ---- a receive that ends while the sender pushes (rule 6): the sender's worker has
 * CDT_UCX_TEST_SPLIT_HOLD_MS=push:HOLD_MS, it claims each record at once and pushes HOLD_MS
 * later. The receiver cancels inside that window: its receive is held until the push returned
 * (the arrays hold the sender's bytes, its share included, when the cancel completes), and
 * the sender writes nothing into them afterwards. ---- */
enum { HELD = 73 };

static void held_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    wait_lane(p);
    double_vec v;
    CHECK_RC(double_vec_init(&v, 2, RV_WORDS, 10)); /* 2 x 1 MiB: SPLIT */
    uint64_t split = stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT);
    /* the claim succeeded, the push happened: the send completes as any */
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), HELD, T_TIMEOUT_MS));
    CHECK(stat_of(p, CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT) - split == 1);
    double_vec_clear(&v);
    lane_ack_recv(p);
}

static void held_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    double_vec v = {0}, want;
    cdt_ucx_request r;
    CHECK_RC(cdt_ucx_irecv(p->w, &v, 1, double_vec_type(), HELD, CDT_UCX_TAG_MASK_FULL, NULL, &r));
    int64_t t0 = now_ms();
    while ((v.data == NULL || v.data[v.n - 1] == NULL) && now_ms() - t0 < T_TIMEOUT_MS)
        cdt_ucx_worker_progress(p->w);
    CHECK(v.data != NULL && v.data[v.n - 1] != NULL);
    for (int64_t t1 = now_ms(); now_ms() - t1 < 50;)
        cdt_ucx_worker_progress(p->w); /* the record posted, claimed, this side's share read */
    CHECK_RC(cdt_ucx_request_cancel(r));
    int rc = cdt_ucx_request_wait(r, T_TIMEOUT_MS);
    CHECK_RC(double_vec_init(&want, 2, RV_WORDS, 10));
    int whole = double_vec_equal(&v, &want);
    fprintf(stderr, "canceled inside the sender's push: the receive %s, its arrays %s\n",
            cdt_err_name(rc), whole ? "hold the sender's object" : "DO NOT HOLD THE PUSH");
    CHECK(rc == CDT_ERR_CANCELED && whole);
    CHECK_RC(cdt_ucx_request_free(r));
    overwrite(&v);
    progress_for(p, 300); /* the word comes and goes */
    int arrays = overwritten_still(&v);
    fprintf(stderr, "%d arrays after the word: %s\n", arrays,
            arrays > 0 ? "as this side wrote them" : "WRITTEN BY THE SENDER");
    CHECK(arrays == v.n);
    double_vec_clear(&v);
    double_vec_clear(&want);
    lane_ack_send(p);
}

int lane_split_held_case(void)
{
    return run_with_split_hold("push:", held_server, held_client);
}

int lane_split_case(void)
{
    /* a misspelt CDT_UCX_LANE_SPLIT is refused */
    cdt_ucx_context c = NULL;
    CHECK_RC(cdt_ucx_context_create(NULL, &c));
    cdt_ucx_worker w = NULL;
    setenv("CDT_UCX_LANE_SPLIT", "yes", 1);
    CHECK(cdt_ucx_worker_create(c, NULL, &w) == CDT_ERR_INVALID_ARG && w == NULL);
    unsetenv("CDT_UCX_LANE_SPLIT");
    cdt_ucx_context_destroy(c);

    static const cdt_ucx_worker_params lane = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    expect_split = 1;
    int rc = run_pair(split_server, split_client, &lane, &lane, 0);
    if (rc != 0)
        return rc;
    /* off: the same objects through the lane's stream */
    expect_split = 0;
    setenv("CDT_UCX_LANE_SPLIT", "off", 1);
    rc = run_pair(split_server, split_client, &lane, &lane, 0);
    unsetenv("CDT_UCX_LANE_SPLIT");
    return rc;
}
