/*!
 * @file cdt_mpi.h
 * cdt_mpi.h - libcdt objects over MPI: one frame per object, on the protocol of docs/MPI.md
 * (version 2, "CDT2"), which Python's cdtypes.mpi and Julia's CDTypesMPIExt speak too.
 *
 * An object is any (buf, count, type) of libcdt: predefined, derived and custom types, and
 * serialized objects (cdt_sobj, the shape every language binding sends). It travels as at most
 * two MPI messages: the head (a 16-byte prefix and the frame without its large regions) on the
 * application's communicator under the application's tag, and the parts (the large regions,
 * read where they lie and received where the receiver's object keeps them) on a private
 * duplicate under the object's id. The receiver matches the head with a matched probe
 * (wildcards allowed), checks it (docs/MPI.md section 7.2), allocates or binds the object,
 * then matches the parts under the head's source and id and checks their byte count before a
 * byte lands in the object.
 *
 * Shape: header-only, every function static inline over the program's own mpi.h. Why: MPI
 * has no common ABI (MPI_Comm is an int in MPICH and a pointer in Open MPI, MPI_Status
 * differs, the constants differ), so a compiled libcdt could serve one MPI only and would
 * need one build per MPI. Compiled in the program, these functions use whichever MPI the
 * program uses, and libcdt itself keeps no MPI dependency: its core alone (a build without
 * UCX, CDT_WITH_UCX=OFF) serves them. The few process-wide values (the attribute key of
 * attached communicators, the object id counter, the last error's text) are weak symbols with
 * default visibility, so every translation unit and shared object of a program shares one
 * copy (GCC and Clang on ELF). It needs POSIX threads, clock_gettime and nanosleep: compile
 * in a GNU mode (the compilers' default) or with _POSIX_C_SOURCE=200809L.
 *
 * Use:
 *   MPI_Init(...);
 *   cdt_mpi_attach(MPI_COMM_WORLD);      // collective, once per communicator (section 2.2)
 *   cdt_mpi_send(buf, count, type, dest, tag, MPI_COMM_WORLD);                  // sender
 *   cdt_mpi_recv(buf, count, type, src, tag, MPI_COMM_WORLD, NULL, &status);     // receiver
 *
 * Every function returns CDT_SUCCESS or a negative cdt status (cdt_strerror()); a failing MPI
 * call is CDT_ERR_TRANSPORT (unless the communicator's error handler aborts first). After an
 * error, cdt_mpi_last_error() says what happened in words (the peer, the object id, the
 * counts), for the calling thread. Calls from several threads at once need
 * MPI_THREAD_MULTIPLE, as any MPI call.
 *
 * In a job with Python ranks: cdtypes.mpi attaches MPI_COMM_WORLD when it is imported, so
 * call cdt_mpi_attach(MPI_COMM_WORLD) where the Python ranks import it (right after MPI_Init,
 * before any other communicator is created on MPI_COMM_WORLD).
 */
#ifndef CDT_MPI_H
#define CDT_MPI_H

#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdt.h"
#include "cdt_sobj.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! How every function of this header is defined: static inline, compiled into the program
 *  against its own mpi.h (see the file's comment). */
#define CDT_MPI_API static inline

/*! The head's magic, bytes "CDT2" read as a little-endian u32: also the protocol's version
 *  (docs/MPI.md section 11). */
#define CDT_MPI_MAGIC 0x32544443u
/*! Bytes of the head's prefix, before the frame (magic, object id, threshold). */
#define CDT_MPI_PREFIX 16
/*! The threshold a sender uses on an attached communicator: regions of at least this many
 *  bytes travel in the parts message (docs/MPI.md section 4.2). */
#define CDT_MPI_THRESHOLD 65536
/*! The largest head (prefix included) over max_frame_bytes that a receiver still reads, to
 *  drain the object's parts (docs/MPI.md section 8.1); larger ones are consumed unread. */
#define CDT_MPI_HEAD_DRAIN_MAX (1 << 20)
/*! Ids of owed parts remembered per source (docs/MPI.md section 8.4). */
#define CDT_MPI_OWED_MAX 1024
/*! Seconds a drain, and an untrusted receive, waits for a parts message (docs/MPI.md
 *  section 8.3); cdt_mpi_recv_params.parts_timeout changes it per receive. */
#define CDT_MPI_PARTS_TIMEOUT 10.0

/*! Fields of cdt_mpi_send_params, for its field_mask. */
enum cdt_mpi_send_params_field {
    CDT_MPI_SEND_PARAM_THRESHOLD = 1u << 0, /*!< threshold */
};

/*! Sending options. Zero it and set the bits of field_mask for the fields you fill. */
typedef struct cdt_mpi_send_params {
    uint64_t field_mask; /*!< CDT_MPI_SEND_PARAM_* bits of the fields that are set */
    /*! CDT_MPI_SEND_PARAM_THRESHOLD: regions of at least this many bytes travel in the parts
     * message; 0: none (the whole frame in the head). Default CDT_MPI_THRESHOLD. On a
     * communicator that is not attached it is always 0 (docs/MPI.md section 2.3). */
    cdt_count threshold;
} cdt_mpi_send_params;

/*! Fields of cdt_mpi_recv_params, for its field_mask. */
enum cdt_mpi_recv_params_field {
    CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES = 1u << 0, /*!< max_frame_bytes */
    CDT_MPI_RECV_PARAM_MAX_REGIONS = 1u << 1,     /*!< max_regions */
    CDT_MPI_RECV_PARAM_PARTS_TIMEOUT = 1u << 2,   /*!< parts_timeout */
};

/*! Receiving options: the limits of docs/MPI.md section 8.1. A receive with a limit is
 * untrusted: it also bounds the wait for the parts message (section 8.2). Zero it and set
 * the bits of field_mask for the fields you fill; NULL: a trusted receive without limits. */
typedef struct cdt_mpi_recv_params {
    uint64_t field_mask; /*!< CDT_MPI_RECV_PARAM_* bits of the fields that are set */
    /*! CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES: the largest frame accepted (the head's frame bytes,
     * then the header's frame_size), CDT_ERR_LIMIT beyond, before anything is allocated. */
    cdt_count max_frame_bytes;
    /*! CDT_MPI_RECV_PARAM_MAX_REGIONS: most regions accepted (CDT_ERR_LIMIT beyond). */
    cdt_count max_regions;
    /*! CDT_MPI_RECV_PARAM_PARTS_TIMEOUT: seconds an untrusted receive waits for its parts
     * message to be matched (CDT_ERR_TIMEOUT past it), and any drain waits (default
     * CDT_MPI_PARTS_TIMEOUT). */
    double parts_timeout;
} cdt_mpi_recv_params;

/*! A pending cdt_mpi_isend() or cdt_mpi_irecv(): complete it with cdt_mpi_wait() or
 *  cdt_mpi_test(), which free it and set it to NULL. */
typedef struct cdt_mpi_request_s *cdt_mpi_request;
/*! A head matched by cdt_mpi_mprobe() or cdt_mpi_improbe() and already checked: receive it
 *  with cdt_mpi_mrecv() or cdt_mpi_mrecv_sobj(), or drop it with cdt_mpi_message_discard(). */
typedef struct cdt_mpi_message_s *cdt_mpi_message;

/*! cdt_mpi_attach() : give comm its parts communicator (an MPI_Comm_dup of comm, with
 *  MPI_ERRORS_RETURN), kept as an attribute of comm and freed with it. Collective over comm,
 *  in the same order as comm's other communicator-creating calls on every process;
 *  idempotent (a second call does nothing). Objects sent on a communicator that is not
 *  attached travel whole in the head (docs/MPI.md sections 2.2-2.3); the receivers also
 *  accept the in-line parts that Python's pkl5 API sends on such a communicator (the next
 *  message from the head's source under its tag, matched right after the head: receive on
 *  such a communicator from one thread at a time, section 13.3). */
CDT_MPI_API int cdt_mpi_attach(MPI_Comm comm);
/*! cdt_mpi_is_attached() : *flag = 1 when comm was attached in this process, else 0. */
CDT_MPI_API int cdt_mpi_is_attached(MPI_Comm comm, int *flag);

/*! cdt_mpi_send() : send (buf, count, type) to dest with tag on comm; returns once both
 *  messages' sends completed (buf may then change). Errors: those of cdt_frame_encode,
 *  CDT_ERR_INVALID_ARG (a tag out of range), CDT_ERR_UNSUPPORTED (more than INT_MAX blocks),
 *  CDT_ERR_TRANSPORT. */
CDT_MPI_API int cdt_mpi_send(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                             MPI_Comm comm);
/*! cdt_mpi_send_sobj() : cdt_mpi_send() of a serialized object (obj, 1, cdt_sobj_type()). */
CDT_MPI_API int cdt_mpi_send_sobj(const cdt_sobj *obj, int dest, int tag, MPI_Comm comm);
/*! cdt_mpi_isend() : start sending (buf, count, type); buf and the object's regions must stay
 *  unchanged until the request completes. params may be NULL. *req is set on success only. */
CDT_MPI_API int cdt_mpi_isend(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                              MPI_Comm comm, const cdt_mpi_send_params *params,
                              cdt_mpi_request *req);

/*! cdt_mpi_recv() : receive one object from source (or MPI_ANY_SOURCE) with tag (or
 *  MPI_ANY_TAG) on comm into (buf, count, type), which must match what was sent as a frame
 *  does (cdt_decoder_bind). status (may be MPI_STATUS_IGNORE) is the head's: its source and
 *  tag are the object's. params may be NULL. Errors: docs/MPI.md section 10
 *  (CDT_ERR_FRAME_MAGIC, _MALFORMED, _TRUNCATED, _MISMATCH, the frame's own codes,
 *  CDT_ERR_LIMIT, CDT_ERR_TIMEOUT), CDT_ERR_INCOMPLETE, CDT_ERR_TRANSPORT. When it fails,
 *  the object's parts were consumed (drained) wherever section 7.2 says so. */
CDT_MPI_API int cdt_mpi_recv(void *buf, cdt_count count, cdt_type type, int source, int tag,
                             MPI_Comm comm, const cdt_mpi_recv_params *params, MPI_Status *status);
/*! cdt_mpi_recv_sobj() : receive a serialized object: obj (zeroed, or with its alloc hook set)
 *  is sized from the frame's header (cdt_sobj_recv_prepare) and filled; free it with
 *  cdt_sobj_release() after a success (on failure nothing stays allocated by the adapter). */
CDT_MPI_API int cdt_mpi_recv_sobj(cdt_sobj *obj, int source, int tag, MPI_Comm comm,
                                  const cdt_mpi_recv_params *params, MPI_Status *status);
/*! cdt_mpi_irecv() : post a receive into (buf, count, type). The head is matched lazily, by
 *  cdt_mpi_test() (MPI_Improbe) or cdt_mpi_wait() (MPI_Mprobe), as docs/MPI.md section 9
 *  allows: receives match in the order they are tested or waited for. */
CDT_MPI_API int cdt_mpi_irecv(void *buf, cdt_count count, cdt_type type, int source, int tag,
                              MPI_Comm comm, const cdt_mpi_recv_params *params,
                              cdt_mpi_request *req);
/*! cdt_mpi_irecv_sobj() : cdt_mpi_irecv() of a serialized object (see cdt_mpi_recv_sobj). */
CDT_MPI_API int cdt_mpi_irecv_sobj(cdt_sobj *obj, int source, int tag, MPI_Comm comm,
                                   const cdt_mpi_recv_params *params, cdt_mpi_request *req);

/*! cdt_mpi_test() : one step of *req that never waits for a peer: *flag = 1 once it is
 *  complete, then *req is freed and set to NULL, status (receives; may be MPI_STATUS_IGNORE)
 *  is filled and the operation's result returned. While *flag = 0, returns CDT_SUCCESS. */
CDT_MPI_API int cdt_mpi_test(cdt_mpi_request *req, int *flag, MPI_Status *status);
/*! cdt_mpi_wait() : complete *req, free it and set it to NULL; returns its result. */
CDT_MPI_API int cdt_mpi_wait(cdt_mpi_request *req, MPI_Status *status);
/*! cdt_mpi_cancel() : cancel a receive whose head was not matched yet (*canceled = 1; its
 *  wait then returns CDT_ERR_CANCELED). A matched receive, and any send, is not canceled
 *  (*canceled = 0): it completes whole or fails as docs/MPI.md section 7.2 says. */
CDT_MPI_API int cdt_mpi_cancel(cdt_mpi_request req, int *canceled);

/*! cdt_mpi_mprobe() : match the next head from source with tag (wildcards allowed), receive
 *  and check it (docs/MPI.md section 7.2 steps 1-8, with params' limits), and give it as
 *  *msg: its frame header can be read (cdt_mpi_message_decoder) before choosing where the
 *  object goes. Errors as cdt_mpi_recv(); on error no message is given and the object's
 *  parts were drained where section 7.2 says so. */
CDT_MPI_API int cdt_mpi_mprobe(int source, int tag, MPI_Comm comm,
                               const cdt_mpi_recv_params *params, cdt_mpi_message *msg,
                               MPI_Status *status);
/*! cdt_mpi_improbe() : cdt_mpi_mprobe() that returns at once with *flag = 0 when no head is
 *  there (MPI_Improbe); *msg is set only with *flag = 1. */
CDT_MPI_API int cdt_mpi_improbe(int source, int tag, MPI_Comm comm,
                                const cdt_mpi_recv_params *params, int *flag, cdt_mpi_message *msg,
                                MPI_Status *status);
/*! cdt_mpi_message_decoder() : the decoder of msg's frame header (borrowed, valid until msg
 *  is received or discarded): cdt_decoder_info() and cdt_decoder_region_info() tell the
 *  object's sizes. NULL for a NULL msg. */
CDT_MPI_API cdt_decoder cdt_mpi_message_decoder(cdt_mpi_message msg);
/*! cdt_mpi_mrecv() : receive the object of *msg into (buf, count, type); frees *msg (also on
 *  failure) and sets it to NULL. */
CDT_MPI_API int cdt_mpi_mrecv(void *buf, cdt_count count, cdt_type type, cdt_mpi_message *msg);
/*! cdt_mpi_mrecv_sobj() : receive the object of *msg as a serialized object (see
 *  cdt_mpi_recv_sobj); frees *msg and sets it to NULL. */
CDT_MPI_API int cdt_mpi_mrecv_sobj(cdt_sobj *obj, cdt_mpi_message *msg);
/*! cdt_mpi_mrecv_bound() : receive the object of *msg into the destination the caller bound
 *  itself with cdt_decoder_bind() on cdt_mpi_message_decoder(msg) (a binding that sizes its
 *  own object from the header first, as language bindings do); frees *msg and sets it to
 *  NULL. An unbound decoder is CDT_ERR_ORDER (the object is drained). */
CDT_MPI_API int cdt_mpi_mrecv_bound(cdt_mpi_message *msg);
/*! cdt_mpi_message_discard() : drop the object of *msg: its parts are consumed unread (a
 *  drain, docs/MPI.md section 8.3) so that its sender's send completes; frees *msg. */
CDT_MPI_API int cdt_mpi_message_discard(cdt_mpi_message *msg);

/*! cdt_mpi_last_error() : the calling thread's text about the last error of a cdt_mpi
 *  function (static per thread; "" when none was recorded). */
CDT_MPI_API const char *cdt_mpi_last_error(void);

/*! @cond CDT_MPI_INTERNAL */
/* ==========================================================================================
 * Implementation. Names ending in _ are not API. Section numbers are docs/MPI.md's.
 * ======================================================================================== */

/* process-wide state shared by every translation unit and shared object (weak, default
 * visibility): the attribute key, its creation guard, the id counter, the id space, the last
 * error text per thread */
__attribute__((weak, visibility("default"))) int cdt_mpi_keyval_ = 0;
__attribute__((weak, visibility("default"))) pthread_once_t cdt_mpi_keyval_once_ =
    PTHREAD_ONCE_INIT;
__attribute__((weak, visibility("default"))) uint64_t cdt_mpi_next_id_ = 0;
__attribute__((weak, visibility("default"))) uint32_t cdt_mpi_id_space_ = 0; /* MPI_TAG_UB */
__attribute__((weak, visibility("default"))) __thread char cdt_mpi_errmsg_[320];

CDT_MPI_API const char *cdt_mpi_last_error(void)
{
    return cdt_mpi_errmsg_;
}

/* record the text of an error for cdt_mpi_last_error(); returns rc */
__attribute__((format(printf, 2, 3))) static inline int cdt_mpi_fail_(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cdt_mpi_errmsg_, sizeof cdt_mpi_errmsg_, fmt, ap);
    va_end(ap);
    return rc;
}

