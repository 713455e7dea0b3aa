"""Python objects over mpi4py: the receiver matches ONE message per object and learns every
length from it. The protocol is specified in docs/MPI.md (normative); the section numbers in
this module's comments are that document's.

The object's frame (header with every length, pickle stream, buffers) is split the way libcdt's
UCX transport splits it: the head message carries a 16-byte prefix (object id, threshold), the
frame header, the pickle stream and the buffers below THRESHOLD bytes; the buffers of at least
THRESHOLD bytes travel together as one more message (the buffer itself when there is one, an
hindexed datatype over their addresses when there are more), read in place on the sender and
received straight into the memory allocated for them, on a duplicate of the communicator under a
tag that is the object's id (so concurrent senders and receivers need no lock, and the parts
never meet a user's receive, ANY_TAG included). The receiver matches the head (Mprobe),
allocates every buffer from its header, posts the one receive of the large buffers and rebuilds
the object: NumPy arrays live in that memory, without a further copy.

The duplicate is made by attach(comm), which is collective over comm: COMM_WORLD is attached when
this module is imported (import it on every rank, as mpi4py itself). A communicator that is not
attached still works: send's objects travel whole in the head message (one copy on each side);
the pkl5 API's parts travel in line on the communicator itself, right after the head, and recv /
irecv accept both (docs/MPI.md §2.3).

Receiver rules (what a receiver checks and how it drains; nothing here changes the wire;
docs/MPI.md §7 and §8 in full):

1. Head (docs/MPI.md §7.2). Its byte count (MPI_Get_count after Mprobe) is what the receiver
   allocates and receives; with max_bytes, a head over max_bytes is refused (LimitError) before
   any buffer is allocated. Its frame bytes must equal the header's frame size less the
   separate regions (shorter: FrameTruncatedError, longer: FrameMalformedError).
2. Parts (§7.3). The parts message is matched on the duplicate under (the head's source, the
   head's object id) with Mprobe/Improbe, and its byte count is compared with the sum of the
   separate regions the head announced BEFORE anything is received into the object's buffers:
   fewer bytes raise FrameTruncatedError, more raise FrameMalformedError, each naming the peer,
   and the message is consumed unread (a zero-byte receive). After the receive the count is
   checked again. So every byte of every buffer of a rebuilt object was written by this
   receive; the receive memory, which is reused from earlier objects (the receive cache), is
   never handed out holding bytes nothing wrote.
3. Bounded waits (§7.3 step 5, §8.2). A receive from an untrusted peer (max_bytes, max_regions
   or allowed given) waits at most PARTS_TIMEOUT seconds, from the match of the head, for the
   parts message to be matched (CdtTimeoutError naming the peer otherwise): the sender posts
   both at once, so only a peer that lies about its parts, or one stalled that long, meets it.
   A trusted receive waits as MPI_Recv would.
4. Drains (§8.3). A receive that fails after its head was matched (limits, a malformed head, a
   count mismatch, the allow-list, alloc raising) drains that object's parts so its sender's
   send completes: at most ONE message under (source, id), consumed unread (zero bytes received
   whatever its size), waited for at most PARTS_TIMEOUT seconds. A head is read for its id only
   up to HEAD_DRAIN_MAX bytes (a longer one is consumed unread and its parts cannot be named).
   A head that cannot be parsed names no parts, so nothing is drained for it.
5. Stale parts (§8.4). A drain that gives up records its (source, id) as owed on the duplicate:
   such a part may still arrive, and MPI matches one sender's messages under one tag in order,
   so the next object from that source under that id first consumes one message per owed part,
   unread, and only then receives its own (bounded as in rule 3). Parts are only ever matched
   with an explicit source, so a part can never reach an object from another rank; at most
   OWED_MAX owed ids are kept per source (the oldest are forgotten beyond that, which only that
   source's own later objects could meet).

Sending and receiving::

    from cdtypes import mpi
    mpi.send(obj, dest=1, tag=7)            # rank 0
    obj = mpi.recv(source=0, tag=7)         # rank 1

mpi4py.util.pkl5's API on this protocol: ``from cdtypes.mpi import Intracomm`` in place of
``from mpi4py.util.pkl5 import Intracomm`` (Comm, Intracomm, Intercomm, Request, Message and the
collectives; _mpi_pkl5.py, _mpi_coll.py, docs/PYTHON.md).

Threads: sends and receives from several Python threads at once need MPI_THREAD_MULTIPLE (what
mpi4py asks for by default); with a lower level, a call from a thread other than the main one
raises RuntimeError.

SECURITY: recv rebuilds the object with pickle, which runs code the sender chose. From ranks you
do not trust, receive with allowed=True and max_bytes= / max_regions= (docs/SECURITY.md).
"""

