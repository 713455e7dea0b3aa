/*
 * ucx_describe.c - what a failed connect, accept or send was about, for C callers (the status
 * code alone cannot tell a dead peer from a configuration problem): the calling thread's last
 * failure as one line (cdt_ucx_last_error), and an endpoint's peer, UCX version and lanes
 * (cdt_ucx_ep_describe). The Python and Rust errors print the same (docs/TRANSPORT.md §6).
 */
#include "ucx_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* the calling thread's last failure, as errno: kept until the next one */
static __thread char last_error[512];

void cdt__ucx_error_detail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
}

/* lock held: "lanes: ..." of ep: now, and what they were at its first send when UCX reports
 * placeholders or nothing after a failure */
static void lanes_text(struct cdt_ucx_ep_s *ep, char *out, size_t size)
{
    char now[256] = "";
    int rc = ep != NULL ? cdt__ucx_ep_lanes(ep, now, sizeof(now)) : CDT_ERR_PEER;
    bool have_now = (rc == CDT_SUCCESS || rc == CDT_ERR_TRUNCATED) && strchr(now, '=') != NULL;
    const char *seen = ep != NULL && ep->lanes_seen[0] != '\0' ? ep->lanes_seen : NULL;
    if (ep == NULL)
        snprintf(out, size, "none (no connection)");
    else if (have_now && seen != NULL && strcmp(now, seen) != 0)
        snprintf(out, size, "%s (were %s)", now, seen);
    else if (have_now)
        snprintf(out, size, "%s", now);
    else if (seen != NULL)
        snprintf(out, size, "%s (before it failed)", seen);
    else if (ep->status != CDT_SUCCESS)
        snprintf(out, size, "unknown (the endpoint failed before it carried an object)");
    else
        snprintf(out, size, "none yet (not wired up)");
}

/* append text to out (size bytes, used so far), cut short where it does not fit */
static void append(char *out, size_t size, size_t *used, const char *text)
{
    size_t n = strlen(text);
    if (n > size - 1 - *used)
        n = size - 1 - *used;
    memcpy(out + *used, text, n);
    *used += n;
    out[*used] = '\0';
}

/* lock held */
static void describe_locked(struct cdt_ucx_ep_s *ep, const char *peer, char *out, size_t size)
{
    char lanes[400];
    lanes_text(ep, lanes, sizeof(lanes));
    size_t used = 0;
    out[0] = '\0';
    const char *parts[] = {peer, " (UCX ", cdt_ucx_version_string(), "; lanes: ", lanes, ")"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        append(out, size, &used, parts[i]);
}

void cdt__ucx_fail_detail(const char *what, const char *peer, struct cdt_ucx_ep_s *ep, int rc,
                          const char *hint)
{
    char text[480];
    describe_locked(ep, peer != NULL ? peer : (ep != NULL ? ep->peer : "a peer"), text,
                    sizeof(text));
    cdt__ucx_error_detail("%s %s: %s%s%s", what, text, cdt_err_name(rc), hint != NULL ? "; " : "",
                          hint != NULL ? hint : "");
}

static int copy_out(const char *text, char *buf, size_t size)
{
    size_t n = strlen(text);
    if (n < size) {
        memcpy(buf, text, n + 1);
        return CDT_SUCCESS;
    }
    memcpy(buf, text, size - 1);
    buf[size - 1] = '\0';
    return CDT_ERR_TRUNCATED;
}

int cdt_ucx_last_error(char *buf, size_t size)
{
    if (buf == NULL || size == 0)
        return CDT_ERR_INVALID_ARG;
    return copy_out(last_error, buf, size);
}

int cdt_ucx_ep_describe(cdt_ucx_ep ep, char *buf, size_t size)
{
    if (ep == NULL || buf == NULL || size == 0)
        return CDT_ERR_INVALID_ARG;
    char text[480];
    pthread_mutex_lock(&ep->w->lock);
    describe_locked(ep, ep->peer, text, sizeof(text));
    pthread_mutex_unlock(&ep->w->lock);
    return copy_out(text, buf, size);
}
