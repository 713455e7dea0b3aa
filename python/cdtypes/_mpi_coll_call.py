"""One rank's part in one collective call of cdtypes.mpi (docs/MPI.md §14): the objects it
packs (once each), sends and forwards, the objects it receives (with the caller's limits), the
failure markers it sends in place of objects it does not have, and the agreement at the end
that makes every rank raise when any rank failed. The algorithms (who sends what to whom) are
in _mpi_coll.py; this module is what they are built from."""

import array
import os
import pickle
import struct
import time

from mpi4py import MPI

from . import _core, _lib, _mpi_c, _stream
from ._backend import impl as _b
from . import _mpi_parts
from . import mpi as _m

_BYTE = MPI.BYTE
_INT = MPI.INT
_OK = 2**31 - 1  # the agreement's value of a rank that did not fail (MIN picks a failed one)
# docs/MPI.md §14.2: added to a head's tag on cc when its object has a parts message, so that a
# receiver that cannot read the head still knows whether there are parts to drain
PARTS_FLAG = 8
_INVALID_ARG = -1  # CDT_ERR_INVALID_ARG: the ranks disagree on the operation or the root
_OP_MASK = PARTS_FLAG - 1
# docs/MPI.md §14.5: the tag of the agreement's exchange between two processes, above every
# tag of a head or marker
AGREE_TAG = 16
_OPS = {1: "bcast", 2: "gather", 3: "scatter", 4: "allgather", 5: "alltoall"}
_ID = struct.Struct("<I")  # the prefix's id field, at offset 4 (docs/MPI.md §4.1)
_COLL_KEYVAL = MPI.Comm.Create_keyval()  # on a user's communicator: its _Collectives
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))
_pickle_loads = pickle.loads
# the lean paths' persistent requests (§14.5, the cost): started and waited for with these
_startall, _waitall = MPI.Prequest.Startall, MPI.Request.Waitall
TAG_BCAST = 1  # _mpi_coll's (docs/MPI.md §14.2)
# what the C calls of the lean paths end with (mpi_calls.h): the low two bits, an MPI error
# code above them; _AGREED is the whole value of a call that agreed with nothing failed
_EXCHANGE_FAILED, _DIFFER, _WAIT_FAILED, _AGREED = 0, 1, 2, 3


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _oversubscribed(agree):
    """Whether any node runs more processes of ``agree`` than a process there may use cores
    (collective over agree: every process gets the same answer, docs/MPI.md §14.5)."""
    node = agree.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        mine = array.array("i", [1 if node.Get_size() > _cores() else 0])
    finally:
        node.Free()
    anywhere = array.array("i", [0])
    agree.Allreduce([mine, _INT], [anywhere, _INT], MPI.MAX)
    return bool(anywhere[0])


