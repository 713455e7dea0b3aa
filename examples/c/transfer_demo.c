/*
 * transfer_demo.c - two processes, one object per message over UCX.
 *
 *   transfer_demo listen PORT           receive the objects, verify each, acknowledge it
 *   transfer_demo connect HOST PORT     send seed-paper objects and a derived strided array,
 *                                       print what moved, how fast, against raw UCX
 * examples/run_demo.sh builds it and starts both on 127.0.0.1.
 */
#include "seed_types.h"

#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMEOUT_MS 30000
#define ITERS 20

/* what the transport says about its last failure in this thread: peer, UCX version, lanes */
static void print_detail(void)
{
    char detail[512];
    cdt_ucx_last_error(detail, sizeof(detail));
    if (detail[0] != '\0')
        fprintf(stderr, "  %s\n", detail);
}

#define OK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cdt_strerror(rc_));      \
            print_detail();                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the median of n round times (sorts them): one round that lost its core to another process
 * does not move it, where it moves a mean several-fold on a loaded machine */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* ---- the objects (both sides build them the same way) ---- */
enum { N_SV = 128, N_SS = 65536, DV_N = 64, DV_LEN = 32768, STRIDED_N = 1 << 20 };

typedef struct objects {
    struct_vec *sv;
    struct_simple *ss;
    double_vec dv;
    double *strided; /* 2 * STRIDED_N doubles; every other one is sent */
    cdt_type strided_type;
} objects;

/* struct_simple with its gap declared padding (cdt_type_padded), made once in main */
static cdt_type ss_padded;

static void objects_make(objects *o, int fill)
{
    o->sv = calloc(N_SV, sizeof(*o->sv));
    o->ss = calloc(N_SS, sizeof(*o->ss));
    o->strided = calloc(2 * STRIDED_N, sizeof(double));
    if (o->sv == NULL || o->ss == NULL || o->strided == NULL)
        exit(1);
    memset(&o->dv, 0, sizeof(o->dv));
    if (fill) {
        struct_vec_fill(o->sv, N_SV, 1);
        struct_simple_fill(o->ss, N_SS, 2);
        OK(double_vec_init(&o->dv, DV_N, DV_LEN, 3));
        for (int i = 0; i < 2 * STRIDED_N; i++)
            o->strided[i] = i % 2 == 0 ? i * 0.25 : -1.0;
    }
    OK(cdt_type_vector(STRIDED_N, 1, 2, CDT_DOUBLE, &o->strided_type));
    OK(cdt_type_commit(&o->strided_type));
}

static void objects_free(objects *o)
{
    free(o->sv);
    free(o->ss);
    free(o->strided);
    double_vec_clear(&o->dv);
    cdt_type_free(&o->strided_type);
}

typedef struct item {
    const char *name;
    void *buf;
    cdt_count count;
    cdt_type type;
    cdt_count bytes; /* data bytes */
    int reuse;       /* double_vec: received into the arrays of the round before */
} item;

static int items(objects *o, item *it)
{
    int n = 0;
    it[n++] = (item){"struct_vec x128",
                     o->sv,
                     N_SV,
                     struct_vec_type(),
                     N_SV * (20 + STRUCT_VEC_DATA_LEN * 4),
                     0};
    it[n++] = (item){"double_vec 64 x 128 KiB",    &o->dv, 1, double_vec_type(),
                     (cdt_count)DV_N * DV_LEN * 4, 0};
    it[n++] = (item){"double_vec, memory reused",  &o->dv, 1, double_vec_type(),
                     (cdt_count)DV_N * DV_LEN * 4, 1};
    it[n++] = (item){"struct_simple x65536", o->ss, N_SS, struct_simple_type(), N_SS * 20, 0};
    /* the same records and data bytes; 24 bytes of memory each move */
    it[n++] = (item){"  its padding declared", o->ss, N_SS, ss_padded, N_SS * 20, 0};
    it[n++] = (item){"strided double (vector)", o->strided, 1, o->strided_type, STRIDED_N * 8, 0};
    return n;
}

