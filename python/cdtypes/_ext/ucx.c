#include "ext.h"

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

PyTypeObject RequestType = {
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
    PyErr_SetString(PyExc_ImportError, "the UCX transport library is not loaded (import "
                                       "cdtypes.ucx, which loads it)");
    return NULL;
}

/* ucx_isend(ep, obj, tag) -> request */
PyObject *ext_ucx_isend(PyObject *self, PyObject *args)
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
PyObject *ext_ucx_irecv(PyObject *self, PyObject *args)
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
