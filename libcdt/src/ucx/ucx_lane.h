/*
 * ucx_lane.h - the transport's use of the lane (libcdt/src/lane, docs/TRANSPORT.md §10): an
 * endpoint between two processes of one host sends the rest of a large object's inline stream
 * through a shared segment it owns instead of a tail message, packed straight into it by the
 * sender and unpacked straight out of it by the receiver. On by default (CDT_UCX_LANE=off or
 * the worker's `lane` parameter 0 turn it off). Setup and progress: ucx_lane.c; sends:
 * ucx_lane_send.c; receives: ucx_lane_recv.c. Every function runs with the worker's lock held.
 */
#ifndef CDT_UCX_LANE_H
#define CDT_UCX_LANE_H

#include "lane/lane.h"

#include <stdbool.h>
#include <stdint.h>

struct cdt_ucx_ep_s;
struct cdt_ucx_request_s;
struct cdt__ucx_head;

/* the record a process sends on the endpoint's UCX stream right after the endpoint's id
 * (docs/TRANSPORT.md §10.2): an offer, or a no-lane record in its place (lane/lane.h) */
#define CDT__UCX_LANE_RECORD_SIZE CDT__LANE_RECORD_SIZE
/* how long an endpoint whose peer's id came waits for its offer or no-lane record with the
 * stream read on every progress call (ms; after it: one call in 64) */
#define CDT__UCX_LANE_OFFER_WAIT_MS 100
/* consumer lanes one worker maps at most (more offers are ignored), and producer lanes it makes
 * at most (more endpoints offer none: "limit"): each costs a segment and descriptors */
#define CDT__UCX_LANE_MAX_PEERS 64
/* how long a side waits for its lane without progress before it polls the peer's pidfd (ms) */
#define CDT__UCX_LANE_POLL_MS 1
/* progress calls in a row that find the lane idle, with objects in flight, before each further
 * one yields the core (a few tens of microseconds of spinning: a peer on another core has moved
 * by then; one that shares this core gets it) */
#define CDT__UCX_LANE_IDLE_SPINS 256

/* a receive's place on a consumer lane: kept until its stream was consumed, also after the
 * receive failed (then r is NULL and the bytes are released unread) */
typedef struct cdt__ucx_lane_in {
    struct cdt__ucx_lane_in *next;
    struct cdt_ucx_request_s *r;
    uint64_t key, len, off;
    bool granted;
    /* a SPLIT object (docs/TRANSPORT.md §10.3, Regions moved by both cores; ucx_lane_split.c):
     * its destination record is ready to post (the list, or none: address 0) and posted; the
     * source table from its head; the destination list (address, length per large region) and
     * each one's region index and staging buffer (NULL: the destination is one piece of the
     * object's memory), all private memory owned here; a receive that failed after its record
     * went, held (its memory may still be written by the sender) until the word is in */
    bool split, split_ready, split_posted;
    int split_status; /* the receiver's read of its share: judged when the word is in */
    cdt_count split_n;
    uint64_t *split_src;
    uint64_t *split_list;
    cdt_count *split_index;
    void **split_tmp;
    struct cdt_ucx_request_s *split_held;
    /* the posted record's lane and position, for its revocation (§10.3, rule 6) */
    cdt__lane *split_rx;
    uint64_t split_pos;
} cdt__ucx_lane_in;

/* an endpoint's lanes: the one it produces into (its sends) and the one its peer produces
 * into (its receives) */
/* a head held for a full head ring (its send's sub completes when it is written) */
typedef struct cdt__ucx_held_head {
    struct cdt__ucx_held_head *next;
    struct cdt__ucx_sub *s;
    const void *data;
    size_t len;
    uint64_t tag;
} cdt__ucx_held_head;

/* the consumer's receive of the switch message (freed by its callback once the lane is gone) */
typedef struct cdt__ucx_switch_recv {
    unsigned char buf[32];
    void *req;
    size_t len;
    bool done, ok, gone;
} cdt__ucx_switch_recv;

