/*
 * _ext.c - the compiled backend of cdtypes (CPython C API).
 *
 * The hot path of a Python object in a constant, small number of C calls:
 *   dumps        pickle (protocol 5, buffer_callback; NumPy arrays through reduce / rebuild,
 *                below) -> cdt_sobj -> cdt_frame_encode
 *   decode       decoder with limits -> buffers allocated from the header -> decoder_write
 *   ucx_isend    the same cdt_sobj handed to cdt_ucx_isend
 *   ucx_irecv    cdt_ucx_irecv whose prepare callback allocates the buffers
 *   mpi_pack     the frame split into a head message and the large buffers (one more message)
 *   mpi_unpack   the head message decoded, the large buffers' destinations given back
 *
 * libcdt is not linked: its functions are looked up (dlsym) in the copy of libcdt the package
 * already loaded (cdtypes._lib), so there is exactly one libcdt in the process, and the names
 * this module calls are listed in CALLS for the ABI check (bindings/abi.txt).
 *
 * Backend interface (cdtypes._core is the only Python layer; a second backend such as cffi
 * provides the same names): _init, Frame, Buffer, dumps, decode, stream_needs_check, ucx_isend,
 * ucx_irecv, mpi_pack, mpi_unpack, mpi_parts, CALLS, UCX.
 *
 * The GIL is released around every transport call (a prepare callback takes it back) and
 * around copies larger than COPY_NOGIL bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
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
static struct {
    CORE_CALLS(DECLARE_)
    UCX_CALLS(DECLARE_)
} C;
static int have_ucx;
static cdt_type sobj_type;
static PyObject *hook_error;       /* error(code, detail) -> exception instance */
static PyObject *hook_alloc_error; /* alloc_error(exc) -> exception instance */
static PyObject *pickle_dumps, *kw_buffer_callback;

static PyObject *not_ready(void)
{
    PyErr_SetString(PyExc_RuntimeError, "cdtypes._ext was not initialised");
    return NULL;
}

/* Raise the CdtError subclass of `code`; detail may be NULL. Always returns NULL. */
static PyObject *raise_code(int code, PyObject *detail)
{
    if (hook_error == NULL)
        return not_ready();
    PyObject *exc =
        PyObject_CallFunction(hook_error, "iO", code, detail != NULL ? detail : Py_None);
    Py_XDECREF(detail);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static PyObject *raise_fmt(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *detail = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (detail == NULL)
        return NULL;
    return raise_code(code, detail);
}

static PyObject *raise_what(int code, const char *what)
{
    return raise_code(code, what != NULL ? PyUnicode_FromString(what) : NULL);
}

/* ---- Buffer: bytes owned (aligned, uninitialised) or a window on another object --------- */

typedef struct {
    PyObject_HEAD char *ptr;
    Py_ssize_t len;
    int readonly;
    void *mem;       /* owned memory (free), or NULL */
    PyObject *owner; /* keeps the memory of a window alive (a Frame: one of its views) */
} BufferObject;

static PyTypeObject BufferType;
static char empty_byte;

static int buffer_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BufferObject *b = (BufferObject *)self;
    return PyBuffer_FillInfo(view, self, b->ptr != NULL ? b->ptr : &empty_byte, b->len, b->readonly,
                             flags);
}

/* Received memory is reused: a freed Buffer of at least 64 KiB keeps its memory in `cache`
 * (256 MiB in all; CDTYPES_BUFFER_CACHE sets the limit, 0 turns it off) for the next receive
 * of the same size (cdt_receive_memory.h says why). Used under the GIL only. */
static cdt_receive_cache cache = {.limit = (size_t)256 << 20};

static void frame_view_gone(PyObject *frame);
static void frame_view_made(PyObject *frame);

static void buffer_dealloc(PyObject *self)
{
    BufferObject *b = (BufferObject *)self;
    cdt_receive_cache_give(&cache, b->mem, (size_t)b->len);
    if (b->owner != NULL)
        frame_view_gone(b->owner);
    Py_XDECREF(b->owner);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t buffer_length(PyObject *self)
{
    return ((BufferObject *)self)->len;
}

static PyObject *buffer_repr(PyObject *self)
{
    BufferObject *b = (BufferObject *)self;
    return PyUnicode_FromFormat("<cdtypes.Buffer %zd bytes%s>", b->len,
                                b->readonly ? ", read-only" : "");
}

static PyBufferProcs buffer_as_buffer = {buffer_getbuffer, NULL};
static PySequenceMethods buffer_as_sequence = {.sq_length = buffer_length};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = buffer_dealloc,
    .tp_repr = buffer_repr,
    .tp_as_buffer = &buffer_as_buffer,
    .tp_as_sequence = &buffer_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes received for one out-of-band buffer (64-byte aligned, writable), or a "
              "window on a frame's memory. Supports the buffer protocol.",
};

/* A new Buffer of n owned bytes on an ALIGN boundary (uninitialised; 4 MiB and more on huge
 * pages where the kernel offers them: cdt_receive_memory.h). */
static BufferObject *buffer_new_owned(Py_ssize_t n)
{
    void *mem = cdt_receive_cache_take(&cache, (size_t)n);
    if (mem == NULL && n > 0 && (mem = cdt_receive_memory_alloc((size_t)n, ALIGN, 0)) == NULL) {
        PyErr_Format(PyExc_MemoryError, "cannot allocate %zd bytes", n);
        return NULL;
    }
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (b == NULL) {
        free(mem);
        return NULL;
    }
    b->ptr = mem;
    b->len = n;
    b->readonly = 0;
    b->mem = mem;
    b->owner = NULL;
    return b;
}

static PyObject *buffer_new_window(void *ptr, Py_ssize_t n, int readonly, PyObject *owner)
{
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (b == NULL)
        return NULL;
    b->ptr = ptr;
    b->len = n;
    b->readonly = readonly;
    b->mem = NULL;
    Py_XINCREF(owner);
    b->owner = owner;
    if (owner != NULL)
        frame_view_made(owner);
    return (PyObject *)b;
}

/* A read-only memoryview of n bytes at ptr that keeps owner alive. */
static PyObject *view_of(const void *ptr, Py_ssize_t n, PyObject *owner)
{
    PyObject *b = buffer_new_window((void *)ptr, n, 1, owner);
    if (b == NULL)
        return NULL;
    PyObject *mv = PyMemoryView_FromObject(b);
    Py_DECREF(b);
    return mv;
}

/* ---- NumPy arrays: a reducer for the pickler, and the reconstructor it names ------------
 *
 * NumPy pickles a contiguous array (protocol 5) as numpy._core.numeric._frombuffer(
 * PickleBuffer, dtype, shape, order): ndarray.__reduce_ex__ costs 1.3-1.5 us per array here,
 * the dtype travels as its own reduce (two globals, an argument and a state tuple: about 5 us
 * for a one-byte array), and the receiver runs a Python function (frombuffer, then reshape: 0.8
 * us). An object of 512 arrays pays that 512 times on each side. A contiguous ndarray (the exact
 * type, no subclass) of a plain dtype (bool, integers, floats, complex, fixed-size bytes and str,
 * either byte order; no fields, subarray or metadata) is written instead as
 *
 *     cdtypes._arrays.rebuild(PickleBuffer(array), descr, shape)        C order
 *     cdtypes._arrays.rebuild(PickleBuffer(array), descr, shape, "F")   Fortran order
 *
 * with descr = dtype.str ("<f8", "|u1", ">i4", "<U10"): one short string, memoized by the
 * pickler after its first use. rebuild makes the array on the received buffer with one call
 * to numpy.frombuffer (1-D) or numpy.ndarray (no copy). Anything else (non-contiguous, object or
 * structured dtypes, datetimes, subclasses) is pickled the normal way. Both functions carry the
 * module name cdtypes._arrays, which holds the Python versions for the cffi backend (PyPy): the two
 * write the same bytes and read each other's. NumPy is not needed to build or import the extension:
 * it is reached through Python calls, once a program has imported it. */

static PyObject *np_ndarray;             /* numpy.ndarray, once numpy was seen imported */
static PyObject *np_dtype;               /* numpy.dtype */
static PyObject *np_frombuffer;          /* numpy.frombuffer */
static PyObject *rebuild_fn, *reduce_fn; /* this module's functions, named cdtypes._arrays.* */
static PyObject *str_numpy, *str_dtype, *str_F, *str_dump, *str_clear_memo, *str_release;

/* numpy.ndarray and numpy.dtype: 1 once numpy is imported, 0 while it is not (nothing is
 * imported then), -1 with an exception set. import_it (the receiver's rebuild): import numpy. */
static int numpy_found(int import_it)
{
    if (np_ndarray != NULL)
        return 1;
    PyObject *np = import_it ? PyImport_ImportModule("numpy") : PyImport_GetModule(str_numpy);
    if (np == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *nd = PyObject_GetAttrString(np, "ndarray");
    PyObject *dt = nd != NULL ? PyObject_GetAttrString(np, "dtype") : NULL;
    PyObject *fb = dt != NULL ? PyObject_GetAttrString(np, "frombuffer") : NULL;
    Py_DECREF(np);
    if (fb != NULL && PyType_Check(nd) && PyType_Check(dt)) {
        np_ndarray = nd;
        np_dtype = dt;
        np_frombuffer = fb;
        return 1;
    }
    Py_XDECREF(nd);
    Py_XDECREF(dt);
    Py_XDECREF(fb);
    if (!import_it) { /* a numpy still being imported: not yet */
        PyErr_Clear();
        return 0;
    }
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ImportError, "numpy has no ndarray and dtype types");
    return -1;
}

/* A plain descr as written by the reducer: an optional byte order (<, >, |, =), one kind
 * letter, the item size in 1 to 10 digits, nothing else. Checked before numpy.dtype() sees a
 * string from the stream. */
static int descr_text_ok(PyObject *descr)
{
    Py_ssize_t n;
    const char *s = PyUnicode_Check(descr) ? PyUnicode_AsUTF8AndSize(descr, &n) : NULL;
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t i = 0;
    if (i < n && strchr("<>|=", s[i]) != NULL && s[i] != '\0')
        i++;
    if (i >= n || s[i] == '\0' || strchr("biufcSU", s[i]) == NULL)
        return 0;
    i++;
    Py_ssize_t digits = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        digits++;
    return i == n && digits >= 1 && digits <= 10;
}

/* descr of a dtype when it is plain (new reference), Py_None (new reference) when it is not,
 * NULL with an exception set on failure. Plain: no fields, subarray or metadata, a descr of the
 * accepted form whose numpy.dtype() is equal to the dtype (the string says all of it). */
