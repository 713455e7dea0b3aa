/* test_mpi_roundtrip.c - cdt_mpi.h between 2 or 3 ranks (mpiexec -n 2 or -n 3), under MPICH
 * and Open MPI: every rank sends every other rank each kind of object (predefined arrays in
 * the head and in the parts message, a derived layout, serialized objects with several parts,
 * custom types whose receiver allocates), blocking and non-blocking, received by recv, irecv +
 * test, mprobe + mrecv, with wildcards; then the receiver's limits (a refused object is
 * drained and the next one arrives), a communicator that is not attached, cancellation and
 * invalid arguments. docs/MPI.md is the protocol. */
#include "mpi_check.h"
#include "seed_types.h"

#include <string.h>

static int rank, size;

static void fill(void *p, size_t n, unsigned seed)
{
    unsigned char *b = p;
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(check_rand(&s) >> 56);
}

/* ---- the objects: made from (sender, receiver), so the receiver knows what to expect ---- */

enum { SOBJ_INBAND = 100, SOBJ_NBUF = 4 };
static const cdt_count sobj_lens[SOBJ_NBUF] = {200000, 10, 0, 70000};

typedef struct owned_sobj {
    cdt_sobj so;
    cdt_sobj_buffer bufs[SOBJ_NBUF];
    unsigned char *mem[SOBJ_NBUF + 1];
} owned_sobj;

static void sobj_make(owned_sobj *o, unsigned seed)
{
    memset(o, 0, sizeof *o);
    o->mem[SOBJ_NBUF] = malloc(SOBJ_INBAND);
    fill(o->mem[SOBJ_NBUF], SOBJ_INBAND, seed);
    o->so.inband = o->mem[SOBJ_NBUF];
    o->so.inband_len = SOBJ_INBAND;
    for (int i = 0; i < SOBJ_NBUF; i++) {
        o->mem[i] = malloc((size_t)sobj_lens[i] + 1);
        fill(o->mem[i], (size_t)sobj_lens[i], seed * 7 + (unsigned)i);
        o->bufs[i].base = sobj_lens[i] ? o->mem[i] : NULL;
        o->bufs[i].len = sobj_lens[i];
        o->bufs[i].kind = CDT_KIND_BYTE;
    }
    o->so.buffers = o->bufs;
    o->so.nbuffers = SOBJ_NBUF;
}

static void sobj_free(owned_sobj *o)
{
    for (int i = 0; i <= SOBJ_NBUF; i++)
        free(o->mem[i]);
}

static int sobj_same(const cdt_sobj *got, const cdt_sobj *want)
{
    if (got->inband_len != want->inband_len || got->nbuffers != want->nbuffers ||
        memcmp(got->inband, want->inband, (size_t)want->inband_len) != 0)
        return 0;
    for (cdt_count i = 0; i < want->nbuffers; i++)
        if (got->buffers[i].len != want->buffers[i].len ||
            (want->buffers[i].len &&
             memcmp(got->buffers[i].base, want->buffers[i].base, (size_t)want->buffers[i].len)))
            return 0;
    return 1;
}

static unsigned seed_of(int from, int to, int round)
{
    return (unsigned)(1000 * round + 10 * from + to + 1);
}

/* ---- every rank to every other rank ----------------------------------------------------- */

enum { INTS_SMALL = 10, INTS_LARGE = 50000, VEC_N = 1000, VEC_BL = 3, VEC_STRIDE = 7 };

static cdt_type vector_type(void)
{
    static cdt_type t;
    if (t == NULL) {
        cdt_type_vector(VEC_N, VEC_BL, VEC_STRIDE, CDT_DOUBLE, &t);
        cdt_type_commit(&t);
    }
    return t;
}

