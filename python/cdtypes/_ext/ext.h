/*
 * ext.h - what the files of cdtypes._ext (the CPython C API backend) share: libcdt's functions
 * as resolved by _init, the module's state, and the types and functions that one file defines
 * and another calls. The file that defines each is named above it; module.c's opening comment
 * describes the backend as a whole.
 */
#ifndef CDTYPES_EXT_H
#define CDTYPES_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdt.h"
#include "cdt_receive_memory.h"
#include "cdt_sobj.h"
#include "cdt_ucx.h"

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

#define ALIGN 64
#define COPY_NOGIL (64 * 1024)
#define ERR_PY_EXCEPTION (CDT_ERR_USER_BASE - 1)
#define MPI_MAGIC 0x32544443u /* "CDT2" little-endian (the protocol of one parts message) */
#define MPI_PREFIX 16

/* ---- the libcdt functions this module calls --------------------------------------------- */

#define CORE_CALLS(X)                                                                              \
    X(cdt_frame_encode)                                                                            \
    X(cdt_frame_size)                                                                              \
    X(cdt_frame_head)                                                                              \
    X(cdt_frame_region_count)                                                                      \
    X(cdt_frame_region_info)                                                                       \
    X(cdt_frame_region_iov)                                                                        \
    X(cdt_frame_iov_count)                                                                         \
    X(cdt_frame_iov)                                                                               \
    X(cdt_frame_gather)                                                                            \
    X(cdt_frame_free)                                                                              \
    X(cdt_decoder_create_advanced)                                                                 \
    X(cdt_decoder_info)                                                                            \
    X(cdt_decoder_region_info)                                                                     \
    X(cdt_decoder_region_iov)                                                                      \
    X(cdt_decoder_bind)                                                                            \
    X(cdt_decoder_write)                                                                           \
    X(cdt_decoder_region_done)                                                                     \
    X(cdt_decoder_finish)                                                                          \
    X(cdt_decoder_free)                                                                            \
    X(cdt_sobj_type)                                                                               \
    X(cdt_sobj_recv_prepare)                                                                       \
    X(cdt_sobj_release)

#define UCX_CALLS(X)                                                                               \
    X(cdt_ucx_isend)                                                                               \
    X(cdt_ucx_irecv)                                                                               \
    X(cdt_ucx_request_test)                                                                        \
    X(cdt_ucx_request_wait)                                                                        \
    X(cdt_ucx_request_cancel)                                                                      \
    X(cdt_ucx_request_recv_info)                                                                   \
    X(cdt_ucx_request_free)

#define DECLARE_(name) __typeof__(&name) name;
/* module.c: the libcdt functions (resolved by _init), the module's state, errors */
struct ext_calls {
    CORE_CALLS(DECLARE_)
    UCX_CALLS(DECLARE_)
};
extern struct ext_calls C;
extern int have_ucx;
extern cdt_type sobj_type;
extern PyObject *hook_alloc_error; /* alloc_error(exc) -> exception instance */
extern PyObject *pickle_dumps, *kw_buffer_callback;
extern PyObject *str_numpy, *str_dtype, *str_F, *str_dump, *str_clear_memo;

PyObject *not_ready(void);
PyObject *raise_code(int code, PyObject *detail);
PyObject *raise_fmt(int code, const char *fmt, ...);
PyObject *raise_what(int code, const char *what);

/* buffer.c: Buffer, bytes owned (aligned, uninitialised) or a window on another object */
typedef struct {
    PyObject_HEAD char *ptr;
    Py_ssize_t len;
    int readonly;
    void *mem;       /* owned memory (free), or NULL */
    PyObject *owner; /* keeps the memory of a window alive (a Frame: one of its views) */
} BufferObject;

extern PyTypeObject BufferType;
extern cdt_receive_cache cache;

BufferObject *buffer_new_owned(Py_ssize_t n);
PyObject *buffer_new_window(void *ptr, Py_ssize_t n, int readonly, PyObject *owner);
PyObject *view_of(const void *ptr, Py_ssize_t n, PyObject *owner);

/* arrays.c: NumPy arrays, the reducer and the reconstructor */
extern PyObject *rebuild_fn, *reduce_fn;
extern PyObject *dtype_cache;
extern PyMethodDef rebuild_def, reduce_def;

int numpy_found(int import_it);

/* pickler.c: pickle.Pickler with reduce as its reducer_override */
extern PyTypeObject SinkType;

int arrays_ready(void);
PyObject *arrays_dumps(PyObject *obj, int protocol, PyObject **pbufs, PyObject **parts);
/* b"".join(pieces): a new bytes object, or NULL with an exception set */
PyObject *bytes_join(PyObject *pieces);

