"""The collectives of cdtypes.mpi's pkl5 API (bcast, gather, scatter, allgather, alltoall) on
intra- and intercommunicators, in their simplest correct form (docs/MPI.md §14): every object
is one cdtypes.mpi object message (head and parts, §4-§7) from the rank that has it to each
rank that needs it, on a communicator private to the collectives (a duplicate of the user's,
made collectively at its first collective call and attached), under a tag per operation; so
they never match a user's message, ANY_SOURCE and ANY_TAG included.

LATER (issue 27, item 3): a tree for bcast, a ring or direct exchange for allgather/alltoall
chosen by measurement, packing once at the root and forwarding without repacking, receive
limits, and every rank raising (never hanging) when one rank fails. Until then an exception at
one rank (the root's pickling, a wrong length of scatter's list) leaves the others waiting, as
in mpi4py.util.pkl5."""

from mpi4py import MPI

from . import mpi as _m

# docs/MPI.md §14.2: the tags of the collectives' messages on the collective communicator
TAG_BCAST, TAG_GATHER, TAG_SCATTER, TAG_ALLGATHER, TAG_ALLTOALL = 1, 2, 3, 4, 5

_COLL_KEYVAL = MPI.Comm.Create_keyval()  # on a user's communicator: its collective duplicate


def _coll_comm(comm):
    """The collectives' communicator of ``comm`` (§14.1): made at the first collective call,
    which every rank of ``comm`` (both groups of an intercommunicator) makes."""
    cc = comm.Get_attr(_COLL_KEYVAL)
    if cc is None:
        cc = MPI.Comm.Dup(comm)
        _m.attach(cc)
        comm.Set_attr(_COLL_KEYVAL, cc)
    return cc


def _free_attached(comm):
    pc = comm.Get_attr(_m._KEYVAL)
    if pc is not None:
        comm.Delete_attr(_m._KEYVAL)
        MPI.Comm.Free(pc)


def release(comm):
    """Free what cdtypes.mpi made for ``comm`` (its collective and parts duplicates);
    collective, as MPI_Comm_free. Called by Comm.Free."""
    cc = comm.Get_attr(_COLL_KEYVAL)
    if cc is not None:
        comm.Delete_attr(_COLL_KEYVAL)
        _free_attached(cc)
        MPI.Comm.Free(cc)
    _free_attached(comm)


def _bad_root(comm):  # pkl5's error for a root out of range
    comm.Call_errhandler(MPI.ERR_ROOT)
    raise MPI.Exception(MPI.ERR_ROOT)


def _roles(comm, root):
    """(collective communicator, am I the root, do I receive from the root, ranks the root
    serves). Intercommunicator: root is MPI.ROOT at the root, MPI.PROC_NULL at the other ranks
    of its group, the root's rank in the remote group at the ranks of the other group."""
    if comm.Is_inter():
        if root == MPI.PROC_NULL:
            return _coll_comm(comm), False, False, 0
        if root == MPI.ROOT:
            return _coll_comm(comm), True, False, comm.Get_remote_size()
        if not 0 <= root < comm.Get_remote_size():
            _bad_root(comm)
        return _coll_comm(comm), False, True, 0
    size = comm.Get_size()
    if not 0 <= root < size:
        _bad_root(comm)
    is_root = comm.Get_rank() == root
    return _coll_comm(comm), is_root, True, size if is_root else 0


def _peers(comm):
    return comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()


def _items(objs, size):
    if objs is None:
        return [None] * size
    objs = list(objs)
    if len(objs) != size:
        raise ValueError(f"expecting {size} items, got {len(objs)}")
    return objs


def _exchange(cc, tag, outgoing, sources):
    """Send outgoing[dest] to each dest (non-blocking), receive one object from each of
    ``sources`` in order, then wait for the sends -> the received objects."""
    sends = [_m.isend(obj, dest, tag, cc) for dest, obj in outgoing]
    try:
        return [_m.recv(source, tag, cc) for source in sources]
    finally:
        for request in sends:
            request.wait()


def bcast(comm, obj, root):
    """The root sends ``obj`` to every rank (itself included on an intracommunicator, so that
    every rank gets its own copy, as with pkl5)."""
    cc, is_root, receives, nout = _roles(comm, root)
    outgoing = [(dest, obj) for dest in range(nout)] if is_root else []
    got = _exchange(cc, TAG_BCAST, outgoing, [root] if receives else [])
    return got[0] if got else None


def gather(comm, obj, root):
    cc, is_root, receives, nout = _roles(comm, root)
    outgoing = [(root, obj)] if receives else []
    got = _exchange(cc, TAG_GATHER, outgoing, range(nout) if is_root else [])
    return got if is_root else None


def scatter(comm, objs, root):
    cc, is_root, receives, nout = _roles(comm, root)
    outgoing = list(enumerate(_items(objs, nout))) if is_root else []
    got = _exchange(cc, TAG_SCATTER, outgoing, [root] if receives else [])
    return got[0] if got else None


def allgather(comm, obj):
    cc, size = _coll_comm(comm), _peers(comm)
    return _exchange(cc, TAG_ALLGATHER, [(dest, obj) for dest in range(size)], range(size))


def alltoall(comm, objs):
    cc, size = _coll_comm(comm), _peers(comm)
    objs = _items(objs, size)
    return _exchange(cc, TAG_ALLTOALL, list(enumerate(objs)), range(size))
