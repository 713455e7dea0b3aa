/* stream_plain(stream, nbuf): whether a pickle stream is plain (pickle_plain.h), the test of
 * a collective receiver's early answer (docs/MPI.md §14.5). */
#include "ext.h"
#include "pickle_plain.h"

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
