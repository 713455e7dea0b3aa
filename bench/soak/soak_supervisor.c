/*
 * soak_supervisor.c - the supervisor: forks and restarts the peers, tells each where the
 * others listen, gathers their statistics and failures, kills a random mortal peer every few
 * seconds, samples RSS, and runs the event loop of each phase (see soak.c).
 */
#include "soak_supervisor.h"

/* ------------------------------------------------------------------------------------------
 * supervisor
 * ---------------------------------------------------------------------------------------- */

incarnation *incs;
size_t ninc;
slot slots[MAX_PEERS];
sample *samples;
size_t nsamples, capsamples;
double t_start;
int n_fail_msgs, n_bad_deaths, deaths, n_notes, deaths_in_send;
struct phase_ends ends;
char *note_log;
static size_t note_log_len;
char *fail_log; /* the first failures, for the report */
static size_t fail_log_len;
char *transports;
FILE *csv;

void fail_note(const char *fmt, ...)
{
    char line[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("[%7.1f s] FAIL %s\n", now_s() - t_start, line);
    fflush(stdout);
    if (fail_log_len < 64 * 1024) {
        size_t n = strlen(line);
        fail_log = realloc(fail_log, fail_log_len + n + 16);
        fail_log_len += (size_t)sprintf(fail_log + fail_log_len, "- %s\n", line);
    }
}

void spawn(int i)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
        perror("socketpair");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    if (csv)
        fflush(csv);
    int gen = slots[i].pid == 0 && ninc < (size_t)opt.peers ? 0 : slots[i].gen + 1;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(sv[0]);
        for (int k = 0; k < opt.peers; k++)
            if (slots[k].alive)
                close(slots[k].sock);
        _exit(peer_main(i, gen, sv[1]));
    }
    close(sv[1]);
    slots[i] = (slot){.pid = pid, .sock = sv[0], .gen = gen, .alive = 1, .inc = ninc};
    incs = realloc(incs, (ninc + 1) * sizeof(*incs));
    incs[ninc++] = (incarnation){.peer = i, .gen = gen, .pid = pid, .t0 = now_s() - t_start};
}

static void tell(int i, int type, int peer, int gen, int port)
{
    msg m = {.type = type, .peer = peer, .gen = gen, .port = port};
    if (slots[i].alive && send(slots[i].sock, &m, sizeof(m), MSG_NOSIGNAL) < 0) {
        /* the peer died: the reaper notices */
    }
}
void tell_all(int type)
{
    for (int k = 0; k < opt.peers; k++)
        if (slots[k].ready)
            tell(k, type, 0, 0, 0);
}

static void handle(int i, msg *m)
{
    incarnation *in = &incs[slots[i].inc];
    switch (m->type) {
    case M_HELLO:
        slots[i].port = m->port;
        slots[i].ready = 1;
        for (int k = 0; k < opt.peers; k++)
            if (k != i && slots[k].ready) {
                tell(i, M_UP, k, slots[k].gen, slots[k].port);
                tell(k, M_UP, i, slots[i].gen, slots[i].port);
            }
        break;
    case M_STATS:
    case M_BYE:
        in->st = m->st;
        in->bye |= m->type == M_BYE;
        break;
    case M_FAIL:
        n_fail_msgs++;
        fail_note("peer %d.%d (pid %d): %s", m->peer, m->gen, (int)in->pid, m->text);
        break;
    case M_NOTE:
        n_notes++;
        printf("[%7.1f s] note: peer %d.%d: %s\n", now_s() - t_start, m->peer, m->gen, m->text);
        if (note_log_len < 32 * 1024) {
            size_t n = strlen(m->text);
            note_log = realloc(note_log, note_log_len + n + 64);
            note_log_len += (size_t)sprintf(note_log + note_log_len, "- [%.0f s] peer %d.%d: %s\n",
                                            now_s() - t_start, m->peer, m->gen, m->text);
        }
        break;
    case M_INFO:
        if (transports == NULL)
            transports = strdup(m->text);
        break;
    }
}

void close_slot(int i)
{
    close(slots[i].sock);
    slots[i].alive = slots[i].ready = 0;
    slots[i].port = 0;
    incs[slots[i].inc].t1 = now_s() - t_start;
    for (int k = 0; k < opt.peers; k++)
        if (k != i && slots[k].ready)
            tell(k, M_DOWN, i, slots[i].gen, 0);
}

