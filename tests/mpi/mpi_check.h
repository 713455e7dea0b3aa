/*
 * mpi_check.h - the MPI tests' check of a cdt_mpi.h call: on a status other than the one
 * wanted, the rank, the call, the status's name and cdt_mpi_last_error() are printed before
 * check.h's CHECK_RC counts the failure. The test file declares `rank` (its MPI rank) before
 * its first use of CHECK_MPI.
 */
#ifndef CDT_TESTS_MPI_CHECK_H
#define CDT_TESTS_MPI_CHECK_H

#include "cdt_mpi.h"
#include "check.h"

#include <stdio.h>

#define CHECK_MPI(call, want)                                                                      \
    do {                                                                                           \
        int got__ = (call);                                                                        \
        if (got__ != (want))                                                                       \
            fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, #call, cdt_err_name(got__),            \
                    cdt_mpi_last_error());                                                         \
        CHECK_RC(got__, want);                                                                     \
    } while (0)

#endif
