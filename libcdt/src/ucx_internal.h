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

#include <pthread.h>
#include <stdbool.h>
#include <ucp/api/ucp.h>

#define CDT__UCX_HIDDEN __attribute__((visibility("hidden")))

/* ---- wire constants (docs/TRANSPORT.md) ---- */
#define CDT__UCX_PRIVATE_BIT (UINT64_C(1) << 63)
#define CDT__UCX_INDEX_BITS 20
#define CDT__UCX_SEQ_BITS 20
#define CDT__UCX_INDEX_MASK ((UINT64_C(1) << CDT__UCX_INDEX_BITS) - 1)
#define CDT__UCX_SEQ_MASK ((UINT64_C(1) << CDT__UCX_SEQ_BITS) - 1)
#define CDT__UCX_KEY_BITS (CDT_UCX_SENDER_ID_BITS + CDT__UCX_SEQ_BITS) /* 43 */
#define CDT__UCX_KEY_MASK ((UINT64_C(1) << CDT__UCX_KEY_BITS) - 1)
/* index of the tail message; separate regions have indices below it */
#define CDT__UCX_TAIL_INDEX CDT__UCX_INDEX_MASK
/* the head message never exceeds this (prefix included): receivers post this much */
#define CDT__UCX_HEAD_MAX 32768
#define CDT__UCX_PREFIX_SIZE 32
#define CDT__UCX_PREFIX_MAGIC UINT32_C(0x55544443) /* "CDTU" little-endian */
#define CDT__UCX_PREFIX_VERSION 1
#define CDT__UCX_DEFAULT_ZCOPY_THRESHOLD 65536

static inline uint64_t cdt__ucx_private_tag(uint64_t key, uint64_t index)
{
    return CDT__UCX_PRIVATE_BIT | (key << CDT__UCX_INDEX_BITS) | index;
}

/* a region may travel as its own message */
static inline bool cdt__ucx_separate(cdt_count len, cdt_count threshold, cdt_count index)
{
    return len >= threshold && index < (cdt_count)CDT__UCX_TAIL_INDEX;
}

struct cdt_ucx_context_s {
    ucp_context_h ucp;
};

typedef struct cdt__ucx_req_list {
    struct cdt_ucx_request_s *head;
} cdt__ucx_req_list;

/* staging buffers a worker keeps for reuse (ucx_bufcache.c) */
#define CDT__UCX_CACHE_SLOTS 64
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
    uint64_t seq;
    cdt_count zcopy_threshold;
    struct cdt_ucx_ep_s *eps;             /* open endpoints */
    struct cdt_ucx_listener_s *listeners; /* open listeners */
    struct cdt_ucx_request_s *body_recvs; /* receives between head and completion */
    pthread_mutex_t cache_lock;           /* the buffer cache only */
    size_t cache_limit, cache_bytes;
    int cache_n;
    cdt__ucx_cached_buf cache[CDT__UCX_CACHE_SLOTS];
};

struct cdt_ucx_ep_s {
    cdt_ucx_worker w;
    ucp_ep_h ucp;
    int status;   /* CDT_SUCCESS or CDT_ERR_PEER */
    bool closing; /* closed by the user, UCX's close still under way: freed with the worker */
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

struct cdt_ucx_request_s {
    cdt_ucx_worker w;
    bool is_send;
    bool done;
    bool matched;    /* recv: head arrived */
    bool in_body;    /* recv: in w->body_recvs */
    int status;      /* first error, else CDT_SUCCESS */
    int outstanding; /* pending UCX operations */
    cdt__ucx_sub head_sub, tail_sub;
    cdt__ucx_sub *subs; /* regions */
    cdt_count nsubs;
    /* send */
    cdt_frame frame;
    unsigned char *bounce; /* prefix + inline stream when it must be materialised */
    size_t bounce_len;
    /* recv */
    void *buf;
    cdt_count count;
    cdt_type type;
    cdt_ucx_recv_prepare_func_t *prepare;
    void *prepare_arg;
    uint64_t key;
    cdt_count threshold;
    unsigned char *stream; /* inline stream when a tail was received */
    cdt_count stream_len;
    cdt_decoder dec;
    cdt_ucx_recv_info info;
    struct cdt_ucx_request_s *next, *prev; /* w->body_recvs */
    /* recv: the head message lands here; send: the head message is built here */
    _Alignas(16) unsigned char head[CDT__UCX_HEAD_MAX];
};

/* ucx_context.c */
CDT__UCX_HIDDEN int cdt__ucx_status(ucs_status_t st);
CDT__UCX_HIDDEN int64_t cdt__ucx_now_ms(void);
/* ucx_recv.c: fail receives part-way through a message after a peer failure */
CDT__UCX_HIDDEN void cdt__ucx_fail_body_recvs(cdt_ucx_worker w, int status);
/* ucx_request.c */
CDT__UCX_HIDDEN cdt_ucx_request cdt__ucx_request_new(cdt_ucx_worker w, bool is_send);
CDT__UCX_HIDDEN void cdt__ucx_request_set_error(cdt_ucx_request r, int status);
/* ucx_bufcache.c: staging memory (bytes as asked; give back the same count) */
CDT__UCX_HIDDEN void *cdt__ucx_buf_get(cdt_ucx_worker w, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_buf_put(cdt_ucx_worker w, void *p, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_buf_cache_clear(cdt_ucx_worker w);
CDT__UCX_HIDDEN void *cdt__ucx_frame_alloc(void *arg, size_t bytes);
CDT__UCX_HIDDEN void cdt__ucx_frame_release(void *arg, void *p, size_t bytes);
/* ucx_endpoint.c */
CDT__UCX_HIDDEN void cdt__ucx_ep_force_close_all(cdt_ucx_worker w);

static inline void cdt__ucx_put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint64_t cdt__ucx_get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