int stopping;

static void reap(void)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < opt.peers; i++) {
            if (!slots[i].alive || slots[i].pid != pid)
                continue;
            incarnation *in = &incs[slots[i].inc];
            int ok = stopping && WIFEXITED(status) && WEXITSTATUS(status) == 0;
            if (!ok) {
                in->died_badly = 1;
                n_bad_deaths++;
                if (WIFSIGNALED(status))
                    fail_note("peer %d.%d (pid %d) died of signal %d without being killed", i,
                              slots[i].gen, (int)pid, WTERMSIG(status));
                else
                    fail_note("peer %d.%d (pid %d) exited with %d%s", i, slots[i].gen, (int)pid,
                              WEXITSTATUS(status), stopping ? "" : " before the end");
            }
            close_slot(i);
            if (!stopping)
                spawn(i);
        }
    }
}

/* VmRSS, and its anonymous and shared-memory parts (RssAnon, RssShmem) */
static long read_rss(pid_t pid, long *anon, long *shmem)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    if (f == NULL)
        return -1;
    *anon = *shmem = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) != 1 && sscanf(line, "RssAnon: %ld", anon) != 1)
            sscanf(line, "RssShmem: %ld", shmem);
    fclose(f);
    return kib;
}

static void sample_rss(void)
{
    double t = now_s() - t_start;
    for (int i = 0; i < opt.peers; i++) {
        if (!slots[i].alive)
            continue;
        incarnation *in = &incs[slots[i].inc];
        long anon, shmem;
        long kib = read_rss(slots[i].pid, &anon, &shmem);
        if (kib < 0)
            continue;
        if (in->rss_first == 0)
            in->rss_first = kib;
        in->rss_last = kib;
        if (kib > in->rss_max)
            in->rss_max = kib;
        if (nsamples == capsamples) {
            capsamples = capsamples ? 2 * capsamples : 4096;
            samples = realloc(samples, capsamples * sizeof(*samples));
        }
        long qk = (long)(in->st.quarantined_bytes / 1024);
        const stats *st = &in->st;
        long inuse = (long)((st->heap_inuse + st->heap_mmap) / 1024);
        samples[nsamples++] =
            (sample){t, slots[i].inc, kib, qk, anon, shmem, inuse, (long)(st->heap_free / 1024)};
        uint64_t sent = 0, recvd = 0;
        for (int f = 0; f < NFAM; f++)
            sent += in->st.sent[f], recvd += in->st.recv[f];
        if (csv)
            fprintf(csv,
                    "%.1f,%d,%d,%d,%ld,%ld,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    ",%ld,%ld,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    "\n",
                    t, i, in->gen, (int)in->pid, kib, qk, sent, recvd, in->st.verified,
                    in->st.verified_bytes, anon, shmem, st->heap_arena / 1024,
                    st->heap_inuse / 1024, st->heap_free / 1024, st->heap_mmap / 1024,
                    st->heap_arenas, st->worker_quarantined);
    }
}

/* run the event loop for `secs` (or until done() says so) */
double next_sample, next_kill, next_progress;
rng sup_rng;
int killing;

