/*
 * seed_types.c - seed-paper object types as custom types.
 *
 * The struct types pack their scalar fields through a table of (packed offset, struct offset,
 * length) runs, so any fragment boundary works, also one inside a field, and fragments may be
 * unpacked in any order (inorder = 0). double_vec packs its lengths and needs them in order
 * (inorder = 1): the receiver cannot allocate before it has read them.
 */
#include "seed_types.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- struct types: field runs ---- */

typedef struct field_run {
    cdt_count packed_off, struct_off, len;
} field_run;

typedef struct field_map {
    const field_run *runs;
    int nruns;
    cdt_count record_packed; /* packed bytes per element */
    cdt_count record_extent; /* sizeof the C struct */
    cdt_count region_off;    /* offset of the int32 array region, -1 if none */
    cdt_count region_len;    /* int32 elements */
} field_map;

static const field_run vec_runs[] = {
    {0, offsetof(struct_vec, a), 12},
    {12, offsetof(struct_vec, d), 8},
};
static const field_run simple_runs[] = {
    {0, offsetof(struct_simple, a), 12},
    {12, offsetof(struct_simple, d), 8},
};
static const field_run no_gap_runs[] = {
    {0, offsetof(struct_simple_no_gap, a), 16},
};
static const field_map vec_map = {
    vec_runs, 2, 20, sizeof(struct_vec), offsetof(struct_vec, data), STRUCT_VEC_DATA_LEN};
static const field_map simple_map = {simple_runs, 2, 20, sizeof(struct_simple), -1, 0};
static const field_map no_gap_map = {no_gap_runs, 1, 16, sizeof(struct_simple_no_gap), -1, 0};

static void map_copy_edge(const field_map *m, char *obj, cdt_count offset, char *packed,
                          cdt_count len, int to_packed);

/* whole records [first, first + n) with every field copied at a size the compiler knows, as
 * a hand-written pack loop would: the common case of a fragment that is not split mid-record */
#define MAP_WHOLE_RECORDS(TYPE, RECORD_PACKED, COPY_FIELDS)                                        \
    do {                                                                                           \
        TYPE *o_ = (TYPE *)obj + first;                                                            \
        for (cdt_count i_ = 0; i_ < n; i_++, o_++, packed += (RECORD_PACKED)) {                    \
            COPY_FIELDS;                                                                           \
        }                                                                                          \
    } while (0)

static int map_copy_records(const field_map *m, char *obj, cdt_count first, cdt_count n,
                            char *packed, int to_packed)
{
#define MOVE(field, at, len)                                                                       \
    (to_packed ? memcpy(packed + (at), (char *)&o_->field, len)                                    \
               : memcpy((char *)&o_->field, packed + (at), len))
    if (m == &simple_map) {
        MAP_WHOLE_RECORDS(struct_simple, 20, (MOVE(a, 0, 12), MOVE(d, 12, 8)));
        return 1;
    }
    if (m == &no_gap_map) {
        MAP_WHOLE_RECORDS(struct_simple_no_gap, 16, MOVE(a, 0, 16));
        return 1;
    }
    if (m == &vec_map) {
        MAP_WHOLE_RECORDS(struct_vec, 20, (MOVE(a, 0, 12), MOVE(d, 12, 8)));
        return 1;
    }
#undef MOVE
    return 0;
}

/* copy packed bytes [offset, offset + len) between the packed stream and the objects */
static void map_copy(const field_map *m, char *obj, cdt_count offset, char *packed, cdt_count len,
                     int to_packed)
{
    cdt_count end = offset + len;
    /* record-aligned middle part through the fixed-size loop; the split edges below */
    cdt_count first = (offset + m->record_packed - 1) / m->record_packed;
    cdt_count last = end / m->record_packed;
    if (last > first) {
        cdt_count head = first * m->record_packed - offset;
        if (head > 0)
            map_copy_edge(m, obj, offset, packed, head, to_packed);
        if (map_copy_records(m, obj, first, last - first, packed + head, to_packed)) {
            cdt_count done = last * m->record_packed - offset;
            if (done < len)
                map_copy_edge(m, obj, last * m->record_packed, packed + done, len - done,
                              to_packed);
            return;
        }
        offset += head;
        packed += head;
        len -= head;
    }
    map_copy_edge(m, obj, offset, packed, len, to_packed);
}