typedef struct cdt__ucx_lane_ep {
    /* the endpoint that owns these lanes: a pump reads it before a call that can end the
     * endpoint (and free this), then compares ep->lane with its own pointer */
    struct cdt_ucx_ep_s *ep;
    cdt__lane tx;
    bool tx_made, tx_attached;
    struct cdt_ucx_request_s *q_head, *q_tail; /* sends whose head went, waiting for a grant */
    struct cdt_ucx_request_s *cur;             /* the send being packed into the lane */
    cdt__lane rx;
    bool rx_attached;
    unsigned char record[CDT__UCX_LANE_RECORD_SIZE]; /* the peer's offer as it arrives */
    unsigned record_got;
    cdt__ucx_lane_in *in_head, *in_tail;
    unsigned char *bounce; /* frag_bytes of private memory: custom types read a copy */
    int64_t idle_since;    /* ms: pending work and no progress since then (0: moving) */
    /* the head ring (ucx_lane_heads.c). Producer: the switch went (heads_tx); heads held for a
     * full ring, in send order. Consumer: the switch's receive, the switch came (heads_rx:
     * records are read), asleep on the doorbell */
    bool heads_tx;
    int64_t heads_alive_at; /* ms: when a head written into the ring last polled the peer */
    cdt__ucx_held_head *held_head, *held_tail;
    cdt__ucx_switch_recv *sw;
    bool heads_rx, rx_asleep;
} cdt__ucx_lane_ep;

/* ucx_lane.c */
/* an on/off setting of the environment: unset or empty gives dflt, "on" true, "off" false;
 * CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_env_switch(const char *name, bool dflt, bool *on);
/* the environment's setting: CDT_UCX_LANE "on" or "off" (unset or empty: on, the default);
 * CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_lane_env(bool *on);
/* ep's id went to its peer: offer it a lane when the endpoint can have one */
CDT__LANE_HIDDEN void cdt__ucx_lane_offer_send(struct cdt_ucx_ep_s *ep);
/* ep's peer's id came: its offer or no-lane record is owed (the stream is read on every
 * progress call until it came, or CDT__UCX_LANE_OFFER_WAIT_MS passed) */
CDT__LANE_HIDDEN void cdt__ucx_lane_owe(struct cdt_ucx_ep_s *ep);
/* ep owes nothing more (its record came, it failed or closes) */
CDT__LANE_HIDDEN void cdt__ucx_lane_owed_end(struct cdt_ucx_ep_s *ep);
/* stream bytes that followed the peer's id on ep (the offer record, if any) */
CDT__LANE_HIDDEN void cdt__ucx_lane_stream_bytes(struct cdt_ucx_ep_s *ep, const unsigned char *b,
                                                 size_t n);
/* ep failed or closes: its lane sends end with `status` (their requests' last part), its lane
 * receives fail with CDT_ERR_PEER, both segments are unmapped */
CDT__LANE_HIDDEN void cdt__ucx_lane_ep_end(struct cdt_ucx_ep_s *ep, int status);
/* progress every endpoint's lanes (from cdt__ucx_progress, after ucp_worker_progress handled
 * `ucx_events`), and yield the core by docs/TRANSPORT.md §10.3, Waiting */
CDT__LANE_HIDDEN void cdt__ucx_lane_progress(cdt_ucx_worker w, unsigned ucx_events);
/* " lane=memfd" or " lane=none/<why>" appended to buf (" lane=none/off" where the worker has
 * the lane off) */
CDT__LANE_HIDDEN void cdt__ucx_lane_describe(struct cdt_ucx_ep_s *ep, char *buf, size_t size);
/* whether sends on ep go through its lane now (read without the lock: set once) */
CDT__LANE_HIDDEN bool cdt__ucx_lane_ready(struct cdt_ucx_ep_s *ep);
/* lock held: whether the peer took every byte ep's lane published (true too where ep has no
 * attached lane, or it broke); a close waits for it (docs/TRANSPORT.md §10.5) */
CDT__LANE_HIDDEN bool cdt__ucx_lane_tx_taken(struct cdt_ucx_ep_s *ep);

/* ucx_lane_heads.c: small objects through the head ring (docs/TRANSPORT.md §10.6) */
/* CDT_UCX_LANE_HEADS "on" or "off" (unset or empty: off, the default); CDT_ERR_INVALID_ARG
 * for another value */
CDT__LANE_HIDDEN int cdt__ucx_lane_heads_env(bool *on);
/* CDT_UCX_LANE_LARGE: on (the consumer announces large records, §10.6) or off (the default,
 * unset or empty: it does not); another value CDT_ERR_INVALID_ARG */
CDT__LANE_HIDDEN int cdt__ucx_lane_large_env(bool *on);
/* the consumer_features a consumer asks for at attach (HEADS when the worker takes heads
 * through the ring and has its endpoint to itself) */
CDT__LANE_HIDDEN uint32_t cdt__ucx_lane_heads_features(cdt_ucx_worker w);
/* the consumer attached a version 2 segment with HEADS: post the switch's receive, put the
 * doorbell into the worker's wakeup set. 0, or an error (the lane is then dropped). */
