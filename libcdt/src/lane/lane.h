/*
 * lane.h - the lane: a shared-memory segment that one producer process packs into and one
 * consumer process unpacks from (docs/TRANSPORT.md §10). This component knows nothing of UCX,
 * frames or types: it owns the segment (a sealed memfd, mapped by the peer through
 * /proc/<pid>/fd, watched through a pidfd), its two rings (grants from the consumer, stream
 * bytes from the producer) and the bounds that keep a hostile peer from reaching past its own
 * object. Every value read from the segment is checked each time it is read; each side keeps
 * its own copy of what it writes and never reads it back.
 *
 * Threads: a lane is used by one thread at a time (the worker's mutex); the peer is another
 * process.
 */
#ifndef CDT_LANE_H
#define CDT_LANE_H

#include "cdt.h"

#include <stddef.h>
#include <stdint.h>

#define CDT__LANE_HIDDEN __attribute__((visibility("hidden")))

/* ---- the segment's layout (docs/TRANSPORT.md §10.1) ---- */
#define CDT__LANE_MAGIC UINT32_C(0x4C544443) /* "CDTL" little-endian */
#define CDT__LANE_VERSION 1
#define CDT__LANE_NONCE_SIZE 16
#define CDT__LANE_OFF_MAGIC 0
#define CDT__LANE_OFF_VERSION 4
#define CDT__LANE_OFF_NONCE 8
#define CDT__LANE_OFF_RING_BYTES 24
#define CDT__LANE_OFF_GRANT_SLOTS 32
#define CDT__LANE_OFF_FRAG_BYTES 36
#define CDT__LANE_OFF_PROD_POS 64
#define CDT__LANE_OFF_GRANTS_TAKEN 72
#define CDT__LANE_OFF_CONS_POS 128
#define CDT__LANE_OFF_GRANTS_POSTED 136
#define CDT__LANE_OFF_CONSUMER_PID 144
#define CDT__LANE_OFF_ATTACHED 148
#define CDT__LANE_OFF_CONSUMER_FEATURES 152
/* 1 + the CPU each side last progressed on, 0 not known: hints for the waits (§10.3, Waiting),
 * in the lines of each side's positions; both lane versions (an earlier release leaves 0) */
#define CDT__LANE_OFF_PROD_CPU 88
#define CDT__LANE_OFF_CONS_CPU 172
/* the split (docs/TRANSPORT.md §10.3, Regions moved by both cores): the address of 8 bytes of
 * each side's own memory that the peer probes with process_vm_readv / process_vm_writev, 0 none */
#define CDT__LANE_OFF_PROD_PROBE 96
#define CDT__LANE_OFF_CONS_PROBE 176
#define CDT__LANE_OFF_GRANTS 192
#define CDT__LANE_GRANT_SIZE 16
/* lane version 2 (docs/TRANSPORT.md §10.6): the head ring after the data ring */
#define CDT__LANE_VERSION_HEADS 2
#define CDT__LANE_OFF_HEAD_RING_BYTES 40
#define CDT__LANE_OFF_DOORBELL_FD 44
#define CDT__LANE_OFF_HEADS_POS 80
#define CDT__LANE_OFF_HEADS_CONS 160
#define CDT__LANE_OFF_ASLEEP 168
/* consumer_features: what the consumer takes beyond lane version 1's first release. HEADERS:
 * LANE heads whose frame header continues in the lane (docs/TRANSPORT.md §10.3, Headers through
 * the lane). A consumer of an earlier release leaves the word zero (the memfd starts zeroed). */
#define CDT__LANE_FEATURE_HEADERS 1u
/* HEADS: the consumer takes heads through the head ring of a version 2 segment (§10.6); asked
 * for by the transport at attach (cdt__lane_attach_features) where CDT_UCX_LANE_HEADS is on */
#define CDT__LANE_FEATURE_HEADS 2u
/* LARGE: the consumer takes large records, whole head messages above CDT__LANE_HEAD_MAX up to
 * cdt__lane_head_bound (§10.6, Large records); asked for with HEADS where CDT_UCX_LANE_LARGE is
 * on */
#define CDT__LANE_FEATURE_LARGE 4u
/* RING_COMMIT: the consumer takes a LANE object's commit as an 8-byte word in the data ring
 * right after its stream, when the object has no large region (§10.3, Commit in the ring); asked
 * for by the transport at attach, on either lane version */
