#include "ext.h"

#include "mpi_calls.h"

/* ---- the two-process bcast's MPI calls from C (docs/MPI.md §14.5.1) ------------------------
 *
 * Wrappers of mpi_calls.h's calls (shared with the cffi backend): handle values cross as Python
 * ints (mpi4py's MPI._handleof), the buffers as bytearrays and array('i')s, an MPI error code
 * raised as mpi4py raises it, MPI.Exception(code). METH_FASTCALL: no argument tuple, no format
 * string parsed, as these calls exist to take argument parsing off the path. The blocking calls
 * release the GIL, as mpi4py's do. */

static PyObject *mpic_exception; /* mpi4py's MPI.Exception, given to mpic_init */

static PyObject *raise_mpi(int rc)
{
    if (rc < 0 || mpic_exception == NULL) { /* CDTPY_MPIC_NOT_SET */
        PyErr_SetString(PyExc_RuntimeError,
                        "cdtypes: the MPI calls from C are not set up (mpic_init)");
        return NULL;
    }
    PyObject *e = PyObject_CallFunction(mpic_exception, "i", rc);
    if (e != NULL) {
        PyErr_SetObject(mpic_exception, e);
        Py_DECREF(e);
    }
    return NULL;
}

static int nargs_are(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs == want)
        return 1;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, nargs);
    return 0;
}

static int int64_arg(PyObject *o, int64_t *v)
{
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred())
        return 0;
    *v = (int64_t)x;
    return 1;
}

static int int_arg(PyObject *o, int *v)
{
    long x = PyLong_AsLong(o);
    if ((x == -1 && PyErr_Occurred()) || x < INT32_MIN || x > INT32_MAX) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "an MPI int out of range");
        return 0;
    }
    *v = (int)x;
    return 1;
}

/* five ints (the agreement's, an array('i')), writable */
static int five_ints(PyObject *o, Py_buffer *v)
{
    if (PyObject_GetBuffer(o, v, PyBUF_WRITABLE) < 0)
        return 0;
    if (v->len != 5 * (Py_ssize_t)sizeof(int)) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_ValueError, "the agreement's buffer holds five C ints");
        return 0;
    }
    return 1;
}

/* mpic_init(path, handle size, status size, tag offset, MPI.BYTE, MPI.INT, MPI.ANY_TAG,
 * MPI.Exception) -> None when set up, else why not (str) */
PyObject *ext_mpic_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    const char *path;
    int hsize, ssize, tag_off, any_tag;
    int64_t byte, mpi_int;
    if (!nargs_are(nargs, 8, "mpic_init"))
        return NULL;
    if ((path = PyUnicode_AsUTF8(args[0])) == NULL || !int_arg(args[1], &hsize) ||
        !int_arg(args[2], &ssize) || !int_arg(args[3], &tag_off) || !int64_arg(args[4], &byte) ||
        !int64_arg(args[5], &mpi_int) || !int_arg(args[6], &any_tag))
        return NULL;
    char why[256];
    if (cdtpy_mpic_init(path, hsize, ssize, tag_off, byte, mpi_int, any_tag, why, sizeof why) < 0)
        return PyUnicode_FromString(why);
    Py_XSETREF(mpic_exception, Py_NewRef(args[7]));
    Py_RETURN_NONE;
}

/* mpic_buffer(obj) -> obj: the cffi backend prepares a buffer given in every call once; this
 * backend takes the object itself */
PyObject *ext_mpic_buffer(PyObject *self, PyObject *arg)
{
    (void)self;
    return Py_NewRef(arg);
}

/* mpic_isend(head, dest, tag, comm) -> the request's handle */
PyObject *ext_mpic_isend(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int dest, tag;
    int64_t comm, req = 0;
    if (!nargs_are(nargs, 4, "mpic_isend"))
        return NULL;
    if (!PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "mpic_isend: the head is a bytearray");
        return NULL;
    }
    if (!int_arg(args[1], &dest) || !int_arg(args[2], &tag) || !int64_arg(args[3], &comm))
        return NULL;
    Py_ssize_t n = PyByteArray_GET_SIZE(args[0]);
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "mpic_isend: a head over 2 GiB");
        return NULL;
    }
    /* not blocking (a standard-mode send posted): the GIL is kept */
    int rc = cdtpy_mpic_isend(PyByteArray_AS_STRING(args[0]), (int)n, dest, tag, comm, &req);
    if (rc != 0)
        return raise_mpi(rc);
    return PyLong_FromLongLong(req);
}

