/*
 * soak.h - what the soak's files share (soak.c describes the soak): options, random numbers
 * and content, tags, the object families, the statistics and messages between the peers and
 * the supervisor, and the state of a peer process.
 */
#ifndef CDT_BENCH_SOAK_H
#define CDT_BENCH_SOAK_H

#include "seed_types.h"

#include <cdt_sobj.h>
#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PEERS 8
#define MAX_SENDERS 4
#define NSTATUS 32
#define KiB ((cdt_count)1024)
#define MiB (1024 * KiB)

/* ------------------------------------------------------------------------------------------
 * options, time, random numbers, content
 * ---------------------------------------------------------------------------------------- */

typedef struct options {
    double seconds;
    int peers, immortal, senders;
    double kill_every;
    cdt_count max_bytes;
    uint64_t seed;
    int hang_s;
    int random_sender_ids;
    const char *csv, *md;
    int final_per_target;
    double final_s; /* the final phase's bound: what has not arrived by then is reported */
    int dvec_timeout_ms;
    double kill_in_send; /* fraction of kills injected inside a send (soak.c) */
} options;

extern options opt; /* soak.c: the command line */

typedef struct rng {
    uint64_t s;
} rng;

/* soak_common.c */
double now_s(void);
void sleep_ms(double ms);
uint64_t mix64(uint64_t x);
uint64_t rnd(rng *r);
cdt_count rnd_in(rng *r, cdt_count lo, cdt_count hi);
double rnd_unit(rng *r);
void content_fill(void *dst, cdt_count len, uint64_t key, cdt_count off);
cdt_count content_check(const void *src, cdt_count len, uint64_t key, cdt_count off);

/* ------------------------------------------------------------------------------------------
 * tags: family (2) | final (1) | sender peer (3) | incarnation (16) | thread (2) | seq (39)
 * ---------------------------------------------------------------------------------------- */

enum family { FAM_DERIVED, FAM_SOBJ, FAM_DVEC, NFAM };
extern const char *fam_name[NFAM];

#define TAG_FAM_SHIFT 61
#define TAG_FAM_MASK ((cdt_ucx_tag)3 << TAG_FAM_SHIFT)
#define TAG_FINAL ((cdt_ucx_tag)1 << 60)

cdt_ucx_tag tag_make(int fam, int final, int peer, int gen, int thread, uint64_t seq);
int tag_fam(cdt_ucx_tag t);
int tag_final(cdt_ucx_tag t);
int tag_peer(cdt_ucx_tag t);
int tag_gen(cdt_ucx_tag t); /* the sender's incarnation, 16 bits */
uint64_t tag_key(cdt_ucx_tag t);
cdt_count pick_size(rng *r, int final);

/* ------------------------------------------------------------------------------------------
 * objects: the same description is built by the sender (to fill) and the receiver (to check)
 * ---------------------------------------------------------------------------------------- */

typedef struct dspec {
    cdt_type type; /* committed, count 1 */
    cdt_count size, true_lb, true_extent;
    int shape;
} dspec;

/* sobj: in-band bytes + up to 8 typed buffers */
typedef struct sspec {
    cdt_count inband_len;
    int nbuf;
    cdt_count len[8];
    cdt_kind kind[8];
} sspec;

/* dvec: up to 16 int32 arrays */
typedef struct vspec {
    int n;
    cdt_count len[16]; /* elements */
} vspec;

/* soak_objects.c */
extern const char *shape_name[];
int derived_build(uint64_t key, cdt_count target, dspec *d);
int recv_layout(cdt_count P, cdt_type *type, cdt_count *extent);
void sobj_spec(uint64_t key, cdt_count target, sspec *s);
uint64_t part_key(uint64_t key, int part);
void dvec_spec(uint64_t key, cdt_count target, vspec *v);

/* ------------------------------------------------------------------------------------------
 * statistics and messages between peers and the supervisor
 * ---------------------------------------------------------------------------------------- */

