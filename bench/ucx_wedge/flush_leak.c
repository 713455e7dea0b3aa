/*
 * flush_leak: UCX's shared-memory flush ignores UCT_FLUSH_FLAG_CANCEL, so an endpoint to a
 * peer that died with its FIFO full is never discarded and keeps the peer's segments mapped.
 * Raw UCP only (no libcdt), so the program can be sent upstream as it is.
 *
 * Two processes and a supervisor (which never initialises UCX, so it may fork):
 *   B  receives --read messages, then stops progressing (it sleeps);
 *   A  sends B 4 KiB messages. With --full (the default) it sends until a send stays pending
 *      (B's FIFO is full); with --not-full it sends 8 messages past what B read and stops.
 * Then the supervisor SIGKILLs B. A waits for its endpoint's error callback (keepalive), closes
 * the endpoint with UCP_EP_CLOSE_FLAG_FORCE, progresses for a second, and counts the SysV
 * shared-memory segments mapped in its own address space (/proc/self/maps) against the count
 * before it connected to B.
 *
 * Why (UCX 1.13.1 and 1.22.0): a force close discards the endpoint's transport endpoints
 * (ucp_worker_discard_uct_ep), which calls uct_ep_flush(UCT_FLUSH_FLAG_CANCEL) until it
 * succeeds. uct_mm_ep_flush (src/uct/sm/mm/base/mm_ep.c) never looks at the flags: while the
 * remote FIFO has no free slot it returns UCS_ERR_NO_RESOURCE, and the discard waits in the
 * endpoint's pending queue for a slot that a dead receiver never frees. The transport endpoint
 * and its attachments to B's FIFO and receive segments live until the worker is destroyed.
 *
 * Exit status: 0 RELEASED (no segment of B left mapped), 3 LEAKED, 1 the run itself failed.
 * Run it with shared memory and peer error handling:
 *   UCX_TLS=sysv,self UCX_MM_ERROR_HANDLING=y ./flush_leak            -> LEAKED
 *   UCX_TLS=sysv,self UCX_MM_ERROR_HANDLING=y ./flush_leak --not-full -> RELEASED
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#define MSG_BYTES 4096
#define MAX_ADDRESS 8192

struct shared {
    volatile int b_ready, a_stuck, b_killed, stop;
    size_t address_length;
    unsigned char address[MAX_ADDRESS];
};

static struct shared *sh;
static volatile int peer_failed;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "flush_leak[%d]: %s: %s\n", (int)getpid(), what, ucs_status_string(status));
    _exit(1);
}

static void make_worker(ucp_context_h *context, ucp_worker_h *worker)
{
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK)
        die("ucp_config_read", status);
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    status = ucp_init(&params, config, context);
    ucp_config_release(config);
    if (status != UCS_OK)
        die("ucp_init", status);
    ucp_worker_params_t wparams = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    status = ucp_worker_create(*context, &wparams, worker);
    if (status != UCS_OK)
        die("ucp_worker_create", status);
}

/* SysV shared-memory segments mapped in this process (their lines in /proc/self/maps). */
static int mapped_sysv_segments(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL)
        return -1;
    char line[512];
    int count = 0;
    while (fgets(line, sizeof line, maps) != NULL)
        if (strstr(line, "/SYSV") != NULL)
            count++;
    fclose(maps);
    return count;
}

static void run_b(long read_count)
{
    ucp_context_h context;
    ucp_worker_h worker;
    make_worker(&context, &worker);
    ucp_address_t *address;
    size_t length;
    ucs_status_t status = ucp_worker_get_address(worker, &address, &length);
    if (status != UCS_OK || length > MAX_ADDRESS)
        die("ucp_worker_get_address", status);
    memcpy(sh->address, address, length);
    sh->address_length = length;
    ucp_worker_release_address(worker, address);
    __sync_synchronize();
    sh->b_ready = 1;
    static char buffer[MSG_BYTES];
    ucp_request_param_t param = {.op_attr_mask = 0};
    for (long i = 0; i < read_count; i++) {
        void *request = ucp_tag_recv_nbx(worker, buffer, sizeof buffer, 0, 0, &param);
        if (UCS_PTR_IS_ERR(request))
            die("ucp_tag_recv_nbx", UCS_PTR_STATUS(request));
        if (request == NULL) /* completed at once: the message was already there */
            continue;
        while (ucp_request_check_status(request) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        ucp_request_free(request);
    }
    for (;;) /* stop reading: A fills our FIFO until the supervisor kills us */
        pause();
}

static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
    peer_failed = 1;
}

static void progress_for(ucp_worker_h worker, double seconds)
{
    double end = now() + seconds;
    while (now() < end)
        ucp_worker_progress(worker);
}

