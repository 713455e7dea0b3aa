/*
 * ucx_ep_info.c - which UCX transports an endpoint uses, from UCX's own report of its lanes.
 *
 * UCX 1.13 has no query for an endpoint's transports (ucp_ep_query reports addresses only),
 * so the report of ucp_ep_print_info is read back. Its lane lines look like
 *   "#   lane[1]:  3:sysv/memory.0 md[2]   -> md[2]/sysv/sysdev[255] am am_bw#0 keepalive"
 * i.e. resource index, "transport/device.path", memory domain, then the lane's roles.
 */
#include "ucx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* append " role=name" to out unless it is there already; false when out is full */
static bool add_word(char *out, size_t size, size_t *used, const char *role, const char *name,
                     size_t name_len)
{
    char word[160];
    int n = snprintf(word, sizeof(word), "%s=%.*s", role, (int)name_len, name);
    if (n < 0 || (size_t)n >= sizeof(word))
        return true; /* a name UCX would never print: left out */
    /* words are separated by single spaces: look for the whole word */
    for (const char *p = out; (p = strstr(p, word)) != NULL; p += n)
        if ((p == out || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    size_t need = (*used > 0 ? 1 : 0) + (size_t)n;
    if (*used + need >= size) {
        size_t room = size - 1 - *used;
        if (*used > 0 && room > 0) {
            out[(*used)++] = ' ';
            room--;
        }
        memcpy(out + *used, word, room);
        *used += room;
        out[*used] = '\0';
        return false;
    }
    if (*used > 0)
        out[(*used)++] = ' ';
    memcpy(out + *used, word, (size_t)n + 1);
    *used += (size_t)n;
    return true;
}

/* the roles of one lane line; false when out is full */
static bool parse_lane(const char *line, char *out, size_t size, size_t *used)
{
    const char *p = strstr(line, "lane[");
    if (p == NULL || (p = strchr(p, ':')) == NULL)
        return true;
    p++;
    while (*p == ' ')
        p++;
    /* "3:sysv/memory.0": resource index, then the name; the connection manager lane ("cm
     * rdmacm") has no index and carries no data */
    const char *colon = strchr(p, ':');
    const char *space = strchr(p, ' ');
    if (colon == NULL || (space != NULL && space < colon))
        return true;
    const char *name = colon + 1;
    size_t len = strcspn(name, " \n");
    const char *dot = memchr(name, '.', len); /* ".0": the path index */
    if (dot != NULL)
        len = (size_t)(dot - name);
    const char *roles = strstr(name, "->");
    if (roles == NULL)
        return true;
    bool am = false, rma = false;
    for (const char *r = roles; *r != '\0' && *r != '\n';) {
        r += strspn(r, " ");
        size_t wl = strcspn(r, " \n");
        if (wl == 2 && strncmp(r, "am", 2) == 0)
            am = true;
        else if (wl >= 6 && strncmp(r, "rma_bw", 6) == 0)
            rma = true;
        r += wl;
    }
    bool ok = true;
    if (am)
        ok = add_word(out, size, used, "am", name, len);
    if (ok && rma)
        ok = add_word(out, size, used, "rma", name, len);
    return ok;
}

int cdt__ucx_ep_lanes(struct cdt_ucx_ep_s *ep, char *buf, size_t size)
{
    if (ep->status != CDT_SUCCESS)
        return ep->status;
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    if (f == NULL)
        return CDT_ERR_NO_MEMORY;
    ucp_ep_print_info(ep->ucp, f);
    if (fclose(f) != 0 || text == NULL) {
        free(text);
        return CDT_ERR_NO_MEMORY;
    }
    size_t used = 0;
    buf[0] = '\0';
    bool ok = true;
    for (char *line = text; ok && line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        ok = parse_lane(line, buf, size, &used);
        line = next != NULL ? next + 1 : NULL;
    }
    free(text);
    if (!ok)
        return CDT_ERR_TRUNCATED;
    return used > 0 ? CDT_SUCCESS : CDT_ERR_TRANSPORT;
}

void cdt__ucx_ep_keep_lanes(struct cdt_ucx_ep_s *ep, const char *lanes)
{
    char now[512];
    if (lanes == NULL) {
        int rc = cdt__ucx_ep_lanes(ep, now, sizeof(now));
        if (rc != CDT_SUCCESS && rc != CDT_ERR_TRUNCATED)
            return;
        lanes = now;
    }
    size_t n = strnlen(lanes, sizeof(ep->lanes_seen) - 1);
    memcpy(ep->lanes_seen, lanes, n);
    ep->lanes_seen[n] = '\0';
}

int cdt_ucx_ep_transports(cdt_ucx_ep ep, char *buf, size_t size)
{
    if (ep == NULL || buf == NULL || size == 0)
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&ep->w->lock);
    int rc = cdt__ucx_ep_lanes(ep, buf, size);
    if (rc == CDT_SUCCESS)
        cdt__ucx_lane_describe(ep, buf, size); /* " lane=memfd", or why not */
    pthread_mutex_unlock(&ep->w->lock);
    return rc;
}

/* whether the lanes' active messages run on one of the transports `am` names ("am=sysv/"...) */
static bool am_on(const char *lanes, const char *const *am, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = strstr(lanes, am[i]);
        if (p != NULL && (p == lanes || p[-1] == ' '))
            return true;
    }
    return false;
}

