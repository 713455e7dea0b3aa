/*
 * test_threads.c - committed types shared by several threads (run it under ThreadSanitizer:
 * scripts/test builds it with -DCDT_SANITIZE=thread).
 *
 * Phases, each started by all threads at once (a barrier):
 *   leaf     every thread asks for the predefined types first (the leaf table is filled by
 *            whichever thread comes first) and derives from them
 *   shared   the reproducer of the double free: 4 threads each run 20,000 times
 *            contiguous(1, X) / commit / free on one shared committed X = vector(4, 1, 2, INT32)
 *   parents  every thread derives from the same UNCOMMITTED child types and commits the parent
 *            (a parent's commit must not race on the child's canonical form)
 *   mixed    on shared committed types (derived of depth 3, a struct, custom types): derive,
 *            commit, pack, unpack, copy, iov, frame encode/decode, the streaming decoder with
 *            the serialized-object adapter, free; every result is compared byte for byte with
 *            what the main thread computed alone before the threads started.
 * Pass/fail never depends on timing: the work is fixed, only the interleaving varies.
 * Usage: test_threads [ITERATIONS [THREADS]]   (mixed-phase iterations per thread, default 20000;
 *        threads, default 4, at most 16: THREADS=1 checks the test itself without concurrency)
 */
#include "seed_types.h"
#include <cdt.h>
#include <cdt_sobj.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_THREADS = 16, SHARED_ITERS = 20000, PARENT_ITERS = 2000, D_COUNT = 3, S_COUNT = 5 };

/* Per-thread counters, summed after the threads are joined. A shared atomic counter would
 * order the threads at every check and hide from ThreadSanitizer the races between them. */
static _Thread_local long checks, failures;
static long total_checks, total_failures;

#define TCHECK(cond)                                                                               \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            if (failures++ < 10)                                                                   \
                fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);           \
        }                                                                                          \
    } while (0)
#define TCHECK_OK(call)                                                                            \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        checks++;                                                                                  \
        if (rc_ != CDT_SUCCESS) {                                                                  \
            if (failures++ < 10)                                                                   \
                fprintf(stderr, "%s:%d: %s returned %s\n", __FILE__, __LINE__, #call,              \
                        cdt_err_name(rc_));                                                        \
        }                                                                                          \
    } while (0)

typedef struct rec {
    int32_t a;
    double b;
    int16_t c[3];
} rec;

/* what the main thread computed before the threads start */
static struct {
    cdt_type x;       /* vector(4, 1, 2, INT32), committed: the reproducer's type */
    cdt_type d;       /* depth 3: indexed(hvector(X)), committed */
    cdt_type s;       /* struct {int32; double; int16[3]}, resized to sizeof(rec), committed */
    cdt_type u1, u2;  /* uncommitted children, shared by the parents phase */
    cdt_type custom;  /* struct_vec (custom type with regions) */
    cdt_type dvec;    /* double_vec (custom type, receiver allocates) */
    cdt_count d_span; /* bytes of memory D_COUNT elements of d touch from buf */
    unsigned char *d_src, *d_packed, *d_unpacked;
    cdt_count d_size; /* packed bytes of (D_COUNT, d) */
    cdt_count d_niov; /* pieces of (d_src, D_COUNT, d) */
    cdt_iov *d_iov;   /* with bases relative to d_src */
    rec s_src[S_COUNT];
    unsigned char *s_packed, s_unpacked[sizeof(rec) * S_COUNT];
    cdt_count s_size;
    cdt_count parent_size[2];
    char parent_desc[2][512];
} g;

static pthread_barrier_t barrier;

static unsigned char *pack_all(const void *buf, cdt_count count, cdt_type type, cdt_count *size)
{
    cdt_op op;
    unsigned char *out = NULL;
    *size = -1;
    if (cdt_op_pack_begin(buf, count, type, &op) != CDT_SUCCESS)
        return NULL;
    cdt_count n = 0, used = 0;
    if (cdt_op_packed_size(op, &n) == CDT_SUCCESS && (out = malloc(n ? (size_t)n : 1)) != NULL) {
        /* two fragments, the first splitting an element */
        cdt_count first = n / 3, used2 = 0;
        if (cdt_op_pack(op, 0, out, first, &used) != CDT_SUCCESS || used != first ||
            cdt_op_pack(op, first, out + first, n - first, &used2) != CDT_SUCCESS ||
            used2 != n - first) {
            free(out);
            out = NULL;
        } else {
            *size = n;
        }
    }
    cdt_op_end(op);
    return out;
}