class _Collectives:
    """What the collectives of one user communicator use (docs/MPI.md §14.1): cc, its duplicate
    for the objects (attached, so large buffers travel on cc's parts communicator pc), and the
    intracommunicator of every process of comm on which the agreement runs (cc itself; on an
    intercommunicator, cc's two groups merged)."""

    __slots__ = ("cc", "pc", "agree", "agree_rank", "inter", "peers", "me", "trees", "yielding",
                 "pair", "lean_root", "lean_calls", "lean_leaves", "lean_mine", "lean_msgs", "sent",
                 "answered", "early_answers", "live", "leaf_call", "lean_reqs", "early_send",
                 "_mine", "_all", "_theirs", "c", "c_why", "c_heads")

    def __init__(self, comm):
        self.cc = MPI.Comm.Dup(comm)  # not comm.Dup(): the pkl5 API's Dup attaches
        self.pc = _m.attach(self.cc)
        self.inter = comm.Is_inter()
        self.agree = MPI.Intercomm.Merge(self.cc) if self.inter else self.cc
        self.agree_rank = self.agree.Get_rank()
        # asked once (each MPI call costs a fraction of a microsecond, a small object's whole
        # bcast about ten): the ranks a collective sends to and receives from (the remote
        # group's on an intercommunicator), this process's rank among them (None when it is
        # not among them: an intercommunicator), bcast's tree per root (_mpi_coll)
        self.peers = comm.Get_remote_size() if self.inter else comm.Get_size()
        self.me = None if self.inter else comm.Get_rank()
        self.trees = {}
        # More processes than cores on a node: MPI's blocking waits spin without giving up the
        # core, so each hand-off between two processes can cost a scheduler time slice (ms).
        # Then every wait of a collective polls and yields the core between polls (measured:
        # bench/results/pycoll_findings.md). The same on every process: the agreement is then
        # an MPI_Iallreduce, which matches no MPI_Allreduce.
        self.yielding = _oversubscribed(self.agree)
        # two processes: the agreement is an exchange with the other one (its rank in agree;
        # None: the allreduce), §14.5
        self.pair = 1 - self.agree_rank if self.agree.Get_size() == 2 else None
        # bcast's root takes lean_root when this process is the root of two on an
        # intracommunicator (and does not yield): the rank it passes as root (None: never);
        # lean_calls counts the calls lean_root completed (observed by the tests)
        self.lean_root = self.me if self.pair is not None and not self.inter else None
        self.lean_calls = 0
        self.lean_leaves = 0  # the calls lean_leaf completed on its short tail (the tests)
        # lean_root's part of the exchange, the same in every call (it did not fail, bcast,
        # its own rank as root), and the messages of its exchange, made once
        self.lean_mine = array.array("i", [_OK, TAG_BCAST, -TAG_BCAST, self.me, -self.me]) \
            if self.lean_root is not None else None
        self._mine, self._all = array.array("i", [0] * 5), array.array("i", [0] * 5)
        self._theirs = array.array("i", [0] * 5)
        self.lean_msgs = ([self.lean_mine, _INT], [self._theirs, _INT])
        # the exchange's messages as persistent requests on agree, made at their first use and
        # started in every call (MPI_Start parses no message: 0.5-1 us less per process than
        # MPI_Isend or MPI_Sendrecv of the same five ints): lean_root's send of lean_mine and
        # receive into _theirs, and the early answer's send of _mine (answer_early). Dropped
        # (forget_requests) when a wait for them raised: one may still be active.
        self.lean_reqs = self.early_send = None
        self.sent = None  # the exchange's send, not yet waited for
        # this call's exchange send was posted early (answer_early, §14.5), with the values in
        # _mine; early_answers counts the calls that answered early (observed by the tests)
        self.answered = False
        self.early_answers = 0
        self.live = True  # False once free() freed its communicators (attached(): a cache)
        # lean_leaf's Call, kept between calls while every call leaves it as it found it
        # (nothing failed, nothing sent): made once, not per call
        self.leaf_call = None
        # the lean paths' MPI calls from C (§14.5.1): the handles they pass (None: through
        # mpi4py, c_why says why); c_heads counts the heads the C call received (the tests)
        self.c, self.c_why = _mpi_c.handles(self) if self.lean_root is not None else (
            None, "not two processes of an intracommunicator")
        self.c_heads = 0

    def take_theirs(self, msg):
        """A head's receive matched the other process's exchange message (§14.5): receive
        it as its contribution to this call's agreement, which then receives nothing more."""
        msg.Recv([self._theirs, _INT])

    def answer_early(self, op, root):
        """The early answer of a two-process bcast's receiver (§14.5): post this process's
        part of the exchange, as a process that did not fail, before it unpickles. The caller
        knows that nothing but running out of memory can fail after it."""
        mine = self._mine
        lo, hi = (root, -root) if root != _OK else (_OK, _OK)
        mine[0], mine[1], mine[2], mine[3], mine[4] = _OK, op, -op, lo, hi
        send, c = self.early_send, self.c
        if send is None:
            send = self.early_send = self.agree.Send_init([mine, _INT], self.pair, AGREE_TAG)
            if c is not None:
                c.early = _mpi_c.handle(send)
        # sends what _mine holds now (§14.5: the same five ints as an Isend)
        if c is None:
            send.Start()
        else:
            _b.mpic_start(c.early)
        self.sent = send
        self.answered = True
        self.early_answers += 1

    def agreement(self, failed, op=0, root=_OK, have_theirs=False):
        """MPI_Allreduce(MIN) of (this rank's number in the agreement communicator if it
        failed, else _OK; op, -op; root, -root, or _OK twice when it states none) -> (the
        lowest failed rank there or None, None or (what, one value, another) when the ranks
        disagree on the operation or the root). docs/MPI.md §14.5. Between two processes an
        exchange of the five ints; ``have_theirs``: take_theirs() already received the other's.
        (Measured: MPI_Iallreduce started earlier, to overlap the root's own copy, cost more
        than it hid.)"""
        mine, out = self._mine, self._all
        if self.answered:  # what this process sent early is its part, whatever came after
            fail, op, _, lo, hi = mine
        else:
            fail = self.agree_rank if failed else _OK
            lo, hi = (root, -root) if root != _OK else (_OK, _OK)
            mine[0], mine[1], mine[2], mine[3], mine[4] = fail, op, -op, lo, hi
        if self.pair is not None:
            # the minimum of the two, slot by slot (Python ints: an element-wise loop over
            # the arrays cost 3 us, a tenth of a small bcast)
            try:
                t0, t1, t2, t3, t4 = self._exchange(have_theirs)
            except BaseException:
                self.forget_requests()  # the early answer's send may be active
                raise
            fail, lo, hi = min(fail, t0), min(lo, t3), min(hi, t4)
            op, negop = min(op, t1), min(-op, t2)
        else:
            if self.yielding:
                request = self.agree.Iallreduce([mine, _INT], [out, _INT], MPI.MIN)
                while not request.Test():
                    _yield()
            else:
                self.agree.Allreduce([mine, _INT], [out, _INT], MPI.MIN)
            fail, op, negop, lo, hi = out
        return _verdict(fail, op, negop, lo, hi)

    def _exchange(self, have_theirs):
        """The agreement of two processes (§14.5): send ours, receive theirs -> theirs."""
        theirs = self._theirs
        if self.answered:  # posted early (answer_early)
            send, self.sent, self.answered = self.sent, None, False
        else:
            send = self.agree.Isend([self._mine, _INT], self.pair, AGREE_TAG)
        if self.yielding:
            reqs = [send] if have_theirs else [
                send, self.agree.Irecv([theirs, _INT], self.pair, AGREE_TAG)]
            while not MPI.Request.Testall(reqs):
                _yield()
        else:
            if not have_theirs:
                self.agree.Recv([theirs, _INT], self.pair, AGREE_TAG)
            self.sent = send  # waited for with the call's own sends (finish): one wait call
        return theirs

    def forget_requests(self):
        """A wait that may include the persistent requests raised: make new ones next time
        (the old ones are left to MPI, as the frames of sends that failed are kept)."""
        self.lean_reqs = self.early_send = None

    def free(self):
        self.live = False
        for request in (self.lean_reqs or []) + [self.early_send]:
            if request is not None:
                request.Free()
        self.lean_reqs = self.early_send = None
        if self.agree is not self.cc:
            MPI.Comm.Free(self.agree)
        pc = self.cc.Get_attr(_m._KEYVAL)
        self.cc.Delete_attr(_m._KEYVAL)
        MPI.Comm.Free(pc)
        MPI.Comm.Free(self.cc)


