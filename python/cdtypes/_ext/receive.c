#include "ext.h"

/* ---- receive side: memory from the header, then the decoder ----------------------------- */

void rx_init(receiver *rx, PyObject *alloc)
{
    memset(rx, 0, sizeof *rx);
    rx->alloc = alloc != Py_None ? alloc : NULL;
    rx->max_bytes = rx->max_regions = -1;
}

void rx_unpin(receiver *rx)
{
    for (Py_ssize_t i = 0; i < rx->npins; i++)
        PyBuffer_Release(&rx->pins[i]);
    PyMem_Free(rx->pins);
    rx->pins = NULL;
    rx->npins = rx->cap = 0;
}

void rx_clear(receiver *rx)
{
    rx_unpin(rx);
    Py_CLEAR(rx->stream);
    Py_CLEAR(rx->buffers);
    Py_CLEAR(rx->exc);
    Py_CLEAR(rx->inplace_owner);
}

/* The pickle stream of a large object (a large bytes or str in it) is read once, by
 * pickle.loads, and dropped. Its memory is kept for the next stream of the same length: a
 * bytearray that this module holds (stream_spare) is handed out again when nothing else holds
 * it (its reference count is this module's one), so a run of large objects does not fault a
 * fresh stream's pages in every time (1 MiB: about 250 us of page faults an object where
 * malloc gave the last one back to the kernel). Every reader of a stream takes any buffer
 * (pickle.loads, the stream checks); a stream someone still holds (an exception's traceback)
 * is never reused, and a bytearray carries no cached hash to go stale. Smaller streams are
 * bytes objects, as before. */
#define STREAM_REUSE_MIN 65536
static PyObject *stream_spare;

static PyObject *rx_stream_new(cdt_count nbytes)
{
    if (nbytes < STREAM_REUSE_MIN)
        return PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
    if (stream_spare != NULL && Py_REFCNT(stream_spare) == 1 &&
        PyByteArray_GET_SIZE(stream_spare) == (Py_ssize_t)nbytes)
        return Py_NewRef(stream_spare);
    PyObject *b = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
    if (b != NULL)
        Py_XSETREF(stream_spare, Py_NewRef(b));
    return b;
}

/* one part's memory; 0 or -1 with an exception set */
static int rx_alloc_part(receiver *rx, cdt_count index, cdt_count nbytes, void **base)
{
    if (index < 0) { /* the pickle stream, copied by the decoder */
        Py_CLEAR(rx->stream);
        rx->stream = rx_stream_new(nbytes);
        if (rx->stream == NULL)
            return -1;
        *base = nbytes == 0                 ? NULL
                : PyBytes_Check(rx->stream) ? (void *)PyBytes_AS_STRING(rx->stream)
                                            : (void *)PyByteArray_AS_STRING(rx->stream);
        return 0;
    }
    if (rx->buffers == NULL && (rx->buffers = PyList_New(0)) == NULL)
        return -1;
    PyObject *mem;
    if (rx->inplace != NULL) { /* the region's bytes already lie in the frame */
        cdt_count len = 0, off = 0;
        cdt_kind kind;
        int rc = C.cdt_decoder_region_info(rx->decoder, index, &len, &kind, &off);
        if (rc < 0) {
            raise_what(rc, "cdt_decoder_region_info");
            return -1;
        }
        if (off < 0 || off > rx->inplace_len || nbytes > rx->inplace_len - off) {
            PyErr_Format(PyExc_ValueError, "region %lld lies outside the frame", (long long)index);
            return -1;
        }
        mem =
            buffer_new_window((char *)rx->inplace + off, (Py_ssize_t)nbytes, 0, rx->inplace_owner);
        if (mem == NULL)
            return -1;
        *base = (char *)rx->inplace + off;
    } else if (rx->alloc == NULL) {
        BufferObject *b = buffer_new_owned((Py_ssize_t)nbytes);
        if (b == NULL)
            return -1;
        mem = (PyObject *)b;
        *base = b->ptr;
    } else {
        mem = PyObject_CallFunction(rx->alloc, "L", (long long)nbytes);
        if (mem == NULL)
            return -1;
        if (rx->npins == rx->cap) {
            Py_ssize_t cap = rx->cap ? 2 * rx->cap : 8;
            Py_buffer *p = PyMem_Realloc(rx->pins, (size_t)cap * sizeof(Py_buffer));
            if (p == NULL) {
                Py_DECREF(mem);
                PyErr_NoMemory();
                return -1;
            }
            rx->pins = p;
            rx->cap = cap;
        }
        Py_buffer *v = &rx->pins[rx->npins];
        if (PyObject_GetBuffer(mem, v, PyBUF_WRITABLE) < 0) {
            Py_DECREF(mem);
            return -1;
        }
        rx->npins++;
        if (v->len != (Py_ssize_t)nbytes) {
            PyErr_Format(PyExc_ValueError, "allocator gave %zd bytes, %lld were asked", v->len,
                         (long long)nbytes);
            Py_DECREF(mem);
            return -1;
        }
        *base = v->buf;
    }
    int rc = PyList_Append(rx->buffers, mem);
    Py_DECREF(mem);
    if (nbytes == 0)
        *base = NULL;
    return rc;
}

