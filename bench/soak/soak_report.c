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

enum { RSS_ALL, RSS_MINUS_QUARANTINE, RSS_ANON, RSS_SHMEM, HEAP_INUSE, HEAP_FREE, RSS_HELD };

static long sample_kib(const sample *s, int which)
{
    switch (which) {
    case RSS_MINUS_QUARANTINE:
        return s->rss_kib - s->quarantined_kib;
    case RSS_ANON:
        return s->anon_kib;
    case RSS_SHMEM:
        return s->shmem_kib;
    case HEAP_INUSE:
        return s->heap_inuse_kib;
    case HEAP_FREE:
        return s->heap_free_kib;
    case RSS_HELD: /* what neither the soak's quarantine nor the heap's free bytes explain */
        return s->rss_kib - s->quarantined_kib - s->heap_free_kib;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the rise (KiB) across [from, to) of an incarnation's life of the part `which`: the
 * Theil-Sen slope (the median of the slopes between every two samples, at most 512 of them
 * taken evenly) times the window's length. A median of slopes is not moved by the spikes of
 * objects in flight (a 64 MiB object is 15% of a peer's RSS for a second), which move a
 * least-squares line, nor by one step, which moves a comparison of two medians. */
static double rise_kib(size_t inc, double from, double to, int which)
{
    const incarnation *in = &incs[inc];
    double life = in->t1 - in->t0, t0 = in->t0 + from * life, t1 = in->t0 + to * life + 1e-9;
    size_t n = 0;
    for (size_t k = 0; k < nsamples; k++)
        if (samples[k].inc == inc && samples[k].t >= t0 && samples[k].t < t1)
            n++;
    if (n < 8)
        return 0;
    size_t stride = (n + 511) / 512, m = 0, seen = 0;
    double *t = malloc(512 * sizeof(double)), *v = malloc(512 * sizeof(double));
    for (size_t k = 0; k < nsamples && m < 512; k++)
        if (samples[k].inc == inc && samples[k].t >= t0 && samples[k].t < t1 &&
            seen++ % stride == 0) {
            t[m] = samples[k].t;
            v[m++] = (double)sample_kib(&samples[k], which);
        }
    double *slope = malloc(m * (m - 1) / 2 * sizeof(double) + 1);
    size_t ns = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++)
            if (t[j] > t[i])
                slope[ns++] = (v[j] - v[i]) / (t[j] - t[i]);
    double r = 0;
    if (ns > 0) {
        qsort(slope, ns, sizeof(double), cmp_double);
        r = slope[ns / 2] * (t1 - t0);
    }
    free(t);
    free(v);
    free(slope);
    return r;
}

/* growth that continues (docs/TESTING.md, "Soak"): across the last half of the life the part
 * rose by more than 32 MiB and 10% of its median there, and across the last quarter it still
 * rose by more than 8 MiB (a quarter of the half's bound: a steady leak rises half as much in
 * a quarter). A warm-up that ends before the last quarter, or a step the heap takes once when
 * more objects than ever are in flight together, is not growth by this rule. */
static int grows(size_t inc, int which, double *half, double *quarter)
{
    *half = rise_kib(inc, 0.5, 1.0, which);
    *quarter = rise_kib(inc, 0.75, 1.0, which);
    long med = median_rss(inc, 0.5, 1.0, which);
    return *half > 32 * 1024 && *half > 0.1 * (double)med && *quarter > 8 * 1024;
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
    fprintf(f,
            "| of them, objects whose large regions both processes copied, sent / received "
            "(docs/TRANSPORT.md §10.3, Regions moved by both cores) | %" PRIu64 " / %" PRIu64
            " |\n",
            t.lane_split_sent, t.lane_split_received);
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
            "\nReceiver RSS (VmRSS, sampled every second; %s) of the processes that lived "
            "through more than half of the run, beside the allocator's own view (glibc "
            "mallinfo2: bytes the program holds from malloc, in the arenas and in chunks mmapped "
            "one each; bytes free in the arenas, in their bins and tops).\n\n",
            csv_name);
    fprintf(f, "A timed-out dvec receive's object is watched for late writes for 3 s before it "
               "is freed: those bytes are the soak's own quarantine, shown apart, and growth is "
               "judged on RSS minus them. The anonymous and shared-memory parts (RssAnon, "
               "RssShmem: an endpoint's lanes are shared memory) show where RSS went.\n\n");
    fprintf(f, "Growth is growth that continues, of what the program holds (docs/TESTING.md, "
               "\"Soak\"): the rise of a figure across a window is the median of the slopes "
               "between its samples (Theil-Sen) times the window's length. Two figures are "
               "judged: RSS held (RSS minus the quarantine minus the bytes free in the heap's "
               "arenas: what the allocator's retention does not explain) and the heap's bytes in "
               "use. Either grew when it rose across the last half of the life by more than "
               "32 MiB and 10%% of its median there, and across the last quarter still by more "
               "than 8 MiB. A warm-up that ends before the last quarter, or a step the heap "
               "takes when more objects than before are in flight together and keeps as free "
               "memory, does not count; RSS's own rise is shown beside. RssAnon at the clean "
               "stop, before and after malloc_trim(0) (which gives the arenas' free pages "
               "back), shows how much of it the allocator kept, not the program.\n\n");
    fprintf(f, "| process | life (s) | first MiB | 2nd-quarter median | last-quarter median | "
               "last MiB | max MiB | quarantined MiB at end | anonymous, 2nd / last quarter | "
               "shared memory, 2nd / last quarter | heap in use, 2nd / last quarter | heap "
               "free, 2nd / last quarter | RSS minus quarantine: rise across last half / last "
               "quarter | RSS held: 2nd / last quarter; rise across last half / last quarter | "
               "heap in use: rise across last half / last quarter | RssAnon at stop, before / "
               "after malloc_trim | grew |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
               "---|\n");
    int grew_any = 0;
    for (size_t k = 0; k < ninc; k++) {
        incarnation *in = &incs[k];
        if (in->t1 - in->t0 < total / 2)
            continue;
        long early = median_rss(k, 0.25, 0.5, RSS_ALL), late = median_rss(k, 0.75, 1.0, RSS_ALL);
        long early_a = median_rss(k, 0.25, 0.5, RSS_ANON),
             late_a = median_rss(k, 0.75, 1.0, RSS_ANON);
        long early_s = median_rss(k, 0.25, 0.5, RSS_SHMEM),
             late_s = median_rss(k, 0.75, 1.0, RSS_SHMEM);
        long early_u = median_rss(k, 0.25, 0.5, HEAP_INUSE),
             late_u = median_rss(k, 0.75, 1.0, HEAP_INUSE);
        long early_f = median_rss(k, 0.25, 0.5, HEAP_FREE),
             late_f = median_rss(k, 0.75, 1.0, HEAP_FREE);
        long early_h = median_rss(k, 0.25, 0.5, RSS_HELD),
             late_h = median_rss(k, 0.75, 1.0, RSS_HELD);
        double half_q, quarter_q, half_h, quarter_h, half_u, quarter_u;
        (void)grows(k, RSS_MINUS_QUARANTINE, &half_q, &quarter_q);
        int grew_held = grows(k, RSS_HELD, &half_h, &quarter_h);
        int grew_heap = grows(k, HEAP_INUSE, &half_u, &quarter_u);
        grew_any |= grew_held | grew_heap;
        char trim[64] = "(no clean stop)";
        if (in->bye && in->st.trim_before_kib > 0)
            snprintf(trim, sizeof(trim), "%.1f / %.1f", in->st.trim_before_kib / 1024.0,
                     in->st.trim_after_kib / 1024.0);
        fprintf(f,
                "| peer %d.%d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f | "
                "%.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %+.1f / %+.1f | %.1f / %.1f; "
                "%+.1f / %+.1f | %+.1f / %+.1f | %s | %s |\n",
                in->peer, in->gen, in->t1 - in->t0, in->rss_first / 1024.0, early / 1024.0,
                late / 1024.0, in->rss_last / 1024.0, in->rss_max / 1024.0,
                (double)in->st.quarantined_bytes / (double)MiB, early_a / 1024.0, late_a / 1024.0,
                early_s / 1024.0, late_s / 1024.0, early_u / 1024.0, late_u / 1024.0,
                early_f / 1024.0, late_f / 1024.0, half_q / 1024.0, quarter_q / 1024.0,
                early_h / 1024.0, late_h / 1024.0, half_h / 1024.0, quarter_h / 1024.0,
                half_u / 1024.0, quarter_u / 1024.0, trim,
                grew_held && grew_heap ? "**yes** (RSS held and heap in use)"
                : grew_held            ? "**yes** (RSS held)"
                : grew_heap            ? "**yes** (heap in use)"
                                       : "no");
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
    fprintf(f, "RSS over time (MiB; in brackets the heap's bytes in use / free):\n\n| t (s) |");
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
            long best = -1, bq = 0, bu = 0, bf = 0;
            double bd = 1e30;
            for (size_t k = 0; k < nsamples; k++)
                if (samples[k].inc == ll[j] && fabs(samples[k].t - at) < bd) {
                    bd = fabs(samples[k].t - at);
                    best = samples[k].rss_kib;
                    bq = samples[k].quarantined_kib;
                    bu = samples[k].heap_inuse_kib;
                    bf = samples[k].heap_free_kib;
                }
            fprintf(f, " %.1f [%.1f / %.1f]", best / 1024.0, bu / 1024.0, bf / 1024.0);
            if (bq > 0)
                fprintf(f, " (%.1f quarantined)", bq / 1024.0);
            fprintf(f, " |");
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
