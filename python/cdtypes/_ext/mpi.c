#include "ext.h"

/* ---- MPI: a head message plus one message of the large buffers ---------------------------
 *
 * head = prefix (16 bytes: magic "CDT2", u32 object id, u64 threshold) + the frame's bytes
 * without the regions of at least `threshold` bytes; those regions travel together as one more
 * message, in frame order (cdtypes/mpi.py sends it). threshold 0: every region travels in the
 * head. */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get_u64(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

static int separate(cdt_count len, cdt_count threshold)
{
    return threshold > 0 && len >= threshold;
}

/* (lengths, addresses) of the parts (Buffers) when there are two or more, for the datatype
 * that sends or receives them as one message (cdtypes/mpi.py); None otherwise. Built here
 * because a Python loop over 512 parts (len() and MPI.Get_address() of each) cost 90 us per
 * object on each side. */
static PyObject *parts_layout(PyObject *parts)
{
    Py_ssize_t n = PyList_GET_SIZE(parts);
    if (n < 2)
        Py_RETURN_NONE;
    PyObject *lens = PyList_New(n), *addrs = PyList_New(n), *res = NULL;
    for (Py_ssize_t i = 0; lens != NULL && addrs != NULL && i < n; i++) {
        BufferObject *b = (BufferObject *)PyList_GET_ITEM(parts, i);
        PyObject *len = PyLong_FromSsize_t(b->len);
        PyObject *addr = PyLong_FromVoidPtr(b->ptr);
        if (len == NULL || addr == NULL) {
            Py_XDECREF(len);
            Py_XDECREF(addr);
            goto done;
        }
        PyList_SET_ITEM(lens, i, len);
        PyList_SET_ITEM(addrs, i, addr);
    }
    if (lens != NULL && addrs != NULL)
        res = PyTuple_Pack(2, lens, addrs);
done:
    Py_XDECREF(lens);
    Py_XDECREF(addrs);
    return res;
}

/* The buffers of a root's own copy (mpi_pack_own): each pickle buffer copied into memory of
 * its own, as a receive gives it (decode's default allocator), so that the copy shares nothing
 * with the caller's object; None when there is none. */
static PyObject *own_buffers(FrameObject *f)
{
    Py_ssize_t n = (Py_ssize_t)f->out.so.nbuffers;
    if (n == 0)
        Py_RETURN_NONE;
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list != NULL && i < n; i++) {
        const cdt_sobj_buffer *sb = &f->out.sbufs[i];
        BufferObject *b = buffer_new_owned((Py_ssize_t)sb->len);
        if (b == NULL) {
            Py_CLEAR(list);
            break;
        }
        if (sb->len > 0)
            memcpy(b->ptr, sb->base, (size_t)sb->len);
        PyList_SET_ITEM(list, i, (PyObject *)b);
    }
    return list;
}

/* mpi_pack and mpi_pack_own: own adds (stream, buffers) for pickle.loads when the head holds
 * the whole object (no part), else (None, None) */
