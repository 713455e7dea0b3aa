/*
 * type.c - the common datatype header: kinds, reference counting, queries. The classes' own
 * code is reached through type->ops: custom types in custom.c; predefined and derived types
 * (constructors, commit, the pack engine) in derived/.
 */
#include "type.h"

#include <stdlib.h>

typedef struct {
    const char *name;
    cdt_count size;
} cdt__kind_info;

static const cdt__kind_info kind_table[CDT_KIND_COUNT_] = {
    [CDT_KIND_MIXED] = {"mixed", 0},
    [CDT_KIND_BYTE] = {"byte", 1},
    [CDT_KIND_CHAR] = {"char", 1},
    [CDT_KIND_INT8] = {"int8", 1},
    [CDT_KIND_INT16] = {"int16", 2},
    [CDT_KIND_INT32] = {"int32", 4},
    [CDT_KIND_INT64] = {"int64", 8},
    [CDT_KIND_UINT8] = {"uint8", 1},
    [CDT_KIND_UINT16] = {"uint16", 2},
    [CDT_KIND_UINT32] = {"uint32", 4},
    [CDT_KIND_UINT64] = {"uint64", 8},
    [CDT_KIND_FLOAT] = {"float", 4},
    [CDT_KIND_DOUBLE] = {"double", 8},
    [CDT_KIND_COMPLEX_FLOAT] = {"complex_float", 8},
    [CDT_KIND_COMPLEX_DOUBLE] = {"complex_double", 16},
    [CDT_KIND_BOOL] = {"bool", 1},
};

unsigned cdt_version_number(void)
{
    return CDT_VERSION_NUMBER;
}

#define CDT__STR_(x) #x
#define CDT__STR(x) CDT__STR_(x)

const char *cdt_version_string(void)
{
    return CDT__STR(CDT_VERSION_MAJOR) "." CDT__STR(CDT_VERSION_MINOR) "." CDT__STR(
        CDT_VERSION_PATCH);
}

static bool kind_valid(cdt_kind kind)
{
    return kind > CDT_KIND_MIXED && kind < CDT_KIND_COUNT_;
}

cdt_count cdt_kind_size(cdt_kind kind)
{
    return kind_valid(kind) ? kind_table[kind].size : 0;
}

const char *cdt_kind_name(cdt_kind kind)
{
    return kind_valid(kind) ? kind_table[kind].name : "invalid";
}

bool cdt__type_is_predefined(cdt_type type)
{
    /* by class, not by address: comparing a user's pointer with the bounds of the table is
     * undefined when it points elsewhere */
    return type != NULL && type->cls == CDT__CLASS_PREDEFINED;
}

bool cdt__type_is_layout(cdt_type type)
{
    return type != NULL && type->cls != CDT__CLASS_CUSTOM && (type->flags & CDT__TYPE_COMMITTED);
}

struct cdt_type_s *cdt__type_alloc(cdt__type_class cls, const cdt__type_ops *ops)
{
    struct cdt_type_s *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    atomic_init(&t->refcount, 1);
    t->cls = cls;
    t->ops = ops;
    t->kind = CDT_KIND_MIXED;
    return t;
}

void cdt__type_retain(cdt_type type)
{
    if (type != NULL && !cdt__type_is_predefined(type))
        atomic_fetch_add_explicit(&type->refcount, 1, memory_order_relaxed);
}

void cdt__type_release(cdt_type type)
{
    if (type == NULL || cdt__type_is_predefined(type))
        return;
    if (atomic_fetch_sub_explicit(&type->refcount, 1, memory_order_acq_rel) != 1)
        return;
    type->ops->destroy(type);
    free(type);
}

int cdt_type_free(cdt_type *type)
{
    if (type == NULL || *type == NULL)
        return CDT_SUCCESS;
    if (cdt__type_is_predefined(*type))
        return CDT_ERR_INVALID_ARG;
    cdt__type_release(*type);
    *type = NULL;
    return CDT_SUCCESS;
}

int cdt_type_is_custom(cdt_type type)
{
    return type != NULL && type->cls == CDT__CLASS_CUSTOM;
}

int cdt_type_size(cdt_type type, cdt_count *size)
{
    if (type == NULL || size == NULL)
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED;
    *size = type->size;
    return CDT_SUCCESS;
}

int cdt_type_extent(cdt_type type, cdt_count *lb, cdt_count *extent)
{
    if (type == NULL || lb == NULL || extent == NULL)
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED;
    *lb = type->lb;
    *extent = type->extent;
    return CDT_SUCCESS;
}

int cdt_type_true_extent(cdt_type type, cdt_count *true_lb, cdt_count *true_extent)
{
    if (type == NULL || true_lb == NULL || true_extent == NULL)
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED;
    *true_lb = type->true_lb;
    *true_extent = type->true_extent;
    return CDT_SUCCESS;
}

int cdt_type_kind(cdt_type type, cdt_kind *kind)
{
    if (type == NULL || kind == NULL)
        return CDT_ERR_INVALID_ARG;
    *kind = type->cls == CDT__CLASS_CUSTOM ? CDT_KIND_MIXED : type->kind;
    return CDT_SUCCESS;
}
