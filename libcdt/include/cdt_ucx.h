/*!
 * @file cdt_ucx.h
 * cdt_ucx.h - libcdt's UCX transport: send one object as one matched message, with its large
 * memory regions moving zero-copy on both ends. Protocol: docs/TRANSPORT.md.
 *
 * Read top to bottom:
 *   1. conventions and tags
 *   2. context and worker (progress without a dedicated thread)
 *   3. endpoints: listener on host:port, connect, or from an exchanged worker address
 *   4. send and receive of (buf, count, type), blocking and non-blocking
 *   5. requests: test, wait, cancel, free
 *
 * Conventions: as cdt.h (0 = success, negative cdt status codes, outputs written only on
 * success, free/destroy functions accept NULL). `*_destroy` functions cannot fail and return
 * nothing; `cdt_ucx_ep_close` and `cdt_ucx_request_free` may report (a timeout, a request still
 * in UCX's hands). cdt_ucx_worker_progress returns a count, never an error, and
 * cdt_ucx_worker_sender_id the id itself. Every params struct starts with `field_mask`: set
 * the bit of each field you fill, the others take their documented default, so the structs can
 * grow without breaking the ABI. A NULL params pointer means all defaults.
 *
 * Threads: every function may be called from any thread. A worker serialises its use of UCX
 * with one mutex (the UCX worker runs in UCS_THREAD_MODE_SERIALIZED); completion work runs
 * inside whatever call progresses the worker, under that mutex. Blocking calls release the
 * mutex between progress steps, so threads blocked on one worker all make progress.
 *
 * Timeouts are in milliseconds; CDT_UCX_INFINITE (-1), or any negative value, waits without
 * bound; the clock is read in milliseconds, so 0 gives up within about a millisecond.
 */
#ifndef CDT_UCX_H
#define CDT_UCX_H

#include "cdt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------
 * 1. Handles and tags
 * ---------------------------------------------------------------------------------------- */

typedef struct cdt_ucx_context_s *cdt_ucx_context;   /*!< one UCX context (ucp_context_h) */
typedef struct cdt_ucx_worker_s *cdt_ucx_worker;     /*!< progress engine, owns endpoints */
typedef struct cdt_ucx_listener_s *cdt_ucx_listener; /*!< accepts connections on host:port */
typedef struct cdt_ucx_ep_s *cdt_ucx_ep;             /*!< a connection to one peer worker */
typedef struct cdt_ucx_request_s *cdt_ucx_request;   /*!< a send or receive in flight */

/*! User tags are 63 bits: the top bit of the UCX tag is the transport's private space. */
typedef uint64_t cdt_ucx_tag;
/*! The largest user tag: 2^63 - 1. */
#define CDT_UCX_TAG_MAX ((cdt_ucx_tag)0x7fffffffffffffffull)
/*! Tag mask of an exact tag. A receive matches tag t when (t & mask) == (tag & mask). */
#define CDT_UCX_TAG_MASK_FULL CDT_UCX_TAG_MAX
#define CDT_UCX_TAG_MASK_ANY ((cdt_ucx_tag)0) /*!< any tag (wildcard) */

/*! A timeout (ms) without bound; so is any negative value. */
#define CDT_UCX_INFINITE ((int64_t)-1)

/*! cdt_ucx_version_string() : the UCX library version in use, e.g. "1.13.1". */
CDT_API const char *cdt_ucx_version_string(void);

/* ------------------------------------------------------------------------------------------
 * 2. Context and worker
 * ---------------------------------------------------------------------------------------- */

/*! Fields of cdt_ucx_context_params, for its field_mask. */
enum cdt_ucx_context_params_field {
    CDT_UCX_CONTEXT_PARAM_ESTIMATED_NUM_EPS = 1u << 0, /*!< estimated_num_eps */
    CDT_UCX_CONTEXT_PARAM_SHARED_MEMORY = 1u << 1,     /*!< shared_memory */
    CDT_UCX_CONTEXT_PARAM_WAKEUP = 1u << 2,            /*!< wakeup */
};

/*! How endpoints to a peer on the same machine may use shared memory (see
 * cdt_ucx_context_create). */
typedef enum cdt_ucx_shared_memory {
    /*! UCX's own choice. With the peer-failure detection libcdt endpoints use, UCX then talks
     * TCP (loopback) even to a process of the same machine. */
    CDT_UCX_SHM_OFF = 0,
    /*! shared-memory segments (sysv/posix FIFOs) for messages; rendezvous of large messages
     * over the network transports (tcp on loopback). Neither process ever touches the other's
     * memory. Opt-in: a peer that dies inside a send wedges the FIFO's receiver
     * (cdt_ucx_context_create). */
    CDT_UCX_SHM_COPY = 1,
    /*! shared-memory FIFOs for messages, and rendezvous by cross-memory attach (cma): the
     * lowest latency between local processes. Opt-in, for jobs where any peer's death is
     * fatal anyway: a peer that dies inside a send wedges the FIFO's receiver. */
    CDT_UCX_SHM_FULL = 2,
    /*! messages over TCP (loopback), rendezvous of large messages by cross-memory attach: no
     * shared FIFO, so no peer's death can stall a live peer; large objects move at
     * shared-memory speed (one copy, by the receiver). The default. */
    CDT_UCX_SHM_CMA = 3,
} cdt_ucx_shared_memory;

/*! Options of cdt_ucx_context_create; the fields named in field_mask are read. May grow at its
 *  end. */
typedef struct cdt_ucx_context_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_CONTEXT_PARAM_*) */
    /*! expected number of endpoints (a UCX tuning hint). Default: UCX's. */
    size_t estimated_num_eps;
    /*! shared memory between local processes. Default: the environment variable
     * CDT_UCX_SHARED_MEMORY (off, copy, full or cma) when set, else CDT_UCX_SHM_CMA. */
    cdt_ucx_shared_memory shared_memory;
    /*! non-zero: workers can sleep instead of spinning (UCP_FEATURE_WAKEUP): blocking calls
     * block in poll() once nothing has happened for a short spin, and cdt_ucx_worker_fd /
     * cdt_ucx_worker_arm let an event loop wait for the worker. Transports that cannot wake
     * a sleeper are then left out by UCX (UCX 1.13: its shared-memory transports), so local
     * peers talk TCP. Default: the environment variable CDT_UCX_WAKEUP (1/y/yes or 0/n/no)
     * when set, else 0 (blocking calls spin: the lowest latency, one core each). */
    int wakeup;
} cdt_ucx_context_params;

