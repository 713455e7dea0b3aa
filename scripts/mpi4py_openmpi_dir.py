"""Print the folder that holds the mpi4py built against Open MPI (scripts/setup builds it
there; python/tests/test_mpi.py reads it from there).

The build takes many minutes, so it lives once per machine in the user's cache, outside any
checkout (a clean clone reuses it), keyed by mpi4py's version and the interpreter's: another
version of either gets a build of its own. The version is that of the mpi4py the interpreter
imports (built against MPICH), the one the tests compare with."""
import os
import sys

import mpi4py

cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
print(os.path.join(cache, "cdtypes", "mpi4py-openmpi-%s-%s" % (
    mpi4py.__version__, sys.implementation.cache_tag)))
