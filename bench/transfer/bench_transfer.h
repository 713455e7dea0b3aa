/*
 * bench_transfer.h - what the files of bench_transfer share: the two processes' state (env),
 * the objects and methods measured, the states of a generic-datatype message, a message's
 * handle, and the functions that cross files.
 */
#ifndef CDT_BENCH_TRANSFER_H
#define CDT_BENCH_TRANSFER_H

#include "seed_types.h"

#include <cdt_ucx.h>
#include <ucp/api/ucp.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)
#define OK(expr)                                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != CDT_SUCCESS)                                                                    \
            DIE("%s:%d: %s: %s", __FILE__, __LINE__, #expr, cdt_err_name(rc_));                    \
    } while (0)

typedef struct env {
    cdt_ucx_worker w;
    cdt_ucx_ep ep;
    ucp_worker_h uw;
    ucp_ep_h uep;
    ucp_ep_h uep_nopeer; /* same peer, no peer error handling */
    ucp_datatype_t gen_dt;
    int server;
    int quick;
} env;

/* ---- objects ---- */
enum kase { K_BYTES, K_SIMPLE, K_NOGAP, K_STRUCTVEC, K_DOUBLEVEC };
enum method { M_RAW, M_RAW_NOPEER, M_LIBCDT, M_MANUAL, M_IOV, M_GENERIC, M_COUNT };

typedef struct obj {
    enum kase k;
    cdt_count size; /* data bytes of the object */
    cdt_count count;
    void *mem;         /* struct arrays / bytes */
    double_vec dv;     /* send object, or shape of the expected object */
    double_vec *dv_in; /* receive targets (one per message of a window; dv_target) */
    /* double_vec: every message is received into the arrays of one double_vec (the first
     * message allocates them), as raw receives every message into one buffer and the struct
     * cases every object into one array, not into an empty double_vec */
    int reuse;
    /* struct_simple: sent with its gap declared padding (cdt_type_padded), 24 bytes a record */
    int padded;
    int window;
    unsigned char *pack; /* raw's bytes (double_vec) */
    /* manual_pack's buffers, one per message of a window: a hand-written sender cannot reuse
     * a buffer whose send is in flight, nor a receiver one it is receiving into */
    unsigned char *manual;
    cdt_count pack_len;
    ucp_dt_iov_t *iov;
    size_t niov;
    unsigned char *fields; /* packed fields for the iov method */
} obj;

/* the double_vec a message of slot `slot` is received into: its own (allocated by the receive)
 * or, with reuse, the one every message of the window is received into */
static inline double_vec *dv_target(obj *o, int slot)
{
    return &o->dv_in[o->reuse ? 0 : slot];
}

/* ---- one generic-datatype message (ucx_generic) ----
 * Send: the buffer handed to UCX is a gen_send; pack copies frame bytes at any offset.
 * Receive: the buffer is a gen_recv; the first bytes are the frame header, from which the
 * decoder is made and bound; every later piece goes to cdt_decoder_write at its offset. */
typedef struct gen_send {
    int is_recv; /* 0: the callbacks tell the two states apart by this first field */
    cdt_frame f; /* objects with regions: the frame */
    cdt_op op;   /* objects without: the packed stream straight from the object */
    cdt_count size;
} gen_send;

typedef struct gen_recv {
    int is_recv; /* 1 */
    void *buf;   /* bind target */
    cdt_count count;
    cdt_type type;
    cdt_decoder d;
    cdt_op op;           /* objects without regions: unpack straight into the object */
    unsigned char *head; /* header bytes before the decoder exists (when split over pieces) */
    cdt_count have, cap;
} gen_recv;

/* ---- one message, any method ---- */
typedef struct handle {
    void *ucx;
    cdt_ucx_request req;
    int unpack_slot; /* manual / iov receive: unpack after completion (-1: nothing) */
    gen_send *gs;    /* ucx_generic */
    gen_recv *gr;
} handle;

/* transfer_timing.c: the clock, the 1-byte acknowledgement, latency and bandwidth of a
 * method on an object */
double now(void);
void ack(env *e, int send);
double latency_us(env *e, obj *o, enum method m, int iters);
/* --lat-median: latency_us gives the median round trip's half, not the mean's */
extern int lat_median;
extern int rewrite_before_send; /* --rewrite */
double bandwidth_mbs(env *e, obj *o, enum method m, int windows);

/* transfer_objects.c: the objects of each case, and their hand-written pack and unpack */
cdt_count elem_size(enum kase k);
void obj_make(obj *o, enum kase k, cdt_count target, cdt_count sub, int window);
void obj_free(obj *o);
cdt_type obj_type(const obj *o);
void pack_fields(const void *mem, cdt_count count, cdt_count stride, unsigned char *dst);
void unpack_fields(void *mem, cdt_count count, cdt_count stride, const unsigned char *src);
void manual_pack(obj *o, int slot);
void manual_unpack(obj *o, int slot);

/* transfer_generic.c: the callbacks of the ucx_generic method's UCX datatype */
extern ucp_generic_dt_ops_t gen_ops;

/* transfer_methods.c: raw UCX sends and receives; one message sent, received and waited for
 * by any method */
void *raw_send(env *e, const void *buf, size_t len, uint64_t tag, ucp_datatype_t dt);
void *raw_recv(env *e, void *buf, size_t len, uint64_t tag, ucp_datatype_t dt);
void raw_wait(env *e, void *q);
handle do_send(env *e, obj *o, enum method m, uint64_t tag, int slot);
handle do_recv(env *e, obj *o, enum method m, uint64_t tag, int slot);
void do_wait(env *e, obj *o, enum method m, handle *h);

#endif