/*! cdt_ucx_context_create() : read the UCX configuration (UCX_* environment variables such
 *  as UCX_TLS) and create a context with tag matching.
 *  Shared memory (docs/TRANSPORT.md §1): libcdt endpoints detect peer failures
 *  (UCP_ERR_HANDLING_MODE_PEER). The context sets, through ucp_config_modify and only for
 *  variables the environment does not set:
 *  - CDT_UCX_SHM_CMA (the default): UCX_TLS=^mm (no shared-memory FIFO: sysv, posix, xpmem)
 *    and UCX_CMA_MEMORY_INVALIDATE=y; two local processes talk `am=tcp/lo rma=cma/memory`.
 *  - CDT_UCX_SHM_COPY: UCX_SYSV_ERROR_HANDLING=y and UCX_POSIX_ERROR_HANDLING=y
 *    (`am=sysv/memory`, rendezvous over TCP); CDT_UCX_SHM_FULL: also
 *    UCX_CMA_MEMORY_INVALIDATE=y (`am=sysv/memory rma=cma/memory`).
 *  - CDT_UCX_SHM_OFF: nothing (UCX's choice: TCP).
 *  Why the FIFO modes are opt-in: UCX's shared-memory FIFO has a sender reserve a slot of the
 *  receiver's FIFO before it writes it; a sender that dies in between leaves a slot that is
 *  never published, and the receiver then reads nothing more from any sender (UCX 1.13 and
 *  1.22; `bench/run ucx_wedge` reproduces it with raw UCP). They are for jobs in which any
 *  peer's death is fatal anyway.
 *  Failures: UCX notices a dead peer on its keepalive timer over shared memory, so the context
 *  sets UCX_KEEPALIVE_INTERVAL to 1 s unless the environment sets it. When an endpoint fails or
 *  is closed, its pending sends end at once (CDT_ERR_PEER, CDT_ERR_CANCELED) and the object
 *  may be freed. Over cma a live receiver may still copy the object's memory after that (UCX
 *  cannot revoke the access); the protocol makes such a late copy harmless: an object whose
 *  messages can be copied so is complete only with a commit message the sender sends after
 *  every copy was acknowledged, and an ended send never sends it (docs/TRANSPORT.md §4).
 *  UCX_TLS, when set, still decides which transports exist at all. cdt_ucx_ep_transports()
 *  tells which ones an endpoint uses.
 *  Errors: CDT_ERR_TRANSPORT (UCX failed), CDT_ERR_NO_MEMORY, CDT_ERR_INVALID_ARG. */
CDT_API int cdt_ucx_context_create(const cdt_ucx_context_params *params, cdt_ucx_context *context);
/*! cdt_ucx_context_destroy() : destroy a context whose workers are all destroyed. */
CDT_API void cdt_ucx_context_destroy(cdt_ucx_context context);

/*! Fields of cdt_ucx_worker_params, for its field_mask. */
enum cdt_ucx_worker_params_field {
    CDT_UCX_WORKER_PARAM_SENDER_ID = 1u << 0,          /*!< sender_id */
    CDT_UCX_WORKER_PARAM_ZCOPY_THRESHOLD = 1u << 1,    /*!< zcopy_threshold */
    CDT_UCX_WORKER_PARAM_BUFFER_CACHE = 1u << 2,       /*!< buffer_cache_bytes */
    CDT_UCX_WORKER_PARAM_PROTOCOL = 1u << 3,           /*!< protocol */
    CDT_UCX_WORKER_PARAM_FIFO_STALL_TIMEOUT = 1u << 4, /*!< fifo_stall_timeout_ms */
    CDT_UCX_WORKER_PARAM_LANE = 1u << 5,               /*!< lane */
};

/*! Default of cdt_ucx_worker_params.fifo_stall_timeout_ms (ms). */
#define CDT_UCX_DEFAULT_FIFO_STALL_TIMEOUT_MS 60000

/*! How a worker lays an object out in UCX messages (docs/TRANSPORT.md §1 has the measurements
 * behind the choice). A receiver takes either from any sender: only the sender chooses. */
typedef enum cdt_ucx_protocol {
    /*! per endpoint, from the transport UCX chose for its messages: CDT_UCX_PROTOCOL_SINGLE over
     * shared memory (sysv, posix, self), CDT_UCX_PROTOCOL_SPLIT otherwise; where rendezvous
     * runs by cross-memory attach (CDT_UCX_SHM_FULL) an object with a region of at least
     * zcopy_threshold bytes still goes split (its large regions by one cross-memory copy each,
     * fastest into freshly allocated memory). The default. */
    CDT_UCX_PROTOCOL_AUTO = 0,
    /*! a head message, then the rest of the inline stream and every large region as their own
     * contiguous messages: the fastest over TCP */
    CDT_UCX_PROTOCOL_SPLIT = 1,
    /*! the whole frame as one message, packed and unpacked by libcdt inside UCX's own copies
     * (a UCX generic datatype): the fastest over shared memory */
    CDT_UCX_PROTOCOL_SINGLE = 2,
    /*! as CDT_UCX_PROTOCOL_AUTO, except that over shared memory every object is one message,
     * large regions included: for receivers that reuse their receive memory (cdtypes' receive
     * cache), where UCX's copy out of its segments lands in pages already mapped. 512 regions
     * of 128 KiB from Python, alternating runs: 1.2-1.9x as fast as CDT_UCX_PROTOCOL_AUTO at
     * 64 MiB, 1.2-1.6x at 4 MiB (docs/TRANSPORT.md). The environment's name: "auto-single". */
    CDT_UCX_PROTOCOL_AUTO_SINGLE = 3,
} cdt_ucx_protocol;

/*! Bits of a worker's sender id (docs/TRANSPORT.md: it keys the private tag space). */
#define CDT_UCX_SENDER_ID_BITS 23

/*! Options of cdt_ucx_worker_create; the fields named in field_mask are read. May grow at its
 *  end. */
