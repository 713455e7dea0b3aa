/*
 * ucx_internal.h - shared state of the UCX transport (ucx_*.c). Protocol: docs/TRANSPORT.md.
 *
 * Locking: every field of a worker, its endpoints, listeners and requests is guarded by the
 * worker's mutex. UCX callbacks run inside ucp_worker_progress(), which is only called with
 * the mutex held, so callbacks never lock.
 */
#ifndef CDT_UCX_INTERNAL_H
#define CDT_UCX_INTERNAL_H

#include "cdt_ucx.h"
#include "ucx_head.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/uio.h>
#include <ucp/api/ucp.h>

#define CDT__UCX_HIDDEN __attribute__((visibility("hidden")))

/* wire constants and the head parser (pure, fuzzed): ucx_head.h */
#define CDT__UCX_DEFAULT_ZCOPY_THRESHOLD 65536
/* on an endpoint with a lane, regions below this go in the lane's stream instead of zero-copy
 * (measured: docs/TRANSPORT.md §10.3, Regions); CDT_UCX_LANE_REGION_THRESHOLD overrides it */
#define CDT__UCX_LANE_REGION_THRESHOLD ((cdt_count)1 << 62)
/* on a lane that splits, where no threshold was named, regions from this size on are copied by
 * both processes (docs/TRANSPORT.md §10.3, Regions moved by both cores; ucx_lane_split.c), in
 * an object whose such regions hold at least CDT__UCX_LANE_SPLIT_TOTAL bytes (below it, the
 * grant, the record and the word cost more than the copies gain: measured there) */
#define CDT__UCX_LANE_SPLIT_MIN ((cdt_count)8192)
#define CDT__UCX_LANE_SPLIT_TOTAL ((cdt_count)32768)
/* how long a lane's end waits for a SPLIT sender's push under way into a receive's memory
 * (docs/TRANSPORT.md §10.3, Regions moved by both cores, rule 6): one process_vm_writev */
#define CDT__UCX_SPLIT_DRAIN_MS 2000
/* how often UCX checks that the peers of a context's endpoints are alive, unless
 * UCX_KEEPALIVE_INTERVAL says otherwise (cdt_ucx_context_create) */
#define CDT__UCX_KEEPALIVE_INTERVAL "1s"
/* how long the first send on an accepted endpoint (or one connected without waiting) waits at
 * most for its wireup; also cdt_ucx_ep_connect_advanced's default timeout */
#define CDT__UCX_WIREUP_TIMEOUT_MS 10000
/* how long a matched receive waits for the rest of its object by default (ms) */
#define CDT__UCX_DEFAULT_REST_TIMEOUT_MS CDT_UCX_DEFAULT_REST_TIMEOUT_MS

static inline uint64_t cdt__ucx_private_tag(uint64_t key, uint64_t index)
{
    return CDT__UCX_PRIVATE_BIT | (key << CDT__UCX_INDEX_BITS) | index;
}

/* a region may travel as its own message */
static inline bool cdt__ucx_separate(cdt_count len, cdt_count threshold, cdt_count index)
{
    return len >= threshold && index < (cdt_count)CDT__UCX_COMMIT_INDEX;
}

struct cdt_ucx_context_s {
    ucp_context_h ucp;
    bool wakeup; /* UCP_FEATURE_WAKEUP: its workers have an event fd */
};

typedef struct cdt__ucx_req_list {
    struct cdt_ucx_request_s *head;
} cdt__ucx_req_list;

/* staging buffers a worker keeps for reuse (ucx_bufcache.c) */
#define CDT__UCX_CACHE_SLOTS 64
#define CDT__UCX_REQ_POOL 32 /* freed requests a worker keeps */
#define CDT__UCX_REQ_SLOTS 4 /* of them, kept without a lock */
#define CDT__UCX_CACHE_MIN ((size_t)64 << 10)
#define CDT__UCX_DEFAULT_CACHE_LIMIT ((size_t)256 << 20)
typedef struct cdt__ucx_cached_buf {
    void *mem;
    size_t capacity;
} cdt__ucx_cached_buf;