/* an MPI call failed: CDT_ERR_TRANSPORT with MPI's words */
static inline int cdt_mpi_mpierr_(int mpirc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpirc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", mpirc);
    return cdt_mpi_fail_(CDT_ERR_TRANSPORT, "%s failed: %s", what, text);
}

#define CDT_MPI_TRY_(call)                                                                         \
    do {                                                                                           \
        int cdt_mpi_rc_ = (call);                                                                  \
        if (cdt_mpi_rc_ != MPI_SUCCESS)                                                            \
            return cdt_mpi_mpierr_(cdt_mpi_rc_, #call);                                            \
    } while (0)

static inline double cdt_mpi_now_(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void cdt_mpi_put_le_(unsigned char *p, uint64_t v, int n)
{
    for (int k = 0; k < n; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static inline uint64_t cdt_mpi_get_le_(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

/* ---- reused memory for heads ------------------------------------------------------------- */

/* One buffer per thread and use (0: heads being sent, 1: heads being received), kept between
 * objects: fresh memory costs a page fault per 4 KiB touched, which is slower than packing
 * into it (cdt.h, cdt_frame_params). A block is [its capacity | padding to 64 bytes | data];
 * a thread keeps at most one per use, of at most 256 MiB, until it exits. */
__attribute__((weak, visibility("default"))) __thread void *cdt_mpi_cache_[2];
#define CDT_MPI_CACHE_MAX_ ((size_t)256 << 20)

static inline void *cdt_mpi_take_(int use, size_t bytes)
{
    unsigned char *b = (unsigned char *)cdt_mpi_cache_[use];
    if (b != NULL && *(size_t *)b >= bytes) {
        cdt_mpi_cache_[use] = NULL;
        return b + 64;
    }
    b = (unsigned char *)malloc(bytes + 64);
    if (b == NULL)
        return NULL;
    *(size_t *)b = bytes;
    return b + 64;
}

static inline void cdt_mpi_give_(int use, void *p)
{
    if (p == NULL)
        return;
    unsigned char *b = (unsigned char *)p - 64, *kept = (unsigned char *)cdt_mpi_cache_[use];
    if (*(size_t *)b > CDT_MPI_CACHE_MAX_ || (kept != NULL && *(size_t *)kept >= *(size_t *)b)) {
        free(b);
        return;
    }
    free(kept); /* keep the larger one */
    cdt_mpi_cache_[use] = b;
}

/* cdt_frame_params' head allocator: room for the prefix before the frame's head, so that a
 * head message that is prefix + the frame's head goes out from one buffer without a copy */
static inline void *cdt_mpi_head_alloc_(void *arg, size_t bytes)
{
    unsigned char *p = (unsigned char *)cdt_mpi_take_(0, bytes + CDT_MPI_PREFIX);
    if (p == NULL)
        return NULL;
    *(void **)arg = p + CDT_MPI_PREFIX;
    return p + CDT_MPI_PREFIX;
}

static inline void cdt_mpi_head_release_(void *arg, void *ptr, size_t bytes)
{
    (void)arg;
    (void)bytes;
    cdt_mpi_give_(0, (unsigned char *)ptr - CDT_MPI_PREFIX);
}

/* ---- 2.2 the parts communicator and 8.4 the owed parts ----------------------------------- */

typedef struct cdt_mpi_owed_entry_ {
    int source, id, count;
    uint64_t age; /* larger: owed more recently */
} cdt_mpi_owed_entry_;

/* what attaching comm made: its parts communicator and the owed parts on it */
typedef struct cdt_mpi_attached_ {
    MPI_Comm pc;
    pthread_mutex_t lock;
    cdt_mpi_owed_entry_ *owed;
    size_t n_owed, cap_owed; /* n_owed is also read without the lock (a hint, then rechecked) */
    uint64_t age;
} cdt_mpi_attached_;

static inline int cdt_mpi_attached_delete_(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    cdt_mpi_attached_ *a = (cdt_mpi_attached_ *)attr;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&a->pc);
    pthread_mutex_destroy(&a->lock);
    free(a->owed);
    free(a);
    return MPI_SUCCESS;
}

static inline void cdt_mpi_keyval_create_(void)
{
    int kv = 0;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cdt_mpi_attached_delete_, &kv, NULL) ==
        MPI_SUCCESS)
        cdt_mpi_keyval_ = kv + 1; /* 0 stays "not created" whatever MPI_KEYVAL_INVALID is */
}

static inline int cdt_mpi_keyval_get_(int *kv)
{
    pthread_once(&cdt_mpi_keyval_once_, cdt_mpi_keyval_create_);
    if (cdt_mpi_keyval_ == 0)
        return cdt_mpi_fail_(CDT_ERR_TRANSPORT, "MPI_Comm_create_keyval failed (is MPI "
                                                "initialised?)");
    *kv = cdt_mpi_keyval_ - 1;
    return CDT_SUCCESS;
}

/* *att = comm's attachment, or NULL when comm is not attached */
static inline int cdt_mpi_attached_get_(MPI_Comm comm, cdt_mpi_attached_ **att)
{
    int kv = 0, flag = 0, rc = cdt_mpi_keyval_get_(&kv);
    void *v = NULL;
    if (rc != CDT_SUCCESS)
        return rc;
    CDT_MPI_TRY_(MPI_Comm_get_attr(comm, kv, &v, &flag));
    *att = flag ? (cdt_mpi_attached_ *)v : NULL;
    return CDT_SUCCESS;
}

CDT_MPI_API int cdt_mpi_attach(MPI_Comm comm)
{
    cdt_mpi_attached_ *a = NULL;
    int kv = 0, rc = cdt_mpi_attached_get_(comm, &a);
    if (rc != CDT_SUCCESS || a != NULL)
        return rc;
    cdt_mpi_keyval_get_(&kv);
    a = (cdt_mpi_attached_ *)calloc(1, sizeof *a);
    if (a == NULL)
        return cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "cdt_mpi_attach: out of memory");
    int mrc = MPI_Comm_dup(comm, &a->pc);
    if (mrc == MPI_SUCCESS)
        mrc = MPI_Comm_set_errhandler(a->pc, MPI_ERRORS_RETURN); /* drains truncate (8.3) */
    if (mrc == MPI_SUCCESS) {
        pthread_mutex_init(&a->lock, NULL);
        mrc = MPI_Comm_set_attr(comm, kv, a);
        if (mrc != MPI_SUCCESS)
            pthread_mutex_destroy(&a->lock);
    }
    if (mrc != MPI_SUCCESS) {
        if (a->pc != MPI_COMM_NULL)
            MPI_Comm_free(&a->pc);
        free(a);
        return cdt_mpi_mpierr_(mrc, "cdt_mpi_attach");
    }
    return CDT_SUCCESS;
}

CDT_MPI_API int cdt_mpi_is_attached(MPI_Comm comm, int *flag)
{
    cdt_mpi_attached_ *a = NULL;
    if (flag == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_is_attached: flag is NULL");
    int rc = cdt_mpi_attached_get_(comm, &a);
    if (rc == CDT_SUCCESS)
        *flag = a != NULL;
    return rc;
}

/* 8.4: (source, id) is owed n more messages; beyond CDT_MPI_OWED_MAX ids of one source the
 * oldest is forgotten */
static inline void cdt_mpi_owe_(cdt_mpi_attached_ *a, int source, int id, int n)
{
    pthread_mutex_lock(&a->lock);
    size_t of_source = 0, oldest = (size_t)-1, hit = (size_t)-1;
    for (size_t i = 0; i < a->n_owed; i++) {
        cdt_mpi_owed_entry_ *e = &a->owed[i];
        if (e->source != source)
            continue;
        of_source++;
        if (e->id == id)
            hit = i;
        if (oldest == (size_t)-1 || e->age < a->owed[oldest].age)
            oldest = i;
    }
    if (hit != (size_t)-1) {
        a->owed[hit].count += n;
        a->owed[hit].age = ++a->age; /* owed again: the newest, as Python's Owed */
    } else {
        if (of_source >= CDT_MPI_OWED_MAX) /* forget the oldest: only this source meets it */
            a->owed[oldest] = a->owed[--a->n_owed];
        if (a->n_owed == a->cap_owed) {
            size_t cap = a->cap_owed ? 2 * a->cap_owed : 16;
            void *p = realloc(a->owed, cap * sizeof *a->owed);
            if (p == NULL) { /* cannot remember it: its late part meets section 12's limit */
                pthread_mutex_unlock(&a->lock);
                return;
            }
            a->owed = (cdt_mpi_owed_entry_ *)p;
            a->cap_owed = cap;
        }
        cdt_mpi_owed_entry_ e = {source, id, n, ++a->age};
        a->owed[a->n_owed++] = e;
    }
    __atomic_store_n(&a->n_owed, a->n_owed, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&a->lock);
}

/* 7.3 step 1: how many stale messages precede (source, id)'s next one; forgets them */
static inline int cdt_mpi_take_owed_(cdt_mpi_attached_ *a, int source, int id)
{
    if (__atomic_load_n(&a->n_owed, __ATOMIC_ACQUIRE) == 0) /* the common case, no lock */
        return 0;
    int n = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n_owed; i++) {
        if (a->owed[i].source == source && a->owed[i].id == id) {
            n = a->owed[i].count;
            a->owed[i] = a->owed[a->n_owed - 1];
            __atomic_store_n(&a->n_owed, a->n_owed - 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return n;
}

/* ---- 5.2 memory as one MPI message of MPI_BYTE ------------------------------------------- */

/* (buf, count, type) of one send or receive over pieces of memory: the memory itself when it
 * is one piece that an int counts, else an hindexed datatype of MPI_BYTE blocks of at most
 * 2^30 bytes over absolute addresses (MPI_BOTTOM, count 1) */
typedef struct cdt_mpi_buf_ {
    void *buf;
    int count;
    MPI_Datatype type;
    int owns_type; /* free type once the operation is posted */
} cdt_mpi_buf_;

#define CDT_MPI_BLOCK_ ((cdt_count)1 << 30)

static inline void cdt_mpi_buf_free_(cdt_mpi_buf_ *b)
{
    if (b->owns_type)
        MPI_Type_free(&b->type);
    b->owns_type = 0;
}

static inline int cdt_mpi_describe_(const cdt_iov *pieces, cdt_count n, cdt_mpi_buf_ *out)
{
    cdt_count blocks = 0, k = 0;
    for (cdt_count i = 0; i < n; i++)
        blocks += (pieces[i].len + CDT_MPI_BLOCK_ - 1) / CDT_MPI_BLOCK_;
    out->owns_type = 0;
    if (blocks == 0) {
        out->buf = NULL;
        out->count = 0;
        out->type = MPI_BYTE;
        return CDT_SUCCESS;
    }
    if (n == 1 && pieces[0].len <= INT_MAX) {
        out->buf = pieces[0].base;
        out->count = (int)pieces[0].len;
        out->type = MPI_BYTE;
        return CDT_SUCCESS;
    }
    if (blocks > INT_MAX)
        return cdt_mpi_fail_(CDT_ERR_UNSUPPORTED, "%lld memory blocks do not fit one MPI message",
                             (long long)blocks);
    int *lens = (int *)malloc((size_t)blocks * sizeof *lens);
    MPI_Aint *displs = (MPI_Aint *)malloc((size_t)blocks * sizeof *displs);
    int rc = CDT_SUCCESS, mrc;
    if (lens == NULL || displs == NULL) {
        rc = cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "out of memory for a datatype of %lld blocks",
                           (long long)blocks);
        goto done;
    }
    for (cdt_count i = 0; i < n; i++) {
        for (cdt_count off = 0; off < pieces[i].len; off += CDT_MPI_BLOCK_, k++) {
            cdt_count len = pieces[i].len - off;
            lens[k] = (int)(len < CDT_MPI_BLOCK_ ? len : CDT_MPI_BLOCK_);
            mrc = MPI_Get_address((char *)pieces[i].base + off, &displs[k]);
            if (mrc != MPI_SUCCESS) {
                rc = cdt_mpi_mpierr_(mrc, "MPI_Get_address");
                goto done;
            }
        }
    }
    mrc = MPI_Type_create_hindexed((int)blocks, lens, displs, MPI_BYTE, &out->type);
    if (mrc == MPI_SUCCESS && (mrc = MPI_Type_commit(&out->type)) != MPI_SUCCESS)
        MPI_Type_free(&out->type);
    if (mrc != MPI_SUCCESS) {
        rc = cdt_mpi_mpierr_(mrc, "MPI_Type_create_hindexed");
        goto done;
    }
    out->buf = MPI_BOTTOM;
    out->count = 1;
    out->owns_type = 1;
done:
    free(lens);
    free(displs);
    return rc;
}

/* the byte count of a matched message or a completed receive (large counts: MPI-3's _x) */
static inline cdt_count cdt_mpi_count_(const MPI_Status *st)
{
    MPI_Count n = 0;
    if (MPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED)
        return -1;
    return (cdt_count)n;
}

/* consume a matched message of comm (n bytes, -1: unknown) unread. Up to 64 KiB it is
 * received into a scratch buffer. Larger ones take a zero-byte receive into NULL, which ends
 * with MPI_ERR_TRUNCATE (8.3). NULL, not a small buffer: Open MPI 4.1's single-copy
 * shared-memory path reads the whole message into the buffer it is given (it fails on NULL,
 * and reports "Read -1, expected ..." on stderr). The truncation goes to an error handler:
 * MPICH calls MPI_COMM_WORLD's for a matched receive, Open MPI the message's communicator's,
 * so both return errors for the length of the call (then get their own handlers back), also
 * where the application keeps MPI_ERRORS_ARE_FATAL (docs/MPI.md section 12) */
static inline int cdt_mpi_consume_(MPI_Comm comm, MPI_Message *m, cdt_count n)
{
    MPI_Status st;
    int mrc, cls = MPI_SUCCESS;
    if (n >= 0 && n <= 65536) {
        void *scratch = malloc((size_t)n + 1);
        if (scratch != NULL) {
            mrc = MPI_Mrecv(scratch, (int)n, MPI_BYTE, m, &st);
            free(scratch);
            return mrc == MPI_SUCCESS ? CDT_SUCCESS : cdt_mpi_mpierr_(mrc, "MPI_Mrecv (discard)");
        }
    }
    MPI_Errhandler world_eh, comm_eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_eh);
    MPI_Comm_get_errhandler(comm, &comm_eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    mrc = MPI_Mrecv(NULL, 0, MPI_BYTE, m, &st);
    MPI_Comm_set_errhandler(comm, comm_eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_eh);
    MPI_Errhandler_free(&comm_eh);
    MPI_Errhandler_free(&world_eh);
    if (mrc != MPI_SUCCESS)
        MPI_Error_class(mrc, &cls);
    if (mrc != MPI_SUCCESS && cls != MPI_ERR_TRUNCATE)
        return cdt_mpi_mpierr_(mrc, "MPI_Mrecv (discard)");
    return CDT_SUCCESS;
}

/* MPI_TAG_UB (at least 32767), read once */
static inline uint32_t cdt_mpi_tag_ub_(void)
{
    uint32_t ub = __atomic_load_n(&cdt_mpi_id_space_, __ATOMIC_RELAXED);
    if (ub == 0) {
        int *v = NULL, flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
        ub = flag && v != NULL && *v > 32767 ? (uint32_t)*v : 32767;
        __atomic_store_n(&cdt_mpi_id_space_, ub, __ATOMIC_RELAXED);
    }
    return ub;
}

/* 3.2: a new object id, from one counter per process: k mod N for k = 1, 2, ... with
 * N = max(32767, MPI_TAG_UB), as cdtypes.mpi */
static inline int cdt_mpi_new_id_(void)
{
    return (int)(__atomic_add_fetch(&cdt_mpi_next_id_, 1, __ATOMIC_RELAXED) % cdt_mpi_tag_ub_());
}

/* ---- 6 sending --------------------------------------------------------------------------- */

/* heads up to this size are copied into one buffer (cheaper than a datatype); larger ones
 * are sent from where their pieces lie */
#define CDT_MPI_HEAD_COPY_MAX_ ((cdt_count)64 * 1024)

struct cdt_mpi_request_s {
    int is_recv;
    /* send */
    cdt_frame frame;
    unsigned char *head; /* prefix (+ the copied head) */
    MPI_Request reqs[2];
    MPI_Status sts[2]; /* not MPI_STATUSES_IGNORE: GCC 12 warns on MPICH's prototypes */
    void *alloc_head;  /* the frame's head when cdt_mpi_head_alloc_ gave its memory */
    unsigned char inline_head[256]; /* small heads are copied here */
    int nreqs;
    /* receive */
    int source, tag, matched, canceled;
    MPI_Comm comm;
    cdt_mpi_recv_params params;
    int has_params;
    void *buf;
    cdt_count count;
    cdt_type type;
    cdt_sobj *sobj;
    cdt_mpi_message msg;
    MPI_Status status;
};

static inline int cdt_mpi_separate_(cdt_count len, cdt_count threshold)
{
    return threshold > 0 && len >= threshold;
}

/* the head's pieces: prefix, then the frame's pieces outside the separate regions (4.3);
 * a piece of the frame lies wholly inside a region or wholly outside every region */
#define CDT_MPI_FEW_ 8 /* pieces and regions counted on the stack (the usual small object) */

/* *out: `few` (CDT_MPI_FEW_ entries of the caller's) when the pieces fit, else malloc'd */
static inline int cdt_mpi_head_pieces_(cdt_frame f, const unsigned char *prefix,
                                       cdt_count threshold, cdt_iov *few, cdt_iov **out,
                                       cdt_count *n_out, cdt_count *head_bytes,
                                       cdt_count *sep_bytes)
{
    cdt_iov fp_few[CDT_MPI_FEW_];
    cdt_count ranges_few[2 * CDT_MPI_FEW_];
    cdt_count nfp = 0, nreg = 0, nsep = 0, got = 0, k = 0, pos = 0, r = 0, sep = 0;
    cdt_count total = CDT_MPI_PREFIX;
    int rc = cdt_frame_iov_count(f, &nfp);
    if (rc == CDT_SUCCESS)
        rc = cdt_frame_region_count(f, &nreg);
    if (rc != CDT_SUCCESS)
        return cdt_mpi_fail_(rc, "the frame's pieces: %s", cdt_strerror(rc));
    int small = nfp + 1 <= CDT_MPI_FEW_ && nreg <= CDT_MPI_FEW_;
    cdt_iov *fp = small ? fp_few : (cdt_iov *)malloc((size_t)(nfp + 1) * sizeof *fp);
    cdt_iov *hp = small ? few : (cdt_iov *)malloc((size_t)(nfp + 1) * sizeof *hp);
    cdt_count *ranges =
        small ? ranges_few : (cdt_count *)malloc((size_t)(2 * nreg + 1) * sizeof *ranges);
    if (fp == NULL || hp == NULL || ranges == NULL) {
        rc = cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "out of memory for the head's pieces");
        goto done;
    }
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < nreg; i++) {
        cdt_count len = 0, off = 0;
        cdt_kind kind = CDT_KIND_BYTE;
        rc = cdt_frame_region_info(f, i, &len, &kind, &off);
        if (rc == CDT_SUCCESS && cdt_mpi_separate_(len, threshold)) {
            ranges[2 * nsep] = off;
            ranges[2 * nsep++ + 1] = off + len;
            sep += len;
        }
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_frame_iov(f, 0, nfp, fp, &got);
    if (rc != CDT_SUCCESS) {
        cdt_mpi_fail_(rc, "the frame's pieces: %s", cdt_strerror(rc));
        goto done;
    }
    hp[k].base = (void *)prefix;
    hp[k++].len = CDT_MPI_PREFIX;
    for (cdt_count i = 0; i < got; i++) {
        cdt_count start = pos;
        pos += fp[i].len;
        while (r < nsep && ranges[2 * r + 1] <= start)
            r++;
        if (fp[i].len == 0 || (r < nsep && ranges[2 * r] <= start))
            continue; /* empty, or a piece of a separate region: the parts message's */
        hp[k++] = fp[i];
        total += fp[i].len;
    }
    *out = hp;
    hp = NULL;
    *n_out = k;
    *head_bytes = total;
    *sep_bytes = sep;
done:
    if (!small) {
        free(fp);
        free(hp);
        free(ranges);
    }
    return rc;
}

/* the parts message's pieces: every separate region's, in region order (5.1) */
/* room for `need` pieces in *list (of *cap), grown to twice what is needed; *list is kept (and
 * still the caller's to free) when memory runs out */
static inline int cdt_mpi_iov_reserve_(cdt_iov **list, cdt_count *cap, cdt_count need)
{
    if (need <= *cap)
        return CDT_SUCCESS;
    cdt_iov *q = (cdt_iov *)realloc(*list, (size_t)(2 * need) * sizeof **list);
    if (q == NULL)
        return CDT_ERR_NO_MEMORY;
    *list = q;
    *cap = 2 * need;
    return CDT_SUCCESS;
}

static inline int cdt_mpi_send_parts_(cdt_frame f, cdt_count threshold, cdt_mpi_buf_ *out)
{
    cdt_count nreg = 0, n = 0, cap = 0;
    cdt_iov *p = NULL;
    int rc = cdt_frame_region_count(f, &nreg);
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < nreg; i++) {
        cdt_count len = 0, off = 0, m = 0, got = 0;
        cdt_kind kind = CDT_KIND_BYTE;
        rc = cdt_frame_region_info(f, i, &len, &kind, &off);
        if (rc != CDT_SUCCESS || !cdt_mpi_separate_(len, threshold))
            continue;
        if ((rc = cdt_frame_region_iov_count(f, i, &m)) != CDT_SUCCESS)
            break;
        if ((rc = cdt_mpi_iov_reserve_(&p, &cap, n + m)) != CDT_SUCCESS)
            break;
        rc = cdt_frame_region_iov(f, i, 0, m, p + n, &got);
        n += got;
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_mpi_describe_(p, n, out);
    else
        cdt_mpi_fail_(rc, "the frame's regions: %s", cdt_strerror(rc));
    free(p);
    return rc;
}

static inline void cdt_mpi_send_free_(cdt_mpi_request r)
{
    cdt_frame_free(r->frame);
    if (r->head != r->inline_head)
        free(r->head);
    free(r);
}

/* blocking: a head without parts goes out with MPI_Send (no request to complete) */
static inline int cdt_mpi_isend_(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                                 MPI_Comm comm, const cdt_mpi_send_params *params,
                                 cdt_mpi_request *req, int blocking)
{
    if (req == NULL || tag < 0)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_isend: %s",
                             req == NULL ? "req is NULL" : "a negative tag");
    cdt_mpi_attached_ *att = NULL;
    int rc = cdt_mpi_attached_get_(comm, &att);
    if (rc != CDT_SUCCESS)
        return rc;
    cdt_count threshold = CDT_MPI_THRESHOLD;
    if (params != NULL && (params->field_mask & CDT_MPI_SEND_PARAM_THRESHOLD))
        threshold = params->threshold > 0 ? params->threshold : 0;
    if (att == NULL)
        threshold = 0; /* 2.3: no parts communicator, the whole frame in the head */
    cdt_mpi_request r = (cdt_mpi_request)calloc(1, sizeof *r);
    if (r == NULL)
        return cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "cdt_mpi_isend: out of memory");
    cdt_frame_params fp;
    memset(&fp, 0, sizeof fp);
    fp.field_mask = CDT_FRAME_PARAM_HEAD_ALLOCATOR;
    fp.head_alloc = cdt_mpi_head_alloc_;
    fp.head_release = cdt_mpi_head_release_;
    fp.head_alloc_arg = &r->alloc_head;
    if ((rc = cdt_frame_encode(buf, count, type, &fp, &r->frame)) != CDT_SUCCESS) {
        free(r);
        return cdt_mpi_fail_(rc, "cdt_frame_encode: %s", cdt_strerror(rc));
    }
    unsigned char prefix[CDT_MPI_PREFIX];
    int id = cdt_mpi_new_id_();
    cdt_mpi_put_le_(prefix, CDT_MPI_MAGIC, 4);
    cdt_mpi_put_le_(prefix + 4, (uint32_t)id, 4);
    cdt_mpi_put_le_(prefix + 8, (uint64_t)threshold, 8);
    cdt_iov *pieces = NULL, few[CDT_MPI_FEW_];
    cdt_count npieces = 0, head_bytes = 0, sep_bytes = 0;
    rc = cdt_mpi_head_pieces_(r->frame, prefix, threshold, few, &pieces, &npieces, &head_bytes,
                              &sep_bytes);
    cdt_mpi_buf_ hb = {NULL, 0, MPI_BYTE, 0}, pb = {NULL, 0, MPI_BYTE, 0};
    if (rc == CDT_SUCCESS && npieces == 2 && pieces[1].base == r->alloc_head &&
        r->alloc_head != NULL) {
        /* prefix + the frame's head, which has room for the prefix before it: no copy */
        unsigned char *h = (unsigned char *)r->alloc_head - CDT_MPI_PREFIX;
        memcpy(h, prefix, CDT_MPI_PREFIX);
        cdt_iov one = {h, head_bytes};
        rc = cdt_mpi_describe_(&one, 1, &hb);
    } else if (rc == CDT_SUCCESS) {
        /* small heads: one copy into one buffer; large ones from where they lie */
        size_t keep = head_bytes <= CDT_MPI_HEAD_COPY_MAX_ ? (size_t)head_bytes : CDT_MPI_PREFIX;
        r->head = keep <= sizeof r->inline_head ? r->inline_head : (unsigned char *)malloc(keep);
        if (r->head == NULL) {
            rc = cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "out of memory for a head of %lld bytes",
                               (long long)head_bytes);
        } else if (head_bytes <= CDT_MPI_HEAD_COPY_MAX_) {
            size_t at = 0;
            for (cdt_count i = 0; i < npieces; i++) {
                memcpy(r->head + at, pieces[i].base, (size_t)pieces[i].len);
                at += (size_t)pieces[i].len;
            }
            cdt_iov one = {r->head, head_bytes};
            rc = cdt_mpi_describe_(&one, 1, &hb);
        } else {
            memcpy(r->head, prefix, CDT_MPI_PREFIX);
            pieces[0].base = r->head;
            rc = cdt_mpi_describe_(pieces, npieces, &hb);
        }
    }
    if (pieces != few)
        free(pieces);
    if (rc == CDT_SUCCESS && sep_bytes > 0)
        rc = cdt_mpi_send_parts_(r->frame, threshold, &pb);
    /* 6.2-6.3: both sends posted at once, the parts no later than the head completes */
    int mrc = MPI_SUCCESS;
    if (rc == CDT_SUCCESS && blocking && sep_bytes == 0) {
        mrc = MPI_Send(hb.buf, hb.count, hb.type, dest, tag, comm);
    } else if (rc == CDT_SUCCESS) {
        mrc = MPI_Isend(hb.buf, hb.count, hb.type, dest, tag, comm, &r->reqs[r->nreqs]);
        if (mrc == MPI_SUCCESS)
            r->nreqs++;
    }
    if (rc == CDT_SUCCESS && mrc == MPI_SUCCESS && sep_bytes > 0) {
        mrc = MPI_Isend(pb.buf, pb.count, pb.type, dest, id, att->pc, &r->reqs[r->nreqs]);
        if (mrc == MPI_SUCCESS)
            r->nreqs++;
    }
    cdt_mpi_buf_free_(&hb);
    cdt_mpi_buf_free_(&pb);
    if (rc == CDT_SUCCESS && mrc != MPI_SUCCESS) {
        rc = cdt_mpi_mpierr_(mrc, "MPI_Isend");
        /* a head already posted cannot be taken back (sends are not canceled): wait for it */
        MPI_Waitall(r->nreqs, r->reqs, r->sts);
    }
    if (rc != CDT_SUCCESS) {
        cdt_mpi_send_free_(r);
        return rc;
    }
    *req = r;
    return CDT_SUCCESS;
}

