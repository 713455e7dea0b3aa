/* custom.c - custom datatypes: the seven user callbacks of MPI_Type_create_custom, and the
 * params-struct constructor that can grow (with a destructor for the context). */
#include "type.h"

#include <stdlib.h>

static void custom_destroy(struct cdt_type_s *type)
{
    cdt_custom_params *c = type->custom;
    if (c->context_free_fn != NULL)
        c->context_free_fn(c->context);
    free(c);
}

/* a custom type moves its data through its callbacks (core/op.c): no layout operations */
static const cdt__type_ops custom_ops = {.destroy = custom_destroy};

#define KNOWN_FIELDS                                                                               \
    (CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_STATE_FREE | CDT_CUSTOM_PARAM_QUERY |               \
     CDT_CUSTOM_PARAM_PACK | CDT_CUSTOM_PARAM_UNPACK | CDT_CUSTOM_PARAM_REGIONS |                  \
     CDT_CUSTOM_PARAM_CONTEXT | CDT_CUSTOM_PARAM_CONTEXT_FREE | CDT_CUSTOM_PARAM_INORDER |         \
     CDT_CUSTOM_PARAM_FLAGS)
#define KNOWN_FLAGS CDT_CUSTOM_FLAG_UNPACK_READS_ONCE

int cdt_type_create_custom_advanced(const cdt_custom_params *params, cdt_type *type)
{
    if (params == NULL || type == NULL || (params->field_mask & ~(uint64_t)KNOWN_FIELDS) != 0)
        return CDT_ERR_INVALID_ARG;
    /* the record takes each field whose bit is set, one by one, and leaves the rest cleared: a
     * caller compiled against an older header has a smaller struct, whose end is never read
     * (docs/ABI.md, "How the structs grow") */
    uint64_t m = params->field_mask;
    cdt_custom_params rec = {.field_mask = m};
    if (m & CDT_CUSTOM_PARAM_STATE)
        rec.state_fn = params->state_fn;
    if (m & CDT_CUSTOM_PARAM_STATE_FREE)
        rec.state_free_fn = params->state_free_fn;
    if (m & CDT_CUSTOM_PARAM_QUERY)
        rec.query_fn = params->query_fn;
    if (m & CDT_CUSTOM_PARAM_PACK)
        rec.pack_fn = params->pack_fn;
    if (m & CDT_CUSTOM_PARAM_UNPACK)
        rec.unpack_fn = params->unpack_fn;
    if (m & CDT_CUSTOM_PARAM_REGIONS) {
        rec.region_count_fn = params->region_count_fn;
        rec.region_fn = params->region_fn;
    }
    if (m & CDT_CUSTOM_PARAM_CONTEXT)
        rec.context = params->context;
    if (m & CDT_CUSTOM_PARAM_CONTEXT_FREE)
        rec.context_free_fn = params->context_free_fn;
    rec.inorder = (m & CDT_CUSTOM_PARAM_INORDER) && params->inorder != 0;
    if (m & CDT_CUSTOM_PARAM_FLAGS) {
        if ((params->flags & ~(uint64_t)KNOWN_FLAGS) != 0)
            return CDT_ERR_INVALID_ARG;
        rec.flags = params->flags;
    }
    if (rec.query_fn == NULL || rec.pack_fn == NULL)
        return CDT_ERR_INVALID_ARG;
    if (rec.region_count_fn != NULL && rec.region_fn == NULL)
        return CDT_ERR_INVALID_ARG;

    cdt_custom_params *c = malloc(sizeof(*c));
    if (c == NULL)
        return CDT_ERR_NO_MEMORY;
    *c = rec;
    struct cdt_type_s *t = cdt__type_alloc(CDT__CLASS_CUSTOM, &custom_ops);
    if (t == NULL) {
        free(c);
        return CDT_ERR_NO_MEMORY;
    }
    t->flags = CDT__TYPE_COMMITTED;
    t->custom = c;
    *type = t;
    return CDT_SUCCESS;
}

int cdt_type_create_custom(cdt_custom_state_func_t *state_fn,
                           cdt_custom_state_free_func_t *state_free_fn,
                           cdt_custom_query_func_t *query_fn, cdt_custom_pack_func_t *pack_fn,
                           cdt_custom_unpack_func_t *unpack_fn,
                           cdt_custom_region_count_func_t *region_count_fn,
                           cdt_custom_region_func_t *region_fn, void *context, int inorder,
                           cdt_type *type)
{
    cdt_custom_params p = {
        .field_mask = CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_STATE_FREE |
                      CDT_CUSTOM_PARAM_QUERY | CDT_CUSTOM_PARAM_PACK | CDT_CUSTOM_PARAM_UNPACK |
                      CDT_CUSTOM_PARAM_REGIONS | CDT_CUSTOM_PARAM_CONTEXT |
                      CDT_CUSTOM_PARAM_INORDER,
        .state_fn = state_fn,
        .state_free_fn = state_free_fn,
        .query_fn = query_fn,
        .pack_fn = pack_fn,
        .unpack_fn = unpack_fn,
        .region_count_fn = region_count_fn,
        .region_fn = region_fn,
        .context = context,
        .inorder = inorder,
    };
    return cdt_type_create_custom_advanced(&p, type);
}
