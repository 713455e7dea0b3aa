/* A program outside the tree that uses the installed UCX transport: a derived type (an array of
 * particles, each an id and a position, with padding the type skips) sent between two
 * processes and received.
 *   transfer recv PORTFILE   listen on a free port of 127.0.0.1, write the port to PORTFILE,
 *                            receive the particles, check every value
 *   transfer send PORT       connect to 127.0.0.1:PORT and send them */
#include <cdt_ucx.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000
#define TAG 28
#define TIMEOUT_MS 30000

typedef struct particle {
    int32_t id;
    int32_t unused; /* not sent: the type skips it */
    double pos[3];
} particle;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "transfer: %s: %s\n", what, cdt_strerror(rc));
    return 1;
}

/* {id, pos[3]} at their offsets, extent sizeof(particle) */
static int particle_type(cdt_type *out)
{
    const cdt_count lens[] = {1, 3};
    const cdt_count offs[] = {offsetof(particle, id), offsetof(particle, pos)};
    const cdt_type types[] = {CDT_INT32, CDT_DOUBLE};
    cdt_type s;
    int rc = cdt_type_struct(2, lens, offs, types, &s);
    if (rc != CDT_SUCCESS)
        return rc;
    rc = cdt_type_resized(s, 0, sizeof(particle), out);
    cdt_type_free(&s);
    return rc == CDT_SUCCESS ? cdt_type_commit(out) : rc;
}

static int receive(cdt_ucx_worker worker, cdt_type type, const char *port_file)
{
    cdt_ucx_listener listener;
    cdt_ucx_listener_params lp = {.field_mask = CDT_UCX_LISTENER_PARAM_HOST, .host = "127.0.0.1"};
    int rc = cdt_ucx_listener_create(worker, &lp, &listener);
    if (rc != CDT_SUCCESS)
        return fail("listener", rc);
    uint16_t port = 0;
    cdt_ucx_listener_port(listener, &port);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%u\n", (unsigned)port) < 0 || fclose(f) != 0 ||
        rename(tmp, port_file) != 0) {
        perror(port_file);
        return 1;
    }
    cdt_ucx_ep ep;
    rc = cdt_ucx_listener_accept(listener, TIMEOUT_MS, &ep);
    if (rc != CDT_SUCCESS)
        return fail("accept", rc);
    particle *got = calloc(N, sizeof *got);
    rc = cdt_ucx_recv(worker, got, N, type, TAG, CDT_UCX_TAG_MASK_FULL, NULL, NULL, TIMEOUT_MS);
    if (rc != CDT_SUCCESS)
        return fail("recv", rc);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad +=
            got[i].id != i || got[i].unused != 0 || got[i].pos[0] != i * 0.5 || got[i].pos[2] != -i;
    printf("transfer: received %d particles over UCX %s (%s): %s\n", N, cdt_ucx_version_string(),
           cdt_version_string(), bad == 0 ? "ok" : "WRONG VALUES");
    free(got);
    cdt_ucx_ep_close(ep, TIMEOUT_MS);
    cdt_ucx_listener_destroy(listener);
    return bad != 0;
}

static int send_to(cdt_ucx_worker worker, cdt_type type, const char *port)
{
    cdt_ucx_ep ep;
    int rc = cdt_ucx_ep_connect(worker, "127.0.0.1", (uint16_t)atoi(port), TIMEOUT_MS, &ep);
    if (rc != CDT_SUCCESS)
        return fail("connect", rc);
    /* static: the object must stay valid while the receiver may still read it (cdt_ucx_send) */
    static particle p[N];
    for (int i = 0; i < N; i++)
        p[i] = (particle){.id = i, .unused = -1, .pos = {i * 0.5, i * 2.0, -i}};
    rc = cdt_ucx_send(ep, p, N, type, TAG, TIMEOUT_MS);
    if (rc != CDT_SUCCESS)
        return fail("send", rc);
    cdt_ucx_ep_close(ep, TIMEOUT_MS);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "recv") != 0 && strcmp(argv[1], "send") != 0)) {
        fprintf(stderr, "usage: transfer recv PORTFILE | transfer send PORT\n");
        return 2;
    }
    cdt_type type;
    cdt_ucx_context ctx;
    cdt_ucx_worker worker;
    int rc = particle_type(&type);
    if (rc != CDT_SUCCESS)
        return fail("type", rc);
    if ((rc = cdt_ucx_context_create(NULL, &ctx)) != CDT_SUCCESS)
        return fail("context", rc);
    if ((rc = cdt_ucx_worker_create(ctx, NULL, &worker)) != CDT_SUCCESS)
        return fail("worker", rc);
    int status =
        argv[1][0] == 'r' ? receive(worker, type, argv[2]) : send_to(worker, type, argv[2]);
    cdt_ucx_worker_destroy(worker);
    cdt_ucx_context_destroy(ctx);
    cdt_type_free(&type);
    return status;
}
