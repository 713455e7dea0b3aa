/*
 * fifo_wedge: UCX's shared-memory FIFO wedges when a sender dies inside its send window.
 * Raw UCP only (no libcdt), so the program can be sent upstream as it is.
 *
 * Three processes on one machine, each with its own UCP context and worker:
 *   R  receives 4 KiB tagged messages from anyone and counts them per sender (tag 1 = S, 2 = V);
 *   S  (the survivor) sends R 4 KiB contiguous messages in a loop;
 *   V  (the victim) sends R 4 KiB messages of a generic datatype whose pack callback raises
 *      SIGKILL at its --kill-at'th call, that is inside UCX's send of that message.
 * A supervisor (this process, which never initialises UCX, so it may fork) starts R, then S,
 * then V, waits for V's death and then watches how many of S's messages R still receives.
 *
 * Why it wedges (src/uct/sm/mm/base/mm_ep.c, uct_mm_ep_am_common_send, identical in 1.13.1 and
 * 1.22.0): a bcopy active message first reserves a slot of the *receiver's* FIFO (a CAS on the
 * FIFO head), then attaches the receive segment and runs the pack callback, and only then sets
 * the slot's owner flag. The receiver (uct_mm_iface_poll_fifo) reads slots in order and waits
 * for that flag. A sender killed between the CAS and the flag leaves a slot that is never
 * published: R never reads past it, its FIFO fills, and S waits for ever.
 *
 * The transports are UCX's own choice from the environment, e.g.
 *   UCX_TLS=sysv,self UCX_MM_ERROR_HANDLING=y ./fifo_wedge      -> WEDGED
 *   UCX_TLS=tcp,self ./fifo_wedge                               -> SURVIVED
 * Endpoints use UCP_ERR_HANDLING_MODE_PEER unless --no-peer-mode is given.
 *
 * Exit status: 0 SURVIVED (R went on receiving S's messages after V died), 3 WEDGED (it did
 * not), 1 the run itself failed (setup error, V never died, ...). bench/ucx_wedge/run runs it
 * in every configuration; docs/TRANSPORT.md explains the finding.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#define TAG_SURVIVOR 1
#define TAG_VICTIM 2
#define MAX_ADDRESS 8192

/* Shared between the supervisor and its children (an anonymous shared mapping made before
 * any fork). The children write; the supervisor reads. */
struct shared {
    volatile uint64_t received[3]; /* by tag: [1] from S, [2] from V */
    volatile uint64_t sent[3];     /* completed sends by S [1] and V [2] */
    volatile int receiver_ready;
    volatile int stop;
    volatile int peer_errors[3]; /* error callbacks seen by R [0], S [1], V [2] */
    size_t address_length;
    unsigned char address[MAX_ADDRESS];
    char transports[3][256]; /* what ucp_ep_print_info said about each sender's lanes */
};

static struct shared *sh;
static int peer_mode = 1;
static long kill_at = 2000;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "fifo_wedge[%d]: %s: %s\n", (int)getpid(), what, ucs_status_string(status));
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

static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    (void)status;
    sh->peer_errors[(intptr_t)arg]++;
}

/* ------------------------------------------------------------------------------------------ */
/* R: receive anything, count per tag */

static void recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                      void *user_data)
{
    (void)request;
    (void)user_data;
    if (status == UCS_OK && info->sender_tag <= TAG_VICTIM)
        sh->received[info->sender_tag]++;
}

static void run_receiver(void)
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
    sh->receiver_ready = 1;

    static char buffer[MSG_BYTES];
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.recv = recv_done};
    while (!sh->stop) {
        void *request = ucp_tag_recv_nbx(worker, buffer, sizeof buffer, 0, 0, &param);
        if (UCS_PTR_IS_ERR(request))
            die("ucp_tag_recv_nbx", UCS_PTR_STATUS(request));
        while (!sh->stop && request != NULL && ucp_request_check_status(request) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        if (request != NULL) {
            if (ucp_request_check_status(request) == UCS_INPROGRESS)
                ucp_request_cancel(worker, request);
            ucp_request_free(request);
        }
    }
    _exit(0); /* the supervisor may kill a wedged R at any point: no orderly teardown needed */
}

