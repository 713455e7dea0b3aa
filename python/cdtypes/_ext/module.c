/*
 * _ext/module.c - the compiled backend of cdtypes (CPython C API): the module (its functions,
 * _init, PyInit__ext), its state, and the errors it raises. The other files of _ext/, one job
 * each, share ext.h; docs/ARCHITECTURE.md maps them.
 *
 * The hot path of a Python object in a constant, small number of C calls:
 *   dumps        pickle (protocol 5, buffer_callback; NumPy arrays through reduce / rebuild,
 *                below) -> cdt_sobj -> cdt_frame_encode
 *   decode       decoder with limits -> buffers allocated from the header -> decoder_write
 *   ucx_isend    the same cdt_sobj handed to cdt_ucx_isend
 *   ucx_irecv    cdt_ucx_irecv whose prepare callback allocates the buffers
 *   mpi_pack     the frame split into a head message and the large buffers (one more message)
 *   mpi_pack_own mpi_pack and the stream and buffer copies the sender's own copy loads from
 *   mpi_unpack   the head message decoded, the large buffers' destinations given back
 *   mpic_*       a two-process bcast's MPI calls from C (docs/MPI.md §14.5.1, mpic.c)
 *
 * libcdt is not linked: its functions are looked up (dlsym) in the copy of libcdt's core the
 * package already loaded (cdtypes._lib), so there is exactly one libcdt in the process, and the
 * transport's in the UCX transport library when cdtypes.ucx loads it (_init_ucx); the names
 * this module calls are listed in CALLS and UCX_CALLS for the ABI check (bindings/abi.txt).
 *
 * Backend interface (cdtypes._core is the only Python layer; a second backend such as cffi
 * provides the same names): _init, _init_ucx, Frame, Buffer, dumps, decode, stream_needs_check,
 * stream_plain, ucx_isend, ucx_irecv, mpi_pack, mpi_pack_own, mpi_unpack, mpi_parts, CALLS, UCX.
 *
 * The GIL is released around every transport call (a prepare callback takes it back) and
 * around copies larger than COPY_NOGIL bytes.
 */
#include <dlfcn.h>

#include "ext.h"

struct ext_calls C;
int have_ucx;
cdt_type sobj_type;
static PyObject *hook_error; /* error(code, detail) -> exception instance */
PyObject *hook_alloc_error;  /* alloc_error(exc) -> exception instance */
PyObject *pickle_dumps, *kw_buffer_callback;
PyObject *str_numpy, *str_dtype, *str_F, *str_dump, *str_clear_memo;

PyObject *not_ready(void)
{
    PyErr_SetString(PyExc_RuntimeError, "cdtypes._ext was not initialised");
    return NULL;
}

/* Raise the CdtError subclass of `code`; detail may be NULL. Always returns NULL. */
PyObject *raise_code(int code, PyObject *detail)
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

PyObject *raise_fmt(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *detail = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (detail == NULL)
        return NULL;
    return raise_code(code, detail);
}

PyObject *raise_what(int code, const char *what)
{
    return raise_code(code, what != NULL ? PyUnicode_FromString(what) : NULL);
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
    Py_RETURN_NONE;
}

/* _init_ucx(dlopen_handle): resolve the transport's functions in the UCX transport library,
 * which cdtypes.ucx loads (the core links no UCX: `import cdtypes` maps none). Until then the
 * ucx_* functions raise ImportError. */
static PyObject *ext_init_ucx(PyObject *self, PyObject *arg)
{
    (void)self;
    unsigned long long handle = PyLong_AsUnsignedLongLong(arg);
    if (handle == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    void *h = (void *)(uintptr_t)handle;
    struct ext_calls resolved = C;
#define RESOLVE_UCX_(name)                                                                         \
    *(void **)&resolved.name = dlsym(h, #name);                                                    \
    if (resolved.name == NULL)                                                                     \
        return PyErr_Format(PyExc_ImportError, "the UCX transport has no function %s", #name);
    UCX_CALLS(RESOLVE_UCX_)
#undef RESOLVE_UCX_
    C = resolved;
    have_ucx = 1;
    Py_RETURN_NONE;
}

static PyMethodDef ext_methods[] = {
    {"_init", ext_init, METH_VARARGS, "_init(handle, error, alloc_error): the core's functions"},
    {"_init_ucx", ext_init_ucx, METH_O, "_init_ucx(handle): the UCX transport's functions"},
    {"dumps", ext_dumps, METH_VARARGS, "dumps(obj, protocol=5) -> Frame"},
    {"decode", ext_decode, METH_VARARGS,
     "decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1) -> (stream, "
     "buffers)"},
    {"stream_needs_check", ext_stream_needs_check, METH_O,
     "Whether the stream could hold an over-long BYTEARRAY8 (then check it before loading)."},
    {"stream_plain", ext_stream_plain, METH_VARARGS,
     "stream_plain(stream, nbuf): whether pickle loads the stream, given nbuf out-of-band "
     "buffers, without running code and without raising (docs/MPI.md §14.5)."},
    {"ucx_isend", ext_ucx_isend, METH_VARARGS, "ucx_isend(ep, obj, tag) -> request"},
    {"ucx_irecv", ext_ucx_irecv, METH_VARARGS,
     "ucx_irecv(worker, tag, mask, alloc, max_bytes, max_regions) -> request"},
    {"mpi_pack", ext_mpi_pack, METH_VARARGS,
     "mpi_pack(obj, oid, threshold) -> (frame, head, parts, layout)"},
    {"mpi_pack_own", ext_mpi_pack_own, METH_VARARGS,
     "mpi_pack_own(obj, oid, threshold) -> (frame, head, parts, layout, stream, buffers): "
     "mpi_pack and what pickle.loads makes the sender's own copy from (None, None: the object "
     "has parts)"},
    {"mpi_unpack", ext_mpi_unpack, METH_VARARGS,
     "mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, destinations, "
     "layout)"},
    {"mpi_parts", ext_mpi_parts, METH_O, "mpi_parts(head) -> (oid, [part lengths])"},
#define FAST(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL
    {"mpic_init", FAST(ext_mpic_init),
     "mpic_init(path, handle size, status size, tag offset, BYTE, INT, ANY_TAG, exception) -> "
     "None, or why the MPI calls from C are off (docs/MPI.md §14.5.1)"},
    {"mpic_buffer", ext_mpic_buffer, METH_O, "mpic_buffer(obj) -> obj"},
    {"mpic_isend", FAST(ext_mpic_isend), "mpic_isend(head, dest, tag, comm) -> request"},
    {"mpic_start", ext_mpic_start, METH_O, "mpic_start(request): MPI_Start"},
    {"mpic_root_end", FAST(ext_mpic_root_end),
     "mpic_root_end(send, recv, head's send, mine, theirs) -> code << 2 | step"},
    {"mpic_leaf_end", FAST(ext_mpic_leaf_end),
     "mpic_leaf_end(theirs, source, tag, comm, send, mine) -> code << 2 | step"},
    {"mpic_head", FAST(ext_mpic_head),
     "mpic_head(scratch, source, tag, comm) -> (tag, count, None or the matched message)"},
#undef FAST
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
