"""Restricted mode: unpickle untrusted streams with an allow-list of globals.

pickle runs code named by the stream (any importable callable, through GLOBAL/STACK_GLOBAL
and REDUCE). ``Restricted`` is an allow-list: its ``find_class`` resolves only the globals it
holds and refuses every other one before anything is imported. The default list holds what
protocol 5 needs for builtin values, a few standard containers and NumPy arrays (as NumPy pickles
them, and as cdtypes writes contiguous arrays of plain dtypes: cdtypes._arrays.rebuild); the
constructors are wrapped so that their arguments (dtype state or descr, shapes, buffers) are
checked before NumPy sees them.
"""

import io
import pickle
import re

__all__ = ["Restricted", "DEFAULT", "Refused"]

# --- the allow-list --------------------------------------------------------------------------


def _forbid(msg):
    raise Refused(msg)


class Refused(pickle.UnpicklingError):
    """A global outside the allow-list, or arguments an allowed constructor refuses."""


def _np():
    import numpy

    return numpy


_DTYPE_STR = re.compile(r"[<>|=]?[a-zA-Z][0-9]{0,9}\Z")
_DTYPE_CHARS = set("?bBhHiIlLqQpPefdgFDGSUVuc")  # kinds and codes; no O (objects), M/m (datetimes)


class _DtypeSpec:
    """What numpy.dtype(...) + BUILD(state) describe, before any NumPy code runs on it."""

    __slots__ = ("args", "dtype")

    def __init__(self, args):
        self.args = args
        self.dtype = None

    def __setstate__(self, state):
        self.dtype = _dtype_from_state(self.args, state)

    def real(self):
        if self.dtype is None:
            self.dtype = _dtype_from_state(self.args, None)
        return self.dtype


def _dtype_factory(obj, align=False, copy=True):
    if (not isinstance(obj, str) or not _DTYPE_STR.match(obj)
            or obj.lstrip("<>|=")[0] not in _DTYPE_CHARS):
        _forbid("numpy.dtype(%r) is not allowed" % (obj,))
    if type(align) is not bool or type(copy) is not bool:
        _forbid("numpy.dtype: align and copy must be bools")
    return _DtypeSpec(obj)


def _real_dtype(d):
    np = _np()
    if isinstance(d, _DtypeSpec):
        d = d.real()
    if not isinstance(d, np.dtype):
        _forbid("a dtype was expected, not %s" % type(d).__name__)
    if d.hasobject:
        _forbid("dtypes holding Python objects are not allowed")
    return d


def _int_tuple(t, what):
    if type(t) is not tuple or not all(type(x) is int and 0 <= x < 1 << 62 for x in t):
        _forbid("%s must be a tuple of non-negative ints" % what)
    return t


def _dtype_from_state(base, state):
    """Build the dtype with NumPy's public constructors from a checked copy of the state that
    dtype.__reduce__ produces (version 3: byteorder, subarray, names, fields, itemsize,
    alignment, flags), so that dtype.__setstate__ never sees a crafted state."""
    np = _np()
    try:
        if state is None:
            return _real_dtype(np.dtype(base))
        if type(state) is not tuple or len(state) != 8 or state[0] != 3:
            _forbid("unsupported numpy dtype state")
        _, order, sub, names, fields, itemsize, alignment, flags = state
        if order not in ("<", ">", "|", "=") or type(itemsize) is not int or type(flags) is not int:
            _forbid("malformed numpy dtype state")
        if sub is not None:
            if type(sub) is not tuple or len(sub) != 2:
                _forbid("malformed numpy subarray dtype")
            d = np.dtype((_real_dtype(sub[0]), _int_tuple(sub[1], "a subarray shape")))
        elif names is not None:
            if type(names) is not tuple or type(fields) is not dict or set(names) != set(fields):
                _forbid("malformed numpy structured dtype")
            formats, offsets, titles = [], [], []
            for name in names:
                f = fields[name]
                if type(name) is not str or type(f) is not tuple or len(f) not in (2, 3):
                    _forbid("malformed numpy structured dtype field")
                formats.append(_real_dtype(f[0]))
                if type(f[1]) is not int or f[1] < 0:
                    _forbid("malformed numpy field offset")
                offsets.append(f[1])
                title = f[2] if len(f) == 3 else None
                if title is not None and type(title) is not str:
                    _forbid("malformed numpy field title")
                titles.append(title)
            if itemsize < 0:
                _forbid("malformed numpy itemsize")
            spec = {"names": list(names), "formats": formats, "offsets": offsets,
                    "itemsize": itemsize}
            if any(t is not None for t in titles):
                spec["titles"] = titles
            d = np.dtype(spec, align=bool(flags & 0x80))
        else:
            d = np.dtype(base)
            if order in ("<", ">") and d.byteorder != "|":
                d = d.newbyteorder(order)
            if itemsize not in (-1, d.itemsize):
                _forbid("numpy dtype itemsize disagrees with its type")
        return _real_dtype(d)
    except Refused:
        raise
    except (TypeError, ValueError, KeyError) as e:
        _forbid("invalid numpy dtype: %s" % (e,))


