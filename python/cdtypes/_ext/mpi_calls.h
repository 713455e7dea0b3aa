/* The two-process bcast's MPI calls from C (docs/MPI.md §14.5.1): the lean paths of a
 * two-process bcast make their MPI calls here instead of through mpi4py's methods, whose
 * argument parsing was a measured part of each call's cost. Included by the C extension
 * (_ext/mpi.c) and by the cffi backend's generated source (_cffi_build.py): one source for
 * both backends, plain C (no Python API), so that each backend wraps the same calls.
 *
 * No MPI is linked or included: one build serves MPICH and Open MPI. The entry points are
 * looked up in the library mpi4py loaded (dlopen of mpi4py's own module with RTLD_NOLOAD, then
 * dlsym, which searches its dependencies), handles are 4 bytes (MPICH: int) or 8 (Open MPI:
 * pointers) as mpi4py says, and a status is opaque bytes whose tag offset the caller found. */
#ifndef CDTPY_MPI_CALLS_H
#define CDTPY_MPI_CALLS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* a status of any MPI this supports (MPICH 4.0: 20 bytes, Open MPI 4.1: 24), aligned as the
 * structs of ints and size_t they are */
#define CDTPY_MPIC_STATUS_MAX 64
typedef union {
    unsigned char b[CDTPY_MPIC_STATUS_MAX];
    int64_t align_;
} cdtpy_mpic_status;

/* one set of entry-point types per handle size: H is the handle's C type */
#define CDTPY_MPIC_TYPES(H, S)                                                                     \
    typedef struct {                                                                               \
        int (*isend)(const void *, int, H, int, int, H, H *);                                      \
        int (*startall)(int, H *);                                                                 \
        int (*waitall)(int, H *, cdtpy_mpic_status *);                                             \
        int (*wait)(H *, cdtpy_mpic_status *);                                                     \
        int (*start)(H *);                                                                         \
        int (*mprobe)(int, int, H, H *, cdtpy_mpic_status *);                                      \
        int (*mrecv)(void *, int, H, H *, cdtpy_mpic_status *);                                    \
        int (*recv)(void *, int, H, int, int, H, cdtpy_mpic_status *);                             \
        int (*get_count)(const cdtpy_mpic_status *, H, int *);                                     \
    } cdtpy_mpic_fns##S;
CDTPY_MPIC_TYPES(int32_t, 4)
CDTPY_MPIC_TYPES(void *, 8)

/* the names resolved, in the order of the structs' members (the same layout for both sizes:
 * every member is a function pointer) */
static const char *const cdtpy_mpic_names[] = {"MPI_Isend", "MPI_Startall", "MPI_Waitall",
                                               "MPI_Wait",  "MPI_Start",    "MPI_Mprobe",
                                               "MPI_Mrecv", "MPI_Recv",     "MPI_Get_count"};
enum { CDTPY_MPIC_NFNS = sizeof cdtpy_mpic_names / sizeof cdtpy_mpic_names[0] };

static struct {
    int size;    /* 4 or 8: the handles' size; 0 until set up */
    int tag_off; /* the tag's offset in a status */
    int64_t byte, mpi_int;
    int any_tag;
    union {
        cdtpy_mpic_fns4 f4;
        cdtpy_mpic_fns8 f8;
        void (*slot[CDTPY_MPIC_NFNS])(void);
    } u;
} cdtpy_mpic;

/* Resolves the entry points in the MPI library that the module at `path` (mpi4py's) depends on,
 * with nothing new loaded. 0 when set up, else -1 with why not in why. */
static int cdtpy_mpic_init(const char *path, int hsize, int status_size, int tag_off, int64_t byte,
                           int64_t mpi_int, int any_tag, char *why, size_t whylen)
{
    _Static_assert(sizeof(cdtpy_mpic_fns4) == sizeof cdtpy_mpic.u.slot, "one slot a function");
    _Static_assert(sizeof(cdtpy_mpic_fns8) == sizeof cdtpy_mpic.u.slot, "one slot a function");
    if (hsize != 4 && hsize != 8) {
        snprintf(why, whylen, "MPI handles of %d bytes (4 or 8 supported)", hsize);
        return -1;
    }
    if (status_size <= 0 || status_size > CDTPY_MPIC_STATUS_MAX || tag_off < 0 ||
        tag_off + (int)sizeof(int) > status_size) {
        snprintf(why, whylen, "an MPI_Status of %d bytes with its tag at %d", status_size, tag_off);
        return -1;
    }
    void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (h == NULL) {
        snprintf(why, whylen, "mpi4py's module is not loaded as %s", path);
        return -1;
    }
    void (*slot[CDTPY_MPIC_NFNS])(void);
    for (int i = 0; i < CDTPY_MPIC_NFNS; i++) {
        void *p = dlsym(h, cdtpy_mpic_names[i]);
        if (p == NULL) {
            snprintf(why, whylen, "%s not found beside mpi4py", cdtpy_mpic_names[i]);
            dlclose(h);
            return -1;
        }
        /* a data pointer to a function pointer: what dlsym gives, as POSIX allows */
        memcpy(&slot[i], &p, sizeof p);
    }
    /* mpi4py keeps its module (and so the MPI library) loaded for the process's life: the
     * reference dlopen took is dropped, the library stays */
    dlclose(h);
    memcpy(cdtpy_mpic.u.slot, slot, sizeof slot);
    cdtpy_mpic.tag_off = tag_off;
    cdtpy_mpic.byte = byte;
    cdtpy_mpic.mpi_int = mpi_int;
    cdtpy_mpic.any_tag = any_tag;
    cdtpy_mpic.size = hsize;
    return 0;
}

