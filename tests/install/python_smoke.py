"""The smoke test of an installed cdtypes, run by tests/install/python-sdist.sh from an empty
folder outside the checkout, with the interpreter of the venv cdtypes was installed into.

  python_smoke.py where CHECKOUT   cdtypes is the venv's (not the checkout's), `import cdtypes`
                                    maps no UCX library; prints cdtypes.__file__
  python_smoke.py recv PORTFILE     listens over UCX, writes its port to PORTFILE, receives one
                                    object and checks it against the one `send` sends
  python_smoke.py send PORT         connects to the receiver and sends that object
"""
import os
import sys

import numpy


def the_object():
    """An object with a NumPy array large enough to travel out of band (its own region)."""
    return {"name": "particles", "x": numpy.arange(1 << 18, dtype=numpy.float64) * 0.5,
            "ids": numpy.arange(1000, dtype=numpy.int32).reshape(10, 100), "step": 7}


def mapped_ucx():
    with open("/proc/self/maps") as maps:
        paths = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    return sorted(p for p in paths if os.path.basename(p).startswith(
        ("libucp", "libuct", "libucs", "libucm", "libcdtypes-ucx")))


def where(checkout):
    import cdtypes

    package = os.path.realpath(os.path.dirname(cdtypes.__file__))
    prefix = os.path.realpath(sys.prefix)
    if not package.startswith(prefix + os.sep):
        sys.exit("cdtypes was imported from %s, not from the venv %s" % (package, prefix))
    if package.startswith(os.path.realpath(checkout) + os.sep):
        sys.exit("cdtypes was imported from the checkout: %s" % package)
    back = cdtypes.loads(cdtypes.dumps(the_object()).tobytes())
    same(back)
    if mapped_ucx():
        sys.exit("`import cdtypes` mapped UCX: %s" % mapped_ucx())
    print(package)


def same(back):
    want = the_object()
    if set(back) != set(want) or back["name"] != want["name"] or back["step"] != want["step"]:
        sys.exit("received a different object: %r" % (back,))
    for key in ("x", "ids"):
        if back[key].dtype != want[key].dtype or not numpy.array_equal(back[key], want[key]):
            sys.exit("received a different array %s" % key)


def recv(portfile):
    from cdtypes import ucx

    with ucx.listen(host="127.0.0.1") as listener:
        with open(portfile + ".tmp", "w") as f:
            f.write(str(listener.port))
        os.rename(portfile + ".tmp", portfile)
        with listener.accept(timeout=60) as ep:
            same(ep.recv(timeout=60))
    print("received the object with its arrays: ok")


def send(port):
    from cdtypes import ucx

    with ucx.connect("127.0.0.1", int(port), timeout=60) as ep:
        ep.send(the_object(), timeout=60)


if __name__ == "__main__":
    {"where": where, "recv": recv, "send": send}[sys.argv[1]](*sys.argv[2:])