def _verdict(fail, op, negop, lo, hi):
    """The agreement's minimum of the five ints -> (the lowest failed rank or None, None or
    (what, one value, another) when the ranks disagree on the operation or the root)."""
    differ = None
    if op != -negop:
        differ = ("operation", _OPS.get(op, op), _OPS.get(-negop, -negop))
    elif lo != _OK and lo != -hi:
        differ = ("root", lo, -hi)
    return (None if fail == _OK else fail), differ


def attached(comm):
    """The _Collectives of ``comm``, or None before its first collective call. Kept on the
    wrapper object too (``_cdt_coll``: its handle and the _Collectives), so that a call asks
    MPI_Comm_get_attr once per wrapper, not once per call (0.4 us of a 2-rank bcast of about
    17): used while the wrapper's handle is the same and the _Collectives was not freed (by
    Free through this or another wrapper of the same handle), else looked up again."""
    try:
        handle, coll = comm._cdt_coll
        if coll.live and handle == comm.handle:
            return coll
    except AttributeError:
        pass
    coll = comm.Get_attr(_COLL_KEYVAL)
    if coll is not None:
        _remember(comm, coll)
    return coll


def _remember(comm, coll):
    try:
        comm._cdt_coll = (comm.handle, coll)
    except AttributeError:  # a wrapper without a __dict__: looked up in every call
        pass


def collectives(comm):
    """The _Collectives of ``comm``: made at the first collective call, which every process of
    comm (both groups of an intercommunicator) makes, so Dup and Merge are collective as MPI
    requires."""
    coll = attached(comm)
    if coll is None:
        coll = _Collectives(comm)
        comm.Set_attr(_COLL_KEYVAL, coll)
        _remember(comm, coll)
    return coll


def release(comm):
    """Free what cdtypes.mpi made for ``comm`` (its collectives' communicators and its parts
    communicator); collective, as MPI_Comm_free. Called by Comm.Free."""
    coll = comm.Get_attr(_COLL_KEYVAL)
    try:
        del comm._cdt_coll
    except AttributeError:
        pass
    if coll is not None:
        comm.Delete_attr(_COLL_KEYVAL)
        coll.free()
    pc = comm.Get_attr(_m._KEYVAL)
    if pc is not None:
        comm.Delete_attr(_m._KEYVAL)
        MPI.Comm.Free(pc)


