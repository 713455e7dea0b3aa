#include "ext.h"

/* ---- Buffer: bytes owned (aligned, uninitialised) or a window on another object --------- */

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
cdt_receive_cache cache = {.limit = (size_t)256 << 20};

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

PyTypeObject BufferType = {
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
BufferObject *buffer_new_owned(Py_ssize_t n)
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

PyObject *buffer_new_window(void *ptr, Py_ssize_t n, int readonly, PyObject *owner)
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
PyObject *view_of(const void *ptr, Py_ssize_t n, PyObject *owner)
{
    PyObject *b = buffer_new_window((void *)ptr, n, 1, owner);
    if (b == NULL)
        return NULL;
    PyObject *mv = PyMemoryView_FromObject(b);
    Py_DECREF(b);
    return mv;
}
