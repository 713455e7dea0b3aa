"""A static check of a pickle stream from an untrusted or damaged frame.

pickle allocates what a length-prefixed opcode announces before it reads those bytes, and grows
its memo table to any index a PUT names. ``check_stream`` walks the opcodes without running
them and refuses a stream that announces more than it holds, so that what pickle allocates is
bounded by the stream's own size.
"""

import pickle
import pickletools
import re

__all__ = ["check_stream", "StreamError"]

_FIXED, _LINES, _COUNTED = 0, 1, 2
_SPEC = {}  # opcode byte -> (how its argument is laid out, size or line count, signed)
for _op in pickletools.opcodes:
    _code = ord(_op.code)
    _arg = _op.arg
    if _arg is None:
        _SPEC[_code] = (_FIXED, 0, False)
    elif _arg.n >= 0:
        _SPEC[_code] = (_FIXED, _arg.n, False)
    elif _arg.n == pickletools.UP_TO_NEWLINE:
        _SPEC[_code] = (_LINES, 2 if _op.name in ("GLOBAL", "INST") else 1, False)
    else:
        width, signed = {
            pickletools.TAKEN_FROM_ARGUMENT1: (1, False),
            pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
            pickletools.TAKEN_FROM_ARGUMENT4U: (4, False),
            pickletools.TAKEN_FROM_ARGUMENT8U: (8, False),
        }[_arg.n]
        _SPEC[_code] = (_COUNTED, width, signed)
_STOP = ord(".")
_BINPUT, _LONG_BINPUT, _PUT = ord("q"), ord("r"), ord("p")
_BYTEARRAY8 = re.compile(rb"\x96(.{8})", re.S)


class StreamError(pickle.UnpicklingError):
    """The stream announces more than it holds (found without running it)."""


def check_stream(stream, strict=True):
    """Walk the opcodes of ``stream`` (bytes or bytearray) without running them. Raises
    StreamError when a length-prefixed argument announces more bytes than remain (pickle would
    allocate that length first), and, with ``strict``, when a memo index exceeds the stream's
    size (pickle would grow its memo table to it). Without ``strict`` only BYTEARRAY8 is
    checked, and the walk runs only when a byte pattern could be such an opcode. Stops at
    STOP or at an unknown opcode (pickle reports those itself)."""
    n = len(stream)
    if not strict:
        for m in _BYTEARRAY8.finditer(stream):
            if int.from_bytes(m.group(1), "little") > n - m.end():
                break  # a candidate: find out whether it is an opcode
        else:
            return
    i = 0
    while i < n:
        op = stream[i]
        i += 1
        spec = _SPEC.get(op)
        if spec is None or op == _STOP:
            return
        kind, size, signed = spec
        if kind == _FIXED:
            if strict and size and op in (_BINPUT, _LONG_BINPUT) and i + size <= n:
                idx = int.from_bytes(stream[i : i + size], "little")
                if idx > n:
                    raise StreamError("memo index %d in a stream of %d bytes" % (idx, n))
            i += size
        elif kind == _LINES:
            start = i
            for _ in range(size):
                j = stream.find(b"\n", i)
                if j < 0:
                    return
                i = j + 1
            if strict and op == _PUT:
                try:
                    idx = int(bytes(stream[start : i - 1]))
                except ValueError:
                    return
                if idx > n:
                    raise StreamError("memo index %d in a stream of %d bytes" % (idx, n))
        else:
            if i + size > n:
                return
            length = int.from_bytes(stream[i : i + size], "little", signed=signed)
            i += size
            if length > n - i or length < 0:
                if strict or op == 0x96:
                    raise StreamError(
                        "%s at byte %d announces %d bytes, %d remain"
                        % (pickletools.code2op[chr(op)].name, i - size - 1, length, n - i)
                    )
                return
            i += length


