"""The cffi backend's compiled module, cdtypes._cffi_ext (cffi API mode).

The build (python/CMakeLists.txt) runs this file to write the module's C source, then compiles
it against libcdt's headers with the interpreter's own headers (CPython or PyPy):

    python _cffi_build.py OUTPUT.c

Like cdtypes._ext, the module does not link libcdt: cdtpy_resolve() looks the core's functions
up (dlsym) in the libcdtypes.so the package already loaded, so there is one libcdt per process,
and cdtpy_resolve_ucx() the transport's in libcdtypes-ucx.so once cdtypes.ucx has loaded it. The
calls stay direct C calls: each name is a macro over the resolved pointer. cffi releases the
GIL around every call; the two callbacks (the receive allocator and the UCX prepare hook) are
``extern "Python"`` functions, which take it back.
"""
import sys

import cffi

# The libcdt functions the module calls: the same lists as the C extension's CALLS/UCX_CALLS.
CORE_CALLS = (
    "cdt_frame_encode",
    "cdt_frame_size",
    "cdt_frame_head",
    "cdt_frame_region_count",
    "cdt_frame_region_info",
    "cdt_frame_region_iov",
    "cdt_frame_iov_count",
    "cdt_frame_iov",
    "cdt_frame_gather",
    "cdt_frame_free",
    "cdt_decoder_create_advanced",
    "cdt_decoder_info",
    "cdt_decoder_region_info",
    "cdt_decoder_region_iov",
    "cdt_decoder_bind",
    "cdt_decoder_write",
    "cdt_decoder_region_done",
    "cdt_decoder_finish",
    "cdt_decoder_free",
    "cdt_sobj_type",
    "cdt_sobj_recv_prepare",
    "cdt_sobj_release",
)
UCX_CALLS = (
    "cdt_ucx_isend",
    "cdt_ucx_irecv",
    "cdt_ucx_request_test",
    "cdt_ucx_request_wait",
    "cdt_ucx_request_cancel",
    "cdt_ucx_request_recv_info",
    "cdt_ucx_request_free",
)

