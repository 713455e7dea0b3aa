"""The collectives of cdtypes.mpi's pkl5 API (bcast, gather, scatter, allgather, alltoall) on
intra- and intercommunicators (docs/MPI.md §14, normative). Every object travels as an ordinary
cdtypes.mpi object (a head and, for large buffers, one parts message), packed once by the rank
that has it and, where it passes through other ranks, forwarded as it was received: its head
and its buffers, never unpickled and pickled again on the way, and its out-of-band arrays sent
from the memory they were received into.

- bcast: a binomial tree rooted at the root (intercommunicator: the root sends to every rank
  of the remote group);
- gather, scatter: directly between the root and each rank;
- allgather: direct exchange (every rank sends its object to every rank), or a ring from
  ALLGATHER_RING ranks up (bench/run pycoll measures both);
- alltoall: direct exchange.

Every receive takes max_bytes / max_regions / allowed as a point-to-point receive does. A rank
that fails (its object does not pickle, a receive over a limit, a malformed frame, a scatter
list of the wrong length) sends failure markers in place of the objects it owes, and every call
ends with an agreement (one MPI_Allreduce of five ints: who failed, the operation and the root
each as lowest and highest; at two processes an exchange of them, which bcast's receiver posts
before unpickling a plain object): every rank raises, none waits for ever, and ranks that
disagree on the operation or the root fail instead of shifting later calls.
_mpi_coll_call.py holds the per-call machinery."""

from mpi4py import MPI

from . import mpi as _m
from ._mpi_coll_call import Call, attached, lean_leaf, lean_root, local_copy, own_copy
from ._mpi_coll_call import TAG_BCAST, release  # noqa: F401 (release: _mpi_pkl5)

# docs/MPI.md §14.2: the tags of the collectives' messages on the collective communicator
# (bcast's, 1, in _mpi_coll_call, whose lean_root sends it)
TAG_GATHER, TAG_SCATTER, TAG_ALLGATHER, TAG_ALLTOALL = 2, 3, 4, 5
# allgather on an intracommunicator of at least this many ranks runs as a ring (§14.3); below,
# as a direct exchange: one round of concurrent sends instead of p - 1 dependent steps, each
# waiting for the whole object to arrive before it is forwarded. Measured (bench/run pycoll,
# bench/results/pycoll_findings.md): at 2 ranks both are the same exchange; at 3 and 4 ranks on
# a 2-core machine the oversubscribed timings do not separate them. The threshold of 8, where
# a rank's p - 1 concurrent sends of one object should start to contend, is not measured yet
# (it needs a node with more cores); every rank must choose alike, so it depends on p alone.
ALLGATHER_RING = 8


def _bad_root(comm):  # pkl5's error for a root out of range
    comm.Call_errhandler(MPI.ERR_ROOT)
    raise MPI.Exception(MPI.ERR_ROOT)


def _role(comm, call, root):
    """'root', 'leaf' (receives from the root or sends to it) or 'none' (an
    intercommunicator's MPI.PROC_NULL); a root out of range raises MPI_ERR_ROOT here, on every
    rank, before anything is sent (as pkl5)."""
    coll = call.coll
    if coll.inter:
        if root == MPI.PROC_NULL:
            return "none"  # states no root in the agreement
        if root == MPI.ROOT:
            call.root = comm.Get_rank()  # what the other group passes as root (§14.5)
            return "root"
    if not 0 <= root < coll.peers:
        _bad_root(comm)
    call.root = root
    return "leaf" if coll.inter or coll.me != root else "root"


def _items(call, objs, size):
    """scatter's and alltoall's list, or None (recorded as this rank's failure) when it is not
    an iterable of ``size`` items"""
    try:
        objs = [None] * size if objs is None else list(objs)
        if len(objs) != size:
            raise ValueError(f"expecting {size} items, got {len(objs)}")
        return objs
    except BaseException as e:
        call.fail(e)
        return None


def _mine(call, obj, out=None):
    """This rank's own item (nothing travels): rebuilt from ``out``, its packed form when it
    was packed to be sent too, else a local copy; None (recorded) if that fails"""
    try:
        return local_copy(obj) if out is None else own_copy(out, obj)
    except BaseException as e:
        call.fail(e)
        return None


def binomial_tree(rank, size, root):
    """(parent or None, children) of ``rank`` in bcast's binomial tree (§14.3): ranks relative
    to the root; the parent of r clears r's lowest set bit; children farthest first."""
    rel = (rank - root) % size
    mask, parent = 1, None
    while mask < size:
        if rel & mask:
            parent = (rank - mask) % size
            break
        mask <<= 1
    children = []
    mask >>= 1
    while mask > 0:
        if rel + mask < size:
            children.append((rank + mask) % size)
        mask >>= 1
    return parent, children