CDT_MPI_API int cdt_mpi_isend(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                              MPI_Comm comm, const cdt_mpi_send_params *params,
                              cdt_mpi_request *req)
{
    return cdt_mpi_isend_(buf, count, type, dest, tag, comm, params, req, 0);
}

CDT_MPI_API int cdt_mpi_send(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                             MPI_Comm comm)
{
    cdt_mpi_request r = NULL;
    int rc = cdt_mpi_isend_(buf, count, type, dest, tag, comm, NULL, &r, 1);
    return rc == CDT_SUCCESS ? cdt_mpi_wait(&r, MPI_STATUS_IGNORE) : rc;
}

CDT_MPI_API int cdt_mpi_send_sobj(const cdt_sobj *obj, int dest, int tag, MPI_Comm comm)
{
    return cdt_mpi_send(obj, 1, cdt_sobj_type(), dest, tag, comm);
}

/* ---- 7 receiving ------------------------------------------------------------------------- */

/* 7.3: the parts message of one object, received into dest or, draining, consumed unread */
typedef struct cdt_mpi_parts_ {
    cdt_mpi_attached_ *att; /* NULL: in line on a communicator that is not attached (2.3) */
    MPI_Comm pc;            /* where the parts message is: att->pc, or comm itself in line */
    int source, id, stale, drain, done, posted;
    int has_pre; /* matched already (in line, with the head): pre, pre_st */
    MPI_Message pre;
    MPI_Status pre_st;
    cdt_count nbytes;
    double deadline; /* < 0: waits as MPI_Recv */
    cdt_mpi_buf_ dest;
    MPI_Request req;
} cdt_mpi_parts_;