def _frombuffer(buf, dtype, shape, order):
    """numpy.core.numeric._frombuffer (how an out-of-band array comes back), arguments
    checked first."""
    np = _np()
    d = _real_dtype(dtype)
    _int_tuple(shape, "an array shape")
    if order not in ("C", "F", "A", "K"):
        _forbid("array order %r" % (order,))
    try:
        return np.frombuffer(buf, dtype=d).reshape(shape, order=order)
    except (TypeError, ValueError, BufferError) as e:
        _forbid("invalid array: %s" % (e,))


def _rebuild(buf, descr, shape, order="C"):
    """cdtypes._arrays.rebuild (how cdtypes writes a contiguous array of a plain dtype),
    arguments checked first: descr a plain dtype string, shape a tuple of non-negative ints,
    order 'C' or 'F', a buffer of exactly the array's bytes."""
    from . import _arrays

    if type(descr) is not str or not _arrays.PLAIN_DESCR.match(descr):
        _forbid("array descr %.80r is not a plain NumPy dtype" % (descr,))
    _int_tuple(shape, "an array shape")
    if type(order) is not str or order not in ("C", "F"):
        _forbid("array order %.80r" % (order,))
    try:
        return _arrays.rebuild(buf, descr, shape, order)
    except (TypeError, ValueError, BufferError) as e:
        _forbid("invalid array: %s" % (e,))


def _scalar(dtype, data=None):
    """numpy.core.multiarray.scalar (a NumPy scalar), arguments checked first."""
    np = _np()
    d = _real_dtype(dtype)
    if type(data) is not bytes or len(data) != d.itemsize:
        _forbid("numpy scalar data must be %d bytes" % d.itemsize)
    return np.frombuffer(data, dtype=d)[0].copy()


def _deque(iterable=(), maxlen=None):
    import collections

    if type(iterable) not in (list, tuple) or (maxlen is not None and type(maxlen) is not int):
        _forbid("collections.deque: only list/tuple contents and an int maxlen")
    return collections.deque(iterable, maxlen)


def _counter(mapping=None):
    import collections

    if mapping is not None and type(mapping) is not dict:
        _forbid("collections.Counter: only a dict")
    return collections.Counter(mapping or {})


def _builtin(name):
    import builtins

    return getattr(builtins, name)


def _attr(module, name):
    def get():
        import importlib

        return getattr(importlib.import_module(module), name)

    return get