static PyObject *mpi_pack_(PyObject *args, int own)
{
    PyObject *obj;
    unsigned int oid;
    long long threshold;
    if (!PyArg_ParseTuple(args, "OIL", &obj, &oid, &threshold))
        return NULL;
    PyObject *stream = NULL, *own_bufs = NULL;
    PyObject *fo = encode_keep(obj, 5, own ? &stream : NULL);
    if (fo == NULL)
        return NULL;
    FrameObject *f = (FrameObject *)fo;
    PyObject *head = NULL, *parts = NULL, *res = NULL;
    const void *hp;
    cdt_count hlen, nreg;
    int rc = C.cdt_frame_head(f->frame, &hp, &hlen);
    if (rc == 0)
        rc = C.cdt_frame_region_count(f->frame, &nreg);
    if (rc < 0) {
        raise_what(rc, "cdt_frame_head");
        goto done;
    }
    cdt_count sep_bytes = 0, nsep = 0;
    for (cdt_count i = 0; i < nreg; i++) {
        cdt_count len, off;
        cdt_kind kind;
        if ((rc = C.cdt_frame_region_info(f->frame, i, &len, &kind, &off)) < 0) {
            raise_what(rc, "cdt_frame_region_info");
            goto done;
        }
        if (separate(len, threshold)) {
            sep_bytes += len;
            nsep++;
        }
    }
    head = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(MPI_PREFIX + f->size - sep_bytes));
    parts = PyList_New((Py_ssize_t)nsep);
    if (head == NULL || parts == NULL)
        goto done;
    unsigned char *h = (unsigned char *)PyByteArray_AS_STRING(head);
    put_u32(h, MPI_MAGIC);
    put_u32(h + 4, oid);
    put_u64(h + 8, (uint64_t)(threshold > 0 ? threshold : 0));
    unsigned char *w = h + MPI_PREFIX;
    cdt_count pos = 0; /* frame offset copied up to */
    Py_ssize_t k = 0;
    for (cdt_count i = 0; i <= nreg; i++) {
        cdt_count len = 0, off = f->size;
        cdt_kind kind;
        if (i < nreg)
            C.cdt_frame_region_info(f->frame, i, &len, &kind, &off);
        if (i < nreg && !separate(len, threshold))
            continue; /* gathered with what lies before the next separate region */
        if (off > pos) {
            if (frame_gather_(f, pos, w, off - pos) < 0)
                goto done;
            w += off - pos;
        }
        pos = off + len;
        if (i == nreg)
            break;
        cdt_iov iov;
        cdt_count got = 0;
        rc = C.cdt_frame_region_iov(f->frame, i, 0, 1, &iov, &got);
        if (rc < 0 || got != 1) {
            raise_what(rc < 0 ? rc : CDT_ERR_UNSUPPORTED, "cdt_frame_region_iov");
            goto done;
        }
        PyObject *b = buffer_new_window(iov.base, (Py_ssize_t)iov.len, 1, fo);
        if (b == NULL)
            goto done;
        PyList_SET_ITEM(parts, k++, b);
    }
    PyObject *layout = parts_layout(parts);
    if (layout != NULL && !own) {
        res = PyTuple_Pack(4, fo, head, parts, layout);
    } else if (layout != NULL) {
        if (nsep > 0) { /* the root's own copy is made elsewhere (_mpi_coll_call.local_copy) */
            Py_SETREF(stream, Py_NewRef(Py_None));
            own_bufs = Py_NewRef(Py_None);
        } else {
            own_bufs = own_buffers(f);
        }
        if (own_bufs != NULL)
            res = PyTuple_Pack(6, fo, head, parts, layout, stream, own_bufs);
        /* the head, the stream and the buffers are copies: nothing reads the frame any more,
         * so it goes closed and the caller has no close call to make (as cffi's) */
        if (res != NULL && nsep == 0)
            frame_close_(f);
    }
    Py_XDECREF(layout);
done:
    if (res == NULL)
        frame_close_(f);
    Py_DECREF(fo);
    Py_XDECREF(head);
    Py_XDECREF(parts);
    Py_XDECREF(stream);
    Py_XDECREF(own_bufs);
    return res;
}

/* mpi_pack(obj, oid, threshold) -> (frame, head bytearray, [read-only Buffer per part],
 * layout: parts_layout) */
PyObject *ext_mpi_pack(PyObject *self, PyObject *args)
{
    (void)self;
    return mpi_pack_(args, 0);
}

/* mpi_pack_own(obj, oid, threshold) -> mpi_pack's four + (stream, buffers): the root of a
 * collective that sends its object and keeps a copy (docs/MPI.md §14.5, the cost) unpickles
 * the copy with pickle.loads(stream, buffers=buffers) from the stream it pickled, rather than
 * decoding its own head again (1 us of a 20 us bcast). The stream is the bytes object the
 * frame's head was copied from, the buffers (None: none) fresh copies of the pickle buffers,
 * and the frame is returned closed (closing it again does nothing). (None, None) when the
 * object has parts: its head does not hold it whole, and the frame is open. */
PyObject *ext_mpi_pack_own(PyObject *self, PyObject *args)
{
    (void)self;
    return mpi_pack_(args, 1);
}

/* parse the prefix and open the decoder on the head's frame header */
static int mpi_open(const unsigned char *p, Py_ssize_t n, cdt_count max_bytes,
                    cdt_count max_regions, uint32_t *oid, cdt_count *threshold, cdt_decoder *dec,
                    cdt_frame_info *info)
{
    if (n < MPI_PREFIX || (uint32_t)get_u64(p, 4) != MPI_MAGIC) {
        raise_fmt(CDT_ERR_FRAME_MAGIC, "not a cdtypes.mpi message (%zd bytes)", n);
        return -1;
    }
    *oid = (uint32_t)get_u64(p + 4, 4);
    uint64_t t = get_u64(p + 8, 8);
    *threshold = t > (uint64_t)INT64_MAX ? INT64_MAX : (cdt_count)t;
    if (n - MPI_PREFIX < CDT_FRAME_FIXED_HEADER_SIZE) {
        raise_fmt(CDT_ERR_FRAME_TRUNCATED, "%zd bytes cannot hold a frame header", n - MPI_PREFIX);
        return -1;
    }
    *dec = open_decoder(p + MPI_PREFIX, n - MPI_PREFIX, max_bytes, max_regions, info);
    return *dec == NULL ? -1 : 0;
}