struct cdt_mpi_message_s {
    MPI_Comm comm;
    cdt_mpi_attached_ *att;
    MPI_Status status;
    int source, id, untrusted, sobj_prepared;
    double timeout;
    cdt_count n, threshold, sep_bytes;
    unsigned char *head;
    cdt_decoder dec;
    cdt_sobj *sobj;
    cdt_mpi_parts_ parts;
    int parts_started;
    /* 2.3: the in-line parts message, matched with the head on a communicator that is not
     * attached, until the parts receive or a drain takes it */
    int has_inline;
    MPI_Message inline_msg;
    MPI_Status inline_st;
};

static inline void cdt_mpi_parts_init_(cdt_mpi_parts_ *p, cdt_mpi_attached_ *att, int source,
                                       int id, cdt_count nbytes, int drain, double timeout)
{
    memset(p, 0, sizeof *p);
    p->att = att;
    p->pc = att != NULL ? att->pc : MPI_COMM_NULL;
    p->source = source;
    p->id = id;
    p->nbytes = nbytes;
    p->drain = drain;
    p->deadline = timeout >= 0 ? cdt_mpi_now_() + timeout : -1;
    p->stale = att != NULL ? cdt_mpi_take_owed_(att, source, id) : 0;
    p->dest.type = MPI_BYTE;
}