/* the general walk: any byte range, fields split anywhere */
static void map_copy_edge(const field_map *m, char *obj, cdt_count offset, char *packed,
                          cdt_count len, int to_packed)
{
    cdt_count end = offset + len;
    for (cdt_count pos = offset; pos < end;) {
        cdt_count rec = pos / m->record_packed, in = pos % m->record_packed;
        for (int r = 0; r < m->nruns && pos < end; r++) {
            const field_run *run = &m->runs[r];
            if (in >= run->packed_off + run->len)
                continue;
            cdt_count skip = in - run->packed_off;
            cdt_count n = run->len - skip < end - pos ? run->len - skip : end - pos;
            char *field = obj + rec * m->record_extent + run->struct_off + skip;
            if (to_packed)
                memcpy(packed + (pos - offset), field, (size_t)n);
            else
                memcpy(field, packed + (pos - offset), (size_t)n);
            pos += n;
            in += n;
        }
    }
}

static int map_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    const field_map *m = state;
    (void)buf;
    *size = count * m->record_packed;
    return CDT_SUCCESS;
}

static int map_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                    cdt_count dst_size, cdt_count *used)
{
    const field_map *m = state;
    cdt_count n = count * m->record_packed - offset;
    if (n > dst_size)
        n = dst_size;
    map_copy(m, (char *)buf, offset, dst, n, 1);
    *used = n;
    return CDT_SUCCESS;
}

static int map_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                      cdt_count src_size)
{
    const field_map *m = state;
    if (offset + src_size > count * m->record_packed)
        return CDT_ERR_TRUNCATED;
    map_copy(m, buf, offset, (char *)src, src_size, 0);
    return CDT_SUCCESS;
}

static int map_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    const field_map *m = state;
    (void)buf;
    *n = m->region_off >= 0 ? count : 0;
    return CDT_SUCCESS;
}

static int map_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                       cdt_count lens[], cdt_type types[])
{
    const field_map *m = state;
    (void)count;
    for (cdt_count i = 0; i < n; i++) {
        bases[i] = (char *)buf + i * m->record_extent + m->region_off;
        lens[i] = m->region_len;
        types[i] = CDT_INT32;
    }
    return CDT_SUCCESS;
}

/* the map is constant, so the "state" is just the context */
static int map_state(void *context, const void *src, cdt_count count, void **state)
{
    (void)src;
    (void)count;
    *state = context;
    return CDT_SUCCESS;
}

/* ---- double_vec ---- */

/* packed stream: u64 n, then n x u64 lengths (host byte order) */
typedef struct dv_state {
    unsigned char *head; /* the packed stream, built (send) or collected (receive) */
    cdt_count head_len, received;
} dv_state;

static int dv_state_new(void *context, const void *src, cdt_count count, void **state)
{
    (void)context;
    if (count != 1)
        return CDT_ERR_INVALID_ARG;
    const double_vec *v = src;
    dv_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return CDT_ERR_NO_MEMORY;
    if (v->n > 0 && v->lens != NULL) { /* send side: serialise the lengths now */
        s->head_len = 8 * (1 + v->n);
        s->head = malloc((size_t)s->head_len);
        if (s->head == NULL) {
            free(s);
            return CDT_ERR_NO_MEMORY;
        }
        uint64_t n = (uint64_t)v->n;
        memcpy(s->head, &n, 8);
        for (cdt_count i = 0; i < v->n; i++) {
            uint64_t len = (uint64_t)v->lens[i];
            memcpy(s->head + 8 * (1 + i), &len, 8);
        }
    } else {
        s->head_len = 8;
    }
    *state = s;
    return CDT_SUCCESS;
}

static int dv_state_free(void *state)
{
    dv_state *s = state;
    free(s->head);
    free(s);
    return CDT_SUCCESS;
}

