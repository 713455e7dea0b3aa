"""The NumPy entries of the restricted loader's allow-list (cdtypes._restricted).

NumPy pickles (protocol 5):

- a dtype as ``numpy.dtype(args)`` then BUILD(state): ``args`` is a kind and size ("f8",
  "<U3" is "U3" plus the state's byte order, "V12", "M8") or the class ``numpy.record``; the
  state a tuple (version 3: byte order, subarray, names, fields, itemsize, alignment, flags;
  version 4 adds metadata, or for datetimes their unit);
- an array that is C-, Fortran- or permuted-contiguous out of band as
  ``numpy._core.numeric._frombuffer(buffer, dtype, shape, order[, axis_order])`` (cdtypes
  writes plain ones as ``cdtypes._arrays.rebuild``);
- every other array (non-contiguous, subclasses such as recarray and matrix) in-band as
  ``_reconstruct(cls, (0,), b"b")`` then BUILD((1, shape, dtype, is_fortran, bytes));
- a masked array as ``numpy.ma.core._mareconstruct(MaskedArray, ndarray, (0,), "b")`` then
  BUILD((1, shape, dtype, is_fortran, data bytes, mask bytes, fill_value));
- a scalar as ``numpy._core.multiarray.scalar(dtype, bytes)``.

Each entry here checks every argument and state before NumPy sees it: dtypes are rebuilt from
a checked copy of their state with NumPy's public constructors (never ``dtype.__setstate__``),
no dtype may hold Python objects, shapes are tuples of non-negative ints, byte strings must
hold exactly the array's bytes; only then do NumPy's own functions (``ndarray.__setstate__``,
``MaskedArray.__setstate__``, ``scalar``, ``frombuffer``) make the object, so that it is the
object pickle would have made. The two-step ones are ``Staged`` (cdtypes._staging).
"""
import importlib
import re
import sys

from ._staging import Sealed, Staged, forbid

__all__ = ["STAGED", "CLASSES", "CALLS"]


def _np():
    import numpy

    return numpy


def _multiarray():
    try:
        from numpy._core import multiarray  # NumPy 2
    except ImportError:  # NumPy 1
        from numpy.core import multiarray
    return multiarray


# --- dtypes -----------------------------------------------------------------------------------

