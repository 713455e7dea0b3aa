"""The restricted loader's unpickler for objects that pickle builds in two steps.

pickle rebuilds a NumPy dtype, an array pickled in-band and a masked array in two steps: REDUCE
calls a global (``numpy.dtype``, ``_reconstruct``, ``_mareconstruct``) and BUILD then hands the
new object a state tuple from the stream (``obj.__setstate__(state)``). NumPy's ``__setstate__``
methods trust that state (a crafted dtype state crashed NumPy 2.4, docs/SECURITY.md), so the
restricted loader never gives it to them unchecked. It cannot check it inside C pickle, which
offers no hook at BUILD: this unpickler, pickle's pure-Python one with a few opcodes replaced,
does the two steps itself:

- REDUCE of a ``Staged`` global (a checked NumPy constructor) does not call anything: it checks
  the arguments and pushes a ``Pending`` object;
- BUILD on a ``Pending`` checks the state, makes the real object with NumPy's own constructors
  from the checked values, and puts it where the ``Pending`` was: on the stack and under every
  memo index that held it. Nothing else may see a ``Pending``: reading it back from the memo
  (GET) or duplicating it (DUP) is refused, and a stream that ends while a ``Pending`` (or a
  ``Staged`` global that no REDUCE called) was taken elsewhere, into a container or an
  argument, is refused at STOP. So the object a caller gets never holds a placeholder;
- calling (REDUCE, NEWOBJ, INST, OBJ) one of the ``uncallable`` classes (NumPy's array classes,
  allowed as arguments of the checked constructors only) is refused, and so is BUILD on
  anything whose state NumPy or the allow-list owns (NumPy objects, classes, functions,
  ``Staged`` and ``Sealed`` entries).

Everything else behaves as ``pickle._Unpickler`` (the same code). It is slower than C pickle,
so the restricted loader runs it only for streams that name a staged global (cdtypes._restricted).
"""
import pickle
import sys
import types

__all__ = ["Refused", "Staged", "Pending", "Sealed", "StagingUnpickler"]


class Refused(pickle.UnpicklingError):
    """A global outside the allow-list, or arguments an allowed constructor refuses."""


def forbid(msg):
    raise Refused(msg)


class _Frozen:
    """Instances whose attributes pickle's BUILD cannot change (no __dict__, no setattr)."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise AttributeError("%s is read-only" % type(self).__name__)

    __delattr__ = __setattr__


class Sealed(_Frozen):
    """A Python function of the allow-list, handed out in this wrapper: a plain function has
    a __dict__ and writable __defaults__, which a stream's BUILD could otherwise change for
    every later load in the process."""

    __slots__ = ("_fn", "__name__")

    def __init__(self, fn):
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "__name__", fn.__name__)

    def __call__(self, *args):
        return self._fn(*args)

    def __repr__(self):
        return "<cdtypes checked %s>" % self.__name__


class Staged(_Frozen):
    """A global whose object is made in two steps: ``start(args)`` checks REDUCE's arguments
    and returns ``finish(state)``, which checks BUILD's state and returns the object."""

    __slots__ = ("name", "start")

    def __init__(self, name, start):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "start", start)

    def __repr__(self):
        return "<cdtypes staged %s>" % self.name


class Pending(_Frozen):
    """The object of a Staged global between REDUCE and BUILD, and the memo indices that hold
    it (they get the real object at BUILD)."""

    __slots__ = ("name", "finish", "keys")

    def __init__(self, name, finish):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "finish", finish)
        object.__setattr__(self, "keys", [])


class _Memo(dict):
    """pickle's memo; notes the indices that hold a Pending."""

    __slots__ = ()

    def __setitem__(self, key, value):
        if type(value) is Pending:
            value.keys.append(key)
        dict.__setitem__(self, key, value)


_BASE = pickle._Unpickler
_CODE = {name: getattr(pickle, name)[0] for name in (
    "REDUCE", "BUILD", "NEWOBJ", "NEWOBJ_EX", "GET", "BINGET", "LONG_BINGET", "DUP", "STOP")}


