/* test_mpi_hostile.c - a hostile rank against cdt_mpi.h's receiver (mpiexec -n 2 or -n 3).
 * Rank 0 writes heads and parts by hand (docs/MPI.md sections 4-5): truncated, extended,
 * under wrong ids, with wrong counts, another magic, an id above MPI_TAG_UB, parts that never
 * come or come late. Rank 1 receives every one and must get the object meant or the error
 * named, within a bounded time, and never an object holding bytes its receive did not write.
 * Rank 2 (with 3 ranks) is an honest sender whose objects are received between the hostile
 * ones: none of rank 0's parts may reach them. The cases are python/tests/mpi_hostile.py's,
 * so both implementations of the receiver meet the same peer. */
#include "mpi_check.h"

#include <string.h>

enum { HOSTILE = 0, RECEIVER = 1, HONEST = 2 };
enum { T = CDT_MPI_THRESHOLD, TAG_DONE = 30002, TAG_GO = 30001, LATE_TAG = 20000 };
static const double SHORT_WAIT = 0.2, LONG_WAIT = 120.0;
static int rank, size;

enum kind {
    OK,
    ISSUE, /* 1 MiB announced, one byte sent */
    PARTS_SHORT,
    PARTS_LONG,
    PARTS_WRONG_ID,
    PARTS_MISSING,
    HEAD_SHORT,
    HEAD_LONG,
    HEAD_THRESHOLD,
    HEAD_WRONG_ID,
    HEAD_MAGIC,
    HEAD_ID_OVER_UB,
    OVER_LIMIT_PARTS,
    OVER_LIMIT_NO_PARTS,
    LATE_STALE,
    KINDS
};
static const char *kind_names[KINDS] = {"ok",
                                        "issue",
                                        "parts_short",
                                        "parts_long",
                                        "parts_wrong_id",
                                        "parts_missing",
                                        "head_short",
                                        "head_long",
                                        "head_threshold",
                                        "head_wrong_id",
                                        "head_magic",
                                        "head_id_over_ub",
                                        "over_limit_parts",
                                        "over_limit_no_parts",
                                        "late_stale"};

/* one object: a serialized object of 1 or 2 buffers of T..3T bytes (all separate) */
typedef struct object {
    cdt_sobj so;
    cdt_sobj_buffer bufs[2];
    unsigned char inband[24];
} object;

static void object_make(object *o, uint64_t seed, int kind)
{
    memset(o, 0, sizeof *o);
    uint64_t s = seed * 2654435761u + 1;
    int n = 1 + (int)(check_rand(&s) % 2);
    for (int i = 0; i < (int)sizeof o->inband; i++)
        o->inband[i] = (unsigned char)check_rand(&s);
    o->so.inband = o->inband;
    o->so.inband_len = sizeof o->inband;
    for (int i = 0; i < n; i++) {
        cdt_count len = kind == ISSUE ? 1 << 20 : T + (cdt_count)(check_rand(&s) % (2 * T));
        unsigned char *p = malloc((size_t)len);
        for (cdt_count k = 0; k < len; k++)
            p[k] = (unsigned char)(check_rand(&s) >> 40);
        o->bufs[i].base = p;
        o->bufs[i].len = len;
        o->bufs[i].kind = CDT_KIND_UINT8;
    }
    o->so.buffers = o->bufs;
    o->so.nbuffers = n;
}

static void object_free(object *o)
{
    for (int i = 0; i < o->so.nbuffers; i++)
        free(o->bufs[i].base);
}

static int object_same(const cdt_sobj *got, const object *want)
{
    if (got->inband_len != want->so.inband_len || got->nbuffers != want->so.nbuffers ||
        memcmp(got->inband, want->inband, sizeof want->inband) != 0)
        return 0;
    for (int i = 0; i < want->so.nbuffers; i++)
        if (got->buffers[i].len != want->bufs[i].len ||
            memcmp(got->buffers[i].base, want->bufs[i].base, (size_t)want->bufs[i].len) != 0)
            return 0;
    return 1;
}