static int dv_query(void *state, const void *buf, cdt_count count, cdt_count *size)
{
    (void)buf;
    (void)count;
    *size = ((dv_state *)state)->head_len;
    return CDT_SUCCESS;
}

static int dv_pack(void *state, const void *buf, cdt_count count, cdt_count offset, void *dst,
                   cdt_count dst_size, cdt_count *used)
{
    dv_state *s = state;
    (void)buf;
    (void)count;
    if (s->head == NULL) { /* empty list: just n = 0 */
        static const unsigned char zero[8];
        cdt_count n = 8 - offset < dst_size ? 8 - offset : dst_size;
        memcpy(dst, zero + offset, (size_t)n);
        *used = n;
        return CDT_SUCCESS;
    }
    cdt_count n = s->head_len - offset < dst_size ? s->head_len - offset : dst_size;
    memcpy(dst, s->head + offset, (size_t)n);
    *used = n;
    return CDT_SUCCESS;
}

/* A receiver allocates from lengths it reads before the library can compare them with the
 * frame header, so it bounds them itself: a hostile stream cannot make it allocate more. */
#define DV_MAX_ARRAYS (1 << 24)
#define DV_MAX_TOTAL_BYTES ((uint64_t)1 << 30)

/* Receive the packed stream in order: first n, then n lengths; allocate once all are known. */
static int dv_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                     cdt_count src_size)
{
    dv_state *s = state;
    double_vec *v = buf;
    (void)count;
    if (offset != s->received) /* inorder = 1: the engine guarantees this */
        return CDT_ERR_CALLBACK;
    if (s->head == NULL && (s->head = malloc(8)) == NULL)
        return CDT_ERR_NO_MEMORY;
    const unsigned char *in = src;
    while (src_size > 0) {
        if (s->received == s->head_len)
            return CDT_ERR_TRUNCATED; /* more bytes than the lengths announce */
        cdt_count n = s->head_len - s->received < src_size ? s->head_len - s->received : src_size;
        memcpy(s->head + s->received, in, (size_t)n);
        s->received += n;
        in += n;
        src_size -= n;
        if (s->received == 8 && s->head_len == 8) { /* n known: make room for the lengths */
            uint64_t arrays;
            memcpy(&arrays, s->head, 8);
            if (arrays > DV_MAX_ARRAYS)
                return CDT_ERR_TRUNCATED;
            s->head_len = 8 * (1 + (cdt_count)arrays);
            unsigned char *grown = realloc(s->head, (size_t)s->head_len);
            if (grown == NULL)
                return CDT_ERR_NO_MEMORY;
            s->head = grown;
        }
    }
    if (s->received < s->head_len || v->data != NULL)
        return CDT_SUCCESS;
    /* all lengths known: allocate every array before their bytes arrive */
    uint64_t arrays, total = 0;
    memcpy(&arrays, s->head, 8);
    for (uint64_t i = 0; i < arrays; i++) {
        uint64_t len;
        memcpy(&len, s->head + 8 * (1 + i), 8);
        if (len > DV_MAX_TOTAL_BYTES / sizeof(int32_t) ||
            (total += len * sizeof(int32_t)) > DV_MAX_TOTAL_BYTES)
            return CDT_ERR_TRUNCATED;
    }
    v->n = (cdt_count)arrays;
    v->lens = calloc(arrays ? arrays : 1, sizeof(cdt_count));
    v->data = calloc(arrays ? arrays : 1, sizeof(int32_t *));
    if (v->lens == NULL || v->data == NULL)
        return CDT_ERR_NO_MEMORY;
    for (cdt_count i = 0; i < v->n; i++) {
        uint64_t len;
        memcpy(&len, s->head + 8 * (1 + i), 8);
        v->lens[i] = (cdt_count)len;
        v->data[i] = malloc(len ? len * sizeof(int32_t) : 1);
        if (v->data[i] == NULL)
            return CDT_ERR_NO_MEMORY;
    }
    return CDT_SUCCESS;
}