/* transports whose messages are copies through memory of this machine: one message per
 * object wins there (docs/TRANSPORT.md §1) */
static bool am_is_local(const char *lanes)
{
    static const char *const local[] = {"am=sysv/", "am=posix/", "am=self/", "am=xpmem/"};
    return am_on(lanes, local, sizeof(local) / sizeof(local[0]));
}

/* transports whose active messages go through a FIFO in the receiver's shared memory (UCX's mm
 * family): a sender that dies inside its send there wedges the receiver (TRANSPORT.md §9.1) */
static bool am_is_fifo(const char *lanes)
{
    static const char *const fifo[] = {"am=sysv/", "am=posix/", "am=xpmem/"};
    return am_on(lanes, fifo, sizeof(fifo) / sizeof(fifo[0]));
}

int cdt__ucx_ep_mode(struct cdt_ucx_ep_s *ep)
{
    int known = __atomic_load_n(&ep->mode, __ATOMIC_ACQUIRE);
    if (known != 0)
        return known - 1;
    cdt_ucx_protocol proto = ep->w->protocol;
    char lanes[512];
    int rc = cdt__ucx_ep_lanes(ep, lanes, sizeof(lanes));
    bool have_lanes = rc == CDT_SUCCESS || rc == CDT_ERR_TRUNCATED;
    if (have_lanes) {
        ep->lanes_known = true;
        ep->peer_accesses_memory = strstr(lanes, "rma=cma/") != NULL;
        ep->am_local = am_is_local(lanes);
        ep->am_fifo = am_is_fifo(lanes);
        cdt__ucx_ep_keep_lanes(ep, lanes);
    }
    int mode = proto == CDT_UCX_PROTOCOL_SINGLE ? CDT__UCX_MODE_SINGLE : CDT__UCX_MODE_SPLIT;
    if (proto == CDT_UCX_PROTOCOL_AUTO || proto == CDT_UCX_PROTOCOL_AUTO_SINGLE)
        mode = ep->am_local ? CDT__UCX_MODE_SINGLE : CDT__UCX_MODE_SPLIT;
    if (!have_lanes)
        return mode; /* no lanes yet (still connecting): asked again, and cached, later */
    __atomic_store_n(&ep->mode, mode + 1, __ATOMIC_RELEASE); /* read without the lock by isend */
    return mode;
}

uint64_t cdt_ucx_ep_id(cdt_ucx_ep ep)
{
    return ep != NULL ? ep->id : 0; /* drawn when the endpoint was made, never changed */
}

uint64_t cdt_ucx_ep_peer_id(cdt_ucx_ep ep)
{
    if (ep == NULL)
        return 0;
    pthread_mutex_lock(&ep->w->lock);
    if (ep->hello_wait && !ep->w->destroying)
        cdt__ucx_hello_poll(ep->w); /* it may have come without a receive to read it */
    uint64_t id = ep->peer_id;
    pthread_mutex_unlock(&ep->w->lock);
    return id;
}

int cdt_ucx_ep_protocol(cdt_ucx_ep ep, cdt_ucx_protocol *protocol)
{
    if (ep == NULL || protocol == NULL)
        return CDT_ERR_INVALID_ARG;
    pthread_mutex_lock(&ep->w->lock);
    int rc = ep->status == CDT_SUCCESS ? CDT_SUCCESS : CDT_ERR_PEER;
    if (rc == CDT_SUCCESS)
        *protocol = cdt__ucx_ep_mode(ep) == CDT__UCX_MODE_SINGLE ? CDT_UCX_PROTOCOL_SINGLE
                                                                 : CDT_UCX_PROTOCOL_SPLIT;
    pthread_mutex_unlock(&ep->w->lock);
    return rc;
}

/* UCX 1.13 aborts (an assertion on the rendezvous key's size, with cma) or never completes
 * (without cma) a rendezvous that was posted on an accepted endpoint before its lanes were wired
 * up, when UCX replays it. A flush ends once they are, so the first send on such an endpoint
 * flushes it first. Not done in cdt_ucx_listener_accept: most accepted endpoints only ever
 * receive, and a flush there held the acceptor for connections that were already gone. */
int cdt__ucx_ep_wait_wired(struct cdt_ucx_ep_s *ep)
{
    if (__atomic_load_n(&ep->wired, __ATOMIC_ACQUIRE))
        return CDT_SUCCESS;
    cdt_ucx_worker w = ep->w;
    pthread_mutex_lock(&w->lock);
    ucp_request_param_t fp = {.op_attr_mask = 0};
    void *flush = ep->status == CDT_SUCCESS ? ucp_ep_flush_nbx(ep->ucp, &fp) : NULL;
    pthread_mutex_unlock(&w->lock);
    ucs_status_t st =
        cdt__ucx_wait_request(w, flush, cdt__ucx_now_ms() + CDT__UCX_WIREUP_TIMEOUT_MS);
    pthread_mutex_lock(&w->lock);
    if (st == UCS_ERR_TIMED_OUT)
        ucp_request_free(flush); /* a flush still pending completes on its own */
    int rc = ep->status != CDT_SUCCESS ? CDT_ERR_PEER
             : st == UCS_ERR_TIMED_OUT ? CDT_ERR_TIMEOUT
             : st != UCS_OK            ? cdt__ucx_status(st)
                                       : CDT_SUCCESS;
    if (rc == CDT_SUCCESS)
        __atomic_store_n(&ep->wired, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->lock);
    return rc;
}