typedef struct cdt_ucx_worker_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_WORKER_PARAM_*) */
    /*! This worker's sender id, below 2^CDT_UCX_SENDER_ID_BITS, reported by
     * cdt_ucx_worker_sender_id (e.g. the rank). Protocol versions 2 and 3 do not key messages by
     * it: each object's key is drawn from a keyed random function per worker, so equal ids do
     * not make objects cross (docs/TRANSPORT.md). Default: random. */
    uint32_t sender_id;
    /*! Split mode: regions of at least this many bytes move as their own zero-copy message;
     * smaller ones are gathered into the frame's head message. Default 65536; minimum 1. On an
     * endpoint with a lane (docs/TRANSPORT.md §10.3, Regions) a threshold named here holds;
     * unnamed, the lane's own applies there (every region through the lane, or
     * CDT_UCX_LANE_REGION_THRESHOLD). */
    cdt_count zcopy_threshold;
    /*! Bytes of staging memory (packed streams, gathered small regions, received tails) the
     * worker keeps for reuse between messages, at most 64 buffers. Fresh memory costs a page
     * fault per 4 KiB, more than packing it. Default 256 MiB; 0 frees every buffer at once. */
    size_t buffer_cache_bytes;
    /*! How objects are sent. Default: the environment variable CDT_UCX_PROTOCOL (auto, split,
     * single or auto-single) when set, else CDT_UCX_PROTOCOL_AUTO. */
    cdt_ucx_protocol protocol;
    /*! Over a shared-memory FIFO (CDT_UCX_SHM_COPY, CDT_UCX_SHM_FULL), a send that has not
     * completed this many ms after it was posted ends with CDT_ERR_TIMEOUT, whatever the
     * caller waits with: a peer that dies inside its own send can wedge the receiver's FIFO
     * for every sender (docs/TRANSPORT.md §9), and such a send would otherwise wait for ever.
     * A receiver that takes longer than this to post its receive for a large object ends the
     * send the same way. The object may be freed once the send ended. CDT_UCX_INFINITE (or
     * any negative value): no bound. Default: the environment variable
     * CDT_UCX_FIFO_STALL_TIMEOUT_MS when set, else CDT_UCX_DEFAULT_FIFO_STALL_TIMEOUT_MS.
     * Endpoints without a FIFO (the default, TCP) are not bounded: there a dead peer fails the
     * endpoint. */
    int64_t fifo_stall_timeout_ms;
    /*! 1: the lane, libcdt's own shared memory between two processes of one host
     * (docs/TRANSPORT.md §10): this worker offers one on each endpoint whose peer shares its
     * host (a cma transport, no shared-memory FIFO) and maps the lanes its peers offer; large
     * objects then move in one pass per side. 0: neither (the peer's objects move the version 6
     * way). Its sender is trusted not to change the bytes of its own object under a custom
     * type's unpack callback only in that each callback reads a private copy (docs/SECURITY.md).
     * Default: the environment variable CDT_UCX_LANE ("on" or "off") when set and not empty,
     * else 1: the lane is the default between local processes. Turn it off (0, or
     * CDT_UCX_LANE=off) for peers not trusted with a shared segment (docs/SECURITY.md).
     * cdt_ucx_ep_transports says "lane=memfd" where an endpoint uses it, "lane=none/<why>"
     * where it has none (another host, a peer with the lane off, a limit: docs/TRANSPORT.md
     * §10.2; "lane=none/off" where this worker has it off); such endpoints move every object
     * the version 6 way. */
    int lane;
} cdt_ucx_worker_params;

/*! cdt_ucx_worker_create() : create a worker on `context`.
 *  Errors: CDT_ERR_INVALID_ARG (sender id too large, threshold < 1, unknown protocol or
 *  CDT_UCX_PROTOCOL value), CDT_ERR_TRANSPORT,
 *  CDT_ERR_NO_MEMORY. */
CDT_API int cdt_ucx_worker_create(cdt_ucx_context context, const cdt_ucx_worker_params *params,
                                  cdt_ucx_worker *worker);
/*! cdt_ucx_worker_destroy() : cancel what is still pending, close the worker's endpoints
 *  and listeners (forcefully; the listeners last, right before UCX's worker), release the
 *  worker. Requests not yet freed become invalid. */
CDT_API void cdt_ucx_worker_destroy(cdt_ucx_worker worker);
/*! cdt_ucx_worker_progress() : run completions once; @return number of UCX events (>= 0).
 *  While the worker takes small objects from a lane's head ring, the rings are polled on every
 *  call and UCX itself once in 16 calls (and on every call after one that handled UCX events
 *  or while a lane object is in flight; docs/TRANSPORT.md §10.6, Polling): a call that skipped
 *  UCX returns 0. */
CDT_API int cdt_ucx_worker_progress(cdt_ucx_worker worker);
/*! cdt_ucx_worker_address() : this worker's address, for out-of-band exchange (a file, MPI,
 *  PMIx): the peer passes it to cdt_ucx_ep_create_from_address(). Free it with
 *  cdt_ucx_worker_address_free(). */
CDT_API int cdt_ucx_worker_address(cdt_ucx_worker worker, void **address, size_t *length);
/*! cdt_ucx_worker_address_free() : release an address from cdt_ucx_worker_address(). NULL: no-op.
 */
CDT_API void cdt_ucx_worker_address_free(cdt_ucx_worker worker, void *address);
/*! cdt_ucx_worker_fd() : a file descriptor that becomes readable when the worker has events
 *  to progress, for poll/epoll/select or an event loop (asyncio's add_reader, libuv's
 *  uv_poll). Only read it for readiness: the worker owns it (do not read from or close it).
 *  The loop: progress until cdt_ucx_worker_progress returns 0, test the requests, then
 *  cdt_ucx_worker_arm; on CDT_SUCCESS wait for the fd, on CDT_ERR_BUSY progress again.
 *  Besides messages, the fd becomes readable at every request's completion, whichever call
 *  or thread completed it (progress, test or wait in another thread, cdt_ucx_request_cancel
 *  from another thread, an endpoint's failure or close), and when a deadline of the worker
 *  is due with nothing arriving: a receive's rest_timeout_ms, and the end of the receives
 *  that discard a failed object's parts. The worker keeps a timer at its earliest deadline
 *  behind the fd (the fd is an epoll set of UCX's event fd and that timer), so a loop that
 *  sleeps on the fd alone, without a timeout, misses none of them; progress when woken runs
 *  the deadline. A completion after the loop's test and before its arm makes the arm return
 *  CDT_ERR_BUSY. UCX's keepalive also runs inside progress: it only matters over transports
 *  whose dead peer says nothing (with wakeup UCX 1.13 uses TCP, whose peer's exit makes the
 *  fd readable).
 *  Errors: CDT_ERR_UNSUPPORTED (the context was created without wakeup),
 *  CDT_ERR_INVALID_ARG. */