def local_copy(obj):
    """A rank's own item of a collective (the root's bcast result, its own gather item, ...):
    pickled and rebuilt here, out-of-band buffers shared with ``obj``, as mpi4py.util.pkl5
    returns it (its arrays are not copied; nothing travels)."""
    buffers = []
    stream = pickle.dumps(obj, 5, buffer_callback=buffers.append)
    return pickle.loads(stream, buffers=buffers)


def own_copy(out, obj):
    """This rank's own item when it packed it to send it too: unpickled from the stream it
    pickled when pack(own=True) kept it (out.own), else rebuilt from its own head when that
    holds the whole object (one unpickling, no second pickling), else local_copy."""
    if out.own is not None:
        stream, buffers = out.own
        return _pickle_loads(stream) if buffers is None else _pickle_loads(stream,
                                                                           buffers=buffers)
    if out.parts[0]:
        return local_copy(obj)
    # this rank's own stream, as pickle wrote it: no check of the stream (mpi._rebuild's)
    stream, buffers = _b.mpi_unpack(out.head, None, -1, -1)[0].finish()
    return pickle.loads(stream, buffers=buffers)


FAILED = object()  # what rebuild() returns for an object this rank does not have
# what sends that failed to complete may still read (finish(): Waitall raised)
_IN_FLIGHT = []


class Outgoing:
    """An object packed once, sent to any number of ranks: its head (the prefix's id is the
    sender's, §3.2), its separate buffers ((buffers, layout) for mpi._parts_message) and the
    windows over the memory they are read from (the sender's Frame keeps its own alive until
    finish() closes it; a received object's windows keep the received memory)."""

    __slots__ = ("head", "parts", "oid", "own")

    def __init__(self, head, parts, oid, own=None):
        # own: (stream, buffers) of mpi_pack_own, for own_copy (None: not kept)
        self.head, self.parts, self.oid, self.own = head, parts, oid, own


