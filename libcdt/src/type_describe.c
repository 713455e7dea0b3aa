/*
 * type_describe.c - text of a committed type's canonical form (docs/ENGINE.md), e.g.
 *   contig(32)                       one run of 32 bytes
 *   vector(1000, 24, contig(8))      count, byte stride, child
 *   blockindexed([0,48,16], contig(24))
 *   indexed([0:12,16:8])             displacement:length runs
 *   struct([0:contig(8),64:vector(4, 16, contig(4))])
 * A node that does not start at byte 0 is prefixed with "@off ".
 */
#include "derived.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

typedef struct {
    char *buf;
    size_t len, pos;
} out;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = o->pos < o->len ? o->buf + o->pos : NULL;
    size_t room = o->pos < o->len ? o->len - o->pos : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->pos += (size_t)n;
}

static void describe(out *o, const cdt__node *n)
{
    if ((n->kind == CDT__NODE_LEAF || n->kind == CDT__NODE_VECTOR) && n->off != 0)
        put(o, "@%" PRId64 " ", n->off);
    switch (n->kind) {
    case CDT__NODE_LEAF:
        put(o, "contig(%" PRId64 ")", n->len);
        break;
    case CDT__NODE_VECTOR:
        put(o, "vector(%" PRId64 ", %" PRId64 ", ", n->count, n->stride);
        describe(o, n->child);
        put(o, ")");
        break;
    case CDT__NODE_BLOCK:
        put(o, "blockindexed([");
        for (cdt_count i = 0; i < n->count; i++)
            put(o, i ? ",%" PRId64 : "%" PRId64, n->disps[i]);
        put(o, "], ");
        describe(o, n->child);
        put(o, ")");
        break;
    case CDT__NODE_INDEXED:
        put(o, "indexed([");
        for (cdt_count i = 0; i < n->count; i++)
            put(o, "%s%" PRId64 ":%" PRId64, i ? "," : "", n->disps[i], n->lens[i]);
        put(o, "])");
        break;
    case CDT__NODE_STRUCT:
        put(o, "struct([");
        for (cdt_count i = 0; i < n->count; i++) {
            put(o, "%s%" PRId64 ":", i ? "," : "", n->disps[i]);
            describe(o, n->children[i]);
        }
        put(o, "])");
        break;
    }
}

int cdt_type_describe(cdt_type type, char *buf, size_t len, size_t *needed)
{
    if (type == NULL || (buf == NULL && len > 0))
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED;
    if (!(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED;
    cdt__node *root;
    int rc = cdt__type_form(type, &root);
    if (rc != CDT_SUCCESS)
        return rc;
    out o = {buf, len, 0};
    if (root->size == 0)
        put(&o, "empty");
    else
        describe(&o, root);
    if (len > 0 && o.pos >= len)
        buf[len - 1] = '\0';
    if (needed != NULL)
        *needed = o.pos;
    return CDT_SUCCESS;
}