static inline int cdt_mpi_count_error_(const cdt_mpi_parts_ *p, cdt_count got)
{
    return cdt_mpi_fail_(got < p->nbytes ? CDT_ERR_FRAME_TRUNCATED : CDT_ERR_FRAME_MALFORMED,
                         "rank %d sent a parts message of %lld bytes for object %d, its head "
                         "announced %lld",
                         p->source, (long long)got, p->id, (long long)p->nbytes);
}

/* a parts message was matched (7.3 steps 1-4) */
static inline int cdt_mpi_parts_matched_(cdt_mpi_parts_ *p, MPI_Message *m, MPI_Status *st)
{
    if (p->stale > 0) { /* an earlier object's part under this id: sent first, matched first */
        p->stale--;
        return cdt_mpi_consume_(p->pc, m, cdt_mpi_count_(st));
    }
    if (p->drain) {
        p->done = 1;
        return cdt_mpi_consume_(p->pc, m, cdt_mpi_count_(st));
    }
    cdt_count got = cdt_mpi_count_(st);
    if (got != p->nbytes) { /* step 3: before a byte lands in the object */
        p->done = 1;
        int rc = cdt_mpi_consume_(p->pc, m, got);
        return rc != CDT_SUCCESS ? rc : cdt_mpi_count_error_(p, got);
    }
    int mrc = MPI_Imrecv(p->dest.buf, p->dest.count, p->dest.type, m, &p->req);
    if (mrc != MPI_SUCCESS) {
        p->done = 1;
        return cdt_mpi_mpierr_(mrc, "MPI_Imrecv (parts)");
    }
    p->posted = 1;
    return CDT_SUCCESS;
}

/* one step: CDT_SUCCESS once received or drained, CDT_INPROGRESS, or an error (done) */
static inline int cdt_mpi_parts_step_(cdt_mpi_parts_ *p, int block)
{
    MPI_Status st;
    while (!p->done && !p->posted) {
        MPI_Message m;
        int flag = 1, mrc = MPI_SUCCESS, rc;
        if (p->has_pre) { /* in line: matched with the head */
            m = p->pre;
            st = p->pre_st;
            p->has_pre = 0;
        } else if (block && p->deadline < 0) {
            mrc = MPI_Mprobe(p->source, p->id, p->pc, &m, &st);
        } else {
            mrc = MPI_Improbe(p->source, p->id, p->pc, &flag, &m, &st);
        }
        if (mrc != MPI_SUCCESS) {
            p->done = 1;
            return cdt_mpi_mpierr_(mrc, "MPI_Improbe (parts)");
        }
        if (!flag) {
            if (p->deadline >= 0 && cdt_mpi_now_() >= p->deadline) { /* 7.3 step 5, 8.3 */
                if (p->att != NULL)
                    cdt_mpi_owe_(p->att, p->source, p->id, p->stale + 1);
                p->stale = 0;
                p->done = 1;
                if (p->drain)
                    return CDT_SUCCESS; /* a drain gives up quietly */
                return cdt_mpi_fail_(CDT_ERR_TIMEOUT,
                                     "rank %d: the parts message of object %d (%lld bytes) "
                                     "did not arrive within the parts timeout of its head",
                                     p->source, p->id, (long long)p->nbytes);
            }
            return CDT_INPROGRESS;
        }
        if ((rc = cdt_mpi_parts_matched_(p, &m, &st)) != CDT_SUCCESS) {
            p->done = 1;
            return rc;
        }
    }
    if (p->posted) {
        int flag = 1, mrc;
        if (block)
            mrc = MPI_Wait(&p->req, &st);
        else
            mrc = MPI_Test(&p->req, &flag, &st);
        if (mrc != MPI_SUCCESS) {
            p->posted = 0;
            p->done = 1;
            return cdt_mpi_mpierr_(mrc, "MPI_Wait (parts)");
        }
        if (!flag)
            return CDT_INPROGRESS;
        p->posted = 0;
        p->done = 1;
        cdt_count got = cdt_mpi_count_(&st);
        if (got != p->nbytes) /* 7.3 step 4: checked again at completion */
            return cdt_mpi_count_error_(p, got);
    }
    return CDT_SUCCESS;
}

/* wait for a parts step; with a deadline polled: spin 10 ms, then sleep 10 us doubling to 1 ms
 * (as cdtypes.mpi; sleeping at once would add the sleep to every large object's latency) */
