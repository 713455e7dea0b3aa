/* shim.c - libcdt's header-only MPI implementation (cdt_mpi.h, docs/MPI.md) compiled against
 * the MPI library that rsmpi links, with entry points Rust can call: MPI handles are passed
 * as the MPI library's own MPI_Comm (rsmpi's raw handle), statuses as plain ints (MPI_Status
 * differs between MPI libraries). Only what cdtypes::mpi needs. */
#include "cdt_mpi.h"

int cdtypes_mpi_attach(MPI_Comm comm)
{
    return cdt_mpi_attach(comm);
}

int cdtypes_mpi_is_attached(MPI_Comm comm, int *flag)
{
    return cdt_mpi_is_attached(comm, flag);
}

/* threshold < 0: the protocol's default (CDT_MPI_THRESHOLD) */
int cdtypes_mpi_send(const void *buf, cdt_count count, cdt_type type, int dest, int tag,
                     MPI_Comm comm, cdt_count threshold)
{
    cdt_mpi_send_params p = {CDT_MPI_SEND_PARAM_THRESHOLD, threshold};
    cdt_mpi_request r = NULL;
    /* blocking: a head without parts goes out by MPI_Send (cdt_mpi_send's own path) */
    int rc = cdt_mpi_isend_(buf, count, type, dest, tag, comm, threshold >= 0 ? &p : NULL, &r, 1);
    return rc == CDT_SUCCESS ? cdt_mpi_wait(&r, MPI_STATUS_IGNORE) : rc;
}

/* the head's source and tag into *source, *tag */
int cdtypes_mpi_mprobe(int source, int tag, MPI_Comm comm, const cdt_mpi_recv_params *params,
                       cdt_mpi_message *msg, int *out_source, int *out_tag)
{
    MPI_Status st;
    int rc = cdt_mpi_mprobe(source, tag, comm, params, msg, &st);
    if (rc == CDT_SUCCESS) {
        *out_source = st.MPI_SOURCE;
        *out_tag = st.MPI_TAG;
    }
    return rc;
}

cdt_decoder cdtypes_mpi_message_decoder(cdt_mpi_message msg)
{
    return cdt_mpi_message_decoder(msg);
}

int cdtypes_mpi_mrecv_bound(cdt_mpi_message *msg)
{
    return cdt_mpi_mrecv_bound(msg);
}

int cdtypes_mpi_message_discard(cdt_mpi_message *msg)
{
    return cdt_mpi_message_discard(msg);
}

const char *cdtypes_mpi_last_error(void)
{
    return cdt_mpi_last_error();
}

/* the constants rsmpi does not expose as plain values */
int cdtypes_mpi_any_source(void)
{
    return MPI_ANY_SOURCE;
}

int cdtypes_mpi_any_tag(void)
{
    return MPI_ANY_TAG;
}

int cdtypes_mpi_mrecv(void *buf, cdt_count count, cdt_type type, cdt_mpi_message *msg)
{
    return cdt_mpi_mrecv(buf, count, type, msg);
}
