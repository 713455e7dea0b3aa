"""mpi4py.util.pkl5's API on cdtypes.mpi's protocol: Comm, Intracomm, Intercomm (subclasses of
mpi4py's communicators, as pkl5's are), Request and Message, with pkl5's methods, arguments,
return values, statuses and PROC_NULL behaviour. A program switches with
``from cdtypes.mpi import Intracomm`` in place of ``from mpi4py.util.pkl5 import Intracomm``.

Every object still travels as cdtypes.mpi sends it (docs/MPI.md: one head message on the
communicator under the user's tag, its large buffers as one parts message on the attached
duplicate), so a pkl5 Request is the tuple of those one or two MPI requests and a pkl5 Message
holds the one matched head. The collectives are in _mpi_coll.py (docs/MPI.md §14).

Differences from pkl5 (docs/PYTHON.md, "Migrating from mpi4py.util.pkl5"): ``buf`` of recv and
sendrecv is accepted and ignored (cdtypes allocates every buffer from the object's header);
irecv raises RuntimeError as pkl5's does (mprobe().irecv() and cdtypes.mpi.irecv work)."""

import atexit
import time

from mpi4py import MPI

from . import mpi as _m
from ._backend import impl as _b
from ._mpi_parts import _SLEEP_MAX, _SLEEP_MIN, _SPIN
from . import _mpi_coll as _coll  # the module: importing _mpi_coll first works too

ANY_SOURCE, ANY_TAG, PROC_NULL = MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.PROC_NULL
_BYTE = MPI.BYTE


def _nothing():  # the empty message pkl5 sends to and receives from PROC_NULL
    return [None, 0, _BYTE]


def _isend(comm, post, obj, dest, tag):
    """Post ``obj``'s head and parts messages with ``post`` (MPI.Comm.Isend, Ibsend or
    Issend: both messages in the caller's mode) -> Request; its frame lives until the sends
    completed (docs/MPI.md §6)."""
    if dest == PROC_NULL:
        return Request(post(comm, _nothing(), dest, tag))
    _m._thread_check()
    if _FREED_IN_FLIGHT:
        _reap()
    frame, head, parts, pc, oid = _m._pack(obj, comm, True)
    try:
        if not parts[0]:
            reqs = [post(comm, [head, _BYTE], dest, tag)]
        elif pc is not None:
            reqs = [post(comm, [head, _BYTE], dest, tag),
                    _m._post_parts(lambda msg, peer, t: post(pc, msg, peer, t),
                                   parts, dest, oid)]
        else:  # not attached: the parts in line, right after the head (docs/MPI.md §2.3)
            with _m._SEND_LOCK:
                reqs = [post(comm, [head, _BYTE], dest, tag),
                        _m._post_parts(lambda msg, peer, _: post(comm, msg, peer, tag),
                                       parts, dest, oid)]
    except BaseException:
        frame.close()
        raise
    request = Request(reqs)
    request._frame = frame
    return request


class _Incoming:
    """One object whose head message was matched and whose head receive is (or was) posted:
    after that receive completed, the parts message (PartsReceive) and the rebuild. Trusted:
    pkl5's API has no limits (docs/MPI.md §7.2, §7.3)."""

    def __init__(self, comm, head, source, tag, inline=None):
        self.comm, self.head, self.source, self.tag = comm, head, source, tag
        self.inline = inline  # (message, status) of parts matched in line (docs/MPI.md §2.3)
        self._started = self._done = False
        self._inc = self._parts = self._error = None
        self._nbytes = 0

    def step(self, block):
        """The head arrived: True once the object was received (or its receive failed)."""
        if self._done:
            return True
        if not self._started:
            self._started = True
            try:
                self._inc, self._parts, self._error = _m._parse(
                    self.comm, self.head, self.source, None, None, self.inline)
                self.inline = None
            except BaseException as e:
                self._error = e
            if self._parts is not None:
                self._nbytes = self._parts.nbytes
        return _m._complete_parts(self, block)

    def fill(self, status):
        """status as pkl5 leaves it: the head's source and tag, the object's bytes as the
        element count (the frame: header, pickle stream and every buffer)."""
        status.source, status.tag, status.error = self.source, self.tag, MPI.SUCCESS
        status.Set_elements(_BYTE, len(self.head) - _m._PREFIX + self._nbytes)

    def result(self):
        if self._error is not None:
            raise self._error
        obj = _m._rebuild(self._inc, None, None, True)  # pickle's errors as pkl5 raises them
        self._inc = None
        return obj


