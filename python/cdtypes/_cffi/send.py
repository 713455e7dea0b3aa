"""The send side: an object as a filled cdt_sobj (as _ext/send.c)."""
from .. import _arrays
from .._cffi_ext import ffi, lib
from . import module

_dumps = _arrays.dumps  # pickle.dumps, NumPy arrays through cdtypes._arrays once imported


# ---- send side: an object as a filled cdt_sobj ----------------------------------------------


class _Out:
    """What a frame (or a send) references: the pickle buffers, their exports, the cdt_sobj."""

    __slots__ = ("pbufs", "raws", "views", "so", "sbufs", "stream", "inband")

    def __init__(self, obj, protocol, pickled=None):
        """``pickled``: (stream, PickleBuffers) of obj pickled already (protocol 5)"""
        self.pbufs, self.raws, self.views = [], [], []
        self.stream = self.inband = self.sbufs = None
        if module._sobj_type is None:
            raise RuntimeError("cdtypes' cffi backend was not initialised")
        if protocol < 5:
            raise ValueError("cdtypes needs pickle protocol 5 or later")
        try:
            if pickled is None:
                stream = _dumps(obj, protocol, self.pbufs.append)
            else:
                stream, self.pbufs = pickled
            if type(stream) is not bytes:
                raise TypeError("pickle.dumps did not return bytes")
            self.stream = stream
            so = self.so = ffi.new("cdt_sobj *")
            n = len(self.pbufs)
            if n:
                sb = self.sbufs = ffi.new("cdt_sobj_buffer[]", n)
                for i, pb in enumerate(self.pbufs):
                    # a contiguous byte view (C or Fortran order; BufferError otherwise)
                    raw = pb.raw()
                    self.raws.append(raw)
                    c = ffi.from_buffer(raw)
                    self.views.append(c)
                    b = sb[i]
                    b.base = c
                    b.len = len(c)
                    b.kind = lib.CDT_KIND_BYTE
                so.buffers = sb
            so.nbuffers = n
            self.inband = ffi.from_buffer(stream)
            so.inband = self.inband
            so.inband_len = len(stream)
        except BaseException:
            self.release()
            raise

    def drop_stream(self):
        """The stream was copied into the frame's head."""
        if self.inband is not None:
            ffi.release(self.inband)
        self.inband = self.stream = None

    def release(self):
        """Release this frame's exports and drop the PickleBuffers, never releasing them: one
        the object holds is the caller's (as _ext/send.c says)."""
        self.drop_stream()
        for c in self.views:
            ffi.release(c)
        for m in self.raws:
            m.release()
        self.views, self.raws, self.pbufs = [], [], []
        self.so = self.sbufs = None