/* send.c: an object as a filled cdt_sobj */
typedef struct {
    PyObject *stream;  /* bytes: the pickle stream, or NULL when it is in parts */
    PyObject *parts;   /* list of bytes: the pickle stream in the pickler's pieces, or NULL */
    cdt_iov *iov;      /* the pieces of parts, the sobj's inband_parts */
    PyObject *pbufs;   /* list of PickleBuffer */
    Py_buffer *views;  /* one export per PickleBuffer */
    Py_ssize_t nviews; /* exports held */
    cdt_sobj_buffer *sbufs;
    cdt_sobj so;
} outgoing;

void out_release(outgoing *o);
int out_fill(outgoing *o, PyObject *obj, int protocol);

/* frame.c: Frame */
/* A Frame's memory (the encoded frame, and the buffers it references) outlives close() while
 * windows on it are alive: head, iov() and mpi_pack's parts are Buffers whose owner is the
 * Frame, each counted in `views`. close() makes the Frame unusable at once and frees the memory
 * when no view is left (at once, or when the last view goes), so that a view never reads freed
 * memory. mmap.close()'s BufferError was not taken: views on PyPy (cffi backend) go only when
 * its collector runs, and cdtypes.mpi closes frames whose parts are still referenced. */
typedef struct {
    PyObject_HEAD cdt_frame frame;
    cdt_count size;
    outgoing out;      /* what the frame references (dumps) */
    PyObject *adopted; /* (pins, buffers) of a frame made elsewhere: release() each */
    PyObject *weakrefs;
    Py_ssize_t views; /* windows on the frame's memory alive */
    int closed;       /* close() was called: the memory goes with the last view */
} FrameObject;

extern PyTypeObject FrameType;

void frame_close_(FrameObject *f);
void frame_view_made(PyObject *frame);
void frame_view_gone(PyObject *frame);
int frame_gather_(FrameObject *f, cdt_count offset, void *dst, cdt_count len);
PyObject *encode(PyObject *obj, int protocol);
PyObject *encode_keep(PyObject *obj, int protocol, PyObject **keep);
PyObject *ext_dumps(PyObject *self, PyObject *args);

/* receive.c: memory from the header, then the decoder */
typedef struct {
    PyObject *alloc;   /* user allocator or NULL */
    PyObject *stream;  /* bytes being filled */
    PyObject *buffers; /* list: one object per region */
    Py_buffer *pins;   /* exports of the user allocator's objects */
    Py_ssize_t npins, cap;
    const char *inplace; /* regions point into this frame (in place), or NULL */
    cdt_count inplace_len;
    PyObject *inplace_owner;
    cdt_decoder decoder;
    PyObject *exc; /* what a Python allocator raised */
    int limited;   /* prepare callback: check limits first */
    cdt_count max_bytes, max_regions;
    cdt_count seen_frame_size, seen_region_count; /* the header a limit refused */
    int refused;
} receiver;

void rx_init(receiver *rx, PyObject *alloc);
void rx_unpin(receiver *rx);
void rx_clear(receiver *rx);
int rx_prepare(receiver *rx, cdt_sobj *so);
PyObject *rx_raise(receiver *rx, int code, const char *what);
PyObject *rx_result(receiver *rx);
cdt_decoder open_decoder(const void *data, cdt_count n, cdt_count max_bytes, cdt_count max_regions,
                         cdt_frame_info *info);
int write_nogil(cdt_decoder dec, cdt_count off, const void *src, cdt_count len);
PyObject *ext_decode(PyObject *self, PyObject *args);
PyObject *ext_stream_needs_check(PyObject *self, PyObject *arg);

/* plain.c: whether a pickle stream loads without running code (pickle_plain.h) */
PyObject *ext_stream_plain(PyObject *self, PyObject *args);
/* whether `stream` (a buffer) is plain given nbuf out-of-band buffers; 0 when it is no buffer */
int ext_plain(PyObject *stream, Py_ssize_t nbuf);

/* ucx.c: UCX requests */
extern PyTypeObject RequestType;

PyObject *ext_ucx_isend(PyObject *self, PyObject *args);
PyObject *ext_ucx_irecv(PyObject *self, PyObject *args);

/* mpi.c: a head message plus one message of the large buffers */
extern PyTypeObject IncomingType;

PyObject *ext_mpi_pack(PyObject *self, PyObject *args);
PyObject *ext_mpi_pack_own(PyObject *self, PyObject *args);
PyObject *ext_mpi_parts(PyObject *self, PyObject *arg);
PyObject *ext_mpi_unpack(PyObject *self, PyObject *args);

/* mpic.c: the two-process bcast's MPI calls from C (mpi_calls.h) */
PyObject *ext_mpic_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ext_mpic_buffer(PyObject *self, PyObject *arg);
PyObject *ext_mpic_isend(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ext_mpic_start(PyObject *self, PyObject *arg);
PyObject *ext_mpic_root_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ext_mpic_leaf_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ext_mpic_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