# (requests, frame) of sends freed while in progress (Request.Free): the MPI requests are kept
# (MPI_Request_free would leave no way to learn when MPI stops reading the frame) and tested at
# every later send of the pkl5 API; a completed one releases its frame
_FREED_IN_FLIGHT = []


def _reap():
    """Release the frames of freed sends that MPI completed since (a non-blocking test of
    each)."""
    keep = []
    for reqs, frame in _FREED_IN_FLIGHT:
        if MPI.Request.Testall(reqs):
            frame.close()
        else:
            keep.append((reqs, frame))
    _FREED_IN_FLIGHT[:] = keep


@atexit.register
def _free_at_exit():  # before mpi4py's MPI_Finalize (registered earlier, so run later)
    for reqs, _ in _FREED_IN_FLIGHT:
        if not MPI.Is_finalized():
            for req in reqs:
                req.Free()
    _FREED_IN_FLIGHT.clear()


class Request(tuple):
    """pkl5's Request: the tuple of the MPI requests of one object (its head and, for large
    buffers, its parts message). A receive (Message.irecv) holds the head's receive; wait()
    and a true test() return the object once, None after that and for sends."""

    def __new__(cls, request=None):
        if request is None:
            request = (MPI.REQUEST_NULL,)
        if isinstance(request, MPI.Request):
            request = (request,)
        return super().__new__(cls, request)

    def __eq__(self, other):
        if isinstance(other, Request):
            return tuple(self) == tuple(other)
        if isinstance(other, MPI.Request):
            if self.__dict__.get("_freed"):
                return other == MPI.REQUEST_NULL
            return all(req == other for req in self)
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = tuple.__hash__

    def __bool__(self):
        return not self.__dict__.get("_freed") and any(req for req in self)

    def _free_send(self):
        """A send still in progress that is freed keeps its MPI requests and its frame in
        _FREED_IN_FLIGHT until MPI completed it (_reap); the request reads as freed (false,
        equal to REQUEST_NULL) from now on. -> False when the requests are to be freed now
        (a receive), else True (a send that completed is completed by the test: its requests
        are null and its frame released here)."""
        frame = self.__dict__.pop("_frame", None)
        if frame is None:
            return False
        if MPI.Request.Testall(list(self)):
            frame.close()
            return True
        _FREED_IN_FLIGHT.append((list(self), frame))
        self._freed = True
        return True

    def Free(self):  # noqa: N802 (mpi4py's name)
        """Free the request (MPI_Request_free: a send goes on; its frame is released once
        MPI completed it)."""
        if not self._free_send():
            for req in self:
                req.Free()

    def free(self):
        """Free the request (mpi4py's ``free``: a send goes on; its frame is released once
        MPI completed it)."""
        if not self._free_send():
            for req in self:
                req.free()

    def cancel(self):
        """Cancel every message of the object (docs/MPI.md §9, cancellation)."""
        for req in self:
            req.Cancel()

    def get_status(self, status=None):
        """Non-destructive test: True once every message of the object completed."""
        if self.__dict__.get("_freed"):
            return True
        statuses = [status] + [None] * (len(self) - 1)
        if not all(map(MPI.Request.Get_status, self, statuses)):
            return False
        incoming = self.__dict__.get("_incoming")
        if incoming is None:
            return True
        if not incoming.step(False):
            return False
        if status is not None:
            incoming.fill(status)
        return True

    def _complete(self, block, status):
        """(flag, obj): Waitall (block) or Testall, then the parts of a receive."""
        if self.__dict__.get("_freed"):
            return True, None
        statuses = None if status is None else [status] + [MPI.Status() for _ in self[1:]]
        if block:
            MPI.Request.Waitall(self, statuses)
        elif not MPI.Request.Testall(self, statuses):
            return False, None
        incoming = self.__dict__.get("_incoming")
        if incoming is None:
            frame = self.__dict__.pop("_frame", None)
            if frame is not None:
                frame.close()
            return True, None
        if not incoming.step(block):
            return False, None
        del self._incoming
        if status is not None:
            incoming.fill(status)
        return True, incoming.result()

    def test(self, status=None):
        """Non-blocking test -> (flag, obj): (True, the object) once a receive completed
        (its parts received and the object rebuilt), (True, None) for a send or a request
        already completed, (False, None) while in progress."""
        return self._complete(False, status)

    def wait(self, status=None):
        """Wait for the object -> the object for a receive (once), None for a send."""
        return self._complete(True, status)[1]

    @staticmethod
    def _statuses(requests, statuses):
        if isinstance(statuses, list):
            statuses.extend(MPI.Status() for _ in range(len(requests) - len(statuses)))
        if statuses is None:
            return [None] * len(requests)
        return list(statuses) + [None] * (len(requests) - len(statuses))

    @classmethod
    def get_status_all(cls, requests, statuses=None):
        """Non-destructive test of a list of requests: True once every one completed."""
        return all(map(Request.get_status, requests, cls._statuses(requests, statuses)))

    @staticmethod
    def _progress(requests):
        """One non-blocking step of every request (each one: a receive posts its parts
        receive only here, and a send among them may wait for the peer's) -> all done."""
        return all([req.get_status() for req in requests])

    @classmethod
    def testall(cls, requests, statuses=None):
        """Non-blocking test of a list of requests -> (flag, objs): (True, a list of
        wait()'s results) once every request completed, (False, None) otherwise. Every request
        is progressed in turn."""
        sts = cls._statuses(requests, statuses)
        if not cls._progress(requests):
            return False, None
        return True, [req._complete(True, st)[1] for req, st in zip(requests, sts)]

    @classmethod
    def waitall(cls, requests, statuses=None):
        """Wait for every request. With receives among them, every request is progressed in
        turn until all are done (waiting on one send while a receive listed after it has not
        posted its parts receive could wait forever, the peer doing the same)."""
        sts = cls._statuses(requests, statuses)
        if any("_incoming" in req.__dict__ for req in requests):
            spin_end, sleep = time.monotonic() + _SPIN, _SLEEP_MIN
            while not cls._progress(requests):
                if time.monotonic() >= spin_end:
                    time.sleep(sleep)
                    sleep = min(2 * sleep, _SLEEP_MAX)
        return [req._complete(True, st)[1] for req, st in zip(requests, sts)]


