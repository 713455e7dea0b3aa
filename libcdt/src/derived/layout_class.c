/*
 * layout_class.c - the layout classes (predefined and derived types) as the core sees them:
 * their operations table (core/type.h) and the predefined types, the leaves every derived
 * type is built from.
 */
#include "derived.h"

static void layout_destroy(struct cdt_type_s *type)
{
    cdt__derived_destroy(type->derived); /* predefined types are never destroyed */
}

const cdt__type_ops cdt__layout_ops = {
    .destroy = layout_destroy,
    .form = cdt__type_form,
    .pack = cdt__form_pack,
    .unpack = cdt__form_unpack,
    .range_iov = cdt__layout_range_iov_pieces,
};

#define PREDEF(k, n)                                                                               \
    [k] = {.refcount = 1,                                                                          \
           .cls = CDT__CLASS_PREDEFINED,                                                           \
           .flags = CDT__TYPE_COMMITTED | CDT__TYPE_CONTIGUOUS,                                    \
           .ops = &cdt__layout_ops,                                                                \
           .kind = k,                                                                              \
           .size = n,                                                                              \
           .lb = 0,                                                                                \
           .extent = n,                                                                            \
           .true_lb = 0,                                                                           \
           .true_extent = n}

static struct cdt_type_s predefined[CDT_KIND_COUNT_] = {
    PREDEF(CDT_KIND_BYTE, 1),          PREDEF(CDT_KIND_CHAR, 1),
    PREDEF(CDT_KIND_INT8, 1),          PREDEF(CDT_KIND_INT16, 2),
    PREDEF(CDT_KIND_INT32, 4),         PREDEF(CDT_KIND_INT64, 8),
    PREDEF(CDT_KIND_UINT8, 1),         PREDEF(CDT_KIND_UINT16, 2),
    PREDEF(CDT_KIND_UINT32, 4),        PREDEF(CDT_KIND_UINT64, 8),
    PREDEF(CDT_KIND_FLOAT, 4),         PREDEF(CDT_KIND_DOUBLE, 8),
    PREDEF(CDT_KIND_COMPLEX_FLOAT, 8), PREDEF(CDT_KIND_COMPLEX_DOUBLE, 16),
    PREDEF(CDT_KIND_BOOL, 1),
};

cdt_type cdt_type_predefined(cdt_kind kind)
{
    /* the table's size is 0 for CDT_KIND_MIXED (no entry); a value that is no kind is out of
     * its bounds. No call of the exported cdt_kind_size: a custom type's region callback asks
     * for its regions' type here once a region, every object. */
    return (unsigned)kind < CDT_KIND_COUNT_ && predefined[kind].size > 0 ? &predefined[kind] : NULL;
}