static PyObject *descr_compute(PyObject *dtype)
{
    static const char *must_be_none[] = {"fields", "subdtype", "metadata"};
    for (size_t k = 0; k < sizeof must_be_none / sizeof must_be_none[0]; k++) {
        PyObject *v = PyObject_GetAttrString(dtype, must_be_none[k]);
        if (v == NULL)
            return NULL;
        int none = v == Py_None;
        Py_DECREF(v);
        if (!none)
            Py_RETURN_NONE;
    }
    PyObject *size = PyObject_GetAttrString(dtype, "itemsize");
    if (size == NULL)
        return NULL;
    Py_ssize_t itemsize = PyLong_AsSsize_t(size);
    Py_DECREF(size);
    if (itemsize == -1 && PyErr_Occurred())
        return NULL;
    PyObject *descr = PyObject_GetAttrString(dtype, "str");
    if (descr == NULL)
        return NULL;
    if (itemsize <= 0 || !PyUnicode_CheckExact(descr) || !descr_text_ok(descr)) {
        Py_DECREF(descr);
        Py_RETURN_NONE;
    }
    PyObject *again = PyObject_CallOneArg(np_dtype, descr);
    int same = again != NULL ? PyObject_RichCompareBool(again, dtype, Py_EQ) : -1;
    Py_XDECREF(again);
    if (same < 0) {
        Py_DECREF(descr);
        return NULL;
    }
    if (!same) {
        Py_DECREF(descr);
        Py_RETURN_NONE;
    }
    PyUnicode_InternInPlace(&descr);
    return descr;
}

/* The sender's dtype -> descr cache, by identity: arrays of one object usually share one dtype
 * object (NumPy's builtin dtypes are singletons), so the answer costs a pointer compare. The
 * cache holds its dtypes (at most DESCR_SLOTS). Used under the GIL. */
#define DESCR_SLOTS 16
static struct {
    PyObject *dtype;
    PyObject *descr; /* str, or Py_None: not plain */
} descr_cache[DESCR_SLOTS];
static unsigned descr_next;

/* borrowed: the descr of dtype, Py_None when not plain; NULL with an exception set */
static PyObject *descr_of(PyObject *dtype)
{
    for (int i = 0; i < DESCR_SLOTS; i++)
        if (descr_cache[i].dtype == dtype)
            return descr_cache[i].descr;
    PyObject *descr = descr_compute(dtype);
    if (descr == NULL) { /* a dtype NumPy cannot describe this way: pickled the normal way */
        PyErr_Clear();
        descr = Py_NewRef(Py_None);
    }
    unsigned slot = descr_next++ % DESCR_SLOTS;
    Py_INCREF(dtype);
    PyObject *old_dtype = descr_cache[slot].dtype, *old_descr = descr_cache[slot].descr;
    descr_cache[slot].dtype = dtype;
    descr_cache[slot].descr = descr;
    Py_XDECREF(old_dtype);
    Py_XDECREF(old_descr);
    return descr;
}

/* reduce(obj): the pickler's reducer_override. (rebuild, (PickleBuffer, descr, shape[, "F"]))
 * for a contiguous ndarray of a plain dtype, NotImplemented for everything else (the pickler
 * then goes on the normal way: the object's own __reduce_ex__ and so on). */
static PyObject *arrays_reduce(PyObject *self, PyObject *obj)
{
    (void)self;
    /* numpy is imported whenever this runs (cdtypes' picklers are used only then) */
    if ((np_ndarray == NULL && numpy_found(0) <= 0) || (PyObject *)Py_TYPE(obj) != np_ndarray) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *dtype = PyObject_GetAttr(obj, str_dtype);
    if (dtype == NULL)
        return NULL;
    PyObject *descr = descr_of(dtype); /* borrowed from the cache, which holds dtype too */
    Py_DECREF(dtype);
    if (descr == NULL)
        return NULL;
    if (descr == Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *pb = PyPickleBuffer_FromObject(obj);
    if (pb == NULL) { /* no buffer export (NumPy refuses some dtypes): NumPy's own way */
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    const Py_buffer *v = PyPickleBuffer_GetBuffer(pb);
    PyObject *order = NULL, *shape = NULL, *args = NULL, *res = NULL;
    if (v == NULL)
        goto done;
    if (!PyBuffer_IsContiguous(v, 'C')) {
        if (!PyBuffer_IsContiguous(v, 'F')) { /* NumPy pickles it in band */
            Py_DECREF(pb);
            Py_RETURN_NOTIMPLEMENTED;
        }
        order = str_F;
    }
    shape = PyTuple_New(v->ndim);
    for (int i = 0; shape != NULL && i < v->ndim; i++) {
        PyObject *d = PyLong_FromSsize_t(v->shape[i]);
        if (d == NULL)
            Py_CLEAR(shape);
        else
            PyTuple_SET_ITEM(shape, i, d);
    }
    if (shape == NULL)
        goto done;
    args = order != NULL ? PyTuple_Pack(4, pb, descr, shape, order)
                         : PyTuple_Pack(3, pb, descr, shape);
    if (args != NULL)
        res = PyTuple_Pack(2, rebuild_fn, args);
done:
    Py_DECREF(pb);
    Py_XDECREF(shape);
    Py_XDECREF(args);
    return res;
}

/* The receiver's descr -> (dtype, itemsize) cache (a dict, at most DTYPE_CACHE_MAX entries):
 * numpy.dtype() of a string costs about a microsecond, an object's arrays repeat a few descrs. */
#define DTYPE_CACHE_MAX 256
static PyObject *dtype_cache;

/* borrowed (dtype, itemsize) for a descr from a stream; NULL with an exception set */
static PyObject *dtype_of_descr(PyObject *descr)
{
    PyObject *hit = PyDict_GetItemWithError(dtype_cache, descr);
    if (hit != NULL || PyErr_Occurred())
        return hit;
    if (!descr_text_ok(descr)) {
        PyErr_Format(PyExc_ValueError,
                     "cdtypes._arrays.rebuild: %.80R is not the descr of a plain NumPy dtype "
                     "(byte order, kind among biufcSU, item size)",
                     descr);
        return NULL;
    }
    if (numpy_found(1) < 0)
        return NULL;
    PyObject *dtype = PyObject_CallOneArg(np_dtype, descr);
    if (dtype == NULL)
        return NULL;
    PyObject *canon = descr_compute(dtype);
    int same = canon != NULL && canon != Py_None ? PyUnicode_Compare(canon, descr) == 0 : 0;
    PyObject *size = canon != NULL ? PyObject_GetAttrString(dtype, "itemsize") : NULL;
    Py_XDECREF(canon);
    if (size == NULL) {
        Py_DECREF(dtype);
        return NULL;
    }
    if (!same) {
        PyErr_Format(PyExc_ValueError,
                     "cdtypes._arrays.rebuild: %.80R is not the canonical descr of a plain NumPy "
                     "dtype",
                     descr);
        Py_DECREF(dtype);
        Py_DECREF(size);
        return NULL;
    }
    PyObject *entry = PyTuple_Pack(2, dtype, size);
    Py_DECREF(dtype);
    Py_DECREF(size);
    if (entry == NULL)
        return NULL;
    if (PyDict_GET_SIZE(dtype_cache) >= DTYPE_CACHE_MAX)
        PyDict_Clear(dtype_cache);
    int rc = PyDict_SetItem(dtype_cache, descr, entry);
    Py_DECREF(entry); /* the dict holds it */
    return rc < 0 ? NULL : entry;
}

/* rebuild(buffer, descr, shape, order="C"): the array of that dtype and shape on buffer's
 * memory (no copy; read-only when the buffer is). The buffer must hold exactly the array's
 * bytes. Raises TypeError / ValueError for anything else. */
static PyObject *arrays_rebuild(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 && nargs != 4) {
        PyErr_Format(PyExc_TypeError,
                     "cdtypes._arrays.rebuild takes (buffer, descr, shape[, order]), not %zd "
                     "arguments",
                     nargs);
        return NULL;
    }
    PyObject *buf = args[0], *descr = args[1], *shape = args[2];
    int fortran = 0;
    if (nargs == 4) {
        PyObject *o = args[3];
        if (PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, "F") == 0)
            fortran = 1;
        else if (!PyUnicode_Check(o) || PyUnicode_CompareWithASCIIString(o, "C") != 0) {
            PyErr_Format(PyExc_ValueError,
                         "cdtypes._arrays.rebuild: order must be 'C' or 'F', "
                         "not %.80R",
                         o);
            return NULL;
        }
    }
    if (!PyUnicode_CheckExact(descr)) {
        PyErr_Format(PyExc_TypeError, "cdtypes._arrays.rebuild: descr must be a str, not %.80s",
                     Py_TYPE(descr)->tp_name);
        return NULL;
    }
    if (!PyTuple_CheckExact(shape)) {
        PyErr_Format(PyExc_TypeError,
                     "cdtypes._arrays.rebuild: shape must be a tuple of ints, not %.80s",
                     Py_TYPE(shape)->tp_name);
        return NULL;
    }
    PyObject *entry = dtype_of_descr(descr);
    if (entry == NULL)
        return NULL;
    Py_INCREF(entry); /* the cache may be cleared by a call below (a buffer export) */
    PyObject *arr = NULL, *dtype = PyTuple_GET_ITEM(entry, 0);
    Py_ssize_t nbytes = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
    if (nbytes < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *d = PyTuple_GET_ITEM(shape, i);
        Py_ssize_t n = PyLong_CheckExact(d) ? PyLong_AsSsize_t(d) : -1;
        if (n < 0) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "cdtypes._arrays.rebuild: shape must be a tuple of non-negative ints, "
                         "not %.200R",
                         shape);
            goto done;
        }
        if (n > 0 && nbytes > PY_SSIZE_T_MAX / n) {
            PyErr_Format(PyExc_ValueError,
                         "cdtypes._arrays.rebuild: shape %.200R of %U overflows the address space",
                         shape, descr);
            goto done;
        }
        nbytes *= n;
    }
    Py_ssize_t have;
    if (Py_TYPE(buf) == &BufferType) {
        have = ((BufferObject *)buf)->len;
    } else {
        Py_buffer v;
        if (PyObject_GetBuffer(buf, &v, PyBUF_SIMPLE) < 0)
            goto done;
        have = v.len;
        PyBuffer_Release(&v);
    }
    if (have != nbytes) {
        PyErr_Format(PyExc_ValueError,
                     "cdtypes._arrays.rebuild: the buffer has %zd bytes, an array of shape "
                     "%.200R and dtype %U needs %zd",
                     have, shape, descr, nbytes);
        goto done;
    }
    if (PyTuple_GET_SIZE(shape) == 1) { /* numpy.frombuffer(buffer, dtype): the cheapest call */
        PyObject *call[2] = {buf, dtype};
        arr = PyObject_Vectorcall(np_frombuffer, call, 2, NULL);
        goto done;
    }
    /* numpy.ndarray(shape, dtype, buffer[, offset, strides, order]) */
    PyObject *call[6] = {shape, dtype, buf, NULL, Py_None, str_F};
    PyObject *zero = NULL;
    if (fortran && (call[3] = zero = PyLong_FromLong(0)) == NULL)
        goto done;
    arr = PyObject_Vectorcall(np_ndarray, call, fortran ? 6 : 3, NULL);
    Py_XDECREF(zero);
done:
    Py_DECREF(entry);
    return arr;
}

static PyMethodDef rebuild_def = {
    "rebuild", (PyCFunction)(void (*)(void))arrays_rebuild, METH_FASTCALL,
    "rebuild(buffer, descr, shape, order='C'): the NumPy array of dtype descr and shape on "
    "buffer's memory (no copy). Named in the pickle streams cdtypes writes."};
