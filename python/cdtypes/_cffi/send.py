"""The send side: an object as a filled cdt_sobj (as _ext/send.c)."""
from .. import _arrays
from .._cffi_ext import ffi, lib
from . import module

_dumps = _arrays.dumps  # pickle.dumps, NumPy arrays through cdtypes._arrays once imported

# A stream of at least _PARTS_MIN_BYTES in 2 to _PARTS_MAX pieces is sent as its pieces
# (cdt_sobj's inband_parts), as the C extension does (_ext/pickler.c says why): a large bytes
# payload goes by reference, not copied into a joined stream first. Fewer, larger pieces
# than that are joined.
_PARTS_MIN_BYTES = 65536
_PARTS_MAX = 64


# ---- send side: an object as a filled cdt_sobj ----------------------------------------------


class _Out:
    """What a frame (or a send) references: the pickle buffers, their exports, the cdt_sobj."""

    __slots__ = ("pbufs", "raws", "views", "so", "sbufs", "stream", "inband", "parts", "iov")

    def __init__(self, obj, protocol, pickled=None):
        """``pickled``: (stream, PickleBuffers) of obj pickled already (protocol 5)"""
        self.pbufs, self.raws, self.views = [], [], []
        self.stream = self.inband = self.sbufs = self.parts = self.iov = None
        if module._sobj_type is None:
            raise RuntimeError("cdtypes' cffi backend was not initialised")
        if protocol < 5:
            raise ValueError("cdtypes needs pickle protocol 5 or later")
        try:
            if pickled is None:
                pieces = _arrays.dump_pieces(obj, protocol, self.pbufs.append)
                total = sum(map(len, pieces))
                if 2 <= len(pieces) <= _PARTS_MAX and total >= _PARTS_MIN_BYTES:
                    self.parts = pieces
                    stream = None
                else:
                    stream = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            else:
                stream, self.pbufs = pickled
            if stream is not None and type(stream) is not bytes:
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
            if self.parts is not None:
                self._set_parts(so)
            else:
                self.inband = ffi.from_buffer(stream)
                so.inband = self.inband
                so.inband_len = len(stream)
        except BaseException:
            self.release()
            raise

    def _set_parts(self, so):
        """The pickler's pieces as the sobj's in-band parts, each exported as it is."""
        n = len(self.parts)
        iov = self.iov = ffi.new("cdt_iov[]", n)
        inband = self.inband = []
        total = 0
        for i, piece in enumerate(self.parts):
            c = ffi.from_buffer(piece)
            inband.append(c)
            iov[i].base = c
            iov[i].len = len(piece)
            total += len(piece)
        so.field_mask |= lib.CDT_SOBJ_FIELD_INBAND_PARTS
        so.inband_parts = iov
        so.inband_nparts = n
        so.inband_len = total

    def drop_stream(self):
        """The stream was copied into the frame's head."""
        if type(self.inband) is list:
            for c in self.inband:
                ffi.release(c)
        elif self.inband is not None:
            ffi.release(self.inband)
        self.inband = self.stream = self.parts = self.iov = None

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