/* round r: what `from` sends `to` */
static void send_round(int round, int to, cdt_mpi_request *req, void **keep)
{
    unsigned seed = seed_of(rank, to, round);
    int tag = round;
    switch (round) {
    case 0:
    case 1: { /* int32s: in the head (10), in the parts message (200 KB) */
        cdt_count n = round == 0 ? INTS_SMALL : INTS_LARGE;
        int32_t *v = malloc((size_t)n * 4);
        fill(v, (size_t)n * 4, seed);
        *keep = v;
        CHECK_MPI(cdt_mpi_isend(v, n, CDT_INT32, to, tag, MPI_COMM_WORLD, NULL, req), 0);
        break;
    }
    case 2: { /* a strided derived layout: packed into the head */
        double *v = malloc(VEC_N * VEC_STRIDE * sizeof(double));
        fill(v, VEC_N * VEC_STRIDE * sizeof(double), seed);
        *keep = v;
        CHECK_MPI(cdt_mpi_isend(v, 1, vector_type(), to, tag, MPI_COMM_WORLD, NULL, req), 0);
        break;
    }
    case 3:
    case 4: { /* a serialized object, 2 separate parts; round 4: every part separate */
        owned_sobj *o = malloc(sizeof *o);
        sobj_make(o, seed);
        *keep = o;
        cdt_mpi_send_params p = {CDT_MPI_SEND_PARAM_THRESHOLD, 1};
        CHECK_MPI(cdt_mpi_isend(&o->so, 1, cdt_sobj_type(), to, tag, MPI_COMM_WORLD,
                                round == 4 ? &p : NULL, req),
                  0);
        break;
    }
    case 5: { /* a custom type whose receiver allocates: 3 arrays of 120 KB */
        double_vec *v = calloc(1, sizeof *v);
        double_vec_init(v, 3, 30000, (int)seed);
        *keep = v;
        CHECK_MPI(cdt_mpi_isend(v, 1, double_vec_type(), to, tag, MPI_COMM_WORLD, NULL, req), 0);
        break;
    }
    case 6: { /* a custom type with packed fields and an 8 KiB region */
        struct_vec *v = malloc(2 * sizeof *v);
        struct_vec_fill(v, 2, (int)seed);
        *keep = v;
        CHECK_MPI(cdt_mpi_isend(v, 2, struct_vec_type(), to, tag, MPI_COMM_WORLD, NULL, req), 0);
        break;
    }
    }
}

static void free_kept(int round, void *keep)
{
    if (round == 3 || round == 4)
        sobj_free(keep);
    if (round == 5)
        double_vec_clear(keep);
    free(keep);
}

/* receive round r's object from `from` (known from the status when the receive used
 * MPI_ANY_SOURCE); `how`: 0 recv, 1 irecv + test, 2 mprobe + mrecv */
