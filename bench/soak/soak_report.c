/*
 * soak_report.c - the report of a run: the machine, the results, errors by status and the
 * RSS of the long-lived peers, its growth and its course over time (see soak.c).
 */
#include "soak_supervisor.h"

/* ------------------------------------------------------------------------------------------
 * report
 * ---------------------------------------------------------------------------------------- */

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

enum { RSS_ALL, RSS_MINUS_QUARANTINE, RSS_ANON, RSS_SHMEM };

static long sample_kib(const sample *s, int which)
{
    switch (which) {
    case RSS_MINUS_QUARANTINE:
        return s->rss_kib - s->quarantined_kib;
    case RSS_ANON:
        return s->anon_kib;
    case RSS_SHMEM:
        return s->shmem_kib;
    default:
        return s->rss_kib;
    }
}

/* median of an incarnation's samples (RSS, or the part `which` names) in [from, to) of its
 * life (fractions) */
static long median_rss(size_t inc, double from, double to, int which)
{
    const incarnation *in = &incs[inc];
    double life = in->t1 - in->t0;
    long *v = malloc(nsamples * sizeof(long) + 1);
    size_t n = 0;
    for (size_t k = 0; k < nsamples; k++)
        if (samples[k].inc == inc && samples[k].t >= in->t0 + from * life &&
            samples[k].t < in->t0 + to * life + 1e-9)
            v[n++] = sample_kib(&samples[k], which);
    long m = 0;
    if (n > 0) {
        qsort(v, n, sizeof(long), cmp_long);
        m = v[n / 2];
    }
    free(v);
    return m;
}

static void machine(FILE *f)
{
    char line[512], cpu[256] = "unknown";
    FILE *c = fopen("/proc/cpuinfo", "r");
    while (c && fgets(line, sizeof(line), c))
        if (sscanf(line, "model name : %255[^\n]", cpu) == 1)
            break;
    if (c)
        fclose(c);
    long mem_kib = 0;
    FILE *m = fopen("/proc/meminfo", "r");
    while (m && fgets(line, sizeof(line), m))
        if (sscanf(line, "MemTotal: %ld", &mem_kib) == 1)
            break;
    if (m)
        fclose(m);
    struct utsname u;
    uname(&u);
    const char *tls = getenv("UCX_TLS");
    fprintf(f, "| machine | |\n|---|---|\n");
    fprintf(f, "| CPU | %s |\n| cores | %ld |\n| memory | %.1f GiB |\n| kernel | %s %s |\n", cpu,
            sysconf(_SC_NPROCESSORS_ONLN), (double)mem_kib / (1024.0 * 1024.0), u.sysname,
            u.release);
    fprintf(f, "| UCX | %s |\n| UCX_TLS (environment) | %s |\n| UCX_KEEPALIVE_INTERVAL | %s |\n",
            ucp_get_version_string(), tls ? tls : "(not set: libcdt sets ^mm)",
            getenv("UCX_KEEPALIVE_INTERVAL") ? getenv("UCX_KEEPALIVE_INTERVAL")
                                             : "(1s, libcdt's default)");
    const char *nd = getenv("UCX_NET_DEVICES");
    fprintf(f, "| UCX_NET_DEVICES | %s |\n", nd ? nd : "(all)");
    const char *proto = getenv("CDT_UCX_PROTOCOL"), *shm = getenv("CDT_UCX_SHARED_MEMORY");
    fprintf(f, "| CDT_UCX_PROTOCOL | %s |\n| CDT_UCX_SHARED_MEMORY | %s |\n\n",
            proto ? proto : "(auto)", shm ? shm : "(cma, the default)");
}