struct cdt_ucx_worker_s {
    cdt_ucx_context ctx;
    ucp_worker_h ucp;
    pthread_mutex_t lock;
    uint32_t sender_id;
    uint64_t seq;           /* objects sent: input of the key function */
    uint64_t ep_seq;        /* endpoints made: input of their ids */
    uint64_t key_secret[2]; /* random per worker: keys cannot be predicted (ucx_context.c) */
    bool destroying;
    cdt_count zcopy_threshold;
    /* the threshold of objects sent through a lane: the worker's zcopy_threshold when its
     * parameters named one, else CDT_UCX_LANE_REGION_THRESHOLD or the default
     * (ucx_lane_region.c) */
    cdt_count lane_threshold;
    cdt_ucx_protocol protocol; /* CDT_UCX_PROTOCOL_AUTO: per endpoint */
    /* sends over a shared-memory FIFO end with CDT_ERR_TIMEOUT this long after their post
     * (< 0: never); fifo_sends counts those pending, so progress looks at their deadlines
     * only while there are some (ucx_send_track.c) */
    int64_t fifo_stall_ms;
    int fifo_sends;
    int parked; /* endpoints whose close waits for a flush (cdt__ucx_close_parked) */
    /* endpoints whose peer id has not arrived: progress polls the UCX streams while there are
     * some (ucx_hello.c) */
    int hello_waiting;
    /* the lane (ucx_lane.c): offered and accepted by this worker; consumer lanes mapped */
    bool lane_on;
    bool lane_split; /* CDT_UCX_LANE_SPLIT: large regions copied by both processes */
    int lanes_mapped;
    int lanes_made;  /* producer lanes this worker's endpoints hold */
    int split_holds; /* SPLIT receives held for a sender's push under way (ucx_lane_split.c) */
    uint64_t lane_sent, lane_received;             /* objects whose stream went whole (stats) */
    uint64_t lane_split_sent, lane_split_received; /* of them, SPLIT objects (stats) */
    unsigned lane_polls;                           /* progress calls (the offer's stream poll) */
    int lane_owed;      /* endpoints whose peer's offer or no-lane record is still to come */
    bool lane_waiting;  /* the last progress left lane objects in flight (no sleep then) */
    unsigned lane_idle; /* progress calls in a row that waited for the lane and saw nothing move */
    /* ring first (docs/TRANSPORT.md §10.6, Polling): some endpoint takes heads from its ring,
     * so progress calls ucp_worker_progress only when due: progress calls since it last ran,
     * and whether that call handled events (then it runs on the next call too) */
    bool ring_first;
    unsigned ring_turns;
    bool ucx_busy;
    /* small objects through the lane (ucx_lane_heads.c, docs/TRANSPORT.md §10.6): producers
     * make version 2 segments and consumers take heads from their head ring
     * (CDT_UCX_LANE_HEADS); the endpoint to this worker itself that ring heads are handed to
     * (NULL until a consumer lane needs it; self_failed: it could not be made) */
    bool lane_heads;
    /* consumers announce large records (CDT_UCX_LANE_LARGE; §10.6, Large records) */
    bool lane_large;
    ucp_ep_h self_ep;
    bool self_failed;
    /* the test hook CDT_UCX_TEST_END (ucx_test_hook.c): the point (CDT__UCX_END_*, 0: none)
     * whose pass number `test_end_at` ends its endpoint; the passes so far */
    int test_end_point;
    long test_end_at, test_end_passes;
    /* the test hook CDT_UCX_TEST_NO_RING_COMMIT: its consumers leave consumer_features bit 3
     * clear, as a consumer of an earlier release (their producers send the commit message) */
    bool test_no_ring_commit;
    /* the test hook CDT_UCX_TEST_WORD_REGIONS: its producers send objects with large regions
     * with a commit word too, the lie a consumer must refuse */
    bool test_word_regions;
    /* the test hook CDT_UCX_TEST_SPLIT_HOLD_MS: its producers claim a SPLIT object's record
     * only this many ms after its stream (0: at once), or claim it at once and wait this long
     * before the push (test_split_hold_in_push) */
    int64_t test_split_hold_ms;
    bool test_split_hold_in_push;
    /* ring heads parked for the receive their descriptor matches (ucx_lane_park.c): slots,
     * the free ones' list (UINT32_MAX: none), how many are parked, and the secret every
     * descriptor carries (random, never sent to a peer) */
    struct cdt__ucx_park_slot *park;
    uint32_t park_n, park_cap, park_free, park_used;
    unsigned char park_secret[16];
    /* UCX generic datatypes of single-mode messages: the send packs from the frame, every
     * receive unpacks into the head buffer or the decoder (ucx_single.c) */
    ucp_datatype_t dt_send, dt_recv;
    struct cdt_ucx_ep_s *eps;             /* open endpoints */
    struct cdt_ucx_listener_s *listeners; /* open listeners */
    struct cdt_ucx_request_s *body_recvs; /* receives between head and completion */
    struct cdt__ucx_drain *drains;        /* receives that discard an abandoned object's parts */
    struct cdt_ucx_request_s *orphans;    /* freed requests whose UCX message is still moving */
    /* requests of sends over cross-memory attach that ended without success, whose head
     * message the receiver may still copy out of their head buffer (a rendezvous it matches
     * late): their memory is not reused while a reader may still reach it, so a late reader
     * gets the bytes that were sent and not another object's. Newest first; freed once the
     * send was ended by its endpoint's failure, or no live endpoint has had the id it went to
     * for CDT__UCX_QUARANTINE_GRACE_MS (released), or the oldest when more than
     * CDT__UCX_QUARANTINE_MAX are held (dropped; ucx_request_pool.c, docs/TRANSPORT.md §8).
     * Under cache_lock. */
    struct cdt_ucx_request_s *quarantine;
    size_t quarantined;
    uint64_t q_released, q_dropped;
    int64_t q_next_scan;    /* when progress looks at the quarantine next (ms) */
    int64_t next_expiry_ms; /* when cdt__ucx_progress looks at deadlines next */
    /* with wakeup (ucx_wakeup.c), else all -1: the event fd handed out and slept on (an epoll
     * set of UCX's own event fd and timer_fd), UCX's event fd, and a timer that makes the
     * event fd readable when the earliest deadline of the worker is due (timer_at, ms of
     * cdt__ucx_now_ms; INT64_MAX: not armed) */
    int efd, ucx_efd, timer_fd;
    int64_t timer_at;
    /* ucp_worker_signal was called since the last ucp_worker_arm: UCX's event fd is readable
     * until the next arm reads it, so more completions need not signal again */
    bool wake_pending;
    pthread_mutex_t cache_lock; /* the buffer cache and the request pool only */
    /* freed requests kept for reuse (linked by `next`): a request carries its HEAD_MAX head
     * buffer, and malloc + free of it was the largest cost of a small object's send and
     * receive (callgrind) */
    struct cdt_ucx_request_s *req_pool;
    int req_pooled;
    /* the first freed requests are kept here instead, each slot taken and filled by one atomic
     * operation: the usual object (one request at a time per direction) takes no lock for its
     * request's memory */
    struct cdt_ucx_request_s *req_slot[CDT__UCX_REQ_SLOTS];
    size_t cache_limit, cache_bytes;
    int cache_n;
    cdt__ucx_cached_buf cache[CDT__UCX_CACHE_SLOTS];
};