static inline int cdt_mpi_parts_wait_(cdt_mpi_parts_ *p)
{
    int rc = cdt_mpi_parts_step_(p, 1);
    double spin_end = cdt_mpi_now_() + 0.01;
    long sleep_ns = 10000;
    while (rc == CDT_INPROGRESS) {
        if (cdt_mpi_now_() >= spin_end) {
            struct timespec ts = {0, sleep_ns};
            nanosleep(&ts, NULL);
            sleep_ns = sleep_ns * 2 < 1000000 ? sleep_ns * 2 : 1000000;
        }
        rc = cdt_mpi_parts_step_(p, 1);
    }
    cdt_mpi_buf_free_(&p->dest);
    return rc;
}

/* 2.3: match the in-line parts message, the next one from source under tag on comm (the
 * sender posted it right after the head); timeout < 0 waits as MPI_Mprobe, else it is polled
 * for at most timeout seconds (CDT_ERR_TIMEOUT) */
static inline int cdt_mpi_inline_match_(MPI_Comm comm, int source, int tag, double timeout,
                                        MPI_Message *m, MPI_Status *st)
{
    if (timeout < 0) {
        int mrc = MPI_Mprobe(source, tag, comm, m, st);
        return mrc == MPI_SUCCESS ? CDT_SUCCESS : cdt_mpi_mpierr_(mrc, "MPI_Mprobe (in line)");
    }
    double deadline = cdt_mpi_now_() + timeout, spin_end = cdt_mpi_now_() + 0.01;
    long sleep_ns = 10000;
    for (;;) {
        int flag = 0, mrc = MPI_Improbe(source, tag, comm, &flag, m, st);
        if (mrc != MPI_SUCCESS)
            return cdt_mpi_mpierr_(mrc, "MPI_Improbe (in line)");
        if (flag)
            return CDT_SUCCESS;
        double now = cdt_mpi_now_();
        if (now >= deadline)
            return cdt_mpi_fail_(CDT_ERR_TIMEOUT,
                                 "rank %d: the in-line parts message under tag %d did not "
                                 "arrive within the parts timeout of its head",
                                 source, tag);
        if (now >= spin_end) {
            struct timespec ts = {0, sleep_ns};
            nanosleep(&ts, NULL);
            sleep_ns = sleep_ns * 2 < 1000000 ? sleep_ns * 2 : 1000000;
        }
    }
}

/* 8.3: consume the parts of an object that will not be rebuilt, bounded by timeout; the
 * error that caused it is what the receive returns (rc), not the drain's. On a communicator
 * that is not attached (att NULL) the parts are in line (2.3): the next message from source
 * under tag on comm, consumed unread (a drain that gives up records nothing: 13.3) */
static inline int cdt_mpi_drain_(cdt_mpi_attached_ *att, MPI_Comm comm, int tag, int source, int id,
                                 cdt_count nbytes, double timeout, int rc)
{
    if (nbytes <= 0)
        return rc;
    char saved[sizeof cdt_mpi_errmsg_];
    memcpy(saved, cdt_mpi_errmsg_, sizeof saved);
    if (att == NULL) {
        MPI_Message m;
        MPI_Status st;
        if (cdt_mpi_inline_match_(comm, source, tag, timeout, &m, &st) == CDT_SUCCESS)
            cdt_mpi_consume_(comm, &m, cdt_mpi_count_(&st));
    } else {
        cdt_mpi_parts_ p;
        cdt_mpi_parts_init_(&p, att, source, id, nbytes, 1, timeout);
        cdt_mpi_parts_wait_(&p);
    }
    memcpy(cdt_mpi_errmsg_, saved, sizeof saved);
    return rc;
}

static inline int cdt_mpi_recv_limits_(const cdt_mpi_recv_params *params, cdt_count *max_bytes,
                                       cdt_count *max_regions, double *timeout, int *untrusted)
{
    uint64_t m = params != NULL ? params->field_mask : 0;
    const uint64_t known = CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES | CDT_MPI_RECV_PARAM_MAX_REGIONS |
                           CDT_MPI_RECV_PARAM_PARTS_TIMEOUT;
    *max_bytes = (m & CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES) ? params->max_frame_bytes : -1;
    *max_regions = (m & CDT_MPI_RECV_PARAM_MAX_REGIONS) ? params->max_regions : -1;
    *timeout =
        (m & CDT_MPI_RECV_PARAM_PARTS_TIMEOUT) ? params->parts_timeout : CDT_MPI_PARTS_TIMEOUT;
    *untrusted = (m & (CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES | CDT_MPI_RECV_PARAM_MAX_REGIONS)) != 0;
    if ((m & ~known) || ((m & CDT_MPI_RECV_PARAM_MAX_FRAME_BYTES) && *max_bytes < 0) ||
        ((m & CDT_MPI_RECV_PARAM_MAX_REGIONS) && *max_regions < 0) || !(*timeout >= 0))
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_recv_params: an unknown field_mask "
                                                  "bit, or a negative limit or timeout");
    return CDT_SUCCESS;
}

/* the prefix, and a decoder on the frame header with or without limits (7.2 steps 3-5);
 * *sep = S from the head's threshold */
static inline int cdt_mpi_open_head_(const unsigned char *h, cdt_count n, MPI_Comm comm, int source,
                                     cdt_count max_bytes, cdt_count max_regions, int *id,
                                     cdt_count *threshold, cdt_decoder *dec, cdt_count *sep)
{
    if (n < CDT_MPI_PREFIX || (uint32_t)cdt_mpi_get_le_(h, 4) != CDT_MPI_MAGIC) {
        int other = n >= 4 && h[0] == 0x43 && h[1] == 0x44 && h[2] == 0x54;
        return cdt_mpi_fail_(CDT_ERR_FRAME_MAGIC,
                             "rank %d sent a message of %lld bytes that is not a libcdt MPI "
                             "head%s",
                             source, (long long)n,
                             other ? " (another version of the protocol, docs/MPI.md 11)" : "");
    }
    uint64_t oid = cdt_mpi_get_le_(h + 4, 4), t = cdt_mpi_get_le_(h + 8, 8);
    (void)comm;
    if (oid > cdt_mpi_tag_ub_())
        return cdt_mpi_fail_(CDT_ERR_FRAME_MALFORMED,
                             "rank %d sent a head with object id %llu, above MPI_TAG_UB", source,
                             (unsigned long long)oid);
    *id = (int)oid;
    *threshold = t > (uint64_t)INT64_MAX ? INT64_MAX : (cdt_count)t;
    if (n - CDT_MPI_PREFIX < CDT_FRAME_FIXED_HEADER_SIZE)
        return cdt_mpi_fail_(CDT_ERR_FRAME_TRUNCATED,
                             "rank %d sent a head of %lld bytes: no room for a frame header",
                             source, (long long)n);
    cdt_decoder_params dp = {0, 0, 0};
    if (max_bytes >= 0) {
        dp.field_mask |= CDT_DECODER_PARAM_MAX_FRAME_BYTES;
        dp.max_frame_bytes = max_bytes;
    }
    if (max_regions >= 0) {
        dp.field_mask |= CDT_DECODER_PARAM_MAX_REGIONS;
        dp.max_regions = max_regions;
    }
    int rc = cdt_decoder_create_advanced(h + CDT_MPI_PREFIX, n - CDT_MPI_PREFIX, &dp, dec);
    if (rc != CDT_SUCCESS)
        return cdt_mpi_fail_(rc, "rank %d sent a head whose frame header is refused: %s", source,
                             cdt_strerror(rc));
    cdt_frame_info info;
    memset(&info, 0, sizeof(info)); /* C and C++ alike, whatever fields it grows */
    info.field_mask = CDT_FRAME_INFO_REGION_COUNT;
    cdt_decoder_info(*dec, &info);
    cdt_count s = 0;
    for (cdt_count i = 0; i < info.region_count; i++) {
        cdt_count len = 0, off = 0;
        cdt_kind kind = CDT_KIND_BYTE;
        cdt_decoder_region_info(*dec, i, &len, &kind, &off);
        if (cdt_mpi_separate_(len, *threshold))
            s += len;
    }
    *sep = s;
    return CDT_SUCCESS;
}

/* 7.2 step 1 with a refused head, and steps 3-5 on failure: what to drain, named by a header
 * read without limits (nothing when it names none) */
static inline int cdt_mpi_drain_head_(const unsigned char *h, cdt_count n, MPI_Comm comm,
                                      cdt_mpi_attached_ *att, int source, int tag, double timeout,
                                      int rc)
{
    char saved[sizeof cdt_mpi_errmsg_];
    memcpy(saved, cdt_mpi_errmsg_, sizeof saved);
    int id = 0;
    cdt_count threshold = 0, sep = 0;
    cdt_decoder dec = NULL;
    int orc = cdt_mpi_open_head_(h, n, comm, source, -1, -1, &id, &threshold, &dec, &sep);
    cdt_decoder_free(dec);
    memcpy(cdt_mpi_errmsg_, saved, sizeof saved);
    return orc == CDT_SUCCESS ? cdt_mpi_drain_(att, comm, tag, source, id, sep, timeout, rc) : rc;
}

static inline void cdt_mpi_message_free_(cdt_mpi_message m)
{
    if (m == NULL)
        return;
    if (m->has_inline) /* never left queued (2.3) */
        cdt_mpi_consume_(m->comm, &m->inline_msg, cdt_mpi_count_(&m->inline_st));
    cdt_decoder_free(m->dec);
    if (m->sobj_prepared)
        cdt_sobj_release(m->sobj);
    cdt_mpi_buf_free_(&m->parts.dest);
    cdt_mpi_give_(1, m->head);
    free(m);
}

