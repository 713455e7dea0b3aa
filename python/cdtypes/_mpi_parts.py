"""The receiving end of one object's parts message (cdtypes.mpi, receiver rules 2 to 5 in its
docstring): matched under (source, id) on the parts communicator, its byte count checked
against what the head announced before a byte lands in the object's buffers, the wait for it
bounded, and the parts that earlier drains gave up on consumed first. Specified in
docs/MPI.md §7.3 (the parts receive), §8.3 (drains) and §8.4 (owed parts)."""

import threading
import time

from mpi4py import MPI

from . import _lib

# per source, at most this many ids whose parts a drain gave up waiting for are remembered
# (docs/MPI.md §8.4, §12)
OWED_MAX = 1024
_BYTE = MPI.BYTE
# a wait with a deadline polls (Improbe) without sleeping for this long, as MPI's own blocking
# calls do (sleeping from the start tripled the latency of a 4 MiB object), then sleeps between
# polls, each sleep twice the last, up to _SLEEP_MAX (seconds)
_SPIN, _SLEEP_MIN, _SLEEP_MAX = 0.01, 1e-5, 1e-3


# a matched message this small is received whole when it is discarded (no truncation)
DISCARD_WHOLE_MAX = 65536


def discard(msg, nbytes):
    """Consume the matched message ``msg`` of ``nbytes`` bytes without keeping its bytes
    (docs/MPI.md §8.3). Up to DISCARD_WHOLE_MAX bytes it is received whole into a scratch
    buffer; a longer one takes a zero-byte receive into no buffer (NULL), which MPI completes
    with a truncation error. A zero-byte receive into a real buffer is not safe: Open MPI
    4.1's single-copy shared-memory path writes the whole message into the buffer given,
    whatever the count (docs/MPI.md §13.3 item 2)."""
    if 0 <= nbytes <= DISCARD_WHOLE_MAX:
        msg.Recv([bytearray(nbytes or 1), nbytes, _BYTE])
        return
    try:
        msg.Recv([None, 0, _BYTE])
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_TRUNCATE:
            raise


class Owed:
    """The parts messages that drains gave up waiting for, per (source, id), on one parts
    communicator. Each may still arrive; MPI matches one sender's messages under one tag in the
    order they were sent, so the next object from that source under that id consumes that many
    messages before its own. docs/MPI.md §8.4."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_source = {}  # source -> {id: count}, oldest first

    def add(self, source, oid, n=1):
        with self._lock:
            owed = self._by_source.setdefault(source, {})
            owed[oid] = owed.pop(oid, 0) + n
            while len(owed) > OWED_MAX:  # forget the oldest: only this source's objects
                del owed[next(iter(owed))]  # could meet its part

    def take(self, source, oid):
        """How many stale messages precede the next one under (source, id); forgets them."""
        if not self._by_source:  # the common case, without the lock
            return 0
        with self._lock:
            owed = self._by_source.get(source)
            if not owed or oid not in owed:
                return 0
            n = owed.pop(oid)
            if not owed:
                del self._by_source[source]
            return n


def _count_error(source, oid, got, want):
    return _lib.error(
        -12 if got < want else -11,  # CDT_ERR_FRAME_TRUNCATED / CDT_ERR_FRAME_MALFORMED
        "rank %d sent a parts message of %d bytes for object %d, its head announced %d"
        % (source, got, oid, want))


class PartsReceive:
    """The parts message of one object whose head was matched. ``post(message)`` (an MPI
    Message matched here) posts its receive into the object's buffers and returns the request;
    post None drains: the message is consumed unread, whatever its size. ``deadline``
    (time.monotonic()) bounds the wait for the message to be matched; None waits as MPI_Recv.
    A receive that passes its deadline raises CdtTimeoutError; a drain gives up quietly. Either
    way the id is recorded as owed (Owed) so that its late part never reaches another object.
    docs/MPI.md §7.3 (steps 1-5) and §8.3."""

    def __init__(self, pc, owed, source, oid, nbytes, post, deadline):
        self._pc, self._owed, self._post = pc, owed, post
        self.source, self.oid, self.nbytes = source, oid, nbytes
        self._deadline = deadline
        self._stale = owed.take(source, oid)
        self._status = MPI.Status()
        self._req = None
        self._done = False
        # (buffers, layout) of a receive, as _parts_message takes them: set by mpi._parse,
        # read by the collectives, which forward the received parts from that memory
        self.buffers = None

    def start(self, msg, status):
        """The parts message was matched already (``msg``, ``status``: in line with its head,
        docs/MPI.md §2.3): check its count and post its receive."""
        self._status = status
        self._matched(msg)

    def test(self):
        """One step that never blocks: True once the parts were received or drained."""
        return self._step(False)

    def wait(self):
        if self._step(True):
            return
        spin_end, sleep = time.monotonic() + _SPIN, _SLEEP_MIN
        while not self._step(True):  # only with a deadline: polled
            if time.monotonic() >= spin_end:
                time.sleep(sleep)
                sleep = min(2 * sleep, _SLEEP_MAX)

    def _step(self, block):
        while not self._done and self._req is None:
            if block and self._deadline is None:
                msg = self._pc.Mprobe(self.source, self.oid, self._status)
            else:
                msg = self._pc.Improbe(self.source, self.oid, self._status)
            if msg is None:
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    self._give_up()
                return False
            self._matched(msg)
        if self._req is not None:
            if block:
                self._req.Wait(self._status)
            elif not self._req.Test(self._status):
                return False
            self._req = None
            self._done = True
            got = self._status.Get_count(_BYTE)
            if got != self.nbytes:  # matched with this count: MPI delivered something else
                raise _count_error(self.source, self.oid, got, self.nbytes)
        return True

    def _matched(self, msg):
        got = self._status.Get_count(_BYTE)
        if self._stale:  # a part of an earlier object under this id: sent, so matched, first
            discard(msg, got)
            self._stale -= 1
            return
        if self._post is None:
            discard(msg, got)
            self._done = True
            return
        if got != self.nbytes:
            discard(msg, got)
            self._done = True
            raise _count_error(self.source, self.oid, got, self.nbytes)
        self._req = self._post(msg)

    def _give_up(self):
        self._owed.add(self.source, self.oid, self._stale + 1)
        self._stale = 0
        self._done = True
        if self._post is not None:
            raise _lib.error(
                -23,  # CDT_ERR_TIMEOUT
                "rank %d: the parts message of object %d (%d bytes) did not arrive within "
                "cdtypes.mpi.PARTS_TIMEOUT of its head" % (self.source, self.oid, self.nbytes))