void write_report(FILE *f, int pass, double secs, const char *cmdline)
{
    stats t;
    totals(&t);
    uint64_t sent = t.sent[0] + t.sent[1] + t.sent[2], recvd = t.recv[0] + t.recv[1] + t.recv[2];
    fprintf(f, "# Soak: %s\n\n", pass ? "PASS" : "FAIL");
    fprintf(f, "`%s` — %.1f minutes of traffic with kills, then a final phase without kills.\n\n",
            cmdline, secs / 60);
    fprintf(f,
            "%d peer processes on 127.0.0.1 (peer 0%s never killed), each with %d sender "
            "threads, one receiver thread per object family (derived, sobj, dvec) and an "
            "acceptor on one worker; objects 0 B to %.0f MiB (3%% empty, 55%% up to 4 KiB, "
            "28%% up to 256 KiB, 11.5%% up to 8 MiB, 2.5%% up to the maximum); a random mortal "
            "peer SIGKILLed and restarted every %.1f s on average; seed %" PRIu64 ".\n\n",
            opt.peers, opt.immortal > 1 ? " and the next" : "", opt.senders,
            (double)opt.max_bytes / (double)MiB, opt.kill_every, opt.seed);
    machine(f);
    fprintf(f, "| result | |\n|---|---:|\n");
    fprintf(f,
            "| objects sent (derived / sobj / dvec) | %" PRIu64 " (%" PRIu64 " / %" PRIu64
            " / %" PRIu64 ") |\n",
            sent, t.sent[0], t.sent[1], t.sent[2]);
    fprintf(f,
            "| objects received (derived / sobj / dvec) | %" PRIu64 " (%" PRIu64 " / %" PRIu64
            " / %" PRIu64 ") |\n",
            recvd, t.recv[0], t.recv[1], t.recv[2]);
    fprintf(f, "| objects verified byte for byte | %" PRIu64 " |\n", t.verified);
    fprintf(f, "| bytes sent / verified | %.3f GB / %.3f GB |\n", (double)t.sent_bytes / 1e9,
            (double)t.verified_bytes / 1e9);
    fprintf(f, "| largest object verified | %.1f MiB |\n", (double)t.largest / (double)MiB);
    fprintf(f, "| peer deaths survived (SIGKILL) | %d |\n", deaths);
    fprintf(
        f,
        "| of them, killed inside a send (the victim's own SIGKILL, its object in flight) | %d |\n",
        deaths_in_send);
    fprintf(f, "| incarnations | %zu |\n", ninc);
    fprintf(f,
            "| objects whose stream went through an endpoint's lane, sent / received "
            "(docs/TRANSPORT.md §10) | %" PRIu64 " / %" PRIu64 " |\n",
            t.lane_sent, t.lane_received);
    fprintf(
        f, "| connections (reconnections) / accepted | %" PRIu64 " (%" PRIu64 ") / %" PRIu64 " |\n",
        t.connects, t.reconnects, t.accepts);
    fprintf(f, "| idle receives timed out or canceled (no message) | %" PRIu64 " |\n",
            t.idle_timeouts);
    fprintf(
        f, "| derived/sobj receives that ended CDT_ERR_CANCELED without a cancel | %" PRIu64 " |\n",
        t.recv_canceled_unasked);
    fprintf(
        f,
        "| matched derived/sobj receives ended by the soak's cancel after 1 s (CDT_ERR_CANCELED) "
        "| %" PRIu64 " |\n",
        t.recv_canceled_matched);
    fprintf(f,
            "| receives failed with CDT_ERR_PEER whose sender lived on (collateral of another "
            "peer's failure) | %" PRIu64 " |\n",
            t.collateral);
    fprintf(f,
            "| receives failed with CDT_ERR_PEER whose sender lived on, by this peer's own "
            "endpoint to it (failed or closed; named by the endpoint's failure / by an aborted "
            "message) | %" PRIu64 " (%" PRIu64 " / %" PRIu64 ") |\n",
            t.own_ep_live, t.own_ep_by_endpoint, t.own_ep_by_message);
    fprintf(f,
            "| receives failed with CDT_ERR_PEER before their message matched (sender not "
            "named) | %" PRIu64 " |\n",
            t.peer_fail_unplaced);
    fprintf(f, "| wrong objects | %" PRIu64 " |\n| unexpected statuses | %" PRIu64 " |\n", t.wrong,
            t.unexpected);
    fprintf(f, "| requests stuck after cancel/close | %" PRIu64 " |\n", t.stuck);
    fprintf(f, "| cdt_ucx_recv timeouts with the object partly written | %" PRIu64 " |\n",
            t.tmo_matched);
    fprintf(f, "| timed-out receives written later | %" PRIu64 " |\n", t.late_write);
    fprintf(f, "| peers dead without a kill, or hung | %d |\n", n_bad_deaths);
    fprintf(f, "| final phase (%d objects per sender thread and peer pair) | %s |\n",
            opt.final_per_target, final_matches(0) ? "all arrived" : "LOST OBJECTS");
    if (ends.final > 0)
        fprintf(f, "| final phase length (bound %.0f s) | %.1f s%s |\n", opt.final_s,
                ends.final_done - ends.final, ends.final_bounded ? ", ended at its bound" : "");
    if (ends.traffic > 0 && ends.stopped > 0)
        fprintf(f,
                "| after the traffic: settling and quiescing / final phase / stopping | %.1f s "
                "(%.1f / %.1f / %.1f s) |\n",
                ends.stopped - ends.traffic, ends.final > 0 ? ends.final - ends.traffic : 0.0,
                ends.final > 0 ? ends.final_done - ends.final : 0.0, ends.stopped - ends.stop);
    fprintf(f, "\n");
    fprintf(f,
            "Errors seen, by status (clean: CDT_ERR_PEER, CDT_ERR_TIMEOUT, CDT_ERR_CANCELED):\n\n");
    fprintf(f, "| status | sends | receives | connects/accepts |\n|---|---:|---:|---:|\n");
    for (int s = 1; s < NSTATUS; s++)
        if (t.err_send[s] + t.err_recv[s] + t.err_conn[s] > 0)
            fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
                    s == NSTATUS - 1 ? "other" : cdt_err_name(-s), t.err_send[s], t.err_recv[s],
                    t.err_conn[s]);
    double total = now_s() - t_start;
    const char *csv_name = opt.csv ? strrchr(opt.csv, '/') : NULL;
    csv_name = csv_name ? csv_name + 1 : opt.csv ? opt.csv : "no CSV";
    fprintf(f,
            "\nReceiver RSS (VmRSS, sampled every second; %s) of the "
            "processes that lived through more than half of the run. Growth: median of the "
            "last quarter of its life against the median of its second quarter (the first "
            "quarter warms the buffer caches); it grew when that rose by more than 10%% and "
            "32 MiB.\n\n",
            csv_name);
    fprintf(f, "A timed-out dvec receive's object is watched for late writes for 3 s before it "
               "is freed: those bytes are the soak's own quarantine, shown apart, and growth is "
               "judged on RSS minus them. The anonymous and shared-memory parts (RssAnon, "
               "RssShmem: an endpoint's lanes are shared memory) show where RSS went.\n\n");
    fprintf(f, "| process | life (s) | first MiB | 2nd-quarter median | last-quarter median | "
               "last MiB | max MiB | quarantined MiB at end | 2nd / last quarter, minus "
               "quarantine | anonymous, 2nd / last quarter | shared memory, 2nd / last quarter "
               "| grew |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    int grew_any = 0;
    for (size_t k = 0; k < ninc; k++) {
        incarnation *in = &incs[k];
        if (in->t1 - in->t0 < total / 2)
            continue;
        long early = median_rss(k, 0.25, 0.5, RSS_ALL), late = median_rss(k, 0.75, 1.0, RSS_ALL);
        long early_q = median_rss(k, 0.25, 0.5, RSS_MINUS_QUARANTINE),
             late_q = median_rss(k, 0.75, 1.0, RSS_MINUS_QUARANTINE);
        long early_a = median_rss(k, 0.25, 0.5, RSS_ANON),
             late_a = median_rss(k, 0.75, 1.0, RSS_ANON);
        long early_s = median_rss(k, 0.25, 0.5, RSS_SHMEM),
             late_s = median_rss(k, 0.75, 1.0, RSS_SHMEM);
        int grew = late_q - early_q > 32 * 1024 && late_q > early_q + early_q / 10;
        grew_any |= grew;
        fprintf(f,
                "| peer %d.%d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | "
                "%.1f / %.1f | %.1f / %.1f | %s |\n",
                in->peer, in->gen, in->t1 - in->t0, in->rss_first / 1024.0, early / 1024.0,
                late / 1024.0, in->rss_last / 1024.0, in->rss_max / 1024.0,
                (double)in->st.quarantined_bytes / (double)MiB, early_q / 1024.0, late_q / 1024.0,
                early_a / 1024.0, late_a / 1024.0, early_s / 1024.0, late_s / 1024.0,
                grew ? "**yes**" : "no");
    }
    long mortal_max = 0;
    double life_sum = 0;
    int nm = 0;
    for (size_t k = 0; k < ninc; k++)
        if (incs[k].killed) {
            nm++;
            life_sum += incs[k].t1 - incs[k].t0;
            if (incs[k].rss_max > mortal_max)
                mortal_max = incs[k].rss_max;
        }
    fprintf(f, "\nRSS %s. Killed incarnations: %d, mean life %.1f s, largest RSS %.1f MiB.\n\n",
            grew_any ? "GREW in a long-lived process" : "did not grow in any long-lived process",
            nm, nm ? life_sum / nm : 0.0, mortal_max / 1024.0);
    /* RSS over time of the long-lived processes, about 12 rows */
    fprintf(f, "RSS over time (MiB):\n\n| t (s) |");
    size_t ll[MAX_PEERS * 4];
    int nll = 0;
    for (size_t k = 0; k < ninc && nll < MAX_PEERS * 4; k++)
        if (incs[k].t1 - incs[k].t0 >= total / 2) {
            ll[nll++] = k;
            fprintf(f, " peer %d.%d |", incs[k].peer, incs[k].gen);
        }
    fprintf(f, "\n|---:|");
    for (int j = 0; j < nll; j++)
        fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int row = 0; row <= 12; row++) {
        double at = total * row / 12.0;
        fprintf(f, "| %.0f |", at);
        for (int j = 0; j < nll; j++) {
            long best = -1, bq = 0;
            double bd = 1e30;
            for (size_t k = 0; k < nsamples; k++)
                if (samples[k].inc == ll[j] && fabs(samples[k].t - at) < bd) {
                    bd = fabs(samples[k].t - at);
                    best = samples[k].rss_kib;
                    bq = samples[k].quarantined_kib;
                }
            if (bq > 0)
                fprintf(f, " %.1f (%.1f quarantined) |", best / 1024.0, bq / 1024.0);
            else
                fprintf(f, " %.1f |", best / 1024.0);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nTransports of one peer-to-peer endpoint (ucp_ep_print_info):\n\n```\n%s```\n\n",
            transports ? transports : "(not captured)\n");
    if (note_log != NULL)
        fprintf(f, "Notes (clean statuses worth a look, %d in all):\n\n%s\n", n_notes, note_log);
    if (fail_log != NULL)
        fprintf(f, "Failures (first ones):\n\n%s\n", fail_log);
    fprintf(f, "Counts of a killed process are those of its last report (one a second), so sent, "
               "received and verified differ by what was in flight at the kills.\n");
}
