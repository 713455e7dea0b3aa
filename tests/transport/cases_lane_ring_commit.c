/*
 * cases_lane_ring_commit.c - a LANE object's commit in the data ring (docs/TRANSPORT.md §10.3,
 * Commit in the ring): an object without large regions to a consumer that announced
 * RING_COMMIT (consumer_features bit 3) ends with an 8-byte word after its stream, not with a
 * commit message over UCX. The sender's tagged sends to its peer are counted (this program's
 * ucp_tag_send_nbx, cases_lane_handoff.c) over objects of 80 KiB to 128 KiB (above a large
 * record's bound, §10.6, so that every one is a LANE object) that all go through
 * the lane: none an object with the head ring, one (the head) with it off, and one more (the
 * commit message) where the consumer leaves bit 3 clear (the test hook
 * CDT_UCX_TEST_NO_RING_COMMIT=1: a consumer of an earlier release). Then a custom type whose
 * pack fails part-way through a lane object: the send fails with the callback's error, the
 * receive with CDT_ERR_FRAME_TRUNCATED (the word's, or the message's, status), and the next
 * object arrives whole, in every setting.
 */
#include "cases.h"

#include <fcntl.h>
#include <poll.h>

/* objects counted: int64 counts of 80, 100 and 128 KiB: LANE objects, above a large record's
 * bound (72 KiB), which would go whole through the head ring with no commit at all */
enum { RC_N = 48, RC_MAX = 16384 };
static const cdt_count rc_counts[] = {10240, 12800, 16384};

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

static const failing_bytes rc_fails = {RC_PF_FAIL_AT, CDT_ERR_USER_BASE - 9};

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
            "tagged sends to the peer for %d objects of 80-128 KiB through the lane: %lld "
            "(%llu through the lane; expected %lld an object)\n",
            RC_N, sent, (unsigned long long)through, rc_expected());
    CHECK(through == RC_N);
    CHECK(sent == RC_N * rc_expected());
    lane_ack_recv(p); /* the server checked them */

    /* a pack that fails part-way through a lane object, then one that packs whole */
    cdt_type t = failing_bytes_type(&rc_fails);
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

    cdt_type t = failing_bytes_type(&rc_fails);
    char *buf = calloc(1, RC_PF_LEN);
    CHECK(buf != NULL);
    bytes_into into = {buf, RC_PF_LEN, t};
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_PREPARE,
                              .prepare = bytes_bind_prepare,
                              .prepare_arg = &into};
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

/* ---------------------------------------------------------------- a scribbled word ------- */

/* A hostile sender rewrites its objects' commit words in the data ring after publishing them
 * (docs/TRANSPORT.md §10.4, The commit word is read once). The receiver's custom type stalls in
 * its unpack callback on each object's last bytes until the sender has rewritten that object's
 * word (a pipe between the two processes, made before they fork), so the receiver reads the
 * scribbled word for certain: bytes that are no commit fail that receive with
 * CDT_ERR_FRAME_MALFORMED, a commit that reports an error with CDT_ERR_FRAME_TRUNCATED, a word
 * left alone completes it; the objects after each arrive whole, and the lane stays up. */
enum { SW_LEN = 256 << 10, SW_N = 3 };
static int sw_pipe[2];

static int sw_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                     cdt_count src_size)
{
    if (offset + src_size == count) { /* the stream's last bytes: the word comes next */
        struct pollfd pf = {.fd = sw_pipe[0], .events = POLLIN};
        char c;
        CHECK(poll(&pf, 1, T_TIMEOUT_MS) == 1 && read(sw_pipe[0], &c, 1) == 1);
    }
    return bytes_unpack(state, buf, count, offset, src, src_size);
}

static int sw_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    bytes_copy_out(buf, count, offset, dst, dst_size, used);
    return CDT_SUCCESS;
}

/* both sides: the lane offered (tag 1), its heads in the ring where they go there, the server's
 * word to go (tag 2) */
static void rc_start(peer *p, bool client)
{
    int64_t one = 1;
    if (client)
        CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    else
        CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
    if (env_is("CDT_UCX_LANE_HEADS", "off"))
        wait_lane(p);
    else
        lane_wait_heads(p);
    if (client)
        CHECK_RC(cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                              T_TIMEOUT_MS));
    else
        CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
}

static cdt_type sw_type(void)
{
    cdt_type t;
    CHECK_RC(cdt_type_create_custom(NULL, NULL, bytes_query, sw_pack, sw_unpack, NULL, NULL, NULL,
                                    0, &t));
    return t;
}