struct cdt_ucx_ep_s {
    cdt_ucx_worker w;
    ucp_ep_h ucp;
    int status; /* CDT_SUCCESS or CDT_ERR_PEER */
    int mode;   /* CDT__UCX_MODE_* + 1 once chosen, 0 before (cdt__ucx_ep_mode); written
                 * once under the lock, read atomically without it */
    /* the endpoint's lanes were read (with the mode); whether the peer reads and writes this
     * process's memory itself (cma: then a send is never ended before UCX ends it); whether
     * its messages go through memory of this machine (single mode's transports) */
    bool lanes_known, peer_accesses_memory, am_local;
    bool am_fifo; /* active messages through a shared-memory FIFO (sysv, posix, xpmem) */
    /* false for an accepted endpoint, or one connected with CDT_UCX_CONNECT_NO_WAIT, until its
     * first send saw it wired up (written under the lock, read atomically without it;
     * cdt__ucx_ep_wait_wired) */
    bool wired;
    bool closing; /* closed by the user, UCX's close still under way: freed with the worker */
    /* this endpoint's id, drawn when it is made, sent to the peer before the endpoint's first
     * object (on its UCX stream) and written in every split-mode head sent on it; the peer's
     * endpoint's id once its first message arrived (0 before), and its bytes so far
     * (ucx_hello.c; docs/TRANSPORT.md §4, Senders) */
    uint64_t id, peer_id;
    unsigned char id_wire[8], peer_wire[8];
    unsigned peer_got;
    bool hello_wait; /* counted in w->hello_waiting */
    bool hello_sent; /* this endpoint's id went to the peer (before its first object) */
    /* for error messages (ucx_describe.c): the peer ("host:port"), and the lanes the endpoint
     * had at its first send (after a failure UCX reports placeholders) */
    char peer[80];
    char lanes_seen[128];
    /* closed while a flush was in flight: the forced close waits for it (ucx_ep_park.c) */
    void *parked_flush;
    /* sends posted on this endpoint and not done (linked by ep_next/ep_prev): a failure or a
     * close of the endpoint ends them, also where UCX keeps their operations (ucx_send_track.c) */
    struct cdt_ucx_request_s *sends;
    /* its lanes (ucx_lane.c; NULL: none), the offer record sent after its id, why it has no
     * lane (reporting), and whether sends go through it (set once, read without the lock) */
    struct cdt__ucx_lane_ep *lane;
    unsigned char lane_wire[4 + 40];
    const char *lane_why;
    bool lane_ready;
    /* its lane splits large regions (docs/TRANSPORT.md §10.3, Regions moved by both cores): set
     * once, before lane_ready, read without the lock */
    bool lane_split;
    /* the peer's id came and its offer or no-lane record not yet (counted in w->lane_owed,
     * since lane_owed_since, ms); why the peer has no lane, from its no-lane record ("" none) */
    bool lane_owed;
    int64_t lane_owed_since;
    char lane_peer_why[24];
    /* the switch message of the lane's head ring (docs/TRANSPORT.md §10.6), kept here as the
     * offer record is; heads_on: the switch went, every head of the endpoint goes into the head
     * ring (set once under the lock, read atomically without it) */
    unsigned char lane_switch[24];
    bool lane_heads_on;
    struct cdt_ucx_ep_s *next, *prev;
};

#define CDT__UCX_CONN_QUEUE 64
struct cdt_ucx_listener_s {
    cdt_ucx_worker w;
    ucp_listener_h ucp;
    ucp_conn_request_h queue[CDT__UCX_CONN_QUEUE];
    int queued;
    struct cdt_ucx_listener_s *next, *prev;
};

/* one UCX operation of a request */
typedef struct cdt__ucx_sub {
    struct cdt_ucx_request_s *req;
    void *ucx;       /* UCX request while pending */
    bool fired;      /* its callback ran (possibly inside the posting call) */
    cdt_count index; /* region index (recv), -1 for head/tail */
    cdt_count len;   /* expected bytes (recv) */
    void *tmp;       /* staging memory for a non-contiguous region, owned */
} cdt__ucx_sub;