CDT_API int cdt_ucx_worker_fd(cdt_ucx_worker worker, int *fd);
/*! cdt_ucx_worker_arm() : prepare to wait for the worker's fd. @return CDT_SUCCESS (nothing
 *  is pending: wait for the fd), CDT_ERR_BUSY (events are pending, or objects are in flight
 *  on a lane, whose peer's writes into shared memory make no fd readable: progress, then arm
 *  again), CDT_ERR_UNSUPPORTED (no wakeup), CDT_ERR_INVALID_ARG. */
CDT_API int cdt_ucx_worker_arm(cdt_ucx_worker worker);
/*! cdt_ucx_worker_sender_id() : the sender id in use (given or drawn at random). */
CDT_API uint32_t cdt_ucx_worker_sender_id(cdt_ucx_worker worker);
/*! Fields of cdt_ucx_worker_stats, for its field_mask. */
enum cdt_ucx_worker_stats_field {
    CDT_UCX_WORKER_STATS_QUARANTINED = 1u << 0,         /*!< quarantined */
    CDT_UCX_WORKER_STATS_QUARANTINE_RELEASED = 1u << 1, /*!< quarantine_released */
    CDT_UCX_WORKER_STATS_QUARANTINE_DROPPED = 1u << 2,  /*!< quarantine_dropped */
    CDT_UCX_WORKER_STATS_LANE_SENT = 1u << 3,           /*!< lane_sent */
    CDT_UCX_WORKER_STATS_LANE_RECEIVED = 1u << 4,       /*!< lane_received */
    CDT_UCX_WORKER_STATS_LANE_SPLIT_SENT = 1u << 5,     /*!< lane_split_sent */
    CDT_UCX_WORKER_STATS_LANE_SPLIT_RECEIVED = 1u << 6, /*!< lane_split_received */
};
/*! Every field of cdt_ucx_worker_stats this library knows. */
#define CDT_UCX_WORKER_STATS_ALL 0x7fu
/*! Counters of a worker (cdt_ucx_worker_stats_get). The head buffers of sends over cross-memory
 * attach that ended without success are kept while the peer may still copy the head out of
 * them (docs/TRANSPORT.md §8, "Memory and cost"). */
typedef struct cdt_ucx_worker_stats {
    uint64_t field_mask;          /*!< in: the fields to fill */
    uint64_t quarantined;         /*!< head buffers held now (about 33 KiB each; at most 512) */
    uint64_t quarantine_released; /*!< freed since the worker was made, no reader left */
    uint64_t quarantine_dropped;  /*!< freed at the bound (the oldest), a reader maybe left */
    uint64_t lane_sent;           /*!< objects whose stream this worker packed into a lane whole */
    uint64_t lane_received; /*!< objects whose stream this worker unpacked from a lane whole */
    /*! of lane_sent, the objects whose large regions both processes copied (docs/TRANSPORT.md
     *  §10.3, Regions moved by both cores) */
    uint64_t lane_split_sent;
    /*! of lane_received, the objects whose large regions both processes copied */
    uint64_t lane_split_received;
} cdt_ucx_worker_stats;
/*! cdt_ucx_worker_stats_get() : fill the fields stats->field_mask asks for. Errors:
 *  CDT_ERR_INVALID_ARG (NULL, a mask of no field or of a field this library does not know). */
CDT_API int cdt_ucx_worker_stats_get(cdt_ucx_worker worker, cdt_ucx_worker_stats *stats);
/*! cdt_ucx_worker_handle() : the underlying ucp_worker_h (as void *), for programs that also
 *  use UCX directly. Use it only under the rules of section "Threads" above, i.e. not while
 *  other threads use this worker. */
CDT_API void *cdt_ucx_worker_handle(cdt_ucx_worker worker);

/* ------------------------------------------------------------------------------------------
 * 3. Endpoints
 *
 * Every endpoint uses UCX peer error handling: when the peer exits or the connection breaks,
 * pending sends on the endpoint fail with CDT_ERR_PEER, receives that were part-way through a
 * message fail with CDT_ERR_PEER (docs/TRANSPORT.md, "Failures"), and cdt_ucx_ep_status()
 * returns CDT_ERR_PEER.
 * ---------------------------------------------------------------------------------------- */

/*! Fields of cdt_ucx_listener_params, for its field_mask. */
enum cdt_ucx_listener_params_field {
    CDT_UCX_LISTENER_PARAM_HOST = 1u << 0, /*!< host */
    CDT_UCX_LISTENER_PARAM_PORT = 1u << 1, /*!< port */
};

/*! Options of cdt_ucx_listener_create; the fields named in field_mask are read. May grow at
 *  its end. */
typedef struct cdt_ucx_listener_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_LISTENER_PARAM_*) */
    const char *host;    /*!< IPv4/IPv6 literal or name to bind. Default "0.0.0.0" */
    uint16_t port;       /*!< Default 0: any free port (see cdt_ucx_listener_port) */
} cdt_ucx_listener_params;

/*! cdt_ucx_listener_create() : listen for connections; accept them with
 *  cdt_ucx_listener_accept(). Errors: CDT_ERR_TRANSPORT (e.g. port in use). */
CDT_API int cdt_ucx_listener_create(cdt_ucx_worker worker, const cdt_ucx_listener_params *params,
                                    cdt_ucx_listener *listener);
/*! cdt_ucx_listener_port() : the port actually bound. */
CDT_API int cdt_ucx_listener_port(cdt_ucx_listener listener, uint16_t *port);
/*! cdt_ucx_listener_accept() : progress the worker until a connection request arrives, then
 *  create its endpoint. The first send on it waits until its lanes are wired up (at most
 *  10 s; UCX 1.13 mishandles a rendezvous posted before that over shared memory).
 *  Errors: CDT_ERR_TIMEOUT, CDT_ERR_TRANSPORT. */
