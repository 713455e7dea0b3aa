/*
 * cases_lane_ring_commit.c - a LANE object's commit in the data ring (docs/TRANSPORT.md §10.3,
 * Commit in the ring): an object without large regions to a consumer that announced
 * RING_COMMIT (consumer_features bit 3) ends with an 8-byte word after its stream, not with a
 * commit message over UCX. The sender's tagged sends to its peer are counted (this program's
 * ucp_tag_send_nbx, cases_lane_handoff.c) over objects of 40 KiB to 128 KiB that all go through
 * the lane: none an object with the head ring, one (the head) with it off, and one more (the
 * commit message) where the consumer leaves bit 3 clear (the test hook
 * CDT_UCX_TEST_NO_RING_COMMIT=1: a consumer of an earlier release). Then a custom type whose
 * pack fails part-way through a lane object: the send fails with the callback's error, the
 * receive with CDT_ERR_FRAME_TRUNCATED (the word's, or the message's, status), and the next
 * object arrives whole, in every setting.
 */
#include "cases.h"

/* objects counted: int64 counts of 40, 64 and 128 KiB */
enum { RC_N = 48, RC_MAX = 16384 };
static const cdt_count rc_counts[] = {5120, 8192, 16384};

/* the failing pack: a custom type of RC_PF_LEN bytes whose pack fails past RC_PF_FAIL_AT, so
 * that its head and its first fragments went before the failure */
enum { RC_PF_LEN = 256 << 10, RC_PF_FAIL_AT = 100 << 10 };

static bool env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, value) == 0;
}

/* tagged sends to the peer an object costs the sender in this setting */
static long long rc_expected(void)
{
    return (env_is("CDT_UCX_TEST_NO_RING_COMMIT", "1") ? 1 : 0) +
           (env_is("CDT_UCX_LANE_HEADS", "off") ? 1 : 0);
}

static int rc_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    if (offset + dst_size > RC_PF_FAIL_AT && count > RC_PF_FAIL_AT)
        return CDT_ERR_USER_BASE - 9;
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

static cdt_type rc_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, rc_pack, bytes_unpack, NULL, NULL,
                                    NULL, 0, &t));
    return t;
}

static const cdt_ucx_worker_params rc_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};

static void rc_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    if (env_is("CDT_UCX_LANE_HEADS", "off"))
        wait_lane(p);
    else
        lane_wait_heads(p);
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    int64_t *v = malloc(RC_MAX * sizeof(int64_t));
    CHECK(v != NULL);
    /* a first lane object, so that the lane is attached on both sides before the count */
    lh_fill(v, 0, RC_MAX);
    CHECK_RC(cdt_ucx_send(p->ep, v, RC_MAX, CDT_INT64, 3, T_TIMEOUT_MS));
    lane_ack_recv(p);
    uint64_t lane_before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
    tag_count_ep(cdt_ucx_ep_handle(p->ep));
    long long before = tag_count();
    for (int i = 0; i < RC_N; i++) {
        cdt_count n = rc_counts[i % 3];
        lh_fill(v, i, n);
        CHECK_RC(cdt_ucx_send(p->ep, v, n, CDT_INT64, 100 + (cdt_ucx_tag)i, T_TIMEOUT_MS));
    }
    long long sent = tag_count() - before;
    tag_count_ep(NULL);
    uint64_t through = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - lane_before;
    fprintf(stderr,
            "tagged sends to the peer for %d objects of 40-128 KiB through the lane: %lld "
            "(%llu through the lane; expected %lld an object)\n",
            RC_N, sent, (unsigned long long)through, rc_expected());
    CHECK(through == RC_N);
    CHECK(sent == RC_N * rc_expected());
    lane_ack_recv(p); /* the server checked them */

    /* a pack that fails part-way through a lane object, then one that packs whole */
    cdt_type t = rc_type();
    char *data = malloc(RC_PF_LEN);
    CHECK(data != NULL);
    memset(data, 0x5A, RC_PF_LEN);
    int rc = cdt_ucx_send(p->ep, data, RC_PF_LEN, t, 200, T_TIMEOUT_MS);
    fprintf(stderr, "send of an object whose pack fails part-way: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_USER_BASE - 9);
    memset(data, 0x6B, RC_PF_FAIL_AT);
    CHECK_RC(cdt_ucx_send(p->ep, data, RC_PF_FAIL_AT, t, 201, T_TIMEOUT_MS)); /* packs whole */
    lane_ack_recv(p);
    cdt_type_free(&t);
    free(data);
    free(v);
}

/* binds a receive of rc_type to the sender's packed size (one byte an element) */
typedef struct rc_into {
    char *buf;
    cdt_type type;
} rc_into;

static int rc_prepare(void *arg, cdt_decoder decoder)
{
    rc_into *r = arg;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_PACKED_SIZE};
    int rc = cdt_decoder_info(decoder, &info);
    if (rc == CDT_SUCCESS && info.packed_size > RC_PF_LEN)
        rc = CDT_ERR_TRUNCATED;
    return rc != CDT_SUCCESS ? rc : cdt_decoder_bind(decoder, r->buf, info.packed_size, r->type);
}

static void rc_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    if (env_is("CDT_UCX_LANE_HEADS", "off"))
        wait_lane(p);
    else
        lane_wait_heads(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    int64_t *v = malloc(RC_MAX * sizeof(int64_t));
    CHECK(v != NULL);
    CHECK_RC(cdt_ucx_recv(p->w, v, RC_MAX, CDT_INT64, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(lh_check(v, 0, RC_MAX));
    lane_ack_send(p);
    for (int i = 0; i < RC_N; i++) {
        cdt_count n = rc_counts[i % 3];
        memset(v, 0, RC_MAX * sizeof(int64_t));
        CHECK_RC(cdt_ucx_recv(p->w, v, n, CDT_INT64, 100 + (cdt_ucx_tag)i, CDT_UCX_TAG_MASK_FULL,
                              NULL, NULL, T_TIMEOUT_MS));
        CHECK(lh_check(v, i, n));
    }
    lane_ack_send(p);

    cdt_type t = rc_type();
    char *buf = calloc(1, RC_PF_LEN);
    CHECK(buf != NULL);
    rc_into into = {buf, t};
    cdt_ucx_recv_params rp = {
        .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = rc_prepare, .prepare_arg = &into};
    uint64_t lane_before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
    int rc = cdt_ucx_recv(p->w, NULL, 0, NULL, 200, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS);
    fprintf(stderr, "receive of it: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_FRAME_TRUNCATED);
    /* its stream went through the lane whole (filled up past the failure) and its word said
     * so; a commit message may fail the receive before the stream's end is unpacked (the rest
     * is then released unread) */
    if (!env_is("CDT_UCX_TEST_NO_RING_COMMIT", "1"))
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) - lane_before == 1);
    memset(buf, 0, RC_PF_LEN);
    CHECK_RC(
        cdt_ucx_recv(p->w, NULL, 0, NULL, 201, CDT_UCX_TAG_MASK_FULL, &rp, NULL, T_TIMEOUT_MS));
    for (int i = 0; i < RC_PF_FAIL_AT; i++)
        CHECK(buf[i] == 0x6B);
    lane_ack_send(p);
    cdt_type_free(&t);
    free(buf);
    free(v);
}

int lane_ring_commit_case(void)
{
    return run_pair(rc_server, rc_client, &rc_wp, &rc_wp, 0);
}
