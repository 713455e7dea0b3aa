/*
 * ucx_wakeup.c - the worker's event fd for an application's event loop (cdt_ucx_worker_fd,
 * cdt_ucx_worker_arm). The library's own blocking calls sleep on the same fd through
 * cdt__ucx_sleep (ucx_recv_state.c, beside the progress it pairs with).
 */
#include "ucx_internal.h"

int cdt_ucx_worker_fd(cdt_ucx_worker worker, int *fd)
{
    if (worker == NULL || fd == NULL)
        return CDT_ERR_INVALID_ARG;
    if (worker->efd < 0)
        return CDT_ERR_UNSUPPORTED;
    *fd = worker->efd;
    return CDT_SUCCESS;
}

int cdt_ucx_worker_arm(cdt_ucx_worker worker)
{
    if (worker == NULL)
        return CDT_ERR_INVALID_ARG;
    if (worker->efd < 0)
        return CDT_ERR_UNSUPPORTED;
    pthread_mutex_lock(&worker->lock);
    ucs_status_t st = ucp_worker_arm(worker->ucp);
    pthread_mutex_unlock(&worker->lock);
    if (st == UCS_OK)
        return CDT_SUCCESS;
    return st == UCS_ERR_BUSY ? CDT_ERR_BUSY : CDT_ERR_TRANSPORT;
}