/* a head was matched as (mm, st): 7.2 steps 1-8 */
static inline int cdt_mpi_take_head_(MPI_Comm comm, MPI_Message *mm, MPI_Status *st,
                                     const cdt_mpi_recv_params *params, cdt_mpi_message *out)
{
    cdt_count max_bytes, max_regions, n = cdt_mpi_count_(st);
    double timeout;
    int untrusted, source = st->MPI_SOURCE, rc;
    cdt_mpi_attached_ *att = NULL;
    if ((rc = cdt_mpi_recv_limits_(params, &max_bytes, &max_regions, &timeout, &untrusted)) !=
            CDT_SUCCESS ||
        (rc = cdt_mpi_attached_get_(comm, &att)) != CDT_SUCCESS)
        return rc;
    if (n < 0)
        return cdt_mpi_fail_(CDT_ERR_TRANSPORT, "rank %d: the head's byte count is unknown",
                             source);
    if (max_bytes >= 0 && n - CDT_MPI_PREFIX > max_bytes) { /* step 1 */
        rc = cdt_mpi_fail_(CDT_ERR_LIMIT,
                           "rank %d sent a head of %lld frame bytes, "
                           "max_frame_bytes is %lld",
                           source, (long long)(n - CDT_MPI_PREFIX), (long long)max_bytes);
        if (n > CDT_MPI_HEAD_DRAIN_MAX) {
            /* consumed unread (section 12: its parts cannot be named) */
            int crc = cdt_mpi_consume_(comm, mm, n);
            return crc != CDT_SUCCESS ? crc : rc;
        }
        unsigned char *tmp = (unsigned char *)malloc((size_t)n + 1);
        if (tmp == NULL)
            return cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "out of memory for a head");
        int mrc = MPI_Mrecv(tmp, (int)n, MPI_BYTE, mm, MPI_STATUS_IGNORE);
        if (mrc != MPI_SUCCESS) {
            free(tmp);
            return cdt_mpi_mpierr_(mrc, "MPI_Mrecv (head)");
        }
        rc = cdt_mpi_drain_head_(tmp, n, comm, att, source, st->MPI_TAG, timeout, rc);
        free(tmp);
        return rc;
    }
    cdt_mpi_message m = (cdt_mpi_message)calloc(1, sizeof *m);
    if (m == NULL || (m->head = (unsigned char *)cdt_mpi_take_(1, (size_t)n + 1)) == NULL) {
        free(m);
        cdt_mpi_consume_(comm, mm, -1); /* the head must still be consumed: it is this object's */
        return cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "out of memory for a head of %lld bytes",
                             (long long)n);
    }
    m->comm = comm;
    m->att = att;
    m->status = *st;
    m->source = source;
    m->untrusted = untrusted;
    m->timeout = timeout;
    m->n = n;
    cdt_iov one = {m->head, n};
    cdt_mpi_buf_ hb = {NULL, 0, MPI_BYTE, 0};
    if ((rc = cdt_mpi_describe_(&one, 1, &hb)) != CDT_SUCCESS) { /* step 2 */
        cdt_mpi_message_free_(m);
        return rc;
    }
    int mrc = MPI_Mrecv(hb.buf, hb.count, hb.type, mm, MPI_STATUS_IGNORE);
    cdt_mpi_buf_free_(&hb);
    if (mrc != MPI_SUCCESS) {
        cdt_mpi_message_free_(m);
        return cdt_mpi_mpierr_(mrc, "MPI_Mrecv (head)");
    }
    rc = cdt_mpi_open_head_(m->head, n, comm, source, max_bytes, max_regions, &m->id, &m->threshold,
                            &m->dec, &m->sep_bytes); /* steps 3-5 */
    if (rc == CDT_ERR_LIMIT)                         /* a valid header refused by a limit: drain */
        rc = cdt_mpi_drain_head_(m->head, n, comm, att, source, st->MPI_TAG, timeout, rc);
    if (rc == CDT_SUCCESS) {
        cdt_frame_info info;
        memset(&info, 0, sizeof(info)); /* C and C++ alike, whatever fields it grows */
        info.field_mask = CDT_FRAME_INFO_FRAME_SIZE;
        cdt_decoder_info(m->dec, &info);
        cdt_count want = info.frame_size - m->sep_bytes;
        if (n - CDT_MPI_PREFIX != want) { /* step 6 */
            rc = cdt_mpi_fail_(n - CDT_MPI_PREFIX < want ? CDT_ERR_FRAME_TRUNCATED
                                                         : CDT_ERR_FRAME_MALFORMED,
                               "rank %d sent a head with %lld frame bytes for object %d, its "
                               "header says %lld",
                               source, (long long)(n - CDT_MPI_PREFIX), m->id, (long long)want);
            rc = cdt_mpi_drain_(att, comm, st->MPI_TAG, source, m->id, m->sep_bytes, timeout, rc);
        } else if (m->sep_bytes > 0 && att == NULL) { /* step 7: in line (2.3), matched now */
            rc = cdt_mpi_inline_match_(comm, source, st->MPI_TAG, untrusted ? timeout : -1,
                                       &m->inline_msg, &m->inline_st);
            m->has_inline = rc == CDT_SUCCESS;
        }
    }
    if (rc != CDT_SUCCESS) {
        cdt_mpi_message_free_(m);
        return rc;
    }
    *out = m;
    return CDT_SUCCESS;
}