class Message(tuple):
    """pkl5's Message: the one matched head message of an object (MESSAGE_NO_PROC from
    PROC_NULL). recv()/irecv() receive the head, then the parts (docs/MPI.md §7, §9)."""

    def __new__(cls, message=None):
        if message is None:
            message = (MPI.MESSAGE_NULL,)
        if isinstance(message, MPI.Message):
            message = (message,)
        return super().__new__(cls, message)

    def __eq__(self, other):
        if isinstance(other, Message):
            return tuple(self) == tuple(other)
        if isinstance(other, MPI.Message):
            return all(msg == other for msg in self)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Message):
            return tuple(self) != tuple(other)
        if isinstance(other, MPI.Message):
            return any(msg != other for msg in self)
        return NotImplemented

    __hash__ = tuple.__hash__

    def __bool__(self):
        return "_matched" in self.__dict__ or any(msg for msg in self)

    def free(self):
        """Drop the matched object without rebuilding it (mpi4py's ``free``): its head was
        received when it was matched; its parts message is consumed unread (docs/MPI.md
        §8.3)."""
        matched = self.__dict__.pop("_matched", None)
        if matched is None:
            for msg in self:
                msg.free()
            return
        comm, head, source, _, inline = matched
        if inline is not None:
            _m._discard(inline[0], inline[1].Get_count(_BYTE))
            return
        parts = _m._drain(comm, head, source)
        if parts is not None:
            parts.wait()

    def _incoming(self):
        """The _Incoming of the matched object (its head received when it was matched), or
        None for a message with no object (MESSAGE_NO_PROC)"""
        matched = self.__dict__.pop("_matched", None)
        if matched is None:
            return None
        return _Incoming(*matched)

    def recv(self, status=None):
        """Receive the matched object (blocking)."""
        incoming = self._incoming()
        if incoming is None:
            self[0].Recv(_nothing(), status)
            return None
        incoming.step(True)
        if status is not None:
            incoming.fill(status)
        return incoming.result()

    def irecv(self):
        """Start receiving the matched object -> Request (wait() returns it). Its head
        arrived when it was matched: the request's MPI request is a generalized request,
        already complete, and the parts are received as it is progressed."""
        incoming = self._incoming()
        if incoming is None:
            return Request(self[0].Irecv(_nothing()))
        done = MPI.Grequest.Start()
        done.Complete()
        request = Request(done)
        request._incoming = incoming
        return request

    @classmethod
    def probe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Match the head of the next object from ``source`` under ``tag`` on ``comm``
        (blocking, MPI_Mprobe) -> Message."""
        return _mprobe(comm, True, source, tag, status)

    @classmethod
    def iprobe(cls, comm, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Match the head of an object if one has arrived (MPI_Improbe) -> Message, or
        None."""
        return _mprobe(comm, False, source, tag, status)