CDT__LANE_HIDDEN int cdt__ucx_lane_heads_attached(struct cdt_ucx_ep_s *ep);
/* producer, consumer attached: send the switch when the consumer takes heads */
CDT__LANE_HIDDEN void cdt__ucx_lane_heads_switch(struct cdt_ucx_ep_s *ep);
/* a head message of r on ep: 1 it went into the head ring or waits there (held), 0 the
 * endpoint sends heads over UCX, else an error (nothing sent) */
CDT__LANE_HIDDEN int cdt__ucx_lane_heads_post(struct cdt_ucx_ep_s *ep, struct cdt_ucx_request_s *r,
                                              const void *data, size_t len, uint64_t tag,
                                              struct cdt__ucx_sub *s);
/* producer: a large record (§10.6, Large records) of len bytes that fill writes straight into
 * the ring (the head message: prefix and the whole inline stream; CDT_SUCCESS or its error):
 * 1 written and published (the object is sent), 0 not now (the endpoint has not switched,
 * heads are held, len is not above CDT__LANE_HEAD_MAX or is over the consumer's bound, the
 * ring is full: the caller takes the LANE path), else an error, nothing published */
typedef int(cdt__ucx_head_fill_fn)(void *arg, unsigned char *dst, size_t len);
CDT__LANE_HIDDEN int cdt__ucx_lane_heads_post_whole(struct cdt_ucx_ep_s *ep, size_t len,
                                                    uint64_t tag, cdt__ucx_head_fill_fn *fill,
                                                    void *arg);
/* progress of ep's head rings: held heads written, records handed to the worker; 0, or
 * CDT_ERR_PEER (the lane broke); *moved set when something moved */
CDT__LANE_HIDDEN int cdt__ucx_lane_heads_progress(struct cdt_ucx_ep_s *ep, bool *moved);
/* ep's lanes end: held heads end with status, whole records still in the ring are handed to
 * the worker, the switch's receive is canceled */
CDT__LANE_HIDDEN void cdt__ucx_lane_heads_end(struct cdt_ucx_ep_s *ep, int status);
/* before a sleep on the worker's fd: every head ring told that its consumer sleeps; false when
 * records are pending (do not sleep) */
CDT__LANE_HIDDEN bool cdt__ucx_lane_heads_sleep(cdt_ucx_worker w);
/* worker destroy, lock held: the endpoint to itself closed */
CDT__LANE_HIDDEN void cdt__ucx_lane_heads_close_self(cdt_ucx_worker w);

/* ucx_lane_park.c: ring heads parked for their receive (docs/TRANSPORT.md §10.6, Hand-off).
 * The consumer takes a record of len bytes (checked against its bound first) into
 * cdt__ucx_park_buf's buffer (CDT__UCX_HEAD_MAX bytes, or len for a large record; NULL: no
 * memory), then parks it (commit: the descriptor to hand to the worker) or gives the slot
 * back (unreserve). A head receive's 32-byte message that is a valid descriptor claims the
 * parked head (true: *head, *head_len, *slot), read until the slot is released. */
#define CDT__UCX_PARK_DESC_SIZE 32
typedef struct cdt__ucx_park_slot cdt__ucx_park_slot;
CDT__LANE_HIDDEN unsigned char *cdt__ucx_park_buf(cdt_ucx_worker w, size_t len, uint32_t *slot);
CDT__LANE_HIDDEN void cdt__ucx_park_unreserve(cdt_ucx_worker w, uint32_t slot);
CDT__LANE_HIDDEN void cdt__ucx_park_commit(cdt_ucx_worker w, uint32_t slot, size_t len,
                                           unsigned char desc[CDT__UCX_PARK_DESC_SIZE]);
CDT__LANE_HIDDEN bool cdt__ucx_park_claim(cdt_ucx_worker w, const unsigned char *msg, size_t len,
                                          const unsigned char **head, size_t *head_len,
                                          uint32_t *slot);
CDT__LANE_HIDDEN void cdt__ucx_park_release(cdt_ucx_worker w, uint32_t slot);
/* heads parked now (stats) */
CDT__LANE_HIDDEN size_t cdt__ucx_park_count(cdt_ucx_worker w);
/* worker destroy, after UCX's worker: every parked head freed */
CDT__LANE_HIDDEN void cdt__ucx_park_free_all(cdt_ucx_worker w);

