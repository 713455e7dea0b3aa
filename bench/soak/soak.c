/*
 * soak.c - long-running reliability soak of the UCX transport (bench/run soak).
 *
 * A supervisor forks P peer processes (default 4). Each peer listens on 127.0.0.1 (any free
 * port, reported to the supervisor, which tells every peer where the others are) and runs
 * several threads on one worker: senders that send random objects to random other peers, one
 * receiver per object family, and an acceptor. Objects are
 *   derived  MPI-style derived types (contiguous, vector, hvector, indexed, indexed_block,
 *            hindexed_block, struct + resized, subarray) built from a seed; the receiver
 *            binds, in a prepare callback, a layout of its own chosen from the frame's length
 *   sobj     the serialized-object adapter (in-band bytes + typed out-of-band buffers);
 *            the receiver allocates from the header (cdt_sobj_recv_prepare)
 *   dvec     the seed example's double_vec (list of int32 arrays; the type's callbacks
 *            allocate), received with the blocking cdt_ucx_recv and a short timeout
 * from 0 B to 64 MiB (mostly small). Every byte of an object is a function of its tag
 * (family, sender, incarnation, thread, sequence) and the run seed, so the receiver checks
 * every byte without a second message.
 *
 * Every few seconds the supervisor SIGKILLs a random mortal peer (all but the first
 * --immortal peers) and starts a new incarnation of it; the others must only see clean
 * statuses (CDT_ERR_PEER, CDT_ERR_TIMEOUT, CDT_ERR_CANCELED) and reconnect. At the end, with
 * no more kills, every sender thread sends a fixed number of objects to every peer, and each
 * must arrive (no silent loss) within the final phase's bound (--final-s, default 60 s; what
 * was left then is reported, and sends still pending are given up as the peers stop). The
 * report gives the length of the final phase and of everything after the traffic. The run
 * fails (exit 1) on a wrong byte, an unexpected status, a peer that dies without being
 * killed, a hang (a thread that makes no progress for --hang-s seconds), a receive or send
 * that stays pending after it was timed out and canceled or its endpoint closed, or a lost
 * final object.
 *
 * Kills inside the send window (--kill-in-send F): that fraction of the kills is injected
 * from inside the victim instead: the supervisor signals it (SIGUSR1), and the victim's next
 * send, right after posting its object (messages in flight, data moving), progresses its
 * worker a random number of times (0-63) and SIGKILLs itself; a victim that starts no send
 * within 2 s is killed from outside. The report counts both kinds.
 *
 * The supervisor samples every peer's VmRSS once a second and writes a report.
 * Usage: soak [--minutes M] [--seconds S] [--peers P] [--immortal I] [--senders N]
 *             [--kill-every S] [--max-mib M] [--seed X] [--csv FILE] [--md FILE]
 *             [--dvec-timeout-ms T] [--final-s S] [--random-sender-ids]
 *             [--kill-in-send F]
 *
 * Files: soak.c (options and the phases of a run), soak_supervisor.c, soak_report.c
 * (the supervisor's side, soak_supervisor.h); soak_peer.c, soak_sender.c,
 * soak_receiver.c (a peer process), soak_verify.c, soak_objects.c, soak_common.c (shared,
 * soak.h).
 */
#include "soak_supervisor.h"

options opt = {.seconds = 180,
               .peers = 4,
               .immortal = 1,
               .senders = 2,
               .kill_every = 5,
               .max_bytes = 64 * MiB,
               .seed = 1,
               .hang_s = 60,
               .final_per_target = 8,
               .final_s = 60,
               .dvec_timeout_ms = 700};