static int run_a(long read_count, int fill)
{
    while (!sh->b_ready)
        usleep(1000);
    ucp_context_h context;
    ucp_worker_h worker;
    make_worker(&context, &worker);
    int maps_before = mapped_sysv_segments();
    ucp_ep_params_t eparams = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                             UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                             UCP_EP_PARAM_FIELD_ERR_HANDLER,
                               .address = (const ucp_address_t *)sh->address,
                               .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                               .err_handler = {.cb = on_peer_error, .arg = NULL}};
    ucp_ep_h ep;
    ucs_status_t status = ucp_ep_create(worker, &eparams, &ep);
    if (status != UCS_OK)
        die("ucp_ep_create", status);

    static char payload[MSG_BYTES];
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *pending[4096];
    int npending = 0;
    long sent = 0;
    /* --full: send until one send stays pending for half a second (B's FIFO is full);
     * --not-full: 8 past what B reads, each completed */
    for (;;) {
        if (!fill && sent == read_count + 8)
            break;
        void *request = ucp_tag_send_nbx(ep, payload, sizeof payload, 1, &param);
        if (UCS_PTR_IS_ERR(request))
            die("ucp_tag_send_nbx", UCS_PTR_STATUS(request));
        sent++;
        if (request == NULL)
            continue;
        double give_up = now() + 0.5;
        while (ucp_request_check_status(request) == UCS_INPROGRESS && now() < give_up)
            ucp_worker_progress(worker);
        if (ucp_request_check_status(request) == UCS_INPROGRESS) {
            if (npending < (int)(sizeof pending / sizeof pending[0]))
                pending[npending++] = request;
            if (fill)
                break;
        } else {
            ucp_request_free(request);
        }
    }
    int maps_connected = mapped_sysv_segments();
    sh->a_stuck = 1;
    while (!sh->b_killed)
        ucp_worker_progress(worker);
    double killed = now();
    while (!peer_failed && now() < killed + 30)
        ucp_worker_progress(worker);
    double detected = now() - killed;

    ucp_request_param_t close_param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                       .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *close = ucp_ep_close_nbx(ep, &close_param);
    int closed = 1;
    if (close != NULL && !UCS_PTR_IS_ERR(close)) {
        double end = now() + 5;
        while (ucp_request_check_status(close) == UCS_INPROGRESS && now() < end)
            ucp_worker_progress(worker);
        closed = ucp_request_check_status(close) != UCS_INPROGRESS;
        if (closed)
            ucp_request_free(close);
    }
    for (int i = 0; i < npending; i++) /* failed with the endpoint */
        if (ucp_request_check_status(pending[i]) != UCS_INPROGRESS)
            ucp_request_free(pending[i]);
    progress_for(worker, 1.0);
    int maps_after = mapped_sysv_segments();

    printf("B's FIFO at its death: %s (A sent %ld messages, B read %ld, %d send(s) pending)\n",
           fill ? "full" : "not full", sent, read_count, npending);
    printf("peer failure reported %s %.2f s after the kill\n", peer_failed ? "" : "NOT within",
           detected);
    printf("force close: %s\n", closed ? "completed" : "still in progress after 5 s");
    printf("SysV segments mapped in A: %d before connecting, %d connected, %d one second after "
           "the force close\n",
           maps_before, maps_connected, maps_after);
    int leaked = maps_after > maps_before;
    printf("%s\n", leaked ? "LEAKED" : "RELEASED");
    fflush(stdout);
    _exit(leaked ? 3 : 0); /* no teardown: a leaked discard would be purged only there */
}

int main(int argc, char **argv)
{
    long read_count = 1000;
    int fill = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--full"))
            fill = 1;
        else if (!strcmp(argv[i], "--not-full"))
            fill = 0;
        else if (!strcmp(argv[i], "--read") && i + 1 < argc)
            read_count = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: flush_leak [--full | --not-full] [--read N]\n"
                            "  transports come from the environment (UCX_TLS, "
                            "UCX_MM_ERROR_HANDLING...)\n");
            return 1;
        }
    }
    if (read_count < 0) {
        fprintf(stderr, "flush_leak: --read must not be negative\n");
        return 1;
    }
    /* the dead peer is found by keepalive: make it quick unless the caller chose */
    setenv("UCX_KEEPALIVE_INTERVAL", "100ms", 0);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(sh, 0, sizeof *sh);
    pid_t b = fork();
    if (b == 0)
        run_b(read_count);
    pid_t a = fork();
    if (a == 0)
        run_a(read_count, fill);
    int verdict = 1;
    double deadline = now() + 30;
    while (!sh->a_stuck && now() < deadline)
        usleep(1000);
    if (!sh->a_stuck) {
        fprintf(stderr, "flush_leak: A never filled B's FIFO\n");
        kill(a, SIGKILL);
    }
    kill(b, SIGKILL);
    waitpid(b, NULL, 0);
    sh->b_killed = 1;
    int status;
    alarm(60); /* A bounds its own waits; this bounds the supervisor's */
    if (waitpid(a, &status, 0) == a && WIFEXITED(status))
        verdict = WEXITSTATUS(status);
    return verdict;
}