static int rx_hook(void *user, cdt_count index, cdt_count len, cdt_kind kind, void **base)
{
    (void)kind;
    receiver *rx = user;
    if (rx_alloc_part(rx, index, len, base) == 0)
        return CDT_SUCCESS;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb != NULL)
        PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    Py_XSETREF(rx->exc, v);
    return ERR_PY_EXCEPTION;
}

/* size the object from the decoder's header and bind: a status */
int rx_prepare(receiver *rx, cdt_sobj *so)
{
    memset(so, 0, sizeof *so);
    so->field_mask = CDT_SOBJ_FIELD_ALLOC;
    so->alloc = rx_hook;
    so->alloc_user = rx;
    int rc = C.cdt_sobj_recv_prepare(so, rx->decoder);
    if (rc == 0) {
        rc = C.cdt_decoder_bind(rx->decoder, so, 1, sobj_type);
        if (rc != 0)
            C.cdt_sobj_release(so);
    }
    return rc;
}

/* raise for a failed receive status (the allocator's exception when it was that) */
PyObject *rx_raise(receiver *rx, int code, const char *what)
{
    if (code == ERR_PY_EXCEPTION && rx->exc != NULL && hook_alloc_error != NULL) {
        PyObject *exc = PyObject_CallFunctionObjArgs(hook_alloc_error, rx->exc, NULL);
        if (exc != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    return raise_what(code, what);
}

PyObject *rx_result(receiver *rx)
{
    PyObject *stream = rx->stream != NULL ? rx->stream : PyBytes_FromStringAndSize(NULL, 0);
    PyObject *bufs = rx->buffers != NULL ? rx->buffers : PyList_New(0);
    rx->stream = rx->buffers = NULL;
    if (stream == NULL || bufs == NULL) {
        Py_XDECREF(stream);
        Py_XDECREF(bufs);
        return NULL;
    }
    PyObject *r = PyTuple_Pack(2, stream, bufs);
    Py_DECREF(stream);
    Py_DECREF(bufs);
    return r;
}

static PyObject *limits_text(cdt_count max_bytes, cdt_count max_regions)
{
    if (max_bytes >= 0 && max_regions >= 0)
        return PyUnicode_FromFormat("max_bytes=%lld and max_regions=%lld", (long long)max_bytes,
                                    (long long)max_regions);
    if (max_bytes >= 0)
        return PyUnicode_FromFormat("max_bytes=%lld", (long long)max_bytes);
    return PyUnicode_FromFormat("max_regions=%lld", (long long)max_regions);
}

/* a validated header over a limit: raise LimitError naming it (returns NULL), or 0 if none */
static int over_limits(const cdt_frame_info *info, cdt_count max_bytes, cdt_count max_regions)
{
    if (max_bytes >= 0 && info->frame_size > max_bytes) {
        raise_fmt(CDT_ERR_LIMIT, "the frame announces %lld bytes, max_bytes is %lld",
                  (long long)info->frame_size, (long long)max_bytes);
        return 1;
    }
    if (max_regions >= 0 && info->region_count > max_regions) {
        raise_fmt(CDT_ERR_LIMIT, "the frame announces %lld buffers, max_regions is %lld",
                  (long long)info->region_count, (long long)max_regions);
        return 1;
    }
    return 0;
}

/* a decoder on a complete header, with limits. NULL with an exception set on failure. */
cdt_decoder open_decoder(const void *data, cdt_count n, cdt_count max_bytes, cdt_count max_regions,
                         cdt_frame_info *info)
{
    cdt_decoder_params p;
    memset(&p, 0, sizeof p);
    if (max_bytes >= 0) {
        p.field_mask |= CDT_DECODER_PARAM_MAX_FRAME_BYTES;
        p.max_frame_bytes = max_bytes;
    }
    if (max_regions >= 0) {
        p.field_mask |= CDT_DECODER_PARAM_MAX_REGIONS;
        p.max_regions = max_regions;
    }
    cdt_decoder dec = NULL;
    int rc = C.cdt_decoder_create_advanced(data, n, p.field_mask ? &p : NULL, &dec);
    if (rc == CDT_ERR_LIMIT) {
        PyObject *t = limits_text(max_bytes, max_regions);
        if (t != NULL)
            raise_code(rc, PyUnicode_FromFormat("the frame header announces more than %U", t));
        Py_XDECREF(t);
        return NULL;
    }
    if (rc < 0) {
        raise_what(rc, "cdt_decoder_create_advanced");
        return NULL;
    }
    rc = C.cdt_decoder_info(dec, info);
    if (rc < 0) {
        C.cdt_decoder_free(dec);
        raise_what(rc, "cdt_decoder_info");
        return NULL;
    }
    if (over_limits(info, max_bytes, max_regions)) { /* never allocate past them */
        C.cdt_decoder_free(dec);
        return NULL;
    }
    return dec;
}

int write_nogil(cdt_decoder dec, cdt_count off, const void *src, cdt_count len)
{
    int rc;
    if (len > COPY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS rc = C.cdt_decoder_write(dec, off, src, len);
        Py_END_ALLOW_THREADS
    } else {
        rc = C.cdt_decoder_write(dec, off, src, len);
    }
    return rc;
}

/* decode(data, alloc=None, inplace=False, max_bytes=-1, max_regions=-1) -> (stream, buffers) */
PyObject *ext_decode(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data, *alloc = Py_None;
    int inplace = 0;
    long long max_bytes = -1, max_regions = -1;
    if (!PyArg_ParseTuple(args, "O|OpLL", &data, &alloc, &inplace, &max_bytes, &max_regions))
        return NULL;
    if (C.cdt_decoder_create_advanced == NULL)
        return not_ready();
    Py_buffer src;
    if (PyObject_GetBuffer(data, &src, inplace ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return NULL;
    const char *p = src.buf;
    cdt_count n = src.len;
    PyObject *result = NULL;
    receiver rx;
    rx_init(&rx, alloc);
    cdt_decoder dec = NULL;
    cdt_sobj so;
    int prepared = 0, rc;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    if (n < CDT_FRAME_FIXED_HEADER_SIZE) {
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "%lld bytes cannot hold a frame header", (long long)n);
        goto done;
    }
    if (max_bytes >= 0 && n > max_bytes) {
        raise_fmt(CDT_ERR_LIMIT, "the data has %lld bytes, max_bytes is %lld", (long long)n,
                  max_bytes);
        goto done;
    }
    dec = open_decoder(p, n, max_bytes, max_regions, &info);
    if (dec == NULL)
        goto done;
    if (info.frame_size > n) { /* check before allocating what the header announces */
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "the header announces %lld bytes, %lld were given",
                  (long long)info.frame_size, (long long)n);
        goto done;
    }
    if (info.frame_size < n) {
        raise_fmt(CDT_ERR_FRAME_MALFORMED, "%lld bytes after the end of the frame",
                  (long long)(n - info.frame_size));
        goto done;
    }
    rx.decoder = dec;
    if (inplace) {
        rx.inplace = p;
        rx.inplace_len = n;
        rx.inplace_owner = PyMemoryView_FromObject(data);
        if (rx.inplace_owner == NULL)
            goto done;
    }
    rc = rx_prepare(&rx, &so);
    if (rc != 0) {
        rx_raise(&rx, rc, "cdt_sobj_recv_prepare");
        goto done;
    }
    prepared = 1;
    if (inplace) {
        /* the regions already lie in data: the decoder checks the header, takes the stream,
         * and checks the padding between the parts; the regions are only marked done */
        cdt_count pos = info.header_size + info.packed_size;
        rc = C.cdt_decoder_write(dec, 0, p, pos);
        for (cdt_count i = 0; rc == 0 && i < info.region_count; i++) {
            cdt_count len = 0, off = 0;
            cdt_kind kind;
            rc = C.cdt_decoder_region_info(dec, i, &len, &kind, &off);
            if (rc == 0 && off > pos)
                rc = C.cdt_decoder_write(dec, pos, p + pos, off - pos);
            if (rc == 0)
                rc = C.cdt_decoder_region_done(dec, i);
            if (off + len > pos)
                pos = off + len;
        }
    } else {
        rc = write_nogil(dec, 0, p, n);
    }
    if (rc == 0)
        rc = C.cdt_decoder_finish(dec);
    if (rc != 0) {
        raise_what(rc, "cdt_decoder_write");
        goto done;
    }
    result = rx_result(&rx);
done:
    if (dec != NULL)
        C.cdt_decoder_free(dec);
    if (prepared)
        C.cdt_sobj_release(&so);
    rx_clear(&rx);
    PyBuffer_Release(&src);
    return result;
}

/* stream_needs_check(stream): whether some byte 0x96 is followed by a length in (bytes after
 * it, 2**63), i.e. whether the stream could hold a BYTEARRAY8 longer than itself (pickle
 * would allocate that length before reading it). */
PyObject *ext_stream_needs_check(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *s = v.buf;
    Py_ssize_t n = v.len;
    int found = 0;
    if (n >= 10) {
        const unsigned char *p = s, *end = s + (n - 8); /* positions 0 .. n - 9 */
        while (!found && p < end && (p = memchr(p, 0x96, (size_t)(end - p))) != NULL) {
            uint64_t len = 0;
            for (int k = 7; k >= 0; k--)
                len = (len << 8) | p[1 + k];
            uint64_t after = (uint64_t)(n - 9 - (p - s));
            if (len > after && len < ((uint64_t)1 << 63))
                found = 1;
            p++;
        }
    }
    PyBuffer_Release(&v);
    return PyBool_FromLong(found);
}
