"""Run under `mpiexec -n N` (1, 2, 3): mpi4py's own suite of mpi4py.util.pkl5
(test_util_pkl5.py, vendored, its import line pointed at cdtypes.mpi) against cdtypes.mpi's
Comm, Intracomm, Intercomm, Request and Message. Prints "rank R: ok" when every test passed."""
import faulthandler
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# a deadlock prints every rank's stack and fails the run instead of waiting for pytest's timeout
faulthandler.dump_traceback_later(
    90 * float(os.environ.get("CDTYPES_WATCHDOG_SCALE", "1")), exit=True)  # python/asan.sh: 4

from mpi4py import MPI  # noqa: E402

from cdtypes import mpi  # noqa: E402


class _BlockSizeStandIn:
    """pkl5._BigMPI has no counterpart (the suite's header says why): a block size that
    changes nothing, so that the suite's setUp and testBigMPI can swap it."""

    blocksize = (1 << 31) - 1


# stand-ins for the pkl5 internals the suite's setUp swaps (test_util_pkl5.py's header)
mpi._BigMPI = _BlockSizeStandIn
mpi._bigmpi = _BlockSizeStandIn()
mpi.Pickle = MPI.Pickle
mpi.pickle = MPI.Pickle()

import test_util_pkl5 as suite  # noqa: E402

_NO_COUNTERPART = "checks mpi4py's pickler (pkl5.Pickle), which cdtypes.mpi does not use"
suite.BaseTestPKL5.testPickle5 = unittest.skip(_NO_COUNTERPART)(suite.BaseTestPKL5.testPickle5)

loader = unittest.TestLoader()
tests = unittest.TestSuite(loader.loadTestsFromTestCase(case)
                           for case in (suite.TestPKL5Self, suite.TestPKL5World))
verbosity = int(os.environ.get("PKL5_VERBOSE", "1"))  # 2: one line per test
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=verbosity).run(tests)
rank = MPI.COMM_WORLD.Get_rank()
if result.wasSuccessful() and result.testsRun > 0:
    print("rank %d: ok (%d tests, %d skipped)" % (rank, result.testsRun, len(result.skipped)))
    sys.exit(0)
print("rank %d: FAILED" % rank)
sys.stdout.flush()
MPI.COMM_WORLD.Abort(1)