import atexit
import itertools
import threading
import time

from mpi4py import MPI

from . import _core, _lib
from ._backend import impl as _b
from ._mpi_parts import _SLEEP_MAX, _SLEEP_MIN, _SPIN, Owed, PartsReceive, discard as _discard

__all__ = ["send", "isend", "recv", "irecv", "attach", "SendRequest", "RecvRequest", "THRESHOLD",
           "PARTS_TIMEOUT", "Comm", "Intracomm", "Intercomm", "Request", "Message"]

#: Buffers of at least this many bytes travel in the object's parts message, read and received
#: in place; smaller ones are copied into its head message (docs/MPI.md §4.2; measured with
#: bench/run python: below it, the copy costs less than one more MPI message).
THRESHOLD = 64 * 1024
# a head message over max_bytes is still received (to find and drain its parts) up to this size
# (docs/MPI.md §7.2 step 1, §12)
HEAD_DRAIN_MAX = 1 << 20
#: Seconds a receive with limits or an allow-list, and every drain, waits for an object's parts
#: message once its head was matched (receiver rules 3 and 4; docs/MPI.md §8.2, §8.3).
PARTS_TIMEOUT = 10.0
_PREFIX = _b.MPI_PREFIX
_BYTE = MPI.BYTE
_ids = itertools.count(1)  # object ids, docs/MPI.md §3.2
_MAIN = threading.main_thread().ident


_MULTIPLE = MPI.Query_thread() >= MPI.THREAD_MULTIPLE


def _thread_check():  # docs/MPI.md §9, threads
    if not _MULTIPLE and threading.get_ident() != _MAIN:
        raise RuntimeError(
            "cdtypes.mpi from a second thread needs MPI_THREAD_MULTIPLE; MPI was initialised "
            "with a lower thread level (mpi4py.rc.thread_level)")


_KEYVAL = MPI.Comm.Create_keyval()  # on a user's communicator: its duplicate for the parts
_OWED_KEYVAL = MPI.Comm.Create_keyval()  # on a duplicate: its Owed (receiver rule 5)


def attach(comm):
    """Duplicate ``comm`` for the large buffers of cdtypes.mpi objects (collective over comm:
    every rank calls it). Idempotent; COMM_WORLD is attached at import (docs/MPI.md §2.2)."""
    pc = comm.Get_attr(_KEYVAL)
    if pc is None:
        pc = MPI.Comm.Dup(comm)  # not comm.Dup(): Comm.Dup of the pkl5 API attaches
        pc.Set_attr(_OWED_KEYVAL, Owed())
        comm.Set_attr(_KEYVAL, pc)
    return pc


def _release_at_finalize(*_):
    """Free what cdtypes.mpi made for COMM_WORLD (its parts communicator, made at import, and
    its collectives' communicators) and its keyvals, while MPI is still up: run by the deletion
    of COMM_SELF's _EXIT_KEYVAL attribute, which the interpreter's exit (_exit_hook) or an
    application's own MPI.Finalize() makes (docs/MPI.md §2.2). mpi4py calls MPI_Finalize from
    a hook that runs after the interpreter is gone, where no Python callback runs."""
    global _EXIT_KEYVAL
    from . import _mpi_coll_call as coll  # loaded by then: mpi.py imports _mpi_pkl5 at its end

    coll.release(MPI.COMM_WORLD)  # what Comm.Free of the pkl5 API frees, comm itself excepted
    for keyval in (_KEYVAL, _OWED_KEYVAL, _INLINE_KEYVAL, getattr(coll, "_COLL_KEYVAL", None)):
        if keyval is not None:  # freeing a keyval leaves the attributes set with it valid
            MPI.Comm.Free_keyval(keyval)
    _EXIT_KEYVAL = MPI.Comm.Free_keyval(_EXIT_KEYVAL)  # this callback's own: MPI_KEYVAL_INVALID


