/*
 * cases_lane_regions.c - regions in the lane's stream (docs/TRANSPORT.md §10.3, Regions): with
 * the lane, regions of 64 KiB to 8 MiB, which version 6 sends zero-copy one rendezvous each,
 * are copied through the lane with the rest of the stream (CDT_UCX_LANE_SPLIT=off; on the
 * default, where the lane splits them, as lane objects too), and arrive byte for byte; a
 * threshold named by the worker's parameters, by the send's, or by
 * CDT_UCX_LANE_REGION_THRESHOLD sends them zero-copy again; a misspelt variable is refused.
 */
#include "cases.h"

/* 1: every object below goes through the lane's stream; 0: its regions go zero-copy (and its
 * inline stream, the lengths, fits the head: the lane is not used at all) */
static int expect_stream;

/* double_vec shapes: arrays, int32 elements each */
static const cdt_count shapes[][2] = {
    {64, 32768},  /* 128 KiB regions: the demo's and bench/transfer's double_vec_128k */
    {1, 16384},   /* one region of 64 KiB, the zero-copy threshold itself */
    {8, 262144},  /* 1 MiB */
    {3, 2097152}, /* 8 MiB */
};
enum { NSHAPES = sizeof(shapes) / sizeof(shapes[0]) };

/* whether object k goes through the lane's stream: where the receiver takes large records
 * (docs/TRANSPORT.md §10.6, Large records: the ring and CDT_UCX_LANE_LARGE=on, not the
 * default) the one 64 KiB region fits one, and the object goes whole as a head ring record,
 * its region inline too, no LANE object */
static uint64_t want_stream(int k)
{
    const char *heads = getenv("CDT_UCX_LANE_HEADS"), *large = getenv("CDT_UCX_LANE_LARGE");
    bool record = k == 1 && !(heads != NULL && strcmp(heads, "off") == 0) && large != NULL &&
                  strcmp(large, "on") == 0;
    return k < NSHAPES && !record ? (uint64_t)expect_stream : 0;
}

static void regions_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    for (int k = 0; k <= NSHAPES; k++) {
        /* the last object: the first shape with this send's own threshold, which holds on the
         * lane too */
        const cdt_count *sh = shapes[k < NSHAPES ? k : 0];
        double_vec v;
        CHECK_RC(double_vec_init(&v, sh[0], sh[1], 20 + k));
        uint64_t before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
        cdt_ucx_send_params sp = {.field_mask = CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD,
                                  .zcopy_threshold = 65536};
        cdt_ucx_request r;
        CHECK_RC(cdt_ucx_isend_advanced(p->ep, &v, 1, double_vec_type(), 10 + k,
                                        k < NSHAPES ? NULL : &sp, &r));
        CHECK_RC(cdt_ucx_request_wait(r, T_TIMEOUT_MS));
        cdt_ucx_request_free(r);
        lane_ack_recv(p); /* the receiver checked it */
        uint64_t d = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - before;
        fprintf(stderr, "%lld regions of %lld bytes: %s\n", (long long)sh[0], (long long)sh[1] * 4,
                d ? "through the lane" : "zero-copy");
        CHECK(d == want_stream(k));
        double_vec_clear(&v);
    }
}

static void regions_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int k = 0; k <= NSHAPES; k++) {
        const cdt_count *sh = shapes[k < NSHAPES ? k : 0];
        uint64_t before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
        double_vec v = {0}, want;
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), 10 + k, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS));
        CHECK_RC(double_vec_init(&want, sh[0], sh[1], 20 + k));
        CHECK(double_vec_equal(&v, &want));
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) - before == want_stream(k));
        double_vec_clear(&v);
        double_vec_clear(&want);
        lane_ack_send(p);
    }
}

int lane_regions_case(void)
{
    /* a misspelt CDT_UCX_LANE_REGION_THRESHOLD is refused, unless the worker names its
     * threshold (then the variable is not read) */
    cdt_ucx_context c = NULL;
    CHECK_RC(cdt_ucx_context_create(NULL, &c));
    const char *bad[] = {"64k", "0", "-1", ""};
    cdt_ucx_worker w = NULL;
    for (int i = 0; i < 3; i++) {
        setenv("CDT_UCX_LANE_REGION_THRESHOLD", bad[i], 1);
        CHECK(cdt_ucx_worker_create(c, NULL, &w) == CDT_ERR_INVALID_ARG && w == NULL);
    }
    cdt_ucx_worker_params named = {.field_mask = CDT_UCX_WORKER_PARAM_LANE |
                                                 CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD,
                                   .lane = 1,
                                   .zcopy_threshold = 65536};
    CHECK_RC(cdt_ucx_worker_create(c, &named, &w));
    cdt_ucx_worker_destroy(w);
    setenv("CDT_UCX_LANE_REGION_THRESHOLD", bad[3], 1); /* empty: the default */
    CHECK_RC(cdt_ucx_worker_create(c, NULL, &w));
    cdt_ucx_worker_destroy(w);
    cdt_ucx_context_destroy(c);
    unsetenv("CDT_UCX_LANE_REGION_THRESHOLD");

    static const cdt_ucx_worker_params lane = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    /* the library's threshold on a lane that does not split: every region through the lane's
     * stream; then on the default, where this machine's lanes split regions of 64 KiB and more
     * (copied by both processes, still lane objects: transport.lane_split checks that way) */
    expect_stream = 1;
    setenv("CDT_UCX_LANE_SPLIT", "off", 1);
    int rc = run_pair(regions_server, regions_client, &lane, &lane, 0);
    unsetenv("CDT_UCX_LANE_SPLIT");
    if (rc == 0)
        rc = run_pair(regions_server, regions_client, &lane, &lane, 0);
    if (rc != 0)
        return rc;
    /* the variable names one: regions of 64 KiB and more go zero-copy */
    expect_stream = 0;
    setenv("CDT_UCX_LANE_REGION_THRESHOLD", "65536", 1);
    rc = run_pair(regions_server, regions_client, &lane, &lane, 0);
    unsetenv("CDT_UCX_LANE_REGION_THRESHOLD");
    if (rc != 0)
        return rc;
    /* so does the worker's parameter */
    return run_pair(regions_server, regions_client, &named, &named, 0);
}