class Call:
    """One rank's part in one collective call. Every method that can fail records the first
    error (``error``) instead of raising, and the algorithms go on sending failure markers and
    consuming what they are sent, so that every rank reaches finish(), whose agreement makes
    every rank raise when any did fail (docs/MPI.md §14.4, §14.5)."""

    __slots__ = ("coll", "cc", "tag", "root", "limits", "policy", "error", "peer_failed",
                 "have_theirs", "_reqs", "_frames", "_forwarded")

    def __init__(self, comm, tag, max_bytes, max_regions, allowed):
        _m._thread_check()
        self.coll = collectives(comm)
        self.cc, self.tag = self.coll.cc, tag
        self.root = _OK  # the root this rank states in the agreement (_mpi_coll sets it)
        self.limits, self.policy = _m._limits(max_bytes, max_regions, allowed)
        self.error = None  # this rank's own failure (the first)
        self.peer_failed = False  # a failure marker arrived
        # a head's receive took the other process's exchange message (two processes, §14.5)
        self.have_theirs = False
        self._reqs, self._frames = [], []
        # the Outgoing of every received object this rank forwards: its windows keep the
        # received memory, which a parts message of several buffers reads by address (MPI
        # keeps no reference to it), alive until finish() waited for the sends
        self._forwarded = []

    def fail(self, error):
        if self.error is None:
            self.error = error

    def pack(self, obj, own=False):
        """``obj`` packed once (an Outgoing), or None when pickling it failed (recorded).
        ``own``: this rank keeps a copy too (own_copy), from the stream pickled here when the
        head holds the whole object (mpi_pack_own)."""
        try:
            # mpi._pack without its attribute lookup: cc is attached (§14.1)
            oid = next(_m._ids) % _m._TAG_SPACE
            if own:
                frame, head, parts, layout, stream, buffers = _b.mpi_pack_own(
                    obj, oid, _m.THRESHOLD)
            else:
                frame, head, parts, layout = _b.mpi_pack(obj, oid, _m.THRESHOLD)
        except BaseException as e:
            self.fail(e)
            return None
        self._frames.append(frame)
        return Outgoing(head, (parts, layout), oid,
                        (stream, buffers) if own and stream is not None else None)

    def send(self, out, dest):
        """Post ``out`` (head on cc, parts on pc; §14.3) to ``dest``, or, for None, the
        failure marker: a zero-byte message under the operation's tag (§14.4)."""
        try:
            if out is None:
                self._reqs.append(self.cc.Isend([None, 0, _BYTE], dest, self.tag))
                return
            if not out.parts[0]:
                self._reqs.append(self.cc.Isend([out.head, _BYTE], dest, self.tag))
                return
            self._reqs.append(self.cc.Isend([out.head, _BYTE], dest, self.tag | PARTS_FLAG))
            self._reqs.append(_m._post_parts(self.coll.pc.Isend, out.parts, dest, out.oid))
        except BaseException as e:
            self.fail(e)

    def receive(self, source, forward=False):
        """The next object from ``source`` under the operation's tag -> (the backend's
        incoming object, its Outgoing to send on when ``forward``, else None), or (None, None)
        when there is none (a failure marker came, or this receive failed: recorded). The
        object's head and buffers arrived and were checked under the call's limits; rebuild()
        makes it. A forwarded object is sent on as it came (its head, its buffers where they
        were received), under a fresh id of this rank (§3.2)."""
        status = MPI.Status()
        if self.have_theirs:  # the other process is in its agreement: it sends nothing more
            return None, None
        try:
            # any tag from this source: under PARTS_FLAG or not, or another operation's
            # (§14.2); nothing else of this call or another one can be queued from it
            if self.coll.yielding:
                msg = self.cc.Improbe(source, MPI.ANY_TAG, status)
                while msg is None:
                    _yield()
                    msg = self.cc.Improbe(source, MPI.ANY_TAG, status)
            else:
                msg = self.cc.Mprobe(source, MPI.ANY_TAG, status)
        except BaseException as e:
            self.fail(e)
            return None, None
        return self._matched(msg, status, source, forward)

    def receive_c(self, source, c):
        """receive() of a lean receiver (§14.5.1): the probe and a small head's receive in one
        C call (the communicator's Handles ``c``), its decoding and checks the same as
        receive()'s (_m._parse, as _m._start_head calls it without limits); any other message
        matched (another tag, a marker, a larger head) goes on through receive()'s path."""
        try:
            tag, count, msg = _b.mpic_head(c.scratch_c, source, self.tag, c.cc)
        except BaseException as e:
            self.fail(e)
            return None, None
        if msg is not None:
            return self._matched(_mpi_c.message(msg), _Matched(source, tag, count),
                                 source, False)
        self.coll.c_heads += 1
        head = c.scratch[:count]  # a copy: what the object decodes from (and may keep)
        try:
            inc, parts, err = _m._parse(self.cc, head, source, None, None)
            self._settle(source, tag, parts, err)
        except BaseException as e:
            self.fail(e)
            return None, None
        return inc, None

    def _matched(self, msg, status, source, forward):
        """receive() once a message from ``source`` was matched (``msg``, its ``status``)"""
        try:
            tag = status.Get_tag()
            if tag == AGREE_TAG:  # ended its call without sending us the object: §14.5
                self.coll.take_theirs(msg)
                self.have_theirs = True
                raise _lib.error(_INVALID_ARG, (
                    "cdtypes.mpi %s: rank %d ended the call without sending the object this "
                    "rank waits for: the ranks disagree" % (_OPS[self.tag], source)))
            if tag & _OP_MASK != self.tag:
                _mpi_parts.discard(msg, status.Get_count(_BYTE))
                parts = self._drain_next(source, tag)
                self._wait_parts(parts)
                raise _lib.error(_INVALID_ARG, (
                    "cdtypes.mpi %s: rank %d sent a message of %s: the ranks disagree on the "
                    "collective operation" % (_OPS[self.tag], source,
                                              _OPS.get(tag & _OP_MASK, "tag %d" % tag))))
            if status.Get_count(_BYTE) == 0:  # §14.4: the sender has no object to send
                msg.Recv([None, 0, _BYTE])
                self.peer_failed = True
                return None, None
            head, inc, parts, err = _m._start_head(self.cc, msg, status, None, self.limits)
            self._settle(source, tag, parts, err)
        except BaseException as e:
            self.fail(e)
            return None, None
        if not forward:
            return inc, None
        oid = next(_m._ids) % _m._TAG_SPACE
        _ID.pack_into(head, 4, oid)
        out = Outgoing(head, parts.buffers if parts is not None else ([], None), oid)
        self._forwarded.append(out)
        return inc, out

    def _settle(self, source, tag, parts, err):
        """After a head's receive: its parts waited for (a head that failed and named none:
        drained by its tag), then its error raised"""
        if parts is None and err is not None:  # the head named no parts: drain by tag
            parts = self._drain_next(source, tag)
        try:
            self._wait_parts(parts)
        finally:
            if err is not None:
                raise err

    def _drain_next(self, source, tag):
        """The drain of a head's parts message found by its tag alone (§14.4): under
        PARTS_FLAG, the next parts message from ``source`` on pc, whatever its id; None
        without the flag."""
        if not tag & PARTS_FLAG:
            return None
        return _m._parts_receive(self.coll.pc, source, MPI.ANY_TAG, 0, None, True)

    def _wait_parts(self, parts):
        if parts is None:
            return
        if self.coll.yielding:
            while not parts.test():
                _yield()
        else:
            parts.wait()

    def rebuild(self, inc):
        """The object of a receive() (None: FAILED), unpickled under the call's allow-list."""
        if inc is None:
            return FAILED
        try:
            return _m._rebuild(inc, self.limits, self.policy, True)
        except BaseException as e:
            self.fail(e)
            return FAILED

    def receive_object(self, source):
        return self.rebuild(self.receive(source)[0])

    def rebuild_early(self, inc):
        """rebuild() for the receiver of a two-process bcast, which receives nothing more in
        the call: when every check passed and the stream is plain (its loading runs no code
        and cannot raise but MemoryError), its part of the agreement goes before the unpickling
        (docs/MPI.md §14.5, the early answer), so that the root's wait does not include it."""
        if inc is None:
            return FAILED
        strict = self.limits is not None
        try:
            stream, buffers, plain = inc.finish_plain()  # the scan in the decoding's call
        except BaseException as e:
            self.fail(e)
            return FAILED
        try:
            plain = plain and self.error is None and not self.peer_failed
            if plain:  # the checks _core._unpickle makes, first: after the answer, none fails
                if strict:
                    _stream.check_stream(stream, True)
                elif _core._needs_check(stream):
                    _stream.check_stream(stream, False)
        except BaseException:
            plain = False  # _unpickle below raises it, after the unpickling as without a scan
        try:
            if not plain:
                return _core._unpickle(stream, buffers, self.policy if strict else None, strict,
                                       True)
            self.coll.answer_early(self.tag, self.root)
            if self.policy is None or not strict:
                return _pickle_loads(stream, buffers=buffers)
            return self.policy.loads(stream, buffers)
        except BaseException as e:  # after an early answer: MemoryError alone (§14.5)
            self.fail(e)
            return FAILED

    def finish(self, name):
        """The agreement, then wait for this rank's sends (§14.5): raises InvalidArgumentError
        when the ranks disagree on the operation or the root (every message of the call
        consumed first), this rank's own error, or PeerError when another rank failed (the
        failed rank named)."""
        if self._frames and not self.coll.yielding:
            self._close_if_sent()
        failed, differ = self.coll.agreement(self.error is not None, self.tag, self.root,
                                             self.have_theirs)
        if self.coll.sent is not None:
            self._reqs.append(self.coll.sent)
            self.coll.sent = None
        self.conclude(name, failed, differ)

    def adopt(self, pre):
        """What a caller packed before this Call was made (lean_root): the Outgoing of its
        frame, or None for the error pickling raised (recorded), as pack() returns them."""
        if isinstance(pre, BaseException):
            self.fail(pre)
            return None
        frame, out = pre
        self._frames.append(frame)
        return out

    def conclude(self, name, failed, differ):
        """finish() after the agreement: every message consumed when the ranks disagree, this
        rank's sends waited for, its frames closed, then what the call raises."""
        if differ is not None:
            self._sweep()
        try:
            if self.coll.yielding:
                while not MPI.Request.Testall(self._reqs):
                    _yield()
            elif self._reqs:
                MPI.Request.Waitall(self._reqs)
            for frame in self._frames:
                frame.close()
        except BaseException as e:  # MPI may still read them: kept for the process's life
            self.fail(e)
            _IN_FLIGHT.append((self._frames, self._forwarded))
            self.coll.forget_requests()
        self._reqs = self._frames = self._forwarded = None
        if differ is not None:
            raise _lib.error(_INVALID_ARG, (
                "cdtypes.mpi %s: the ranks disagree on the %s (%s at one rank, %s at another); "
                "the call failed on every rank" % ((name,) + differ)))
        if self.error is not None:
            raise self.error
        if failed is not None or self.peer_failed:
            where = "a rank" if failed is None else (
                "rank %d of the communicator" if self.coll.agree is self.cc else
                "rank %d of the intercommunicator's two groups merged") % failed
            raise _lib.error(-21, "cdtypes.mpi %s: %s failed, so the collective failed on every "
                             "rank" % (name, where))

    def _close_if_sent(self):
        """Before the agreement: when this rank's sends completed already (a small head goes
        eagerly), close its frames now, while the receivers still unpickle, rather than after
        the agreement, when the next call waits for this one. A test, not a wait (§14.5
        waits only after the agreement); what it raises, the wait after it raises again."""
        try:
            if not MPI.Request.Testall(self._reqs):
                return
        except BaseException:
            return
        for frame in self._frames:
            frame.close()
        self._frames = []

    def _sweep(self):
        """After a disagreement (§14.5): consume, unread, every message of the call still
        queued for this rank on cc and pc, until this rank's sends completed and then a
        barrier of every rank did (after it, every rank's sends completed), then once more;
        a second barrier keeps every rank's next call from sending before every rank looked
        for the last time."""
        agree, queues = self.coll.agree, (self.cc, self.coll.pc)
        barrier, status = None, MPI.Status()

        def sweep():
            for q in queues:
                msg = q.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
                while msg is not None:
                    _mpi_parts.discard(msg, status.Get_count(_BYTE))
                    msg = q.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)

        while True:
            sweep()
            if barrier is None:
                if MPI.Request.Testall(self._reqs):
                    barrier = agree.Ibarrier()
            elif barrier.Test():
                break
            _yield()
        sweep()
        barrier = agree.Ibarrier()
        while not barrier.Test():
            _yield()