/* bytes of a single-mode message that came before the decoder could be made, out of order */
typedef struct cdt__ucx_stash {
    struct cdt__ucx_stash *next;
    size_t offset, len;
    unsigned char data[];
} cdt__ucx_stash;

/* a zero-byte (truncating) receive of one private message of an object that is not received:
 * the sender's operation completes and nothing stays in the matching queues. Canceled at its
 * deadline (the sender may never send) and when the worker is destroyed. */
typedef struct cdt__ucx_drain {
    struct cdt__ucx_drain *next, *prev;
    void *ucx;
    int64_t deadline;
    bool linked, fired;
    /* a sweep: every private message of one key (tag, mask), one after the other, until its
     * commit message or the deadline (cdt__ucx_post_sweep) */
    bool sweep;
    bool posting, again; /* inside drain_post; the last message said go on (ucx_recv_state.c) */
    uint64_t tag;
    cdt_ucx_worker w;
} cdt__ucx_drain;

struct cdt_ucx_request_s {
    cdt_ucx_worker w;
    bool is_send;
    /* written under the lock, by cdt__ucx_request_finish only (atomic: cdt_ucx_request_test
     * reads it without the lock) */
    bool done;
    /* done, with nothing left in UCX or in any list, as seen under the lock by the posting
     * call or a test: no other thread reaches it any more, and the free takes no lock */
    bool settled;
    bool matched;    /* recv: head arrived */
    bool in_body;    /* recv: in w->body_recvs */
    bool has_key;    /* recv: the head was parsed, key is valid */
    bool tag_known;  /* recv: its message matched: info.tag is the sender's (also on failure) */
    int abandon;     /* recv: abandoned before the regions were posted: drain them, then fail
                        with this status (cancel, key conflict) */
    int status;      /* first error, else CDT_SUCCESS */
    int outstanding; /* pending UCX operations */
    cdt__ucx_sub head_sub, tail_sub;
    cdt__ucx_sub *subs; /* regions */
    cdt_count nsubs;
    /* send */
    struct cdt_ucx_ep_s *ep;                     /* while linked in ep->sends */
    struct cdt_ucx_request_s *ep_next, *ep_prev; /* ep->sends */
    bool detached; /* ended before UCX let go of its operations: never read the
                      object again (the caller may have freed it) */
    /* send and recv: a commit message ends the object (docs/TRANSPORT.md §4, Commit). A
     * sender sends it once every other message of the object completed (parts_pending) */
    bool commit;
    /* send: the head message went from the head buffer to a peer that copies it out of this
     * process's memory (cma) in a rendezvous: quarantined when the send does not succeed */
    bool head_exposed;
    /* send: the id of the endpoint its head went to; quarantined: since when no live endpoint
     * has that id (0: one has) */
    uint64_t q_ep;
    int64_t q_gone;
    cdt_count parts_pending;
    cdt__ucx_sub commit_sub;
    /* send over a shared-memory FIFO: counted in w->fifo_sends while linked, ended with
     * CDT_ERR_TIMEOUT at stall_deadline (cdt__ucx_expire_sends) */
    bool fifo_counted;
    int64_t stall_deadline;
    cdt_frame frame;
    unsigned char *bounce; /* prefix + inline stream when it must be materialised */
    size_t bounce_len;
    /* recv */
    void *buf;
    cdt_count count;
    cdt_type type; /* a reference is held while the request is pending */
    cdt__ucx_limits limits;
    int64_t rest_timeout_ms; /* < 0: infinite */
    int64_t rest_deadline;   /* matched: when the rest of the object must have arrived */
    cdt_ucx_recv_prepare_func_t *prepare;
    void *prepare_arg;
    uint64_t key;
    /* recv: the id of the endpoint its head came through (the prefix's sender: docs/
     * TRANSPORT.md §4, Senders); send, split mode: the endpoint's id, written in the prefix */
    uint64_t sender;
    cdt_count threshold;
    unsigned char *stream; /* inline stream when a tail was received */
    cdt_count stream_len;
    cdt_decoder dec;
    cdt_ucx_recv_info info;
    /* recv, filled by the generic datatype's unpack (ucx_single.c) */
    bool single;        /* the prefix says single mode */
    bool discard;       /* single: the receive failed; later bytes go nowhere */
    bool decoded;       /* single: the whole frame was decoded from one piece, without a decoder */
    bool orphaned;      /* freed by the user while UCX still held its message (w->orphans) */
    unsigned char *pre; /* message bytes before the decoder exists: head, or a larger copy */
    size_t pre_cap;     /* bytes pre holds */
    size_t pre_fill;    /* message bytes [0, pre_fill) are in pre */
    size_t pre_need;    /* single: bytes needed before the decoder is made (0: not known) */
    cdt__ucx_stash *stash;
    cdt_count frame_size; /* single: from the frame header */
    unsigned char trailer[CDT__UCX_TRAILER_SIZE];
    unsigned trailer_got; /* bit i: trailer byte i arrived */
    /* send, single mode: bytes of the message (prefix + frame + trailer), and the end of the
     * bytes packed without a gap from the start (UCX may pack a piece again) */
    size_t single_len, tx_high;
    struct cdt_ucx_request_s *next, *prev; /* w->body_recvs, w->orphans */
    /* the lane (ucx_lane_*.c). send: queued on its endpoint's lane (lane_next), the bytes it
     * puts there; recv: its place on the consumer lane. Both: the cursor that maps the lane's
     * stream onto the frame: a run of frame bytes [lane_run_off, +lane_run_len) that starts at
     * inline-stream offset lane_seg_start (the packed stream and the small regions that follow
     * it without a gap, or a small region and those after it); lane_seg: its last region (-1:
     * none yet); lane_run_grown: the regions after it were looked at (ucx_lane_send.c) */
    struct cdt_ucx_request_s *lane_next;
    struct cdt__ucx_lane_in *lane_in;
    uint64_t lane_len, lane_off;
    cdt_count lane_seg, lane_seg_start, lane_header, lane_packed;
    cdt_count lane_run_off, lane_run_len;
    bool lane_run_grown;
    /* the inline-stream byte where the lane's stream starts: lane_header, or the fixed header's
     * end when the header continues in the lane (docs/TRANSPORT.md §10.3, Headers through the
     * lane); recv: that header's private copy while it arrives (lane_hdr_got bytes of
     * lane_hdr_cap, grown as they come) */
    cdt_count lane_base;
    unsigned char *lane_hdr;
    cdt_count lane_hdr_got, lane_hdr_cap;
    bool lane_regions; /* recv: its large regions' receives were posted */
    /* send and recv: the object's commit is the 8-byte word after its stream in the lane's
     * data ring, not a message (docs/TRANSPORT.md §10.3, Commit in the ring); recv: its bytes
     * are copied into `trailer` as they come out of the ring */
    bool lane_word;
    /* send, SPLIT (docs/TRANSPORT.md §10.3, Regions moved by both cores; ucx_lane_split.c): its
     * large regions (address and length in its memory, region order; owned) and where its lane
     * part stands after the stream: 0 the record to take, 1 the word to publish, 2 the release
     * to see */
    bool lane_split;
    int split_phase;
    int split_status;         /* send: its push's outcome, in the word; judged at the release */
    int64_t split_hold_until; /* send: the test hook's claim time (ms; 0: not set yet) */
    cdt_count split_n;
    struct iovec *split_iov;
    /* recv: the head message lands here; send: the head message is built here */
    _Alignas(16) unsigned char head[CDT__UCX_HEAD_MAX];
};

