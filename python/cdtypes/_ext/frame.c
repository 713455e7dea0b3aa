#include "ext.h"

/* ---- Frame ------------------------------------------------------------------------------ */

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

void frame_close_(FrameObject *f)
{
    f->closed = 1;
    if (f->views == 0)
        frame_free_memory(f);
}

/* a Buffer window with owner `frame` was made / is gone (any other owner: nothing to count) */
void frame_view_made(PyObject *frame)
{
    if (Py_TYPE(frame) == &FrameType)
        ((FrameObject *)frame)->views++;
}

void frame_view_gone(PyObject *frame)
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

int frame_gather_(FrameObject *f, cdt_count offset, void *dst, cdt_count len)
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

PyTypeObject FrameType = {
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

PyObject *encode(PyObject *obj, int protocol)
{
    return encode_keep(obj, protocol, NULL);
}

/* encode(); with keep, *keep is the pickle stream the frame's head copied (new reference): the
 * root of a collective unpickles its own copy from it (mpi_pack_own) */
PyObject *encode_keep(PyObject *obj, int protocol, PyObject **keep)
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
    PyObject *stream = out.stream; /* copied into the frame's head */
    out.stream = NULL;
    if (stream == NULL && keep != NULL) { /* in parts: the root's own copy needs it whole */
        if ((stream = bytes_join(out.parts)) == NULL) {
            C.cdt_frame_free(h);
            out_release(&out);
            return NULL;
        }
    }
    PyObject *f = frame_new_from(h, &out, NULL);
    if (f == NULL) {
        C.cdt_frame_free(h);
        out_release(&out);
    }
    if (f != NULL && keep != NULL)
        *keep = stream;
    else
        Py_XDECREF(stream);
    return f;
}

PyObject *ext_dumps(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *obj;
    int protocol = 5;
    if (!PyArg_ParseTuple(args, "O|i", &obj, &protocol))
        return NULL;
    return encode(obj, protocol);
}
