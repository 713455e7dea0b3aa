/*
 * lane_cpu.c - each side of a lane says which CPU it runs on (docs/TRANSPORT.md §10.3,
 * Waiting), so that a side waiting for its peer can tell that the peer waits for its own core.
 * The words are hints: written with plain stores, read relaxed, never trusted for a bound.
 */
#include "lane/lane_internal.h"

#include <limits.h>

static uint32_t *word(const cdt__lane *lane, size_t off)
{
    return (uint32_t *)(void *)(lane->base + off);
}

void cdt__lane_note_cpu(cdt__lane *lane, int cpu)
{
    if (lane == NULL || lane->base == NULL || cpu < 0 || cpu >= INT_MAX)
        return;
    uint32_t v = (uint32_t)cpu + 1u;
    if (v == lane->cpu_noted) /* the line the peer polls is written once a migration */
        return;
    lane->cpu_noted = v;
    size_t off = lane->role == CDT__LANE_PRODUCER ? CDT__LANE_OFF_PROD_CPU : CDT__LANE_OFF_CONS_CPU;
    __atomic_store_n(word(lane, off), v, __ATOMIC_RELAXED);
}

int cdt__lane_peer_cpu(const cdt__lane *lane)
{
    if (lane == NULL || lane->base == NULL || lane->same_process)
        return -1;
    size_t off = lane->role == CDT__LANE_PRODUCER ? CDT__LANE_OFF_CONS_CPU : CDT__LANE_OFF_PROD_CPU;
    uint32_t v = __atomic_load_n(word(lane, off), __ATOMIC_RELAXED);
    return v == 0 || v > (uint32_t)INT_MAX ? -1 : (int)(v - 1u);
}
