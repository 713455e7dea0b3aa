#include "ext.h"

/* ---- send side: an object as a filled cdt_sobj ------------------------------------------ */

void out_release(outgoing *o)
{
    for (Py_ssize_t i = 0; i < o->nviews; i++)
        PyBuffer_Release(&o->views[i]);
    o->nviews = 0;
    PyMem_Free(o->views);
    PyMem_Free(o->sbufs);
    o->views = NULL;
    o->sbufs = NULL;
    /* The PickleBuffers are dropped, never released: one the object holds is the caller's (a
     * released one would fail the object's next use, a second send or the root's own result
     * of a collective, as it never does with pickle or mpi4py.util.pkl5); the reducers' own
     * go with the list, and their exports with them */
    Py_CLEAR(o->pbufs);
    Py_CLEAR(o->stream);
    Py_CLEAR(o->parts);
    PyMem_Free(o->iov);
    o->iov = NULL;
    memset(&o->so, 0, sizeof o->so);
}

/* pickle obj with buffer_callback and fill o->so. 0, or -1 with an exception set. */
int out_fill(outgoing *o, PyObject *obj, int protocol)
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
        o->stream = arrays_dumps(obj, protocol, &o->pbufs, &o->parts);
        if (o->stream == NULL && o->parts == NULL)
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
    if (o->stream != NULL && !PyBytes_Check(o->stream)) {
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
    if (o->parts != NULL) {
        /* the pickler's pieces as they are: a large bytes payload by reference, not joined
         * into one copy first (cdt_sobj.h, CDT_SOBJ_FIELD_INBAND_PARTS) */
        Py_ssize_t np = PyList_GET_SIZE(o->parts);
        if ((o->iov = PyMem_Calloc((size_t)np, sizeof(cdt_iov))) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < np; i++) {
            PyObject *b = PyList_GET_ITEM(o->parts, i);
            o->iov[i].base = PyBytes_AS_STRING(b);
            o->iov[i].len = PyBytes_GET_SIZE(b);
            o->so.inband_len += o->iov[i].len;
        }
        o->so.field_mask |= CDT_SOBJ_FIELD_INBAND_PARTS;
        o->so.inband_parts = o->iov;
        o->so.inband_nparts = np;
    } else {
        o->so.inband = PyBytes_AS_STRING(o->stream);
        o->so.inband_len = PyBytes_GET_SIZE(o->stream);
    }
    o->so.buffers = o->sbufs;
    o->so.nbuffers = n;
    return 0;
fail:
    out_release(o);
    return -1;
}
