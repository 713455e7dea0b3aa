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

try:
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without NumPy
    _np = None

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
_BINPUT, _LONG_BINPUT, _PUT, _FRAME = ord("q"), ord("r"), ord("p"), 0x95
_BYTEARRAY8 = re.compile(rb"\x96(.{7}[\x00-\x7f])", re.S)  # lengths below 2**63


def _skipper(exclude):
    """A regex matching a run of opcodes with fixed-size arguments (except ``exclude``), so
    that the walk crosses them at C speed."""
    by_size = {}
    for code, (kind, size, _) in _SPEC.items():
        if kind == _FIXED and code != _STOP and code not in exclude:
            by_size.setdefault(size, []).append(code)
    alts = []
    for size, codes in sorted(by_size.items()):
        cls = b"[" + b"".join(b"\\x%02x" % c for c in sorted(codes)) + b"]"
        alts.append(cls + (b".{%d}" % size if size else b""))
    return re.compile(b"(?:" + b"|".join(alts) + b")*", re.S)


_SKIP = _skipper(())
_SKIP_STRICT = _skipper((_BINPUT, _LONG_BINPUT, _FRAME))  # checked one by one


class StreamError(pickle.UnpicklingError):
    """The stream announces more than it holds (found without running it)."""


def _bytearray8_candidates(stream):
    """Whether some byte 0x96 is followed by a length in (bytes after it, 2**63): only then
    can the stream hold an over-long BYTEARRAY8 (pickle refuses lengths of 2**63 and more
    itself). Vectorised with NumPy when it is present."""
    n = len(stream)
    if n < 10:
        return False
    if _np is not None:
        a = _np.frombuffer(stream, dtype=_np.uint8)
        pos = _np.flatnonzero(a[: n - 8] == 0x96)
        if pos.size == 0:
            return False
        # the 8 bytes after each position, read as little-endian uint64 (an unaligned view)
        after = _np.ndarray((n - 8,), dtype="<u8", buffer=a, offset=1, strides=(1,))[pos]
        return bool(_np.any((after > (n - 9 - pos).astype(_np.uint64)) & (after < 1 << 63)))
    for m in _BYTEARRAY8.finditer(stream):
        if n - m.end() < int.from_bytes(m.group(1), "little") < 1 << 63:
            return True
    return False


def check_stream(stream, strict=True):
    """Walk the opcodes of ``stream`` (bytes or bytearray) without running them. Raises
    StreamError when a length-prefixed argument announces more bytes than remain (pickle would
    allocate that length first). With ``strict`` (untrusted input) also when a memo index
    exceeds the stream's size (pickle would grow its memo table to it), when a FRAME announces
    more than remains, starts inside another frame, or an opcode crosses the end of its frame
    (an unpickler reading from a file drops the rest of a frame there, so it would not run the
    opcodes this walk saw). Without ``strict`` only BYTEARRAY8 is checked, and the walk runs
    only when a byte pattern could be such an opcode. Stops at STOP or at an unknown opcode
    (pickle reports those itself)."""
    n = len(stream)
    if not strict and not _bytearray8_candidates(stream):
        return
    i = 0
    frame_end = -1  # end of the current frame, -1 outside frames (strict only)
    skip = (_SKIP_STRICT if strict else _SKIP).match
    while i < n:
        i = skip(stream, i, frame_end if frame_end >= 0 else n).end()
        if i == frame_end:
            frame_end = -1
            continue
        if i >= n:
            return
        op = stream[i]
        at = i
        i += 1
        spec = _SPEC.get(op)
        if spec is None or op == _STOP:
            return
        kind, size, signed = spec
        if kind == _FIXED:
            if i + size > n:
                return
            if strict and op in (_BINPUT, _LONG_BINPUT):
                idx = int.from_bytes(stream[i : i + size], "little")
                if idx > n:
                    raise StreamError("memo index %d in a stream of %d bytes" % (idx, n))
            i += size
            if strict and op == _FRAME:
                if frame_end >= 0:
                    raise StreamError("FRAME at byte %d inside another frame" % at)
                length = int.from_bytes(stream[i - 8 : i], "little")
                if length > n - i:
                    raise StreamError(
                        "FRAME at byte %d announces %d bytes, %d remain" % (at, length, n - i))
                frame_end = i + length
                continue
        elif kind == _LINES:
            start = i
            for _ in range(size):
                j = stream.find(b"\n", i)
                if j < 0:
                    return
                i = j + 1
            if strict and op == _PUT:
                # pickle reads the line as a C string: a NUL ends the number ("2\0..." is 2).
                # A line this walk cannot read as pickle does is refused, not trusted: stopping
                # here would leave the rest of the stream unchecked while pickle runs it.
                text = bytes(stream[start : i - 1]).split(b"\0", 1)[0]
                try:
                    idx = int(text)
                except ValueError:
                    raise StreamError("PUT at byte %d: memo index %r is not a number" % (at, text))
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
                        % (pickletools.code2op[chr(op)].name, at, length, n - i)
                    )
                return
            i += length
        if frame_end >= 0 and i >= frame_end:
            if i > frame_end:
                raise StreamError("opcode at byte %d crosses the end of its frame" % at)
            frame_end = -1