/* the head and the parts message's bytes of o sent under id (docs/MPI.md sections 4-5) */
static void pack(const object *o, int id, unsigned char **head, cdt_count *head_len,
                 unsigned char **blob, cdt_count *blob_len)
{
    cdt_frame f;
    cdt_count size_, sep = 0;
    cdt_frame_encode(&o->so, 1, cdt_sobj_type(), NULL, &f);
    cdt_frame_size(f, &size_);
    for (int i = 0; i < o->so.nbuffers; i++)
        sep += o->bufs[i].len;
    unsigned char *whole = malloc((size_t)size_);
    cdt_frame_gather(f, 0, whole, size_);
    *head = malloc((size_t)(CDT_MPI_PREFIX + size_ - sep + 512));
    *blob = malloc((size_t)sep + 1);
    cdt_mpi_put_le_(*head, CDT_MPI_MAGIC, 4);
    cdt_mpi_put_le_(*head + 4, (uint64_t)id, 4);
    cdt_mpi_put_le_(*head + 8, T, 8);
    cdt_count h = CDT_MPI_PREFIX, pos = 0, b = 0;
    for (int i = 0; i <= o->so.nbuffers; i++) { /* section 4.3 */
        cdt_count len = 0, off = size_;
        cdt_kind kind;
        if (i < o->so.nbuffers)
            cdt_frame_region_info(f, i, &len, &kind, &off);
        memcpy(*head + h, whole + pos, (size_t)(off - pos));
        h += off - pos;
        memcpy(*blob + b, whole + off, (size_t)len);
        b += len;
        pos = off + len;
    }
    *head_len = h;
    *blob_len = b;
    free(whole);
    cdt_frame_free(f);
}

static uint64_t case_seed(int tag)
{
    return 77 + (uint64_t)tag * 13;
}

/* the cases, the same on every rank: every kind twice, after one "issue" case, shuffled */
static int make_cases(int *kinds)
{
    int n = 0;
    kinds[n++] = ISSUE;
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k < KINDS; k++)
            if (k != ISSUE)
                kinds[n++] = k;
    uint64_t s = 12345;
    for (int i = n - 1; i > 1; i--) { /* the "issue" case stays first */
        int j = 1 + (int)(check_rand(&s) % (uint64_t)i);
        int t = kinds[i];
        kinds[i] = kinds[j];
        kinds[j] = t;
    }
    return n;
}

static int param_of(int tag, int max)
{
    uint64_t s = case_seed(tag) + 5;
    return 1 + (int)(check_rand(&s) % (uint64_t)max);
}

/* ---- rank 0 ---------------------------------------------------------------------------- */

static MPI_Comm pc;
static MPI_Request pending[256];
static unsigned char *pending_bufs[256];
static int npending;

static void post_parts(const unsigned char *blob, cdt_count len, int id)
{
    unsigned char *copy = malloc((size_t)len + 1);
    memcpy(copy, blob, (size_t)len);
    pending_bufs[npending] = copy;
    MPI_Isend(copy, (int)len, MPI_BYTE, RECEIVER, id, pc, &pending[npending++]);
}