/* overwrite what a previous round left, so the verified round proves its own delivery */
static void objects_scrub(objects *o)
{
    memset(o->sv, 0xee, N_SV * sizeof(*o->sv));
    memset(o->ss, 0xee, N_SS * sizeof(*o->ss));
    for (cdt_count i = 0; i < o->dv.n; i++) /* the arrays a reusing receive writes into */
        memset(o->dv.data[i], 0xee, (size_t)o->dv.lens[i] * sizeof(int32_t));
    for (int i = 0; i < 2 * STRIDED_N; i += 2)
        o->strided[i] = -2.0;
}

static int verify(objects *ref, objects *got, int i)
{
    switch (i) {
    case 0:
        return struct_vec_equal(ref->sv, got->sv, N_SV);
    case 1:
    case 2:
        return double_vec_equal(&ref->dv, &got->dv);
    case 3:
    case 4:
        return struct_simple_equal(ref->ss, got->ss, N_SS);
    default:
        for (int k = 0; k < 2 * STRIDED_N; k += 2)
            if (got->strided[k] != ref->strided[k])
                return 0;
        return 1;
    }
}

/* ---- raw UCX roofline: the same byte count, contiguous ---- */
static void raw_wait(cdt_ucx_worker w, void *q)
{
    if (q == NULL || UCS_PTR_IS_ERR(q))
        return;
    double t0 = now();
    while (ucp_request_check_status(q) == UCS_INPROGRESS && now() - t0 < 30)
        cdt_ucx_worker_progress(w);
    ucp_request_free(q);
}

static void raw_xfer(cdt_ucx_worker w, cdt_ucx_ep ep, void *buf, size_t len, int send)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    void *q = send ? ucp_tag_send_nbx(cdt_ucx_ep_handle(ep), buf, len, 99, &p)
                   : ucp_tag_recv_nbx(cdt_ucx_worker_handle(w), buf, len, 99, UINT64_MAX, &p);
    raw_wait(w, q);
}

static int listener_main(uint16_t port)
{
    cdt_ucx_context ctx;
    cdt_ucx_worker w;
    cdt_ucx_listener l;
    cdt_ucx_ep ep;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &w));
    cdt_ucx_listener_params lp = {.field_mask =
                                      CDT_UCX_LISTENER_PARAM_HOST | CDT_UCX_LISTENER_PARAM_PORT,
                                  .host = "127.0.0.1",
                                  .port = port};
    OK(cdt_ucx_listener_create(w, &lp, &l));
    OK(cdt_ucx_listener_port(l, &port)); /* port 0 asked for any free one */
    printf("listener: waiting on 127.0.0.1:%u\n", port);
    fflush(stdout);
    OK(cdt_ucx_listener_accept(l, TIMEOUT_MS, &ep));
    objects ref, got;
    objects_make(&ref, 1);
    objects_make(&got, 0);
    item it[8] = {{0}}, gt[8] = {{0}};
    int n = items(&ref, it);
    items(&got, gt);
    size_t maxb = 0;
    for (int i = 0; i < n; i++)
        maxb = (size_t)it[i].bytes > maxb ? (size_t)it[i].bytes : maxb;
    unsigned char *raw = malloc(maxb);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        /* timed rounds, then one round whose object is compared with the sender's field by
         * field (comparing inside the timed rounds would time the comparison, not the move) */
        for (int k = 0; k <= ITERS; k++) {
            /* a double_vec is received into an empty one, which allocates its arrays, or into
             * the arrays of the round before (the row "memory reused") */
            if (!gt[i].reuse || got.dv.data == NULL) {
                double_vec_clear(&got.dv);
                memset(&got.dv, 0, sizeof(got.dv));
            }
            if (k == ITERS)
                objects_scrub(&got);
            OK(cdt_ucx_recv(w, gt[i].buf, gt[i].count, gt[i].type, 1, CDT_UCX_TAG_MASK_FULL, NULL,
                            NULL, TIMEOUT_MS));
            int32_t okv = k < ITERS ? 1 : verify(&ref, &got, i);
            bad |= !okv;
            OK(cdt_ucx_send(ep, &okv, 1, CDT_INT32, 2, TIMEOUT_MS));
        }
        for (int k = 0; k < ITERS; k++) { /* the roofline */
            raw_xfer(w, ep, raw, (size_t)it[i].bytes, 0);
            int32_t okv = 1;
            OK(cdt_ucx_send(ep, &okv, 1, CDT_INT32, 2, TIMEOUT_MS));
        }
    }
    int32_t done;
    OK(cdt_ucx_recv(w, &done, 1, CDT_INT32, 3, CDT_UCX_TAG_MASK_FULL, NULL, NULL, TIMEOUT_MS));
    printf("listener: %d objects received; the last of each kind compared field by field: %s\n",
           n * (ITERS + 1), bad ? "MISMATCH" : "all equal");
    free(raw);
    objects_free(&ref);
    objects_free(&got);
    cdt_ucx_ep_close(ep, 2000);
    cdt_ucx_listener_destroy(l);
    cdt_ucx_worker_destroy(w);
    cdt_ucx_context_destroy(ctx);
    return bad;
}