CDT_API int cdt_ucx_listener_accept(cdt_ucx_listener listener, int64_t timeout_ms, cdt_ucx_ep *ep);
/*! cdt_ucx_listener_destroy() : stop listening; requests not yet accepted are rejected. A
 *  connection UCX accepted before and whose request comes after crashes UCX's async thread
 *  (UCX 1.13 to 1.22, docs/TRANSPORT.md §8, Listeners): while clients may still be connecting,
 *  leave the listener to cdt_ucx_worker_destroy(), which destroys it last. */
CDT_API void cdt_ucx_listener_destroy(cdt_ucx_listener listener);

/*! cdt_ucx_ep_connect() : connect to a listener at host:port and wait until the connection
 *  is up. Errors: CDT_ERR_PEER (refused or unreachable), CDT_ERR_TIMEOUT, CDT_ERR_TRANSPORT. */
CDT_API int cdt_ucx_ep_connect(cdt_ucx_worker worker, const char *host, uint16_t port,
                               int64_t timeout_ms, cdt_ucx_ep *ep);

/*! Fields of cdt_ucx_connect_params, for its field_mask. */
enum cdt_ucx_connect_params_field {
    CDT_UCX_CONNECT_PARAM_TIMEOUT = 1u << 0, /*!< timeout_ms */
    CDT_UCX_CONNECT_PARAM_FLAGS = 1u << 1,   /*!< flags */
};

/*! Flags of cdt_ucx_connect_params.flags. */
enum cdt_ucx_connect_flags {
    /*! return as soon as the endpoint exists: the connection is made in the background, the
     * first send on the endpoint waits for it (at most 10 s) and reports its failure
     * (CDT_ERR_PEER, CDT_ERR_TIMEOUT), as does cdt_ucx_ep_status */
    CDT_UCX_CONNECT_NO_WAIT = 1u << 0,
};

/*! Options of cdt_ucx_ep_connect_advanced; the fields named in field_mask are read. May grow at
 * its end. */
typedef struct cdt_ucx_connect_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_CONNECT_PARAM_*) */
    /*! CDT_UCX_CONNECT_PARAM_TIMEOUT: how long to wait for the connection (ms; negative:
     * CDT_UCX_INFINITE). Default: 10 s. */
    int64_t timeout_ms;
    /*! CDT_UCX_CONNECT_PARAM_FLAGS: cdt_ucx_connect_flags. Default: 0. */
    uint64_t flags;
} cdt_ucx_connect_params;

/*! cdt_ucx_ep_connect_advanced() : cdt_ucx_ep_connect with options (params may be NULL).
 *  Errors: as cdt_ucx_ep_connect; CDT_ERR_INVALID_ARG also for a field_mask bit or flag this
 *  version does not know. With CDT_UCX_CONNECT_NO_WAIT a refused or unreachable peer is
 *  reported by the first send instead. */
CDT_API int cdt_ucx_ep_connect_advanced(cdt_ucx_worker worker, const char *host, uint16_t port,
                                        const cdt_ucx_connect_params *params, cdt_ucx_ep *ep);
/*! cdt_ucx_ep_create_from_address() : an endpoint to the worker whose address (from
 *  cdt_ucx_worker_address) was exchanged out of band. Does not wait for the peer. */
CDT_API int cdt_ucx_ep_create_from_address(cdt_ucx_worker worker, const void *address,
                                           size_t length, cdt_ucx_ep *ep);
/*! cdt_ucx_ep_status() : CDT_SUCCESS while usable, CDT_ERR_PEER after a peer failure. */
CDT_API int cdt_ucx_ep_status(cdt_ucx_ep ep);
/*! cdt_ucx_ep_describe() : one line that names the endpoint's peer ("host:port" as connected
 *  to or as the accepted connection came from), the UCX version in use and the endpoint's lanes,
 *  for an error message about it, e.g. "127.0.0.1:13337 (UCX 1.13.1; lanes: am=tcp/lo
 *  rma=cma/memory)". After a failure UCX reports placeholder lanes: the line then names the
 *  lanes the endpoint had at its first send ("... (before it failed)"), so that a dead peer can
 *  be told from a configuration problem (docs/TRANSPORT.md §6). Errors: CDT_ERR_INVALID_ARG
 *  (NULL, or size 0), CDT_ERR_TRUNCATED (buf holds the start of the line). */
CDT_API int cdt_ucx_ep_describe(cdt_ucx_ep ep, char *buf, size_t size);
/*! cdt_ucx_last_error() : the detail of the calling thread's last failed cdt_ucx_ep_connect,
 *  cdt_ucx_ep_connect_advanced, cdt_ucx_ep_create_from_address, cdt_ucx_listener_accept,
 *  cdt_ucx_isend, cdt_ucx_isend_advanced or cdt_ucx_send (as errno: kept until the next
 *  failure of one of them in this thread; "" before any): what failed, the peer, the UCX
 *  version, the lanes and the status, with a hint where one applies, e.g. "connect to
 *  127.0.0.1:13337 (UCX 1.13.1; lanes: none (no connection)): CDT_ERR_PEER; the peer is gone
 *  or unreachable, or a listener on another UCX minor version refuses the connection ...", or
 *  at the listener "accept from 127.0.0.1:41234: refused: the peer runs UCX 1.22.0 and this
 *  process UCX 1.13.1; peers must use the same UCX minor version ...". A send that fails
 *  later, at its request's completion, is described by cdt_ucx_ep_describe. Errors:
 *  CDT_ERR_INVALID_ARG (NULL, or size 0), CDT_ERR_TRUNCATED. */
CDT_API int cdt_ucx_last_error(char *buf, size_t size);
/*! cdt_ucx_ep_id() : the endpoint's id, random, never 0: written in the head of every
 *  split-mode object sent on it, and what a receiver's cdt_ucx_recv_info.sender names
 *  (docs/TRANSPORT.md §4, Senders). 0 for NULL. */
CDT_API uint64_t cdt_ucx_ep_id(cdt_ucx_ep ep);
/*! cdt_ucx_ep_peer_id() : the id of the peer's endpoint at the other end (its cdt_ucx_ep_id),
 *  once the peer sent its first object on it; 0 before, and for NULL. */