#define CDT__LANE_FEATURE_RING_COMMIT 8u
/* SPLIT: the consumer takes SPLIT heads, whose large regions both processes copy with
 * cross-memory attach (§10.3, Regions moved by both cores); set at attach only where the
 * consumer could read the producer's probe word */
#define CDT__LANE_FEATURE_SPLIT 16u
#define CDT__LANE_FEATURES CDT__LANE_FEATURE_HEADERS

/* ---- sizes a segment may have: anything else in an offer or a header is refused ---- */
#define CDT__LANE_RING_MIN (UINT64_C(1) << 16)
#define CDT__LANE_RING_MAX (UINT64_C(1) << 26)
#define CDT__LANE_GRANTS_MIN 16u
#define CDT__LANE_GRANTS_MAX 1024u
#define CDT__LANE_FRAG_MIN 4096u
/* the head ring holds at least two records of the largest head (one written while one is read) */
#define CDT__LANE_HEAD_RING_MIN (UINT32_C(1) << 17)
#define CDT__LANE_HEAD_RING_MAX (UINT32_C(1) << 24)
#define CDT__LANE_DEFAULT_HEAD_RING (UINT32_C(1) << 18)
/* a record: len (4), zero (4), tag (8), then the head message, padded to 8; len 0 is a pad */
#define CDT__LANE_HEAD_RECORD 16u
#define CDT__LANE_HEAD_MIN 40u    /* a head's prefix (CDT__UCX_PREFIX_SIZE) */
#define CDT__LANE_HEAD_MAX 32768u /* a head message (CDT__UCX_HEAD_MAX) */
/* a large record's bound: this (a 64 KiB object, its prefix and frame header), or half the head
 * ring if less (measured: §10.6, Large records; a build may set other values to measure them) */
#ifndef CDT__LANE_HEAD_LARGE_MAX
#define CDT__LANE_HEAD_LARGE_MAX 73728u
#endif
#ifndef CDT__LANE_HEAD_LARGE_SHARE
#define CDT__LANE_HEAD_LARGE_SHARE 2u /* the ring holds two of the largest */
#endif
/* defaults (measured: bench/lane, docs/TRANSPORT.md §10.3) */
#define CDT__LANE_DEFAULT_RING (UINT64_C(1) << 20)
#define CDT__LANE_DEFAULT_GRANTS 64u
#define CDT__LANE_DEFAULT_FRAG (1u << 14)

/* the offer a producer sends its peer in a head message (docs/TRANSPORT.md §10.2) */
#define CDT__LANE_OFFER_SIZE 40
typedef struct cdt__lane_offer {
    uint8_t nonce[CDT__LANE_NONCE_SIZE];
    int32_t pid;
    int32_t fd;
    uint64_t ring_bytes;
    uint32_t grant_slots;
    uint32_t frag_bytes;
} cdt__lane_offer;

/* one grant: the consumer asks the producer for the stream of the object `key` */
typedef struct cdt__lane_grant {
    uint64_t key;
    uint64_t stream_len;
} cdt__lane_grant;

typedef enum { CDT__LANE_PRODUCER = 0, CDT__LANE_CONSUMER = 1 } cdt__lane_role;

