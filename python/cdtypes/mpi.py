"""One MPI message per Python object, over mpi4py.

mpi4py's pkl5 sends an object as N + 2 messages (a header with the lengths, the pickle stream,
one message per out-of-band buffer) and must keep them together. Here the frame already carries
every length in its header, so the whole object is ONE message: the frame's pieces (head and the
NumPy arrays' own memory) are described by an MPI hindexed datatype over absolute addresses
(MPI.BOTTOM), so MPI reads them where they lie - nothing is gathered on the send side.

The receiver matches the message with Mprobe, allocates one aligned buffer of the announced size,
receives into it and rebuilds the object; NumPy arrays are views of that buffer (no further copy).

    from cdtypes import mpi
    mpi.send(obj, dest=1, tag=7)            # rank 0
    obj = mpi.recv(source=0, tag=7)         # rank 1

SECURITY: recv rebuilds the object with pickle, which runs code the sender chose. From ranks you
do not trust, receive with allowed=True and max_bytes= / max_regions= (docs/SECURITY.md).
"""

from mpi4py import MPI

from ._core import Limits, default_alloc, dumps, loads

__all__ = ["send", "isend", "recv", "Request", "frame_datatype"]

_MAX_BLOCK = 1 << 30  # MPI block lengths are C ints: split larger pieces
# frames up to this size are gathered (a copy of a few KiB costs less than building an MPI
# datatype); larger ones go out in place through an hindexed datatype
GATHER_BELOW = 16 * 1024


def frame_datatype(frame):
    """A committed MPI datatype that, used with MPI.BOTTOM and count 1, is the frame's bytes in
    order, read from where they lie. Free it with .Free() after the send completes."""
    lens, disps = [], []
    for addr, n in frame.iov_raw():
        while n > 0:
            k = min(n, _MAX_BLOCK)
            lens.append(k)
            disps.append(addr)
            addr += k
            n -= k
    return MPI.BYTE.Create_hindexed(lens, disps).Commit()


class Request:
    """A pending isend: keeps the frame (or gathered buffer) and the datatype alive until
    wait() (or test() is true); usable as a context manager (waits on exit)."""

    def __init__(self, req, frame, datatype=None, buf=None):
        self._req, self._frame, self._dt, self._buf = req, frame, datatype, buf
        self._pending = True

    def _done(self):
        if self._pending:
            self._pending = False
            if self._dt is not None:
                self._dt.Free()
            if self._frame is not None:
                self._frame.close()
            self._frame = self._dt = self._buf = None

    def wait(self):
        if self._pending:
            self._req.Wait()
            self._done()

    def test(self):
        if self._pending and self._req.Test():
            self._done()
        return not self._pending

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.wait()


def isend(obj, dest, tag=0, comm=None, gather=None):
    """Start sending ``obj`` as one message; returns a Request (wait() before modifying the
    object's arrays). gather=True copies the frame into one contiguous buffer first, False
    sends the pieces in place, None (default) gathers frames below GATHER_BELOW bytes only.
    The message is the same either way."""
    comm = comm or MPI.COMM_WORLD
    frame = dumps(obj)
    dt = buf = None
    try:
        if gather or (gather is None and frame.size < GATHER_BELOW):
            buf = default_alloc(frame.size)
            frame.gather_into(buf)
            frame.close()
            frame = None
            req = comm.Isend([buf, MPI.BYTE], dest, tag)
        else:
            dt = frame_datatype(frame)
            req = comm.Isend([MPI.BOTTOM, 1, dt], dest, tag)
    except BaseException:
        if dt is not None:
            dt.Free()
        if frame is not None:
            frame.close()
        raise
    return Request(req, frame, dt, buf)


def send(obj, dest, tag=0, comm=None, gather=None):
    """Send ``obj`` to ``dest`` as one MPI message (blocking, like MPI_Send)."""
    isend(obj, dest, tag, comm, gather).wait()


def recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, comm=None, status=None, *, max_bytes=None,
         max_regions=None, allowed=None):
    """Receive one object sent by send/isend. Arrays in the object are writable views of the
    single buffer the message was received into.

    WARNING: without ``allowed`` the object is rebuilt by pickle, which runs code the sender
    chose: receive only from ranks you trust. For other peers: ``max_bytes`` refuses
    (LimitError) a message larger than that from its probed size before the receive buffer is
    allocated (the message is consumed by a truncated receive); ``max_regions`` refuses a frame
    with more buffers from its header; ``allowed`` (True, or a cdtypes.Restricted) unpickles
    with an allow-list of globals (ForbiddenError otherwise), as in cdtypes.loads."""
    comm = comm or MPI.COMM_WORLD
    limits = Limits(max_bytes, max_regions)
    st = status if status is not None else MPI.Status()
    msg = comm.Mprobe(source, tag, st)
    nbytes = st.Get_count(MPI.BYTE)
    if limits.max_bytes is not None and nbytes > limits.max_bytes:
        _discard(msg)
        limits.check_size(nbytes)
    buf = default_alloc(nbytes)
    msg.Recv([buf, nbytes, MPI.BYTE], st)
    return loads(buf, inplace=True, max_bytes=max_bytes, max_regions=max_regions, allowed=allowed)


def _discard(msg):
    """Consume a matched message without receiving its bytes (a zero-byte receive, which MPI
    completes with a truncation error)."""
    try:
        msg.Recv([bytearray(1), 0, MPI.BYTE])
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_TRUNCATE:
            raise