static PyMethodDef reduce_def = {
    "reduce", arrays_reduce, METH_O,
    "reduce(obj): (rebuild, (PickleBuffer, descr, shape[, 'F'])) for a contiguous ndarray of a "
    "plain dtype, NotImplemented otherwise (a pickler's reducer_override)."};

/* ---- the pickler: pickle.Pickler with reduce as its reducer_override -------------------
 *
 * One idle pickler is kept and reused (a new one costs about 0.7 us); a call that finds it in
 * use (another thread, or a __reduce__ that calls cdtypes.dumps) makes its own. The pickler
 * writes into a Sink, which keeps the stream's bytes and collects the out-of-band buffers. */

typedef struct {
    PyObject_HEAD PyObject *first; /* the first bytes written */
    PyObject *more;                /* list of the following ones, or NULL */
    PyObject *pbufs;               /* the buffer_callback's list */
} SinkObject;

static PyTypeObject SinkType;

static void sink_reset(SinkObject *s)
{
    Py_CLEAR(s->first);
    Py_CLEAR(s->more);
    Py_CLEAR(s->pbufs);
}

static void sink_dealloc(PyObject *self)
{
    sink_reset((SinkObject *)self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *sink_write(PyObject *self, PyObject *data)
{
    SinkObject *s = (SinkObject *)self;
    PyObject *b = PyBytes_CheckExact(data) ? Py_NewRef(data) : PyBytes_FromObject(data);
    if (b == NULL)
        return NULL;
    if (s->first == NULL) {
        s->first = b;
    } else {
        if (s->more == NULL && (s->more = PyList_New(0)) == NULL) {
            Py_DECREF(b);
            return NULL;
        }
        int rc = PyList_Append(s->more, b);
        Py_DECREF(b);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *sink_buffer(PyObject *self, PyObject *pb)
{
    SinkObject *s = (SinkObject *)self;
    if (s->pbufs == NULL && (s->pbufs = PyList_New(0)) == NULL)
        return NULL;
    if (PyList_Append(s->pbufs, pb) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* the whole stream (new reference) */
static PyObject *sink_stream(SinkObject *s)
{
    if (s->first == NULL)
        return PyBytes_FromStringAndSize(NULL, 0);
    if (s->more == NULL)
        return Py_NewRef(s->first);
    if (PyList_Insert(s->more, 0, s->first) < 0)
        return NULL;
    PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);
    PyObject *all = empty != NULL ? PyObject_CallMethod(empty, "join", "(O)", s->more) : NULL;
    Py_XDECREF(empty);
    return all;
}

static PyMethodDef sink_methods[] = {
    {"write", sink_write, METH_O, "The pickler's output."},
    {"buffer", sink_buffer, METH_O, "The pickler's buffer_callback."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes._ext.Sink",
    .tp_basicsize = sizeof(SinkObject),
    .tp_dealloc = sink_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Where cdtypes' pickler writes (internal).",
    .tp_methods = sink_methods,
};

static PyObject *pickler_class; /* cdtypes._arrays.Pickler */
static PyObject *idle_pickler;  /* a pickler not in use, writing into idle_sink */
static SinkObject *idle_sink;
static int arrays_broken;     /* the array path could not be set up: plain pickle.dumps */
#define REUSE_MAX_STREAM 2048 /* a pickler that wrote more is not reused (arrays_dumps) */

/* 1: numpy is imported and the array pickler is ready; 0: use pickle.dumps */
static int arrays_ready(void)
{
    if (pickler_class != NULL)
        return 1;
    if (arrays_broken || numpy_found(0) <= 0)
        return 0;
    PyObject *mod = PyImport_ImportModule("cdtypes._arrays");
    pickler_class = mod != NULL ? PyObject_GetAttrString(mod, "Pickler") : NULL;
    Py_XDECREF(mod);
    if (pickler_class == NULL) { /* never expected; the plain path still works */
        PyErr_Clear();
        arrays_broken = 1;
        return 0;
    }
    return 1;
}

/* pickle obj with the array reducer: the stream (new reference) and *pbufs (new reference: a
 * list of the PickleBuffers given to the buffer_callback); NULL with an exception set */
static PyObject *arrays_dumps(PyObject *obj, int protocol, PyObject **pbufs)
{
    PyObject *pickler = NULL;
    SinkObject *sink = NULL;
    if (idle_pickler != NULL && protocol == 5) {
        pickler = idle_pickler;
        sink = idle_sink;
        idle_pickler = NULL;
        idle_sink = NULL;
    } else {
        sink = PyObject_New(SinkObject, &SinkType);
        if (sink == NULL)
            return NULL;
        sink->first = sink->more = sink->pbufs = NULL;
        PyObject *cb = PyObject_GetAttrString((PyObject *)sink, "buffer");
        PyObject *kw = cb != NULL ? Py_BuildValue("{sO}", "buffer_callback", cb) : NULL;
        PyObject *a = kw != NULL ? Py_BuildValue("(Oi)", (PyObject *)sink, protocol) : NULL;
        pickler = a != NULL ? PyObject_Call(pickler_class, a, kw) : NULL;
        Py_XDECREF(cb);
        Py_XDECREF(kw);
        Py_XDECREF(a);
        if (pickler == NULL) {
            Py_DECREF(sink);
            return NULL;
        }
    }
    PyObject *stream = NULL;
    PyObject *r = PyObject_CallMethodOneArg(pickler, str_dump, obj);
    int ok = r != NULL;
    Py_XDECREF(r);
    /* the memo holds every object pickled: drop them now, not at the next dumps */
    PyObject *err_type, *err_value, *err_tb;
    PyErr_Fetch(&err_type, &err_value, &err_tb);
    r = PyObject_CallMethodNoArgs(pickler, str_clear_memo);
    int reusable = r != NULL;
    Py_XDECREF(r);
    if (!reusable)
        PyErr_Clear();
    PyErr_Restore(err_type, err_value, err_tb);
    if (ok && (stream = sink_stream(sink)) != NULL) {
        *pbufs = sink->pbufs != NULL ? Py_NewRef(sink->pbufs) : PyList_New(0);
        if (*pbufs == NULL)
            Py_CLEAR(stream);
    }
    sink_reset(sink);
    /* a pickler that failed is not kept: its state is not known. Nor is one whose memo grew
     * with a large object: clear_memo() zeroes the memo's whole table, which never shrinks
     * (after 512 arrays, 64 KiB: 2-3 us more for every small object after it). The stream has
     * at least one byte (MEMOIZE) per memo entry, so a short stream means a small table. */
    if (ok && reusable && protocol == 5 && idle_pickler == NULL &&
        PyBytes_GET_SIZE(stream) <= REUSE_MAX_STREAM) {
        idle_pickler = pickler;
        idle_sink = sink;
    } else {
        Py_DECREF(pickler);
        Py_DECREF(sink);
    }
    return stream;
}

/* ---- send side: an object as a filled cdt_sobj ------------------------------------------ */

typedef struct {
    PyObject *stream;  /* bytes: the pickle stream */
    PyObject *pbufs;   /* list of PickleBuffer */
    Py_buffer *views;  /* one export per PickleBuffer */
    Py_ssize_t nviews; /* exports held */
    cdt_sobj_buffer *sbufs;
    cdt_sobj so;
} outgoing;

static void out_release(outgoing *o)
{
    for (Py_ssize_t i = 0; i < o->nviews; i++)
        PyBuffer_Release(&o->views[i]);
    o->nviews = 0;
    PyMem_Free(o->views);
    PyMem_Free(o->sbufs);
    o->views = NULL;
    o->sbufs = NULL;
    if (o->pbufs != NULL) { /* PickleBuffer.release(): the objects may be resized again */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o->pbufs); i++) {
            PyObject *pb = PyList_GET_ITEM(o->pbufs, i);
            /* one the list alone holds (the reducers' own) is released by the list's end; the
             * call is for those the object itself holds */
            if (Py_REFCNT(pb) == 1)
                continue;
            PyObject *r = PyObject_CallMethodNoArgs(pb, str_release);
            if (r == NULL)
                PyErr_Clear();
            Py_XDECREF(r);
        }
    }
    Py_CLEAR(o->pbufs);
    Py_CLEAR(o->stream);
    memset(&o->so, 0, sizeof o->so);
}

/* pickle obj with buffer_callback and fill o->so. 0, or -1 with an exception set. */
static int out_fill(outgoing *o, PyObject *obj, int protocol)
{
    memset(o, 0, sizeof *o);
    if (pickle_dumps == NULL) {
        not_ready();
        return -1;
    }
    if (protocol < 5) {
        PyErr_SetString(PyExc_ValueError, "cdtypes needs pickle protocol 5 or later");
        return -1;
    }
    if (arrays_ready()) { /* numpy is imported: its arrays through reduce / rebuild */
        o->stream = arrays_dumps(obj, protocol, &o->pbufs);
        if (o->stream == NULL)
            goto fail;
        goto pickled;
    }
    o->pbufs = PyList_New(0);
    if (o->pbufs == NULL)
        return -1;
    PyObject *cb = PyObject_GetAttrString(o->pbufs, "append");
    PyObject *proto = PyLong_FromLong(protocol);
    if (cb == NULL || proto == NULL) {
        Py_XDECREF(cb);
        Py_XDECREF(proto);
        goto fail;
    }
    PyObject *args[3] = {obj, proto, cb};
    o->stream = PyObject_Vectorcall(pickle_dumps, args, 2, kw_buffer_callback);
    Py_DECREF(cb);
    Py_DECREF(proto);
    if (o->stream == NULL)
        goto fail;
pickled:
    if (!PyBytes_Check(o->stream)) {
        PyErr_SetString(PyExc_TypeError, "pickle.dumps did not return bytes");
        goto fail;
    }
    Py_ssize_t n = PyList_GET_SIZE(o->pbufs);
    o->views = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(Py_buffer));
    o->sbufs = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(cdt_sobj_buffer));
    if (o->views == NULL || o->sbufs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* a contiguous byte view (C or Fortran order; BufferError otherwise); bytes travel as
         * bytes: the pickle stream records the element type and byte order itself. A
         * PickleBuffer's own view serves (it lives as long as the list holds it): no second
         * export of the array */
        PyObject *pb = PyList_GET_ITEM(o->pbufs, i);
        const Py_buffer *pv = NULL;
        if (PyObject_TypeCheck(pb, &PyPickleBuffer_Type)) {
            if ((pv = PyPickleBuffer_GetBuffer(pb)) == NULL)
                goto fail;
            if (!PyBuffer_IsContiguous(pv, 'A')) {
                PyErr_SetString(
                    PyExc_BufferError,
                    "a PickleBuffer of a non-contiguous buffer cannot travel out of band");
                goto fail;
            }
        } else {
            if (PyObject_GetBuffer(pb, &o->views[i], PyBUF_ANY_CONTIGUOUS) < 0)
                goto fail;
            pv = &o->views[i];
        }
        o->nviews++;
        o->sbufs[i].base = pv->buf;
        o->sbufs[i].len = pv->len;
        o->sbufs[i].kind = CDT_KIND_BYTE;
    }
    o->so.inband = PyBytes_AS_STRING(o->stream);
    o->so.inband_len = PyBytes_GET_SIZE(o->stream);
    o->so.buffers = o->sbufs;
    o->so.nbuffers = n;
    return 0;
fail:
    out_release(o);
    return -1;
}

/* ---- Frame ------------------------------------------------------------------------------ */

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

static PyTypeObject FrameType;

static cdt_frame frame_handle(FrameObject *f)
{
    if (f->closed || f->frame == NULL) {
        PyErr_SetString(PyExc_ValueError, "operation on a closed Frame");
        return NULL;
    }
    return f->frame;
}

/* free the frame and release what it references (idempotent) */
static void frame_free_memory(FrameObject *f)
{
    cdt_frame h = f->frame;
    f->frame = NULL;
    if (h != NULL)
        C.cdt_frame_free(h);
    out_release(&f->out);
    if (f->adopted != NULL) {
        PyObject *err_type, *err_value, *err_tb;
        PyErr_Fetch(&err_type, &err_value, &err_tb);
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(f->adopted); k++) {
            PyObject *seq = PyTuple_GET_ITEM(f->adopted, k);
            PyObject *it = PyObject_GetIter(seq);
            PyObject *x;
            while (it != NULL && (x = PyIter_Next(it)) != NULL) {
                PyObject *r = PyObject_HasAttrString(x, "release")
                                  ? PyObject_CallMethod(x, "release", NULL)
                                  : NULL;
                Py_XDECREF(r);
                Py_DECREF(x);
            }
            Py_XDECREF(it);
            PyErr_Clear();
        }
        PyErr_Restore(err_type, err_value, err_tb);
        Py_CLEAR(f->adopted);
    }
}

static void frame_close_(FrameObject *f)
{
    f->closed = 1;
    if (f->views == 0)
        frame_free_memory(f);
}

/* a Buffer window with owner `frame` was made / is gone (any other owner: nothing to count) */
static void frame_view_made(PyObject *frame)
{
    if (Py_TYPE(frame) == &FrameType)
        ((FrameObject *)frame)->views++;
}

static void frame_view_gone(PyObject *frame)
{
    if (Py_TYPE(frame) != &FrameType)
        return;
    FrameObject *f = (FrameObject *)frame;
    if (--f->views == 0 && f->closed)
        frame_free_memory(f);
}

static PyObject *frame_new_from(cdt_frame h, outgoing *out, PyObject *adopted)
{
    cdt_count size = 0;
    int rc = C.cdt_frame_size(h, &size);
    if (rc < 0)
        return raise_what(rc, "cdt_frame_size");
    FrameObject *f = PyObject_GC_New(FrameObject, &FrameType);
    if (f == NULL)
        return NULL;
    f->frame = h;
    f->size = size;
    if (out != NULL)
        f->out = *out;
    else
        memset(&f->out, 0, sizeof f->out);
    Py_XINCREF(adopted);
    f->adopted = adopted;
    f->weakrefs = NULL;
    f->views = 0;
    f->closed = 0;
    PyObject_GC_Track(f);
    return (PyObject *)f;
}

/* Frame(handle, pins=(), buffers=()): adopt a frame encoded elsewhere (cdt_frame address). */
static PyObject *frame_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)type;
    static char *names[] = {"handle", "pins", "buffers", NULL};
    unsigned long long handle;
    PyObject *pins = NULL, *bufs = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "K|OO", names, &handle, &pins, &bufs))
        return NULL;
    if (C.cdt_frame_size == NULL)
        return not_ready();
    if (handle == 0) {
        PyErr_SetString(PyExc_ValueError, "Frame: a null frame handle");
        return NULL;
    }
    PyObject *adopted =
        PyTuple_Pack(2, pins != NULL ? pins : Py_None, bufs != NULL ? bufs : Py_None);
    if (adopted == NULL)
        return NULL;
    PyObject *f = frame_new_from((cdt_frame)(uintptr_t)handle, NULL, adopted);
    Py_DECREF(adopted);
    return f;
}