def _tree(coll, root):
    tree = coll.trees.get(root)
    if tree is None:
        tree = coll.trees[root] = binomial_tree(coll.me, coll.peers, root)
    return tree


def bcast(comm, obj, root, max_bytes=None, max_regions=None, allowed=None):
    pre = None
    if type(root) is int and max_bytes is None and max_regions is None and allowed is None:
        coll = attached(comm)  # no MPI call after the first (a cache on comm)
        # two processes on an intracommunicator, not yielding: this one the root, or the
        # other one (lean_root: its rank in comm is its rank in agree, coll.pair)
        if coll is not None and coll.lean_root is not None and not coll.yielding:
            if root == coll.lean_root:
                _m._thread_check()
                done, pre = lean_root(coll, obj)
                if done:
                    return pre
            elif root == coll.pair:
                _m._thread_check()
                return lean_leaf(coll, root)
    call = Call(comm, TAG_BCAST, max_bytes, max_regions, allowed)
    role = _role(comm, call, root)
    coll = call.coll
    result = None
    if coll.inter:
        if role == "root":
            out = call.pack(obj)
            for dest in range(coll.peers):
                call.send(out, dest)
        elif role == "leaf":
            if coll.pair is not None:  # one receiver, one root: it may answer early (§14.5)
                result = call.rebuild_early(call.receive(root)[0])
            else:
                result = call.receive_object(root)
    else:
        parent, children = _tree(coll, root)
        if parent is None:
            out = call.pack(obj, True) if pre is None else call.adopt(pre)
            for child in children:
                call.send(out, child)
            if out is not None:
                result = _mine(call, obj, out)
        else:
            inc, out = call.receive(parent, forward=bool(children))
            for child in children:
                call.send(out, child)
            # two processes: the receiver receives nothing more and may answer early (§14.5)
            result = call.rebuild_early(inc) if coll.pair is not None else call.rebuild(inc)
    call.finish("bcast")
    return result


def gather(comm, obj, root, max_bytes=None, max_regions=None, allowed=None):
    call = Call(comm, TAG_GATHER, max_bytes, max_regions, allowed)
    role = _role(comm, call, root)
    result = None
    if role == "root":
        me = call.coll.me
        result = [_mine(call, obj) if source == me else call.receive_object(source)
                  for source in range(call.coll.peers)]
    elif role == "leaf":
        call.send(call.pack(obj), root)
    call.finish("gather")
    return result


def scatter(comm, objs, root, max_bytes=None, max_regions=None, allowed=None):
    call = Call(comm, TAG_SCATTER, max_bytes, max_regions, allowed)
    role = _role(comm, call, root)
    result = None
    if role == "root":
        size, me = call.coll.peers, call.coll.me
        objs = _items(call, objs, size)
        for dest in range(size):
            if dest != me:
                call.send(None if objs is None else call.pack(objs[dest]), dest)
        if me is not None and objs is not None:
            result = _mine(call, objs[me])
    elif role == "leaf":
        result = call.receive_object(root)
    call.finish("scatter")
    return result


def _allgather_ring(call, obj, rank, size):
    """Step k = 1 .. size-1: send right what came from the left at step k-1 (at step 1, this
    rank's own object), receive from the left the object of rank - k (§14.3)."""
    right, left = (rank + 1) % size, (rank - 1) % size
    result = [None] * size
    out = call.pack(obj, True)
    if out is not None:
        result[rank] = _mine(call, obj, out)
    for k in range(1, size):
        call.send(out, right)
        inc, out = call.receive(left, forward=k < size - 1)
        result[(rank - k) % size] = call.rebuild(inc)
    return result


def allgather(comm, obj, max_bytes=None, max_regions=None, allowed=None):
    call = Call(comm, TAG_ALLGATHER, max_bytes, max_regions, allowed)
    size, me = call.coll.peers, call.coll.me
    if me is not None and size >= ALLGATHER_RING:
        result = _allgather_ring(call, obj, me, size)
    else:
        out = call.pack(obj, me is not None)
        for dest in range(size):
            if dest != me:
                call.send(out, dest)
        result = [(out and _mine(call, obj, out)) if source == me
                  else call.receive_object(source) for source in range(size)]
    call.finish("allgather")
    return result


def alltoall(comm, objs, max_bytes=None, max_regions=None, allowed=None):
    call = Call(comm, TAG_ALLTOALL, max_bytes, max_regions, allowed)
    size, me = call.coll.peers, call.coll.me
    objs = _items(call, objs, size)
    for dest in range(size):
        if dest != me:
            call.send(None if objs is None else call.pack(objs[dest]), dest)
    result = [(None if objs is None else _mine(call, objs[me])) if source == me
              else call.receive_object(source) for source in range(size)]
    call.finish("alltoall")
    return result
