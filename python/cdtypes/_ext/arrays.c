#include "ext.h"

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

static PyObject *np_ndarray;      /* numpy.ndarray, once numpy was seen imported */
static PyObject *np_dtype;        /* numpy.dtype */
static PyObject *np_frombuffer;   /* numpy.frombuffer */
PyObject *rebuild_fn, *reduce_fn; /* this module's functions, named cdtypes._arrays.* */

/* numpy.ndarray and numpy.dtype: 1 once numpy is imported, 0 while it is not (nothing is
 * imported then), -1 with an exception set. import_it (the receiver's rebuild): import numpy. */
int numpy_found(int import_it)
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
PyObject *dtype_cache;

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

PyMethodDef rebuild_def = {
    "rebuild", (PyCFunction)(void (*)(void))arrays_rebuild, METH_FASTCALL,
    "rebuild(buffer, descr, shape, order='C'): the NumPy array of dtype descr and shape on "
    "buffer's memory (no copy). Named in the pickle streams cdtypes writes."};
PyMethodDef reduce_def = {
    "reduce", arrays_reduce, METH_O,
    "reduce(obj): (rebuild, (PickleBuffer, descr, shape[, 'F'])) for a contiguous ndarray of a "
    "plain dtype, NotImplemented otherwise (a pickler's reducer_override)."};