/* unpack in three fragments, the last first */
static int unpack_all(void *buf, cdt_count count, cdt_type type, const unsigned char *src,
                      cdt_count n)
{
    cdt_op op;
    int rc = cdt_op_unpack_begin(buf, count, type, &op);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count a = n / 4, b = n / 2;
    if (rc == CDT_SUCCESS)
        rc = cdt_op_unpack(op, b, src + b, n - b);
    if (rc == CDT_SUCCESS)
        rc = cdt_op_unpack(op, 0, src, a);
    if (rc == CDT_SUCCESS)
        rc = cdt_op_unpack(op, a, src + a, b - a);
    cdt_count done = -1;
    if (rc == CDT_SUCCESS)
        rc = cdt_op_unpacked_bytes(op, &done);
    if (rc == CDT_SUCCESS && done != n)
        rc = CDT_ERR_INCOMPLETE;
    int end = cdt_op_end(op);
    return rc != CDT_SUCCESS ? rc : end;
}

static void die(const char *what)
{
    fprintf(stderr, "test_threads: setup failed: %s\n", what);
    exit(1);
}

#define SETUP(call)                                                                                \
    do {                                                                                           \
        if ((call) != CDT_SUCCESS)                                                                 \
            die(#call);                                                                            \
    } while (0)

/* ---------------------------------------------------------------- leaf ------------------ */

static void leaf_phase(int id)
{
    static const cdt_kind kinds[] = {
        CDT_KIND_BYTE,  CDT_KIND_CHAR,   CDT_KIND_INT8,   CDT_KIND_INT16,         CDT_KIND_INT32,
        CDT_KIND_INT64, CDT_KIND_UINT8,  CDT_KIND_UINT16, CDT_KIND_UINT32,        CDT_KIND_UINT64,
        CDT_KIND_FLOAT, CDT_KIND_DOUBLE, CDT_KIND_BOOL,   CDT_KIND_COMPLEX_DOUBLE};
    const size_t n = sizeof(kinds) / sizeof(kinds[0]);
    for (size_t j = 0; j < n; j++) {
        size_t i = (j + (size_t)id * 4) % n; /* each thread is first to some kinds */
        cdt_type leaf = cdt_type_predefined(kinds[i]);
        TCHECK(leaf != NULL);
        cdt_kind k;
        TCHECK_OK(cdt_type_kind(leaf, &k));
        TCHECK(k == kinds[i]);
        cdt_count size = 0;
        TCHECK_OK(cdt_type_size(leaf, &size));
        TCHECK(size == cdt_kind_size(kinds[i]));
        cdt_type p = NULL;
        TCHECK_OK(cdt_type_vector(3, 1, 2, leaf, &p));
        TCHECK_OK(cdt_type_commit(&p));
        TCHECK_OK(cdt_type_size(p, &size));
        TCHECK(size == 3 * cdt_kind_size(kinds[i]));
        TCHECK_OK(cdt_type_free(&p));
    }
    TCHECK(cdt_sobj_type() != NULL);
}

/* ---------------------------------------------------------------- shared (reproducer) ---- */

static void shared_phase(void)
{
    cdt_type X = g.x;
    for (int i = 0; i < SHARED_ITERS; i++) {
        cdt_type p;
        cdt_type_contiguous(1, X, &p);
        cdt_type_commit(&p);
        cdt_type_free(&p);
    }
}

/* ---------------------------------------------------------------- parents ---------------- */

static void parents_phase(int id)
{
    char desc[512];
    for (int i = 0; i < PARENT_ITERS; i++) {
        int which = (i + id) & 1;
        cdt_type p = NULL;
        if (which == 0)
            TCHECK_OK(cdt_type_hvector(2, 1, 200, g.u1, &p));
        else
            TCHECK_OK(cdt_type_contiguous(3, g.u2, &p));
        TCHECK_OK(cdt_type_commit(&p));
        cdt_count size = -1;
        TCHECK_OK(cdt_type_size(p, &size));
        TCHECK(size == g.parent_size[which]);
        if (i % 64 == 0) {
            TCHECK_OK(cdt_type_describe(p, desc, sizeof(desc), NULL));
            TCHECK(strcmp(desc, g.parent_desc[which]) == 0);
        }
        TCHECK_OK(cdt_type_free(&p));
    }
}

/* ---------------------------------------------------------------- mixed ------------------ */

static void mixed_derived(void)
{
    /* derive from the shared committed type and commit */
    cdt_type p = NULL, r = NULL;
    TCHECK_OK(cdt_type_contiguous(D_COUNT, g.d, &p));
    TCHECK_OK(cdt_type_commit(&p));
    cdt_count lb, extent;
    TCHECK_OK(cdt_type_extent(g.d, &lb, &extent));
    TCHECK_OK(cdt_type_resized(g.d, lb, extent, &r));
    TCHECK_OK(cdt_type_commit(&r));

    /* pack (through the new parent) and compare */
    cdt_count n;
    unsigned char *packed = pack_all(g.d_src, 1, p, &n);
    TCHECK(packed != NULL && n == g.d_size && memcmp(packed, g.d_packed, (size_t)n) == 0);

    /* unpack into zeroed memory and compare */
    unsigned char *dst = calloc(1, (size_t)g.d_span);
    TCHECK(dst != NULL);
    if (packed != NULL && dst != NULL) {
        TCHECK_OK(unpack_all(dst, D_COUNT, r, packed, n));
        TCHECK(memcmp(dst, g.d_unpacked, (size_t)g.d_span) == 0);
    }

    /* copy between layouts */
    unsigned char *flat = malloc((size_t)g.d_size);
    TCHECK(flat != NULL);
    if (flat != NULL) {
        TCHECK_OK(cdt_copy(g.d_src, D_COUNT, g.d, flat, g.d_size, CDT_BYTE));
        TCHECK(memcmp(flat, g.d_packed, (size_t)g.d_size) == 0);
        if (dst != NULL) {
            memset(dst, 0, (size_t)g.d_span);
            TCHECK_OK(cdt_copy(flat, g.d_size, CDT_BYTE, dst, 1, p));
            TCHECK(memcmp(dst, g.d_unpacked, (size_t)g.d_span) == 0);
        }
    }

    /* iov */
    cdt_count niov = -1, got = -1;
    TCHECK_OK(cdt_iov_count(g.d_src, D_COUNT, g.d, &niov));
    TCHECK(niov == g.d_niov);
    cdt_iov *iov = calloc((size_t)g.d_niov, sizeof(cdt_iov));
    TCHECK(iov != NULL);
    if (niov == g.d_niov && iov != NULL) {
        TCHECK_OK(cdt_iov_get(g.d_src, 1, p, 0, niov, iov, &got));
        TCHECK(got == niov);
        for (cdt_count i = 0; i < got && i < niov; i++)
            TCHECK((unsigned char *)iov[i].base - g.d_src == (ptrdiff_t)g.d_iov[i].base &&
                   iov[i].len == g.d_iov[i].len);
    }
    free(iov);

    /* frame encode / decode of the derived type */
    cdt_frame f;
    TCHECK_OK(cdt_frame_encode(g.d_src, D_COUNT, g.d, NULL, &f));
    cdt_count fsize = 0;
    TCHECK_OK(cdt_frame_size(f, &fsize));
    unsigned char *wire = malloc(fsize > 0 ? (size_t)fsize : 1);
    TCHECK(wire != NULL);
    if (wire != NULL && dst != NULL) {
        TCHECK_OK(cdt_frame_gather(f, 0, wire, fsize));
        memset(dst, 0, (size_t)g.d_span);
        TCHECK_OK(cdt_frame_decode(wire, fsize, dst, D_COUNT, g.d));
        TCHECK(memcmp(dst, g.d_unpacked, (size_t)g.d_span) == 0);
    }
    TCHECK_OK(cdt_frame_free(f));

    /* the struct type */
    cdt_count sn;
    unsigned char *spacked = pack_all(g.s_src, S_COUNT, g.s, &sn);
    TCHECK(spacked != NULL && sn == g.s_size && memcmp(spacked, g.s_packed, (size_t)sn) == 0);
    unsigned char sdst[sizeof(rec) * S_COUNT];
    memset(sdst, 0, sizeof(sdst));
    if (spacked != NULL) {
        TCHECK_OK(unpack_all(sdst, S_COUNT, g.s, spacked, sn));
        TCHECK(memcmp(sdst, g.s_unpacked, sizeof(sdst)) == 0);
    }

    free(spacked);
    free(wire);
    free(flat);
    free(dst);
    free(packed);
    TCHECK_OK(cdt_type_free(&r));
    TCHECK_OK(cdt_type_free(&p));
}

static void mixed_custom(int id, int i)
{
    /* struct_vec: fields packed, data as a region; through a gathered frame */
    enum { SV = 2 };
    struct_vec *sv = malloc(SV * sizeof(*sv)), *sv2 = calloc(SV, sizeof(*sv2));
    TCHECK(sv != NULL && sv2 != NULL);
    if (sv != NULL && sv2 != NULL) {
        struct_vec_fill(sv, SV, id * 1000 + i);
        cdt_frame f;
        TCHECK_OK(cdt_frame_encode(sv, SV, g.custom, NULL, &f));
        cdt_count fsize = 0;
        TCHECK_OK(cdt_frame_size(f, &fsize));
        unsigned char *wire = malloc((size_t)fsize);
        TCHECK(wire != NULL);
        if (wire != NULL) {
            TCHECK_OK(cdt_frame_gather(f, 0, wire, fsize));
            TCHECK_OK(cdt_frame_decode(wire, fsize, sv2, SV, g.custom));
            TCHECK(struct_vec_equal(sv, sv2, SV));
        }
        free(wire);
        TCHECK_OK(cdt_frame_free(f));
    }
    free(sv);
    free(sv2);

    /* double_vec: the receiver allocates from the lengths */
    double_vec v, v2 = {0};
    TCHECK_OK(double_vec_init(&v, 1 + i % 3, 1 + (id * 7 + i) % 50, id + i));
    cdt_frame f;
    TCHECK_OK(cdt_frame_encode(&v, 1, g.dvec, NULL, &f));
    cdt_count fsize = 0;
    TCHECK_OK(cdt_frame_size(f, &fsize));
    unsigned char *wire = malloc((size_t)fsize);
    if (wire != NULL) {
        TCHECK_OK(cdt_frame_gather(f, 0, wire, fsize));
        TCHECK_OK(cdt_frame_decode(wire, fsize, &v2, 1, g.dvec));
        TCHECK(double_vec_equal(&v, &v2));
    }
    TCHECK_OK(cdt_frame_free(f));
    free(wire);
    double_vec_clear(&v);
    double_vec_clear(&v2);

    /* the serialized-object adapter through the streaming decoder, pieces out of order */
    unsigned char inband[37];
    double b0[300];
    int32_t b1[5];
    for (size_t k = 0; k < sizeof(inband); k++)
        inband[k] = (unsigned char)(id * 31 + i + k);
    for (int k = 0; k < 300; k++)
        b0[k] = id + i * 0.5 + k;
    for (int k = 0; k < 5; k++)
        b1[k] = id * 100 + i + k;
    cdt_sobj_buffer bufs[2] = {{b0, sizeof(b0), CDT_KIND_DOUBLE}, {b1, sizeof(b1), CDT_KIND_INT32}};
    cdt_sobj o = {.inband = inband, .inband_len = sizeof(inband), .buffers = bufs, .nbuffers = 2};
    TCHECK_OK(cdt_frame_encode(&o, 1, cdt_sobj_type(), NULL, &f));
    TCHECK_OK(cdt_frame_size(f, &fsize));
    wire = malloc((size_t)fsize);
    if (wire != NULL) {
        TCHECK_OK(cdt_frame_gather(f, 0, wire, fsize));
        cdt_decoder dec;
        TCHECK_OK(cdt_decoder_create(wire, fsize, &dec));
        cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
        TCHECK_OK(cdt_decoder_info(dec, &info));
        cdt_sobj r = {0};
        TCHECK_OK(cdt_sobj_recv_prepare(&r, dec));
        TCHECK_OK(cdt_decoder_bind(dec, &r, 1, cdt_sobj_type()));
        cdt_count head = info.header_size + info.packed_size, half = info.header_size / 2;
        TCHECK_OK(cdt_decoder_write(dec, half, wire + half, head - half));
        TCHECK_OK(cdt_decoder_write(dec, 0, wire, half));
        TCHECK_OK(cdt_decoder_write(dec, head, wire + head, fsize - head));
        TCHECK_OK(cdt_decoder_finish(dec));
        TCHECK_OK(cdt_decoder_free(dec));
        TCHECK(r.inband_len == (cdt_count)sizeof(inband) && r.nbuffers == 2);
        if (r.inband_len == (cdt_count)sizeof(inband) && r.nbuffers == 2) {
            TCHECK(memcmp(r.inband, inband, sizeof(inband)) == 0);
            TCHECK(r.buffers[0].len == (cdt_count)sizeof(b0) &&
                   memcmp(r.buffers[0].base, b0, sizeof(b0)) == 0);
            TCHECK(r.buffers[1].len == (cdt_count)sizeof(b1) &&
                   memcmp(r.buffers[1].base, b1, sizeof(b1)) == 0);
        }
        cdt_sobj_release(&r);
    }
    free(wire);
    TCHECK_OK(cdt_frame_free(f));
}

static int mixed_iters = 20000;
static int nthreads = 4;

static void mixed_phase(int id)
{
    for (int i = 0; i < mixed_iters; i++) {
        mixed_derived();
        mixed_custom(id, i);
    }
}

/* ---------------------------------------------------------------- driver ----------------- */

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_barrier_wait(&barrier);
    leaf_phase(id);
    pthread_barrier_wait(&barrier); /* main builds the shared types */
    pthread_barrier_wait(&barrier);
    shared_phase();
    pthread_barrier_wait(&barrier);
    parents_phase(id);
    pthread_barrier_wait(&barrier);
    mixed_phase(id);
    /* handed to main through pthread_join */
    long *result = malloc(2 * sizeof(long));
    if (result != NULL) {
        result[0] = checks;
        result[1] = failures;
    }
    return result;
}

