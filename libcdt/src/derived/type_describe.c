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

#include <string.h>

/* The text is counted in full and written as far as the buffer goes. Built from strings and
 * integers by hand: vsnprintf per number made describing a form of a few thousand entries cost
 * more than building it. */
typedef struct {
    char *buf;
    size_t len, pos;
} out;

static void put_str(out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->pos < o->len) {
        size_t room = o->len - o->pos;
        memcpy(o->buf + o->pos, s, n < room ? n : room);
    }
    o->pos += n;
}

static void put_int(out *o, int64_t v)
{
    char digits[24];
    char *p = digits + sizeof(digits);
    *--p = '\0';
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    put_str(o, p);
}

static void describe(out *o, const cdt__node *n)
{
    if ((n->kind == CDT__NODE_LEAF || n->kind == CDT__NODE_VECTOR) && n->off != 0) {
        put_str(o, "@");
        put_int(o, n->off);
        put_str(o, " ");
    }
    switch (n->kind) {
    case CDT__NODE_LEAF:
        put_str(o, "contig(");
        put_int(o, n->len);
        put_str(o, ")");
        break;
    case CDT__NODE_VECTOR:
        put_str(o, "vector(");
        put_int(o, n->count);
        put_str(o, ", ");
        put_int(o, n->stride);
        put_str(o, ", ");
        describe(o, n->child);
        put_str(o, ")");
        break;
    case CDT__NODE_BLOCK:
        put_str(o, "blockindexed([");
        for (cdt_count i = 0; i < n->count; i++) {
            if (i)
                put_str(o, ",");
            put_int(o, n->disps[i]);
        }
        put_str(o, "], ");
        describe(o, n->child);
        put_str(o, ")");
        break;
    case CDT__NODE_INDEXED:
        put_str(o, "indexed([");
        for (cdt_count i = 0; i < n->count; i++) {
            if (i)
                put_str(o, ",");
            put_int(o, n->disps[i]);
            put_str(o, ":");
            put_int(o, n->lens[i]);
        }
        put_str(o, "])");
        break;
    case CDT__NODE_STRUCT:
        put_str(o, "struct([");
        for (cdt_count i = 0; i < n->count; i++) {
            if (i)
                put_str(o, ",");
            put_int(o, n->disps[i]);
            put_str(o, ":");
            describe(o, n->children[i]);
        }
        put_str(o, "])");
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
        put_str(&o, "empty");
    else
        describe(&o, root);
    if (len > 0)
        buf[o.pos < len ? o.pos : len - 1] = '\0';
    if (needed != NULL)
        *needed = o.pos;
    return CDT_SUCCESS;
}
