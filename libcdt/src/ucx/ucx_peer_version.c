/*
 * ucx_peer_version.c - peers on different UCX release lines are refused at accept with an
 * error that names both versions (docs/TRANSPORT.md §1). UCX's own wireup between 1.13 and 1.22
 * fails with errors that name neither ("invalid argument", "unreachable"), and the only bytes a
 * listener can read from a connecting peer before that wireup is the 64-bit client id that UCX
 * carries in the connection request (ucp_conn_request_query, UCX 1.11 and later): each worker
 * sets it to a tag and its UCX version, each connect sends it, each accept reads it.
 */
#include "ucx_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the client id: this tag in the high 32 bits, then major (8 bits), minor (8), release (16) */
#define VERSION_TAG UINT64_C(0x43445476) /* "CDTv" */

uint64_t cdt__ucx_client_id(void)
{
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    return VERSION_TAG << 32 | (uint64_t)(major & 0xff) << 24 | (uint64_t)(minor & 0xff) << 16 |
           (release & 0xffff);
}

/* "host:port" of a socket address ("?" when not one) */
static void addr_text(const struct sockaddr_storage *ss, char *out, size_t size)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
    }
    snprintf(out, size, "%s:%u", host, port);
}

int cdt__ucx_check_peer_version(ucp_conn_request_h req, char *peer, size_t peer_size)
{
    ucp_conn_request_attr_t a = {.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR |
                                               UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID};
    if (ucp_conn_request_query(req, &a) != UCS_OK) {
        snprintf(peer, peer_size, "a peer");
        return CDT_SUCCESS; /* nothing known: UCX's wireup decides */
    }
    char where[80];
    addr_text(&a.client_address, where, sizeof(where));
    snprintf(peer, peer_size, "%s", where);
    uint64_t mine = cdt__ucx_client_id(), theirs = a.client_id;
    /* a peer that sent no id (another UCX program) or one on the same release line */
    if ((theirs >> 32) != VERSION_TAG || (theirs >> 16) == (mine >> 16))
        return CDT_SUCCESS;
    const char *mixed = getenv("CDT_UCX_MIXED_VERSIONS");
    if (mixed != NULL && strcmp(mixed, "allow") == 0)
        return CDT_SUCCESS; /* the one combination that works with settings (§1) */
    cdt__ucx_error_detail("accept from %s: refused: the peer runs UCX %u.%u.%u and this process "
                          "UCX %s; peers must use the same UCX minor version (docs/TRANSPORT.md "
                          "§1)",
                          where, (unsigned)(theirs >> 24 & 0xff), (unsigned)(theirs >> 16 & 0xff),
                          (unsigned)(theirs & 0xffff), cdt_ucx_version_string());
    return CDT_ERR_TRANSPORT;
}
