/* TEMPORARY: contiguous-only cursor until the derived engine lands. To be deleted. */
#include "type.h"

#include <stdlib.h>
#include <string.h>

struct cdt__cursor {
    char *base;
    cdt_count bytes;
};

void cdt__derived_destroy(struct cdt__derived *derived)
{
    (void)derived;
}

int cdt_type_commit(cdt_type *type)
{
    if (type == NULL || *type == NULL)
        return CDT_ERR_INVALID_ARG;
    return (*type)->cls == CDT__CLASS_DERIVED ? CDT_ERR_UNSUPPORTED : CDT_SUCCESS;
}

int cdt__cursor_create(cdt_type type, const void *buf, cdt_count count, cdt__cursor **cursor)
{
    if (!(type->flags & CDT__TYPE_CONTIGUOUS))
        return CDT_ERR_UNSUPPORTED;
    cdt__cursor *c = malloc(sizeof(*c));
    if (c == NULL)
        return CDT_ERR_NO_MEMORY;
    c->base = (char *)buf + type->true_lb;
    c->bytes = type->size * count;
    *cursor = c;
    return CDT_SUCCESS;
}

int cdt__cursor_pack(cdt__cursor *c, cdt_count offset, void *dst, cdt_count len)
{
    memcpy(dst, c->base + offset, (size_t)len);
    return CDT_SUCCESS;
}

int cdt__cursor_unpack(cdt__cursor *c, cdt_count offset, const void *src, cdt_count len)
{
    memcpy(c->base + offset, src, (size_t)len);
    return CDT_SUCCESS;
}

void cdt__cursor_free(cdt__cursor *c)
{
    free(c);
}

int cdt_pack_size(cdt_count count, cdt_type type, cdt_count *size)
{
    if (type == NULL || size == NULL || count < 0 || type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_INVALID_ARG;
    *size = count * type->size;
    return CDT_SUCCESS;
}

int cdt_iov_get(const void *buf, cdt_count count, cdt_type type, cdt_count first, cdt_count max,
                cdt_iov iov[], cdt_count *n_out)
{
    if (!(type->flags & CDT__TYPE_CONTIGUOUS))
        return CDT_ERR_UNSUPPORTED;
    cdt_count k = 0;
    if (first == 0 && max > 0 && count > 0) {
        iov[0] = (cdt_iov){(char *)buf + type->true_lb, count * type->size};
        k = 1;
    }
    *n_out = k;
    return CDT_SUCCESS;
}