def _mprobe(comm, block, source, tag, status):
    """Match an object's head (Mprobe, or Improbe: None when there is none) and receive it
    -> Message. The status counts the object's bytes (its frame: header, pickle stream and
    every buffer), as pkl5's counts the object's, not the head message's: the head is
    received here to read them."""
    _m._thread_check()
    if status is None:
        status = MPI.Status()
    if comm.Get_attr(_m._KEYVAL) is None and source != PROC_NULL:
        # not attached: parts may follow in line (docs/MPI.md §2.3), matched with the head
        got = _m._match_inline(comm, source, tag, status, block)
        if got is None:
            return None
        head, inline = got
        message = Message(MPI.MESSAGE_NULL)
        message._matched = (comm, head, status.Get_source(), status.Get_tag(), inline)
    else:
        if block:
            msg = MPI.Comm.Mprobe(comm, source, tag, status)
        else:
            msg = MPI.Comm.Improbe(comm, source, tag, status)
            if msg is None:
                return None
        message = Message(msg)
        if msg == MPI.MESSAGE_NO_PROC:
            return message
        head = bytearray(status.Get_count(_BYTE))
        msg.Recv([head, _BYTE])
        message._matched = (comm, head, status.Get_source(), status.Get_tag(), None)
    try:
        nbytes = sum(_b.mpi_parts(head)[1])
    except Exception:  # not a frame: the receive raises; count the head
        nbytes = 0
    status.Set_elements(_BYTE, len(head) - _m._PREFIX + nbytes)
    return message


