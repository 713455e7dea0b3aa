/*
 * shim.c - raw UCX tag messages for the Rust transfer benchmark (the `raw` roofline, the byte
 * messages of `manual` and `serde-bincode`, the acknowledgements), on the UCX worker and
 * endpoint of a libcdt transport (cdt_ucx_worker_handle / cdt_ucx_ep_handle), as
 * bench/transfer/bench_transfer.c sends them.
 */
#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <stdint.h>
#include <time.h>

/* NULL: completed at once; an error pointer (UCS_PTR_IS_ERR) on failure, else a request */
void *bench_raw_isend(cdt_ucx_ep ep, const void *buf, size_t len, uint64_t tag)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(1)};
    return ucp_tag_send_nbx((ucp_ep_h)cdt_ucx_ep_handle(ep), buf, len, tag, &p);
}

void *bench_raw_irecv(cdt_ucx_worker w, void *buf, size_t len, uint64_t tag)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(1)};
    return ucp_tag_recv_nbx((ucp_worker_h)cdt_ucx_worker_handle(w), buf, len, tag, UINT64_MAX, &p);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* progress until `req` completes (at most timeout_s); 0 or a negative ucs_status_t */
int bench_raw_wait(cdt_ucx_worker w, void *req, double timeout_s)
{
    if (req == NULL)
        return 0;
    if (UCS_PTR_IS_ERR(req))
        return (int)UCS_PTR_STATUS(req);
    ucp_worker_h uw = (ucp_worker_h)cdt_ucx_worker_handle(w);
    double t0 = now();
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(uw);
        if (now() - t0 > timeout_s) {
            ucp_request_cancel(uw, req);
            while (ucp_request_check_status(req) == UCS_INPROGRESS)
                ucp_worker_progress(uw);
            ucp_request_free(req);
            return (int)UCS_ERR_TIMED_OUT;
        }
    }
    ucp_request_free(req);
    return (int)st;
}

const char *bench_ucs_status_string(int status)
{
    return ucs_status_string((ucs_status_t)status);
}