/* A lane, one side of it. Fields are the component's; callers use the functions below. */
typedef struct cdt__lane {
    unsigned char *base; /* the mapping (or a caller's memory: cdt__lane_view) */
    size_t map_bytes;    /* mapped bytes: data_off + ring_bytes */
    size_t data_off;     /* where the data ring starts */
    uint64_t ring_bytes; /* validated once, never re-read */
    uint32_t grant_slots;
    uint32_t frag_bytes;
    uint8_t nonce[CDT__LANE_NONCE_SIZE];
    cdt__lane_role role;
    int owns_mapping; /* munmap on close */
    int memfd;        /* producer's segment, open until the consumer attached; else -1 */
    int pidfd;        /* the peer's, once known; else -1 */
    int error;        /* sticky: CDT_ERR_PEER once the lane broke or the peer died */
    size_t span;      /* bytes of the last span handed out, not yet published or released */
    /* producer's own copies */
    uint64_t prod_pos, cons_seen, grants_taken;
    /* consumer's own copies */
    uint64_t cons_pos, granted_end, grants_posted, grants_taken_seen;
    /* producer: the consumer's consumer_features, read once at attach */
    uint32_t peer_features;
    /* consumer: the consumer_features it wrote at attach */
    uint32_t own_features;
    /* version 2 (head ring; 0 bytes on a version 1 segment), validated once at setup */
    uint32_t version;
    uint32_t head_ring_bytes;
    size_t heads_off;
    int doorbell;         /* the doorbell pipe: the producer's write end, the consumer's read end */
    int doorbell_rd;      /* producer: the read end, open until the consumer attached; else -1 */
    int32_t doorbell_num; /* doorbell_fd as the header said it (the producer's number) */
    /* producer's copies: heads written, heads_cons last accepted */
    uint64_t heads_pos, heads_cons_seen;
    /* producer: a record reserved and not yet published (cdt__lane_head_reserve): its length,
     * 0 none, and the pad before it */
    size_t heads_resv_len;
    uint64_t heads_resv_pad;
    /* consumer's copy: heads read and released */
    uint64_t heads_read;
    /* this side's CPU word as last written (1 + the CPU; 0 never written) */
    uint32_t cpu_noted;
    /* the peer is this very process (two workers of one program): its CPU word is no hint */
    int same_process;
    /* the split (§10.3, Regions moved by both cores): 8 bytes the peer probes (their address is
     * this side's probe field), whether both probes passed, and the peer's pid for the copies */
    uint64_t probe_word;
    int split;
    int32_t peer_pid;
} cdt__lane;

typedef struct cdt__lane_params {
    uint64_t ring_bytes;  /* 0: default */
    uint32_t grant_slots; /* 0: default */
    uint32_t frag_bytes;  /* 0: default */
    /* 0: a version 1 segment (no head ring); else a version 2 one with a head ring this size
     * (CDT__LANE_DEFAULT_HEAD_RING where it is 1) and a doorbell */
    uint32_t head_ring_bytes;
} cdt__lane_params;

/* ---- pure: no system call, no allocation (lane_format.c; fuzzed) ---- */

/* The offset of the data ring for grant_slots grants: the header and the grant ring rounded
 * up to the page size. */
CDT__LANE_HIDDEN size_t cdt__lane_data_offset(uint32_t grant_slots);
/* Checks sizes as a segment may have them (CDT_ERR_FRAME_MALFORMED otherwise). */
CDT__LANE_HIDDEN int cdt__lane_check_sizes(uint64_t ring_bytes, uint32_t grant_slots,
                                           uint32_t frag_bytes);
CDT__LANE_HIDDEN void cdt__lane_offer_encode(const cdt__lane_offer *o,
                                             unsigned char out[CDT__LANE_OFFER_SIZE]);
/* The record that follows an endpoint's id on its UCX stream (docs/TRANSPORT.md §10.2): magic
 * "CDTO" and an offer, or magic "CDTN" and why the sender offers no lane (lowercase letters and
 * '-', 1 to CDT__LANE_WHY_MAX bytes, zero-padded). */
#define CDT__LANE_RECORD_SIZE (4 + CDT__LANE_OFFER_SIZE)
#define CDT__LANE_RECORD_OFFER_MAGIC UINT32_C(0x4F544443) /* "CDTO" little-endian */
#define CDT__LANE_RECORD_NONE_MAGIC UINT32_C(0x4E544443)  /* "CDTN" little-endian */
#define CDT__LANE_WHY_MAX 23
enum { CDT__LANE_RECORD_OFFER = 1, CDT__LANE_RECORD_NONE = 2 };
CDT__LANE_HIDDEN void cdt__lane_record_offer(const cdt__lane_offer *o,
                                             unsigned char out[CDT__LANE_RECORD_SIZE]);
/* why: truncated to CDT__LANE_WHY_MAX bytes */
CDT__LANE_HIDDEN void cdt__lane_record_none(const char *why,
                                            unsigned char out[CDT__LANE_RECORD_SIZE]);
/* Parses exactly CDT__LANE_RECORD_SIZE bytes: CDT__LANE_RECORD_OFFER (*offer set), or
 * CDT__LANE_RECORD_NONE (why, NUL-terminated, in why[CDT__LANE_WHY_MAX + 1]), else
 * CDT_ERR_FRAME_MALFORMED (another length or magic, an offer that does not parse, a why with
 * another byte or no byte) */