static void recv_round(int round, int how)
{
    MPI_Status st = {0};
    int tag = round, from = -1, rc = CDT_ERR_INVALID_ARG;
    int32_t ints[INTS_LARGE];
    double *vec = NULL;
    cdt_sobj so;
    memset(&so, 0, sizeof so);
    double_vec dv = {0, NULL, NULL};
    struct_vec sv[2];
    void *buf = NULL;
    cdt_count count = 1;
    cdt_type type = NULL;
    switch (round) {
    case 0:
    case 1:
        buf = ints;
        count = round == 0 ? INTS_SMALL : INTS_LARGE;
        type = CDT_INT32;
        break;
    case 2:
        vec = calloc(VEC_N * VEC_STRIDE, sizeof(double));
        buf = vec;
        type = vector_type();
        break;
    case 5:
        buf = &dv;
        type = double_vec_type();
        break;
    case 6:
        buf = sv;
        count = 2;
        type = struct_vec_type();
        break;
    }
    int is_sobj = round == 3 || round == 4;
    if (how == 0) {
        rc = is_sobj
                 ? cdt_mpi_recv_sobj(&so, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, NULL, &st)
                 : cdt_mpi_recv(buf, count, type, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, NULL, &st);
    } else if (how == 1) {
        cdt_mpi_request r = NULL;
        int flag = 0;
        rc = is_sobj
                 ? cdt_mpi_irecv_sobj(&so, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, NULL, &r)
                 : cdt_mpi_irecv(buf, count, type, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, NULL, &r);
        while (rc == CDT_SUCCESS && !flag)
            rc = cdt_mpi_test(&r, &flag, &st);
    } else {
        cdt_mpi_message m;
        rc = cdt_mpi_mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, NULL, &m, &st);
        if (rc == CDT_SUCCESS) {
            cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
            CHECK_MPI(cdt_decoder_info(cdt_mpi_message_decoder(m), &info), 0);
            CHECK(info.frame_size > 0);
            rc = is_sobj ? cdt_mpi_mrecv_sobj(&so, &m) : cdt_mpi_mrecv(buf, count, type, &m);
            CHECK(m == NULL);
        }
    }
    if (rc != CDT_SUCCESS)
        fprintf(stderr, "rank %d: round %d (how %d): %s (%s)\n", rank, round, how, cdt_err_name(rc),
                cdt_mpi_last_error());
    CHECK_RC(rc, CDT_SUCCESS);
    if (rc != CDT_SUCCESS) {
        free(vec);
        return;
    }
    from = st.MPI_SOURCE;
    CHECK(st.MPI_TAG == tag && from != rank && from >= 0 && from < size);
    unsigned seed = seed_of(from, rank, round);
    switch (round) {
    case 0:
    case 1: {
        int32_t want[INTS_LARGE];
        fill(want, (size_t)count * 4, seed);
        CHECK(memcmp(ints, want, (size_t)count * 4) == 0);
        break;
    }
    case 2: {
        double *want = malloc(VEC_N * VEC_STRIDE * sizeof(double));
        fill(want, VEC_N * VEC_STRIDE * sizeof(double), seed);
        int ok = 1;
        for (int i = 0; i < VEC_N * VEC_STRIDE; i++) /* the blocks arrived, the gaps untouched */
            ok &= (i % VEC_STRIDE < VEC_BL) ? memcmp(&vec[i], &want[i], sizeof(double)) == 0
                                            : vec[i] == 0.0;
        CHECK(ok);
        free(want);
        free(vec);
        break;
    }
    case 3:
    case 4: {
        owned_sobj want;
        sobj_make(&want, seed);
        CHECK(sobj_same(&so, &want.so));
        sobj_free(&want);
        cdt_sobj_release(&so);
        break;
    }
    case 5: {
        double_vec want = {0, NULL, NULL};
        double_vec_init(&want, 3, 30000, (int)seed);
        CHECK(double_vec_equal(&dv, &want));
        double_vec_clear(&want);
        double_vec_clear(&dv);
        break;
    }
    case 6: {
        struct_vec want[2];
        struct_vec_fill(want, 2, (int)seed);
        CHECK(struct_vec_equal(sv, want, 2));
        break;
    }
    }
}

enum { ROUNDS = 7 };