/* ucx_context.c */
CDT__UCX_HIDDEN int cdt__ucx_status(ucs_status_t st);
/* whether UCX_TLS (unset: "all") leaves UCX's `self` transport available (a worker's endpoint
 * to itself: ucx_lane_heads.c) */
CDT__UCX_HIDDEN bool cdt__ucx_tls_has_self(void);
CDT__UCX_HIDDEN int64_t cdt__ucx_now_ms(void);
CDT__UCX_HIDDEN uint64_t cdt__ucx_next_key(cdt_ucx_worker w);
/* lock held: a new endpoint's id (random to other processes, never 0; ucx_hello.c) */
CDT__UCX_HIDDEN uint64_t cdt__ucx_next_ep_id(cdt_ucx_worker w);
/* ucx_progress.c, lock held: ucp_worker_progress (while a head ring is polled, only when due:
 * every CDT__UCX_RING_TURNS-th call, after a call that handled UCX events, and while lane
 * objects are in flight), the lanes, then the deadlines (rest timeouts, drains, FIFO stall bounds,
 * parked endpoints), at least every 10 ms and whenever the worker's timer is due. The _ucx variant
 * runs ucp_worker_progress whatever is due (before an arm or a sleep). */
CDT__UCX_HIDDEN unsigned cdt__ucx_progress(cdt_ucx_worker w);
CDT__UCX_HIDDEN unsigned cdt__ucx_progress_ucx(cdt_ucx_worker w);
/* progress calls of a worker polling a head ring in which ucp_worker_progress runs once (a
 * skipped call costs a ring poll, a fraction of the TCP interface's epoll system call) */
#define CDT__UCX_RING_TURNS 16
/* ucx_wakeup.c: with wakeup, the worker's event fd (an epoll set of UCX's event fd and the
 * deadline timer, w->efd); without, w->efd = -1. Close: after ucp_worker_destroy. */
CDT__UCX_HIDDEN int cdt__ucx_wakeup_open(cdt_ucx_worker w);
CDT__UCX_HIDDEN void cdt__ucx_wakeup_close(cdt_ucx_worker w);
/* ucx_progress.c, lock not held: with wakeup, sleep until the worker has events, a request
 * completed (cdt__ucx_wake), the worker's timer is due, CDT__UCX_SLEEP_MAX_MS pass or the
 * deadline does; without wakeup, return at once. */
#define CDT__UCX_SLEEP_MAX_MS 10
/* progress calls a blocking wait spins before it sleeps (a message in flight usually
 * completes within them; a few tens of microseconds) */
#define CDT__UCX_SPINS_BEFORE_SLEEP 256
CDT__UCX_HIDDEN void cdt__ucx_sleep(cdt_ucx_worker w, int64_t deadline);
/* ucx_progress.c, lock not held: progress until the UCX request completes (then it is freed)
 * or the deadline passes. Returns the UCX status, or UCS_ERR_TIMED_OUT (the request is then
 * still pending, the caller's to free). NULL and error pointers return at once. */