CDT__LANE_HIDDEN int cdt__lane_record_parse(const unsigned char *p, size_t len,
                                            cdt__lane_offer *offer,
                                            char why[CDT__LANE_WHY_MAX + 1]);
/* Parses exactly CDT__LANE_OFFER_SIZE bytes: CDT_ERR_FRAME_MALFORMED for any other length, a
 * pid <= 0, an fd < 0 or sizes cdt__lane_check_sizes refuses. *out is written on success. */
CDT__LANE_HIDDEN int cdt__lane_offer_parse(const unsigned char *p, size_t len,
                                           cdt__lane_offer *out);
/* Writes a fresh header (positions zero) for the offer's sizes and nonce into mem, which
 * holds at least cdt__lane_data_offset(o->grant_slots) bytes. */
CDT__LANE_HIDDEN void cdt__lane_format(unsigned char *mem, const cdt__lane_offer *o);
/* One side of a lane over memory the caller mapped (bytes long): the header, read once into
 * private memory, must repeat the offer (magic, version, nonce, sizes) and bytes must be
 * exactly data offset + ring_bytes; else CDT_ERR_FRAME_MALFORMED. No fd, no pidfd. */
CDT__LANE_HIDDEN int cdt__lane_view(unsigned char *mem, size_t bytes, cdt__lane_role role,
                                    const cdt__lane_offer *o, cdt__lane *lane);

/* Checks a head ring size (CDT_ERR_FRAME_MALFORMED otherwise). */
CDT__LANE_HIDDEN int cdt__lane_check_head_ring(uint64_t head_ring_bytes);
/* Version 2: a fresh header as cdt__lane_format writes it, then version 2, head_ring_bytes and
 * doorbell_fd. mem holds at least cdt__lane_data_offset(o->grant_slots) bytes. */
CDT__LANE_HIDDEN void cdt__lane_format_heads(unsigned char *mem, const cdt__lane_offer *o,
                                             uint32_t head_ring_bytes, int32_t doorbell_fd);

/* ---- the rings (lane_ring.c); every function returns the lane's sticky error once set ---- */

/* Producer: the next grant, if the consumer posted one: 1 and *g, 0 none. A grants_posted out
 * of its bounds breaks the lane (CDT_ERR_PEER). The grant's values are the peer's: the caller
 * checks the key and the length against what it offered. */
CDT__LANE_HIDDEN int cdt__lane_take_grant(cdt__lane *lane, cdt__lane_grant *g);
/* Producer: where the next bytes go: *dst and *len (at most frag_bytes, never across the ring's
 * end; 0 when the ring is full). A cons_pos out of its bounds breaks the lane. */
CDT__LANE_HIDDEN int cdt__lane_write_span(cdt__lane *lane, unsigned char **dst, size_t *len);
/* Producer: publish len bytes written at the last span (len <= that span's length). */
CDT__LANE_HIDDEN int cdt__lane_publish(cdt__lane *lane, size_t len);
/* Consumer: post a grant for an object whose stream_len comes from its matched head; *start
 * is the stream's first position (the consumer's own sum). CDT_ERR_BUSY: the grant ring is
 * full (try again after the producer took some). */
CDT__LANE_HIDDEN int cdt__lane_post_grant(cdt__lane *lane, uint64_t key, uint64_t stream_len,
                                          uint64_t *start);
/* Consumer: post a grant ring entry that asks for no stream bytes (a SPLIT object's destination
 * record: docs/TRANSPORT.md §10.3, Regions moved by both cores); *pos is its position (this
 * side's own count), for cdt__lane_revoke_record. CDT_ERR_BUSY as above. */
CDT__LANE_HIDDEN int cdt__lane_post_record(cdt__lane *lane, uint64_t key, uint64_t value,
                                           uint64_t *pos);

/* A record's key bits that the two sides swap (§10.3, Regions moved by both cores, rule 6): the
 * producer's claim before it writes into the consumer's memory, its push done, and the
 * consumer's revocation. A record's own key never has them (the transport's keys are below). */
