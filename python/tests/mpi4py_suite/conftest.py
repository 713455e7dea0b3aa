"""mpi4py's pkl5 suite runs under mpiexec (run_pkl5.py, from test_pkl5_suite.py), never in the
pytest process itself (which must not initialise MPI): nothing here is collected."""
collect_ignore_glob = ["*.py"]