/* ucx_lane.c: the lane broke or its peer died: the endpoint fails as on UCX's report of it */
CDT__LANE_HIDDEN void cdt__ucx_lane_ep_fail(struct cdt_ucx_ep_s *ep);

/* ucx_test_hook.c: the test hook CDT_UCX_TEST_END=<point>[:<n>] (docs/TESTING.md, Test hooks):
 * the endpoint passing the named point for the worker's n-th time (default 1) fails there, as
 * when UCX calls its error handler from within a call libcdt makes at that point (UCX 1.22 did
 * inside ucp_tag_send_nbx). Each point is inside one of the lane's progress calls, where its
 * endpoint can end while the call still holds the endpoint's lanes. */
enum {
    CDT__UCX_END_SWITCH = 1, /* the producer's switch to the head ring was posted */
    CDT__UCX_END_HEADS,      /* a held head completed, or a ring record was handed off */
    CDT__UCX_END_PUMP_SEND,  /* a send's stream went whole into the lane */
    CDT__UCX_END_PUMP_RECV   /* a receive's stream was consumed from the lane */
};
/* the environment's setting: *point 0 (unset or empty) or a CDT__UCX_END_*, *at >= 1;
 * CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_test_end_env(int *point, long *at);
/* CDT_UCX_TEST_NO_RING_COMMIT: *off true for "1", false unset, empty or "0";
 * CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_test_ring_commit_env(bool *off);
/* CDT_UCX_TEST_WORD_REGIONS: *on true for "1", false unset, empty or "0";
 * CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_test_word_regions_env(bool *on);
/* CDT_UCX_TEST_SPLIT_HOLD_MS: *ms, 0 unset or empty, *in_push for a "push:" prefix;
 * CDT_ERR_INVALID_ARG for anything but a whole number of milliseconds from 0 to 600000 */
CDT__LANE_HIDDEN int cdt__ucx_test_split_hold_env(int64_t *ms, bool *in_push);
/* lock held: the hook's point `point` passed on ep */
CDT__LANE_HIDDEN void cdt__ucx_test_end(struct cdt_ucx_ep_s *ep, int point);

/* ucx_lane_region.c: the environment's CDT_UCX_LANE_REGION_THRESHOLD (bytes, >= 1), else the
 * default; CDT_ERR_INVALID_ARG for a value that is not one */
CDT__LANE_HIDDEN int cdt__ucx_lane_region_env(cdt_count *threshold);

/* ucx_lane_send.c: a large object through ep's lane. r holds a deferred frame. Returns
 * CDT__UCX_LANE_DECLINED when the object does not go through the lane (small, too many regions,
 * a large region in pieces, or the lane went away): the caller sends it the version 6 way. */
#define CDT__UCX_LANE_DECLINED 1
CDT__LANE_HIDDEN int cdt__ucx_lane_isend(struct cdt_ucx_ep_s *ep, struct cdt_ucx_request_s *r,
                                         cdt_count threshold, uint64_t tag,
                                         struct cdt_ucx_request_s **request);
/* ucx_lane_send.c: pack the granted send into the lane while it has room: 1 done, 0 not yet,
 * else the lane's error. A completed send can end the endpoint (its commit's send): then l is
 * freed, ep->lane is no longer l, and the caller must not read l again. */
CDT__LANE_HIDDEN int cdt__ucx_lane_pump_send(cdt__ucx_lane_ep *l);

/* ucx_lane_send.c: where inline-stream byte s of r's object is in its frame: *frame_off, and
 * how many bytes follow it there in one piece (*avail). The inline stream is the header
 * (r->lane_header bytes), the packed stream (r->lane_packed), then the regions below the
 * threshold in their order; r's cursor (lane_seg, lane_seg_start, the run) only moves forward.
 * *avail runs on over the small regions that follow without a gap in the frame, so a caller
 * copies many in one call. `frame` (a frame) or `dec` (a decoder) gives the regions. */
/* ucx_lane_send.c: r's cursor at the packed stream (`packed` bytes from frame offset `header`) */
CDT__LANE_HIDDEN void cdt__ucx_lane_cursor_init(struct cdt_ucx_request_s *r, cdt_count header,
                                                cdt_count packed);

CDT__LANE_HIDDEN int cdt__ucx_lane_seek(struct cdt_ucx_request_s *r, cdt_frame frame,
                                        cdt_decoder dec, cdt_count s, cdt_count *frame_off,
                                        cdt_count *avail);

