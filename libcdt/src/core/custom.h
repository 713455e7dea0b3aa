/* custom.h - internal record of a custom datatype's callbacks. */
#ifndef CDT_CUSTOM_H
#define CDT_CUSTOM_H

#include "type.h"

struct cdt__custom {
    cdt_custom_state_func_t *state_fn;
    cdt_custom_state_free_func_t *state_free_fn;
    cdt_custom_query_func_t *query_fn;
    cdt_custom_pack_func_t *pack_fn;
    cdt_custom_unpack_func_t *unpack_fn;
    cdt_custom_region_count_func_t *region_count_fn;
    cdt_custom_region_func_t *region_fn;
    void *context;
    cdt_custom_context_free_func_t *context_free_fn; /* at the type's last reference */
    bool inorder;
};

#endif