class _Matched:
    """The status of a message the C call matched and left (§14.5.1): what receive() reads
    of an MPI.Status, from the values the call returned."""

    __slots__ = ("source", "tag", "count")

    def __init__(self, source, tag, count):
        self.source, self.tag, self.count = source, tag, count

    def Get_source(self):  # noqa: N802 (mpi4py's names)
        return self.source

    def Get_tag(self):  # noqa: N802
        return self.tag

    def Get_count(self, datatype=None):  # noqa: N802 (bytes: every caller asks for MPI.BYTE)
        return self.count


def lean_root(coll, obj):
    """The root of a two-process bcast on an intracommunicator, without limits and without
    yielding (docs/MPI.md §14.5, the cost): the same messages, agreement and errors as
    _mpi_coll.bcast's root, in fewer steps for an object that goes whole in its head (no Call
    made unless the call fails). -> (True, the root's result), or (False, what was packed: a
    (frame, Outgoing) with parts, or the error pickling raised) for bcast to go on with."""
    oid = next(_m._ids) % _m._TAG_SPACE
    try:
        frame, head, parts, layout, stream, buffers = _b.mpi_pack_own(obj, oid, _m.THRESHOLD)
    except BaseException as e:
        return False, e
    if parts:
        return False, (frame, Outgoing(head, (parts, layout), oid))
    root, c = coll.me, coll.c
    try:
        if c is None:
            send = coll.cc.Isend([head, _BYTE], coll.pair, TAG_BCAST)
        else:  # §14.5.1: the request's handle, an int
            send = _b.mpic_isend(head, coll.pair, TAG_BCAST, c.cc)
    except BaseException:  # nothing posted: bcast's send records the error
        return False, (frame, Outgoing(head, ([], None), oid, (stream, buffers)))
    error = result = None
    try:  # its own copy from the stream it pickled (own_copy)
        result = _pickle_loads(stream) if buffers is None else _pickle_loads(stream,
                                                                             buffers=buffers)
    except BaseException as e:
        error = e
    if error is None:
        # the exchange (§14.5): this process did not fail, and its five ints are the same in
        # every call (lean_mine), so its send and its receive of the other's are persistent
        # requests, started together and waited for together (the GIL released while it
        # waits). The other's equal to them: the ranks agree and none failed; else the minimum
        # of the two, as agreement() takes it.
        mine, theirs, reqs = coll.lean_mine, coll._theirs, coll.lean_reqs
        if reqs is None:
            msgs, agree, pair = coll.lean_msgs, coll.agree, coll.pair
            reqs = coll.lean_reqs = [agree.Send_init(msgs[0], pair, AGREE_TAG),
                                     agree.Recv_init(msgs[1], pair, AGREE_TAG)]
            if c is not None:
                c.reqs = (_mpi_c.handle(reqs[0]), _mpi_c.handle(reqs[1]))
        if c is not None:
            # §14.5.1: the exchange, the comparison and the head's wait in one C call
            r = _b.mpic_root_end(c.reqs[0], c.reqs[1], send, c.mine, c.theirs)
            if r == _AGREED:
                coll.lean_calls += 1
                return True, result
            send = _mpi_c.request(send)
            if r & 3 == _EXCHANGE_FAILED:
                coll.forget_requests()
                raise _mpi_c.error(r >> 2)
            if r & 3 == _WAIT_FAILED:  # as send.Wait() raising below
                error = _mpi_c.error(r >> 2)
                _IN_FLIGHT.append(([frame], []))
                frame = None
                theirs = mine  # the ranks agreed
        else:
            try:
                _startall(reqs)
                _waitall(reqs)
            except BaseException:
                coll.forget_requests()
                raise
        if theirs == mine:
            failed = differ = None
        else:
            failed, differ = _verdict(min(_OK, theirs[0]), min(TAG_BCAST, theirs[1]),
                                      min(-TAG_BCAST, theirs[2]), min(root, theirs[3]),
                                      min(-root, theirs[4]))
        reqs = [send]
    else:
        failed, differ = coll.agreement(True, TAG_BCAST, root)
        reqs = [send] if coll.sent is None else [send, coll.sent]
        coll.sent = None
    if error is None and failed is None and differ is None:
        try:
            send.Wait()  # the frame: closed by mpi_pack_own (the head is a copy)
            coll.lean_calls += 1
            return True, result
        except BaseException as e:
            error = e
            _IN_FLIGHT.append(([frame], []))
            frame = None
    # a failure: the general tail, with what this call has
    call = _bare_call(coll, root)
    call.error = error
    if frame is not None:
        call._reqs, call._frames = reqs, [frame]
    call.conclude("bcast", failed, differ)