/* ------------------------------------------------------------------------------------------ */
/* V's generic datatype: the pack callback dies at its kill_at'th call */

static long pack_calls;
static void *start_pack(void *context, const void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return (void *)buffer;
}
static void *start_unpack(void *context, void *buffer, size_t count)
{
    (void)context;
    (void)count;
    return buffer;
}
static size_t packed_size(void *state)
{
    (void)state;
    return MSG_BYTES;
}
static size_t pack(void *state, size_t offset, void *dest, size_t max_length)
{
    size_t n = MSG_BYTES - offset < max_length ? MSG_BYTES - offset : max_length;
    if (++pack_calls == kill_at)
        raise(SIGKILL); /* inside UCX's send: after the FIFO slot was reserved */
    memcpy(dest, (const char *)state + offset, n);
    return n;
}
static ucs_status_t unpack(void *state, size_t offset, const void *src, size_t length)
{
    memcpy((char *)state + offset, src, length);
    return UCS_OK;
}
static void finish(void *state)
{
    (void)state;
}

/* ------------------------------------------------------------------------------------------ */
/* S and V: send to R in a loop */

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    (void)request;
    (void)status;
    (void)user_data;
}

static void print_lanes(ucp_ep_h ep, int who)
{
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    if (stream == NULL)
        return;
    ucp_ep_print_info(ep, stream);
    fclose(stream);
    /* keep the lines that name a lane's transport: "lane[0]:  1:sysv/memory.0 ..." */
    char *out = sh->transports[who];
    size_t used = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *lane = strstr(line, "lane[");
        if (lane == NULL)
            continue;
        char *colon = strchr(lane, ':');
        if (colon == NULL)
            continue;
        char name[64];
        if (sscanf(colon + 1, " %*d:%63s", name) != 1)
            continue;
        int n =
            snprintf(out + used, sizeof sh->transports[who] - used, "%s%s", used ? " " : "", name);
        if (n < 0 || (size_t)n >= sizeof sh->transports[who] - used)
            break;
        used += (size_t)n;
    }
    free(text);
}

static void run_sender(int who)
{
    while (!sh->receiver_ready)
        usleep(1000);
    ucp_context_h context;
    ucp_worker_h worker;
    make_worker(&context, &worker);
    ucp_ep_params_t eparams = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)sh->address,
        .err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE,
        .err_handler = {.cb = on_peer_error, .arg = (void *)(intptr_t)who}};
    ucp_ep_h ep;
    ucs_status_t status = ucp_ep_create(worker, &eparams, &ep);
    if (status != UCS_OK)
        die("ucp_ep_create", status);

    static char payload[MSG_BYTES];
    memset(payload, who, sizeof payload);
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = send_done};
    if (who == TAG_VICTIM) {
        static const ucp_generic_dt_ops_t ops = {.start_pack = start_pack,
                                                 .start_unpack = start_unpack,
                                                 .packed_size = packed_size,
                                                 .pack = pack,
                                                 .unpack = unpack,
                                                 .finish = finish};
        ucp_datatype_t datatype;
        status = ucp_dt_create_generic(&ops, NULL, &datatype);
        if (status != UCS_OK)
            die("ucp_dt_create_generic", status);
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype = datatype;
    }
    int lanes_printed = 0;
    while (!sh->stop) {
        void *request = ucp_tag_send_nbx(ep, payload, who == TAG_VICTIM ? 1 : MSG_BYTES,
                                         (ucp_tag_t)who, &param);
        if (UCS_PTR_IS_ERR(request))
            _exit(2); /* R is gone: the supervisor is ending the run */
        while (!sh->stop && request != NULL && ucp_request_check_status(request) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        if (request != NULL)
            ucp_request_free(request);
        sh->sent[who]++;
        if (!lanes_printed) { /* after the first send the lanes are wired up */
            print_lanes(ep, who);
            lanes_printed = 1;
        }
    }
    _exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* the supervisor */

static pid_t start(void (*body)(int), int who)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        body(who);
        _exit(0);
    }
    return pid;
}

static void receiver_body(int who)
{
    (void)who;
    run_receiver();
}