static void every_pair(void)
{
    for (int round = 0; round < ROUNDS; round++) {
        for (int how = 0; how < 3; how++) {
            cdt_mpi_request reqs[3];
            void *keep[3] = {NULL, NULL, NULL};
            int n = 0;
            for (int to = 0; to < size; to++)
                if (to != rank)
                    send_round(round, to, &reqs[n], &keep[n]), n++;
            for (int k = 0; k < size - 1; k++)
                recv_round(round, how);
            for (int k = 0; k < n; k++) {
                if (how == 1) { /* sends completed by test as well */
                    int flag = 0, rc = CDT_SUCCESS;
                    while (rc == CDT_SUCCESS && !flag)
                        rc = cdt_mpi_test(&reqs[k], &flag, MPI_STATUS_IGNORE);
                    CHECK_MPI(rc, 0);
                } else {
                    CHECK_MPI(cdt_mpi_wait(&reqs[k], MPI_STATUS_IGNORE), 0);
                }
                free_kept(round, keep[k]);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
}

/* ---- limits: a refused object is drained, and the next one arrives -------------------- */

static void limits(void)
{
    enum { TAG = 100 };
    const int small_n = 8;
    if (rank == 0) {
        owned_sobj o;
        sobj_make(&o, 5);
        int32_t small[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        cdt_mpi_request r = NULL;
        /* 1: parts behind a head within HEAD_DRAIN_MAX; 2: a 2 MiB head (threshold 0),
         * consumed unread; 3: over max_regions; then an object that must arrive whole */
        CHECK_MPI(cdt_mpi_send_sobj(&o.so, 1, TAG, MPI_COMM_WORLD), 0);
        unsigned char *big = calloc(1, 2u << 20);
        cdt_mpi_send_params whole = {CDT_MPI_SEND_PARAM_THRESHOLD, 0};
        CHECK_MPI(cdt_mpi_isend(big, 2 << 20, CDT_BYTE, 1, TAG, MPI_COMM_WORLD, &whole, &r), 0);
        CHECK_MPI(cdt_mpi_wait(&r, MPI_STATUS_IGNORE), 0);
        free(big);
        CHECK_MPI(cdt_mpi_send_sobj(&o.so, 1, TAG, MPI_COMM_WORLD), 0);
        CHECK_MPI(cdt_mpi_send(small, small_n, CDT_INT32, 1, TAG, MPI_COMM_WORLD), 0);
        sobj_free(&o);
    } else if (rank == 1) {
        cdt_mpi_recv_params lim = {CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES, 1000, 0, 0};
        cdt_mpi_recv_params regions = {CDT_MPI_RECV_PARAM_MAX_REGIONS, 0, 2, 0};
        cdt_sobj so;
        memset(&so, 0, sizeof so);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, MPI_COMM_WORLD, &lim, MPI_STATUS_IGNORE),
                  CDT_ERR_LIMIT);
        CHECK(strstr(cdt_mpi_last_error(), "rank 0") != NULL); /* names the peer */
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, MPI_COMM_WORLD, &lim, MPI_STATUS_IGNORE),
                  CDT_ERR_LIMIT);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, MPI_COMM_WORLD, &regions, MPI_STATUS_IGNORE),
                  CDT_ERR_LIMIT);
        CHECK(so.inband == NULL && so.buffers == NULL); /* nothing allocated for them */
        int32_t got[8] = {0};
        CHECK_MPI(
            cdt_mpi_recv(got, small_n, CDT_INT32, 0, TAG, MPI_COMM_WORLD, &lim, MPI_STATUS_IGNORE),
            0);
        CHECK(got[0] == 1 && got[7] == 8);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- a communicator that is not attached: the whole frame in the head ------------------ */

static void not_attached(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int flag = 1;
    CHECK_MPI(cdt_mpi_is_attached(c, &flag), 0);
    CHECK(flag == 0);
    CHECK_MPI(cdt_mpi_is_attached(MPI_COMM_WORLD, &flag), 0);
    CHECK(flag == 1);
    if (rank == 0) {
        owned_sobj o;
        sobj_make(&o, 9);
        CHECK_MPI(cdt_mpi_send_sobj(&o.so, 1, 3, c), 0);
        sobj_free(&o);
    } else if (rank == 1) {
        owned_sobj want;
        cdt_sobj so;
        memset(&so, 0, sizeof so);
        sobj_make(&want, 9);
        MPI_Status st;
        int count = 0;
        MPI_Probe(0, 3, c, &st); /* an application's probe sees the head: here, all of it */
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count > 270000);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, 3, c, NULL, MPI_STATUS_IGNORE), 0);
        CHECK(sobj_same(&so, &want.so));
        cdt_sobj_release(&so);
        sobj_free(&want);
    }
    /* attaching again is idempotent; freeing an attached communicator frees its duplicate */
    CHECK_MPI(cdt_mpi_attach(c), 0);
    CHECK_MPI(cdt_mpi_attach(c), 0);
    CHECK_MPI(cdt_mpi_is_attached(c, &flag), 0);
    CHECK(flag == 1);
    MPI_Comm_free(&c);
}

