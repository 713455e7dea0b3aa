"""Received buffers and windows on a frame's memory (as _ext/buffer.c), and the frame memory
that counts its windows."""
import itertools

from .._cffi_ext import ffi, lib

# receive memory: uninitialised, 64-byte aligned, reused by size (cdtpy_alloc / cdtpy_free)
_new = ffi.new_allocator(lib.cdtpy_alloc, lib.cdtpy_free, should_clear_after_alloc=False)
Buffer = ffi.buffer  # the type of a received out-of-band buffer (buffer protocol, writable)


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