/* Wait until cond() holds or seconds pass; returns whether it held. */
static int wait_for(int (*cond)(void), double seconds)
{
    double end = now() + seconds;
    while (!cond()) {
        if (now() > end)
            return 0;
        usleep(1000);
    }
    return 1;
}
static int receiver_ready(void)
{
    return sh->receiver_ready;
}
static int survivor_running(void)
{
    return sh->received[TAG_SURVIVOR] >= 1000;
}

int main(int argc, char **argv)
{
    double watch_seconds = 5.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-peer-mode"))
            peer_mode = 0;
        else if (!strcmp(argv[i], "--kill-at") && i + 1 < argc)
            kill_at = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            watch_seconds = atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: fifo_wedge [--kill-at N] [--seconds S] [--no-peer-mode]\n"
                    "  transports come from the environment (UCX_TLS, UCX_MM_ERROR_HANDLING...)\n");
            return 1;
        }
    }
    if (kill_at < 1 || watch_seconds <= 0) {
        fprintf(stderr, "fifo_wedge: --kill-at and --seconds must be positive\n");
        return 1;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(sh, 0, sizeof *sh);
    pid_t pids[3] = {0, 0, 0};
    int verdict = 1;
    const char *why = "";

    pids[0] = start(receiver_body, 0);
    if (!wait_for(receiver_ready, 20)) {
        why = "R did not start";
        goto out;
    }
    pids[TAG_SURVIVOR] = start(run_sender, TAG_SURVIVOR);
    if (!wait_for(survivor_running, 20)) {
        why = "S's first messages did not arrive";
        goto out;
    }
    pids[TAG_VICTIM] = start(run_sender, TAG_VICTIM);

    /* V dies at its kill_at'th pack call */
    double deadline = now() + 30;
    int victim_status = 0;
    for (;;) {
        pid_t got = waitpid(pids[TAG_VICTIM], &victim_status, WNOHANG);
        if (got == pids[TAG_VICTIM])
            break;
        if (now() > deadline) {
            why = "V did not die within 30 s";
            goto out;
        }
        usleep(1000);
    }
    pids[TAG_VICTIM] = 0;
    if (!WIFSIGNALED(victim_status) || WTERMSIG(victim_status) != SIGKILL) {
        why = "V ended other than by its own SIGKILL";
        goto out;
    }
    double died = now();
    uint64_t at_death = sh->received[TAG_SURVIVOR];
    usleep(500 * 1000); /* let messages in flight at the death land */
    uint64_t before = sh->received[TAG_SURVIVOR];
    usleep((useconds_t)(watch_seconds * 1e6));
    uint64_t after = sh->received[TAG_SURVIVOR];
    double watched = now() - died - 0.5;

    printf("lanes of S: %s\n",
           sh->transports[TAG_SURVIVOR][0] ? sh->transports[TAG_SURVIVOR] : "(not reported)");
    printf("lanes of V: %s\n",
           sh->transports[TAG_VICTIM][0] ? sh->transports[TAG_VICTIM] : "(not reported)");
    printf("peer mode: %s; V killed inside its pack callback at message %ld\n",
           peer_mode ? "on" : "off", kill_at);
    printf("R received from S: %" PRIu64 " before V's death, %" PRIu64 " in the %.1f s after "
           "(%.0f messages/s); from V: %" PRIu64 "\n",
           at_death, after - before, watched, (double)(after - before) / watched,
           sh->received[TAG_VICTIM]);
    printf("error callbacks: R %d, S %d\n", sh->peer_errors[0], sh->peer_errors[TAG_SURVIVOR]);
    /* A wedged R receives nothing from S once the messages S had already placed in R's FIFO
     * (at most its slot count) landed, which the half second before `before` allows for; a
     * live one receives thousands a second even on a loaded machine. */
    verdict = after - before >= 100 ? 0 : 3;
    printf("%s\n", verdict == 0 ? "SURVIVED" : "WEDGED");

out:
    if (verdict == 1)
        fprintf(stderr, "fifo_wedge: %s\n", why);
    sh->stop = 1;
    usleep(200 * 1000);
    for (int i = 0; i < 3; i++) { /* a wedged R or S never sees stop: kill what is left */
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    }
    return verdict;
}