# (module, name) -> a function returning what find_class gives for it. Everything else is
# refused. Values that pickle protocol 5 writes with opcodes alone (None, bool, int, float,
# str, bytes, bytearray, tuple, list, dict, set, frozenset, out-of-band PickleBuffers) need no
# entry. Constructors that would take an iterator or a size (list, bytearray, range ...) are
# absent on purpose: list(range(10**12)) is a two-entry pickle.
_DEFAULT_ENTRIES = {
    ("builtins", "complex"): lambda: complex,
    ("builtins", "slice"): lambda: slice,
    ("collections", "OrderedDict"): _attr("collections", "OrderedDict"),
    ("collections", "deque"): lambda: _deque,
    ("collections", "Counter"): lambda: _counter,
    ("datetime", "date"): _attr("datetime", "date"),
    ("datetime", "time"): _attr("datetime", "time"),
    ("datetime", "datetime"): _attr("datetime", "datetime"),
    ("datetime", "timedelta"): _attr("datetime", "timedelta"),
    ("datetime", "timezone"): _attr("datetime", "timezone"),
}
_NUMPY_ENTRIES = {
    ("cdtypes._arrays", "rebuild"): lambda: _rebuild,
    ("numpy", "dtype"): lambda: _dtype_factory,
    ("numpy._core.numeric", "_frombuffer"): lambda: _frombuffer,
    ("numpy.core.numeric", "_frombuffer"): lambda: _frombuffer,
    ("numpy._core.multiarray", "scalar"): lambda: _scalar,
    ("numpy.core.multiarray", "scalar"): lambda: _scalar,
}


def _key(entry):
    if isinstance(entry, str):
        module, sep, name = entry.rpartition(".")
        if not sep or not module or not name:
            raise ValueError("allow-list entries are 'module.name': %r" % (entry,))
        return (module, name), None
    if isinstance(entry, tuple) and len(entry) == 2:
        return (entry[0], entry[1]), None
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if not module or not name:
        raise ValueError("%r has no module and name to allow" % (entry,))
    return (module, name), entry


class Restricted:
    """An allow-list of the globals (classes, functions) an untrusted pickle stream may name.

    ``Restricted()`` holds the defaults: complex, slice, collections.OrderedDict / deque /
    Counter, datetime's date, time, datetime, timedelta and timezone and, with ``numpy=True``,
    NumPy arrays, dtypes and scalars (through constructors that check their arguments first).
    Values pickle writes as opcodes (None, bool, int, float, str, bytes, bytearray, tuple, list,
    dict, set, frozenset) need no entry. ``extra`` adds entries: ``"module.qualname"`` strings,
    ``(module, qualname)`` pairs, or the classes/functions themselves. Use it as
    ``cdtypes.loads(data, allowed=Restricted([MyPoint]))``.

    Every class you add is trusted with its own unpickling: pickle calls it (REDUCE/NEWOBJ)
    with arguments from the stream and then its ``__setstate__`` (or updates its
    ``__dict__``) with state from the stream."""

    def __init__(self, extra=(), *, defaults=True, numpy=True):
        self._entries = {}
        if defaults:
            self._entries.update(_DEFAULT_ENTRIES)
            if numpy:
                self._entries.update(_NUMPY_ENTRIES)
        for e in extra:
            key, obj = _key(e)
            if obj is None:
                self._entries[key] = _attr(*key) if "." not in key[1] else _qual(*key)
            else:
                self._entries[key] = (lambda o: lambda: o)(obj)
        self._resolved = {}

    @property
    def names(self):
        """The allowed globals as ``"module.name"`` strings."""
        return frozenset("%s.%s" % k for k in self._entries)

    def find_class(self, module, name):
        """What the stream's global ``module.name`` resolves to; raises a pickle.UnpicklingError
        subclass for anything not on the list (nothing is imported then)."""
        key = (module, name)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        get = self._entries.get(key)
        if get is None:
            raise Refused("global %s.%s is not in the allow-list" % (module, name))
        obj = self._resolved[key] = get()
        return obj

    def loads(self, stream, buffers=()):
        """Unpickle ``stream`` with only the allowed globals."""
        return _Unpickler(self, io.BytesIO(stream), buffers=buffers).load()

    def __repr__(self):
        return "<cdtypes.Restricted %d globals>" % len(self._entries)


def _qual(module, qualname):
    def get():
        import importlib

        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj

    return get


class _Unpickler(pickle.Unpickler):
    def __init__(self, policy, *args, **kw):
        super().__init__(*args, **kw)
        self._policy = policy

    def find_class(self, module, name):
        return self._policy.find_class(module, name)

    def persistent_load(self, pid):
        raise Refused("persistent IDs are not allowed")


DEFAULT = Restricted()