# COMM_SELF's attributes are deleted at the start of MPI_Finalize, before anything else (MPI
# 4.1 §11.2.2; newest first): a finalisation hook that also covers an application's own
# MPI.Finalize()
_EXIT_KEYVAL = MPI.Comm.Create_keyval(delete_fn=_release_at_finalize)


@atexit.register
def _exit_hook():  # before mpi4py's MPI_Finalize (a Py_AtExit hook, after every atexit one)
    if _EXIT_KEYVAL == MPI.KEYVAL_INVALID or MPI.Is_finalized():
        return
    from . import _mpi_coll_call as coll

    # COMM_SELF's collectives here, not in the callback: MPICH aborts when a delete callback of
    # a COMM_SELF attribute deletes another one of its attributes (an internal assertion).
    # After an application's own MPI.Finalize() they are left to MPI_Finalize.
    coll.release(MPI.COMM_SELF)
    MPI.COMM_SELF.Delete_attr(_EXIT_KEYVAL)  # runs _release_at_finalize


attach(MPI.COMM_WORLD)
MPI.COMM_SELF.Set_attr(_EXIT_KEYVAL, True)
_TAG_SPACE = max(32767, MPI.COMM_WORLD.Get_attr(MPI.TAG_UB) or 32767)  # docs/MPI.md §3.2


def _pack(obj, comm, inline=False):
    """The head (docs/MPI.md §4) and the separate parts (§5.1). On a comm that is not attached,
    objects travel whole in the head, or with ``inline`` split as on an attached one, their
    parts to be sent on comm itself right after the head (§2.3; pc is then None)."""
    pc = comm.Get_attr(_KEYVAL)
    oid = next(_ids) % _TAG_SPACE
    frame, head, parts, layout = _b.mpi_pack(
        obj, oid, THRESHOLD if pc is not None or inline else 0)
    return frame, head, (parts, layout), pc, oid


# docs/MPI.md §2.3, parts in line on a comm that is not attached: a sender's two posts (head,
# parts) are not separated by another thread's post (one lock for the process: sends to
# oneself must not wait for a receiver's lock); a receiver matches a head and its parts under
# its comm's lock (_INLINE_KEYVAL), so that no other receive on comm can take the parts between
_SEND_LOCK = threading.Lock()
_INLINE_KEYVAL = MPI.Comm.Create_keyval()
_MAKE_LOCK = threading.Lock()


def _recv_lock(comm):
    lock = comm.Get_attr(_INLINE_KEYVAL)
    if lock is None:
        with _MAKE_LOCK:
            lock = comm.Get_attr(_INLINE_KEYVAL)
            if lock is None:
                lock = threading.Lock()
                comm.Set_attr(_INLINE_KEYVAL, lock)
    return lock


