/* ranges.c - sorted, coalesced set of byte ranges (see ranges.h). */
#include "ranges.h"

#include <stdlib.h>
#include <string.h>

/* index of the first range whose end is > start */
static cdt_count first_after(const cdt__ranges *set, cdt_count start)
{
    cdt_count lo = 0, hi = set->n;
    while (lo < hi) {
        cdt_count mid = lo + (hi - lo) / 2;
        if (set->items[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* room for one more range, so that the add that follows a successful check cannot fail */
static int reserve_one(cdt__ranges *set)
{
    if (set->items == NULL) {
        set->items = set->inline_items;
        set->cap = 2;
    }
    if (set->n < set->cap)
        return CDT_SUCCESS;
    cdt_count cap = set->cap * 2;
    bool was_inline = set->items == set->inline_items;
    cdt__range *items = was_inline ? malloc((size_t)cap * sizeof(cdt__range))
                                   : realloc(set->items, (size_t)cap * sizeof(cdt__range));
    if (items == NULL)
        return CDT_ERR_NO_MEMORY;
    if (was_inline)
        memcpy(items, set->inline_items, sizeof(set->inline_items));
    set->items = items;
    set->cap = cap;
    return CDT_SUCCESS;
}

int cdt__ranges_check(cdt__ranges *set, cdt_count start, cdt_count end)
{
    if (start >= end)
        return CDT_SUCCESS;
    cdt_count i = first_after(set, start);
    if (i < set->n && set->items[i].start < end)
        return CDT_ERR_INVALID_ARG; /* overlap */
    return reserve_one(set);
}

int cdt__ranges_add(cdt__ranges *set, cdt_count start, cdt_count end)
{
    int rc = cdt__ranges_check(set, start, end);
    if (rc != CDT_SUCCESS || start >= end)
        return rc;
    cdt_count i = first_after(set, start);
    bool joins_prev = i > 0 && set->items[i - 1].end == start;
    bool joins_next = i < set->n && set->items[i].start == end;
    set->total += end - start;
    if (joins_prev && joins_next) {
        set->items[i - 1].end = set->items[i].end;
        memmove(&set->items[i], &set->items[i + 1], (size_t)(set->n - i - 1) * sizeof(cdt__range));
        set->n--;
    } else if (joins_prev) {
        set->items[i - 1].end = end;
    } else if (joins_next) {
        set->items[i].start = start;
    } else {
        memmove(&set->items[i + 1], &set->items[i], (size_t)(set->n - i) * sizeof(cdt__range));
        set->items[i] = (cdt__range){start, end};
        set->n++;
    }
    return CDT_SUCCESS;
}

bool cdt__ranges_covers(const cdt__ranges *set, cdt_count start, cdt_count end)
{
    if (start >= end)
        return true;
    cdt_count i = first_after(set, start);
    return i < set->n && set->items[i].start <= start && set->items[i].end >= end;
}

void cdt__ranges_free(cdt__ranges *set)
{
    if (set->items != set->inline_items)
        free(set->items);
    memset(set, 0, sizeof(*set));
}