/* the start of this process's producer segment: the lane mapping whose data ring has bytes
 * published (the peer's segment here only carries heads) */
static uintptr_t sw_producer_segment(int mem)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    uintptr_t at = 0;
    while (at == 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long start, end, off;
        if (strstr(line, "cdt-lane") == NULL ||
            sscanf(line, "%llx-%llx %*s %llx", &start, &end, &off) != 3 || off != 0)
            continue;
        uint64_t pos = 0;
        CHECK(pread(mem, &pos, 8, (off_t)(start + 64)) == 8);
        if (pos > 0)
            at = (uintptr_t)start;
    }
    fclose(f);
    return at;
}

static void sw_client(peer *p)
{
    rc_start(p, true);
    cdt_type t = sw_type();
    char *data = malloc(SW_LEN);
    CHECK(data != NULL);
    int mem = open("/proc/self/mem", O_RDWR);
    CHECK(mem >= 0);
    /* the words written over each object's: not a commit; a commit of an error; none */
    static const unsigned char words[SW_N][8] = {
        {'X', 'X', 'X', 'X', 0, 0, 0, 0}, {'C', 'D', 'T', 'C', 0xF9, 0xFF, 0xFF, 0xFF}, {0}};
    for (int k = 0; k < SW_N; k++) {
        memset(data, 0x20 + k, SW_LEN);
        CHECK_RC(cdt_ucx_send(p->ep, data, SW_LEN, t, 10 + (cdt_ucx_tag)k, T_TIMEOUT_MS));
        /* sent: its stream and word are published; the receiver waits in its callback */
        uintptr_t seg = sw_producer_segment(mem);
        CHECK(seg != 0);
        uint64_t pos, ring;
        uint32_t slots;
        CHECK(pread(mem, &pos, 8, (off_t)(seg + 64)) == 8);
        CHECK(pread(mem, &ring, 8, (off_t)(seg + 24)) == 8);
        CHECK(pread(mem, &slots, 4, (off_t)(seg + 32)) == 4);
        uint64_t data_off = (192 + 16 * (uint64_t)slots + 4095) & ~(uint64_t)4095;
        unsigned char old[8];
        for (int i = 0; i < 8; i++) { /* the word may cross the ring's end */
            off_t at = (off_t)(seg + data_off + (pos - 8 + (uint64_t)i) % ring);
            CHECK(pread(mem, &old[i], 1, at) == 1);
            if (k < 2)
                CHECK(pwrite(mem, &words[k][i], 1, at) == 1);
        }
        CHECK(memcmp(old, "CDTC\0\0\0\0", 8) == 0); /* the word the sender wrote: success */
        CHECK(write(sw_pipe[1], "w", 1) == 1);
        lane_ack_recv(p);
    }
    close(mem);
    cdt_type_free(&t);
    free(data);
}

static void sw_server(peer *p)
{
    rc_start(p, false);
    cdt_type t = sw_type();
    char *buf = malloc(SW_LEN);
    CHECK(buf != NULL);
    static const int want[SW_N] = {CDT_ERR_FRAME_MALFORMED, CDT_ERR_FRAME_TRUNCATED, CDT_SUCCESS};
    for (int k = 0; k < SW_N; k++) {
        memset(buf, 0, SW_LEN);
        int rc = cdt_ucx_recv(p->w, buf, SW_LEN, t, 10 + (cdt_ucx_tag)k, CDT_UCX_TAG_MASK_FULL,
                              NULL, NULL, T_TIMEOUT_MS);
        fprintf(stderr, "object %d, its word %s: %s\n", k,
                k == 0   ? "no commit"
                : k == 1 ? "a commit of an error"
                         : "left alone",
                cdt_err_name(rc));
        CHECK(rc == want[k]);
        if (rc == CDT_SUCCESS)
            for (int i = 0; i < SW_LEN; i++)
                CHECK(buf[i] == 0x20 + k);
        lane_ack_send(p);
    }
    char t2[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t2, sizeof(t2)));
    CHECK(strstr(t2, "lane=memfd") != NULL); /* the lane is still up */
    cdt_type_free(&t);
    free(buf);
}

int lane_hostile_word_case(void)
{
    CHECK(pipe(sw_pipe) == 0);
    return run_pair(sw_server, sw_client, &rc_wp, &rc_wp, 0);
}