CDT_API uint64_t cdt_ucx_ep_peer_id(cdt_ucx_ep ep);
/*! cdt_ucx_ep_handle() : the underlying ucp_ep_h (as void *). Same rules as worker_handle. */
CDT_API void *cdt_ucx_ep_handle(cdt_ucx_ep ep);
/*! cdt_ucx_ep_transports() : the UCX transports the endpoint's lanes use now, as UCX reports
 *  them (ucp_ep_print_info), as one NUL-terminated line of "role=transport/device" words,
 *  e.g. "am=sysv/memory rma=cma/memory" for a local peer over shared memory, or
 *  "am=tcp/lo rma=tcp/lo" over loopback TCP. `am` is the lane that carries eager messages,
 *  `rma` the lanes of rendezvous transfers (several: several words). An endpoint made with
 *  a listener or from an address may still be wiring up: send one message first for the
 *  final lanes. Errors: CDT_ERR_INVALID_ARG (NULL, or size 0), CDT_ERR_TRUNCATED (buf too
 *  small: it holds the start of the line), CDT_ERR_NO_MEMORY, CDT_ERR_TRANSPORT. */
CDT_API int cdt_ucx_ep_transports(cdt_ucx_ep ep, char *buf, size_t size);
/*! cdt_ucx_ep_protocol() : how objects sent on ep travel: CDT_UCX_PROTOCOL_SINGLE or
 *  CDT_UCX_PROTOCOL_SPLIT (the worker's protocol; for CDT_UCX_PROTOCOL_AUTO the choice made
 *  from the endpoint's transports, fixed at its first send once its lanes are known; with
 *  AUTO, objects with large regions go split on a single-mode endpoint too).
 *  Errors: CDT_ERR_INVALID_ARG (NULL), CDT_ERR_PEER (the endpoint failed). */
CDT_API int cdt_ucx_ep_protocol(cdt_ucx_ep ep, cdt_ucx_protocol *protocol);
/*! cdt_ucx_ep_close() : flush what was sent (at most timeout_ms, then force) and close.
 *  Returns CDT_SUCCESS, or the error that made it close by force. ep is freed either way.
 *  A flush ends once every message is announced, so a send whose receive was never posted
 *  can outlive it; the close is then forced. Sends still pending when it closes complete with
 *  CDT_ERR_CANCELED (or CDT_ERR_PEER when the peer had failed first), and their objects may be
 *  freed, except over cross-memory attach (CDT_UCX_SHM_FULL, `rma=cma`): there the request
 *  completes when UCX lets go of it, and a live receiver that matches the send later may
 *  still copy the object's large regions out of this process's memory, so the object stays
 *  valid while the receiving process lives unless the request completed with CDT_SUCCESS
 *  (cdt_ucx_send has the whole rule); receives whose data was coming from it fail with
 *  CDT_ERR_PEER. */
CDT_API int cdt_ucx_ep_close(cdt_ucx_ep ep, int64_t timeout_ms);

/* ------------------------------------------------------------------------------------------
 * 4. Send and receive
 *
 * One call sends the object (buf, count, type) as one message: the receiver matches it once
 * and gets the whole object. The send side never copies a region of zcopy_threshold bytes or
 * more (except through a lane, which copies regions by default: docs/TRANSPORT.md §10.3); the
 * receive side receives such a region straight into the memory the receiving type
 * names (or that a prepare callback allocated). buf and every region must stay unchanged
 * until the send completes; the receive object must not be touched until the receive does.
 * ---------------------------------------------------------------------------------------- */

/*! Fields of cdt_ucx_recv_info, for its field_mask. */
enum cdt_ucx_recv_info_field {
    CDT_UCX_RECV_INFO_TAG = 1u << 0,          /*!< tag */
    CDT_UCX_RECV_INFO_FRAME_SIZE = 1u << 1,   /*!< frame_size */
    CDT_UCX_RECV_INFO_PACKED_SIZE = 1u << 2,  /*!< packed_size */
    CDT_UCX_RECV_INFO_REGION_COUNT = 1u << 3, /*!< region_count */
    CDT_UCX_RECV_INFO_REGION_BYTES = 1u << 4, /*!< region_bytes */
    CDT_UCX_RECV_INFO_SENDER = 1u << 5,       /*!< sender */
    CDT_UCX_RECV_INFO_FAILURE = 1u << 6,      /*!< failure and failed_by */
};
/*! Every field this header declares (kept by a program compiled with it, as
 * CDT_FRAME_INFO_ALL). */
#define CDT_UCX_RECV_INFO_ALL 0x7fu
/*! How a receive that failed with CDT_ERR_PEER was ended (cdt_ucx_recv_info.failure), so that a
 *  program can tell the failure of the object's own sender from anything else
 *  (docs/TRANSPORT.md §6, Isolation). */
enum cdt_ucx_recv_failure {
    CDT_UCX_RECV_FAILURE_NONE = 0, /*!< not ended by a peer failure */
    /*! this process's endpoint to the object's sender failed: the sender died, its connection
     *  broke (keepalive), or the sender closed that endpoint. failed_by is that endpoint's
     *  peer id, which is the object's sender. */
    CDT_UCX_RECV_FAILURE_ENDPOINT = 1,
    /*! UCX aborted one of the object's messages. failed_by is the sender's id when this
     *  process's endpoint to the sender had failed by then, else 0 (the endpoint was closed, or
     *  UCX gave no reason). */
    CDT_UCX_RECV_FAILURE_MESSAGE = 2,
};

/*! What a completed receive matched. An output struct that can grow, as cdt_frame_info: set
 * field_mask to the CDT_UCX_RECV_INFO_* bits of the fields to fill (CDT_UCX_RECV_INFO_ALL for
 * all); only those are written. A mask of 0 or with an unknown bit is CDT_ERR_INVALID_ARG. */
typedef struct cdt_ucx_recv_info {
    uint64_t field_mask;    /*!< in: the fields to fill */
    cdt_ucx_tag tag;        /*!< the sender's tag */
    cdt_count frame_size;   /*!< bytes of the frame (docs/FORMAT.md) */
    cdt_count packed_size;  /*!< bytes of the packed stream */
    cdt_count region_count; /*!< regions in the frame */
    cdt_count region_bytes; /*!< sum of their lengths */
    /*! split mode: the id of the endpoint the object was sent on (its cdt_ucx_ep_id() in the
     *  sender; on the receiving side the cdt_ucx_ep_peer_id() of the endpoint it came
     *  through); 0 in single mode. Also filled for a receive that failed after its head
     *  arrived. */
    uint64_t sender;
    /*! a receive that failed with CDT_ERR_PEER: the peer id of the endpoint whose failure
     *  ended it (0 when not known); 0 otherwise */
    uint64_t failed_by;
    int failure; /*!< a receive that failed with CDT_ERR_PEER: how (enum cdt_ucx_recv_failure);
                  *   CDT_UCX_RECV_FAILURE_NONE otherwise */
} cdt_ucx_recv_info;

