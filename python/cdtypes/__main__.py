"""``python -m cdtypes --info``: what this installation of cdtypes is and what it loaded.

Prints the package's version, the backend in use, the libcdt core the package loaded (its
version and file), whether the transport is built in (the UCX version it reports and its
library's file), and every UCX library file mapped into the process after ``import cdtypes.ucx``
(``import cdtypes`` alone loads none); when the transport cannot load its UCX (a wheel installed
without the ``ucx`` extra) it says so and how to get it. Two copies of
UCX in one process break it (two libucp with the same soname: the system's and a wheel's), so
``--info`` says when more than one copy of a UCX library is loaded, and exits with status 1.
"""

import argparse
import os
import sys


def _mapped_libraries(names, lines=None):
    """The files of shared libraries whose base name starts with one of `names`, as mapped
    into this process (Linux: /proc/self/maps, or the given lines of that format); None where
    that cannot be read."""
    if lines is None:
        try:
            with open("/proc/self/maps") as maps:
                lines = maps.read().splitlines()
        except OSError:
            return None
    found = {}
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5]
        base = os.path.basename(path)
        for name in names:
            if base.startswith(name + ".so"):
                found.setdefault(name, set()).add(os.path.realpath(path))
    return found


def _mpi_c_state():
    """Whether cdtypes.mpi's two-process bcast makes its MPI calls from C (docs/MPI.md
    §14.5.1), and if not why; asked without initialising MPI"""
    try:
        import mpi4py
    except ImportError:
        return "off (no mpi4py: cdtypes.mpi needs it)"
    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.initialize = mpi4py.rc.finalize = False  # the checks need no MPI_Init
    try:
        from cdtypes import _mpi_c
    except ImportError as e:
        return "off (%s)" % e
    why = _mpi_c.why_not()
    return "off (%s)" % why if why is not None else (
        "on (CDTYPES_MPI_C=0 turns them off; a communicator without MPI.ERRORS_RETURN keeps "
        "mpi4py's)")  # off by default only for the cffi backend on CPython (_mpi_c.CFFI_CPYTHON)


def info(out=None):
    """Write the report (to sys.stdout by default); return the exit status (1 when a UCX library
    is loaded twice)."""
    out = sys.stdout if out is None else out
    import cdtypes
    from cdtypes import _backend, _lib

    print("cdtypes %s" % cdtypes.__version__, file=out)
    print("backend: %s" % _backend.name, file=out)
    print("libcdt: %s (%s)" % (_lib.lib.cdt_version_string().decode(), os.path.realpath(_lib._path)),
          file=out)
    status = 0
    if not _backend.HAVE_UCX:
        print("transport: not built in (libcdt without UCX)", file=out)
    else:
        try:
            import cdtypes.ucx  # loads the transport and UCX the way a user's program does
        except ImportError as e:
            # a wheel installed without the `ucx` extra (the MPI-only install): the transport
            # is there, the UCX it needs is not; nothing else of cdtypes needs it
            print("transport: not loaded (%s)" % e, file=out)
            print("  cdtypes.ucx needs UCX: pip install 'cdtypes[ucx]' (docs/PYTHON.md); "
                  "cdtypes and cdtypes.mpi work without it", file=out)
        else:
            print("transport: UCX %s (%s)" % (cdtypes.ucx.version(),
                                               os.path.realpath(_lib._ucx_path)), file=out)
            # the lane (docs/TRANSPORT.md §10): on by default; an endpoint that uses it says
            # lane=memfd in its transports (cdt_ucx_ep_transports, named in the errors), one
            # that cannot lane=none/<why>
            lane = os.environ.get("CDT_UCX_LANE", "")
            if lane in ("", "on"):
                state = ("on (the default; CDT_UCX_LANE=off turns it off): endpoints to local "
                         "peers report lane=memfd, or lane=none/<why>")
            elif lane == "off":
                state = "off (CDT_UCX_LANE=off): endpoints report lane=none/off"
            else:
                state = ("invalid CDT_UCX_LANE=%r (on or off): workers cannot be created"
                         % lane)
            print("lane: %s" % state, file=out)
    mapped = _mapped_libraries(["libucp", "libuct", "libucs", "libucm"])
    if mapped is None:
        print("UCX files: unknown (no /proc/self/maps)", file=out)
    elif not mapped:
        print("UCX files: none loaded", file=out)
    else:
        for name in sorted(mapped):
            files = sorted(mapped[name])
            print("%s: %s" % (name, ", ".join(files)), file=out)
            if len(files) > 1:
                print("  error: %d copies of %s in one process" % (len(files), name), file=out)
                status = 1
    # last: mpi4py loads the MPI library (and MPICH's UCX), which the lines above do not count
    print("mpi bcast C calls: %s" % _mpi_c_state(), file=out)
    return status


def main(argv=None):
    """The command line (``argv``: its arguments, default sys.argv[1:]) -> the exit status."""
    parser = argparse.ArgumentParser(prog="python -m cdtypes", description=__doc__.splitlines()[0])
    parser.add_argument("--info", action="store_true",
                        help="print the version, the backend and the libcdt and UCX files loaded")
    args = parser.parse_args(argv)
    if not args.info:
        parser.print_help()
        return 2
    return info()


if __name__ == "__main__":
    sys.exit(main())
