"""Run under `mpiexec -n N` (N >= 2), or alone (a singleton: Spawn only): the communicators a
framework makes itself and wraps with the pkl5 API, none of them attached (docs/MPI.md §2.3):
Intercomm.Merge, Comm.Spawn (the parent's intercommunicator, the children's Get_parent(), and
both merged), Open_port + Accept/Connect. On each, objects with large NumPy buffers travel
both ways; the buffers never go in band (an application's probe sees a head of a few KiB),
every object arrives byte for byte, received by the pkl5 API and by cdtypes.mpi.recv, and
nothing stays queued. Arguments: the phases to run, of merge, port and spawn (default: all);
`child` is the spawned side (started by Spawn). MPICH built with the ch4:ucx device (4.0)
supports neither Open_port nor Spawn ("not supported with ucx netmod"): test_mpi.py runs
those phases where the MPI library can."""
import faulthandler
import os
import sys
import zlib

import numpy as np
from mpi4py import MPI

from cdtypes import mpi

CHILD = sys.argv[1:] == ["child"]
PHASES = set(sys.argv[1:]) or {"merge", "port", "spawn"}
CHILDREN = 2  # processes Spawn starts
world = MPI.COMM_WORLD
size, rank = world.Get_size(), world.Get_rank()
faulthandler.dump_traceback_later(
    120 * float(os.environ.get("CDTYPES_WATCHDOG_SCALE", "1")), exit=True)  # python/asan.sh: 4


def _abort(*exc):  # a failed rank ends the job at once, instead of leaving its peers waiting
    sys.__excepthook__(*exc)
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = _abort
HEAD_MAX = 4096  # what a head with no large buffer in it stays under


def payload(seed):
    """8 NumPy arrays of 64 KiB to 1 MiB (every one over the threshold), of several dtypes and
    shapes, with one small array and plain objects: about 3.5 MiB"""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, dtype in enumerate((np.float64, np.int32, np.uint8, np.complex128) * 2):
        n = (mpi.THRESHOLD + i * 131072) // np.dtype(dtype).itemsize
        a = rng.integers(0, 255, n).astype(dtype)
        arrays.append(a.reshape(-1, 2) if i % 2 else a)
    return {"seed": seed, "arrays": arrays, "small": np.arange(7) * seed, "text": "x" * 50}


def digest(obj):
    return [(a.dtype.str, a.shape, zlib.crc32(a.tobytes())) for a in obj["arrays"]]


def check(obj, seed):
    want = payload(seed)
    assert obj["seed"] == seed, (obj["seed"], seed)
    assert digest(obj) == digest(want), "object %d differs" % seed
    for got, expect in zip(obj["arrays"], want["arrays"]):
        assert got.tobytes() == expect.tobytes() and got.flags.writeable
    assert (obj["small"] == want["small"]).all() and obj["text"] == want["text"]


def exchange(comm, peers, label, tag=40):
    """``comm`` (a pkl5 wrapper, not attached): send ``dest`` two objects, receive the two of
    ``peer`` (one with the pkl5 API, one with cdtypes.mpi.recv), every buffer out of band.
    ``peers`` is (dest, peer), or None for a rank that sits this one out."""
    assert comm.Get_attr(mpi._KEYVAL) is None, label
    if peers is not None:
        dest, peer = peers
        me = comm.Get_rank()
        seeds = [1000 * me + tag, 1000 * me + tag + 1]
        peer_seeds = [1000 * peer + tag, 1000 * peer + tag + 1]
        requests = [comm.isend(payload(s), dest, tag + k) for k, s in enumerate(seeds)]
        st = MPI.Status()
        MPI.Comm.Probe(comm, peer, tag, st)  # an application's probe sees the head alone
        assert st.Get_count(MPI.BYTE) < HEAD_MAX, (label, st.Get_count(MPI.BYTE))
        status = MPI.Status()
        check(comm.recv(None, peer, tag, status), peer_seeds[0])
        assert status.Get_source() == peer and status.Get_count(MPI.BYTE) > (3 << 20)
        check(mpi.recv(peer, tag + 1, comm), peer_seeds[1])
        mpi.Request.waitall(requests)
    MPI.Comm.Barrier(comm)
    assert not MPI.Comm.Iprobe(comm, MPI.ANY_SOURCE, MPI.ANY_TAG), label + ": left queued"
    MPI.Comm.Barrier(comm)
    if peers is not None:
        print("%s: rank %d from %d byte for byte" % (label, comm.Get_rank(), peer))


def intra_peer(comm):
    """a ring: to the right, from the left"""
    n, me = comm.Get_size(), comm.Get_rank()
    return ((me + 1) % n, (me - 1) % n) if n >= 2 else None


def inter_peer(comm):
    """rank i of one group with rank i of the other; the larger group's extra ranks sit out"""
    me = comm.Get_rank()
    return (me, me) if me < comm.Get_remote_size() else None


def spawned(inter, parent_side):
    """the Spawn intercommunicator, then both sides merged (children after parents)"""
    inter = mpi.Intercomm(inter)
    exchange(inter, inter_peer(inter), "spawn intercomm")
    merged = mpi.Intracomm(MPI.Intercomm.Merge(inter, not parent_side))
    exchange(merged, intra_peer(merged), "spawn merged")
    merged.Free()
    inter.Disconnect()


if CHILD:
    spawned(MPI.Comm.Get_parent(), False)
    sys.exit(0)

# Merge of an intercommunicator made with Create_intercomm
if "merge" in PHASES and size >= 2:
    local = world.Split(rank % 2, rank)
    inter = local.Create_intercomm(0, world, 1 - rank % 2, 7)
    wrapped = mpi.Intercomm(inter)
    exchange(wrapped, inter_peer(wrapped), "Create_intercomm")
    merged = mpi.Intracomm(MPI.Intercomm.Merge(inter, rank % 2 == 1))
    exchange(merged, intra_peer(merged), "Merge")
    merged.Free()
    inter.Free()
    local.Free()

# Open_port + Accept / Connect between the two halves of the job
if "port" in PHASES and size >= 2:
    accepting = rank < (size + 1) // 2
    local = world.Split(0 if accepting else 1, rank)
    port = MPI.Open_port() if rank == 0 else None
    port = world.bcast(port, root=0)
    if accepting:
        inter = local.Accept(port, root=0)
    else:
        inter = local.Connect(port, root=0)
    wrapped = mpi.Intercomm(inter)
    exchange(wrapped, inter_peer(wrapped), "Accept/Connect")
    merged = mpi.Intracomm(MPI.Intercomm.Merge(inter, not accepting))
    exchange(merged, intra_peer(merged), "Accept/Connect merged")
    merged.Free()
    wrapped.Disconnect()
    world.Barrier()
    if rank == 0:
        MPI.Close_port(port)
    local.Free()

# Spawn: every rank of this job is a parent, CHILDREN processes run this script as children
if "spawn" in PHASES:
    inter = world.Spawn(sys.executable, [__file__, "child"], maxprocs=CHILDREN, root=0)
    spawned(inter, True)
world.Barrier()
print("rank %d of %d: ok" % (rank, size))
sys.stdout.flush()
