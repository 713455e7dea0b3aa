/*
 * ucx_test_hook.c - the transport's test hook (docs/TESTING.md, Test hooks): CDT_UCX_TEST_END
 * ends an endpoint at a chosen point inside the lane's progress, as UCX ends one when it calls
 * the endpoint's error handler from within a call libcdt makes there (UCX 1.22 did so inside
 * ucp_tag_send_nbx while a peer died, and the lane's progress then read the endpoint's freed
 * lanes). A real ending there depends on timing; the hook makes it happen on the n-th pass, so
 * that transport.lane_end_* show every such point stops reading the lanes it held. Unset, each
 * point costs one comparison. CDT_UCX_TEST_NO_RING_COMMIT=1 makes the worker's consumers announce
 * no commit in the ring, as consumers of an earlier release (transport.lane_ring_commit).
 * CDT_UCX_TEST_WORD_REGIONS=1 makes the worker's producers lie as a hostile peer would: an
 * object with large regions gets its commit as a ring word too (a LANE head without COMMIT that
 * names a large region), which a consumer refuses (transport.lane_ring_commit_forged).
 * CDT_UCX_TEST_SPLIT_HOLD_MS=N makes the worker's producers claim a SPLIT object's destination
 * record only N ms after its stream's last byte (the window in which a receive may end first:
 * transport.lane_split_revoke); CDT_UCX_TEST_SPLIT_HOLD_MS=push:N claims it at once and then
 * waits N ms before the push (the window in which a receive that ends is held:
 * transport.lane_split_held).
 */
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int point;
} points[] = {{"switch", CDT__UCX_END_SWITCH},
              {"heads", CDT__UCX_END_HEADS},
              {"pump_send", CDT__UCX_END_PUMP_SEND},
              {"pump_recv", CDT__UCX_END_PUMP_RECV}};

int cdt__ucx_test_end_env(int *point, long *at)
{
    const char *env = getenv("CDT_UCX_TEST_END");
    *point = 0;
    *at = 0;
    if (env == NULL || *env == '\0')
        return CDT_SUCCESS;
    const char *colon = strchr(env, ':');
    size_t n = colon != NULL ? (size_t)(colon - env) : strlen(env);
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        if (strlen(points[i].name) != n || strncmp(env, points[i].name, n) != 0)
            continue;
        long v = 1;
        if (colon != NULL) {
            char *end;
            v = strtol(colon + 1, &end, 10);
            if (end == colon + 1 || *end != '\0' || v < 1)
                return CDT_ERR_INVALID_ARG;
        }
        *point = points[i].point;
        *at = v;
        return CDT_SUCCESS;
    }
    return CDT_ERR_INVALID_ARG;
}

/* a test hook that is on or off: "1" on; unset, empty or "0" off; anything else refused */
static int flag_env(const char *name, bool *on)
{
    const char *env = getenv(name);
    *on = false;
    if (env == NULL || *env == '\0' || strcmp(env, "0") == 0)
        return CDT_SUCCESS;
    if (strcmp(env, "1") != 0)
        return CDT_ERR_INVALID_ARG;
    *on = true;
    return CDT_SUCCESS;
}

int cdt__ucx_test_ring_commit_env(bool *off)
{
    return flag_env("CDT_UCX_TEST_NO_RING_COMMIT", off);
}

int cdt__ucx_test_word_regions_env(bool *on)
{
    return flag_env("CDT_UCX_TEST_WORD_REGIONS", on);
}

int cdt__ucx_test_split_hold_env(int64_t *ms, bool *in_push)
{
    const char *env = getenv("CDT_UCX_TEST_SPLIT_HOLD_MS");
    *ms = 0;
    *in_push = false;
    if (env == NULL || *env == '\0')
        return CDT_SUCCESS;
    if (strncmp(env, "push:", 5) == 0) {
        *in_push = true;
        env += 5;
    }
    char *end;
    long v = strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 0 || v > 600000)
        return CDT_ERR_INVALID_ARG;
    *ms = v;
    return CDT_SUCCESS;
}

void cdt__ucx_test_end(struct cdt_ucx_ep_s *ep, int point)
{
    cdt_ucx_worker w = ep->w;
    if (w->test_end_point != point || ep->status != CDT_SUCCESS)
        return;
    if (++w->test_end_passes != w->test_end_at)
        return;
    cdt__ucx_lane_ep_fail(ep); /* what UCX's error handler does (ucx_endpoint.c) */
}
