/* custom.c - custom datatypes: the seven user callbacks of MPI_Type_create_custom. */
#include "custom.h"

#include <stdlib.h>

static void custom_destroy(struct cdt_type_s *type)
{
    free(type->custom);
}

/* a custom type moves its data through its callbacks (core/op.c): no layout operations */
static const cdt__type_ops custom_ops = {.destroy = custom_destroy};

int cdt_type_create_custom(cdt_custom_state_func_t *state_fn,
                           cdt_custom_state_free_func_t *state_free_fn,
                           cdt_custom_query_func_t *query_fn, cdt_custom_pack_func_t *pack_fn,
                           cdt_custom_unpack_func_t *unpack_fn,
                           cdt_custom_region_count_func_t *region_count_fn,
                           cdt_custom_region_func_t *region_fn, void *context, int inorder,
                           cdt_type *type)
{
    if (type == NULL || query_fn == NULL || pack_fn == NULL)
        return CDT_ERR_INVALID_ARG;
    if (region_count_fn != NULL && region_fn == NULL)
        return CDT_ERR_INVALID_ARG;

    struct cdt__custom *c = malloc(sizeof(*c));
    if (c == NULL)
        return CDT_ERR_NO_MEMORY;
    *c = (struct cdt__custom){
        .state_fn = state_fn,
        .state_free_fn = state_free_fn,
        .query_fn = query_fn,
        .pack_fn = pack_fn,
        .unpack_fn = unpack_fn,
        .region_count_fn = region_count_fn,
        .region_fn = region_fn,
        .context = context,
        .inorder = inorder != 0,
    };
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