static void hostile(const int *kinds, int ncases)
{
    for (int tag = 0; tag < ncases; tag++) {
        int kind = kinds[tag], id = 1000 + tag;
        object o;
        object_make(&o, case_seed(tag), kind);
        unsigned char *head, *blob;
        cdt_count hl, bl;
        pack(&o, id, &head, &hl, &blob, &bl);
        switch (kind) {
        case OK:
        case OVER_LIMIT_PARTS:
            post_parts(blob, bl, id);
            break;
        case ISSUE:
            post_parts(blob, 1, id);
            break;
        case PARTS_SHORT:
            post_parts(blob, bl - param_of(tag, (int)bl - 1), id);
            break;
        case PARTS_LONG: {
            unsigned char *longer = calloc(1, (size_t)bl + 4 * T);
            memcpy(longer, blob, (size_t)bl);
            post_parts(longer, bl + param_of(tag, 4 * T), id);
            free(longer);
            break;
        }
        case PARTS_WRONG_ID:
            post_parts(blob, bl, param_of(tag, 39)); /* the ids an honest rank uses first */
            break;
        case PARTS_MISSING:
        case OVER_LIMIT_NO_PARTS:
        case LATE_STALE:
            break;
        case HEAD_SHORT:
            hl -= param_of(tag, 400) % hl;
            post_parts(blob, bl, id);
            break;
        case HEAD_LONG:
            for (int k = param_of(tag, 400); k > 0; k--)
                head[hl++] = (unsigned char)k;
            post_parts(blob, bl, id);
            break;
        case HEAD_THRESHOLD: {
            static const uint64_t ts[] = {0, 1, T - 1, T + 1, 3 * T, 1ull << 40, UINT64_MAX};
            cdt_mpi_put_le_(head + 8, ts[param_of(tag, 7) - 1], 8);
            post_parts(blob, bl, id);
            break;
        }
        case HEAD_WRONG_ID:
            cdt_mpi_put_le_(head + 4, (uint64_t)(5000 + tag), 4); /* nothing sent under it */
            post_parts(blob, bl, id);
            break;
        case HEAD_MAGIC:
            head[3] = '1'; /* "CDT1": another version */
            post_parts(blob, bl, id);
            break;
        case HEAD_ID_OVER_UB:
            cdt_mpi_put_le_(head + 4, 0xFFFFFFFFu, 4);
            post_parts(blob, bl, id);
            break;
        }
        MPI_Send(head, (int)hl, MPI_BYTE, RECEIVER, tag, MPI_COMM_WORLD);
        if (kind == LATE_STALE) { /* its parts come after the receiver's drain gave up, then an
                                   * honest object under the same id */
            MPI_Recv(NULL, 0, MPI_BYTE, RECEIVER, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            unsigned char *zeros = calloc(1, (size_t)bl);
            post_parts(zeros, bl, id);
            free(zeros);
            post_parts(blob, bl, id);
            MPI_Send(head, (int)hl, MPI_BYTE, RECEIVER, tag + LATE_TAG, MPI_COMM_WORLD);
        }
        free(head);
        free(blob);
        object_free(&o);
    }
    /* every parts message is consumed by the receiver: received, drained or discarded */
    for (int i = 0; i < npending; i++)
        MPI_Wait(&pending[i], MPI_STATUS_IGNORE);
    for (int i = 0; i < npending; i++)
        free(pending_bufs[i]);
    MPI_Send(NULL, 0, MPI_BYTE, RECEIVER, TAG_DONE, MPI_COMM_WORLD);
}

/* ---- rank 2 ---------------------------------------------------------------------------- */

static void honest(int ncases)
{
    for (int tag = 0; tag < ncases; tag++) {
        object o;
        object_make(&o, 5000 + (uint64_t)tag, OK);
        CHECK_MPI(cdt_mpi_send_sobj(&o.so, RECEIVER, tag, MPI_COMM_WORLD), 0);
        object_free(&o);
    }
}

/* ---- rank 1 ---------------------------------------------------------------------------- */

/* receive case `tag` from rank 0 by recv (even tags) or irecv + test (odd) */
static int receive(int tag, cdt_sobj *so, const cdt_mpi_recv_params *p)
{
    memset(so, 0, sizeof *so);
    if (tag % 2 == 0)
        return cdt_mpi_recv_sobj(so, HOSTILE, tag, MPI_COMM_WORLD, p, MPI_STATUS_IGNORE);
    cdt_mpi_request r = NULL;
    int flag = 0, rc = cdt_mpi_irecv_sobj(so, HOSTILE, tag, MPI_COMM_WORLD, p, &r);
    while (rc == CDT_SUCCESS && !flag)
        rc = cdt_mpi_test(&r, &flag, MPI_STATUS_IGNORE);
    return rc;
}

static void expect(int tag, int kind, int rc, const cdt_sobj *so, int want)
{
    if (rc != want || (want != CDT_SUCCESS && strstr(cdt_mpi_last_error(), "rank 0") == NULL))
        fprintf(stderr, "case %d (%s): %s (%s), expected %s naming rank 0\n", tag, kind_names[kind],
                cdt_err_name(rc), cdt_mpi_last_error(), cdt_err_name(want));
    CHECK_RC(rc, want);
    if (want != CDT_SUCCESS) {
        CHECK(strstr(cdt_mpi_last_error(), "rank 0") != NULL);
        CHECK(so->inband == NULL && so->buffers == NULL); /* no object, nothing held */
    }
}

static void receiver(const int *kinds, int ncases)
{
    cdt_mpi_recv_params untrusted = {CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES |
                                         CDT_MPI_RECV_PARAM_MAX_REGIONS |
                                         CDT_MPI_RECV_PARAM_PARTS_TIMEOUT,
                                     1 << 24, 16, LONG_WAIT};
    cdt_mpi_recv_params tiny = {
        CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES | CDT_MPI_RECV_PARAM_PARTS_TIMEOUT, 100, 0, SHORT_WAIT};
    cdt_mpi_recv_params trusted = {CDT_MPI_RECV_PARAM_PARTS_TIMEOUT, 0, 0, LONG_WAIT};
    int seen[KINDS] = {0};
    for (int tag = 0; tag < ncases; tag++) {
        int kind = kinds[tag], rc;
        seen[kind]++;
        object want;
        object_make(&want, case_seed(tag), kind);
        cdt_sobj so;
        cdt_mpi_recv_params p = untrusted;
        switch (kind) {
        case OK:
            rc = receive(tag, &so, &p);
            expect(tag, kind, rc, &so, CDT_SUCCESS);
            CHECK(rc != CDT_SUCCESS || object_same(&so, &want));
            break;
        case ISSUE:
        case PARTS_SHORT:
            expect(tag, kind, receive(tag, &so, &p), &so, CDT_ERR_FRAME_TRUNCATED);
            break;
        case PARTS_LONG:
            expect(tag, kind, receive(tag, &so, &trusted), &so, CDT_ERR_FRAME_MALFORMED);
            break;
        case PARTS_WRONG_ID:
        case PARTS_MISSING:
        case HEAD_WRONG_ID:
            p.parts_timeout = SHORT_WAIT;
            expect(tag, kind, receive(tag, &so, &p), &so, CDT_ERR_TIMEOUT);
            break;
        case HEAD_SHORT:
        case HEAD_LONG:
            rc = receive(tag, &so, &p);
            CHECK(rc < 0);
            expect(tag, kind, rc, &so, rc < 0 ? rc : CDT_ERR_FRAME_MALFORMED);
            break;
        case HEAD_THRESHOLD: /* the object meant, or an error: never other bytes */
            rc = receive(tag, &so, &p);
            CHECK(rc < 0 || object_same(&so, &want));
            break;
        case HEAD_MAGIC:
            expect(tag, kind, receive(tag, &so, &p), &so, CDT_ERR_FRAME_MAGIC);
            break;
        case HEAD_ID_OVER_UB:
            expect(tag, kind, receive(tag, &so, &p), &so, CDT_ERR_FRAME_MALFORMED);
            break;
        case OVER_LIMIT_PARTS:
        case OVER_LIMIT_NO_PARTS:
            expect(tag, kind, receive(tag, &so, &tiny), &so, CDT_ERR_LIMIT);
            break;
        case LATE_STALE:
            expect(tag, kind, receive(tag, &so, &tiny), &so, CDT_ERR_LIMIT);
            MPI_Send(NULL, 0, MPI_BYTE, HOSTILE, TAG_GO, MPI_COMM_WORLD);
            rc = receive(tag + LATE_TAG, &so, &untrusted);
            expect(tag, kind, rc, &so, CDT_SUCCESS);
            CHECK(rc != CDT_SUCCESS || object_same(&so, &want)); /* not the stale zeros */
            break;
        }
        if (so.inband != NULL)
            cdt_sobj_release(&so);
        object_free(&want);
        if (size == 3) { /* an honest object between the hostile ones: its own bytes only */
            object h;
            object_make(&h, 5000 + (uint64_t)tag, OK);
            memset(&so, 0, sizeof so);
            rc = cdt_mpi_recv_sobj(&so, HONEST, tag, MPI_COMM_WORLD, &untrusted, MPI_STATUS_IGNORE);
            CHECK_RC(rc, CDT_SUCCESS);
            CHECK(rc != CDT_SUCCESS || object_same(&so, &h));
            if (rc == CDT_SUCCESS)
                cdt_sobj_release(&so);
            object_free(&h);
        }
    }
    /* consume what rank 0 sent under ids nobody asked for, until it saw every send complete */
    int done = 0;
    while (!done) {
        MPI_Message m;
        MPI_Status st;
        int flag = 0;
        MPI_Improbe(HOSTILE, MPI_ANY_TAG, pc, &flag, &m, &st);
        if (flag)
            cdt_mpi_consume_(pc, &m, cdt_mpi_count_(&st));
        MPI_Iprobe(HOSTILE, TAG_DONE, MPI_COMM_WORLD, &done, MPI_STATUS_IGNORE);
    }
    MPI_Recv(NULL, 0, MPI_BYTE, HOSTILE, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int k = 0; k < KINDS; k++)
        CHECK(seen[k] > 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 && size != 3) {
        fprintf(stderr, "run with 2 or 3 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    CHECK_MPI(cdt_mpi_attach(MPI_COMM_WORLD), 0);
    cdt_mpi_attached_ *a = NULL;
    cdt_mpi_attached_get_(MPI_COMM_WORLD, &a);
    pc = a->pc;
    int kinds[2 * KINDS + 1], ncases = make_cases(kinds);
    if (rank == HOSTILE)
        hostile(kinds, ncases);
    else if (rank == RECEIVER)
        receiver(kinds, ncases);
    else
        honest(ncases);
    char name[64];
    snprintf(name, sizeof name, "mpi hostile rank (rank %d of %d)", rank, size);
    int failed = check_report(name), any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
