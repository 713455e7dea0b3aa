/*
 * ucx_lane_region.c - which regions of an object sent through an endpoint's lane travel in the
 * lane's stream (copied in by the sender, out by the receiver, pipelined) and which go
 * zero-copy as their own messages (docs/TRANSPORT.md §10.3, "Regions"). A sender's choice
 * only: the head's prefix carries the threshold it used, and every version 7 receiver takes
 * the regions below it from the stream.
 */
#include "ucx_internal.h"

#include <stdlib.h>

int cdt__ucx_lane_region_env(cdt_count *threshold)
{
    const char *env = getenv("CDT_UCX_LANE_REGION_THRESHOLD");
    *threshold = CDT__UCX_LANE_REGION_THRESHOLD;
    if (env == NULL || *env == '\0')
        return CDT_SUCCESS;
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end != '\0' || end == env || v < 1)
        return CDT_ERR_INVALID_ARG; /* a misspelt setting must not pass unnoticed */
    *threshold = (cdt_count)v;
    return CDT_SUCCESS;
}