#define CDT__LANE_RECORD_CLAIMED (UINT64_C(1) << 62)
#define CDT__LANE_RECORD_DONE (UINT64_C(1) << 61)
#define CDT__LANE_RECORD_REVOKED (UINT64_C(1) << 60)
/* Producer: the next grant must be the record `key`: 1 claimed (*value: the record's value; the
 * grant stays untaken until cdt__lane_record_done), 2 revoked by the consumer (taken already:
 * nothing to do for it), 0 none posted yet. Any other slot breaks the lane (CDT_ERR_PEER). */
CDT__LANE_HIDDEN int cdt__lane_claim_record(cdt__lane *lane, uint64_t key, uint64_t *value);
/* Producer: the claimed record's writes are over: DONE stored in its slot, then the grant
 * taken. */
CDT__LANE_HIDDEN int cdt__lane_record_done(cdt__lane *lane);
/* Consumer: revoke the record `key` posted at `pos`: 1 when the producer writes nothing more
 * for it (revoked before its claim, or its writes done), 0 while they are under way (claimed,
 * not done). Repeatable: a later call tells when they ended. Works on a lane that broke (a
 * slot the peer scribbled over counts as done: a hostile peer could write anyway). */
CDT__LANE_HIDDEN int cdt__lane_revoke_record(cdt__lane *lane, uint64_t pos, uint64_t key);
/* Consumer: the published bytes at cons_pos: *src, *len (never across the ring's end, never
 * past what was granted; 0 when none). A prod_pos out of its bounds breaks the lane. */
CDT__LANE_HIDDEN int cdt__lane_read_span(cdt__lane *lane, const unsigned char **src, size_t *len);
/* Producer: *bytes published that the consumer has not released yet (its cons_pos checked as
 * for a write span). */
CDT__LANE_HIDDEN int cdt__lane_unreleased(cdt__lane *lane, uint64_t *bytes);
/* Consumer: release len bytes of the last span (they were unpacked). */
CDT__LANE_HIDDEN int cdt__lane_release(cdt__lane *lane, size_t len);
/* Consumer's position (the next byte it reads) and producer's (the next byte it writes). */
CDT__LANE_HIDDEN uint64_t cdt__lane_position(const cdt__lane *lane);

/* ---- the head ring of a version 2 segment (lane_heads.c, docs/TRANSPORT.md §10.6) ---- */

/* The largest record len this side writes (producer) or takes (consumer): CDT__LANE_HEAD_MAX,
 * or where the consumer set CDT__LANE_FEATURE_LARGE at attach, min(CDT__LANE_HEAD_LARGE_MAX,
 * head_ring_bytes / 4) (docs/TRANSPORT.md §10.6, Large records). */
CDT__LANE_HIDDEN size_t cdt__lane_head_bound(const cdt__lane *lane);
/* Producer: room for one record of len bytes (40 <= len <= cdt__lane_head_bound, else
 * CDT_ERR_INVALID_ARG): 1 and *dst, where the head's len bytes go (the caller writes them
 * there, e.g. packs an object straight into the ring), then cdt__lane_head_publish; 0 no room
 * (as cdt__lane_head_put); else the lane's error. Nothing is published until then; a reserve
 * not published is dropped by the next one. */
CDT__LANE_HIDDEN int cdt__lane_head_reserve(cdt__lane *lane, size_t len, unsigned char **dst);
/* Producer: the reserved record's 16 bytes written with tag (top bit 0), and published. */
CDT__LANE_HIDDEN int cdt__lane_head_publish(cdt__lane *lane, uint64_t tag);
/* Producer: write one record {tag, head[len]} (40 <= len <= cdt__lane_head_bound, tag's top bit
 * 0, else CDT_ERR_INVALID_ARG) and publish it. 1: written; 0: no room (the consumer has not
 * released enough: try again later, and write no later head before this one); else the lane's
 * error (a heads_cons out of its bounds breaks the lane). CDT_ERR_UNSUPPORTED on a version 1
 * segment. */
CDT__LANE_HIDDEN int cdt__lane_head_put(cdt__lane *lane, uint64_t tag, const void *head,
                                        size_t len);
/* Producer, after cdt__lane_head_put wrote: 1 when the consumer said it may sleep (ring the
 * doorbell), else 0. A sequentially consistent read, after the publishing store. */
