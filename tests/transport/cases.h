/*
 * cases.h - the cases of test_transport (test_transport.c runs them by name): most are a
 * server side and a client side for run_pair (harness.h), each in the file of its theme.
 */
#ifndef CDT_TRANSPORT_CASES_H
#define CDT_TRANSPORT_CASES_H

#include "harness.h"

#include "seed_types.h"
#include <cdt_sobj.h>
#include <ucp/api/ucp.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define TAG 42

/* cases_objects.c: custom types, predefined and derived types, wildcard tags, the
 * serialized-object adapter, many regions, a > 4 GiB object */
side_fn custom_client, custom_server, derived_client, derived_server, wildcard_client,
    wildcard_server, sobj_client, sobj_server, many_regions_client, many_regions_server, big_client,
    big_server;

/* cases_async.c: non-blocking requests, cancel, threads, sleeping on the worker's fd, an
 * object received while its sender does not progress */
side_fn nonblocking_client, nonblocking_server, cancel_client, cancel_server, threads_client,
    threads_server, wakeup_client, wakeup_server, receiver_copies_client, receiver_copies_server;
int receiver_copies_setup(void);

/* cases_failures.c: a peer or a receiver that exits, a refused connection, closes and sends
 * that cannot complete, malformed frames */
side_fn peer_exit_client, peer_exit_server, receiver_exit_client, receiver_exit_server,
    close_stuck_client, close_stuck_server, send_timeout_client, malformed_client, malformed_server,
    late_reader_client, late_reader_server;
int connect_refused_case(void);
int late_reader_setup(void); /* the pipe by which late_reader's sender says it reused the object */

/* cases_pack.c: custom pack callbacks in a send: one that fails, and none inside UCX's
 * shared-memory FIFO window; and the plain byte callbacks of a custom type of `count` bytes,
 * which the other cases' types wrap (a failure or a kill at some offset) */
int bytes_query(void *state, const void *buf, cdt_count count, cdt_count *size);
void bytes_copy_out(const void *buf, cdt_count count, cdt_count offset, void *dst,
                    cdt_count dst_size, cdt_count *used);
int bytes_unpack(void *state, void *buf, cdt_count count, cdt_count offset, const void *src,
                 cdt_count src_size);
side_fn pack_fails_client, pack_fails_server, fifo_window_client, fifo_window_server;
/* a custom type of bytes (bytes_query, bytes_unpack) whose pack fails with `error` once a
 * fragment reaches past `fail_at`, in objects of more than fail_at bytes; `f` must outlive the
 * type (it is the type's context) */
typedef struct failing_bytes {
    cdt_count fail_at;
    int error;
} failing_bytes;
cdt_type failing_bytes_type(const failing_bytes *f);
/* a receive's prepare (arg: a bytes_into) that binds a custom type of one byte an element to
 * the sender's packed size, CDT_ERR_TRUNCATED past `capacity` */
typedef struct bytes_into {
    char *buf;
    cdt_count capacity;
    cdt_type type;
} bytes_into;
int bytes_bind_prepare(void *arg, cdt_decoder decoder);

/* cases_endpoints.c: the transports and protocol an endpoint chose, the address bootstrap,
 * a send right after accept, per-send parameters, a connect that does not wait, a close with a
 * flush in flight, a connection request that comes while the worker is destroyed */
extern int expect_shared_memory; /* set by test_transport.c for the transports* cases */
side_fn transports_client, transports_server, accept_send_client, accept_send_server,
    send_params_client, send_params_server, connect_nowait_client, connect_nowait_server,
    close_pending_flush_client, close_pending_flush_server;
int address_case(void);
int listener_late_request_case(void);
int parked_silent_destroy_case(void); /* a parked endpoint of a silent peer, destroyed */

/* cases_lane.c: objects through the lane; a sender killed packing into it (where 1), a
 * receiver killed unpacking from it (where 2), a sender killed copying its regions into it
 * (where 3) */
side_fn lane_client, lane_server;
void wait_lane(peer *p);                     /* until the endpoint reports its lane */
uint64_t lane_stat(peer *p, uint64_t field); /* CDT_UCX_WORKER_STATS_LANE_SENT or _RECEIVED */
/* cases_lane_regions.c: regions of 64 KiB to 8 MiB in the lane's stream, the threshold that a
 * worker's parameter, a send's or CDT_UCX_LANE_REGION_THRESHOLD names instead */