def _take_inline(comm, msg, status, limits=None):
    """The head matched by ``msg`` on a comm that is not attached: receive it, and match its
    in-line parts message if it announces one (docs/MPI.md §2.3) -> (head, parts) where parts
    is (parts message, its status), None, or the error of an untrusted receive whose parts
    did not come within PARTS_TIMEOUT. With ``limits``, a head over max_bytes is refused as on
    an attached comm (§7.2 step 1): its in-line parts are still matched, so the caller
    consumes them; one over HEAD_DRAIN_MAX is consumed unread (head None: its parts cannot
    be named, §12)."""
    n = status.Get_count(_BYTE)
    if (limits is not None and limits.max_bytes is not None and n - _PREFIX > limits.max_bytes
            and n > HEAD_DRAIN_MAX):
        _discard(msg, n)
        return None, None
    head = bytearray(n)
    msg.Recv([head, _BYTE])
    try:
        lens = _b.mpi_parts(head)[1]
    except _lib.CdtError:
        return head, None  # not a frame: the receive fails, nothing in line to name
    if not lens:
        return head, None
    source, tag, st = status.Get_source(), status.Get_tag(), MPI.Status()
    if limits is None:  # trusted: the sender posted the parts with the head
        return head, (comm.Mprobe(source, tag, st), st)
    # untrusted: bounded as a parts wait on an attached comm (§7.3 step 5, §8.2)
    deadline = time.monotonic() + PARTS_TIMEOUT
    spin_end, sleep = time.monotonic() + _SPIN, _SLEEP_MIN
    while True:
        parts = comm.Improbe(source, tag, st)
        if parts is not None:
            return head, (parts, st)
        now = time.monotonic()
        if now >= deadline:
            return head, _lib.error(
                -23,  # CDT_ERR_TIMEOUT
                "rank %d: the in-line parts message under tag %d (%d bytes) did not arrive "
                "within cdtypes.mpi.PARTS_TIMEOUT of its head" % (source, tag, sum(lens)))
        if now >= spin_end:
            time.sleep(sleep)
            sleep = min(2 * sleep, _SLEEP_MAX)


def _match_inline(comm, source, tag, status, block, limits=None):
    """On a comm that is not attached: match the next head under (source, tag) and receive
    it, with its in-line parts matched (docs/MPI.md §2.3) -> (head, parts) as _take_inline,
    or None when ``block`` is false and none arrived. With MPI_THREAD_MULTIPLE the match
    happens under comm's lock, by polling (a blocking probe would hold it)."""
    if not _MULTIPLE:
        msg = comm.Mprobe(source, tag, status) if block else comm.Improbe(source, tag, status)
        return None if msg is None else _take_inline(comm, msg, status, limits)
    lock = _recv_lock(comm)
    spin_end, sleep = time.monotonic() + _SPIN, _SLEEP_MIN
    while True:
        with lock:
            msg = comm.Improbe(source, tag, status)
            if msg is not None:
                return _take_inline(comm, msg, status, limits)
        if not block:
            return None
        if time.monotonic() >= spin_end:
            time.sleep(sleep)
            sleep = min(2 * sleep, _SLEEP_MAX)


def _start_inline(comm, got, st, alloc, limits):
    """_start for a head matched by _match_inline (``got``: (head, parts)) on a comm that is
    not attached: the checks of docs/MPI.md §7.2, the in-line parts received into the
    object or, when the receive fails, consumed unread (nothing stays queued under the
    tag) -> (incoming, parts, error) as _start."""
    head, inline = got
    if isinstance(inline, BaseException):  # untrusted, and the parts did not come
        return None, None, inline
    n = st.Get_count(_BYTE)
    if limits is not None and limits.max_bytes is not None and n - _PREFIX > limits.max_bytes:
        if inline is not None:
            _discard(inline[0], inline[1].Get_count(_BYTE))
        return None, None, _lib.error(
            _lib.CDT_ERR_LIMIT, "the message has %d bytes, max_bytes is %d"
            % (n - _PREFIX, limits.max_bytes))
    return _parse(comm, head, st.Get_source(), alloc, limits, inline)


class SendRequest:
    """A pending isend: keeps the object's frame alive until wait() (or test() is true);
    usable as a context manager (waits on exit). Sends cannot be canceled."""

    def __init__(self, reqs, frame, head):
        self._reqs, self._frame, self._head = reqs, frame, head

    def _done(self):
        self._frame.close()
        self._reqs = self._frame = self._head = None

    def wait(self):
        """Wait until both messages of the object are sent; then the frame is released."""
        if self._reqs is not None:
            MPI.Request.Waitall(self._reqs)
            self._done()

    def test(self):
        """True once the send completed (then the frame is released); never blocks."""
        if self._reqs is not None and MPI.Request.Testall(self._reqs):
            self._done()
        return self._reqs is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.wait()


