"""Received buffers and windows on a frame's memory (as _ext/buffer.c), and the frame memory
that counts its windows."""
import itertools
import sys

from .._cffi_ext import ffi, lib

# receive memory: uninitialised, 64-byte aligned, reused by size (cdtpy_alloc / cdtpy_free)
_new = ffi.new_allocator(lib.cdtpy_alloc, lib.cdtpy_free, should_clear_after_alloc=False)
Buffer = ffi.buffer  # the type of a received out-of-band buffer (buffer protocol, writable)

_ALIGN = 64  # as cdtpy_alloc's blocks
_PYPY = sys.implementation.name == "pypy"


def gc_alloc():
    """PyPy, once mpi4py is imported (cdtypes.mpi): the allocator of cdtypes.mpi's receive
    buffers, else None. It gives ``nbytes`` writable bytes on a 64-byte boundary of an mpi4py
    buffer (MPI.buffer.allocate: allocated in C, uninitialised; pkl5 receives into the same).
    An array rebuilt on one holds it by a reference count (both are cpyext objects), so that it
    is freed when the collector drops the array, young or old, and its size starts no
    collection. Memory from cdtpy_alloc is freed only by ffi.gc destructors, which PyPy runs
    after a major collection (220 ms once NumPy is imported), and the size told with it starts
    more of them (bench/results/framework_findings.md)."""
    mpi = sys.modules.get("mpi4py.MPI") if _PYPY else None
    if mpi is None:
        return None
    allocate = mpi.buffer.allocate

    def alloc(nbytes):
        raw = allocate(nbytes + _ALIGN)
        with ffi.from_buffer(raw) as c:
            skip = -int(ffi.cast("uintptr_t", c)) % _ALIGN
        # a slice of an mpi4py buffer is one too (ffi.from_buffer on PyPy refuses to write
        # through a memoryview of it)
        return raw[skip:skip + nbytes]

    return alloc


def _writable(obj):
    """ffi.from_buffer(obj) for writing: BufferError for a read-only object on every
    interpreter, as the C API's PyObject_GetBuffer(PyBUF_WRITABLE) raises."""
    try:
        return ffi.from_buffer(obj, require_writable=True)
    except TypeError:
        if memoryview(obj).readonly:  # TypeError still for objects without the buffer protocol
            raise BufferError("Object is not writable.") from None
        raise


def _window(ptr, n, owner, readonly=True):
    """A buffer of n bytes at ptr that keeps ``owner`` alive (read-only: a memoryview); a
    _FrameMemory owner counts it among its views until it is collected."""
    if n == 0:
        keep = ffi.new("char[]", 1)
    elif type(owner) is _FrameMemory:
        token = owner.view_made()
        keep = ffi.gc(ffi.cast("char *", ptr), lambda _p, m=owner, t=token: m.view_gone(t))
    else:
        keep = ffi.gc(ffi.cast("char *", ptr), lambda _p, _o=owner: None)
    buf = ffi.buffer(keep, n)
    return memoryview(buf).toreadonly() if readonly else buf


_view_tokens = itertools.count()  # next() is atomic: no lock


class _FrameMemory:
    """A Frame's memory (the encoded frame, and the buffers it references), which outlives
    close() while windows on it are alive (head, iov(), mpi_pack's parts: _window): close()
    frees it when no view is left, at once or when the last view is collected, so that a view
    never reads freed memory. As the C extension's Frame, which says why this and not
    mmap.close()'s BufferError. Views come and go in any thread (a view goes when the collector
    runs its ffi.gc destructor), hence a set of tokens and a box taken by one atomic pop instead
    of counters."""

    __slots__ = ("box", "views", "closed")

    def __init__(self, h):
        self.box = [h]  # the ffi.gc'd frame handle until freed
        self.views = set()
        self.closed = False

    def view_made(self):
        token = next(_view_tokens)
        self.views.add(token)
        return token

    def view_gone(self, token):
        self.views.discard(token)
        if self.closed and not self.views:
            self._free()

    def close(self):
        self.closed = True
        if not self.views:
            self._free()

    def _free(self):
        try:
            h = self.box.pop()
        except IndexError:  # freed already (close and the last view raced)
            return
        ffi.release(h)