CDT__UCX_HIDDEN ucs_status_t cdt__ucx_wait_request(cdt_ucx_worker w, void *req, int64_t deadline);
/* ucx_progress.c, lock held: end what is due at `now` (each layer's deadlines) */
CDT__UCX_HIDDEN void cdt__ucx_expire(cdt_ucx_worker w, int64_t now);
/* ucx_wakeup.c, lock held: something is due at `deadline`: the wakeup timer fires by then; the
 * timer fires at `at` (ms of cdt__ucx_now_ms), or never (INT64_MAX) */
CDT__UCX_HIDDEN void cdt__ucx_deadline_added(cdt_ucx_worker w, int64_t deadline);
CDT__UCX_HIDDEN void cdt__ucx_timer_set(cdt_ucx_worker w, int64_t at);
/* ucx_recv_state.c, lock held: the endpoint `ep` failed: fail the split-mode receives part-way
 * through an object that came through it (their sender is its peer id, read first: ucx_hello.c);
 * none when its peer id never came (docs/TRANSPORT.md §6) */
CDT__UCX_HIDDEN void cdt__ucx_fail_body_recvs(struct cdt_ucx_ep_s *ep, int status);
/* ucx_recv_state.c, lock held: record what ended a receive with CDT_ERR_PEER
 * (cdt_ucx_recv_info.failure, .failed_by: the peer id of the failed endpoint, 0 not known; for
 * an aborted message the sender's id when this side's endpoint to it had failed), first
 * cause only */
CDT__UCX_HIDDEN void cdt__ucx_recv_failed_by(cdt_ucx_request r, int how, uint64_t peer);
/* ucx_hello.c, lock held: draw a new endpoint's id and wait for its peer's; send ep's id to the
 * peer before its first object (once); read the peer ids that arrived (from progress, while
 * w->hello_waiting); ep leaves the worker (closed or freed) */
CDT__UCX_HIDDEN void cdt__ucx_hello_init(struct cdt_ucx_ep_s *ep);
CDT__UCX_HIDDEN void cdt__ucx_hello_send(struct cdt_ucx_ep_s *ep);
CDT__UCX_HIDDEN void cdt__ucx_hello_poll(cdt_ucx_worker w);
CDT__UCX_HIDDEN void cdt__ucx_hello_forget(struct cdt_ucx_ep_s *ep);
/* ucx_recv_state.c, lock held: fail matched receives past their rest deadline, cancel expired
 * drains; the earliest of those deadlines (INT64_MAX: none); cancel every drain (destroy) */
CDT__UCX_HIDDEN void cdt__ucx_expire_recvs(cdt_ucx_worker w, int64_t now);
CDT__UCX_HIDDEN int64_t cdt__ucx_recv_next_deadline(cdt_ucx_worker w);
CDT__UCX_HIDDEN void cdt__ucx_drains_cancel_all(cdt_ucx_worker w);
CDT__UCX_HIDDEN void cdt__ucx_drains_free_all(cdt_ucx_worker w);
/* ucx_recv_state.c, lock held: abandon a receive (cdt_ucx_request_cancel) */
CDT__UCX_HIDDEN void cdt__ucx_recv_abandon(cdt_ucx_request r, int status);
/* ucx_recv_state.c, lock held: discard the private message `tag` when it comes, at the latest
 * until `deadline`; the deadline for the drains of r's object; link a matched receive into
 * w->body_recvs; complete a receive (decoder finished, buffers back, type released) */
CDT__UCX_HIDDEN void cdt__ucx_post_drain(cdt_ucx_worker w, uint64_t tag, int64_t deadline);
/* ucx_recv_state.c, lock held: discard every private message of object `key` (tail, regions,
 * commit), one at a time, until its commit message came or `deadline`: for an object none of
 * whose parts is received, whatever its header lists (docs/TRANSPORT.md §5) */