/* mpi_parts(head) -> (oid, [byte length of each separate part]): what to drain */
PyObject *ext_mpi_parts(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t oid;
    cdt_count threshold;
    cdt_decoder dec = NULL;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    PyObject *lens = NULL, *res = NULL;
    if (mpi_open(v.buf, v.len, -1, -1, &oid, &threshold, &dec, &info) < 0)
        goto done;
    lens = PyList_New(0);
    for (cdt_count i = 0; lens != NULL && i < info.region_count; i++) {
        cdt_count len, off;
        cdt_kind kind;
        if (C.cdt_decoder_region_info(dec, i, &len, &kind, &off) == 0 && separate(len, threshold)) {
            PyObject *x = PyLong_FromLongLong(len);
            if (x == NULL || PyList_Append(lens, x) < 0)
                Py_CLEAR(lens);
            Py_XDECREF(x);
        }
    }
    if (lens != NULL)
        res = Py_BuildValue("(IO)", oid, lens);
done:
    if (dec != NULL)
        C.cdt_decoder_free(dec);
    Py_XDECREF(lens);
    PyBuffer_Release(&v);
    return res;
}

/* An object whose head message arrived: the separate parts' destinations, then finish(). */
typedef struct {
    PyObject_HEAD receiver rx;
    cdt_decoder dec;
    cdt_sobj so;
    int prepared;
    PyObject *sep; /* list of region indices received separately */
} IncomingObject;

static void incoming_free_(IncomingObject *in)
{
    if (in->dec != NULL)
        C.cdt_decoder_free(in->dec);
    in->dec = NULL;
    if (in->prepared)
        C.cdt_sobj_release(&in->so);
    in->prepared = 0;
    rx_unpin(&in->rx);
}

static void incoming_dealloc(PyObject *self)
{
    IncomingObject *in = (IncomingObject *)self;
    incoming_free_(in);
    rx_clear(&in->rx);
    Py_XDECREF(in->sep);
    Py_TYPE(self)->tp_free(self);
}

/* finish(): every separate part arrived -> (stream, buffers) */
static PyObject *incoming_finish(PyObject *self, PyObject *unused)
{
    (void)unused;
    IncomingObject *in = (IncomingObject *)self;
    if (in->dec == NULL) {
        PyErr_SetString(PyExc_ValueError, "the object was finished already");
        return NULL;
    }
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(in->sep); k++)
        rc = C.cdt_decoder_region_done(in->dec, PyLong_AsLongLong(PyList_GET_ITEM(in->sep, k)));
    if (rc == 0)
        rc = C.cdt_decoder_finish(in->dec);
    incoming_free_(in);
    if (rc != 0) {
        Py_CLEAR(in->rx.stream);
        Py_CLEAR(in->rx.buffers);
        return raise_what(rc, "cdt_decoder_finish");
    }
    return rx_result(&in->rx);
}

/* finish_plain(): finish() and stream_plain(stream, len(buffers)) in one call ->
 * (stream, buffers, plain): a collective receiver's early answer tests it (docs/MPI.md §14.5) */
static PyObject *incoming_finish_plain(PyObject *self, PyObject *unused)
{
    PyObject *res = incoming_finish(self, unused);
    if (res == NULL)
        return NULL;
    PyObject *stream = PyTuple_GET_ITEM(res, 0), *buffers = PyTuple_GET_ITEM(res, 1);
    int plain = PyList_Check(buffers) && ext_plain(stream, PyList_GET_SIZE(buffers));
    PyObject *out = PyTuple_Pack(3, stream, buffers, plain ? Py_True : Py_False);
    Py_DECREF(res);
    return out;
}