static void setup_shared(void)
{
    SETUP(cdt_type_vector(4, 1, 2, CDT_INT32, &g.x));
    SETUP(cdt_type_commit(&g.x));

    /* depth 3: indexed(2, {1, 2}, {0, 3}) of hvector(3, 2, 64 bytes) of X */
    cdt_type h;
    SETUP(cdt_type_hvector(3, 2, 64, g.x, &h));
    SETUP(cdt_type_indexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 3}, h, &g.d));
    SETUP(cdt_type_free(&h)); /* the parent keeps what it needs */
    SETUP(cdt_type_commit(&g.d));

    cdt_count lb, extent, tlb, textent;
    SETUP(cdt_type_extent(g.d, &lb, &extent));
    SETUP(cdt_type_true_extent(g.d, &tlb, &textent));
    if (lb < 0 || tlb < 0)
        die("negative lower bound");
    g.d_span = (D_COUNT - 1) * extent + tlb + textent;
    g.d_src = malloc((size_t)g.d_span);
    g.d_unpacked = calloc(1, (size_t)g.d_span);
    if (g.d_src == NULL || g.d_unpacked == NULL)
        die("malloc");
    for (cdt_count i = 0; i < g.d_span; i++)
        g.d_src[i] = (unsigned char)(i * 13 + 7);
    g.d_packed = pack_all(g.d_src, D_COUNT, g.d, &g.d_size);
    if (g.d_packed == NULL)
        die("pack_all(d)");
    SETUP(unpack_all(g.d_unpacked, D_COUNT, g.d, g.d_packed, g.d_size));
    SETUP(cdt_iov_count(g.d_src, D_COUNT, g.d, &g.d_niov));
    if (g.d_niov < 1 || (g.d_iov = calloc((size_t)g.d_niov, sizeof(cdt_iov))) == NULL)
        die("iov");
    cdt_count got;
    SETUP(cdt_iov_get(g.d_src, D_COUNT, g.d, 0, g.d_niov, g.d_iov, &got));
    for (cdt_count i = 0; i < got; i++)
        g.d_iov[i].base = (void *)((unsigned char *)g.d_iov[i].base - g.d_src);

    /* struct {int32 a; double b; int16 c[3]} resized to sizeof(rec) */
    cdt_type st;
    SETUP(cdt_type_struct(3, (cdt_count[]){1, 1, 3},
                          (cdt_count[]){offsetof(rec, a), offsetof(rec, b), offsetof(rec, c)},
                          (cdt_type[]){CDT_INT32, CDT_DOUBLE, CDT_INT16}, &st));
    SETUP(cdt_type_resized(st, 0, sizeof(rec), &g.s));
    SETUP(cdt_type_free(&st));
    SETUP(cdt_type_commit(&g.s));
    memset(g.s_src, 0, sizeof(g.s_src));
    for (int i = 0; i < S_COUNT; i++)
        g.s_src[i] = (rec){i * 3 + 1, i * 0.25 - 2, {(int16_t)i, (int16_t)-i, (int16_t)(i * i)}};
    g.s_packed = pack_all(g.s_src, S_COUNT, g.s, &g.s_size);
    if (g.s_packed == NULL)
        die("pack_all(s)");
    memset(g.s_unpacked, 0, sizeof(g.s_unpacked));
    SETUP(unpack_all(g.s_unpacked, S_COUNT, g.s, g.s_packed, g.s_size));

    /* uncommitted children for the parents phase (a depth-2 one and a struct) */
    cdt_type v;
    SETUP(cdt_type_vector(3, 2, 5, CDT_INT16, &v));
    SETUP(cdt_type_hindexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 40}, v, &g.u1));
    SETUP(cdt_type_free(&v));
    SETUP(cdt_type_struct(2, (cdt_count[]){2, 1}, (cdt_count[]){0, 16},
                          (cdt_type[]){CDT_INT32, CDT_DOUBLE}, &g.u2));
    /* the expected parents, built from private copies of the children */
    for (int which = 0; which < 2; which++) {
        cdt_type child, p;
        if (which == 0) {
            SETUP(cdt_type_vector(3, 2, 5, CDT_INT16, &v));
            SETUP(cdt_type_hindexed(2, (cdt_count[]){1, 2}, (cdt_count[]){0, 40}, v, &child));
            SETUP(cdt_type_free(&v));
            SETUP(cdt_type_hvector(2, 1, 200, child, &p));
        } else {
            SETUP(cdt_type_struct(2, (cdt_count[]){2, 1}, (cdt_count[]){0, 16},
                                  (cdt_type[]){CDT_INT32, CDT_DOUBLE}, &child));
            SETUP(cdt_type_contiguous(3, child, &p));
        }
        SETUP(cdt_type_commit(&p));
        SETUP(cdt_type_size(p, &g.parent_size[which]));
        SETUP(cdt_type_describe(p, g.parent_desc[which], sizeof(g.parent_desc[which]), NULL));
        SETUP(cdt_type_free(&p));
        SETUP(cdt_type_free(&child));
    }

    g.custom = struct_vec_type();
    g.dvec = double_vec_type();
    if (g.custom == NULL || g.dvec == NULL)
        die("seed types");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        mixed_iters = atoi(argv[1]);
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (nthreads < 1 || nthreads > MAX_THREADS || mixed_iters < 0)
        die("usage: test_threads [ITERATIONS [THREADS]]");
    pthread_t th[MAX_THREADS];
    pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0)
            die("pthread_create");
    pthread_barrier_wait(&barrier); /* leaf phase runs in the threads only */
    pthread_barrier_wait(&barrier);
    setup_shared();
    pthread_barrier_wait(&barrier); /* shared */
    pthread_barrier_wait(&barrier); /* parents */
    pthread_barrier_wait(&barrier); /* mixed */
    for (int t = 0; t < nthreads; t++) {
        void *r = NULL;
        pthread_join(th[t], &r);
        if (r == NULL) {
            total_failures++;
            continue;
        }
        total_checks += ((long *)r)[0];
        total_failures += ((long *)r)[1];
        free(r);
    }
    pthread_barrier_destroy(&barrier);

    /* the shared types are intact after all of it */
    cdt_count n;
    unsigned char *again = pack_all(g.d_src, D_COUNT, g.d, &n);
    TCHECK(again != NULL && n == g.d_size && memcmp(again, g.d_packed, (size_t)n) == 0);
    free(again);
    cdt_count size = -1;
    TCHECK_OK(cdt_type_size(g.x, &size));
    TCHECK(size == 16);

    cdt_type_free(&g.u1);
    cdt_type_free(&g.u2);
    cdt_type_free(&g.s);
    cdt_type_free(&g.d);
    cdt_type_free(&g.x);
    free(g.d_src);
    free(g.d_packed);
    free(g.d_unpacked);
    free(g.d_iov);
    free(g.s_packed);
    total_checks += checks;
    total_failures += failures;
    printf("test_threads: %d threads, %ld checks, %ld failed\n", nthreads, total_checks,
           total_failures);
    return total_failures == 0 ? 0 : 1;
}
