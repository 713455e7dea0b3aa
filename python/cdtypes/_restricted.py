"""Restricted mode: unpickle untrusted streams with an allow-list of globals.

pickle runs code named by the stream (any importable callable, through GLOBAL/STACK_GLOBAL
and REDUCE). ``Restricted`` is an allow-list: its ``find_class`` resolves only the globals it
holds and refuses every other one before anything is imported. The default list holds what
protocol 5 needs for builtin values, a few standard containers and NumPy data (dtypes, arrays of
any layout, recarrays, matrices, masked arrays and scalars of every dtype that holds no Python
objects: cdtypes._restricted_numpy), whose constructors check their arguments before NumPy
sees them.

A stream is read with C pickle (``pickle.Unpickler``) until it names one of NumPy's two-step
globals (dtype, in-band arrays, masked arrays: REDUCE then BUILD); it is then read again from
the start with cdtypes._staging.StagingUnpickler, which checks BUILD's state too. Streams of
builtin values, standard containers and cdtypes' own plain arrays stay on the fast path.
"""

import io
import pickle
import re

from . import _restricted_numpy
from ._staging import Refused, Sealed, StagingUnpickler

__all__ = ["Restricted", "DEFAULT", "Refused"]

# --- the allow-list --------------------------------------------------------------------------


def _forbid(msg):
    raise Refused(msg)


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


_FRACTION_BITS = 1 << 15  # Fraction(n, d) reduces n/d by their gcd: quadratic in their size
_FRACTION_STR = re.compile(r"-?[0-9]+(/[0-9]+)?\Z")


def _fraction(numerator, denominator=None):
    """fractions.Fraction as it pickles: (numerator, denominator) ints, or one str (before
    Python 3.10), of bounded size."""
    import fractions

    if type(numerator) is str and denominator is None:
        # str(Fraction) only: "1e999999999" would make Fraction compute 10**999999999
        if len(numerator) > _FRACTION_BITS // 3 or not _FRACTION_STR.match(numerator):
            _forbid("fractions.Fraction: only 'n' or 'n/d', of bounded size")
        return fractions.Fraction(numerator)
    if (type(numerator) is not int or type(denominator) is not int
            or max(numerator.bit_length(), denominator.bit_length()) > _FRACTION_BITS):
        _forbid("fractions.Fraction: two ints of at most %d bits" % _FRACTION_BITS)
    return fractions.Fraction(numerator, denominator)


def _decimal(value="0"):
    """decimal.Decimal as it pickles: from its str."""
    import decimal

    if type(value) is not str:
        _forbid("decimal.Decimal: only a str")
    return decimal.Decimal(value)


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
    ("collections", "deque"): lambda: Sealed(_deque),
    ("collections", "Counter"): lambda: Sealed(_counter),
    ("datetime", "date"): _attr("datetime", "date"),
    ("datetime", "time"): _attr("datetime", "time"),
    ("datetime", "datetime"): _attr("datetime", "datetime"),
    ("datetime", "timedelta"): _attr("datetime", "timedelta"),
    ("datetime", "timezone"): _attr("datetime", "timezone"),
    ("decimal", "Decimal"): lambda: Sealed(_decimal),
    ("fractions", "Fraction"): lambda: Sealed(_fraction),
}
_NUMPY_ENTRIES = dict(_restricted_numpy.CALLS)
_NUMPY_ENTRIES.update(_restricted_numpy.STAGED)
_NUMPY_ENTRIES.update(_restricted_numpy.CLASSES)


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
    Counter, datetime's date, time, datetime, timedelta and timezone, decimal.Decimal,
    fractions.Fraction and, with ``numpy=True``, NumPy dtypes, arrays (any layout; ndarray,
    recarray, matrix, masked arrays) and scalars whose dtype holds no Python objects (through
    constructors that check their arguments first; docs/SECURITY.md lists them). Values
    pickle writes as opcodes (None, bool, int, float, str, bytes, bytearray, tuple, list,
    dict, set, frozenset) need no entry. ``extra`` adds entries: ``"module.qualname"``
    strings, ``(module, qualname)`` pairs, or the classes/functions themselves. Use it as
    ``cdtypes.loads(data, allowed=Restricted([MyPoint]))``.

    Every class you add is trusted with its own unpickling: pickle calls it (REDUCE/NEWOBJ)
    with arguments from the stream and then its ``__setstate__`` (or updates its
    ``__dict__``) with state from the stream. An entry you add replaces a default of the same
    name (adding ``numpy.dtype`` itself replaces the checked dtype constructor)."""

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
        # the default NumPy entries that need the staging unpickler (and were not replaced)
        self._staged = frozenset(
            k for k in self._entries
            if self._entries[k] is _restricted_numpy.STAGED.get(k)
            or self._entries[k] is _restricted_numpy.CLASSES.get(k))
        # a default two-step entry the caller replaced with NumPy's own (numpy.dtype, ...)
        self._numpy_setstate = numpy and any(
            k in self._entries and self._entries[k] is not get
            for k, get in _restricted_numpy.STAGED.items())
        self._classes = []  # the classes of CLASSES resolved so far: the stream may not call them
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
        try:
            obj = get()
        except (ImportError, AttributeError) as e:
            raise Refused("global %s.%s is not available here: %s" % (module, name, e)) from e
        if get is _restricted_numpy.CLASSES.get(key) and not any(obj is c for c in self._classes):
            self._classes.append(obj)
        self._resolved[key] = obj
        return obj

    def loads(self, stream, buffers=()):
        """Unpickle ``stream`` with only the allowed globals."""
        if buffers is not None:
            buffers = list(buffers)  # a second pass may need them again
        if self._staged:
            try:
                return _Unpickler(self, io.BytesIO(stream), buffers=buffers).load()
            except _NeedsStaging:
                pass
            return StagingUnpickler(self.find_class, self._classes, io.BytesIO(stream),
                                    buffers, self._numpy_setstate).load()
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


class _NeedsStaging(Exception):
    """The stream names a global that only the staging unpickler may resolve."""


class _Unpickler(pickle.Unpickler):
    """C pickle with the allow-list, for streams without two-step NumPy globals."""

    def __init__(self, policy, *args, **kw):
        super().__init__(*args, **kw)
        self._policy = policy

    def find_class(self, module, name):
        if (module, name) in self._policy._staged:
            raise _NeedsStaging()
        return self._policy.find_class(module, name)

    def persistent_load(self, pid):
        raise Refused("persistent IDs are not allowed")


DEFAULT = Restricted()