def _parts_message(parts):
    """The one message that carries every separate buffer of an object: the buffer itself when
    there is one, else an hindexed datatype over their addresses (with its handle, to free once
    the send or receive is posted; MPI frees it when the operation completes). ``parts`` is
    (buffers, layout) from the backend: layout holds the buffers' lengths and addresses, made
    in C (a Python loop over 512 buffers cost 90 us on each side). docs/MPI.md §5.2."""
    bufs, layout = parts
    if len(bufs) == 1:
        return [bufs[0], _BYTE], None
    lens, addrs = layout
    base = MPI.Get_address(bufs[0])
    if base != addrs[0]:  # MPI's addresses are not the pointers themselves here: shift them
        addrs = [a - addrs[0] + base for a in addrs]
    dt = _BYTE.Create_hindexed(lens, addrs)
    dt.Commit()
    return [MPI.BOTTOM, 1, dt], dt


def _post_parts(post, parts, peer, oid):
    """post(message, peer, tag) for the parts message of ``parts`` -> its request"""
    msg, dt = _parts_message(parts)
    try:
        return post(msg, peer, oid)
    finally:
        if dt is not None:
            dt.Free()


def isend(obj, dest, tag=0, comm=None):
    """Start sending ``obj``; returns a SendRequest (wait() before modifying the object's
    arrays). docs/MPI.md §6."""
    if comm is None:
        comm = MPI.COMM_WORLD
    _thread_check()
    frame, head, parts, pc, oid = _pack(obj, comm)
    try:
        reqs = [comm.Isend([head, _BYTE], dest, tag)]
        if parts[0]:
            reqs.append(_post_parts(pc.Isend, parts, dest, oid))
    except BaseException:
        frame.close()
        raise
    return SendRequest(reqs, frame, head)


def send(obj, dest, tag=0, comm=None):
    """Send ``obj`` to ``dest`` (blocking, like MPI_Send). docs/MPI.md §6."""
    if comm is None:
        comm = MPI.COMM_WORLD
    _thread_check()
    frame, head, parts, pc, oid = _pack(obj, comm)
    try:
        if not parts[0]:
            comm.Send([head, _BYTE], dest, tag)
        else:
            reqs = [comm.Isend([head, _BYTE], dest, tag),
                    _post_parts(pc.Isend, parts, dest, oid)]
            MPI.Request.Waitall(reqs)
    finally:
        frame.close()


def _limits(max_bytes, max_regions, allowed):
    if max_bytes is None and max_regions is None and allowed is None:
        return None, None
    return _core.Limits(max_bytes, max_regions), _core._policy(allowed)


def _parts_receive(pc, source, oid, nbytes, post, untrusted):
    deadline = time.monotonic() + PARTS_TIMEOUT if untrusted else None
    return PartsReceive(pc, pc.Get_attr(_OWED_KEYVAL), source, oid, nbytes, post, deadline)


def _drain(comm, head, source):
    """The parts of an object that will not be rebuilt, to consume unread so that its sender's
    send completes (receiver rule 4, docs/MPI.md §8.3): a PartsReceive, or None when the head
    names none."""
    try:
        oid, lens = _b.mpi_parts(head)
    except _lib.CdtError:
        return None  # not even a frame header: nothing to find
    pc = comm.Get_attr(_KEYVAL)
    if pc is None or not lens:
        return None
    return _parts_receive(pc, source, oid, sum(lens), None, True)


def _receive_into(parts):
    """post() of a PartsReceive: the receive of the matched parts message into ``parts``
    ((buffers, layout) from the backend)."""
    def post(message):
        buf, dt = _parts_message(parts)
        try:
            return message.Irecv(buf)
        finally:
            if dt is not None:
                dt.Free()
    return post


def _start(comm, msg, st, alloc, limits):
    """The head message was matched: receive it and allocate everything from its header.
    Returns (incoming, parts, error): parts is the PartsReceive still to complete (None when
    the head held everything); when the object will not be rebuilt, incoming is None, error is
    what the receive raises once parts (its drain, or None) completed. The checks of
    docs/MPI.md §7.2, steps 1-9 (step 7, the attachment, comes after the allocation here:
    §13.1)."""
    return _start_head(comm, msg, st, alloc, limits)[1:]