CDEF = """
typedef int64_t cdt_count;
typedef uint64_t cdt_ucx_tag;
typedef enum { CDT_KIND_BYTE, ... } cdt_kind;
typedef struct cdt_type_s *cdt_type;
typedef struct cdt_frame_s *cdt_frame;
typedef struct cdt_decoder_s *cdt_decoder;
typedef struct cdt_ucx_ep_s *cdt_ucx_ep;
typedef struct cdt_ucx_worker_s *cdt_ucx_worker;
typedef struct cdt_ucx_request_s *cdt_ucx_request;

#define CDT_SUCCESS ...
#define CDT_INPROGRESS ...
#define CDT_ERR_USER_BASE ...
#define CDT_ERR_LIMIT ...
#define CDT_ERR_UNSUPPORTED ...
#define CDT_ERR_TIMEOUT ...
#define CDT_ERR_CANCELED ...
#define CDT_ERR_FRAME_MAGIC ...
#define CDT_ERR_FRAME_MALFORMED ...
#define CDT_ERR_FRAME_TRUNCATED ...
#define CDT_FRAME_FIXED_HEADER_SIZE ...
#define CDT_DECODER_PARAM_MAX_FRAME_BYTES ...
#define CDT_DECODER_PARAM_MAX_REGIONS ...
#define CDT_UCX_RECV_PARAM_PREPARE ...
#define CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES ...
#define CDT_UCX_RECV_PARAM_MAX_REGIONS ...
#define CDT_UCX_INFINITE ...
#define CDT_FRAME_INFO_ALL ...
#define CDT_UCX_RECV_INFO_ALL ...
#define CDT_SOBJ_FIELD_ALLOC ...
#define CDT_SOBJ_FIELD_INBAND_PARTS ...

typedef struct { void *base; cdt_count len; } cdt_iov;
typedef struct {
    uint64_t field_mask; uint32_t version; uint32_t flags; cdt_count header_size;
    cdt_count packed_size; cdt_count region_count; cdt_count region_bytes; cdt_count frame_size;
    ...;
} cdt_frame_info;
typedef struct { uint64_t field_mask; cdt_count max_frame_bytes; cdt_count max_regions; ...; }
    cdt_decoder_params;
typedef struct { void *base; cdt_count len; cdt_kind kind; } cdt_sobj_buffer;
typedef int(cdt_sobj_alloc_func_t)(void *user, cdt_count index, cdt_count len, cdt_kind kind,
                                   void **base);
typedef struct {
    uint64_t field_mask; void *inband; cdt_count inband_len; cdt_sobj_buffer *buffers; cdt_count nbuffers;
    cdt_sobj_alloc_func_t *alloc; void *alloc_user; const cdt_iov *inband_parts;
    cdt_count inband_nparts; ...;
} cdt_sobj;
typedef struct { uint64_t field_mask; cdt_ucx_tag tag; cdt_count frame_size; cdt_count packed_size;
                 cdt_count region_count; cdt_count region_bytes; ...; } cdt_ucx_recv_info;
typedef int(cdt_ucx_recv_prepare_func_t)(void *arg, cdt_decoder decoder);
typedef struct {
    uint64_t field_mask; cdt_ucx_recv_prepare_func_t *prepare; void *prepare_arg;
    cdt_count max_frame_bytes; cdt_count max_regions; ...;
} cdt_ucx_recv_params;

int cdt_frame_encode(const void *buf, cdt_count count, cdt_type type, const void *params,
                     cdt_frame *frame);
int cdt_frame_size(cdt_frame frame, cdt_count *bytes);
int cdt_frame_head(cdt_frame frame, const void **data, cdt_count *len);
int cdt_frame_region_count(cdt_frame frame, cdt_count *n);
int cdt_frame_region_info(cdt_frame frame, cdt_count index, cdt_count *len_bytes, cdt_kind *kind,
                          cdt_count *frame_offset);
int cdt_frame_region_iov(cdt_frame frame, cdt_count index, cdt_count first, cdt_count max,
                         cdt_iov iov[], cdt_count *n_out);
int cdt_frame_iov_count(cdt_frame frame, cdt_count *n);
int cdt_frame_iov(cdt_frame frame, cdt_count first, cdt_count max, cdt_iov iov[],
                  cdt_count *n_out);
int cdt_frame_gather(cdt_frame frame, cdt_count offset, void *dst, cdt_count len);
int cdt_frame_free(cdt_frame frame);
int cdt_decoder_create_advanced(const void *data, cdt_count len, const cdt_decoder_params *params,
                                cdt_decoder *decoder);
int cdt_decoder_info(cdt_decoder decoder, cdt_frame_info *info);
int cdt_decoder_region_info(cdt_decoder decoder, cdt_count index, cdt_count *len_bytes,
                            cdt_kind *kind, cdt_count *frame_offset);
int cdt_decoder_region_iov(cdt_decoder decoder, cdt_count index, cdt_count first, cdt_count max,
                           cdt_iov iov[], cdt_count *n_out);
int cdt_decoder_bind(cdt_decoder decoder, void *buf, cdt_count count, cdt_type type);
int cdt_decoder_write(cdt_decoder decoder, cdt_count offset, const void *src, cdt_count len);
int cdt_decoder_region_done(cdt_decoder decoder, cdt_count index);
int cdt_decoder_finish(cdt_decoder decoder);
int cdt_decoder_free(cdt_decoder decoder);
cdt_type cdt_sobj_type(void);
int cdt_sobj_recv_prepare(cdt_sobj *obj, cdt_decoder decoder);
void cdt_sobj_release(cdt_sobj *obj);
int cdt_ucx_isend(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type,
                  cdt_ucx_tag tag, cdt_ucx_request *request);
int cdt_ucx_irecv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type,
                  cdt_ucx_tag tag, cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params,
                  cdt_ucx_request *request);
int cdt_ucx_request_test(cdt_ucx_request request);
int cdt_ucx_request_wait(cdt_ucx_request request, int64_t timeout_ms);
int cdt_ucx_request_cancel(cdt_ucx_request request);
int cdt_ucx_request_recv_info(cdt_ucx_request request, cdt_ucx_recv_info *info);
int cdt_ucx_request_free(cdt_ucx_request request);

/* the module's own helpers */
const char *cdtpy_resolve(const char *path);
const char *cdtpy_resolve_ucx(const char *path);
void *cdtpy_alloc(size_t n);
void cdtpy_free(void *p);
int cdtpy_alloc_default(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base);
void cdtpy_cache_limit(int64_t bytes);
int cdtpy_stream_needs_check(const unsigned char *s, size_t n);
int cdtpy_pickle_plain(const unsigned char *s, size_t n, size_t nbuf);
int cdtpy_decode_inplace(cdt_decoder dec, const char *p, cdt_count header_and_stream,
                         cdt_count region_count);
int64_t cdtpy_mpi_pack_inband(const char *stream, cdt_count len, uint32_t oid,
                              cdt_count threshold, char *dst, cdt_count cap);
int64_t cdtpy_mpi_unpack_inband(const char *head, cdt_count n, cdt_count max_bytes,
                                cdt_count max_regions);
int cdtpy_mpi_head_regions(const char *head, cdt_count n);

/* mpi_calls.h: the two-process bcast's MPI calls from C (docs/MPI.md §14.5.1) */
int cdtpy_mpic_init(const char *path, int hsize, int status_size, int tag_off, int64_t byte,
                    int64_t mpi_int, int any_tag, char *why, size_t whylen);
int cdtpy_mpic_isend(const void *buf, int count, int dest, int tag, int64_t comm, int64_t *req);
int cdtpy_mpic_start(int64_t req);
int64_t cdtpy_mpic_root_end(int64_t req0, int64_t req1, int64_t *send, const int *mine,
                            const int *theirs);
int64_t cdtpy_mpic_leaf_end(int *theirs, int source, int tag, int64_t comm, int64_t req,
                            const int *mine);
int cdtpy_mpic_head(void *buf, int cap, int source, int want, int64_t comm, int *tag, int *count,
                    int64_t *msg, int *taken);

extern "Python" int cdtpy_alloc_hook(void *user, cdt_count index, cdt_count len, cdt_kind kind,
                                     void **base);
extern "Python" int cdtpy_prepare_hook(void *arg, cdt_decoder decoder);
"""