/* ucx_lane_recv.c: a matched LANE head (parsed into h) */
CDT__LANE_HIDDEN void cdt__ucx_lane_head(struct cdt_ucx_request_s *r,
                                         const struct cdt__ucx_head *h);
/* ucx_lane_recv.c: a LANE head that is not received (refused by a limit, abandoned): its
 * stream is granted and released unread, so its sender completes and the next object's place
 * holds */
CDT__LANE_HIDDEN void cdt__ucx_lane_discard(cdt_ucx_worker w, const struct cdt__ucx_head *h);
/* ucx_lane_recv.c: the receive fails: its stream goes on being released unread */
CDT__LANE_HIDDEN void cdt__ucx_lane_detach(struct cdt_ucx_request_s *r);
/* ucx_lane_recv.c: grant and unpack what came on ep's consumer lane: 0, or the lane's error.
 * The endpoint can end inside (ep->lane no longer l, l freed), as in cdt__ucx_lane_pump_send */
CDT__LANE_HIDDEN int cdt__ucx_lane_pump_recv(cdt__ucx_lane_ep *l);

/* ucx_lane_split.c: the large regions of a SPLIT object, copied by both processes
 * (docs/TRANSPORT.md §10.3, Regions moved by both cores) */
/* whether the worker's environment leaves the split on: CDT_UCX_LANE_SPLIT "on" or "off" (unset
 * or empty: on); CDT_ERR_INVALID_ARG for another value */
CDT__LANE_HIDDEN int cdt__ucx_lane_split_env(bool *on);
/* send: r goes SPLIT (lane_plan chose its nsep large regions at the split's threshold, and
 * cdt__ucx_lane_isend checked they fit the source table and the head): their addresses and
 * lengths noted (r->split_iov), the source table written after its header in r->head.
 * CDT_SUCCESS, or an error of the frame. */
CDT__LANE_HIDDEN int cdt__ucx_lane_split_plan(struct cdt_ucx_request_s *r, cdt_count nsep);
/* send, producer's pump: r's stream is out; its record taken, its share pushed, its word
 * published, the consumer's release of it seen. 1: done; 0: call again; else the lane's error */
CDT__LANE_HIDDEN int cdt__ucx_lane_split_send(cdt__ucx_lane_ep *l, struct cdt_ucx_request_s *r,
                                              cdt__lane_pack_fn *pack);
/* recv: a SPLIT head's checks and its table, copied into e (lock held). CDT_SUCCESS or the
 * receive's error; e's record is then ready with address 0 */
CDT__LANE_HIDDEN int cdt__ucx_lane_split_head(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e,
                                              const struct cdt__ucx_head *h, cdt_count nsep);
/* recv: the packed stream is in: the destination list of e's live receive (its failure fails
 * the receive, whose record then goes with address 0) */
CDT__LANE_HIDDEN void cdt__ucx_lane_split_dest(cdt__ucx_lane_in *e);
/* recv: post e's record where it is ready, then pull the receive's share. 1: posted (or
 * nothing to post); 0: the grant ring is full; else the lane's error */
CDT__LANE_HIDDEN int cdt__ucx_lane_split_record(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e);
/* recv: e's object is whole (its word in; its live receive, if any, no longer on the lane):
 * the staging buffers written through the decoder and the regions marked done (a live receive
 * whose word said success; a write that fails fails it), a held receive let go, e's memory
 * freed */
CDT__LANE_HIDDEN void cdt__ucx_lane_split_end(cdt__ucx_lane_in *e);
/* recv: r fails while it holds a place on a SPLIT object: true when it is held (its record
 * went with its memory's addresses and the sender's push is under way: revoked too late),
 * false when not (the record will go with address 0, or was revoked before the sender claimed
 * it, or the push is done) */
CDT__LANE_HIDDEN bool cdt__ucx_lane_split_detach(cdt__ucx_lane_in *e, struct cdt_ucx_request_s *r);
/* e's split memory freed (and a held receive let go: the lane ended) */
CDT__LANE_HIDDEN void cdt__ucx_lane_split_free(cdt__ucx_lane_in *e);
/* recv: every receive held for a push under way whose slot now shows DONE completes */
CDT__LANE_HIDDEN void cdt__ucx_lane_split_poll_held(cdt__ucx_lane_ep *l);
/* the lane ends: every record of l still out revoked, and for one whose push is under way, DONE
 * awaited for at most CDT__UCX_SPLIT_DRAIN_MS or until the peer's process is gone */
CDT__LANE_HIDDEN void cdt__ucx_lane_split_drain(cdt__ucx_lane_ep *l);

#endif
