"""The Python rank of the multi-language MPI job (tests/mpi/mpmd/run.sh; the C rank,
mpmd_rank.c, says what the job checks). Usage: python3 mpmd_rank.py VECTOR_DIR.

Sending: the vectors Python wrote (python_*) go through cdtypes.mpi.send of the objects
make_python.objects() holds (their frames are the vectors' bytes); every other object is a
frame of another language's stream, which Python cannot pickle, so it is sent as docs/MPI.md
sections 4-6 say, by hand: the head on the communicator, the regions of at least
cdtypes.mpi.THRESHOLD bytes as one parts message on the attached duplicate.
Receiving: every object through cdtypes.mpi's own receive (matched probe, checks, the parts
into the memory allocated from the header), then its stream and regions compared with the
vector's, byte for byte (the pickle is not rebuilt: other languages' streams are not pickles).
"""
import json
import pathlib
import struct
import sys
import traceback

from mpi4py import MPI

from cdtypes import mpi  # attaches COMM_WORLD (docs/MPI.md 2.2): the other ranks do it too

NAMES = ["c_vector_int32", "python_buffers", "python_empty_region", "python_inband",
         "rust_u32_vec_f64", "rust_vec_string", "large"]
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def large():
    """(stream, [(kind, bytes)]) of the large object (mpmd_objects.h)"""
    return bytes(range(16)), [
        (7, bytes((31 * i + 7) & 255 for i in range(1 << 20))),
        (1, bytes(range(10))),
        (12, bytes((13 * i + 1) & 255 for i in range(80000))),
    ]


def frame(stream, regions):
    """The frame of a serialized object (docs/FORMAT.md: fixed header with flag OBJECT_COUNT and
    object_count 1, region table, stream, each region 8-byte aligned with zero padding)."""
    header_size = 48 + 16 * len(regions)
    body = bytearray(stream)
    offsets = []
    for _, data in regions:
        pad = (-(header_size + len(body))) % 8
        body += bytes(pad)
        offsets.append(header_size + len(body))
        body += data
    out = bytearray(struct.pack("<4sHHQQQQQ", b"CDTF", 1, 2, header_size, len(stream),
                                len(regions), header_size + len(body), 1))
    for kind, data in regions:
        out += struct.pack("<QII", len(data), kind, 0)
    return bytes(out + body), offsets


def expected(vectors, name):
    if name == "large":
        return large()
    d = json.loads((vectors / (name + ".json")).read_text())
    return (bytes.fromhex(d["stream_hex"]),
            [(r["kind"], bytes.fromhex(r["hex"])) for r in d["regions"]])


def send_by_hand(stream, regions, dest, tag):
    """docs/MPI.md 4-6: head = prefix + the frame without its separate regions; the parts
    message = those regions, in order, on the attached duplicate under the object's id."""
    data, offsets = frame(stream, regions)
    oid = next(mpi._ids) % mpi._TAG_SPACE
    head, parts, pos = bytearray(struct.pack("<4sIQ", b"CDT2", oid, mpi.THRESHOLD)), bytearray(), 0
    for (_, r), off in zip(regions, offsets):
        if len(r) >= mpi.THRESHOLD:
            head += data[pos:off]
            parts += r
            pos = off + len(r)
    head += data[pos:]
    reqs = [comm.Isend([head, MPI.BYTE], dest, tag)]
    if parts:
        reqs.append(mpi.attach(comm).Isend([parts, MPI.BYTE], dest, oid))
    MPI.Request.Waitall(reqs)


def receive(source, tag):
    """(stream, [bytes of each region]) through cdtypes.mpi's receive, without unpickling"""
    st = MPI.Status()
    msg = comm.Mprobe(source, tag, st)
    inc, parts, err = mpi._start(comm, msg, st, None, mpi._limits(1 << 24, 64, None)[0])
    if parts is not None:
        parts.wait()
    if err is not None:
        raise err
    stream, buffers = inc.finish()
    return bytes(stream), [bytes(b) for b in buffers]


def main():
    vectors = pathlib.Path(sys.argv[1])
    sys.path.insert(0, str(vectors))
    import make_python  # the objects of the python_* vectors

    got_count = 0
    for tag, name in enumerate(NAMES):
        want_stream, want_regions = expected(vectors, name)
        for source in range(size):
            if source == rank:
                for dest in range(size):
                    if dest == rank:
                        continue
                    if name.startswith("python_"):
                        # fresh objects: pickling releases a PickleBuffer
                        obj = make_python.objects()[name[len("python_"):]]
                        mpi.send(obj, dest=dest, tag=tag)
                    else:
                        send_by_hand(want_stream, want_regions, dest, tag)
                continue
            stream, regions = receive(source, tag)
            where = "mpmd Python rank %d: object %s from rank %d" % (rank, name, source)
            assert stream == want_stream, where + ": the stream differs"
            assert len(regions) == len(want_regions), where + ": the region count differs"
            for i, (r, (_, w)) in enumerate(zip(regions, want_regions)):
                assert r == w, where + ": region %d differs" % i
            got_count += 1
    comm.Barrier()
    print("mpmd rank %d (Python): %d objects received, byte for byte ok" % (rank, got_count))


try:
    main()
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    comm.Abort(1)