CDT__LANE_HIDDEN int cdt__lane_heads_asleep(cdt__lane *lane);
/* Producer: cdt__lane_heads_asleep, and when it is 1 a write of 1 to the doorbell (if any). */
CDT__LANE_HIDDEN int cdt__lane_heads_ring(cdt__lane *lane);
/* Consumer: the next record, copied into private memory: its tag, its head into out (cap >=
 * CDT__LANE_HEAD_MAX bytes) and *len; the record is then released. 1: one taken; 0: none
 * published; CDT_ERR_NO_MEMORY: a large record longer than cap (not taken, the lane intact);
 * else the lane's error (a record or a position out of its bounds breaks it: CDT_ERR_PEER;
 * nothing outside the ring is read). */
CDT__LANE_HIDDEN int cdt__lane_head_take(cdt__lane *lane, uint64_t *tag, unsigned char *out,
                                         size_t cap, size_t *len);
/* The buffer a record of len bytes (already checked against the bound) is copied into; NULL:
 * none (the record is left in the ring). */
typedef unsigned char *(cdt__lane_head_buf_fn)(void *arg, size_t len);
/* Consumer: cdt__lane_head_take into get(arg, len)'s buffer, asked for only once the record's
 * 16 bytes passed every check (nothing is allocated for a record that breaks the lane).
 * CDT_ERR_NO_MEMORY when get returned NULL (nothing taken). */
CDT__LANE_HIDDEN int cdt__lane_head_take_into(cdt__lane *lane, uint64_t *tag,
                                              cdt__lane_head_buf_fn *get, void *arg, size_t *len);
/* Consumer: 1 when records are published and not yet taken, 0 none (or the lane's error). */
CDT__LANE_HIDDEN int cdt__lane_heads_pending(cdt__lane *lane);
/* Consumer, before it sleeps: stores asleep = 1, then looks again; 0: asleep (nothing pending,
 * the producer rings after its next record); 1: records were published meanwhile (asleep is
 * cleared again: do not sleep); else the lane's error. */
CDT__LANE_HIDDEN int cdt__lane_heads_sleep(cdt__lane *lane);
/* Consumer, awake: asleep = 0, and the doorbell's count drained (if any). */
CDT__LANE_HIDDEN void cdt__lane_heads_awake(cdt__lane *lane);

/* ---- one object's stream through the rings (lane_pump.c) ---- */

/* Packs stream bytes [offset, offset + *used) into dst (n bytes; *used <= n, > 0 while bytes
 * are left), as cdt_op_pack or cdt_frame_gather do. Returns a status. */
typedef int(cdt__lane_pack_fn)(void *state, uint64_t offset, unsigned char *dst, size_t n,
                               size_t *used);
/* Unpacks n stream bytes found at offset, as cdt_op_unpack or cdt_decoder_write do. */
typedef int(cdt__lane_unpack_fn)(void *state, uint64_t offset, const unsigned char *src, size_t n);

/* Producer: pack the object's stream bytes [*offset, len) into the ring while it has room,
 * publishing each fragment once as soon as it is packed (so the consumer unpacks one while the
 * next is packed); pack is called as many times as a fragment takes. 1: all published; 0: the
 * ring is full, call again; else the lane's error or the callback's (CDT_ERR_CALLBACK for a
 * callback that packs nothing); bytes packed before a failure are published. *offset advances
 * by what was published. */
CDT__LANE_HIDDEN int cdt__lane_pump_out(cdt__lane *lane, cdt__lane_pack_fn *pack, void *state,
                                        uint64_t *offset, uint64_t len);
/* Consumer: unpack the object's published bytes [*offset, len) and release them. bounce NULL:
 * unpack reads the ring itself (types that read each byte once); else bounce holds frag_bytes
 * bytes of private memory, each piece is copied there first and unpack reads the copy, so
 * bytes it checked cannot change under it (custom types). unpack NULL: the bytes are released
 * unread (an object whose receive failed: the stream must still be consumed to reach the next
 * object's). 1: the object is complete; 0: no more bytes now; else the lane's error or the
 * callback's (*offset then stays before the piece that failed, which was not released). */
CDT__LANE_HIDDEN int cdt__lane_pump_in(cdt__lane *lane, cdt__lane_unpack_fn *unpack, void *state,
                                       uint64_t *offset, uint64_t len, unsigned char *bounce);