static void usage(void)
{
    fprintf(stderr, "usage: soak [--minutes M] [--seconds S] [--peers P] [--immortal I] "
                    "[--senders N] [--kill-every S] [--max-mib M] [--seed X] [--hang-s S] "
                    "[--dvec-timeout-ms T] [--final-s S] [--kill-in-send F] "
                    "[--csv FILE] [--md FILE] [--random-sender-ids]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char cmdline[512] = "soak";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--random-sender-ids") == 0) {
            opt.random_sender_ids = 1;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--minutes") == 0)
            opt.seconds = 60 * atof(v);
        else if (strcmp(a, "--seconds") == 0)
            opt.seconds = atof(v);
        else if (strcmp(a, "--peers") == 0)
            opt.peers = atoi(v);
        else if (strcmp(a, "--immortal") == 0)
            opt.immortal = atoi(v);
        else if (strcmp(a, "--senders") == 0)
            opt.senders = atoi(v);
        else if (strcmp(a, "--kill-every") == 0)
            opt.kill_every = atof(v);
        else if (strcmp(a, "--max-mib") == 0)
            opt.max_bytes = (cdt_count)(atof(v) * (double)MiB);
        else if (strcmp(a, "--seed") == 0)
            opt.seed = strtoull(v, NULL, 0);
        else if (strcmp(a, "--dvec-timeout-ms") == 0)
            opt.dvec_timeout_ms = atoi(v);
        else if (strcmp(a, "--hang-s") == 0)
            opt.hang_s = atoi(v);
        else if (strcmp(a, "--final-s") == 0)
            opt.final_s = atof(v);
        else if (strcmp(a, "--kill-in-send") == 0)
            opt.kill_in_send = atof(v);
        else if (strcmp(a, "--csv") == 0)
            opt.csv = v;
        else if (strcmp(a, "--md") == 0)
            opt.md = v;
        else
            usage();
    }
    if (opt.peers < 2 || opt.peers > MAX_PEERS || opt.senders < 1 || opt.senders > MAX_SENDERS ||
        opt.immortal < 0 || opt.immortal >= opt.peers || opt.max_bytes < 1 || opt.hang_s < 5 ||
        opt.final_s < 1 || opt.kill_in_send < 0 || opt.kill_in_send > 1)
        usage();
    snprintf(cmdline, sizeof(cmdline),
             "soak --seconds %.0f --peers %d --immortal %d --senders %d --kill-every %.1f "
             "--max-mib %.0f --seed %" PRIu64 " --dvec-timeout-ms %d --final-s %.0f "
             "--kill-in-send %.2f",
             opt.seconds, opt.peers, opt.immortal, opt.senders, opt.kill_every,
             (double)opt.max_bytes / (double)MiB, opt.seed, opt.dvec_timeout_ms, opt.final_s,
             opt.kill_in_send);
    /* only this machine: loopback (libcdt's own keepalive interval has dead peers noticed
     * within about a second). The transports are the library's default (or CDT_UCX_SHARED_MEMORY
     * / UCX_TLS from the environment): the report prints the lanes that ran. */
    setenv("UCX_NET_DEVICES", "lo", 0);
    setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 0);
    signal(SIGPIPE, SIG_IGN);
    if (opt.csv != NULL) {
        csv = fopen(opt.csv, "w");
        if (csv == NULL) {
            perror(opt.csv);
            return 2;
        }
        fprintf(csv, "t_s,peer,gen,pid,rss_kib,quarantined_kib,sent,received,verified,"
                     "verified_bytes,rss_anon_kib,rss_shmem_kib,heap_arena_kib,heap_inuse_kib,"
                     "heap_free_kib,heap_mmap_kib,heap_arenas,worker_quarantined_heads\n");
    }
    sup_rng.s = mix64(opt.seed ^ 0x50a4);
    t_start = now_s();
    printf("%s\n", cmdline);
    for (int i = 0; i < opt.peers; i++)
        spawn(i);
    pump(30, all_ready);
    if (!all_ready()) {
        fail_note("peers did not start within 30 s");
    } else {
        killing = 1;
        next_kill = now_s() + opt.kill_every;
        pump(opt.seconds, NULL);
        killing = 0;
        ends.traffic = now_s();
        /* final phase: everybody alive, no kills: every object sent must arrive */
        pump(30, all_ready);
        pump(3, NULL);
        tell_all(M_QUIESCE);
        pump(5, NULL);
        ends.final = now_s();
        printf("[%7.1f s] final phase (bound %.0f s)\n", now_s() - t_start, opt.final_s);
        tell_all(M_FINAL);
        pump(opt.final_s, final_received);
        ends.final_done = now_s();
        if (final_received()) {
            printf("[%7.1f s] final phase: all arrived after %.1f s\n", now_s() - t_start,
                   ends.final_done - ends.final);
        } else {
            ends.final_bounded = 1;
            fail_note("final phase: ended at its bound of %.0f s with objects missing",
                      opt.final_s);
            final_left();
        }
    }
    ends.stop = now_s();
    stopping = 1;
    tell_all(M_STOP);
    pump(60, all_bye);
    ends.stopped = now_s();
    for (int i = 0; i < opt.peers; i++)
        if (slots[i].alive) {
            fail_note("peer %d.%d did not stop within 60 s", i, slots[i].gen);
            n_bad_deaths++;
            kill(slots[i].pid, SIGKILL);
            waitpid(slots[i].pid, NULL, 0);
            close_slot(i);
        }
    progress_line();
    int pass = n_fail_msgs == 0 && n_bad_deaths == 0 && fail_log == NULL;
    write_report(stdout, pass, opt.seconds, cmdline);
    if (opt.md != NULL) {
        FILE *f = fopen(opt.md, "w");
        if (f != NULL) {
            write_report(f, pass, opt.seconds, cmdline);
            fclose(f);
        }
    }
    if (csv)
        fclose(csv);
    return pass ? 0 : 1;
}