_DTYPE_STR = re.compile(r"[<>|=]?[a-zA-Z][0-9]{0,9}\Z")
_DTYPE_CHARS = set("?bBhHiIlLqQpPefdgFDGSUVucMm")  # kinds and codes; no O (objects)
_DATETIME_UNITS = frozenset(
    ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic"])
_ALIGNED_STRUCT = 0x80  # NPY_ALIGNED_STRUCT in the state's flags


def real_dtype(d):
    """``d`` if it is a NumPy dtype that holds no Python objects; refused otherwise."""
    np = _np()
    if not isinstance(d, np.dtype):
        forbid("a dtype was expected, not %s" % type(d).__name__)
    if d.hasobject:
        forbid("dtypes holding Python objects are not allowed")
    return d


def _int_tuple(t, what):
    if type(t) is not tuple or not all(type(x) is int and 0 <= x < 1 << 62 for x in t):
        forbid("%s must be a tuple of non-negative ints" % what)
    return t


def _dtype_start(args):
    """numpy.dtype(obj, align=False, copy=True) as NumPy's dtype.__reduce__ writes it."""
    np = _np()
    if not 1 <= len(args) <= 3:
        forbid("numpy.dtype takes 1 to 3 arguments")
    obj, align, copy = (args + (False, True))[:3]
    if type(align) is not bool or type(copy) is not bool:
        forbid("numpy.dtype: align and copy must be bools")
    if obj is np.record:
        pass
    elif (type(obj) is not str or not _DTYPE_STR.match(obj)
            or obj.lstrip("<>|=")[0] not in _DTYPE_CHARS):
        forbid("numpy.dtype(%.80r) is not allowed" % (obj,))
    return lambda state: _dtype_from_state(obj, state)


def _metadata(md):
    if md is not None and type(md) is not dict:
        forbid("numpy dtype metadata must be a dict")
    return md  # NumPy 1 gives datetimes an empty dict, which pickle keeps


def _datetime(base, info):
    """'M8' / 'm8' with the state's unit: (metadata, (unit bytes, count, 1, 1))."""
    np = _np()
    if type(info) is not tuple or len(info) != 2:
        forbid("malformed numpy datetime dtype state")
    md, unit = info
    if (type(unit) is not tuple or not 2 <= len(unit) <= 4 or type(unit[0]) is not bytes
            or type(unit[1]) is not int or not 1 <= unit[1] < 1 << 31):
        forbid("malformed numpy datetime unit")
    name = unit[0].decode("ascii", "replace")
    if name not in _DATETIME_UNITS or (name == "generic" and unit[1] != 1):
        forbid("numpy datetime unit %.20r is not allowed" % (name,))
    spec = base if name == "generic" else "%s[%d%s]" % (base, unit[1], name)
    return np.dtype(spec), _metadata(md)


def _structured(names, fields, itemsize, flags):
    np = _np()
    if (type(names) is not tuple or type(fields) is not dict or type(itemsize) is not int
            or itemsize < 0):
        forbid("malformed numpy structured dtype")
    formats, offsets, titles = [], [], []
    title_keys = set()
    for name in names:
        if type(name) is not str:
            forbid("numpy field names must be str")
        f = fields.get(name)
        if type(f) is not tuple or len(f) not in (2, 3):
            forbid("malformed numpy structured dtype field")
        formats.append(real_dtype(f[0]))
        if type(f[1]) is not int or f[1] < 0:
            forbid("malformed numpy field offset")
        offsets.append(f[1])
        title = f[2] if len(f) == 3 else None
        if title is not None:
            # NumPy lists a titled field under its title as well, with the same tuple
            if type(title) is not str or fields.get(title) != f or title in names:
                forbid("malformed numpy field title")
            title_keys.add(title)
        titles.append(title)
    if len(set(names)) != len(names) or set(fields) != set(names) | title_keys:
        forbid("malformed numpy structured dtype")
    spec = {"names": list(names), "formats": formats, "offsets": offsets, "itemsize": itemsize}
    if title_keys:
        spec["titles"] = titles
    return np.dtype(spec, align=bool(flags & _ALIGNED_STRUCT))


def _dtype_from_state(base, state):
    """Build the dtype with NumPy's public constructors from a checked copy of the state that
    dtype.__reduce__ produces, so that dtype.__setstate__ never sees a crafted state."""
    np = _np()
    try:
        if type(state) is not tuple or (state[:1], len(state)) not in (((3,), 8), ((4,), 9)):
            forbid("unsupported numpy dtype state")
        _, order, sub, names, fields, itemsize, alignment, flags = state[:8]
        extra = state[8] if len(state) == 9 else None
        if order not in ("<", ">", "|", "=") or type(itemsize) is not int or type(flags) is not int:
            forbid("malformed numpy dtype state")
        record = base is np.record
        md = None
        if record and names is None:
            forbid("numpy.record dtypes have fields")
        if sub is not None:
            if type(sub) is not tuple or len(sub) != 2 or names is not None:
                forbid("malformed numpy subarray dtype")
            d = np.dtype((real_dtype(sub[0]), _int_tuple(sub[1], "a subarray shape")))
            md = _metadata(extra)
        elif names is not None:
            d = _structured(names, fields, itemsize, flags)
            md = _metadata(extra)
        else:
            if fields is not None:
                forbid("malformed numpy dtype state")
            kind = base.lstrip("<>|=")[0]
            if kind in "Mm":
                d, md = _datetime(base, extra)
            else:
                d = np.dtype(base)
                md = _metadata(extra)
            if order in ("<", ">") and d.byteorder != "|":
                d = d.newbyteorder(order)
            if itemsize not in (-1, d.itemsize):
                forbid("numpy dtype itemsize disagrees with its type")
        if record:
            d = np.dtype((np.record, d))
        if md is not None:
            d = np.dtype(d, metadata=md)
        return real_dtype(d)
    except (TypeError, ValueError, KeyError, OverflowError, UnicodeError) as e:
        forbid("invalid numpy dtype: %s" % (e,))


# --- arrays -------------------------------------------------------------------------------


def _nbytes(shape, dtype):
    n = dtype.itemsize
    for x in shape:
        n *= x
    if n > sys.maxsize:
        forbid("an array of shape %.200r overflows the address space" % (shape,))
    return n


def _frombuffer(buf, dtype, shape, order, axis_order=None):
    """numpy._core.numeric._frombuffer (an array that travels out of band), arguments checked
    first; order "K" with axis_order is a permuted-contiguous array (NumPy 2.4)."""
    np = _np()
    d = real_dtype(dtype)
    _int_tuple(shape, "an array shape")
    if type(order) is not str or order not in ("C", "F", "A", "K"):
        forbid("array order %.80r" % (order,))
    if axis_order is not None and (
            order != "K" or type(axis_order) is not tuple
            or sorted(axis_order) != list(range(len(shape)))
            or not all(type(i) is int for i in axis_order)):
        forbid("array axis order %.80r" % (axis_order,))
    try:
        array = np.frombuffer(buf, dtype=d)
        if axis_order is not None:
            return array.reshape(shape, order="C").transpose(axis_order)
        return array.reshape(shape, order=order)
    except (TypeError, ValueError, BufferError) as e:
        forbid("invalid array: %s" % (e,))


def _rebuild(buf, descr, shape, order="C"):
    """cdtypes._arrays.rebuild (how cdtypes writes a contiguous array of a plain dtype),
    arguments checked first: descr a plain dtype string, shape a tuple of non-negative ints,
    order 'C' or 'F', a buffer of exactly the array's bytes."""
    from . import _arrays

    if type(descr) is not str or not _arrays.PLAIN_DESCR.match(descr):
        forbid("array descr %.80r is not a plain NumPy dtype" % (descr,))
    _int_tuple(shape, "an array shape")
    if type(order) is not str or order not in ("C", "F"):
        forbid("array order %.80r" % (order,))
    try:
        return _arrays.rebuild(buf, descr, shape, order)
    except (TypeError, ValueError, BufferError) as e:
        forbid("invalid array: %s" % (e,))


def _scalar(dtype, data=None):
    """numpy._core.multiarray.scalar (a NumPy scalar), arguments checked first."""
    d = real_dtype(dtype)
    if type(data) is not bytes or len(data) != d.itemsize:
        forbid("numpy scalar data must be %d bytes" % d.itemsize)
    try:
        return _multiarray().scalar(d, data)
    except (TypeError, ValueError) as e:
        forbid("invalid numpy scalar: %s" % (e,))


def _array_classes():
    np = _np()
    return (np.ndarray, np.recarray, np.matrix)


def _empty_args(shape, typecode):
    """What NumPy's reduce gives _reconstruct / _mareconstruct: an empty int8 array, filled
    by BUILD. Nothing else: a large shape here would be allocated before BUILD."""
    if type(shape) is not tuple or shape != (0,) or typecode not in (b"b", "b"):
        forbid("an in-band array starts as shape (0,) of type 'b'")


def _array_state(state, n):
    """(shape, dtype, is_fortran, data, rest) of an in-band array's state of ``n`` items
    (5: ndarray, 7: masked array), checked."""
    if type(state) is not tuple or len(state) != n or state[0] != 1:
        forbid("malformed numpy array state")
    _, shape, dtype, is_fortran, data = state[:5]
    _int_tuple(shape, "an array shape")
    d = real_dtype(dtype)
    if type(is_fortran) is not bool:
        forbid("malformed numpy array state (order)")
    if type(data) is not bytes or len(data) != _nbytes(shape, d):
        forbid("numpy array data must be %d bytes" % _nbytes(shape, d))
    return shape, d, is_fortran, data


def _reconstruct_start(args):
    """numpy._core.multiarray._reconstruct(cls, (0,), b"b") then BUILD(state): an array
    pickled in-band (not contiguous, or a subclass: recarray, matrix)."""
    np = _np()
    if len(args) != 3 or not any(args[0] is c for c in _array_classes()):
        forbid("_reconstruct makes ndarray, recarray or matrix only")
    cls = args[0]
    _empty_args(args[1], args[2])

    def finish(state):
        shape, d, is_fortran, data = _array_state(state, 5)
        obj = np.ndarray.__new__(cls, (0,), "b")
        try:
            np.ndarray.__setstate__(obj, (1, shape, d, is_fortran, data))
        except (TypeError, ValueError) as e:
            forbid("invalid numpy array state: %s" % (e,))
        return obj

    return finish


def _fill_value(fv, dtype):
    """A masked array's fill value as NumPy pickles it: None, or a 0-d array / scalar of a
    plain dtype (NumPy 1 wrote scalars and Python numbers)."""
    np = _np()
    if fv is None or type(fv) in (bool, int, float, complex, str, bytes):
        return fv
    if type(fv) is np.ndarray and fv.shape == () or isinstance(fv, np.generic):
        real_dtype(fv.dtype)
        return fv
    forbid("a masked array's fill value must be None, a number, a string or a 0-d array")


def _mareconstruct_start(args):
    """numpy.ma.core._mareconstruct(MaskedArray, ndarray, (0,), "b") then BUILD(state)."""
    np = _np()
    import numpy.ma

    if (len(args) != 4 or args[0] is not numpy.ma.MaskedArray
            or not any(args[1] is c for c in _array_classes())):
        forbid("_mareconstruct makes a MaskedArray of ndarray, recarray or matrix only")
    _empty_args(args[2], args[3])
    subtype, baseclass = args[0], args[1]

    def finish(state):
        shape, d, is_fortran, data = _array_state(state, 7)
        mask, fv = state[5], state[6]
        mask_dtype = numpy.ma.make_mask_descr(d)
        if type(mask) is not bytes or len(mask) != _nbytes(shape, mask_dtype):
            forbid("masked array mask must be %d bytes" % _nbytes(shape, mask_dtype))
        fv = _fill_value(fv, d)
        obj = numpy.ma.core._mareconstruct(subtype, baseclass, (0,), "b")
        try:
            obj.__setstate__((1, shape, d, is_fortran, data, mask, fv))
        except (TypeError, ValueError, OverflowError) as e:
            forbid("invalid masked array state: %s" % (e,))
        return obj

    return finish


# --- the entries ------------------------------------------------------------------------------


def _attr(module, name):
    def get():
        return getattr(importlib.import_module(module), name)

    return get


def _staged(name, start):
    return lambda: Staged(name, start)


# two-step constructors: the restricted loader reads streams that name them with
# cdtypes._staging.StagingUnpickler
STAGED = {
    ("numpy", "dtype"): _staged("numpy.dtype", _dtype_start),
    ("numpy._core.multiarray", "_reconstruct"): _staged("_reconstruct", _reconstruct_start),
    ("numpy.core.multiarray", "_reconstruct"): _staged("_reconstruct", _reconstruct_start),
    ("numpy.ma.core", "_mareconstruct"): _staged("_mareconstruct", _mareconstruct_start),
}

# classes that are arguments of those (and values): never called by the stream
CLASSES = {
    ("numpy", "ndarray"): _attr("numpy", "ndarray"),
    ("numpy", "recarray"): _attr("numpy", "recarray"),
    ("numpy.rec", "recarray"): _attr("numpy", "recarray"),
    ("numpy.core.records", "recarray"): _attr("numpy", "recarray"),
    ("numpy._core.records", "recarray"): _attr("numpy", "recarray"),
    ("numpy", "matrix"): _attr("numpy", "matrix"),
    ("numpy.matrixlib.defmatrix", "matrix"): _attr("numpy", "matrix"),
    ("numpy.ma", "MaskedArray"): _attr("numpy.ma", "MaskedArray"),
    ("numpy.ma.core", "MaskedArray"): _attr("numpy.ma", "MaskedArray"),
    ("numpy", "record"): _attr("numpy", "record"),
}

# one-step constructors
_sealed = {fn: (lambda f: lambda: Sealed(f))(fn) for fn in (_frombuffer, _rebuild, _scalar)}
CALLS = {
    ("cdtypes._arrays", "rebuild"): _sealed[_rebuild],
    ("numpy._core.numeric", "_frombuffer"): _sealed[_frombuffer],
    ("numpy.core.numeric", "_frombuffer"): _sealed[_frombuffer],
    ("numpy._core.multiarray", "scalar"): _sealed[_scalar],
    ("numpy.core.multiarray", "scalar"): _sealed[_scalar],
}