def _is_numpy_object(obj):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, (np.ndarray, np.generic, np.dtype))


class StagingUnpickler(_BASE):
    """pickle._Unpickler with ``find_class`` and the two-step opcodes described above."""

    dispatch = dict(_BASE.dispatch)

    def __init__(self, find_class, uncallable, file, buffers, numpy_setstate=False):
        super().__init__(file, buffers=buffers)
        self.memo = _Memo()
        self._find_class = find_class
        self._uncallable = uncallable  # classes allowed as values and arguments, not calls
        # the caller's allow-list holds NumPy's own numpy.dtype or _reconstruct: their objects
        # get their state from NumPy's __setstate__, as with C pickle
        self._numpy_setstate = numpy_setstate
        self._open = 0  # Staged globals and Pending objects pushed and not yet consumed

    def find_class(self, module, name):
        obj = self._find_class(module, name)
        if type(obj) is Staged:
            self._open += 1  # every caller of find_class but INST pushes what it returns
        return obj

    def persistent_load(self, pid):
        raise Refused("persistent IDs are not allowed")

    def _check_call(self, func):
        if type(func) in (Staged, Pending):
            forbid("%s may only be called by REDUCE" % (func.name,))
        if any(func is c for c in self._uncallable):  # identity: no __eq__ of the stream's
            forbid("%s.%s may not be called by the stream" % (func.__module__, func.__name__))

    def _pushed(self):
        top = self.stack[-1]
        if type(top) is Pending:
            forbid("%s is used before its state (BUILD)" % (top.name,))
        if type(top) is Staged:
            self._open += 1

    def load_reduce(self):
        stack = self.stack
        func = stack[-2] if len(stack) >= 2 else None
        if type(func) is Staged:
            args = stack.pop()
            if type(args) is not tuple:
                forbid("%s: REDUCE needs an argument tuple" % (func.name,))
            stack[-1] = Pending(func.name, func.start(args))  # the Staged is consumed
            return
        self._check_call(func)
        _BASE.load_reduce(self)

    dispatch[_CODE["REDUCE"]] = load_reduce

    def load_build(self):
        stack = self.stack
        if len(stack) >= 2:
            inst = stack[-2]
            if type(inst) is Pending:
                state = stack.pop()
                obj = inst.finish(state)
                stack[-1] = obj
                memo = self.memo
                for key in inst.keys:
                    if memo.get(key) is inst:
                        dict.__setitem__(memo, key, obj)
                self._open -= 1
                return
            if (isinstance(inst, (type, types.FunctionType, types.BuiltinFunctionType, _Frozen))
                    or (not self._numpy_setstate and _is_numpy_object(inst))):
                forbid("BUILD on %s is not allowed" % type(inst).__name__)
        _BASE.load_build(self)

    dispatch[_CODE["BUILD"]] = load_build

    def load_newobj(self):
        if len(self.stack) >= 2:
            self._check_call(self.stack[-2])
        _BASE.load_newobj(self)

    dispatch[_CODE["NEWOBJ"]] = load_newobj

    def load_newobj_ex(self):
        if len(self.stack) >= 3:
            self._check_call(self.stack[-3])
        _BASE.load_newobj_ex(self)

    dispatch[_CODE["NEWOBJ_EX"]] = load_newobj_ex

    def _instantiate(self, klass, args):  # INST and OBJ
        self._check_call(klass)
        _BASE._instantiate(self, klass, args)

    def _checked_push(op):
        def load(self):
            op(self)
            self._pushed()

        load.__name__ = op.__name__
        return load

    for _name in ("GET", "BINGET", "LONG_BINGET", "DUP"):
        dispatch[_CODE[_name]] = _checked_push(_BASE.dispatch[_CODE[_name]])
    del _name, _checked_push

    def load_stop(self):
        if self._open:
            forbid("the stream left a NumPy constructor, or its object before BUILD, inside "
                   "the result")
        _BASE.load_stop(self)

    dispatch[_CODE["STOP"]] = load_stop
