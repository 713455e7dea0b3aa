/*
 * cases_lane_headers.c - objects whose frame header no head message holds (more than 2,041
 * regions: docs/TRANSPORT.md §10.3, Headers through the lane) go through the lane, the region
 * table ahead of the stream, and arrive byte for byte; a receive whose max_regions is below the
 * object's refuses it with CDT_ERR_LIMIT before anything is allocated, its sender completes and
 * the next object arrives whole.
 */
#include "cases.h"

/* double_vec shapes: arrays, int32 elements each */
static const cdt_count shapes[][2] = {
    {2042, 16},   /* the first region count whose header does not fit a head message */
    {8192, 256},  /* bench/transfer's double_vec_1k at 8 MiB: a header of 131 KB */
    {20000, 8},   /* 20,000 regions of 32 bytes */
    {3000, 1000}, /* the header crosses the ring's end more than once */
};
enum { NSHAPES = sizeof(shapes) / sizeof(shapes[0]), LIMITED = 50, AFTER = 51 };

static void headers_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS)); /* offers the lane */
    wait_lane(p);
    for (int k = 0; k < NSHAPES; k++) {
        double_vec v;
        CHECK_RC(double_vec_init(&v, shapes[k][0], shapes[k][1], 30 + k));
        uint64_t before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT);
        CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), 10 + k, T_TIMEOUT_MS));
        lane_ack_recv(p); /* the receiver checked it */
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_SENT) - before == 1);
        double_vec_clear(&v);
    }
    /* refused by the receiver's limit: the send still completes, and the next object holds */
    double_vec v;
    CHECK_RC(double_vec_init(&v, 5000, 4, 40));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), LIMITED, T_TIMEOUT_MS));
    double_vec_clear(&v);
    CHECK_RC(double_vec_init(&v, 4000, 64, 41));
    CHECK_RC(cdt_ucx_send(p->ep, &v, 1, double_vec_type(), AFTER, T_TIMEOUT_MS));
    double_vec_clear(&v);
    lane_ack_recv(p);
}

static void headers_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    for (int k = 0; k < NSHAPES; k++) {
        uint64_t before = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
        double_vec v = {0}, want;
        CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), 10 + k, CDT_UCX_TAG_MASK_FULL, NULL,
                              NULL, T_TIMEOUT_MS));
        CHECK_RC(double_vec_init(&want, shapes[k][0], shapes[k][1], 30 + k));
        CHECK(double_vec_equal(&v, &want));
        CHECK(lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) - before == 1);
        fprintf(stderr, "%lld regions of %lld bytes through the lane, header included\n",
                (long long)shapes[k][0], (long long)shapes[k][1] * 4);
        double_vec_clear(&v);
        double_vec_clear(&want);
        lane_ack_send(p);
    }
    cdt_ucx_recv_params rp = {.field_mask = CDT_UCX_RECV_PARAM_MAX_REGIONS, .max_regions = 4999};
    double_vec v = {0}, want;
    int rc = cdt_ucx_recv(p->w, &v, 1, double_vec_type(), LIMITED, CDT_UCX_TAG_MASK_FULL, &rp, NULL,
                          T_TIMEOUT_MS);
    fprintf(stderr, "5000 regions against max_regions 4999: %s\n", cdt_err_name(rc));
    CHECK(rc == CDT_ERR_LIMIT);
    CHECK(v.n == 0 && v.lens == NULL && v.data == NULL); /* nothing was allocated into it */
    CHECK_RC(cdt_ucx_recv(p->w, &v, 1, double_vec_type(), AFTER, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                          T_TIMEOUT_MS));
    CHECK_RC(double_vec_init(&want, 4000, 64, 41));
    CHECK(double_vec_equal(&v, &want));
    double_vec_clear(&v);
    double_vec_clear(&want);
    lane_ack_send(p);
}

int lane_headers_case(void)
{
    static const cdt_ucx_worker_params lane = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    return run_pair(headers_server, headers_client, &lane, &lane, 0);
}
