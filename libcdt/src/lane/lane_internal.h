/*
 * lane_internal.h - what the lane's rings share inside the lane component (lane_ring.c, the
 * data ring and grants; lane_heads.c, the head ring): breaking a lane, and the check every
 * entry point makes first. Not for the transport: it goes through lane.h.
 */
#ifndef CDT_LANE_INTERNAL_H
#define CDT_LANE_INTERNAL_H

#include "lane/lane.h"

/* a value of the peer's out of its bounds: the lane breaks for good (sticky CDT_ERR_PEER),
 * which fails its endpoint (docs/TRANSPORT.md §10.5) */
static inline int cdt__lane_broken(cdt__lane *lane)
{
    lane->error = CDT_ERR_PEER;
    return CDT_ERR_PEER;
}

/* a mapped lane of this role that has not broken: CDT_SUCCESS, else why not */
static inline int cdt__lane_usable(const cdt__lane *lane, cdt__lane_role role)
{
    if (lane == NULL || lane->base == NULL || lane->role != role)
        return CDT_ERR_INVALID_ARG;
    return lane->error;
}

#endif