typedef struct stats {
    uint64_t sent[NFAM], sent_bytes, recv[NFAM], recv_bytes, verified, verified_bytes;
    uint64_t wrong;       /* objects with a wrong byte or a wrong shape */
    uint64_t unexpected;  /* statuses outside the clean set */
    uint64_t stuck;       /* requests still pending after cancel / close / hang limit */
    uint64_t tmo_matched; /* dvec: cdt_ucx_recv timed out with the object partly written */
    uint64_t late_write;  /* dvec: a timed-out receive's object written after the return */
    uint64_t connects, reconnects, accepts, idle_timeouts;
    uint64_t recv_canceled_unasked; /* CDT_ERR_CANCELED on a receive the soak did not cancel */
    /* the soak's cancel of a receive that had matched (prepare ran) ended it CDT_ERR_CANCELED:
     * a single-mode receive completes at once when canceled (docs/TRANSPORT.md §6) */
    uint64_t recv_canceled_matched;
    /* receives that failed with CDT_ERR_PEER while their own sender lived on: another peer's
     * failure took them (docs/TRANSPORT.md §6: never); and those CDT_ERR_PEER receives whose
     * sender the failed receive did not name (its message had not matched) */
    uint64_t collateral, peer_fail_unplaced;
    /* CDT_ERR_PEER receives whose sender lived on, ended by this peer's own endpoint to that
     * sender (it failed or was closed: cdt_ucx_recv_info.failed_by is the sender, or the
     * acceptor saw that endpoint fail): not another peer's doing; and of those the library
     * named by the endpoint's failure, by UCX aborting a message */
    uint64_t own_ep_live, own_ep_by_endpoint, own_ep_by_message;
    uint64_t err_send[NSTATUS], err_recv[NSTATUS], err_conn[NSTATUS];
    uint64_t final_sent[MAX_PEERS], final_recv[MAX_PEERS], final_send_err, final_done;
    uint64_t largest;
    uint64_t quarantined_bytes; /* gauge: dvec arrays held by timed-out receives */
    /* gauges from the worker (cdt_ucx_worker_stats_get): objects whose stream went through an
     * endpoint's lane (docs/TRANSPORT.md §10), so that the report shows the lane ran */
    uint64_t lane_sent, lane_received;
    /* of them, those whose large regions both processes copied (TRANSPORT.md §10.3) */
    uint64_t lane_split_sent, lane_split_received;
    /* gauges of the allocator's own view (glibc mallinfo2, every second): bytes the heap's
     * arenas hold (arena), of them in use by the program and free in its bins (uordblks,
     * fordblks), bytes in chunks mmapped one each (hblkhd, in use), the arenas (malloc_info,
     * every 10 s); head buffers the worker holds in quarantine (about 33 KiB each); and at
     * the peer's clean stop its RssAnon before and after malloc_trim(0), which returns the
     * free pages of every arena: what falls is the allocator's, not the program's */
    uint64_t heap_arena, heap_inuse, heap_free, heap_mmap, heap_arenas, worker_quarantined;
    uint64_t trim_before_kib, trim_after_kib;
} stats;

enum { M_HELLO, M_STATS, M_FAIL, M_NOTE, M_INFO, M_UP, M_DOWN, M_QUIESCE, M_FINAL, M_STOP, M_BYE };

typedef struct msg {
    int type, peer, gen, port;
    stats st;
    char text[4096];
} msg;

/* soak_common.c */
int st_idx(int rc);
int clean(int rc);
#define ADD(field, n) __atomic_fetch_add(&(field), (uint64_t)(n), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------------------------------
 * peer process
 * ---------------------------------------------------------------------------------------- */

/* soak_peer.c */
extern int g_me, g_gen, g_sock;
/* set by SIGUSR1 (the supervisor's kill inside a send): the next send started dies while its
 * messages are moving */
extern volatile sig_atomic_t g_die_in_send;
extern cdt_ucx_worker g_w;
extern cdt_ucx_listener g_l;
extern stats g_st;
extern pthread_mutex_t g_lock; /* table, socket writes */
extern int tab_port[MAX_PEERS], tab_gen[MAX_PEERS];
extern atomic_int g_stop, g_quiesce, g_final, g_info_sent;
#define MAX_THREADS 16
extern _Atomic double g_beat[MAX_THREADS];
extern const char *g_thread_name[MAX_THREADS];

/* soak_peer.c: the acceptor's endpoints that failed, by their peer id (cdt_ucx_ep_peer_id):
 * a receive failed with CDT_ERR_PEER from such a sender lost it to its own endpoint */
void ep_failed_note(uint64_t peer_id);
int ep_failed_seen(uint64_t peer_id);

/* soak_peer.c: messages to the supervisor (report: a failure, note: a clean but notable
 * event), heartbeats, waits, the peer's main */
void send_msg(msg *m);
void report(const char *fmt, ...);
void note(const char *fmt, ...);
void beat(int th);
int wait_req_until(cdt_ucx_request q, int64_t timeout_ms, int th, int until_stop);
int wait_req(cdt_ucx_request q, int64_t timeout_ms, int th);
int peer_main(int me, int gen, int sock);

/* the peer's threads: soak_sender.c, soak_receiver.c */
void *sender_main(void *arg);
void *receiver_main(void *arg);
void *dvec_receiver_main(void *arg);

/* a receive in progress (soak_receiver.c), checked by verify() (soak_verify.c) */
typedef struct rctx {
    int fam;
    void *mem; /* derived: receive layout's memory */
    cdt_type type;
    cdt_count stream;
    cdt_sobj so;
    int prepared, so_prepared;
    /* the matched frame as the prepare callback saw it: a stuck receive's report names it */
    cdt_frame_info frame;
} rctx;

cdt_count verify(rctx *x, double_vec *dv, cdt_ucx_tag tag);

#endif