static void frame_dealloc(PyObject *self)
{
    FrameObject *f = (FrameObject *)self;
    PyObject_GC_UnTrack(self);
    if (f->weakrefs != NULL)
        PyObject_ClearWeakRefs(self);
    frame_free_memory(f); /* no view is left: each holds the Frame */
    PyObject_GC_Del(self);
}

static int frame_traverse(PyObject *self, visitproc visit, void *arg)
{
    FrameObject *f = (FrameObject *)self;
    Py_VISIT(f->adopted);
    Py_VISIT(f->out.pbufs);
    return 0;
}

static PyObject *frame_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    frame_close_((FrameObject *)self);
    Py_RETURN_NONE;
}

static PyObject *frame_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *frame_exit(PyObject *self, PyObject *args)
{
    (void)args;
    frame_close_((FrameObject *)self);
    Py_RETURN_NONE;
}

static PyObject *frame_get_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLongLong(((FrameObject *)self)->size);
}

static Py_ssize_t frame_len(PyObject *self)
{
    return (Py_ssize_t)((FrameObject *)self)->size;
}

static PyObject *frame_get_nbuffers(PyObject *self, void *closure)
{
    (void)closure;
    cdt_frame h = frame_handle((FrameObject *)self);
    if (h == NULL)
        return NULL;
    cdt_count n = 0;
    int rc = C.cdt_frame_region_count(h, &n);
    if (rc < 0)
        return raise_what(rc, "cdt_frame_region_count");
    return PyLong_FromLongLong(n);
}

static PyObject *frame_get_head(PyObject *self, void *closure)
{
    (void)closure;
    cdt_frame h = frame_handle((FrameObject *)self);
    if (h == NULL)
        return NULL;
    const void *data = NULL;
    cdt_count n = 0;
    int rc = C.cdt_frame_head(h, &data, &n);
    if (rc < 0)
        return raise_what(rc, "cdt_frame_head");
    return view_of(data, (Py_ssize_t)n, self);
}