CDT_MPI_API int cdt_mpi_mprobe(int source, int tag, MPI_Comm comm,
                               const cdt_mpi_recv_params *params, cdt_mpi_message *msg,
                               MPI_Status *status)
{
    MPI_Message mm;
    MPI_Status st;
    cdt_count b = 0, g = 0;
    double t = 0;
    int u = 0, rc = cdt_mpi_recv_limits_(params, &b, &g, &t, &u);
    if (rc != CDT_SUCCESS)
        return rc; /* before a head is matched: a matched head must be consumed */
    if (msg == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_mprobe: msg is NULL");
    CDT_MPI_TRY_(MPI_Mprobe(source, tag, comm, &mm, &st)); /* 7.1 */
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return cdt_mpi_take_head_(comm, &mm, &st, params, msg);
}

CDT_MPI_API int cdt_mpi_improbe(int source, int tag, MPI_Comm comm,
                                const cdt_mpi_recv_params *params, int *flag, cdt_mpi_message *msg,
                                MPI_Status *status)
{
    MPI_Message mm;
    MPI_Status st;
    cdt_count b = 0, g = 0;
    double t = 0;
    int u = 0, rc = cdt_mpi_recv_limits_(params, &b, &g, &t, &u);
    if (rc != CDT_SUCCESS)
        return rc;
    if (msg == NULL || flag == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_improbe: msg or flag is NULL");
    int f = 0;
    CDT_MPI_TRY_(MPI_Improbe(source, tag, comm, &f, &mm, &st));
    *flag = f;
    if (!f)
        return CDT_SUCCESS;
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return cdt_mpi_take_head_(comm, &mm, &st, params, msg);
}

CDT_MPI_API cdt_decoder cdt_mpi_message_decoder(cdt_mpi_message msg)
{
    return msg != NULL ? msg->dec : NULL;
}

/* 7.2 steps 9-10: bind the destination, write the head's frame bytes at their frame offsets
 * (4.3), and describe the separate regions' memory for the parts receive */
static inline int cdt_mpi_deliver_(cdt_mpi_message m, void *buf, cdt_count count, cdt_type type,
                                   cdt_sobj *obj)
{
    int rc = CDT_SUCCESS;
    if (obj != NULL) {
        if ((rc = cdt_sobj_recv_prepare(obj, m->dec)) != CDT_SUCCESS)
            return cdt_mpi_fail_(rc, "cdt_sobj_recv_prepare: %s", cdt_strerror(rc));
        m->sobj = obj;
        m->sobj_prepared = 1;
        buf = obj;
        count = 1;
        type = cdt_sobj_type();
    }
    if (type != NULL && (rc = cdt_decoder_bind(m->dec, buf, count, type)) != CDT_SUCCESS)
        return cdt_mpi_fail_(rc, "rank %d: object %d does not fit the receive: %s", m->source,
                             m->id, cdt_strerror(rc));
    cdt_frame_info info;
    memset(&info, 0, sizeof(info)); /* C and C++ alike, whatever fields it grows */
    info.field_mask = CDT_FRAME_INFO_REGION_COUNT | CDT_FRAME_INFO_FRAME_SIZE;
    cdt_decoder_info(m->dec, &info);
    cdt_count pos = 0, h = CDT_MPI_PREFIX, npieces = 0, cap = 0;
    cdt_iov *pieces = NULL;
    for (cdt_count i = 0; i <= info.region_count; i++) {
        cdt_count len = 0, off = info.frame_size;
        cdt_kind kind = CDT_KIND_BYTE;
        if (i < info.region_count) {
            cdt_decoder_region_info(m->dec, i, &len, &kind, &off);
            if (!cdt_mpi_separate_(len, m->threshold))
                continue;
        }
        if (off > pos && (rc = cdt_decoder_write(m->dec, pos, m->head + h, off - pos)) != 0) {
            free(pieces);
            return cdt_mpi_fail_(rc, "rank %d: object %d's head refused: %s", m->source, m->id,
                                 cdt_strerror(rc));
        }
        h += off - pos;
        pos = off + len;
        if (i == info.region_count)
            break;
        cdt_count k = 0, got = 0;
        if ((rc = cdt_decoder_region_iov_count(m->dec, i, &k)) != CDT_SUCCESS)
            break;
        if ((rc = cdt_mpi_iov_reserve_(&pieces, &cap, npieces + k)) != CDT_SUCCESS)
            break;
        if ((rc = cdt_decoder_region_iov(m->dec, i, 0, k, pieces + npieces, &got)) != 0)
            break;
        npieces += got;
    }
    if (rc == CDT_SUCCESS && m->sep_bytes > 0) {
        cdt_mpi_parts_init_(&m->parts, m->att, m->source, m->id, m->sep_bytes, 0,
                            m->untrusted ? m->timeout : -1);
        rc = cdt_mpi_describe_(pieces, npieces, &m->parts.dest);
        m->parts_started = rc == CDT_SUCCESS;
        if (m->parts_started && m->has_inline) { /* 2.3: the parts receive takes it */
            m->parts.pc = m->comm;
            m->parts.has_pre = 1;
            m->parts.pre = m->inline_msg;
            m->parts.pre_st = m->inline_st;
            m->has_inline = 0;
        }
    } else if (rc != CDT_SUCCESS) {
        cdt_mpi_fail_(rc, "rank %d: object %d's regions: %s", m->source, m->id, cdt_strerror(rc));
    }
    free(pieces);
    return rc;
}

/* 7.2 step 11: every separate region delivered, every frame byte arrived once */
static inline int cdt_mpi_finish_(cdt_mpi_message m)
{
    cdt_frame_info info;
    memset(&info, 0, sizeof(info)); /* C and C++ alike, whatever fields it grows */
    info.field_mask = CDT_FRAME_INFO_REGION_COUNT;
    int rc = cdt_decoder_info(m->dec, &info);
    for (cdt_count i = 0; rc == CDT_SUCCESS && i < info.region_count; i++) {
        cdt_count len = 0, off = 0;
        cdt_kind kind = CDT_KIND_BYTE;
        cdt_decoder_region_info(m->dec, i, &len, &kind, &off);
        if (cdt_mpi_separate_(len, m->threshold))
            rc = cdt_decoder_region_done(m->dec, i);
    }
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_finish(m->dec);
    if (rc != CDT_SUCCESS)
        return cdt_mpi_fail_(rc, "rank %d: object %d is incomplete: %s", m->source, m->id,
                             cdt_strerror(rc));
    m->sobj_prepared = 0; /* the caller's now */
    return CDT_SUCCESS;
}

/* 8.3 for a matched message: its in-line parts (2.3) consumed, or its parts drained on pc */
static inline int cdt_mpi_message_drain_(cdt_mpi_message m, int rc)
{
    if (m->has_inline) {
        m->has_inline = 0;
        char saved[sizeof cdt_mpi_errmsg_];
        memcpy(saved, cdt_mpi_errmsg_, sizeof saved);
        cdt_mpi_consume_(m->comm, &m->inline_msg, cdt_mpi_count_(&m->inline_st));
        memcpy(cdt_mpi_errmsg_, saved, sizeof saved);
        return rc;
    }
    if (m->att == NULL)
        return rc; /* whole in the head: nothing else was sent */
    return cdt_mpi_drain_(m->att, m->comm, m->status.MPI_TAG, m->source, m->id, m->sep_bytes,
                          m->timeout, rc);
}

/* deliver the head into the destination; a failure drains (8.3) */
static inline int cdt_mpi_start_(cdt_mpi_message m, void *buf, cdt_count count, cdt_type type,
                                 cdt_sobj *obj)
{
    int rc = cdt_mpi_deliver_(m, buf, count, type, obj);
    if (rc != CDT_SUCCESS)
        rc = cdt_mpi_message_drain_(m, rc);
    return rc;
}

/* the parts (if any) and the finish; CDT_INPROGRESS while the parts are pending */
static inline int cdt_mpi_progress_(cdt_mpi_message m, int block)
{
    if (m->parts_started) {
        int rc = block ? cdt_mpi_parts_wait_(&m->parts) : cdt_mpi_parts_step_(&m->parts, 0);
        if (rc == CDT_INPROGRESS)
            return rc;
        m->parts_started = 0;
        cdt_mpi_buf_free_(&m->parts.dest);
        if (rc != CDT_SUCCESS)
            return rc;
    }
    return cdt_mpi_finish_(m);
}

static inline int cdt_mpi_mrecv_into_(void *buf, cdt_count count, cdt_type type, cdt_sobj *obj,
                                      cdt_mpi_message *msg)
{
    if (msg == NULL || *msg == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_mrecv: no message");
    cdt_mpi_message m = *msg;
    *msg = NULL;
    int rc = cdt_mpi_start_(m, buf, count, type, obj);
    if (rc == CDT_SUCCESS)
        rc = cdt_mpi_progress_(m, 1);
    cdt_mpi_message_free_(m);
    return rc;
}

CDT_MPI_API int cdt_mpi_mrecv(void *buf, cdt_count count, cdt_type type, cdt_mpi_message *msg)
{
    return cdt_mpi_mrecv_into_(buf, count, type, NULL, msg);
}

CDT_MPI_API int cdt_mpi_mrecv_sobj(cdt_sobj *obj, cdt_mpi_message *msg)
{
    if (obj == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_mrecv_sobj: obj is NULL");
    return cdt_mpi_mrecv_into_(NULL, 0, NULL, obj, msg);
}

CDT_MPI_API int cdt_mpi_mrecv_bound(cdt_mpi_message *msg)
{
    return cdt_mpi_mrecv_into_(NULL, 0, NULL, NULL, msg); /* no type: bound by the caller */
}

CDT_MPI_API int cdt_mpi_message_discard(cdt_mpi_message *msg)
{
    if (msg == NULL || *msg == NULL)
        return CDT_SUCCESS;
    cdt_mpi_message m = *msg;
    *msg = NULL;
    int rc = cdt_mpi_message_drain_(m, CDT_SUCCESS);
    cdt_mpi_message_free_(m);
    return rc;
}

CDT_MPI_API int cdt_mpi_recv(void *buf, cdt_count count, cdt_type type, int source, int tag,
                             MPI_Comm comm, const cdt_mpi_recv_params *params, MPI_Status *status)
{
    cdt_mpi_message m;
    int rc = cdt_mpi_mprobe(source, tag, comm, params, &m, status);
    return rc == CDT_SUCCESS ? cdt_mpi_mrecv(buf, count, type, &m) : rc;
}

CDT_MPI_API int cdt_mpi_recv_sobj(cdt_sobj *obj, int source, int tag, MPI_Comm comm,
                                  const cdt_mpi_recv_params *params, MPI_Status *status)
{
    if (obj == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_recv_sobj: obj is NULL");
    cdt_mpi_message m;
    int rc = cdt_mpi_mprobe(source, tag, comm, params, &m, status);
    return rc == CDT_SUCCESS ? cdt_mpi_mrecv_sobj(obj, &m) : rc;
}

static inline int cdt_mpi_irecv_(void *buf, cdt_count count, cdt_type type, cdt_sobj *obj,
                                 int source, int tag, MPI_Comm comm,
                                 const cdt_mpi_recv_params *params, cdt_mpi_request *req)
{
    cdt_count b = 0, g = 0;
    double t = 0;
    int u = 0, rc = cdt_mpi_recv_limits_(params, &b, &g, &t, &u);
    if (rc != CDT_SUCCESS)
        return rc;
    if (req == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_irecv: req is NULL");
    cdt_mpi_request r = (cdt_mpi_request)calloc(1, sizeof *r);
    if (r == NULL)
        return cdt_mpi_fail_(CDT_ERR_NO_MEMORY, "cdt_mpi_irecv: out of memory");
    r->is_recv = 1;
    r->buf = buf;
    r->count = count;
    r->type = type;
    r->sobj = obj;
    r->source = source;
    r->tag = tag;
    r->comm = comm;
    if (params != NULL) {
        r->params = *params;
        r->has_params = 1;
    }
    *req = r;
    return CDT_SUCCESS;
}

CDT_MPI_API int cdt_mpi_irecv(void *buf, cdt_count count, cdt_type type, int source, int tag,
                              MPI_Comm comm, const cdt_mpi_recv_params *params,
                              cdt_mpi_request *req)
{
    return cdt_mpi_irecv_(buf, count, type, NULL, source, tag, comm, params, req);
}

CDT_MPI_API int cdt_mpi_irecv_sobj(cdt_sobj *obj, int source, int tag, MPI_Comm comm,
                                   const cdt_mpi_recv_params *params, cdt_mpi_request *req)
{
    if (obj == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_irecv_sobj: obj is NULL");
    return cdt_mpi_irecv_(NULL, 0, NULL, obj, source, tag, comm, params, req);
}

/* one step of a receive request: CDT_INPROGRESS, or its result (then it is over) */
static inline int cdt_mpi_recv_step_(cdt_mpi_request r, int block)
{
    int rc;
    if (r->canceled)
        return cdt_mpi_fail_(CDT_ERR_CANCELED, "the receive was canceled");
    if (!r->matched) {
        const cdt_mpi_recv_params *p = r->has_params ? &r->params : NULL;
        int flag = 1;
        if (block)
            rc = cdt_mpi_mprobe(r->source, r->tag, r->comm, p, &r->msg, &r->status);
        else
            rc = cdt_mpi_improbe(r->source, r->tag, r->comm, p, &flag, &r->msg, &r->status);
        if (rc == CDT_SUCCESS && !flag)
            return CDT_INPROGRESS;
        r->matched = 1;
        if (rc == CDT_SUCCESS)
            rc = cdt_mpi_start_(r->msg, r->buf, r->count, r->type, r->sobj);
        if (rc != CDT_SUCCESS)
            return rc;
    }
    rc = cdt_mpi_progress_(r->msg, block);
    return rc;
}

CDT_MPI_API int cdt_mpi_test(cdt_mpi_request *req, int *flag, MPI_Status *status)
{
    if (req == NULL || *req == NULL || flag == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_test: no request or flag");
    cdt_mpi_request r = *req;
    int rc;
    if (r->is_recv) {
        rc = cdt_mpi_recv_step_(r, 0);
        if (rc == CDT_INPROGRESS) {
            *flag = 0;
            return CDT_SUCCESS;
        }
        if (status != MPI_STATUS_IGNORE && r->matched)
            *status = r->status;
        cdt_mpi_message_free_(r->msg);
        free(r);
    } else {
        int done = 0, mrc = MPI_Testall(r->nreqs, r->reqs, &done, r->sts);
        if (mrc == MPI_SUCCESS && !done) {
            *flag = 0;
            return CDT_SUCCESS;
        }
        rc = mrc == MPI_SUCCESS ? CDT_SUCCESS : cdt_mpi_mpierr_(mrc, "MPI_Testall (send)");
        cdt_mpi_send_free_(r);
    }
    *flag = 1;
    *req = NULL;
    return rc;
}

CDT_MPI_API int cdt_mpi_wait(cdt_mpi_request *req, MPI_Status *status)
{
    if (req == NULL || *req == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_wait: no request");
    cdt_mpi_request r = *req;
    int rc;
    if (r->is_recv) {
        rc = cdt_mpi_recv_step_(r, 1);
        if (status != MPI_STATUS_IGNORE && r->matched)
            *status = r->status;
        cdt_mpi_message_free_(r->msg);
        free(r);
    } else {
        int mrc = MPI_Waitall(r->nreqs, r->reqs, r->sts);
        rc = mrc == MPI_SUCCESS ? CDT_SUCCESS : cdt_mpi_mpierr_(mrc, "MPI_Waitall (send)");
        cdt_mpi_send_free_(r);
    }
    *req = NULL;
    return rc;
}

CDT_MPI_API int cdt_mpi_cancel(cdt_mpi_request req, int *canceled)
{
    if (req == NULL || canceled == NULL)
        return cdt_mpi_fail_(CDT_ERR_INVALID_ARG, "cdt_mpi_cancel: no request or flag");
    *canceled = req->is_recv && !req->matched && !req->canceled;
    if (*canceled)
        req->canceled = 1;
    return CDT_SUCCESS;
}

#undef CDT_MPI_TRY_
#undef CDT_MPI_BLOCK_
#undef CDT_MPI_HEAD_COPY_MAX_
#undef CDT_MPI_CACHE_MAX_
#undef CDT_MPI_FEW_
/*! @endcond */

#ifdef __cplusplus
}
#endif
#endif /* CDT_MPI_H */