static void kill_one(void)
{
    int cand[MAX_PEERS], n = 0;
    for (int i = opt.immortal; i < opt.peers; i++)
        if (slots[i].ready)
            cand[n++] = i;
    if (n == 0)
        return;
    int i = cand[rnd(&sup_rng) % (uint64_t)n];
    int status;
    pid_t done = 0;
    if (opt.kill_in_send > 0 && rnd_unit(&sup_rng) < opt.kill_in_send) {
        /* inside a send: the victim kills itself with its next object in flight */
        kill(slots[i].pid, SIGUSR1);
        double until = now_s() + 2;
        while ((done = waitpid(slots[i].pid, &status, WNOHANG)) == 0 && now_s() < until)
            sleep_ms(5);
        if (done == slots[i].pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            deaths_in_send++;
    }
    if (done != slots[i].pid) {
        kill(slots[i].pid, SIGKILL);
        waitpid(slots[i].pid, &status, 0);
    }
    incs[slots[i].inc].killed = 1;
    deaths++;
    close_slot(i);
    spawn(i);
}

void totals(stats *t)
{
    memset(t, 0, sizeof(*t));
    uint64_t largest = 0;
    for (size_t k = 0; k < ninc; k++) {
        const uint64_t *s = (const uint64_t *)&incs[k].st;
        uint64_t *d = (uint64_t *)t;
        for (size_t j = 0; j < sizeof(stats) / 8; j++)
            d[j] += s[j];
        if (incs[k].st.largest > largest)
            largest = incs[k].st.largest;
    }
    t->largest = largest;
}

void progress_line(void)
{
    stats t;
    totals(&t);
    uint64_t sent = t.sent[0] + t.sent[1] + t.sent[2];
    printf("[%7.1f s] sent %" PRIu64 " verified %" PRIu64 " (%.2f GB) deaths %d reconnects %" PRIu64
           " peer-errors %" PRIu64 " timeouts %" PRIu64 " failures %d\n",
           now_s() - t_start, sent, t.verified, (double)t.verified_bytes / 1e9, deaths,
           t.reconnects, t.err_send[st_idx(CDT_ERR_PEER)] + t.err_recv[st_idx(CDT_ERR_PEER)],
           t.err_send[st_idx(CDT_ERR_TIMEOUT)] + t.err_recv[st_idx(CDT_ERR_TIMEOUT)],
           n_fail_msgs + n_bad_deaths);
    fflush(stdout);
}

void pump(double secs, int (*done)(void))
{
    double end = now_s() + secs;
    while (now_s() < end && !(done && done())) {
        struct pollfd pfd[MAX_PEERS];
        int idx[MAX_PEERS], n = 0;
        for (int i = 0; i < opt.peers; i++)
            if (slots[i].alive) {
                pfd[n] = (struct pollfd){slots[i].sock, POLLIN, 0};
                idx[n++] = i;
            }
        poll(pfd, (nfds_t)n, 50);
        msg *m = malloc(sizeof(*m));
        for (int k = 0; k < n; k++)
            if (pfd[k].revents & POLLIN)
                while (slots[idx[k]].alive &&
                       recv(slots[idx[k]].sock, m, sizeof(*m), MSG_DONTWAIT) > 0)
                    handle(idx[k], m);
        free(m);
        reap();
        double t = now_s();
        if (t >= next_sample) {
            next_sample = t + 1;
            sample_rss();
        }
        if (t >= next_progress) {
            next_progress = t + 10;
            progress_line();
        }
        if (killing && t >= next_kill) {
            next_kill = t + opt.kill_every * (0.5 + rnd_unit(&sup_rng));
            kill_one();
        }
    }
}

int all_ready(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (!slots[i].ready)
            return 0;
    return 1;
}
static int final_sent_all(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (incs[slots[i].inc].st.final_done < (uint64_t)opt.senders)
            return 0;
    return 1;
}
int final_matches(int print)
{
    int ok = 1;
    for (int i = 0; i < opt.peers; i++)
        for (int j = 0; j < opt.peers; j++) {
            if (i == j)
                continue;
            uint64_t s = incs[slots[i].inc].st.final_sent[j];
            uint64_t r = incs[slots[j].inc].st.final_recv[i];
            uint64_t want = (uint64_t)opt.senders * (uint64_t)opt.final_per_target;
            if (s != r || s != want) {
                ok = 0;
                if (print)
                    fail_note("final phase: peer %d sent %" PRIu64 " of %" PRIu64
                              " objects to peer %d, which received %" PRIu64,
                              i, s, want, j, r);
            }
        }
    return ok;
}
int final_received(void)
{
    return final_sent_all() && final_matches(0);
}
/* what the final phase left when its bound passed: sender threads that had not sent all
 * their final objects, per peer (a send may still wait for its peer), and every pair whose
 * objects did not all arrive */
void final_left(void)
{
    for (int i = 0; i < opt.peers; i++) {
        uint64_t done = incs[slots[i].inc].st.final_done;
        if (done < (uint64_t)opt.senders)
            fail_note("final phase: peer %d: %" PRIu64 " of %d sender threads done", i, done,
                      opt.senders);
    }
    final_matches(1);
}

int all_bye(void)
{
    for (int i = 0; i < opt.peers; i++)
        if (slots[i].alive)
            return 0;
    return 1;
}