/* ---- an object's commit word after its stream (lane_pump.c; docs/TRANSPORT.md §10.3, Commit
 * in the ring): lane bytes [stream_len, stream_len + CDT__LANE_WORD_SIZE) of its grant ---- */
#define CDT__LANE_WORD_SIZE 8
/* Producer, in a pack callback at `offset` >= stream_len: the word's bytes from there into dst
 * (n > 0 bytes of room); returns how many were written (> 0, at most n). */
CDT__LANE_HIDDEN size_t cdt__lane_word_put(const unsigned char word[CDT__LANE_WORD_SIZE],
                                           uint64_t stream_len, uint64_t offset, unsigned char *dst,
                                           size_t n);
/* Consumer, in an unpack callback for n bytes at `offset` (offset + n <= stream_len + 8): copies
 * the bytes at or past stream_len into word (private memory: each read from the ring once) and
 * returns how many come before stream_len (the stream's own, to unpack). */
CDT__LANE_HIDDEN size_t cdt__lane_word_take(unsigned char word[CDT__LANE_WORD_SIZE],
                                            uint64_t stream_len, uint64_t offset,
                                            const unsigned char *src, size_t n);

/* ---- the segment (lane_segment.c) ---- */

/* Producer: a sealed memfd of the given sizes, mapped, its header written; *offer describes it
 * for the peer. CDT_ERR_UNSUPPORTED where the system has no memfd or sealing,
 * CDT_ERR_NO_MEMORY where a limit is reached, CDT_ERR_INVALID_ARG for sizes out of range. */
CDT__LANE_HIDDEN int cdt__lane_create(const cdt__lane_params *params, cdt__lane *lane,
                                      cdt__lane_offer *offer);
/* Consumer: map the segment an offer names (pidfd, then /proc/<pid>/fd/<fd>, checked: a
 * sealed regular file of the exact size whose header repeats the offer), then announce itself
 * (consumer_pid, attached). CDT_ERR_UNSUPPORTED where it cannot be opened here,
 * CDT_ERR_FRAME_MALFORMED where the file is not that segment. */
CDT__LANE_HIDDEN int cdt__lane_attach(const cdt__lane_offer *offer, cdt__lane *lane);
/* cdt__lane_attach, announcing consumer_features CDT__LANE_FEATURES | extra (its HEADS bit
 * only on a version 2 segment: the transport takes heads from its ring; RING_COMMIT on any;
 * SPLIT only where the producer's probe word could be read with process_vm_readv, and then
 * `split` is set and cons_probe written) */
CDT__LANE_HIDDEN int cdt__lane_attach_features(const cdt__lane_offer *offer, cdt__lane *lane,
                                               uint32_t extra);
/* Producer: 1 once the consumer attached (its pidfd is then open, its consumer_features copied
 * into peer_features; where they have SPLIT, the consumer's probe word is written once with
 * process_vm_writev and `split` set if that and the read before it passed), 0 not yet. A
 * consumer pid that names no process breaks the lane. */
CDT__LANE_HIDDEN int cdt__lane_attached(cdt__lane *lane);
/* ---- where each side runs (lane_cpu.c; docs/TRANSPORT.md §10.3, Waiting) ---- */
/* writes 1 + `cpu` into this side's CPU word if it differs from what this side last wrote
 * there (a store a migration, not a call); a cpu < 0 (not known) writes nothing */
CDT__LANE_HIDDEN void cdt__lane_note_cpu(cdt__lane *lane, int cpu);
/* the CPU the peer last progressed on, as its word says now; -1 when not known or when the
 * peer is this process (a thread of it, often this very one, that a yield does not let run).
 * A hint only: any value the peer writes is accepted, and nothing but a yield depends on it */
CDT__LANE_HIDDEN int cdt__lane_peer_cpu(const cdt__lane *lane);

/* 1 while the peer's process lives (or is not known yet), 0 once it exited; then the lane's
 * error is CDT_ERR_PEER. One poll() of the pidfd. */
CDT__LANE_HIDDEN int cdt__lane_peer_alive(cdt__lane *lane);
/* Unmap, close the memfd and the pidfd. Safe on a zeroed or already closed lane. */
CDT__LANE_HIDDEN void cdt__lane_close(cdt__lane *lane);

#endif