/* ---- in-line parts on a communicator that is not attached (docs/MPI.md 2.3) ----------- */

/* what Python's pkl5 API sends on such a communicator, written here with the header's own
 * pieces: the head (threshold CDT_MPI_THRESHOLD), then the parts message on comm itself under
 * the same tag; blocking */
static void send_inline(const cdt_sobj *obj, int dest, int tag, MPI_Comm comm)
{
    cdt_frame f = NULL;
    CHECK_MPI(cdt_frame_encode(obj, 1, cdt_sobj_type(), NULL, &f), 0);
    unsigned char prefix[CDT_MPI_PREFIX];
    cdt_mpi_put_le_(prefix, CDT_MPI_MAGIC, 4);
    cdt_mpi_put_le_(prefix + 4, 77, 4);
    cdt_mpi_put_le_(prefix + 8, CDT_MPI_THRESHOLD, 8);
    cdt_iov few[8], *pieces = NULL; /* CDT_MPI_FEW_, which the header undefines */
    cdt_count n = 0, head_bytes = 0, sep = 0;
    CHECK_MPI(
        cdt_mpi_head_pieces_(f, prefix, CDT_MPI_THRESHOLD, few, &pieces, &n, &head_bytes, &sep), 0);
    CHECK(sep > 0);
    unsigned char *head = malloc((size_t)head_bytes), *at = head;
    for (cdt_count i = 0; i < n; i++) {
        memcpy(at, pieces[i].base, (size_t)pieces[i].len);
        at += pieces[i].len;
    }
    if (pieces != few)
        free(pieces);
    cdt_mpi_buf_ pb = {NULL, 0, MPI_BYTE, 0};
    CHECK_MPI(cdt_mpi_send_parts_(f, CDT_MPI_THRESHOLD, &pb), 0);
    MPI_Request reqs[2];
    MPI_Isend(head, (int)head_bytes, MPI_BYTE, dest, tag, comm, &reqs[0]);
    MPI_Isend(pb.buf, pb.count, pb.type, dest, tag, comm, &reqs[1]);
    cdt_mpi_buf_free_(&pb);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    free(head);
    cdt_frame_free(f);
}