static PyMethodDef incoming_methods[] = {
    {"finish", incoming_finish, METH_NOARGS,
     "Every separate part arrived: check the frame and give (stream, buffers)."},
    {"finish_plain", incoming_finish_plain, METH_NOARGS,
     "finish() and stream_plain(stream, len(buffers)) in one call -> (stream, buffers, "
     "plain)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject IncomingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cdtypes._ext.MpiIncoming",
    .tp_basicsize = sizeof(IncomingObject),
    .tp_dealloc = incoming_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An object whose head message arrived (cdtypes.mpi).",
    .tp_methods = incoming_methods,
};

/* mpi_unpack(head, alloc, max_bytes, max_regions) -> (incoming, oid, [writable Buffer per
 * separate part], layout: parts_layout) */
PyObject *ext_mpi_unpack(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data, *alloc;
    long long max_bytes, max_regions;
    if (!PyArg_ParseTuple(args, "OOLL", &data, &alloc, &max_bytes, &max_regions))
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = v.buf;
    PyObject *res = NULL, *dests = NULL;
    IncomingObject *in = PyObject_New(IncomingObject, &IncomingType);
    if (in == NULL) {
        PyBuffer_Release(&v);
        return NULL;
    }
    rx_init(&in->rx, alloc);
    in->dec = NULL;
    in->prepared = 0;
    in->sep = PyList_New(0);
    uint32_t oid;
    cdt_count threshold;
    cdt_frame_info info = {.field_mask = CDT_FRAME_INFO_ALL};
    if (in->sep == NULL ||
        mpi_open(p, v.len, max_bytes, max_regions, &oid, &threshold, &in->dec, &info) < 0)
        goto done;
    const unsigned char *frame = p + MPI_PREFIX;
    cdt_count n = v.len - MPI_PREFIX, sep_bytes = 0;
    for (cdt_count i = 0; i < info.region_count; i++) {
        cdt_count len, off;
        cdt_kind kind;
        int rc = C.cdt_decoder_region_info(in->dec, i, &len, &kind, &off);
        if (rc < 0) {
            raise_what(rc, "cdt_decoder_region_info");
            goto done;
        }
        if (separate(len, threshold)) {
            sep_bytes += len;
            PyObject *x = PyLong_FromLongLong(i);
            if (x == NULL || PyList_Append(in->sep, x) < 0) {
                Py_XDECREF(x);
                goto done;
            }
            Py_DECREF(x);
        }
    }
    if (info.frame_size - sep_bytes != n) {
        raise_fmt(n < info.frame_size - sep_bytes ? CDT_ERR_FRAME_TRUNCATED
                                                  : CDT_ERR_FRAME_MALFORMED,
                  "the head message has %lld frame bytes, its header announces %lld", (long long)n,
                  (long long)(info.frame_size - sep_bytes));
        goto done;
    }
    in->rx.decoder = in->dec;
    int rc = rx_prepare(&in->rx, &in->so);
    if (rc != 0) {
        rx_raise(&in->rx, rc, "cdt_sobj_recv_prepare");
        goto done;
    }
    in->prepared = 1;
    dests = PyList_New(0);
    if (dests == NULL)
        goto done;
    /* deliver the head's bytes at their frame offsets; name where the separate parts go */
    cdt_count pos = 0, hpos = 0;
    for (cdt_count i = 0; i <= info.region_count; i++) {
        cdt_count len = 0, off = info.frame_size;
        cdt_kind kind;
        if (i < info.region_count)
            C.cdt_decoder_region_info(in->dec, i, &len, &kind, &off);
        if (i < info.region_count && !separate(len, threshold))
            continue;
        if (off > pos) {
            rc = write_nogil(in->dec, pos, frame + hpos, off - pos);
            if (rc != 0) {
                raise_what(rc, "cdt_decoder_write");
                goto done;
            }
            hpos += off - pos;
        }
        pos = off + len;
        if (i == info.region_count)
            break;
        cdt_iov iov;
        cdt_count got = 0;
        rc = C.cdt_decoder_region_iov(in->dec, i, 0, 1, &iov, &got);
        if (rc < 0 || got != 1) {
            raise_what(rc < 0 ? rc : CDT_ERR_UNSUPPORTED, "cdt_decoder_region_iov");
            goto done;
        }
        /* the window keeps its memory valid: a Buffer by a reference, an allocator's object
         * by an export (a memoryview: a bytearray cannot be resized under it once the
         * receive's own export is released) */
        PyObject *mem = PyList_GET_ITEM(in->rx.buffers, (Py_ssize_t)i);
        PyObject *owner =
            Py_TYPE(mem) == &BufferType ? Py_NewRef(mem) : PyMemoryView_FromObject(mem);
        PyObject *b =
            owner != NULL ? buffer_new_window(iov.base, (Py_ssize_t)iov.len, 0, owner) : NULL;
        Py_XDECREF(owner);
        if (b == NULL || PyList_Append(dests, b) < 0) {
            Py_XDECREF(b);
            goto done;
        }
        Py_DECREF(b);
    }
    PyObject *layout = parts_layout(dests);
    if (layout != NULL)
        res = Py_BuildValue("(OIOO)", (PyObject *)in, oid, dests, layout);
    Py_XDECREF(layout);
done:
    Py_XDECREF(dests);
    Py_DECREF(in);
    PyBuffer_Release(&v);
    return res;
}
