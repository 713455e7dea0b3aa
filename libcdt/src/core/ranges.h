/*
 * ranges.h - a set of disjoint byte ranges [start, end), kept sorted and coalesced.
 * Tracks which bytes of a stream or frame have arrived, so that overlapping fragments are
 * rejected and completion is a single comparison. Fragments that arrive in order keep the set
 * at one range, so the common case costs O(1).
 */
#ifndef CDT_RANGES_H
#define CDT_RANGES_H

#include "type.h"

typedef struct cdt__range {
    cdt_count start, end;
} cdt__range;

typedef struct cdt__ranges {
    cdt__range *items; /* NULL or inline_items until more than 2 ranges are needed */
    cdt_count n, cap;
    cdt_count total; /* bytes covered */
    cdt__range inline_items[2];
} cdt__ranges;
/* A zero-initialised cdt__ranges is an empty set; it must not be copied once used. */

/* Whether [start, end) can be added: CDT_ERR_INVALID_ARG if it overlaps a range already
 * present, CDT_ERR_NO_MEMORY if there is no room. After CDT_SUCCESS, adding [start, end)
 * cannot fail: callers check, then deliver the bytes, then record them, so that bytes are
 * recorded as arrived only once they reached their destination. */
CDT__HIDDEN int cdt__ranges_check(cdt__ranges *set, cdt_count start, cdt_count end);
/* Add [start, end). CDT_ERR_INVALID_ARG if it overlaps a range already present. */
CDT__HIDDEN int cdt__ranges_add(cdt__ranges *set, cdt_count start, cdt_count end);
/* 1 when [start, end) is covered entirely. */
CDT__HIDDEN bool cdt__ranges_covers(const cdt__ranges *set, cdt_count start, cdt_count end);
CDT__HIDDEN void cdt__ranges_free(cdt__ranges *set);

#endif