/*! Receive into memory sized from the frame header: called once the header was validated and
 * before any object byte is written. It may read every length through cdt_decoder_info /
 * cdt_decoder_region_info to allocate first (an adapter such as cdt_sobj_recv_prepare does
 * that), and then must bind the decoder with cdt_decoder_bind. A non-zero return fails the receive
 * with that code (nothing more is written). The decoder is only valid during the call. */
typedef int(cdt_ucx_recv_prepare_func_t)(void *arg, cdt_decoder decoder);

/*! Fields of cdt_ucx_recv_params, for its field_mask. */
enum cdt_ucx_recv_params_field {
    CDT_UCX_RECV_PARAM_PREPARE = 1u << 0,         /*!< prepare and prepare_arg */
    CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES = 1u << 1, /*!< max_frame_bytes */
    CDT_UCX_RECV_PARAM_MAX_REGIONS = 1u << 2,     /*!< max_regions */
    CDT_UCX_RECV_PARAM_REST_TIMEOUT = 1u << 3,    /*!< rest_timeout_ms */
};

/*! Default of rest_timeout_ms: 60 s. */
#define CDT_UCX_DEFAULT_REST_TIMEOUT_MS ((int64_t)60000)

/*! Limits for peers that are not trusted (docs/SECURITY.md): a message that announces more
 * fails the receive with CDT_ERR_LIMIT, decided from the head message's frame header before
 * anything is allocated or sized for it (the buffer of the rest of the inline stream, the
 * memory a prepare callback allocates) and before any byte is written to the receive's memory.
 * The object's other parts are discarded when its whole frame header came in the head message
 * (its sender's send then completes); otherwise they are not received and that send ends with
 * its own timeout or with its endpoint. */
typedef struct cdt_ucx_recv_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_RECV_PARAM_*) */
    /*! When set, buf/count/type of the receive are ignored (pass NULL, 0, NULL) and `prepare`
     * binds the decoder. Default: bind to the receive's buf, count, type. */
    cdt_ucx_recv_prepare_func_t *prepare;
    void *prepare_arg; /*!< the first argument of prepare */
    /*! CDT_UCX_RECV_PARAM_MAX_FRAME_BYTES: the largest frame_size accepted (header, packed
     * stream, padding and regions; >= 0). It bounds what the receive allocates for the
     * message itself (at most the frame's inline stream) and what a prepare callback that
     * allocates from the header is asked for: cdt_sobj_recv_prepare allocates at most about
     * frame_size plus 64 bytes per part of alignment (and the buffers array, 24 bytes per
     * region). Default: no limit. */
    cdt_count max_frame_bytes;
    /*! CDT_UCX_RECV_PARAM_MAX_REGIONS: the largest region count accepted (>= 0). Default: no
     * limit (the frame header bounds it by its own size). */
    cdt_count max_regions;
    /*! CDT_UCX_RECV_PARAM_REST_TIMEOUT: once the head message matched, how long the receive
     * waits for the rest of the object (tail and regions) in ms, CDT_UCX_INFINITE (any
     * negative value) for no bound. Past it the receive fails with CDT_ERR_TIMEOUT (its
     * unmatched parts are canceled) even when the caller waits longer, so a peer that sends a
     * head and then nothing holds the receive and its memory no longer than this. The same
     * time bounds the zero-byte receives that discard the parts of an object that failed.
     * Checked while the worker is progressed (test, wait, worker_progress, blocking calls).
     * Default CDT_UCX_DEFAULT_REST_TIMEOUT_MS. */
    int64_t rest_timeout_ms;
} cdt_ucx_recv_params;

/*! cdt_ucx_isend() : start sending (buf, count, type) with `tag` (<= CDT_UCX_TAG_MAX).
 *  *request must be completed (test/wait) and freed. The object is read until the send
 *  completes (its large regions in split mode, all of it in single mode, where a custom type's
 *  pack callback runs inside the calls that progress the worker): leave it unchanged until
 *  then. When this returns an error no message was sent. Errors: as cdt_frame_encode,
 *  CDT_ERR_INVALID_ARG, CDT_ERR_PEER, CDT_ERR_TRANSPORT. */
CDT_API int cdt_ucx_isend(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type,
                          cdt_ucx_tag tag, cdt_ucx_request *request);

/*! Fields of cdt_ucx_send_params, for its field_mask. */
enum cdt_ucx_send_params_field {
    CDT_UCX_SEND_PARAM_PROTOCOL = 1u << 0,        /*!< protocol */
    CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD = 1u << 1, /*!< zcopy_threshold */
};

/*! Options of one send (cdt_ucx_isend_advanced); the fields named in field_mask are read, the
 * others keep the worker's settings. May grow at its end. */
typedef struct cdt_ucx_send_params {
    uint64_t field_mask; /*!< bits of the fields that are set (CDT_UCX_SEND_PARAM_*) */
    /*! CDT_UCX_SEND_PARAM_PROTOCOL: how this object travels (cdt_ucx_protocol): SINGLE or SPLIT
     * whatever the endpoint's transport, AUTO or AUTO_SINGLE as for a worker. Default: the
     * worker's protocol. */
    cdt_ucx_protocol protocol;
    /*! CDT_UCX_SEND_PARAM_ZCOPY_THRESHOLD: in split mode, regions of at least this many bytes
     * (>= 1) travel as their own zero-copy message; the receiver learns it from the message.
     * It holds on an endpoint with a lane too. Default: the worker's zcopy_threshold (on a
     * lane, the lane's: docs/TRANSPORT.md §10.3, Regions). */
    cdt_count zcopy_threshold;
} cdt_ucx_send_params;

/*! cdt_ucx_isend_advanced() : cdt_ucx_isend with per-send options (params may be NULL: the
 *  worker's settings). Errors: as cdt_ucx_isend; CDT_ERR_INVALID_ARG also for a field_mask bit
 *  this version does not know, an unknown protocol or a threshold below 1. */
