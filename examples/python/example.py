"""cdtypes in a few lines: one Python object -> one message -> the object again.

    python3 examples/python/example.py                       # encode/decode in one process
    mpiexec.mpich -n 2 python3 examples/python/example.py    # rank 0 sends to rank 1 (mpi4py)
"""
import numpy as np

import cdtypes

obj = {
    "name": "simulation step 42",
    "positions": np.random.default_rng(0).random((100_000, 3)),  # out-of-band, zero-copy
    "ids": np.arange(100_000, dtype=np.int64),                  # out-of-band, zero-copy
    "params": {"dt": 1e-3, "steps": [1, 2, 3]},                  # in the pickle stream
}


def single_process():
    with cdtypes.dumps(obj) as frame:
        print("frame: %d bytes in %d pieces, %d out-of-band buffers, head %d bytes"
              % (frame.size, len(frame.iov()), frame.nbuffers, len(frame.head)))
        data = frame.tobytes()  # or send frame.iov() with a vectored write (no copy)
    back = cdtypes.loads(data)
    assert np.array_equal(back["positions"], obj["positions"])
    print("decoded:", back["name"], back["positions"].shape, back["ids"].dtype)
    try:
        cdtypes.loads(data[:-1])
    except cdtypes.FrameError as e:
        print("truncated frame ->", type(e).__name__ + ":", e)


def two_ranks(comm):
    from cdtypes import mpi

    if comm.rank == 0:
        mpi.send(obj, dest=1, tag=0)  # ONE MPI message, arrays read in place
    elif comm.rank == 1:
        back = mpi.recv(source=0, tag=0)
        print("rank 1 received", back["name"], "arrays equal:",
              np.array_equal(back["ids"], obj["ids"]))


if __name__ == "__main__":
    import os

    if any(k in os.environ for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")):
        from mpi4py import MPI

        two_ranks(MPI.COMM_WORLD)
    else:
        single_process()