def source():
    """The C part: the resolved functions, the aligned receive memory, two scans."""
    names = CORE_CALLS + UCX_CALLS
    decl = "".join("    __typeof__(&%s) %s;\n" % (n, n) for n in names)
    core = "".join("    RESOLVE_(%s)\n" % n for n in CORE_CALLS)
    ucx = "".join("    RESOLVE_(%s)\n" % n for n in UCX_CALLS)
    macros = "".join("#define %s (*cdtpy_C.%s)\n" % (n, n) for n in names)
    return r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdt.h"
#include "cdt_receive_memory.h"
#include "cdt_sobj.h"
#include "cdt_ucx.h"
#include "pickle_plain.h" /* cdtpy_pickle_plain: shared with the C extension (_ext/) */
#include "mpi_calls.h"    /* cdtpy_mpic_*: shared with the C extension (_ext/mpic.c) */

static struct {
%(decl)s} cdtpy_C;

/* The library at `path`, which the package loaded already (dlopen gives that same copy back). */
static void *cdtpy_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    return h != NULL ? h : dlopen(path, RTLD_NOW);
}

#define RESOLVE_(name)                                                                             \
    *(void **)&cdtpy_C.name = dlsym(h, #name);                                                     \
    if (cdtpy_C.name == NULL)                                                                      \
        return #name;

/* Look the core's functions up in libcdt's core at `path`. NULL, or the name of the first
 * function missing ("dlopen" when the library cannot be opened). */
static const char *cdtpy_resolve(const char *path)
{
    void *h = cdtpy_open(path);
    if (h == NULL)
        return "dlopen";
%(core)s    return NULL;
}

/* The same for the transport's functions in the UCX transport library at `path`, which
 * cdtypes.ucx loads (the core links no UCX). */
static const char *cdtpy_resolve_ucx(const char *path)
{
    void *h = cdtpy_open(path);
    if (h == NULL)
        return "dlopen";
%(ucx)s    return NULL;
}
#undef RESOLVE_

%(macros)s
/* Receive memory: 64-byte aligned, uninitialised (4 MiB and more: on huge pages where the kernel
 * offers them, cdt_receive_memory.h). A block of at least 64 KiB is kept when freed (256 MiB
 * in all) for the next receive of the same size, as in the C extension. The size of every block
 * is kept in the ALIGN bytes before the pointer handed out (the block starts
 * cdt_receive_memory_skip bytes before it). Called with or without the GIL (cdtpy_alloc_default
 * runs inside a libcdt call): a mutex guards the cache. */
#define ALIGN 64
static cdt_receive_cache cdtpy_cache = {.limit = (size_t)256 << 20, .lead = ALIGN};
static pthread_mutex_t cdtpy_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void cdtpy_cache_limit(int64_t bytes)
{
    pthread_mutex_lock(&cdtpy_cache_lock);
    cdt_receive_cache_set_limit(&cdtpy_cache, bytes > 0 ? (size_t)bytes : 0);
    pthread_mutex_unlock(&cdtpy_cache_lock);
}

static void *cdtpy_alloc(size_t n)
{
    char *data = NULL;
    if (n >= CDT_RECEIVE_CACHE_MIN) {
        pthread_mutex_lock(&cdtpy_cache_lock);
        data = cdt_receive_cache_take(&cdtpy_cache, n);
        pthread_mutex_unlock(&cdtpy_cache_lock);
        if (data != NULL)
            return data;
    }
    char *mem = cdt_receive_memory_alloc(n, ALIGN, ALIGN);
    if (mem == NULL)
        return NULL;
    data = mem + cdt_receive_memory_skip(n, ALIGN);
    memcpy(data - ALIGN, &n, sizeof n);
    return data;
}

static void cdtpy_free(void *p)
{
    if (p == NULL)
        return;
    size_t n;
    memcpy(&n, (char *)p - ALIGN, sizeof n);
    if (n < CDT_RECEIVE_CACHE_MIN) {
        free((char *)p - ALIGN);
        return;
    }
    pthread_mutex_lock(&cdtpy_cache_lock);
    cdt_receive_cache_give(&cdtpy_cache, p, n);
    pthread_mutex_unlock(&cdtpy_cache_lock);
}

/* The receive allocator without a Python allocator: every part from cdtpy_alloc, its address
 * kept in slot index + 1 of `user` (void *[region_count + 1]), which the caller then owns
 * (cdtpy_free), whether the prepare step succeeded or not. No callback into Python. */
static int cdtpy_alloc_default(void *user, cdt_count index, cdt_count len, cdt_kind kind,
                               void **base)
{
    (void)kind;
    void **slots = user;
    void *p = cdtpy_alloc(len > 0 ? (size_t)len : 0);
    if (p == NULL)
        return CDT_ERR_NO_MEMORY;
    slots[index + 1] = p;
    *base = len > 0 ? p : NULL;
    return CDT_SUCCESS;
}

/* Whether some byte 0x96 is followed by a length in (bytes after it, 2**63): whether the
 * stream could hold a BYTEARRAY8 longer than itself. */
static int cdtpy_stream_needs_check(const unsigned char *s, size_t n)
{
    if (n < 10)
        return 0;
    const unsigned char *p = s, *end = s + (n - 8);
    while (p < end && (p = memchr(p, 0x96, (size_t)(end - p))) != NULL) {
        uint64_t len = 0;
        for (int k = 7; k >= 0; k--)
            len = (len << 8) | p[1 + k];
        uint64_t after = (uint64_t)(n - 9 - (size_t)(p - s));
        if (len > after && len < ((uint64_t)1 << 63))
            return 1;
        p++;
    }
    return 0;
}

/* A whole frame at p whose regions already lie where the object wants them: the decoder
 * takes the header and the stream, checks the padding between the parts, and the regions are
 * only marked done. A status. */
static int cdtpy_decode_inplace(cdt_decoder dec, const char *p, cdt_count pos,
                                cdt_count region_count)
{
    int rc = cdt_decoder_write(dec, 0, p, pos);
    for (cdt_count i = 0; rc == 0 && i < region_count; i++) {
        cdt_count len = 0, off = 0;
        cdt_kind kind;
        rc = cdt_decoder_region_info(dec, i, &len, &kind, &off);
        if (rc == 0 && off > pos)
            rc = cdt_decoder_write(dec, pos, p + pos, off - pos);
        if (rc == 0)
            rc = cdt_decoder_region_done(dec, i);
        if (off + len > pos)
            pos = off + len;
    }
    return rc;
}

/* ---- cdtypes.mpi heads of objects without out-of-band buffers, in one call each --------------
 * Most objects a framework sends (tasks, results, small dicts) pickle without a buffer: their
 * head is the 16-byte prefix and a frame of header and stream only. Packing or receiving one
 * through the general path (a Frame or a decoder driven from Python) crosses into C about
 * fifteen times, each crossing with its own argument conversions: 66 us per object on CPython
 * with cffi, against 8.5 us for the C extension. The functions below do the same libcdt
 * calls in one crossing; anything they do not handle goes the general path, which gives the
 * error with its message. */
#define CDTPY_MPI_PREFIX 16
#define CDTPY_MPI_MAGIC 0x32544443u /* "CDT2" little-endian, as cdtypes/_cffi/module.py */

static cdt_type cdtpy_sobj_type_(void)
{
    static cdt_type t; /* cdt_sobj_type() lives for the whole program: a race stores it twice */
    if (t == NULL)
        t = cdt_sobj_type();
    return t;
}

/* The head (prefix: magic, oid, threshold (negative: 0); then the frame) of an object whose
 * pickle stream `stream` has no out-of-band buffers, written to dst when it fits `cap` bytes.
 * Returns the head's size (larger than cap: nothing written, call again with that much), or a
 * negative status. */
static int64_t cdtpy_mpi_pack_inband(const char *stream, cdt_count len, uint32_t oid,
                                     cdt_count threshold, char *dst, cdt_count cap)
{
    cdt_sobj so;
    memset(&so, 0, sizeof so);
    so.inband = (void *)stream;
    so.inband_len = len;
    cdt_frame f = NULL;
    int rc = cdt_frame_encode(&so, 1, cdtpy_sobj_type_(), NULL, &f);
    if (rc < 0)
        return rc;
    cdt_count size = 0;
    rc = cdt_frame_size(f, &size);
    if (rc == 0 && CDTPY_MPI_PREFIX + size <= cap) {
        unsigned char *p = (unsigned char *)dst;
        uint64_t t = threshold > 0 ? (uint64_t)threshold : 0;
        for (int k = 0; k < 4; k++) {
            p[k] = (unsigned char)(CDTPY_MPI_MAGIC >> (8 * k));
            p[4 + k] = (unsigned char)(oid >> (8 * k));
        }
        for (int k = 0; k < 8; k++)
            p[8 + k] = (unsigned char)(t >> (8 * k));
        rc = cdt_frame_gather(f, 0, dst + CDTPY_MPI_PREFIX, size);
    }
    cdt_frame_free(f);
    return rc < 0 ? rc : CDTPY_MPI_PREFIX + size;
}

/* The number of regions the frame of a cdtypes.mpi head of n bytes announces (its prefix's
 * magic and its frame header checked), or -1 when the general path must read it (it raises
 * the error, with its message). */
static int64_t cdtpy_mpi_head_regions_(const unsigned char *p, cdt_count n, cdt_decoder *dec,
                                       const cdt_decoder_params *params, cdt_frame_info *info)
{
    if (n < CDTPY_MPI_PREFIX + CDT_FRAME_FIXED_HEADER_SIZE)
        return -1;
    uint32_t magic = 0;
    for (int k = 3; k >= 0; k--)
        magic = (magic << 8) | p[k];
    if (magic != CDTPY_MPI_MAGIC)
        return -1;
    if (cdt_decoder_create_advanced(p + CDTPY_MPI_PREFIX, n - CDTPY_MPI_PREFIX, params, dec) != 0)
        return -1;
    memset(info, 0, sizeof *info);
    info->field_mask = CDT_FRAME_INFO_ALL;
    if (cdt_decoder_info(*dec, info) != 0) {
        cdt_decoder_free(*dec);
        return -1;
    }
    return info->region_count;
}

static int cdtpy_mpi_head_regions(const char *head, cdt_count n)
{
    cdt_decoder dec = NULL;
    cdt_frame_info info;
    int64_t r = cdtpy_mpi_head_regions_((const unsigned char *)head, n, &dec, NULL, &info);
    if (r >= 0)
        cdt_decoder_free(dec);
    return r > 1 << 30 ? -1 : (int)r;
}

/* A received head of n bytes whose frame has no regions, checked as the general path checks it
 * (the prefix's magic, the frame header under max_bytes / max_regions (negative: none), the
 * frame's size against the bytes received, the whole frame by the decoder, into scratch memory)
 * and its stream scanned (a collective receiver's early answer tests it, docs/MPI.md §14.5).
 * The stream is the head's last bytes (the frame ends with it; checked against what the decoder
 * wrote): the caller copies it from there, so that one crossing gives it all and nothing is
 * handed back to free. Returns -1 when the head takes the general path (it has regions, any
 * check or call failed: the general path then raises the error, with its message; or the stream
 * is not where this function looks for it), else the stream's length L, whether it is plain and
 * the object's id as ((L << 1 | plain) << 32) | oid. */
static int64_t cdtpy_mpi_unpack_inband(const char *head, cdt_count n, cdt_count max_bytes,
                                       cdt_count max_regions)
{
    const unsigned char *p = (const unsigned char *)head;
    cdt_decoder_params params;
    memset(&params, 0, sizeof params);
    if (max_bytes >= 0) {
        params.field_mask |= CDT_DECODER_PARAM_MAX_FRAME_BYTES;
        params.max_frame_bytes = max_bytes;
    }
    if (max_regions >= 0) {
        params.field_mask |= CDT_DECODER_PARAM_MAX_REGIONS;
        params.max_regions = max_regions;
    }
    cdt_decoder dec = NULL;
    cdt_frame_info info;
    int64_t regions =
        cdtpy_mpi_head_regions_(p, n, &dec, params.field_mask ? &params : NULL, &info);
    if (regions < 0)
        return -1;
    const char *frame = head + CDTPY_MPI_PREFIX;
    cdt_count size = n - CDTPY_MPI_PREFIX;
    if (regions != 0 || info.frame_size != size ||
        (max_bytes >= 0 && info.frame_size > max_bytes)) {
        cdt_decoder_free(dec);
        return -1;
    }
    uint32_t oid = 0;
    for (int k = 3; k >= 0; k--)
        oid = (oid << 8) | p[4 + k];
    int rc;
    void *slots[1] = {NULL};
    cdt_sobj so;
    memset(&so, 0, sizeof so);
    so.field_mask = CDT_SOBJ_FIELD_ALLOC;
    so.alloc = cdtpy_alloc_default;
    so.alloc_user = slots;
    rc = cdt_sobj_recv_prepare(&so, dec);
    int prepared = rc == 0;
    cdt_count len = 0;
    if (prepared) {
        so.alloc_user = NULL;
        rc = cdt_decoder_bind(dec, &so, 1, cdtpy_sobj_type_());
        if (rc == 0)
            rc = cdt_decoder_write(dec, 0, frame, size);
        if (rc == 0)
            rc = cdt_decoder_finish(dec);
        len = so.inband_len;
    }
    cdt_decoder_free(dec);
    if (prepared)
        cdt_sobj_release(&so); /* its own bookkeeping; the stream is slots[0], ours */
    /* the stream as the decoder wrote it is the frame's last len bytes (one contiguous in-band
     * part: FORMAT.md); a frame laid out otherwise takes the general path */
    if (rc == 0 && (len > size || len >= ((cdt_count)1 << 30) ||
                    (len > 0 && memcmp(frame + size - len, slots[0], (size_t)len) != 0)))
        rc = 1;
    cdtpy_free(slots[0]);
    if (rc != 0)
        return -1;
    int plain = cdtpy_pickle_plain((const unsigned char *)frame + size - len, (size_t)len, 0);
    return ((((int64_t)len << 1) | (plain != 0)) << 32) | oid;
}
""" % dict(decl=decl, core=core, ucx=ucx, macros=macros)


def make_ffi():
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("cdtypes._cffi_ext", source(), libraries=["dl"])
    return ffi


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: _cffi_build.py OUTPUT.c")
    make_ffi().emit_c_code(sys.argv[1])