static int connector_main(const char *host, uint16_t port)
{
    cdt_ucx_context ctx;
    cdt_ucx_worker w;
    cdt_ucx_ep ep = NULL;
    OK(cdt_ucx_context_create(NULL, &ctx));
    OK(cdt_ucx_worker_create(ctx, NULL, &w));
    for (int tries = 0; tries < 100; tries++) { /* the listener may still be starting */
        if (cdt_ucx_ep_connect(w, host, port, 2000, &ep) == CDT_SUCCESS)
            break;
        ep = NULL;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (ep == NULL) {
        fprintf(stderr, "connector: cannot connect to %s:%u\n", host, port);
        print_detail();
        return 1;
    }
    objects o;
    objects_make(&o, 1);
    item it[8] = {{0}};
    int n = items(&o, it);
    size_t maxb = 0;
    for (int i = 0; i < n; i++)
        maxb = (size_t)it[i].bytes > maxb ? (size_t)it[i].bytes : maxb;
    unsigned char *raw = calloc(1, maxb);
    printf("\n%-26s %10s %8s %9s %11s %11s %8s  %s\n", "object", "bytes", "regions", "verified",
           "libcdt MB/s", "raw MB/s", "ratio", "(MB = 10^6 B; object + 4-byte ack per round)");
    int bad = 0;
    double t_alloc = 0; /* libcdt's time per round of the allocating double_vec row */
    for (int i = 0; i < n; i++) {
        cdt_frame f;
        cdt_count regions = 0;
        OK(cdt_frame_encode(it[i].buf, it[i].count, it[i].type, NULL, &f));
        cdt_frame_region_count(f, &regions);
        cdt_frame_free(f);
        int all_ok = 1;
        double rounds[ITERS]; /* each round's time: the median is the row's figure */
        for (int k = 0; k <= ITERS; k++) {
            int32_t okv = 0;
            double t0 = now();
            OK(cdt_ucx_send(ep, it[i].buf, it[i].count, it[i].type, 1, TIMEOUT_MS));
            OK(cdt_ucx_recv(w, &okv, 1, CDT_INT32, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                            TIMEOUT_MS));
            if (k < ITERS) /* the last round is the verified one, not timed */
                rounds[k] = now() - t0;
            all_ok &= okv == 1;
        }
        double t_cdt = median(rounds, ITERS);
        for (int k = 0; k < ITERS; k++) {
            int32_t okv = 0;
            double t0 = now();
            raw_xfer(w, ep, raw, (size_t)it[i].bytes, 1);
            OK(cdt_ucx_recv(w, &okv, 1, CDT_INT32, 2, CDT_UCX_TAG_MASK_FULL, NULL, NULL,
                            TIMEOUT_MS));
            rounds[k] = now() - t0;
        }
        double t_raw = median(rounds, ITERS);
        bad |= !all_ok;
        printf("%-26s %10lld %8lld %9s %11.1f %11.1f %8.2f\n", it[i].name, (long long)it[i].bytes,
               (long long)regions, all_ok ? "yes" : "NO", it[i].bytes / t_cdt / 1e6,
               it[i].bytes / t_raw / 1e6, t_raw / t_cdt);
        if (it[i].type == double_vec_type() && !it[i].reuse)
            t_alloc = t_cdt;
        if (it[i].reuse && t_alloc > 0) /* the receiver's allocation, as its own row */
            printf("%-26s %10s %8s %9s %11s %11s %8s  %.0f us a round (%.0f%% of the "
                   "allocating row's time)\n",
                   "  allocation's cost", "-", "-", "-", "-", "-", "-", (t_alloc - t_cdt) * 1e6,
                   100 * (t_alloc - t_cdt) / t_alloc);
    }
    int32_t done = 1;
    OK(cdt_ucx_send(ep, &done, 1, CDT_INT32, 3, TIMEOUT_MS));
    printf("MB/s: bytes / the median round of %d (object + ack). ratio: libcdt / raw UCX of\n"
           "the same byte count into one reused buffer, one object in flight. Packed fields pay\n"
           "a pack and an unpack that raw does not; \"its padding declared\" sends the same\n"
           "records as a derived type whose gaps are padding (cdt_type_padded): their memory,\n"
           "24 bytes a record, moves as one region with no pack. double_vec's receiver\n"
           "allocates its arrays every round in the first row and writes into the arrays of the\n"
           "round before in the second; the difference is the allocation's cost (fresh pages,\n"
           "zeroed by the kernel, where malloc gave the last round's back to it:\n"
           "bench/results/transfer_findings.md). Raw sends the same unchanged buffer every\n"
           "round: where both its copies fit the receiver's cache (about 1 MiB on a core with\n"
           "2 MiB of L2), its copy never crosses cores, which a packed object has to; on data\n"
           "the sender wrote before each send, see bench/run transfer's transfer_rewrite set\n"
           "(bench/results/lane_transport.md).\n",
           ITERS);
    /* which transports really ran: the endpoint's lanes as UCX reports them */
    char lanes[256];
    if (cdt_ucx_ep_transports(ep, lanes, sizeof(lanes)) != CDT_SUCCESS)
        snprintf(lanes, sizeof(lanes), "(unknown)");
    cdt_ucx_protocol proto = CDT_UCX_PROTOCOL_SPLIT;
    cdt_ucx_ep_protocol(ep, &proto);
    printf("UCX %s; UCX_TLS=%s; transports in use: %s; libcdt protocol: %s\n",
           cdt_ucx_version_string(), getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)", lanes,
           proto == CDT_UCX_PROTOCOL_SINGLE ? "single message per object"
                                            : "split (head + region messages)");
    free(raw);
    objects_free(&o);
    cdt_ucx_ep_close(ep, 2000);
    cdt_ucx_worker_destroy(w);
    cdt_ucx_context_destroy(ctx);
    return bad;
}

int main(int argc, char **argv)
{
    /* a struct_simple's 4-byte gap is C's padding, not another field: described as a derived
     * type with that declared, its records travel as their memory (24 bytes each) instead of
     * packed (20) by the custom type's callbacks */
    OK(struct_simple_padded_type_create(&ss_padded));
    if (argc == 3 && strcmp(argv[1], "listen") == 0)
        return listener_main((uint16_t)atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "connect") == 0)
        return connector_main(argv[2], (uint16_t)atoi(argv[3]));
    fprintf(stderr, "usage: %s listen PORT | connect HOST PORT\n", argv[0]);
    return 2;
}