int lane_regions_case(void);
int lane_split_case(void);
int lane_split_revoke_case(void);
int lane_split_held_case(void); /* a receive canceled inside the sender's push is held */
/* cases_lane_split_cancel.c: SPLIT receives canceled at random points (CDT_TEST_STRESS_S) */
int lane_split_cancel_case(void);
int lane_headers_case(void); /* headers of more than 2,041 regions through the lane */
int lane_case(void);
int lane_kill_case(int where);
int lane_hostile_case(void); /* a sender that scribbles over its own segment */
/* cases_lane_reads_once.c: a custom type that reads each byte once reads the segment; one that
 * does not reads a private copy */
int lane_reads_once_case(void);
int lane_wakeup_case(void); /* a wait with wakeup does not sleep on a moving lane */
/* cases_lane.c, shared with cases_lane_setup.c: ms of a monotonic clock; progress until the
 * endpoint p->ep reports its lane (10 s at most), or for ms; the worker's lane_sent or
 * lane_received; lines of /proc/self/maps, and descriptors, that are a lane's (or a pidfd) */
int64_t now_ms(void);
/* cases_lane.c: a 4-byte acknowledgement under LANE_ACK_TAG, the step between the objects of
 * the lane's region and header cases */
enum { LANE_ACK_TAG = 99 };
void lane_ack_send(peer *p);
void lane_ack_recv(peer *p);
void wait_lane(peer *p);
void progress_for(peer *p, int64_t ms);
uint64_t lane_stat(peer *p, uint64_t field);
int lane_maps(void);
int lane_fds(void);
/* cases_lane_heads.c: small objects through the head ring (CDT_UCX_LANE_HEADS=on): "order",
 * "full", "wakeup", "kill", "dead_consumer", "hostile", "fallback", "noself" */
int lane_heads_case(const char *which);
int lane_yield_case(void);
int lane_yield_shared_case(void);
/* cases_lane_heads.c: progress until p's endpoint says its heads go through the ring */
void lane_wait_heads(peer *p);
/* cases_lane_heads.c: object i's n values, and whether v holds them */
void lh_fill(int64_t *v, int i, cdt_count n);
int lh_check(const int64_t *v, int i, cdt_count n);
/* cases_lane_handoff.c: ring heads reach the receiver's matching as descriptors */
int lane_handoff_case(const char *which); /* "" or "forged" */
/* cases_lane_large.c: whole 32-64 KiB objects as large records of the head ring, mixed with
 * small and LANE objects (CDT_UCX_LANE_LARGE=off: the LANE way) */
int lane_large_case(void);
/* cases_lane_handoff.c: count the library's tagged sends to one UCX endpoint (NULL: none) */
void tag_count_ep(void *ep);
long long tag_count(void);
/* cases_lane_ring_commit.c: a LANE object's commit in the data ring, its sends counted */
int lane_ring_commit_case(void);
/* cases_lane_ring_commit.c: a sender whose commit word names large regions (refused) */
int lane_ring_commit_forged_case(void);
/* cases_lane_ring_commit.c: a hostile sender rewrites its commit words (lane_hostile's part) */
int lane_hostile_word_case(void);
/* cases_lane_ring_first.c: a ring consumer's progress polls the ring first, UCX when due */
int lane_ring_first_case(void);
/* cases_lane_setup.c: a no-lane record that comes in a later stream chunk than its id */
int lane_late_offer_case(void);
/* cases_lane_setup.c: an endpoint closed with a lane send waiting for its grant, and with one
 * half packed into the lane */
int lane_close_pending_case(void);
/* cases_lane_setup.c: no lane, said why, objects the version 6 way: "peer_off" (the server's
 * lane is off), "not_readable" (the client made itself non-dumpable), "limit" (the client's
 * memfd cannot grow to a segment's size: RLIMIT_FSIZE) */
int lane_fallback_case(const char *which);
/* cases_lane_setup.c: 66 endpoints of one worker to one server: 64 producer lanes, 2 limit */
int lane_producer_limit_case(void);

/* cases_lane_end.c: an endpoint ended by the test hook CDT_UCX_TEST_END inside one of its
 * lanes' progress calls: "switch", "heads", "pump_send", "pump_recv"; "settings": its values */
int lane_end_case(const char *which);

/* cases_churn.c: clients that connect and leave while sends to them are in flight */
int quarantine_churn_case(void);
/* cases_churn.c: clients that send through their lane and die (SIGKILL), 24 rounds of 4:
 * the heap's bytes in use, the lanes' mappings and descriptors do not grow with them */
int dead_peer_churn_case(void);

#endif