class Comm(MPI.Comm):
    """pkl5's communicator on cdtypes.mpi's protocol. Dup() attaches the new communicator
    (cdtypes.mpi.attach); Free() frees what cdtypes.mpi made for it."""

    def __new__(cls, comm=None):
        return MPI.Comm.__new__(cls, comm)

    def Dup(self, info=None):  # noqa: N802 (mpi4py's name)
        """Duplicate the communicator (MPI_Comm_dup) and attach the copy
        (cdtypes.mpi.attach: collective), so that its objects' large buffers take the fast
        path."""
        comm = MPI.Comm.Dup(self) if info is None else MPI.Comm.Dup(self, info)
        _m.attach(comm)
        return comm

    def Free(self):  # noqa: N802
        """Free the communicator and the duplicates cdtypes.mpi made for it
        (collective, as MPI_Comm_free)."""
        _coll.release(self)
        MPI.Comm.Free(self)

    def send(self, obj, dest, tag=0):
        """Blocking send in standard mode."""
        if dest == PROC_NULL:
            MPI.Comm.Send(self, _nothing(), dest, tag)
        elif self.Get_attr(_m._KEYVAL) is not None:
            _m.send(obj, dest, tag, self)
        else:  # not attached: large buffers in line (docs/MPI.md §2.3)
            _isend(self, MPI.Comm.Isend, obj, dest, tag).wait()

    def bsend(self, obj, dest, tag=0):
        """Blocking send in buffered mode (both messages of the object buffered)."""
        self.ibsend(obj, dest, tag).wait()

    def ssend(self, obj, dest, tag=0):
        """Blocking send in synchronous mode."""
        self.issend(obj, dest, tag).wait()

    def isend(self, obj, dest, tag=0):
        """Non-blocking send in standard mode -> Request."""
        return _isend(self, MPI.Comm.Isend, obj, dest, tag)

    def ibsend(self, obj, dest, tag=0):
        """Non-blocking send in buffered mode -> Request (both messages of the object
        buffered)."""
        return _isend(self, MPI.Comm.Ibsend, obj, dest, tag)

    def issend(self, obj, dest, tag=0):
        """Non-blocking send in synchronous mode -> Request."""
        return _isend(self, MPI.Comm.Issend, obj, dest, tag)

    def recv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Blocking receive (``buf`` is ignored: every buffer is allocated from the object's
        header)."""
        if source == PROC_NULL:
            MPI.Comm.Recv(self, _nothing(), source, tag, status)
            return None
        return _mprobe(self, True, source, tag, status).recv(status)

    def irecv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG):  # noqa: ARG002
        """Not supported, as in pkl5: use mprobe(...).irecv(), or cdtypes.mpi.irecv."""
        raise RuntimeError("unsupported (as in mpi4py.util.pkl5): use mprobe().irecv(), or "
                           "cdtypes.mpi.irecv")

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None, source=ANY_SOURCE,
                 recvtag=ANY_TAG, status=None):
        """Send and receive (``recvbuf`` is ignored, as in recv)."""
        request = self.isend(sendobj, dest, sendtag)
        obj = self.recv(recvbuf, source, recvtag, status)
        request.wait()
        return obj

    def mprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Match the head of the next object (blocking) -> Message; receive it with
        Message.recv() or Message.irecv()."""
        return _mprobe(self, True, source, tag, status)

    def improbe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        """Match the head of an object if one has arrived -> Message, or None."""
        return _mprobe(self, False, source, tag, status)

    # The collectives (docs/MPI.md §14): pkl5's arguments, and the receive limits of
    # cdtypes.mpi.recv as keywords (every rank that receives applies its own). When any rank
    # fails, every rank raises: that rank's error there, PeerError at the others.

    def bcast(self, obj, root=0, *, max_bytes=None, max_regions=None, allowed=None):
        """Broadcast ``obj`` from ``root`` -> the object, at every rank (a binomial tree; the
        object is packed once and forwarded as received). ``max_bytes``, ``max_regions`` and
        ``allowed`` are the receive limits of cdtypes.mpi.recv; each rank applies its own to
        what it receives. When any rank fails, every rank raises: that rank its own error,
        the others cdtypes.PeerError naming it."""
        return _coll.bcast(self, obj, root, max_bytes, max_regions, allowed)

    def gather(self, sendobj, root=0, *, max_bytes=None, max_regions=None, allowed=None):
        """Gather one object from each rank -> at ``root`` the list of them in rank order, None
        elsewhere. ``max_bytes``, ``max_regions`` and ``allowed`` are the receive limits of
        cdtypes.mpi.recv; each rank applies its own to what it receives. When any rank fails,
        every rank raises: that rank its own error, the others cdtypes.PeerError naming it."""
        return _coll.gather(self, sendobj, root, max_bytes, max_regions, allowed)

    def scatter(self, sendobj, root=0, *, max_bytes=None, max_regions=None, allowed=None):
        """Scatter ``sendobj``, a list of one object per rank at ``root`` (ignored elsewhere) ->
        this rank's object (ValueError for a list of the wrong length). ``max_bytes``,
        ``max_regions`` and ``allowed`` are the receive limits of cdtypes.mpi.recv; each rank
        applies its own to what it receives. When any rank fails, every rank raises: that
        rank its own error, the others cdtypes.PeerError naming it."""
        return _coll.scatter(self, sendobj, root, max_bytes, max_regions, allowed)

    def allgather(self, sendobj, *, max_bytes=None, max_regions=None, allowed=None):
        """Gather one object from each rank at every rank -> the list of them in rank order.
        ``max_bytes``, ``max_regions`` and ``allowed`` are the receive limits of
        cdtypes.mpi.recv; each rank applies its own to what it receives. When any rank fails,
        every rank raises: that rank its own error, the others cdtypes.PeerError naming it."""
        return _coll.allgather(self, sendobj, max_bytes, max_regions, allowed)

    def alltoall(self, sendobj, *, max_bytes=None, max_regions=None, allowed=None):
        """Send ``sendobj[i]`` to rank i -> the list of the objects each rank sent to this one,
        in rank order. ``max_bytes``, ``max_regions`` and ``allowed`` are the receive limits
        of cdtypes.mpi.recv; each rank applies its own to what it receives. When any rank
        fails, every rank raises: that rank its own error, the others cdtypes.PeerError
        naming it."""
        return _coll.alltoall(self, sendobj, max_bytes, max_regions, allowed)


class Intracomm(Comm, MPI.Intracomm):
    """pkl5's Intracomm on cdtypes.mpi's protocol."""


class Intercomm(Comm, MPI.Intercomm):
    """pkl5's Intercomm on cdtypes.mpi's protocol."""