/* What a call returns before cdtpy_mpic_init set it up: negative, never an MPI error code (those
 * are positive), so that a call made too early is an error, not a call through a null pointer */
#define CDTPY_MPIC_NOT_SET (-1)

/* handle values cross as int64 (mpi4py's MPI._handleof: an int, or a pointer's address) */
#define CDTPY_H4(v) ((int32_t)(v))
#define CDTPY_H8(v) ((void *)(intptr_t)(v))

/* MPI_Isend of count bytes to dest under tag on comm -> the request's handle in *req */
static int cdtpy_mpic_isend(const void *buf, int count, int dest, int tag, int64_t comm,
                            int64_t *req)
{
    int rc;
    if (cdtpy_mpic.size == 0)
        return CDTPY_MPIC_NOT_SET;
    if (cdtpy_mpic.size == 4) {
        int32_t r = 0;
        rc = cdtpy_mpic.u.f4.isend(buf, count, CDTPY_H4(cdtpy_mpic.byte), dest, tag, CDTPY_H4(comm),
                                   &r);
        *req = r;
    } else {
        void *r = NULL;
        rc = cdtpy_mpic.u.f8.isend(buf, count, CDTPY_H8(cdtpy_mpic.byte), dest, tag, CDTPY_H8(comm),
                                   &r);
        *req = (int64_t)(intptr_t)r;
    }
    return rc;
}

/* MPI_Start of a persistent request (its handle does not change) */
static int cdtpy_mpic_start(int64_t req)
{
    if (cdtpy_mpic.size == 0)
        return CDTPY_MPIC_NOT_SET;
    if (cdtpy_mpic.size == 4) {
        int32_t r = CDTPY_H4(req);
        return cdtpy_mpic.u.f4.start(&r);
    }
    void *r = CDTPY_H8(req);
    return cdtpy_mpic.u.f8.start(&r);
}

/* MPI_Wait of the request in *req (a non-persistent one comes back as MPI_REQUEST_NULL) */
static int cdtpy_mpic_wait(int64_t *req)
{
    cdtpy_mpic_status st;
    int rc;
    if (cdtpy_mpic.size == 4) {
        int32_t r = CDTPY_H4(*req);
        rc = cdtpy_mpic.u.f4.wait(&r, &st);
        *req = r;
    } else {
        void *r = CDTPY_H8(*req);
        rc = cdtpy_mpic.u.f8.wait(&r, &st);
        *req = (int64_t)(intptr_t)r;
    }
    return rc;
}

/* What an exchange's C call ends with (docs/MPI.md §14.5, the lean paths), in the low two bits
 * of its result, an MPI error code above them: */
enum {
    CDTPY_MPIC_EXCHANGE_FAILED = 0, /* the exchange's calls: the code is theirs */
    CDTPY_MPIC_DIFFER = 1,          /* the other's five ints differ from ours: send not waited */
    CDTPY_MPIC_WAIT_FAILED = 2,     /* the head's or answer's send: its wait's code */
    CDTPY_MPIC_AGREED = 3           /* the same five ints, and the send waited for */
};

static int64_t cdtpy_mpic_result(int rc, int step)
{
    return ((int64_t)rc << 2) | step;
}

/* The two-process bcast root's end (§14.5, the cost): the exchange's persistent send and
 * receive (req0, req1) started together and waited for together, then, when the other's five
 * ints (theirs) equal ours (mine), the head's send (*send) waited for. */