/* ------------------------------------------ a commit word that names large regions ---- */

/* A sender that lies (the test hook CDT_UCX_TEST_WORD_REGIONS=1, set in the client only): its
 * object with a large region (arrays of 48, 48 and 48 KiB, in its stream, which no head holds, and
 * one of 256 KiB, above both workers' 64 KiB threshold: a LANE object with a large region) comes
 * by a LANE head without COMMIT, a commit word in the ring, though its regions complete over
 * UCX. The receiver refuses that head with CDT_ERR_FRAME_MALFORMED (docs/TRANSPORT.md §10.3,
 * Commit in the ring), discards its regions and its stream, and the endpoint's next object (no
 * large region: 48 KiB, an honest word) arrives whole, through the lane, which stays up. */
/* the next object: 48 KiB of int64, below the threshold, so a LANE object with its word */
enum { FW_NEXT = 6144 };
static const cdt_ucx_worker_params fw_wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE |
                                                          CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD,
                                            .lane = 1,
                                            .zcopy_threshold = 64 << 10};

/* 3 arrays of 48 KiB (in the stream) and one of 256 KiB (a large region) */
static void fw_object(double_vec *v)
{
    CHECK_RC(double_vec_init(v, 4, 12288, 21));
    free(v->data[3]);
    v->lens[3] = 65536;
    v->data[3] = malloc(65536 * sizeof(int32_t));
    CHECK(v->data[3] != NULL);
    for (int j = 0; j < 65536; j++)
        v->data[3][j] = j;
}

static void fw_client_lies(uint16_t port)
{
    (void)port;
    setenv("CDT_UCX_TEST_WORD_REGIONS", "1", 1);
}

static void fw_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    lane_wait_heads(p);
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    double_vec v;
    fw_object(&v);
    uint64_t lane_before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
    int rc = cdt_ucx_send(p->ep, &v, 1, double_vec_type(), 3, T_TIMEOUT_MS);
    fprintf(stderr, "send of an object with large regions and a commit word: %s\n",
            cdt_err_name(rc));
    CHECK(rc == CDT_SUCCESS); /* its bytes all went; the receiver refused them */
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - lane_before == 1); /* a LANE object */
    double_vec_clear(&v);
    int64_t *w = malloc(RC_MAX * sizeof(int64_t));
    CHECK(w != NULL);
    lh_fill(w, 7, FW_NEXT);
    lane_before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
    CHECK_RC(cdt_ucx_send(p->ep, w, FW_NEXT, CDT_INT64, 4, T_TIMEOUT_MS));
    CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - lane_before == 1);
    lane_ack_recv(p);
    free(w);
}

static void fw_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    lane_wait_heads(p);
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 2, T_TIMEOUT_MS));
    double_vec v = {0};
    int rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS);
    fprintf(stderr, "receive of it: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_FRAME_MALFORMED);
    double_vec_clear(&v);
    int64_t *w = calloc(RC_MAX, sizeof(int64_t));
    CHECK(w != NULL);
    uint64_t lane_before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
    CHECK_RC(cdt_ucx_recv(p->w, w, FW_NEXT, CDT_INT64, 4, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK(lh_check(w, 7, FW_NEXT));
    uint64_t through = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) - lane_before;
    fprintf(stderr, "the next object: whole, %llu received through the lane\n",
            (unsigned long long)through);
    CHECK(through == 1);
    char t[512];
    CHECK_RC(cdt_ucx_ep_transports(p->ep, t, sizeof(t)));
    CHECK(strstr(t, "lane=memfd") != NULL); /* the lane is still up */
    lane_ack_send(p);
    free(w);
}

int lane_ring_commit_forged_case(void)
{
    /* the hook's setting is checked as the library's others: a misspelt one fails the worker */
    cdt_ucx_context c = NULL;
    CHECK_RC(cdt_ucx_context_create(NULL, &c));
    cdt_ucx_worker w = NULL;
    setenv("CDT_UCX_TEST_WORD_REGIONS", "yes", 1);
    CHECK(cdt_ucx_worker_create(c, &fw_wp, &w) == CDT_ERR_INVALID_ARG && w == NULL);
    unsetenv("CDT_UCX_TEST_WORD_REGIONS");
    cdt_ucx_context_destroy(c);
    harness_before_client = fw_client_lies;
    return run_pair(fw_server, fw_client, &fw_wp, &fw_wp, 0);
}
