/*
 * safety.h - the cases of test_safety (test_safety.c runs them by name) and the wire helpers
 * they share (safety_wire.c): the UCX transport against late, malicious or colliding peers,
 * between real processes on loopback.
 *
 * Some peers here write the wire protocol by hand (docs/TRANSPORT.md, docs/FORMAT.md) with raw
 * UCX tag sends, to control what arrives when: a head whose region comes after the receiver
 * gave up, a head whose rest never comes, heads that announce more than the receiver allows,
 * messages on another sender's private tags. Ordering between processes never relies on
 * sleeps: a peer signals through a pipe, and UCX matches the messages of one endpoint in the
 * order they were sent, so a marker message received means everything before it arrived.
 */
#ifndef CDT_TRANSPORT_SAFETY_H
#define CDT_TRANSPORT_SAFETY_H

#include "harness.h"

#include "seed_types.h"
#include <cdt_sobj.h>
#include <ucp/api/ucp.h>

#include <stdbool.h>

#define TAG 42
#define TAG_MARK 43
#define TAG_DONE 44

#define PRIV(key, idx) ((UINT64_C(1) << 63) | ((uint64_t)(key) << 20) | (uint64_t)(idx))
#define HEAD_MAX 32768
/* the sender id (prefix, docs/TRANSPORT.md §4, Senders) of hand-written heads: no endpoint's */
#define HAND_SENDER UINT64_C(0x5e)

enum { OBJ_ARRAYS = 2, OBJ_LEN = 16384 }; /* 64 KiB arrays: each its own message */

/* safety_wire.c: prefix + FORMAT.md header of a frame with n byte regions of length len and no
 * packed stream (returns the bytes written: the head message, when every region travels on its
 * own); raw bytes on the peer's endpoint, waiting for completion when wait_ms > 0 (returns the
 * UCX status: UCS_INPROGRESS when it did not complete in time); region 0 of object `key` (len
 * bytes of 0xEE on its private tag) */
size_t make_head(unsigned char *out, uint64_t key, uint64_t threshold, uint64_t tail_len,
                 uint64_t n, uint64_t len);
ucs_status_t raw_send(peer *p, const void *data, size_t len, uint64_t tag, int wait_ms);
ucs_status_t send_region(peer *p, uint64_t key, size_t len, int wait_ms);
int64_t now_ms(void);

/* safety_wire.c: pipes between the processes of a case (0-3, 6: signals the cases use; 4, 5:
 * client 1 / client 2 of run_three is done): signal / wait for one byte while progressing */
extern int sig_fd[7][2];
void signal_fd(int which);
void wait_fd(int which, peer *p);
void open_pipes(void);
/* safety_wire.c: one int32 marker message on `tag`; the bytes of a buffer that must still all
 * be v */
void recv_marker(peer *p, cdt_ucx_tag tag);
void send_marker(peer *p, cdt_ucx_tag tag);
void check_untouched(const unsigned char *b, size_t len, unsigned char v);
/* safety_wire.c: three processes, the server (receiver) accepting client 1 and client 2; a
 * double_vec of OBJ_ARRAYS arrays made from `seed` received on `tag` and compared */
extern int run_three_c2_signal; /* client 2 ends by this signal (0: exits with 0) */
int run_three(side_fn *server, side_fn *c1, side_fn *c2, const cdt_ucx_worker_params *wp1,
              const cdt_ucx_worker_params *wp2);
void recv_check(peer *p, cdt_ucx_tag tag, int seed);

/* safety_late.c: parts that come late or never: a region after the receiver's timeout, a
 * matched receive abandoned, a single-mode sender that stops progressing, a head and then
 * nothing, the commit message, drains that end */
side_fn late_region_server, late_region_client_tail, cancel_matched_server, cancel_matched_client,
    single_stall_server, single_stall_client, rest_timeout_server, rest_timeout_client,
    commit_server, commit_client, drain_expiry_server, drain_expiry_client;

/* safety_limits.c: what a peer announces and what the receiver holds: its own type reference,
 * arguments of a later library refused, limits on regions and sizes, a refused object's sender
 * completing whatever its region count */
side_fn type_ref_server, type_ref_client, limits_server, limits_client, refused_regions_server,
    refused_regions_client;

/* safety_keys.c: objects whose keys collide or are forged: two in flight with one key, two
 * senders on one sender id, a third process on a victim's private tags */
side_fn key_conflict_server, key_conflict_client, same_id_server, same_id_a, same_id_b,
    forged_server, victim, forger;

/* safety_peers.c: a peer that dies (SIGKILL) while its object and a live peer's object are
 * both part-way at the receiver */
side_fn isolation_server, isolation_live, isolation_dying;

#endif
