"""NumPy arrays in cdtypes' pickle streams: a reducer and the reconstructor it names.

NumPy pickles a contiguous array (protocol 5) as
``numpy._core.numeric._frombuffer(PickleBuffer, dtype, shape, order)``: its ``__reduce_ex__``
costs 1.3-1.5 us per array, the dtype travels as its own reduce (two globals and a state
tuple), and the receiver runs frombuffer + reshape in Python. cdtypes writes a contiguous
ndarray (the exact type) of a plain dtype (bool, integers, floats, complex, fixed-size bytes and
str, either byte order; no fields, subarray or metadata) instead as

    cdtypes._arrays.rebuild(PickleBuffer(array), descr, shape)         C order
    cdtypes._arrays.rebuild(PickleBuffer(array), descr, shape, "F")    Fortran order

where ``descr`` is ``dtype.str`` ("<f8", "|u1", ">i4", "<U10"). ``rebuild`` makes the array on
the received buffer (no copy). Everything else (non-contiguous arrays, object, structured or
datetime dtypes, subclasses) is pickled the normal way.

With the C extension (CPython), ``reduce`` and ``rebuild`` are its C functions
(cdtypes._ext), published here under these names; without it (PyPy, the cffi backend) the
Python versions below. Both write the same bytes and read what the other wrote.

The stream is still plain pickle: any process with this version of cdtypes installed unpickles
it (``pickle.loads(stream, buffers=...)`` imports cdtypes._arrays), and the restricted loader
(cdtypes.Restricted) allows ``rebuild`` with its arguments checked.
"""
import pickle
import re
import sys

__all__ = ["rebuild", "reduce", "Pickler", "dumps", "dump_pieces", "PLAIN_DESCR"]

# the descr of a plain dtype as the reducer writes it: byte order, kind, item size
PLAIN_DESCR = re.compile(r"[<>|=]?[biufcSU][0-9]{1,10}\Z")

_np = None  # numpy, once it is imported (nothing here imports it on the sending side)
_descrs = {}  # sender: id(dtype) -> (dtype, descr, or None when not plain)
_dtypes = {}  # receiver: descr -> (dtype, itemsize)
_CACHE_MAX = 256


def _numpy(import_it=False):
    global _np
    if _np is None:
        np = sys.modules.get("numpy")
        if np is None and import_it:
            import numpy as np
        if np is not None and hasattr(np, "ndarray") and hasattr(np, "dtype"):
            _np = np
    return _np


def _descr_of(dtype):
    """dtype.str when the dtype is plain (the string says all of it), else None."""
    try:
        if dtype.fields is not None or dtype.subdtype is not None or dtype.metadata is not None:
            return None
        descr = dtype.str
        if dtype.itemsize <= 0 or type(descr) is not str or not PLAIN_DESCR.match(descr):
            return None
        # interned: arrays of equal dtypes name one string, which the pickler memoizes
        return sys.intern(descr) if _np.dtype(descr) == dtype else None
    except Exception:
        return None


def _py_reduce(obj):
    """reducer_override: (rebuild, (PickleBuffer, descr, shape[, "F"])) for a contiguous
    ndarray of a plain dtype, NotImplemented for everything else."""
    np = _np or _numpy()  # imported whenever a Pickler runs (dumps checks it)
    if np is None or type(obj) is not np.ndarray:
        return NotImplemented
    dtype = obj.dtype
    # by identity, as the C version: equal dtypes may differ in what equality ignores
    entry = _descrs.get(id(dtype))
    if entry is None or entry[0] is not dtype:
        if len(_descrs) >= _CACHE_MAX:
            _descrs.clear()
        entry = _descrs[id(dtype)] = (dtype, _descr_of(dtype))
    descr = entry[1]
    if descr is None:
        return NotImplemented
    flags = obj.flags
    if flags.c_contiguous:
        order = None
    elif flags.f_contiguous:
        order = "F"
    else:
        return NotImplemented
    try:
        pb = pickle.PickleBuffer(obj)
    except (TypeError, ValueError, BufferError):
        return NotImplemented
    if order is None:
        return rebuild, (pb, descr, obj.shape)
    return rebuild, (pb, descr, obj.shape, order)


def _dtype_of(descr):
    try:
        return _dtypes[descr]
    except (KeyError, TypeError):
        pass
    if type(descr) is not str:
        raise TypeError("cdtypes._arrays.rebuild: descr must be a str, not %s"
                        % type(descr).__name__)
    if not PLAIN_DESCR.match(descr):
        raise ValueError("cdtypes._arrays.rebuild: %.80r is not the descr of a plain NumPy "
                         "dtype (byte order, kind among biufcSU, item size)" % (descr,))
    np = _numpy(True)
    dtype = np.dtype(descr)
    if _descr_of(dtype) != descr:
        raise ValueError("cdtypes._arrays.rebuild: %.80r is not the canonical descr of a plain "
                         "NumPy dtype" % (descr,))
    if len(_dtypes) >= _CACHE_MAX:
        _dtypes.clear()
    entry = _dtypes[descr] = (dtype, dtype.itemsize)
    return entry