/* every receiver accepts them, byte for byte; every refusal consumes them (nothing queued) */
static void inline_parts(void)
{
    enum { TAG = 4, ROUNDS = 7 };
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &c);
    if (c == MPI_COMM_NULL)
        return;
    if (rank == 0) {
        owned_sobj o;
        sobj_make(&o, 11);
        for (int i = 0; i < ROUNDS; i++)
            send_inline(&o.so, 1, TAG, c);
        sobj_free(&o);
    } else {
        owned_sobj want;
        sobj_make(&want, 11);
        cdt_sobj so;
        MPI_Status st;
        int flag = 0, count = 0;
        cdt_mpi_recv_params lim = {CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES, 1000, 0, 0};
        cdt_mpi_recv_params regions = {CDT_MPI_RECV_PARAM_MAX_REGIONS, 0, 2, 0};
        cdt_mpi_recv_params roomy = {CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES, 1 << 24, 0, 0};
        /* 1: recv; 2: irecv + test with limits (untrusted: the in-line wait is bounded) */
        memset(&so, 0, sizeof so);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, c, NULL, &st), 0);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(sobj_same(&so, &want.so) && st.MPI_SOURCE == 0 && count < 4096);
        cdt_sobj_release(&so);
        memset(&so, 0, sizeof so);
        cdt_mpi_request r = NULL;
        CHECK_MPI(cdt_mpi_irecv_sobj(&so, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &roomy, &r), 0);
        while (!flag)
            CHECK_MPI(cdt_mpi_test(&r, &flag, MPI_STATUS_IGNORE), 0);
        CHECK(sobj_same(&so, &want.so));
        cdt_sobj_release(&so);
        /* 3-4: refused by max_frame_bytes, by max_regions: the parts consumed */
        memset(&so, 0, sizeof so);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, c, &lim, MPI_STATUS_IGNORE), CDT_ERR_LIMIT);
        CHECK_MPI(cdt_mpi_recv_sobj(&so, 0, TAG, c, &regions, MPI_STATUS_IGNORE), CDT_ERR_LIMIT);
        /* 5: into a receive it does not fit (a predefined type): refused after the head */
        int32_t x[4];
        CHECK_MPI(cdt_mpi_recv(x, 4, CDT_INT32, 0, TAG, c, NULL, MPI_STATUS_IGNORE),
                  CDT_ERR_TRUNCATED);
        /* 6: matched, then discarded */
        cdt_mpi_message msg = NULL;
        CHECK_MPI(cdt_mpi_mprobe(0, TAG, c, NULL, &msg, MPI_STATUS_IGNORE), 0);
        CHECK_MPI(cdt_mpi_message_discard(&msg), 0);
        /* 7: mprobe + mrecv: the next object arrives whole, nothing was left queued */
        CHECK_MPI(cdt_mpi_mprobe(MPI_ANY_SOURCE, TAG, c, NULL, &msg, MPI_STATUS_IGNORE), 0);
        memset(&so, 0, sizeof so);
        CHECK_MPI(cdt_mpi_mrecv_sobj(&so, &msg), 0);
        CHECK(sobj_same(&so, &want.so));
        cdt_sobj_release(&so);
        sobj_free(&want);
    }
    MPI_Barrier(c);
    int queued = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &queued, MPI_STATUS_IGNORE);
    CHECK(queued == 0);
    MPI_Comm_free(&c);
}

/* ---- cancellation and arguments ------------------------------------------------------ */

static void cancel_and_arguments(void)
{
    int32_t x = 0;
    cdt_mpi_request r = NULL;
    int canceled = 0;
    CHECK_MPI(cdt_mpi_irecv(&x, 1, CDT_INT32, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, NULL, &r), 0);
    CHECK_MPI(cdt_mpi_cancel(r, &canceled), 0);
    CHECK(canceled == 1);
    CHECK_MPI(cdt_mpi_wait(&r, MPI_STATUS_IGNORE), CDT_ERR_CANCELED);
    CHECK(r == NULL);
    cdt_mpi_recv_params bad = {CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES, -1, 0, 0};
    CHECK_MPI(cdt_mpi_recv(&x, 1, CDT_INT32, 0, 0, MPI_COMM_WORLD, &bad, MPI_STATUS_IGNORE),
              CDT_ERR_INVALID_ARG);
    cdt_mpi_recv_params unknown = {1u << 20, 0, 0, 0};
    CHECK_MPI(cdt_mpi_irecv(&x, 1, CDT_INT32, 0, 0, MPI_COMM_WORLD, &unknown, &r),
              CDT_ERR_INVALID_ARG);
    CHECK_MPI(cdt_mpi_isend(&x, 1, CDT_INT32, 0, -1, MPI_COMM_WORLD, NULL, &r),
              CDT_ERR_INVALID_ARG);
    CHECK_MPI(cdt_mpi_wait(NULL, MPI_STATUS_IGNORE), CDT_ERR_INVALID_ARG);
    CHECK_MPI(cdt_mpi_message_discard(NULL), 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(cdt_mpi_attach(MPI_COMM_WORLD), 0);
    every_pair();
    if (size >= 2)
        limits();
    if (size >= 2)
        not_attached();
    if (size >= 2)
        inline_parts();
    cancel_and_arguments();
    char name[64];
    snprintf(name, sizeof name, "mpi roundtrip (rank %d of %d)", rank, size);
    int failed = check_report(name), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