def _bare_call(coll, root):
    """The Call of a bcast of ``coll``'s two processes without limits, rooted at ``root``
    (checked by the caller), made without Call.__init__'s lookups (lean_root, lean_leaf)."""
    call = Call.__new__(Call)
    call.coll, call.cc, call.tag, call.root = coll, coll.cc, TAG_BCAST, root
    call.limits = call.policy = call.error = None
    call.peer_failed = call.have_theirs = False
    call._reqs, call._frames, call._forwarded = [], [], []
    return call


def lean_leaf(coll, root):
    """The receiver of a two-process bcast on an intracommunicator, without limits and without
    yielding (docs/MPI.md §14.5, the cost): the general path's receive and early answer
    (Call.receive, Call.rebuild_early) with no per-call setup (no Call.__init__, role or
    tree), and, when it answered early and nothing failed, its part of the agreement in two
    MPI calls: the root's five ints received and its early answer's send waited for. The root's
    five ints equal to its own answer (lean_mine): the ranks agree and none failed; else the
    general tail (Call.finish, or Call.conclude with the minimum of the two). The same messages,
    agreement and errors as the general path."""
    # the Call of the previous lean call when it left it as made (no failure, nothing sent or
    # received that it must wait for): taken off coll while in use, put back after a call that
    # left it so (an unpickling that calls bcast again gets a Call of its own)
    call, coll.leaf_call = coll.leaf_call, None
    if call is None:
        call = _bare_call(coll, root)
    c = coll.c
    result = call.rebuild_early(
        call.receive(root)[0] if c is None else call.receive_c(root, c)[0])
    if not coll.answered or call.error is not None or call.have_theirs or call._reqs:
        call.finish("bcast")
        return result
    theirs, mine = coll._theirs, coll._mine
    if c is not None:
        # §14.5.1: the root's five ints received, compared, and the answer's send waited for
        # in one C call
        send, coll.sent, coll.answered = coll.sent, None, False
        r = _b.mpic_leaf_end(c.theirs, coll.pair, AGREE_TAG, c.agree, c.early, c.answer)
        if r == _AGREED:
            coll.lean_leaves += 1
            coll.leaf_call = call
            return result
        if r & 3 != _DIFFER:  # the receive or the wait raised (the send may be active)
            coll.forget_requests()
            raise _mpi_c.error(r >> 2)
    else:
        coll.agree.Recv(coll.lean_msgs[1], coll.pair, AGREE_TAG)
        send, coll.sent, coll.answered = coll.sent, None, False
    if theirs == mine:
        try:
            send.Wait()
        except BaseException:
            coll.forget_requests()
            raise
        coll.lean_leaves += 1
        coll.leaf_call = call  # as _bare_call made it: nothing failed, _reqs still empty
        return result
    failed, differ = _verdict(min(mine[0], theirs[0]), min(mine[1], theirs[1]),
                              min(mine[2], theirs[2]), min(mine[3], theirs[3]),
                              min(mine[4], theirs[4]))
    call._reqs.append(send)
    call.conclude("bcast", failed, differ)