/* mpic_start(request) */
PyObject *ext_mpic_start(PyObject *self, PyObject *arg)
{
    (void)self;
    int64_t req;
    if (!int64_arg(arg, &req))
        return NULL;
    int rc = cdtpy_mpic_start(req);
    if (rc != 0)
        return raise_mpi(rc);
    Py_RETURN_NONE;
}

/* mpic_root_end(send0, recv1, head's send, mine, theirs) -> code << 2 | step (mpi_calls.h) */
PyObject *ext_mpic_root_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int64_t r0, r1, send;
    Py_buffer mine, theirs;
    if (!nargs_are(nargs, 5, "mpic_root_end"))
        return NULL;
    if (!int64_arg(args[0], &r0) || !int64_arg(args[1], &r1) || !int64_arg(args[2], &send))
        return NULL;
    if (!five_ints(args[3], &mine))
        return NULL;
    if (!five_ints(args[4], &theirs)) {
        PyBuffer_Release(&mine);
        return NULL;
    }
    int64_t r;
    PyThreadState *ts = PyEval_SaveThread();
    r = cdtpy_mpic_root_end(r0, r1, &send, (const int *)mine.buf, (const int *)theirs.buf);
    PyEval_RestoreThread(ts);
    PyBuffer_Release(&mine);
    PyBuffer_Release(&theirs);
    return PyLong_FromLongLong(r);
}

/* mpic_leaf_end(theirs, source, tag, comm, answer's send, mine) -> code << 2 | step */
PyObject *ext_mpic_leaf_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int source, tag;
    int64_t comm, req;
    Py_buffer mine, theirs;
    if (!nargs_are(nargs, 6, "mpic_leaf_end"))
        return NULL;
    if (!int_arg(args[1], &source) || !int_arg(args[2], &tag) || !int64_arg(args[3], &comm) ||
        !int64_arg(args[4], &req))
        return NULL;
    if (!five_ints(args[0], &theirs))
        return NULL;
    if (!five_ints(args[5], &mine)) {
        PyBuffer_Release(&theirs);
        return NULL;
    }
    int64_t r;
    PyThreadState *ts = PyEval_SaveThread();
    r = cdtpy_mpic_leaf_end((int *)theirs.buf, source, tag, comm, req, (const int *)mine.buf);
    PyEval_RestoreThread(ts);
    PyBuffer_Release(&mine);
    PyBuffer_Release(&theirs);
    return PyLong_FromLongLong(r);
}

/* mpic_head(scratch, source, want, comm) -> (tag, count, None) when the head was received into
 * scratch, (tag, count, the matched message's handle) when it was left for the caller */
PyObject *ext_mpic_head(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    int source, want, tag, count, taken;
    int64_t comm, msg;
    if (!nargs_are(nargs, 4, "mpic_head"))
        return NULL;
    if (!PyByteArray_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "mpic_head: the scratch is a bytearray");
        return NULL;
    }
    if (!int_arg(args[1], &source) || !int_arg(args[2], &want) || !int64_arg(args[3], &comm))
        return NULL;
    Py_ssize_t cap = PyByteArray_GET_SIZE(args[0]);
    char *buf = PyByteArray_AS_STRING(args[0]);
    int rc;
    PyThreadState *ts = PyEval_SaveThread();
    rc = cdtpy_mpic_head(buf, cap > INT32_MAX ? INT32_MAX : (int)cap, source, want, comm, &tag,
                         &count, &msg, &taken);
    PyEval_RestoreThread(ts);
    if (rc != 0)
        return raise_mpi(rc);
    if (taken)
        return Py_BuildValue("(iiO)", tag, count, Py_None);
    return Py_BuildValue("(iiL)", tag, count, (long long)msg);
}