CDT_API int cdt_ucx_isend_advanced(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type,
                                   cdt_ucx_tag tag, const cdt_ucx_send_params *params,
                                   cdt_ucx_request *request);
/*! cdt_ucx_send() : isend + wait + free. On CDT_ERR_TIMEOUT the send is abandoned but may
 *  still be moving (a receive posted later still matches it); the worker keeps its request
 *  until UCX lets go of it and frees it then. What may still read the object, and so when
 *  the caller may free, change or reuse it (docs/TRANSPORT.md §6, "A send that timed out"):
 *  - no cross-memory attach (CDT_UCX_SHM_OFF, CDT_UCX_SHM_COPY, or any endpoint whose
 *    cdt_ucx_ep_transports() shows no `cma`): only this process reads it (UCX sending its
 *    large regions, or in single mode the type's pack callback inside progress), and only
 *    while the send is live. cdt_ucx_ep_close ends the send: once it returns the object may
 *    be freed; so may it once cdt_ucx_ep_status reports CDT_ERR_PEER, or after
 *    cdt_ucx_worker_destroy. Until then keep it unchanged.
 *  - cross-memory attach (CDT_UCX_SHM_FULL to a local peer, `rma=cma`): a receiver that
 *    matches the send later copies the object's large regions (zcopy_threshold bytes or more,
 *    split mode: AUTO's choice for such objects) straight out of this process's memory, and
 *    neither cdt_ucx_ep_close, the endpoint's failure nor cdt_ucx_worker_destroy can revoke
 *    that (UCX 1.13). The object must stay valid and unchanged while the receiving process
 *    lives. A program that must reuse the memory sends with cdt_ucx_isend and keeps the
 *    request: the object is free once the request completed with CDT_SUCCESS (the receiver
 *    has it), or once the receiving process has exited. */
CDT_API int cdt_ucx_send(cdt_ucx_ep ep, const void *buf, cdt_count count, cdt_type type,
                         cdt_ucx_tag tag, int64_t timeout_ms);

/*! cdt_ucx_irecv() : post a receive of one object whose tag matches (tag, tag_mask). Receives
 *  match in the order they were posted. params may be NULL. The receive holds its own
 *  reference to `type`: the caller may free its handle at once.
 *  Errors: CDT_ERR_INVALID_ARG (also a negative limit), CDT_ERR_NO_MEMORY, CDT_ERR_TRANSPORT.
 *  The message's own errors (malformed frame, mismatch, truncation, CDT_ERR_LIMIT,
 *  CDT_ERR_TIMEOUT past rest_timeout_ms, peer failure) are the request's status. */
CDT_API int cdt_ucx_irecv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type,
                          cdt_ucx_tag tag, cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params,
                          cdt_ucx_request *request);
/*! cdt_ucx_recv() : irecv + wait + free; info may be NULL (else its field_mask says what to
 *  fill; an invalid mask is CDT_ERR_INVALID_ARG before anything is posted). When timeout_ms passes,
 * the receive is canceled (cdt_ucx_request_cancel) and CDT_ERR_TIMEOUT returned only once UCX can
 * no longer write into the receive's memory: in split mode, when a region's data is already moving,
 * the call waits for that transfer to end (or to fail with its peer); a single-mode message, and a
 * message whose data has not started to come, write nothing more and do not make it wait. The
 * memory may then hold part of the object. If the object completed meanwhile, the result is
 * CDT_SUCCESS. A receive that fails after its message matched still fills info->tag when asked
 * (as cdt_ucx_request_recv_info does). */
CDT_API int cdt_ucx_recv(cdt_ucx_worker worker, void *buf, cdt_count count, cdt_type type,
                         cdt_ucx_tag tag, cdt_ucx_tag tag_mask, const cdt_ucx_recv_params *params,
                         cdt_ucx_recv_info *info, int64_t timeout_ms);

/* ------------------------------------------------------------------------------------------
 * 5. Requests
 * ---------------------------------------------------------------------------------------- */

/*! cdt_ucx_request_test() : progress the worker once; @return CDT_INPROGRESS, or the final
 *  status of the request (CDT_SUCCESS or an error). */
CDT_API int cdt_ucx_request_test(cdt_ucx_request request);
/*! cdt_ucx_request_wait() : progress until the request completes or timeout_ms passes;
 *  @return its final status, or CDT_ERR_TIMEOUT (the request is still pending). */
CDT_API int cdt_ucx_request_wait(cdt_ucx_request request, int64_t timeout_ms);
/*! cdt_ucx_request_cancel() : abandon a receive, matched or not; it then completes with
 *  CDT_ERR_CANCELED (or its own result, if that came first). Parts of the message that have
 *  not been matched are canceled and discarded when they arrive (bounded by rest_timeout_ms);
 *  in split mode a region whose data is already moving into the receive's memory finishes
 *  first: the request completes only when UCX can no longer write into that memory, so wait
 *  for it before freeing or reusing the memory (a single-mode message completes at once: the
 *  rest of it is dropped as it arrives). @return CDT_SUCCESS (also when the request had
 *  completed already), or CDT_ERR_UNSUPPORTED for sends (a posted send completes or fails
 *  with its endpoint). */
CDT_API int cdt_ucx_request_cancel(cdt_ucx_request request);
/*! cdt_ucx_request_recv_info() : what a successfully completed receive matched: the fields
 *  info->field_mask asks for. Errors: CDT_ERR_INVALID_ARG (NULL, a send, an invalid mask),
 *  CDT_INPROGRESS (not completed), or the receive's own error; a receive that failed after its
 *  message matched still fills info->tag, info->sender and (CDT_UCX_RECV_INFO_FAILURE)
 *  info->failure and info->failed_by, when asked for (no other field), so that a program can
 *  tell whose object failed and what failed it (docs/TRANSPORT.md §6). */
CDT_API int cdt_ucx_request_recv_info(cdt_ucx_request request, cdt_ucx_recv_info *info);
/*! cdt_ucx_request_free() : free a completed request. A pending request: CDT_ERR_BUSY (cancel
 *  or wait first). NULL: no-op. A receive that completed while UCX still delivers the rest of
 *  its message (into nothing) is handed to the worker, which frees it when UCX is done. */
CDT_API int cdt_ucx_request_free(cdt_ucx_request request);

#ifdef __cplusplus
}
#endif
#endif /*!< CDT_UCX_H */