CDT__UCX_HIDDEN void cdt__ucx_post_sweep(cdt_ucx_worker w, uint64_t key, int64_t deadline);
CDT__UCX_HIDDEN int64_t cdt__ucx_drain_deadline(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_body_link(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_recv_done(cdt_ucx_request r);
/* ucx_request_pool.c */
CDT__UCX_HIDDEN cdt_ucx_request cdt__ucx_request_new(cdt_ucx_worker w, bool is_send);
/* a head message at most this long is always sent eagerly (copied by the sender when it is
 * posted), never read by the receiver out of the sender's memory: UCX's rendezvous starts at
 * 8 KiB over tcp + cma (1.13 and 1.22, `ucp_ep_print_info`); kept well below that */
#define CDT__UCX_EAGER_SURE 1024
/* back to the worker's pool (or freed); the request is done and nothing refers to it */
CDT__UCX_HIDDEN void cdt__ucx_request_release(cdt_ucx_request r);
/* lock held: a freed request whose UCX operation is still live waits in w->orphans until
 * UCX lets go of it (then cdt__ucx_orphan_release); cdt__ucx_orphans_free_all after the UCX
 * worker is gone */
CDT__UCX_HIDDEN void cdt__ucx_orphan(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_orphan_release(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_orphans_free_all(cdt_ucx_worker w);
/* cdt_ucx_worker_destroy: free the pooled requests */
CDT__UCX_HIDDEN void cdt__ucx_request_pool_clear(cdt_ucx_worker w);
/* quarantined head buffers: at most this many are held (about 33 KiB each), and one is freed
 * this long after the last live endpoint with the id its head went to is gone (the peer has
 * noticed by then: keepalive, 1 s by default, CDT__UCX_KEEPALIVE_INTERVAL) */
#define CDT__UCX_QUARANTINE_MAX 512
#define CDT__UCX_QUARANTINE_GRACE_MS 5000
/* ucx_request_pool.c, worker lock held: free the quarantined buffers no reader can reach any
 * more (at most once a second) */
CDT__UCX_HIDDEN void cdt__ucx_quarantine_scan(cdt_ucx_worker w, int64_t now);
CDT__UCX_HIDDEN void cdt__ucx_request_set_error(cdt_ucx_request r, int status);
/* ucx_wakeup.c, lock held: make the worker's event fd readable (with wakeup), so that a
 * thread asleep on it, the library's or an application's, wakes and progresses: at every
 * request's completion (also by cancel, a deadline or an endpoint's end) and after progress
 * that handled events. One signal per arm: after ucp_worker_arm, whose read of UCX's event fd
 * is what makes the next signal needed (cdt__ucx_armed). */
CDT__UCX_HIDDEN void cdt__ucx_wake(cdt_ucx_worker w);
/* lock held: ucp_worker_arm returned (either way: it read UCX's signal, if there was one) */
static inline void cdt__ucx_armed(cdt_ucx_worker w)
{
    w->wake_pending = false;
}
/* lock held: the request is done (its status final): what cdt_ucx_request_test sees without
 * the lock; a sleeper on the worker's event fd is woken to see it */
static inline void cdt__ucx_request_finish(cdt_ucx_request r)
{
    __atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
    if (r->w->efd >= 0)
        cdt__ucx_wake(r->w);
}
/* ucx_bufcache.c: staging memory (bytes as asked; give back the same count) */
CDT__UCX_HIDDEN void *cdt__ucx_buf_get(cdt_ucx_worker w, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_buf_put(cdt_ucx_worker w, void *p, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_buf_cache_clear(cdt_ucx_worker w);
CDT__UCX_HIDDEN void *cdt__ucx_frame_alloc(void *arg, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_frame_release(void *arg, void *p, size_t bytes);
/* ucx_endpoint.c */
CDT__UCX_HIDDEN void cdt__ucx_ep_force_close_all(cdt_ucx_worker w);
/* ucx_describe.c: the calling thread's last failure (cdt_ucx_last_error), as printf; and as
 * "<what> <peer> (UCX <version>; lanes: <lanes>): <status>[; <hint>]" (lock held; ep may be
 * NULL: no connection; peer NULL: ep's) */
CDT__UCX_HIDDEN void cdt__ucx_error_detail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
CDT__UCX_HIDDEN void cdt__ucx_fail_detail(const char *what, const char *peer,
                                          struct cdt_ucx_ep_s *ep, int rc, const char *hint);
/* ucx_peer_version.c: the worker's UCX client id (a tag and its UCX version), sent with every
 * connect; at accept, the connecting peer's "host:port" into peer and CDT_SUCCESS, or
 * CDT_ERR_TRANSPORT (the error detail set) when it runs another UCX minor version */
CDT__UCX_HIDDEN uint64_t cdt__ucx_client_id(void);
CDT__UCX_HIDDEN int cdt__ucx_check_peer_version(ucp_conn_request_h req, char *peer,
                                                size_t peer_size);
/* the hint of a connect that failed: what a peer on another UCX release line gets */
#define CDT__UCX_VERSION_HINT                                                                      \
    "a listener on another UCX minor version refuses the connection or fails its wireup: peers "   \
    "must use the same UCX minor version (docs/TRANSPORT.md §1)"
/* ucx_ep_park.c, lock held: park an endpoint with the flush its close waits for (its sends
 * ended); close by force the parked endpoints whose flush ended */
CDT__UCX_HIDDEN void cdt__ucx_ep_park(struct cdt_ucx_ep_s *ep, void *flush);
CDT__UCX_HIDDEN void cdt__ucx_close_parked(cdt_ucx_worker w);
/* ucx_request_pool.c: free what a send request keeps (frame, staging buffers) */
CDT__UCX_HIDDEN void cdt__ucx_send_release(cdt_ucx_request r);
/* ucx_send_track.c, lock held: a posted send joins its endpoint's list (unless it is done),
 * and leaves it; take every send off an endpoint's list (it failed or is closed) and end it
 * with `status` now, whatever UCX still holds of it, where that is safe (no cma) */
CDT__UCX_HIDDEN void cdt__ucx_send_track(struct cdt_ucx_ep_s *ep, cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_send_unlink(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_ep_end_sends(struct cdt_ucx_ep_s *ep, int status);
/* ucx_send_track.c, lock held: end the sends over a shared-memory FIFO past their stall deadline
 * with CDT_ERR_TIMEOUT; the earliest stall deadline left (INT64_MAX: none) */
CDT__UCX_HIDDEN void cdt__ucx_expire_sends(cdt_ucx_worker w, int64_t now);
CDT__UCX_HIDDEN int64_t cdt__ucx_next_stall(cdt_ucx_worker w);
/* ucx_ep_info.c, lock held: CDT__UCX_MODE_SINGLE or _SPLIT for a send on ep (the worker's
 * protocol, or for CDT_UCX_PROTOCOL_AUTO the transport of the endpoint's messages); also
 * records ep->lanes_known and ep->peer_accesses_memory once the lanes are there */
CDT__UCX_HIDDEN int cdt__ucx_ep_mode(struct cdt_ucx_ep_s *ep);
/* ucx_ep_info.c, lock held: cdt_ucx_ep_transports' line (CDT_ERR_PEER once the endpoint
 * failed) */
CDT__UCX_HIDDEN int cdt__ucx_ep_lanes(struct cdt_ucx_ep_s *ep, char *buf, size_t size);
/* ucx_ep_info.c, lock held: keep `lanes` (NULL: read them now) as the lanes an error message
 * names once UCX reports placeholders (at the first send, or the peer's first object) */
CDT__UCX_HIDDEN void cdt__ucx_ep_keep_lanes(struct cdt_ucx_ep_s *ep, const char *lanes);
/* ucx_ep_info.c, lock not held: make sure ep's lanes are wired up before a send is posted on
 * it (an accepted endpoint's first send flushes it and waits) */
CDT__UCX_HIDDEN int cdt__ucx_ep_wait_wired(struct cdt_ucx_ep_s *ep);
/* ucx_single.c: the generic datatypes (created with the worker, destroyed after it) */
CDT__UCX_HIDDEN int cdt__ucx_single_dt_create(cdt_ucx_worker w);
CDT__UCX_HIDDEN void cdt__ucx_single_dt_destroy(cdt_ucx_worker w);
/* ucx_single.c, lock held: message bytes [offset, offset + length) of a receive arrived (the
 * receive datatype's unpack; also driven directly by tests/fuzz/fuzz_ucx_single.c). Errors
 * become the request's status. */
CDT__UCX_HIDDEN void cdt__ucx_single_unpack(cdt_ucx_request r, size_t offset, const void *src,
                                            size_t length);
/* ucx_single.c, lock held: the receive's message of `length` bytes completed. Returns true when
 * the receive is finished with it (single mode, or bytes that are no split-mode head: the
 * request's status says which), false for a split-mode head in r->head to be parsed. */
CDT__UCX_HIDDEN bool cdt__ucx_single_complete(cdt_ucx_request r, size_t length);
/* ucx_stash.c: drop what the receive buffered (stash, a grown pre buffer) */
CDT__UCX_HIDDEN void cdt__ucx_single_clear(cdt_ucx_request r);
/* ucx_recv_state.c, lock held: fail a receive (a single-mode one completes at once, the rest
 * of its message arriving into nothing) */
CDT__UCX_HIDDEN void cdt__ucx_recv_fail(cdt_ucx_request r, int status);
/* ucx_recv_state.c, lock held: link a matched receive into w->body_recvs and start its rest
 * deadline */
CDT__UCX_HIDDEN void cdt__ucx_recv_matched(cdt_ucx_request r);

/* ucx_send.c: for the lane's sends (ucx_lane_send.c): post one more part of an object; the
 * posting is over (the hold dropped, the lock released); a send whose first message could not
 * be posted (lock not held); one part of a send ended with `status` */
CDT__UCX_HIDDEN int cdt__ucx_send_post_part(cdt_ucx_request r, ucp_ep_h ep, const void *data,
                                            size_t len, uint64_t tag, cdt__ucx_sub *s);
/* ucx_send.c: post an object's head message on ep (into the lane's head ring once the
 * endpoint switched, else over UCX; one part); a message of a send completed with `status` */
CDT__UCX_HIDDEN int cdt__ucx_send_post_head(cdt_ucx_request r, struct cdt_ucx_ep_s *ep,
                                            const void *data, size_t len, uint64_t tag,
                                            cdt__ucx_sub *s);
CDT__UCX_HIDDEN void cdt__ucx_send_sub_end(cdt__ucx_sub *s, int status);
CDT__UCX_HIDDEN int cdt__ucx_send_posted(struct cdt_ucx_ep_s *ep, cdt_ucx_request r,
                                         cdt_ucx_request *request);
CDT__UCX_HIDDEN void cdt__ucx_send_unposted(cdt_ucx_request r);
CDT__UCX_HIDDEN void cdt__ucx_send_part_end(cdt_ucx_request r, int status);
/* ucx_recv.c: for the lane's receives (ucx_lane_recv.c) */
CDT__UCX_HIDDEN int cdt__ucx_recv_open_decoder(cdt_ucx_request r, const unsigned char *S,
                                               cdt_count slen, cdt_frame_info *in);
CDT__UCX_HIDDEN void cdt__ucx_recv_post_regions(cdt_ucx_request r, const unsigned char *S,
                                                cdt_count slen, const cdt_frame_info *in);
CDT__UCX_HIDDEN void cdt__ucx_recv_drain_regions(cdt_ucx_request r, const unsigned char *S,
                                                 cdt_count slen, cdt_count from);

#include "ucx_lane.h"

#endif