def _start_head(comm, msg, st, alloc, limits):
    """_start, also returning the head message's bytes first (None when it was refused
    unread): the collectives forward a received object's head as it came (docs/MPI.md §14)."""
    n = st.Get_count(_BYTE)
    source = st.Get_source()
    if limits is not None and limits.max_bytes is not None and n - _PREFIX > limits.max_bytes:
        err = _lib.error(_lib.CDT_ERR_LIMIT, "the message has %d bytes, max_bytes is %d"
                         % (n - _PREFIX, limits.max_bytes))
        if n > HEAD_DRAIN_MAX:
            _discard(msg, n)
            return None, None, None, err
        head = bytearray(n)
        msg.Recv([head, _BYTE])
        return None, None, _drain(comm, head, source), err
    head = bytearray(n)
    msg.Recv([head, _BYTE])
    return (head,) + _parse(comm, head, source, alloc, limits)


def _parse(comm, head, source, alloc, limits, inline=None):
    """The head message was received into ``head``: allocate everything from its header.
    Returns (incoming, parts, error) as _start does. ``inline``: the parts message matched in
    line with the head on a comm that is not attached, (message, status) (docs/MPI.md §2.3)."""
    try:
        inc, oid, dests, layout = _b.mpi_unpack(
            head, alloc, *(limits.codes() if limits else (-1, -1)))
    except BaseException as e:
        if inline is not None:
            _discard(inline[0], inline[1].Get_count(_BYTE))
            return None, None, e
        return None, _drain(comm, head, source), e
    if not dests:
        return inc, None, None
    if inline is not None:
        nbytes = sum(layout[0]) if layout is not None else len(dests[0])
        parts = PartsReceive(comm, _NOT_OWED, source, inline[1].Get_tag(), nbytes,
                             _receive_into((dests, layout)), None)
        try:
            parts.start(*inline)
        except BaseException as e:
            return None, None, e
        parts.buffers = (dests, layout)
        return inc, parts, None
    pc = comm.Get_attr(_KEYVAL)
    if pc is None:
        return None, None, _lib.error(
            -11, "the message has separate parts, but the communicator is not attached here "
                 "(cdtypes.mpi.attach)")
    nbytes = sum(layout[0]) if layout is not None else len(dests[0])
    parts = _parts_receive(pc, source, oid, nbytes, _receive_into((dests, layout)),
                           limits is not None)
    parts.buffers = (dests, layout)  # what a collective forwards once they arrived
    return inc, parts, None


class _NotOwed:
    """In-line parts (docs/MPI.md §2.3) are matched with their head: none is ever owed"""

    @staticmethod
    def take(source, oid):
        return 0


_NOT_OWED = _NotOwed()


def _complete_parts(req, block):
    """Wait for (block) or test req._parts, the parts message of a receive or a drain; its
    error, if the first, becomes req._error. True once it is over (req._done is then set)."""
    if req._parts is not None:
        try:
            if block:
                req._parts.wait()
            elif not req._parts.test():
                return False
        except BaseException as e:
            if req._error is None:
                req._error = e
        req._parts = None
    req._done = True
    return True


def _rebuild(inc, limits, policy, raw=False):
    """The object from a received frame; ``raw``: what pickle raises propagates unwrapped
    (the pkl5 API), else it is chained to UnpicklingFailed."""
    stream, buffers = inc.finish()
    if limits is None:
        return _core._unpickle(stream, buffers, raw=raw)
    return _core._unpickle(stream, buffers, policy, True, raw)


def recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, comm=None, status=None, *, alloc=None,
         max_bytes=None, max_regions=None, allowed=None):
    """Receive one object sent by send/isend. Arrays in the object are writable and live in
    memory allocated for them (alloc(nbytes) -> writable buffer, as in cdtypes.loads; default
    64-byte aligned).

    WARNING: without ``allowed`` the object is rebuilt by pickle, which runs code the sender
    chose: receive only from ranks you trust. For other peers: ``max_bytes`` refuses
    (LimitError) a frame larger than that from the message size or the frame header before any
    buffer is allocated (the object's messages are consumed); ``max_regions`` refuses a frame
    with more buffers from its header; ``allowed`` (True, or a cdtypes.Restricted) unpickles
    with an allow-list of globals (ForbiddenError otherwise), as in cdtypes.loads.
    docs/MPI.md §7 (the head matched by Mprobe, §7.1), §8 (limits)."""
    if comm is None:
        comm = MPI.COMM_WORLD
    _thread_check()
    limits, policy = _limits(max_bytes, max_regions, allowed)
    st = status if status is not None else MPI.Status()
    if comm.Get_attr(_KEYVAL) is None and source != MPI.PROC_NULL:  # parts may be in line
        inc, parts, err = _start_inline(
            comm, _match_inline(comm, source, tag, st, True, limits), st, alloc, limits)
    else:
        inc, parts, err = _start(comm, comm.Mprobe(source, tag, st), st, alloc, limits)
    try:
        if parts is not None:
            parts.wait()
    finally:
        if err is not None:
            raise err
    return _rebuild(inc, limits, policy)


class RecvRequest:
    """A receive posted by irecv: test() -> bool, wait() -> the object, cancel() (possible
    until the object's head message was matched). ``status`` is the head message's status.
    The head is matched by Improbe in test() and Mprobe in wait() (docs/MPI.md §9)."""

    def __init__(self, source, tag, comm, alloc, limits, policy):
        self._args = (source, tag, comm, alloc, limits, policy)
        self._inline = comm.Get_attr(_KEYVAL) is None and source != MPI.PROC_NULL
        self.status = MPI.Status()
        self._inc = self._parts = None
        self._matched = self._done = False
        self._result = self._error = None

    def _begin(self, msg):
        self._matched = True
        _, _, comm, alloc, limits, _ = self._args
        try:
            if self._inline:
                self._inc, self._parts, self._error = _start_inline(
                    comm, msg, self.status, alloc, limits)
            else:
                self._inc, self._parts, self._error = _start(
                    comm, msg, self.status, alloc, limits)
        except BaseException as e:
            self._error = e

    def _match(self, block):
        """The head matched (Mprobe, or Improbe: None when none arrived); on a comm that is
        not attached, (head, in-line parts) from _match_inline (docs/MPI.md §2.3)."""
        source, tag, comm, _, limits, _ = self._args
        if self._inline:
            return _match_inline(comm, source, tag, self.status, block, limits)
        if block:
            return comm.Mprobe(source, tag, self.status)
        return comm.Improbe(source, tag, self.status)

    def _finish(self, block):
        """Complete the parts message (the object's, or the drain of a failed one), then
        rebuild: True once done."""
        if not _complete_parts(self, block):
            return False
        if self._error is None:
            try:
                self._result = _rebuild(self._inc, self._args[4], self._args[5])
            except BaseException as e:
                self._error = e
        self._inc = None
        return True

    def test(self):
        """True once the object arrived (or the receive failed or was canceled)."""
        if not self._done:
            if not self._matched:
                msg = self._match(False)
                if msg is None:
                    return False
                self._begin(msg)
            return self._finish(False)
        return True

    def wait(self):
        """Wait for the object and return it (raises what the receive failed with)."""
        if not self._done:
            if not self._matched:
                self._begin(self._match(True))
            self._finish(True)
        if self._error is not None:
            raise self._error
        return self._result

    def cancel(self):
        """Cancel the receive if no message was matched yet (True); a matched object is
        received whole (False). docs/MPI.md §9, cancellation."""
        if self._matched or self._done:
            return False
        self._done = True
        self._error = _lib.error(-22, "the receive was canceled")
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.cancel():
            try:
                self.wait()
            except _lib.CdtError:
                pass


def irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, comm=None, *, alloc=None, max_bytes=None,
          max_regions=None, allowed=None):
    """Post a receive of one object; returns a RecvRequest (see recv for the arguments)."""
    if comm is None:
        comm = MPI.COMM_WORLD
    _thread_check()
    limits, policy = _limits(max_bytes, max_regions, allowed)
    return RecvRequest(source, tag, comm, alloc, limits, policy)


# mpi4py.util.pkl5's API on this protocol (its own module; imported last, it uses the functions
# above)
from ._mpi_pkl5 import Comm, Intercomm, Intracomm, Message, Request  # noqa: E402