static int dv_region_count(void *state, void *buf, cdt_count count, cdt_count *n)
{
    (void)state;
    (void)count;
    *n = ((double_vec *)buf)->n;
    return CDT_SUCCESS;
}

static int dv_regions(void *state, void *buf, cdt_count count, cdt_count n, void *bases[],
                      cdt_count lens[], cdt_type types[])
{
    (void)state;
    (void)count;
    double_vec *v = buf;
    for (cdt_count i = 0; i < n; i++) {
        bases[i] = v->data[i];
        lens[i] = v->lens[i];
        types[i] = CDT_INT32;
    }
    return CDT_SUCCESS;
}

/* ---- type singletons ---- */

static cdt_type types[4];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Every unpack callback here reads each byte of its fragment once: the field maps copy bytes
 * into the objects, and double_vec copies its lengths into its state before it reads them. So
 * each type says so (CDT_CUSTOM_FLAG_UNPACK_READS_ONCE), and a local lane hands them bytes
 * straight out of its segment, without a private copy (docs/TRANSPORT.md §10.4). */
static cdt_type create(cdt_custom_state_func_t *state_fn, cdt_custom_state_free_func_t *free_fn,
                       cdt_custom_query_func_t *query_fn, cdt_custom_pack_func_t *pack_fn,
                       cdt_custom_unpack_func_t *unpack_fn,
                       cdt_custom_region_count_func_t *region_count_fn,
                       cdt_custom_region_func_t *region_fn, void *context, int inorder)
{
    cdt_custom_params p = {
        .field_mask = CDT_CUSTOM_PARAM_STATE | CDT_CUSTOM_PARAM_STATE_FREE |
                      CDT_CUSTOM_PARAM_QUERY | CDT_CUSTOM_PARAM_PACK | CDT_CUSTOM_PARAM_UNPACK |
                      CDT_CUSTOM_PARAM_REGIONS | CDT_CUSTOM_PARAM_CONTEXT |
                      CDT_CUSTOM_PARAM_INORDER | CDT_CUSTOM_PARAM_FLAGS,
        .state_fn = state_fn,
        .state_free_fn = free_fn,
        .query_fn = query_fn,
        .pack_fn = pack_fn,
        .unpack_fn = unpack_fn,
        .region_count_fn = region_count_fn,
        .region_fn = region_fn,
        .context = context,
        .inorder = inorder,
        .flags = CDT_CUSTOM_FLAG_UNPACK_READS_ONCE,
    };
    cdt_type t;
    return cdt_type_create_custom_advanced(&p, &t) == CDT_SUCCESS ? t : NULL;
}

static void create_types(void)
{
    const field_map *maps[3] = {&vec_map, &simple_map, &no_gap_map};
    for (int i = 0; i < 3; i++)
        types[i] = create(map_state, NULL, map_query, map_pack, map_unpack,
                          maps[i]->region_off >= 0 ? map_region_count : NULL,
                          maps[i]->region_off >= 0 ? map_regions : NULL, (void *)maps[i], 0);
    types[3] = create(dv_state_new, dv_state_free, dv_query, dv_pack, dv_unpack, dv_region_count,
                      dv_regions, NULL, 1);
}

cdt_type struct_vec_type(void)
{
    pthread_once(&once, create_types);
    return types[0];
}
cdt_type struct_simple_type(void)
{
    pthread_once(&once, create_types);
    return types[1];
}
cdt_type struct_simple_no_gap_type(void)
{
    pthread_once(&once, create_types);
    return types[2];
}
cdt_type double_vec_type(void)
{
    pthread_once(&once, create_types);
    return types[3];
}

int struct_simple_padded_type_create(cdt_type *out)
{
    const cdt_count blocks[2] = {3, 1}; /* a, b, c; d */
    const cdt_count at[2] = {offsetof(struct_simple, a), offsetof(struct_simple, d)};
    const cdt_type kinds[2] = {CDT_INT32, CDT_DOUBLE};
    cdt_type fields = NULL, record = NULL;
    int rc = cdt_type_struct(2, blocks, at, kinds, &fields);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_resized(fields, 0, sizeof(struct_simple), &record);
    if (rc == CDT_SUCCESS)
        rc = cdt_type_padded(record, out);
    if (rc == CDT_SUCCESS && (rc = cdt_type_commit(out)) != CDT_SUCCESS)
        cdt_type_free(out);
    cdt_type_free(&record);
    cdt_type_free(&fields);
    return rc;
}

