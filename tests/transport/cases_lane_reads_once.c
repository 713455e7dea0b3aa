/*
 * cases_lane_reads_once.c - where a custom type's unpack callback reads a lane's bytes
 * (docs/TRANSPORT.md §10.4): a type that promises to read each byte once
 * (CDT_CUSTOM_FLAG_UNPACK_READS_ONCE) is handed fragments straight out of the segment; a type
 * that does not is handed a private copy of each, never the segment, also where a prepare
 * callback bound the type. Both arrive byte for byte.
 */
#include "cases.h"

#include <inttypes.h>
#include <stdint.h>

/* the second half of the objects is received through a prepare callback that binds the type:
 * the bound type decides there too */
enum { RO_WORDS = 64 * 1024, RO_OBJECTS = 12, RO_MAX_CALLS = 4096 };

typedef struct ro_bind {
    int64_t *v;
    cdt_type type;
} ro_bind;

static int ro_prepare(void *arg, cdt_decoder d)
{
    const ro_bind *b = arg;
    return cdt_decoder_bind(d, b->v, RO_WORDS, b->type);
}

/* the unpack calls of one type: where each fragment it was handed lay */
typedef struct ro_probe {
    const char *name;
    size_t calls;
    uintptr_t src[RO_MAX_CALLS];
} ro_probe;

static ro_probe probe_once = {.name = "reads once"}, probe_plain = {.name = "no promise"};

/* the object: RO_WORDS int64 words, packed as they are */
static int ro_state(void *context, const void *src, cdt_count count, void **state)
{
    (void)src;
    (void)count;
    *state = context;
    return CDT_SUCCESS;
}

static int ro_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)state;
    (void)buf;
    *size = count * 8;
    return CDT_SUCCESS;
}

static int ro_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    (void)state;
    cdt_count n = count * 8 - offset < dst_size ? count * 8 - offset : dst_size;
    memcpy(dst, (const char *)buf + offset, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}

static int ro_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                     cdt_count src_size)
{
    ro_probe *p = state;
    if (offset < 0 || src_size < 0 || offset + src_size > count * 8)
        return CDT_ERR_TRUNCATED;
    if (p->calls < RO_MAX_CALLS)
        p->src[p->calls++] = (uintptr_t)src;
    memcpy((char *)buf + offset, src, (size_t)src_size);
    return CDT_SUCCESS;
}

static cdt_type ro_type(ro_probe *p, uint64_t flags)
{
    cdt_custom_params cp = {.field_mask = CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_QUERY |
                                          CDT_CUSTOM_PARAM_PACK | CDT_CUSTOM_PARAM_UNPACK |
                                          CDT_CUSTOM_PARAM_CONTEXT | CDT_CUSTOM_PARAM_FLAGS,
                            .state_fn = ro_state,
                            .query_fn = ro_query,
                            .pack_fn = ro_pack,
                            .unpack_fn = ro_unpack,
                            .context = p,
                            .flags = flags};
    cdt_type t = NULL;
    CHECK_RC(cdt_type_create_custom_advanced(&cp, &t));
    return t;
}

/* how many of the probe's fragments lay in a lane's segment as this process maps it now */
static size_t ro_in_segment(const ro_probe *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    size_t in = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "cdt-lane") == NULL)
            continue;
        uintptr_t lo = 0, hi = 0;
        CHECK(sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2);
        for (size_t i = 0; i < p->calls; i++)
            in += p->src[i] >= lo && p->src[i] < hi;
    }
    fclose(f);
    return in;
}

static void ro_fill(int64_t *v, int k)
{
    for (int i = 0; i < RO_WORDS; i++)
        v[i] = (int64_t)k * 1000003 + i;
}

static void ro_client(peer *p)
{
    int64_t one = 1;
    CHECK_RC(cdt_ucx_send(p->ep, &one, 1, CDT_INT64, 1, T_TIMEOUT_MS));
    wait_lane(p);
    cdt_type types[2] = {ro_type(&probe_once, CDT_CUSTOM_FLAG_UNPACK_READS_ONCE),
                         ro_type(&probe_plain, 0)};
    int64_t *v = malloc(RO_WORDS * sizeof(*v));
    CHECK(v != NULL);
    for (int k = 0; k < RO_OBJECTS; k++) {
        ro_fill(v, k);
        CHECK_RC(cdt_ucx_send(p->ep, v, RO_WORDS, types[k % 2], 2, T_TIMEOUT_MS));
    }
    lane_ack_recv(p);
    free(v);
    cdt_type_free(&types[0]);
    cdt_type_free(&types[1]);
}

static void ro_server(peer *p)
{
    int64_t one = 0;
    CHECK_RC(
        cdt_ucx_recv(p->w, &one, 1, CDT_INT64, 1, CDT_UCX_TAG_MASK_FULL, NULL, NULL, T_TIMEOUT_MS));
    cdt_type types[2] = {ro_type(&probe_once, CDT_CUSTOM_FLAG_UNPACK_READS_ONCE),
                         ro_type(&probe_plain, 0)};
    int64_t *v = malloc(RO_WORDS * sizeof(*v)), *ref = malloc(RO_WORDS * sizeof(*v));
    CHECK(v != NULL && ref != NULL);
    uint64_t through_lane = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED);
    for (int k = 0; k < RO_OBJECTS; k++) {
        memset(v, 0xee, RO_WORDS * sizeof(*v));
        if (k < RO_OBJECTS / 2) {
            CHECK_RC(cdt_ucx_recv(p->w, v, RO_WORDS, types[k % 2], 2, CDT_UCX_TAG_MASK_FULL, NULL,
                                  NULL, T_TIMEOUT_MS));
        } else {
            ro_bind b = {v, types[k % 2]};
            cdt_ucx_recv_params rp = {
                .field_mask = CDT_UCX_RECV_PARAM_PREPARE, .prepare = ro_prepare, .prepare_arg = &b};
            CHECK_RC(cdt_ucx_recv(p->w, NULL, 0, NULL, 2, CDT_UCX_TAG_MASK_FULL, &rp, NULL,
                                  T_TIMEOUT_MS));
        }
        ro_fill(ref, k);
        CHECK(memcmp(v, ref, RO_WORDS * sizeof(*v)) == 0);
    }
    through_lane = lane_stat(p, CDT_UCX_WORKER_STATS_LANE_RECEIVED) - through_lane;
    /* counted while the segment is still mapped (the endpoint is open) */
    size_t once_in = ro_in_segment(&probe_once), plain_in = ro_in_segment(&probe_plain);
    fprintf(stderr,
            "%llu objects through the lane; fragments in the segment: %s %zu of %zu, %s %zu of "
            "%zu\n",
            (unsigned long long)through_lane, probe_once.name, once_in, probe_once.calls,
            probe_plain.name, plain_in, probe_plain.calls);
    CHECK(through_lane == RO_OBJECTS);
    /* a call per published span straight out of the segment; a call per fragment (16 KiB)
     * through the private copy */
    CHECK(probe_once.calls >= RO_OBJECTS / 2 && probe_plain.calls > RO_OBJECTS / 2);
    CHECK(once_in == probe_once.calls); /* straight out of the segment */
    CHECK(plain_in == 0);               /* a private copy, always */
    lane_ack_send(p);
    free(v);
    free(ref);
    cdt_type_free(&types[0]);
    cdt_type_free(&types[1]);
}

int lane_reads_once_case(void)
{
    static const cdt_ucx_worker_params wp = {.field_mask = CDT_UCX_WORKER_PARAM_LANE, .lane = 1};
    return run_pair(ro_server, ro_client, &wp, &wp, 0);
}
