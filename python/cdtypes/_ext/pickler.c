#include "ext.h"

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

/* A stream of at least PARTS_MIN_BYTES in 2 to PARTS_MAX pieces is handed over as its pieces
 * (out_fill sends them as the sobj's inband_parts): the pickler writes a payload of 64 KiB or
 * more (a large bytes object) by itself, by reference, and joining the pieces would copy it
 * once more into fresh memory (1 MiB: 287 us of cdtypes.dumps' 642 here, most of it page
 * faults). Fewer, larger pieces than that are joined: a join of small pieces costs less than
 * the walk over them. */
#define PARTS_MIN_BYTES 65536
#define PARTS_MAX 64

/* the stream's pieces as a new list when they qualify (above), else NULL without an error */
static PyObject *sink_parts(SinkObject *s)
{
    if (s->first == NULL || s->more == NULL || PyList_GET_SIZE(s->more) + 1 > PARTS_MAX)
        return NULL;
    Py_ssize_t total = PyBytes_GET_SIZE(s->first);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(s->more); i++)
        total += PyBytes_GET_SIZE(PyList_GET_ITEM(s->more, i));
    if (total < PARTS_MIN_BYTES)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(s->more);
    PyObject *parts = PyList_New(n + 1);
    if (parts == NULL)
        return NULL;
    PyList_SET_ITEM(parts, 0, Py_NewRef(s->first));
    for (Py_ssize_t i = 0; i < n; i++)
        PyList_SET_ITEM(parts, i + 1, Py_NewRef(PyList_GET_ITEM(s->more, i)));
    return parts;
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
    return bytes_join(s->more);
}

PyObject *bytes_join(PyObject *pieces)
{
    PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);
    PyObject *all = empty != NULL ? PyObject_CallMethod(empty, "join", "(O)", pieces) : NULL;
    Py_XDECREF(empty);
    return all;
}

static PyMethodDef sink_methods[] = {
    {"write", sink_write, METH_O, "The pickler's output."},
    {"buffer", sink_buffer, METH_O, "The pickler's buffer_callback."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SinkType = {
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
int arrays_ready(void)
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
 * list of the PickleBuffers given to the buffer_callback); NULL with an exception set. With
 * parts (not NULL), a long stream in few pieces comes back as *parts (new reference: a list
 * of bytes) and the function returns NULL without an exception; *parts is NULL otherwise. */
PyObject *arrays_dumps(PyObject *obj, int protocol, PyObject **pbufs, PyObject **parts)
{
    if (parts != NULL)
        *parts = NULL;
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
    PyObject *pieces = ok && parts != NULL ? sink_parts(sink) : NULL;
    if (pieces == NULL && PyErr_Occurred())
        ok = 0;
    if (ok && (pieces != NULL || (stream = sink_stream(sink)) != NULL)) {
        *pbufs = sink->pbufs != NULL ? Py_NewRef(sink->pbufs) : PyList_New(0);
        if (*pbufs == NULL) {
            Py_CLEAR(stream);
            Py_CLEAR(pieces);
        }
    }
    if (pieces != NULL)
        *parts = pieces;
    sink_reset(sink);
    /* a pickler that failed is not kept: its state is not known. Nor is one whose memo grew
     * with a large object: clear_memo() zeroes the memo's whole table, which never shrinks
     * (after 512 arrays, 64 KiB: 2-3 us more for every small object after it). The stream has
     * at least one byte (MEMOIZE) per memo entry, so a short stream means a small table. */
    if (ok && reusable && protocol == 5 && idle_pickler == NULL && stream != NULL &&
        PyBytes_GET_SIZE(stream) <= REUSE_MAX_STREAM) {
        idle_pickler = pickler;
        idle_sink = sink;
    } else {
        Py_DECREF(pickler);
        Py_DECREF(sink);
    }
    return stream;
}