def _py_rebuild(buffer, descr, shape, order="C"):
    """The array of dtype ``descr`` and ``shape`` on ``buffer``'s memory (no copy; read-only
    when the buffer is). The buffer must hold exactly the array's bytes."""
    if type(order) is not str or order not in ("C", "F"):
        raise ValueError("cdtypes._arrays.rebuild: order must be 'C' or 'F', not %.80r"
                         % (order,))
    dtype, nbytes = _dtype_of(descr)
    if type(shape) is not tuple:
        raise TypeError("cdtypes._arrays.rebuild: shape must be a tuple of ints, not %s"
                        % type(shape).__name__)
    for n in shape:
        if type(n) is not int or n < 0:
            raise ValueError("cdtypes._arrays.rebuild: shape must be a tuple of non-negative "
                             "ints, not %.200r" % (shape,))
        nbytes *= n
    if nbytes > sys.maxsize:
        raise ValueError("cdtypes._arrays.rebuild: shape %.200r of %s overflows the address "
                         "space" % (shape, descr))
    with memoryview(buffer) as m:
        have = m.nbytes
    if have != nbytes:
        raise ValueError("cdtypes._arrays.rebuild: the buffer has %d bytes, an array of shape "
                         "%.200r and dtype %s needs %d" % (have, shape, descr, nbytes))
    if len(shape) == 1:  # the cheapest call
        return _np.frombuffer(buffer, dtype)
    if order == "C":
        return _np.ndarray(shape, dtype, buffer)
    return _np.ndarray(shape, dtype, buffer, 0, None, "F")


_py_rebuild.__name__ = _py_rebuild.__qualname__ = "rebuild"
_py_reduce.__name__ = _py_reduce.__qualname__ = "reduce"

try:  # the C versions (CPython); their names say cdtypes._arrays.rebuild / reduce
    from ._ext import rebuild, reduce  # noqa: F401
except ImportError:
    rebuild, reduce = _py_rebuild, _py_reduce


class Pickler(pickle.Pickler):
    """pickle.Pickler whose reducer_override is ``reduce``."""

    reducer_override = staticmethod(reduce)


class _PlainPickler(pickle.Pickler):
    """pickle.Pickler without the array reducer (numpy is not imported: nothing to reduce,
    and no call per object to find that out)."""


# at most one (pickler, sink) not in use of each kind: list.pop / append are atomic
_idle = []
_idle_plain = []


def dump_pieces(obj, protocol, buffer_callback):
    """The pickle stream of obj (pickle.dumps(obj, protocol, buffer_callback=...), with the
    array reducer once numpy was imported) as the pickler wrote it: a list of bytes pieces
    whose concatenation is the stream. The pickler writes a payload of 64 KiB or more (a large
    bytes object) as a piece of its own, by reference: a sender that can send pieces
    (cdt_sobj's inband_parts) does not copy it into a joined stream. A pickler is kept and
    reused, as in the C extension (a new one costs about 1 us here), unless its memo grew with
    a large object."""
    plain = _numpy() is None
    idle = _idle_plain if plain else _idle
    try:
        p, sink = idle.pop() if protocol == 5 else ((), None)
    except IndexError:
        p = ()
    if not p:
        sink = _Sink()
        p = (_PlainPickler if plain else Pickler)(sink, protocol, buffer_callback=sink.buffer)
    sink.callback = buffer_callback
    try:
        p.dump(obj)
        pieces = sink.parts
    finally:
        p.clear_memo()
        sink.reset()
    if protocol == 5 and not idle and len(pieces) == 1 and len(pieces[0]) <= _REUSE_MAX_STREAM:
        idle.append((p, sink))
    return pieces


def dumps(obj, protocol, buffer_callback):
    """pickle.dumps(obj, protocol, buffer_callback=...) with the array reducer, once numpy was
    imported (without numpy, plain pickle.dumps): dump_pieces joined."""
    if _numpy() is None:
        return pickle.dumps(obj, protocol, buffer_callback=buffer_callback)
    pieces = dump_pieces(obj, protocol, buffer_callback)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


_REUSE_MAX_STREAM = 2048  # a pickler that wrote more is not kept (its memo table stays large)


class _Sink:
    __slots__ = ("parts", "callback")

    def __init__(self):
        self.parts = []
        self.callback = None

    def write(self, data):
        self.parts.append(bytes(data) if type(data) is not bytes else data)

    def buffer(self, pb):
        return self.callback(pb)

    def reset(self):
        self.parts = []  # a new list: the one handed out by dump_pieces stays as it is
        self.callback = None