static int64_t cdtpy_mpic_root_end(int64_t req0, int64_t req1, int64_t *send, const int *mine,
                                   const int *theirs)
{
    cdtpy_mpic_status st[2];
    int rc;
    if (cdtpy_mpic.size == 0)
        return cdtpy_mpic_result(CDTPY_MPIC_NOT_SET, CDTPY_MPIC_EXCHANGE_FAILED);
    if (cdtpy_mpic.size == 4) {
        int32_t r[2] = {CDTPY_H4(req0), CDTPY_H4(req1)};
        rc = cdtpy_mpic.u.f4.startall(2, r);
        if (rc == 0)
            rc = cdtpy_mpic.u.f4.waitall(2, r, st);
    } else {
        void *r[2] = {CDTPY_H8(req0), CDTPY_H8(req1)};
        rc = cdtpy_mpic.u.f8.startall(2, r);
        if (rc == 0)
            rc = cdtpy_mpic.u.f8.waitall(2, r, st);
    }
    if (rc != 0)
        return cdtpy_mpic_result(rc, CDTPY_MPIC_EXCHANGE_FAILED);
    if (memcmp(mine, theirs, 5 * sizeof(int)) != 0)
        return cdtpy_mpic_result(0, CDTPY_MPIC_DIFFER);
    rc = cdtpy_mpic_wait(send);
    return cdtpy_mpic_result(rc, rc == 0 ? CDTPY_MPIC_AGREED : CDTPY_MPIC_WAIT_FAILED);
}

/* The two-process bcast receiver's end after an early answer (§14.5, the cost): the root's
 * five ints received into theirs (from source under tag on comm), then, when they equal the
 * answer sent (mine), the answer's persistent send (req) waited for. */
static int64_t cdtpy_mpic_leaf_end(int *theirs, int source, int tag, int64_t comm, int64_t req,
                                   const int *mine)
{
    cdtpy_mpic_status st;
    int rc;
    if (cdtpy_mpic.size == 0)
        return cdtpy_mpic_result(CDTPY_MPIC_NOT_SET, CDTPY_MPIC_EXCHANGE_FAILED);
    if (cdtpy_mpic.size == 4)
        rc = cdtpy_mpic.u.f4.recv(theirs, 5, CDTPY_H4(cdtpy_mpic.mpi_int), source, tag,
                                  CDTPY_H4(comm), &st);
    else
        rc = cdtpy_mpic.u.f8.recv(theirs, 5, CDTPY_H8(cdtpy_mpic.mpi_int), source, tag,
                                  CDTPY_H8(comm), &st);
    if (rc != 0)
        return cdtpy_mpic_result(rc, CDTPY_MPIC_EXCHANGE_FAILED);
    if (memcmp(mine, theirs, 5 * sizeof(int)) != 0)
        return cdtpy_mpic_result(0, CDTPY_MPIC_DIFFER);
    rc = cdtpy_mpic_wait(&req);
    return cdtpy_mpic_result(rc, rc == 0 ? CDTPY_MPIC_AGREED : CDTPY_MPIC_WAIT_FAILED);
}

/* The receiver's head (§14.5.1): MPI_Mprobe of any tag from source on comm; a message under
 * `want` of 1 to cap bytes is received (MPI_Mrecv) into buf (*taken = 1); any other (another
 * tag, a zero-byte marker, a larger head) is left matched, its handle in *msg (*taken = 0), for
 * the caller's general path. *tag and *count: the message's. */
static int cdtpy_mpic_head(void *buf, int cap, int source, int want, int64_t comm, int *tag,
                           int *count, int64_t *msg, int *taken)
{
    cdtpy_mpic_status st;
    int rc;
    *taken = *tag = *count = 0;
    if (cdtpy_mpic.size == 0)
        return CDTPY_MPIC_NOT_SET;
    if (cdtpy_mpic.size == 4) {
        int32_t m = 0;
        rc = cdtpy_mpic.u.f4.mprobe(source, cdtpy_mpic.any_tag, CDTPY_H4(comm), &m, &st);
        if (rc == 0)
            rc = cdtpy_mpic.u.f4.get_count(&st, CDTPY_H4(cdtpy_mpic.byte), count);
        if (rc == 0)
            memcpy(tag, st.b + cdtpy_mpic.tag_off, sizeof *tag);
        if (rc == 0 && *tag == want && *count > 0 && *count <= cap) {
            rc = cdtpy_mpic.u.f4.mrecv(buf, *count, CDTPY_H4(cdtpy_mpic.byte), &m, &st);
            *taken = 1;
        }
        *msg = m;
    } else {
        void *m = NULL;
        rc = cdtpy_mpic.u.f8.mprobe(source, cdtpy_mpic.any_tag, CDTPY_H8(comm), &m, &st);
        if (rc == 0)
            rc = cdtpy_mpic.u.f8.get_count(&st, CDTPY_H8(cdtpy_mpic.byte), count);
        if (rc == 0)
            memcpy(tag, st.b + cdtpy_mpic.tag_off, sizeof *tag);
        if (rc == 0 && *tag == want && *count > 0 && *count <= cap) {
            rc = cdtpy_mpic.u.f8.mrecv(buf, *count, CDTPY_H8(cdtpy_mpic.byte), &m, &st);
            *taken = 1;
        }
        *msg = (int64_t)(intptr_t)m;
    }
    return rc;
}

#endif
