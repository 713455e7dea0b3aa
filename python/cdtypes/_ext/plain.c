/* stream_plain(stream, nbuf): whether a pickle stream is plain (pickle_plain.h), the test of
 * a collective receiver's early answer (docs/MPI.md §14.5). */
#include "ext.h"
#include "pickle_plain.h"

int ext_plain(PyObject *stream, Py_ssize_t nbuf)
{
    Py_buffer v;
    if (nbuf < 0 || PyObject_GetBuffer(stream, &v, PyBUF_SIMPLE) != 0) {
        PyErr_Clear(); /* not plain: the caller unpickles it the general way, which raises */
        return 0;
    }
    int plain = cdtpy_pickle_plain(v.buf, (size_t)v.len, (size_t)nbuf);
    PyBuffer_Release(&v);
    return plain;
}

PyObject *ext_stream_plain(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer v;
    Py_ssize_t nbuf;
    if (!PyArg_ParseTuple(args, "y*n", &v, &nbuf))
        return NULL;
    int plain = nbuf >= 0 && cdtpy_pickle_plain(v.buf, (size_t)v.len, (size_t)nbuf);
    PyBuffer_Release(&v);
    return PyBool_FromLong(plain);
}
