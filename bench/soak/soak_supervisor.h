/*
 * soak_supervisor.h - the supervisor's state and steps, shared by soak_supervisor.c (the
 * peers' processes, their messages, kills, RSS samples and the event loop), soak_report.c
 * and soak.c (the phases of a run).
 */
#ifndef CDT_BENCH_SOAK_SUPERVISOR_H
#define CDT_BENCH_SOAK_SUPERVISOR_H

#include "soak.h"

typedef struct incarnation {
    int peer, gen;
    pid_t pid;
    double t0, t1;
    int killed, died_badly, bye;
    stats st;
    long rss_first, rss_last, rss_max;
} incarnation;

typedef struct slot {
    pid_t pid;
    int sock, gen, port, alive, ready;
    size_t inc;
} slot;

typedef struct sample {
    double t;
    size_t inc;
    long rss_kib, quarantined_kib;
    long anon_kib, shmem_kib; /* RssAnon, RssShmem (an endpoint's lanes are shared memory) */
    /* the allocator's view from the peer's last statistics (soak.h, stats): bytes the heap
     * holds in use (in its arenas plus mmapped chunks) and free in its arenas */
    long heap_inuse_kib, heap_free_kib;
} sample;

extern incarnation *incs;
extern size_t ninc;
extern slot slots[MAX_PEERS];
extern sample *samples;
extern size_t nsamples, capsamples;
extern double t_start;
extern int n_fail_msgs, n_bad_deaths, deaths, n_notes;
extern int deaths_in_send; /* of them, kills the victim raised inside a send */
/* when the phases after the traffic began and ended (0: not reached) */
extern struct phase_ends {
    double traffic, final, final_done, stop, stopped;
    int final_bounded;
} ends;
extern char *note_log;
extern char *fail_log; /* the first failures, for the report */
extern char *transports;
extern FILE *csv;
extern int stopping;
extern double next_sample, next_kill, next_progress;
extern rng sup_rng;
extern int killing;

void fail_note(const char *fmt, ...);
void spawn(int i);
void tell_all(int type);
void close_slot(int i);
void totals(stats *t);
void progress_line(void);
void pump(double secs, int (*done)(void));
int all_ready(void);
int final_matches(int print);
int final_received(void);
void final_left(void);
int all_bye(void);

/* soak_report.c */
void write_report(FILE *f, int pass, double secs, const char *cmdline);

#endif