/* the frame's pieces; *n set; PyMem_Free the result */
static cdt_iov *frame_pieces(FrameObject *f, cdt_count *n)
{
    cdt_frame h = frame_handle(f);
    if (h == NULL)
        return NULL;
    int rc = C.cdt_frame_iov_count(h, n);
    if (rc < 0) {
        raise_what(rc, "cdt_frame_iov_count");
        return NULL;
    }
    cdt_iov *iov = PyMem_Calloc((size_t)(*n > 0 ? *n : 1), sizeof(cdt_iov));
    if (iov == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    cdt_count got = 0;
    rc = C.cdt_frame_iov(h, 0, *n, iov, &got);
    if (rc < 0) {
        PyMem_Free(iov);
        raise_what(rc, "cdt_frame_iov");
        return NULL;
    }
    *n = got;
    return iov;
}

/* the frame's pieces as a list: (address, length) tuples (raw) or memoryviews that keep the
 * frame alive */
static PyObject *frame_iov_list(PyObject *self, int raw)
{
    cdt_count n = 0;
    cdt_iov *iov = frame_pieces((FrameObject *)self, &n);
    if (iov == NULL)
        return NULL;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (cdt_count i = 0; list != NULL && i < n; i++) {
        PyObject *item = raw ? Py_BuildValue("(KL)", (unsigned long long)(uintptr_t)iov[i].base,
                                             (long long)iov[i].len)
                             : view_of(iov[i].base, (Py_ssize_t)iov[i].len, self);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    PyMem_Free(iov);
    return list;
}

static PyObject *frame_iov_raw(PyObject *self, PyObject *unused)
{
    (void)unused;
    return frame_iov_list(self, 1);
}

static PyObject *frame_iov(PyObject *self, PyObject *unused)
{
    (void)unused;
    return frame_iov_list(self, 0);
}

static int frame_gather_(FrameObject *f, cdt_count offset, void *dst, cdt_count len)
{
    cdt_frame h = frame_handle(f);
    if (h == NULL)
        return -1;
    int rc;
    if (len > COPY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_frame_gather(h, offset, dst, len);
        Py_END_ALLOW_THREADS
    } else {
        rc = C.cdt_frame_gather(h, offset, dst, len);
    }
    if (rc < 0) {
        raise_what(rc, "cdt_frame_gather");
        return -1;
    }
    return 0;
}

static PyObject *frame_gather_into(PyObject *self, PyObject *args)
{
    PyObject *dst;
    long long offset = 0;
    if (!PyArg_ParseTuple(args, "O|L", &dst, &offset))
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(dst, &v, PyBUF_WRITABLE) < 0)
        return NULL;
    int rc = frame_gather_((FrameObject *)self, offset, v.buf, v.len);
    PyBuffer_Release(&v);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *frame_tobytes(PyObject *self, PyObject *unused)
{
    (void)unused;
    FrameObject *f = (FrameObject *)self;
    if (frame_handle(f) == NULL)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)f->size);
    if (out == NULL)
        return NULL;
    if (frame_gather_(f, 0, PyBytes_AS_STRING(out), f->size) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *frame_repr(PyObject *self)
{
    FrameObject *f = (FrameObject *)self;
    if (f->closed || f->frame == NULL)
        return PyUnicode_FromString("<cdtypes.Frame closed>");
    return PyUnicode_FromFormat("<cdtypes.Frame %lld bytes>", (long long)f->size);
}

static PyMethodDef frame_methods[] = {
    {"iov_raw", frame_iov_raw, METH_NOARGS,
     "The frame as (address, length) pairs in order; their concatenation is the frame."},
    {"iov", frame_iov, METH_NOARGS,
     "The frame as a list of read-only memoryviews over its pieces (zero-copy); they keep the "
     "frame's memory alive after close()."},
    {"gather_into", frame_gather_into, METH_VARARGS,
     "gather_into(dst, offset=0): copy frame bytes [offset, offset + len(dst)) into dst."},
    {"tobytes", frame_tobytes, METH_NOARGS, "The whole frame in one bytes object (a copy)."},
    {"close", frame_close, METH_NOARGS,
     "Free the frame and release the buffers it referenced (once no view from head, iov() or "
     "the MPI parts is left). Idempotent."},
    {"__enter__", frame_enter, METH_NOARGS, NULL},
    {"__exit__", frame_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef frame_getset[] = {
    {"size", frame_get_size, NULL, "Total bytes of the frame.", NULL},
    {"nbuffers", frame_get_nbuffers, NULL, "Number of out-of-band buffers (regions).", NULL},
    {"head", frame_get_head, NULL,
     "Header + pickle stream: a read-only memoryview of the frame's first piece.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods frame_as_sequence = {.sq_length = frame_len};

static PyTypeObject FrameType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes.Frame",
    .tp_basicsize = sizeof(FrameObject),
    .tp_dealloc = frame_dealloc,
    .tp_repr = frame_repr,
    .tp_as_sequence = &frame_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One object as one message: header + pickle stream (head) + out-of-band buffers, "
              "which are referenced, not copied. Keep the Frame (or use it as a context "
              "manager) while the pieces are in flight. Views from head and iov() keep the "
              "frame's memory alive: close() frees it once the last view is gone (addresses "
              "from iov_raw() are valid until then, or until close() when there is none).",
    .tp_traverse = frame_traverse,
    .tp_weaklistoffset = offsetof(FrameObject, weakrefs),
    .tp_methods = frame_methods,
    .tp_getset = frame_getset,
    .tp_new = frame_tp_new,
};

static PyObject *encode(PyObject *obj, int protocol)
{
    outgoing out;
    if (C.cdt_frame_encode == NULL)
        return not_ready();
    if (out_fill(&out, obj, protocol) < 0)
        return NULL;
    cdt_frame h = NULL;
    int rc;
    if (out.so.inband_len > COPY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_frame_encode(&out.so, 1, sobj_type, NULL, &h);
        Py_END_ALLOW_THREADS
    } else {
        rc = C.cdt_frame_encode(&out.so, 1, sobj_type, NULL, &h);
    }
    if (rc < 0) {
        out_release(&out);
        return raise_what(rc, "cdt_frame_encode");
    }
    Py_CLEAR(out.stream); /* copied into the frame's head */
    PyObject *f = frame_new_from(h, &out, NULL);
    if (f == NULL) {
        C.cdt_frame_free(h);
        out_release(&out);
    }
    return f;
}

static PyObject *ext_dumps(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj;
    int protocol = 5;
    if (!PyArg_ParseTuple(args, "O|i", &obj, &protocol))
        return NULL;
    return encode(obj, protocol);
}

/* ---- receive side: memory from the header, then the decoder ----------------------------- */

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

static void rx_init(receiver *rx, PyObject *alloc)
{
    memset(rx, 0, sizeof *rx);
    rx->alloc = alloc != Py_None ? alloc : NULL;
    rx->max_bytes = rx->max_regions = -1;
}

static void rx_unpin(receiver *rx)
{
    for (Py_ssize_t i = 0; i < rx->npins; i++)
        PyBuffer_Release(&rx->pins[i]);
    PyMem_Free(rx->pins);
    rx->pins = NULL;
    rx->npins = rx->cap = 0;
}

static void rx_clear(receiver *rx)
{
    rx_unpin(rx);
    Py_CLEAR(rx->stream);
    Py_CLEAR(rx->buffers);
    Py_CLEAR(rx->exc);
    Py_CLEAR(rx->inplace_owner);
}

/* one part's memory; 0 or -1 with an exception set */
static int rx_alloc_part(receiver *rx, cdt_count index, cdt_count nbytes, void **base)
{
    if (index < 0) { /* the pickle stream: small, copied by the decoder */
        Py_CLEAR(rx->stream);
        rx->stream = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
        if (rx->stream == NULL)
            return -1;
        *base = nbytes > 0 ? PyBytes_AS_STRING(rx->stream) : NULL;
        return 0;
    }
    if (rx->buffers == NULL && (rx->buffers = PyList_New(0)) == NULL)
        return -1;
    PyObject *mem;
    if (rx->inplace != NULL) { /* the region's bytes already lie in the frame */
        cdt_count len = 0, off = 0;
        cdt_kind kind;
        int rc = C.cdt_decoder_region_info(rx->decoder, index, &len, &kind, &off);
        if (rc < 0) {
            raise_what(rc, "cdt_decoder_region_info");
            return -1;
        }
        if (off < 0 || off > rx->inplace_len || nbytes > rx->inplace_len - off) {
            PyErr_Format(PyExc_ValueError, "region %lld lies outside the frame", (long long)index);
            return -1;
        }
        mem =
            buffer_new_window((char *)rx->inplace + off, (Py_ssize_t)nbytes, 0, rx->inplace_owner);
        if (mem == NULL)
            return -1;
        *base = (char *)rx->inplace + off;
    } else if (rx->alloc == NULL) {
        BufferObject *b = buffer_new_owned((Py_ssize_t)nbytes);
        if (b == NULL)
            return -1;
        mem = (PyObject *)b;
        *base = b->ptr;
    } else {
        mem = PyObject_CallFunction(rx->alloc, "L", (long long)nbytes);
        if (mem == NULL)
            return -1;
        if (rx->npins == rx->cap) {
            Py_ssize_t cap = rx->cap ? 2 * rx->cap : 8;
            Py_buffer *p = PyMem_Realloc(rx->pins, (size_t)cap * sizeof(Py_buffer));
            if (p == NULL) {
                Py_DECREF(mem);
                PyErr_NoMemory();
                return -1;
            }
            rx->pins = p;
            rx->cap = cap;
        }
        Py_buffer *v = &rx->pins[rx->npins];
        if (PyObject_GetBuffer(mem, v, PyBUF_WRITABLE) < 0) {
            Py_DECREF(mem);
            return -1;
        }
        rx->npins++;
        if (v->len != (Py_ssize_t)nbytes) {
            PyErr_Format(PyExc_ValueError, "allocator gave %zd bytes, %lld were asked", v->len,
                         (long long)nbytes);
            Py_DECREF(mem);
            return -1;
        }
        *base = v->buf;
    }
    int rc = PyList_Append(rx->buffers, mem);
    Py_DECREF(mem);
    if (nbytes == 0)
        *base = NULL;
    return rc;
}

static int rx_hook(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    (void)kind;
    receiver *rx = user;
    if (rx_alloc_part(rx, index, len, base) == 0)
        return CDT_SUCCESS;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb != NULL)
        PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    Py_XSETREF(rx->exc, v);
    return ERR_PY_EXCEPTION;
}

/* size the object from the decoder's header and bind: a status */
static int rx_prepare(receiver *rx, cdt_sobj *so)
{
    memset(so, 0, sizeof *so);
    so->field_mask = CDT_SOBJ_FIELD_ALLOC;
    so->alloc = rx_hook;
    so->alloc_user = rx;
    int rc = C.cdt_sobj_recv_prepare(so, rx->decoder);
    if (rc == 0) {
        rc = C.cdt_decoder_bind(rx->decoder, so, 1, sobj_type);
        if (rc != 0)
            C.cdt_sobj_release(so);
    }
    return rc;
}

/* raise for a failed receive status (the allocator's exception when it was that) */
static PyObject *rx_raise(receiver *rx, int code, const char *what)
{
    if (code == ERR_PY_EXCEPTION && rx->exc != NULL && hook_alloc_error != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(hook_alloc_error, rx->exc, NULL);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    return raise_what(code, what);
}

static PyObject *rx_result(receiver *rx)
{
    PyObject *stream = rx->stream != NULL ? rx->stream : PyBytes_FromStringAndSize(NULL, 0);
    PyObject *bufs = rx->buffers != NULL ? rx->buffers : PyList_New(0);
    rx->stream = rx->buffers = NULL;
    if (stream == NULL || bufs == NULL) {
        Py_XDECREF(stream);
        Py_XDECREF(bufs);
        return NULL;
    }
    PyObject *r = PyTuple_Pack(2, stream, bufs);
    Py_DECREF(stream);
    Py_DECREF(bufs);
    return r;
}

static PyObject *limits_text(cdt_count max_bytes, cdt_count max_regions)
{
    if (max_bytes >= 0 && max_regions >= 0)
        return PyUnicode_FromFormat("max_bytes=%lld and max_regions=%lld", (long long)max_bytes,
                                    (long long)max_regions);
    if (max_bytes >= 0)
        return PyUnicode_FromFormat("max_bytes=%lld", (long long)max_bytes);
    return PyUnicode_FromFormat("max_regions=%lld", (long long)max_regions);
}

/* a validated header over a limit: raise LimitError naming it (returns NULL), or 0 if none */
static int over_limits(const cdt_frame_info *info, cdt_count max_bytes, cdt_count max_regions)
{
    if (max_bytes >= 0 && info->frame_size > max_bytes) {
        raise_fmt(CDT_ERR_LIMIT, "the frame announces %lld bytes, max_bytes is %lld",
                  (long long)info->frame_size, (long long)max_bytes);
        return 1;
    }
    if (max_regions >= 0 && info->region_count > max_regions) {
        raise_fmt(CDT_ERR_LIMIT, "the frame announces %lld buffers, max_regions is %lld",
                  (long long)info->region_count, (long long)max_regions);
        return 1;
    }
    return 0;
}

/* a decoder on a complete header, with limits. NULL with an exception set on failure. */
static cdt_decoder open_decoder(const void *data, cdt_count n, cdt_count max_bytes,
                                cdt_count max_regions, cdt_frame_info *info)
{
    cdt_decoder_params p;
    memset(&p, 0, sizeof p);
    if (max_bytes >= 0) {
        p.field_mask |= CDT_DECODER_PARAM_MAX_FRAME_BYTES;
        p.max_frame_bytes = max_bytes;
    }
    if (max_regions >= 0) {
        p.field_mask |= CDT_DECODER_PARAM_MAX_REGIONS;
        p.max_regions = max_regions;
    }
    cdt_decoder dec = NULL;
    int rc = C.cdt_decoder_create_advanced(data, n, p.field_mask ? &p : NULL, &dec);
    if (rc == CDT_ERR_LIMIT) {
        PyObject *t = limits_text(max_bytes, max_regions);
        if (t != NULL)
            raise_code(rc, PyUnicode_FromFormat("the frame header announces more than %U", t));
        Py_XDECREF(t);
        return NULL;
    }
    if (rc < 0) {
        raise_what(rc, "cdt_decoder_create_advanced");
        return NULL;
    }
    rc = C.cdt_decoder_info(dec, info);
    if (rc < 0) {
        C.cdt_decoder_free(dec);
        raise_what(rc, "cdt_decoder_info");
        return NULL;
    }
    if (over_limits(info, max_bytes, max_regions)) { /* never allocate past them */
        C.cdt_decoder_free(dec);
        return NULL;
    }
    return dec;
}

static int write_nogil(cdt_decoder dec, cdt_count off, const void *src, cdt_count len)
{
    int rc;
    if (len > COPY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_decoder_write(dec, off, src, len);
        Py_END_ALLOW_THREADS
    } else {
        rc = C.cdt_decoder_write(dec, off, src, len);
    }
    return rc;
}

/* decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1) -> (stream, buffers) */
static PyObject *ext_decode(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data, *alloc = Py_None;
    int inplace = 0;
    long long max_bytes = -1, max_regions = -1;
    if (!PyArg_ParseTuple(args, "O|OpLL", &data, &alloc, &inplace, &max_bytes, &max_regions))
        return NULL;
    if (C.cdt_decoder_create_advanced == NULL)
        return not_ready();
    Py_buffer src;
    if (PyObject_GetBuffer(data, &src, inplace ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return NULL;
    const char *p = src.buf;
    cdt_count n = src.len;
    PyObject *result = NULL;
    receiver rx;
    rx_init(&rx, alloc);
    cdt_decoder dec = NULL;
    cdt_sobj so;
    int prepared = 0, rc;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    if (n < CDT_FRAME_FIXED_HEADER_SIZE) {
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "%lld bytes cannot hold a frame header", (long long)n);
        goto done;
    }
    if (max_bytes >= 0 && n > max_bytes) {
        raise_fmt(CDT_ERR_LIMIT, "the data has %lld bytes, max_bytes is %lld", (long long)n,
                  max_bytes);
        goto done;
    }
    dec = open_decoder(p, n, max_bytes, max_regions, &info);
    if (dec == NULL)
        goto done;
    if (info.frame_size > n) { /* check before allocating what the header announces */
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "the header announces %lld bytes, %lld were given",
                  (long long)info.frame_size, (long long)n);
        goto done;
    }
    if (info.frame_size < n) {
        raise_fmt(CDT_ERR_FRAME_MALFORMED, "%lld bytes after the end of the frame",
                  (long long)(n - info.frame_size));
        goto done;
    }
    rx.decoder = dec;
    if (inplace) {
        rx.inplace = p;
        rx.inplace_len = n;
        rx.inplace_owner = PyMemoryView_FromObject(data);
        if (rx.inplace_owner == NULL)
            goto done;
    }
    rc = rx_prepare(&rx, &so);
    if (rc != 0) {
        rx_raise(&rx, rc, "cdt_sobj_recv_prepare");
        goto done;
    }
    prepared = 1;
    if (inplace) {
        /* the regions already lie in data: the decoder checks the header, takes the stream,
         * and checks the padding between the parts; the regions are only marked done */
        cdt_count pos = info.header_size + info.packed_size;
        rc = C.cdt_decoder_write(dec, 0, p, pos);
        for (cdt_count i = 0; rc == 0 && i < info.region_count; i++) {
            cdt_count len = 0, off = 0;
            cdt_kind kind;
            rc = C.cdt_decoder_region_info(dec, i, &len, &kind, &off);
            if (rc == 0 && off > pos)
                rc = C.cdt_decoder_write(dec, pos, p + pos, off - pos);
            if (rc == 0)
                rc = C.cdt_decoder_region_done(dec, i);
            if (off + len > pos)
                pos = off + len;
        }
    } else {
        rc = write_nogil(dec, 0, p, n);
    }
    if (rc == 0)
        rc = C.cdt_decoder_finish(dec);
    if (rc != 0) {
        raise_what(rc, "cdt_decoder_write");
        goto done;
    }
    result = rx_result(&rx);
done:
    if (dec != NULL)
        C.cdt_decoder_free(dec);
    if (prepared)
        C.cdt_sobj_release(&so);
    rx_clear(&rx);
    PyBuffer_Release(&src);
    return result;
}

/* stream_needs_check(stream): whether some byte 0x96 is followed by a length in (bytes after
 * it, 2**63), i.e. whether the stream could hold a BYTEARRAY8 longer than itself (pickle
 * would allocate that length before reading it). */
static PyObject *ext_stream_needs_check(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = v.buf;
    Py_ssize_t n = v.len;
    int found = 0;
    if (n >= 10) {
        const unsigned char *p = s, *end = s + (n - 8); /* positions 0 .. n - 9 */
        while (!found && p < end && (p = memchr(p, 0x96, (size_t)(end - p))) != NULL) {
            uint64_t len = 0;
            for (int k = 7; k >= 0; k--)
                len = (len << 8) | p[1 + k];
            uint64_t after = (uint64_t)(n - 9 - (p - s));
            if (len > after && len < ((uint64_t)1 << 63))
                found = 1;
            p++;
        }
    }
    PyBuffer_Release(&v);
    return PyBool_FromLong(found);
}

/* ---- UCX requests ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD cdt_ucx_request req;
    int done; /* completed: status in `status` */
    int status;
    int is_recv;
    outgoing out; /* send: what the transport reads */
    receiver rx;  /* recv: what the transport writes */
    cdt_sobj so;
    int prepared;
    cdt_ucx_recv_info info;
} RequestObject;

static PyTypeObject RequestType;

static int ucx_prepare(void *arg, cdt_decoder decoder)
{
    RequestObject *r = arg;
    PyGILState_STATE g = PyGILState_Ensure();
    receiver *rx = &r->rx;
    int rc = 0;
    if (rx->max_bytes >= 0 || rx->max_regions >= 0) { /* before anything is allocated */
        cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
        rc = C.cdt_decoder_info(decoder, &info);
        if (rc == 0 && ((rx->max_bytes >= 0 && info.frame_size > rx->max_bytes) ||
                        (rx->max_regions >= 0 && info.region_count > rx->max_regions))) {
            rx->refused = 1;
            rx->seen_frame_size = info.frame_size;
            rx->seen_region_count = info.region_count;
            rc = CDT_ERR_LIMIT;
        }
    }
    if (rc == 0) {
        rx->decoder = decoder;
        rc = rx_prepare(rx, &r->so);
        r->prepared = rc == 0;
        rx->decoder = NULL;
    }
    PyGILState_Release(g);
    return rc;
}

/* the request completed with rc: keep the status, release what the transport no longer uses.
 * Called with the GIL held; the two transport calls take the worker's lock, so they run with
 * the GIL released: a thread inside the worker's progress holds that lock and takes the GIL in
 * a receive's prepare callback (ucx_prepare), and holding the GIL while waiting for the lock
 * would invert that order (two threads receiving on one worker deadlocked). */
static void request_complete(RequestObject *r, int rc)
{
    cdt_ucx_request req = r->req;
    r->req = NULL;
    r->done = 1;
    r->status = rc;
    int info = r->is_recv && rc == 0;
    if (info)
        r->info.field_mask = CDT_UCX_RECV_INFO_ALL;
    PyThreadState *ts = PyEval_SaveThread();
    if (info)
        C.cdt_ucx_request_recv_info(req, &r->info);
    C.cdt_ucx_request_free(req);
    PyEval_RestoreThread(ts);
    if (r->is_recv) {
        if (r->prepared)
            C.cdt_sobj_release(&r->so);
        r->prepared = 0;
        rx_unpin(&r->rx);
    } else {
        out_release(&r->out);
    }
}

static PyObject *request_test(PyObject *self, PyObject *unused)
{
    (void)unused;
    RequestObject *r = (RequestObject *)self;
    if (!r->done) {
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_ucx_request_test(r->req);
        Py_END_ALLOW_THREADS if (rc != CDT_INPROGRESS) request_complete(r, rc);
        else return PyLong_FromLong(CDT_INPROGRESS);
    }
    return PyLong_FromLong(r->status);
}

/* wait(timeout_ms) -> final status, or CDT_ERR_TIMEOUT while still pending */
static PyObject *request_wait(PyObject *self, PyObject *args)
{
    RequestObject *r = (RequestObject *)self;
    long long ms = -1;
    if (!PyArg_ParseTuple(args, "|L", &ms))
        return NULL;
    if (!r->done) {
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_ucx_request_wait(r->req, (int64_t)ms);
        Py_END_ALLOW_THREADS if (rc == CDT_ERR_TIMEOUT) return PyLong_FromLong(rc);
        request_complete(r, rc);
    }
    return PyLong_FromLong(r->status);
}

static PyObject *request_cancel(PyObject *self, PyObject *unused)
{
    (void)unused;
    RequestObject *r = (RequestObject *)self;
    int rc = 0;
    if (!r->done) {
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_ucx_request_cancel(r->req);
        Py_END_ALLOW_THREADS
    }
    return PyLong_FromLong(rc);
}

/* a completed receive: (stream, buffers, tag); raises the status of a failed one */
static PyObject *request_result(PyObject *self, PyObject *unused)
{
    (void)unused;
    RequestObject *r = (RequestObject *)self;
    if (!r->done) {
        PyErr_SetString(PyExc_RuntimeError, "the request has not completed");
        return NULL;
    }
    if (r->status != 0) {
        if (!r->is_recv)
            return raise_what(r->status, "send");
        Py_CLEAR(r->rx.stream);
        Py_CLEAR(r->rx.buffers);
        return rx_raise(&r->rx, r->status, "recv");
    }
    if (!r->is_recv)
        Py_RETURN_NONE;
    PyObject *res = rx_result(&r->rx);
    if (res == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(OOK)", PyTuple_GET_ITEM(res, 0), PyTuple_GET_ITEM(res, 1),
                                  (unsigned long long)r->info.tag);
    Py_DECREF(res);
    return out;
}

/* (frame_size, region_count) of the header a limit refused, or None */
static PyObject *request_refused(PyObject *self, void *closure)
{
    (void)closure;
    RequestObject *r = (RequestObject *)self;
    if (!r->rx.refused)
        Py_RETURN_NONE;
    return Py_BuildValue("(LL)", (long long)r->rx.seen_frame_size,
                         (long long)r->rx.seen_region_count);
}

static void request_dealloc(PyObject *self)
{
    RequestObject *r = (RequestObject *)self;
    if (!r->done && r->req != NULL) {
        if (r->is_recv) { /* the transport may still write: cancel and wait for the end */
            int rc;
            Py_BEGIN_ALLOW_THREADS C.cdt_ucx_request_cancel(r->req);
            rc = C.cdt_ucx_request_wait(r->req, CDT_UCX_INFINITE);
            Py_END_ALLOW_THREADS request_complete(r, rc);
        } else {
            /* a send still reads its buffers: keep them (and the request) for good */
            return;
        }
    }
    out_release(&r->out);
    rx_clear(&r->rx);
    if (r->is_recv)
        Py_CLEAR(r->rx.alloc); /* the receive's own reference */
    Py_TYPE(self)->tp_free(self);
}

static PyMethodDef request_methods[] = {
    {"test", request_test, METH_NOARGS, "Progress once; CDT_INPROGRESS or the final status."},
    {"wait", request_wait, METH_VARARGS,
     "wait(timeout_ms=-1): the final status, or CDT_ERR_TIMEOUT while pending."},
    {"cancel", request_cancel, METH_NOARGS, "Cancel a receive; the status of the call."},
    {"result", request_result, METH_NOARGS,
     "A completed receive's (stream, buffers, tag); raises for a failed request."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef request_getset[] = {
    {"refused", request_refused, NULL, "(frame_size, region_count) a receive limit refused.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RequestType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes._ext.UcxRequest",
    .tp_basicsize = sizeof(RequestObject),
    .tp_dealloc = request_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A UCX send or receive in flight (the Python layer wraps it).",
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};

static RequestObject *request_new(int is_recv)
{
    RequestObject *r = PyObject_New(RequestObject, &RequestType);
    if (r == NULL)
        return NULL;
    r->req = NULL;
    r->done = 0;
    r->status = 0;
    r->is_recv = is_recv;
    memset(&r->out, 0, sizeof r->out);
    rx_init(&r->rx, NULL);
    memset(&r->so, 0, sizeof r->so);
    r->prepared = 0;
    memset(&r->info, 0, sizeof r->info);
    return r;
}

static PyObject *no_ucx(void)
{
    PyErr_SetString(PyExc_ImportError,
                    "this libcdt was built without the UCX transport (UCX not found at build "
                    "time)");
    return NULL;
}

/* ucx_isend(ep, obj, tag) -> request */
static PyObject *ext_ucx_isend(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ep, tag;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "KOK", &ep, &obj, &tag))
        return NULL;
    if (!have_ucx)
        return no_ucx();
    RequestObject *r = request_new(0);
    if (r == NULL)
        return NULL;
    if (out_fill(&r->out, obj, 5) < 0) {
        r->done = 1;
        Py_DECREF(r);
        return NULL;
    }
    int rc;
    cdt_ucx_request req = NULL;
    Py_BEGIN_ALLOW_THREADS rc =
        C.cdt_ucx_isend((cdt_ucx_ep)(uintptr_t)ep, &r->out.so, 1, sobj_type, tag, &req);
    Py_END_ALLOW_THREADS if (rc < 0)
    {
        r->done = 1;
        Py_DECREF(r);
        return raise_what(rc, "cdt_ucx_isend");
    }
    r->req = req;
    return (PyObject *)r;
}

/* ucx_irecv(worker, tag, mask, alloc, max_bytes, max_regions) -> request */
static PyObject *ext_ucx_irecv(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long worker, tag, mask;
    PyObject *alloc;
    long long max_bytes, max_regions;
    if (!PyArg_ParseTuple(args, "KKKOLL", &worker, &tag, &mask, &alloc, &max_bytes, &max_regions))
        return NULL;
    if (!have_ucx)
        return no_ucx();
    RequestObject *r = request_new(1);
    if (r == NULL)
        return NULL;
    rx_init(&r->rx, alloc);
    Py_XINCREF(r->rx.alloc); /* the request keeps its allocator */
    r->rx.max_bytes = max_bytes;
    r->rx.max_regions = max_regions;
    cdt_ucx_recv_params p;
    memset(&p, 0, sizeof p);
    p.field_mask = CDT_UCX_RECV_PARAM_PREPARE;
    p.prepare = ucx_prepare;
    p.prepare_arg = r;
    /* the transport checks these on the head, before it sizes anything from it */
    if (max_bytes >= 0) {
        p.field_mask |= CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES;
        p.max_frame_bytes = max_bytes;
    }
    if (max_regions >= 0) {
        p.field_mask |= CDT_UCX_RECV_PARAM_MAX_REGIONS;
        p.max_regions = max_regions;
    }
    int rc;
    cdt_ucx_request req = NULL;
    Py_BEGIN_ALLOW_THREADS rc =
        C.cdt_ucx_irecv((cdt_ucx_worker)(uintptr_t)worker, NULL, 0, NULL, tag, mask, &p, &req);
    Py_END_ALLOW_THREADS if (rc < 0)
    {
        r->done = 1;
        Py_CLEAR(r->rx.alloc);
        Py_DECREF(r);
        return raise_what(rc, "cdt_ucx_irecv");
    }
    r->req = req;
    return (PyObject *)r;
}

/* ---- MPI: a head message plus one message of the large buffers ---------------------------
 *
 * head = prefix (16 bytes: magic "CDT2", u32 object id, u64 threshold) + the frame's bytes
 * without the regions of at least `threshold` bytes; those regions travel together as one more
 * message, in frame order (cdtypes/mpi.py sends it). threshold 0: every region travels in the
 * head. */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get_u64(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

static int separate(cdt_count len, cdt_count threshold)
{
    return threshold > 0 && len >= threshold;
}

/* (lengths, addresses) of the parts (Buffers) when there are two or more, for the datatype
 * that sends or receives them as one message (cdtypes/mpi.py); None otherwise. Built here
 * because a Python loop over 512 parts (len() and MPI.Get_address() of each) cost 90 us per
 * object on each side. */
static PyObject *parts_layout(PyObject *parts)
{
    Py_ssize_t n = PyList_GET_SIZE(parts);
    if (n < 2)
        Py_RETURN_NONE;
    PyObject *lens = PyList_New(n), *addrs = PyList_New(n), *res = NULL;
    for (Py_ssize_t i = 0; lens != NULL && addrs != NULL && i < n; i++) {
        BufferObject *b = (BufferObject *)PyList_GET_ITEM(parts, i);
        PyObject *len = PyLong_FromSsize_t(b->len);
        PyObject *addr = PyLong_FromVoidPtr(b->ptr);
        if (len == NULL || addr == NULL) {
            Py_XDECREF(len);
            Py_XDECREF(addr);
            goto done;
        }
        PyList_SET_ITEM(lens, i, len);
        PyList_SET_ITEM(addrs, i, addr);
    }
    if (lens != NULL && addrs != NULL)
        res = PyTuple_Pack(2, lens, addrs);
done:
    Py_XDECREF(lens);
    Py_XDECREF(addrs);
    return res;
}

/* mpi_pack(obj, oid, threshold) -> (frame, head bytearray, [read-only Buffer per part],
 * layout: parts_layout) */
static PyObject *ext_mpi_pack(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj;
    unsigned int oid;
    long long threshold;
    if (!PyArg_ParseTuple(args, "OIL", &obj, &oid, &threshold))
        return NULL;
    PyObject *fo = encode(obj, 5);
    if (fo == NULL)
        return NULL;
    FrameObject *f = (FrameObject *)fo;
    PyObject *head = NULL, *parts = NULL, *res = NULL;
    const void *hp;
    cdt_count hlen, nreg;
    int rc = C.cdt_frame_head(f->frame, &hp, &hlen);
    if (rc == 0)
        rc = C.cdt_frame_region_count(f->frame, &nreg);
    if (rc < 0) {
        raise_what(rc, "cdt_frame_head");
        goto done;
    }
    cdt_count sep_bytes = 0, nsep = 0;
    for (cdt_count i = 0; i < nreg; i++) {
        cdt_count len, off;
        cdt_kind kind;
        if ((rc = C.cdt_frame_region_info(f->frame, i, &len, &kind, &off)) < 0) {
            raise_what(rc, "cdt_frame_region_info");
            goto done;
        }
        if (separate(len, threshold)) {
            sep_bytes += len;
            nsep++;
        }
    }
    head = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(MPI_PREFIX + f->size - sep_bytes));
    parts = PyList_New((Py_ssize_t)nsep);
    if (head == NULL || parts == NULL)
        goto done;
    unsigned char *h = (unsigned char *)PyByteArray_AS_STRING(head);
    put_u32(h, MPI_MAGIC);
    put_u32(h + 4, oid);
    put_u64(h + 8, (uint64_t)(threshold > 0 ? threshold : 0));
    unsigned char *w = h + MPI_PREFIX;
    cdt_count pos = 0; /* frame offset copied up to */
    Py_ssize_t k = 0;
    for (cdt_count i = 0; i <= nreg; i++) {
        cdt_count len = 0, off = f->size;
        cdt_kind kind;
        if (i < nreg)
            C.cdt_frame_region_info(f->frame, i, &len, &kind, &off);
        if (i < nreg && !separate(len, threshold))
            continue; /* gathered with what lies before the next separate region */
        if (off > pos) {
            if (frame_gather_(f, pos, w, off - pos) < 0)
                goto done;
            w += off - pos;
        }
        pos = off + len;
        if (i == nreg)
            break;
        cdt_iov iov;
        cdt_count got = 0;
        rc = C.cdt_frame_region_iov(f->frame, i, 0, 1, &iov, &got);
        if (rc < 0 || got != 1) {
            raise_what(rc < 0 ? rc : CDT_ERR_UNSUPPORTED, "cdt_frame_region_iov");
            goto done;
        }
        PyObject *b = buffer_new_window(iov.base, (Py_ssize_t)iov.len, 1, fo);
        if (b == NULL)
            goto done;
        PyList_SET_ITEM(parts, k++, b);
    }
    PyObject *layout = parts_layout(parts);
    if (layout != NULL)
        res = PyTuple_Pack(4, fo, head, parts, layout);
    Py_XDECREF(layout);
done:
    if (res == NULL)
        frame_close_(f);
    Py_DECREF(fo);
    Py_XDECREF(head);
    Py_XDECREF(parts);
    return res;
}

/* parse the prefix and open the decoder on the head's frame header */
static int mpi_open(const unsigned char *p, Py_ssize_t n, cdt_count max_bytes,
                    cdt_count max_regions, uint32_t *oid, cdt_count *threshold, cdt_decoder *dec,
                    cdt_frame_info *info)
{
    if (n < MPI_PREFIX || (uint32_t)get_u64(p, 4) != MPI_MAGIC) {
        raise_fmt(CDT_ERR_FRAME_MAGIC, "not a cdtypes.mpi message (%zd bytes)", n);
        return -1;
    }
    *oid = (uint32_t)get_u64(p + 4, 4);
    uint64_t t = get_u64(p + 8, 8);
    *threshold = t > (uint64_t)INT64_MAX ? INT64_MAX : (cdt_count)t;
    if (n - MPI_PREFIX < CDT_FRAME_FIXED_HEADER_SIZE) {
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "%zd bytes cannot hold a frame header", n - MPI_PREFIX);
        return -1;
    }
    *dec = open_decoder(p + MPI_PREFIX, n - MPI_PREFIX, max_bytes, max_regions, info);
    return *dec == NULL ? -1 : 0;
}

/* mpi_parts(head) -> (oid, [byte length of each separate part]): what to drain */
static PyObject *ext_mpi_parts(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t oid;
    cdt_count threshold;
    cdt_decoder dec = NULL;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    PyObject *lens = NULL, *res = NULL;
    if (mpi_open(v.buf, v.len, -1, -1, &oid, &threshold, &dec, &info) < 0)
        goto done;
    lens = PyList_New(0);
    for (cdt_count i = 0; lens != NULL && i < info.region_count; i++) {
        cdt_count len, off;
        cdt_kind kind;
        if (C.cdt_decoder_region_info(dec, i, &len, &kind, &off) == 0 && separate(len, threshold)) {
            PyObject *x = PyLong_FromLongLong(len);
            if (x == NULL || PyList_Append(lens, x) < 0)
                Py_CLEAR(lens);
            Py_XDECREF(x);
        }
    }
    if (lens != NULL)
        res = Py_BuildValue("(IO)", oid, lens);
done:
    if (dec != NULL)
        C.cdt_decoder_free(dec);
    Py_XDECREF(lens);
    PyBuffer_Release(&v);
    return res;
}

/* An object whose head message arrived: the separate parts' destinations, then finish(). */
typedef struct {
    PyObject_HEAD receiver rx;
    cdt_decoder dec;
    cdt_sobj so;
    int prepared;
    PyObject *sep; /* list of region indices received separately */
} IncomingObject;

static PyTypeObject IncomingType;

static void incoming_free_(IncomingObject *in)
{
    if (in->dec != NULL)
        C.cdt_decoder_free(in->dec);
    in->dec = NULL;
    if (in->prepared)
        C.cdt_sobj_release(&in->so);
    in->prepared = 0;
    rx_unpin(&in->rx);
}

static void incoming_dealloc(PyObject *self)
{
    IncomingObject *in = (IncomingObject *)self;
    incoming_free_(in);
    rx_clear(&in->rx);
    Py_XDECREF(in->sep);
    Py_TYPE(self)->tp_free(self);
}

/* finish(): every separate part arrived -> (stream, buffers) */
static PyObject *incoming_finish(PyObject *self, PyObject *unused)
{
    (void)unused;
    IncomingObject *in = (IncomingObject *)self;
    if (in->dec == NULL) {
        PyErr_SetString(PyExc_ValueError, "the object was finished already");
        return NULL;
    }
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(in->sep); k++)
        rc = C.cdt_decoder_region_done(in->dec, PyLong_AsLongLong(PyList_GET_ITEM(in->sep, k)));
    if (rc == 0)
        rc = C.cdt_decoder_finish(in->dec);
    incoming_free_(in);
    if (rc != 0) {
        Py_CLEAR(in->rx.stream);
        Py_CLEAR(in->rx.buffers);
        return raise_what(rc, "cdt_decoder_finish");
    }
    return rx_result(&in->rx);
}

static PyMethodDef incoming_methods[] = {
    {"finish", incoming_finish, METH_NOARGS,
     "Every separate part arrived: check the frame and give (stream, buffers)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IncomingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes._ext.MpiIncoming",
    .tp_basicsize = sizeof(IncomingObject),
    .tp_dealloc = incoming_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An object whose head message arrived (cdtypes.mpi).",
    .tp_methods = incoming_methods,
};

/* mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, [writable Buffer per
 * separate part], layout: parts_layout) */
static PyObject *ext_mpi_unpack(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data, *alloc;
    long long max_bytes, max_regions;
    if (!PyArg_ParseTuple(args, "OOLL", &data, &alloc, &max_bytes, &max_regions))
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = v.buf;
    PyObject *res = NULL, *dests = NULL;
    IncomingObject *in = PyObject_New(IncomingObject, &IncomingType);
    if (in == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    rx_init(&in->rx, alloc);
    in->dec = NULL;
    in->prepared = 0;
    in->sep = PyList_New(0);
    uint32_t oid;
    cdt_count threshold;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    if (in->sep == NULL ||
        mpi_open(p, v.len, max_bytes, max_regions, &oid, &threshold, &in->dec, &info) < 0)
        goto done;
    const unsigned char *frame = p + MPI_PREFIX;
    cdt_count n = v.len - MPI_PREFIX, sep_bytes = 0;
    for (cdt_count i = 0; i < info.region_count; i++) {
        cdt_count len, off;
        cdt_kind kind;
        int rc = C.cdt_decoder_region_info(in->dec, i, &len, &kind, &off);
        if (rc < 0) {
            raise_what(rc, "cdt_decoder_region_info");
            goto done;
        }
        if (separate(len, threshold)) {
            sep_bytes += len;
            PyObject *x = PyLong_FromLongLong(i);
            if (x == NULL || PyList_Append(in->sep, x) < 0) {
                Py_XDECREF(x);
                goto done;
            }
            Py_DECREF(x);
        }
    }
    if (info.frame_size - sep_bytes != n) {
        raise_fmt(n < info.frame_size - sep_bytes ? CDT_ERR_FRAME_TRUNCATED
                                                  : CDT_ERR_FRAME_MALFORMED,
                  "the head message has %lld frame bytes, its header announces %lld", (long long)n,
                  (long long)(info.frame_size - sep_bytes));
        goto done;
    }
    in->rx.decoder = in->dec;
    int rc = rx_prepare(&in->rx, &in->so);
    if (rc != 0) {
        rx_raise(&in->rx, rc, "cdt_sobj_recv_prepare");
        goto done;
    }
    in->prepared = 1;
    dests = PyList_New(0);
    if (dests == NULL)
        goto done;
    /* deliver the head's bytes at their frame offsets; name where the separate parts go */
    cdt_count pos = 0, hpos = 0;
    for (cdt_count i = 0; i <= info.region_count; i++) {
        cdt_count len = 0, off = info.frame_size;
        cdt_kind kind;
        if (i < info.region_count)
            C.cdt_decoder_region_info(in->dec, i, &len, &kind, &off);
        if (i < info.region_count && !separate(len, threshold))
            continue;
        if (off > pos) {
            rc = write_nogil(in->dec, pos, frame + hpos, off - pos);
            if (rc != 0) {
                raise_what(rc, "cdt_decoder_write");
                goto done;
            }
            hpos += off - pos;
        }
        pos = off + len;
        if (i == info.region_count)
            break;
        cdt_iov iov;
        cdt_count got = 0;
        rc = C.cdt_decoder_region_iov(in->dec, i, 0, 1, &iov, &got);
        if (rc < 0 || got != 1) {
            raise_what(rc < 0 ? rc : CDT_ERR_UNSUPPORTED, "cdt_decoder_region_iov");
            goto done;
        }
        /* the window keeps its memory valid: a Buffer by a reference, an allocator's object
         * by an export (a memoryview: a bytearray cannot be resized under it once the
         * receive's own export is released) */
        PyObject *mem = PyList_GET_ITEM(in->rx.buffers, (Py_ssize_t)i);
        PyObject *owner =
            Py_TYPE(mem) == &BufferType ? Py_NewRef(mem) : PyMemoryView_FromObject(mem);
        PyObject *b =
            owner != NULL ? buffer_new_window(iov.base, (Py_ssize_t)iov.len, 0, owner) : NULL;
        Py_XDECREF(owner);
        if (b == NULL || PyList_Append(dests, b) < 0) {
            Py_XDECREF(b);
            goto done;
        }
        Py_DECREF(b);
    }
    PyObject *layout = parts_layout(dests);
    if (layout != NULL)
        res = Py_BuildValue("(OIOO)", (PyObject *)in, oid, dests, layout);
    Py_XDECREF(layout);
done:
    Py_XDECREF(dests);
    Py_DECREF(in);
    PyBuffer_Release(&v);
    return res;
}

/* ---- module ----------------------------------------------------------------------------- */

#define NAME_(name) #name,
static const char *core_names[] = {CORE_CALLS(NAME_) NULL};
static const char *ucx_names[] = {UCX_CALLS(NAME_) NULL};

/* _init(dlopen_handle, error, alloc_error): resolve libcdt's functions in the library the
 * package loaded, and take the Python hooks that build exceptions. */
static PyObject *ext_init(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long handle;
    PyObject *err, *alloc_err;
    if (!PyArg_ParseTuple(args, "KOO", &handle, &err, &alloc_err))
        return NULL;
    void *h = (void *)(uintptr_t)handle;
#define RESOLVE_(name)                                                                             \
    *(void **)&C.name = dlsym(h, #name);                                                           \
    if (C.name == NULL)                                                                            \
        return PyErr_Format(PyExc_ImportError, "libcdt has no function %s", #name);
    CORE_CALLS(RESOLVE_)
#undef RESOLVE_
    have_ucx = 1;
#define RESOLVE_UCX_(name)                                                                         \
    *(void **)&C.name = dlsym(h, #name);                                                           \
    if (C.name == NULL)                                                                            \
        have_ucx = 0;
    UCX_CALLS(RESOLVE_UCX_)
#undef RESOLVE_UCX_
    const char *env = getenv("CDTYPES_BUFFER_CACHE");
    if (env != NULL && *env != '\0') {
        long long limit = strtoll(env, NULL, 10);
        cdt_receive_cache_set_limit(&cache, limit > 0 ? (size_t)limit : 0);
    }
    sobj_type = C.cdt_sobj_type();
    if (sobj_type == NULL)
        return PyErr_Format(PyExc_ImportError, "cdt_sobj_type() failed");
    PyObject *pickle = PyImport_ImportModule("pickle");
    if (pickle == NULL)
        return NULL;
    Py_XSETREF(pickle_dumps, PyObject_GetAttrString(pickle, "dumps"));
    Py_DECREF(pickle);
    if (pickle_dumps == NULL)
        return NULL;
    Py_XSETREF(kw_buffer_callback, Py_BuildValue("(s)", "buffer_callback"));
    if (kw_buffer_callback == NULL)
        return NULL;
    Py_INCREF(err);
    Py_XSETREF(hook_error, err);
    Py_INCREF(alloc_err);
    Py_XSETREF(hook_alloc_error, alloc_err);
    return PyBool_FromLong(have_ucx);
}

static PyMethodDef ext_methods[] = {
    {"_init", ext_init, METH_VARARGS, "_init(handle, error, alloc_error) -> has UCX"},
    {"dumps", ext_dumps, METH_VARARGS, "dumps(obj, protocol=5) -> Frame"},
    {"decode", ext_decode, METH_VARARGS,
     "decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1) -> (stream, "
     "buffers)"},
    {"stream_needs_check", ext_stream_needs_check, METH_O,
     "Whether the stream could hold an over-long BYTEARRAY8 (then check it before loading)."},
    {"ucx_isend", ext_ucx_isend, METH_VARARGS, "ucx_isend(ep, obj, tag) -> request"},
    {"ucx_irecv", ext_ucx_irecv, METH_VARARGS,
     "ucx_irecv(worker, tag, mask, alloc, max_bytes, max_regions) -> request"},
    {"mpi_pack", ext_mpi_pack, METH_VARARGS,
     "mpi_pack(obj, oid, threshold) -> (frame, head, parts, layout)"},
    {"mpi_unpack", ext_mpi_unpack, METH_VARARGS,
     "mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, destinations, "
     "layout)"},
    {"mpi_parts", ext_mpi_parts, METH_O, "mpi_parts(head) -> (oid, [part lengths])"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ext_module = {
    PyModuleDef_HEAD_INIT,
    "_ext",
    "cdtypes' compiled backend (CPython C API).",
    -1,
    ext_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static PyObject *names_tuple(const char **names)
{
    Py_ssize_t n = 0;
    while (names[n] != NULL)
        n++;
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i]);
        if (s == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

PyMODINIT_FUNC PyInit__ext(void)
{
    if (PyType_Ready(&BufferType) < 0 || PyType_Ready(&FrameType) < 0 ||
        PyType_Ready(&RequestType) < 0 || PyType_Ready(&IncomingType) < 0 ||
        PyType_Ready(&SinkType) < 0)
        return NULL;
    if ((str_numpy = PyUnicode_InternFromString("numpy")) == NULL ||
        (str_dtype = PyUnicode_InternFromString("dtype")) == NULL ||
        (str_F = PyUnicode_InternFromString("F")) == NULL ||
        (str_dump = PyUnicode_InternFromString("dump")) == NULL ||
        (str_clear_memo = PyUnicode_InternFromString("clear_memo")) == NULL ||
        (str_release = PyUnicode_InternFromString("release")) == NULL ||
        (dtype_cache = PyDict_New()) == NULL)
        return NULL;
    /* named in pickle streams as cdtypes._arrays.rebuild (that module publishes them) */
    PyObject *arrays_name = PyUnicode_FromString("cdtypes._arrays");
    if (arrays_name == NULL)
        return NULL;
    rebuild_fn = PyCFunction_NewEx(&rebuild_def, NULL, arrays_name);
    reduce_fn = PyCFunction_NewEx(&reduce_def, NULL, arrays_name);
    Py_DECREF(arrays_name);
    if (rebuild_fn == NULL || reduce_fn == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&ext_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "rebuild", Py_NewRef(rebuild_fn)) < 0 ||
        PyModule_AddObject(m, "reduce", Py_NewRef(reduce_fn)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&BufferType);
    Py_INCREF(&FrameType);
    if (PyModule_AddObject(m, "Buffer", (PyObject *)&BufferType) < 0 ||
        PyModule_AddObject(m, "Frame", (PyObject *)&FrameType) < 0 ||
        PyModule_AddObject(m, "CALLS", names_tuple(core_names)) < 0 ||
        PyModule_AddObject(m, "UCX_CALLS", names_tuple(ucx_names)) < 0 ||
        PyModule_AddIntConstant(m, "ERR_PY_EXCEPTION", ERR_PY_EXCEPTION) < 0 ||
        PyModule_AddIntConstant(m, "MPI_PREFIX", MPI_PREFIX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