/* ---- helpers for examples and tests ---- */

int double_vec_init(double_vec *v, cdt_count n, cdt_count len, int seed)
{
    memset(v, 0, sizeof(*v));
    v->n = n;
    v->lens = calloc(n ? (size_t)n : 1, sizeof(cdt_count));
    v->data = calloc(n ? (size_t)n : 1, sizeof(int32_t *));
    if (v->lens == NULL || v->data == NULL)
        goto fail;
    for (cdt_count i = 0; i < n; i++) {
        v->lens[i] = len;
        v->data[i] = malloc(len ? (size_t)len * sizeof(int32_t) : 1);
        if (v->data[i] == NULL)
            goto fail;
        for (cdt_count j = 0; j < len; j++)
            v->data[i][j] = (int32_t)(seed + i * 1000 + j);
    }
    return CDT_SUCCESS;
fail:
    double_vec_clear(v);
    return CDT_ERR_NO_MEMORY;
}

void double_vec_clear(double_vec *v)
{
    if (v->data != NULL)
        for (cdt_count i = 0; i < v->n; i++)
            free(v->data[i]);
    free(v->data);
    free(v->lens);
    memset(v, 0, sizeof(*v));
}

int double_vec_equal(const double_vec *a, const double_vec *b)
{
    if (a->n != b->n)
        return 0;
    for (cdt_count i = 0; i < a->n; i++)
        if (a->lens[i] != b->lens[i] ||
            memcmp(a->data[i], b->data[i], (size_t)a->lens[i] * sizeof(int32_t)) != 0)
            return 0;
    return 1;
}

void struct_vec_fill(struct_vec *v, cdt_count count, int seed)
{
    for (cdt_count i = 0; i < count; i++) {
        v[i].a = seed + (int32_t)i;
        v[i].b = -seed - (int32_t)i;
        v[i].c = 7 * (int32_t)i;
        v[i].d = 0.5 * (double)(seed + i);
        for (int j = 0; j < STRUCT_VEC_DATA_LEN; j++)
            v[i].data[j] = seed ^ (int32_t)(i * 31 + j);
    }
}

void struct_simple_fill(struct_simple *v, cdt_count count, int seed)
{
    for (cdt_count i = 0; i < count; i++)
        v[i] = (struct_simple){seed + (int32_t)i, -seed, (int32_t)i * 3, 0.25 * (double)i};
}

void struct_simple_no_gap_fill(struct_simple_no_gap *v, cdt_count count, int seed)
{
    for (cdt_count i = 0; i < count; i++)
        v[i] = (struct_simple_no_gap){seed + (int32_t)i, -(int32_t)i, 1.5 * (double)i};
}

int struct_vec_equal(const struct_vec *a, const struct_vec *b, cdt_count count)
{
    for (cdt_count i = 0; i < count; i++)
        if (a[i].a != b[i].a || a[i].b != b[i].b || a[i].c != b[i].c || a[i].d != b[i].d ||
            memcmp(a[i].data, b[i].data, sizeof(a[i].data)) != 0)
            return 0;
    return 1;
}

int struct_simple_equal(const struct_simple *a, const struct_simple *b, cdt_count count)
{
    for (cdt_count i = 0; i < count; i++)
        if (a[i].a != b[i].a || a[i].b != b[i].b || a[i].c != b[i].c || a[i].d != b[i].d)
            return 0;
    return 1;
}

int struct_simple_no_gap_equal(const struct_simple_no_gap *a, const struct_simple_no_gap *b,
                               cdt_count count)
{
    for (cdt_count i = 0; i < count; i++)
        if (a[i].a != b[i].a || a[i].b != b[i].b || a[i].c != b[i].c)
            return 0;
    return 1;
}
