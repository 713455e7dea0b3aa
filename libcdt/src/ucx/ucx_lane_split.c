/*
 * ucx_lane_split.c - the large regions of a SPLIT object (docs/TRANSPORT.md §10.3, Regions
 * moved by both cores): the sender writes the first half of their bytes into the receiver's
 * memory (process_vm_writev) while the receiver reads the second half out of the sender's
 * (process_vm_readv), so both cores copy at once; the stream and the commit word go through the
 * lane as for any LANE object.
 *
 * Why: the stream copies every byte on both cores, one after the other (16 GB/s at 1 MiB on
 * the 2-core guest), and a pull alone copies every byte on the receiver's core; the split gives
 * each core half the bytes (1.1-3.1x the stream on regions that did not change, 1.1-1.3x on
 * written regions from 8 MiB: bench/lane/lane_pull_bench, bench/results/lane_transport.md).
 *
 * Every length and address this side acts on is its own or checked against its own: the
 * receiver's list is read once into private memory and each length compared with the sender's
 * region; the sender's table comes in the matched head and is used only as the source address
 * of the receiver's own read. The lock is held in every function.
 */
#define _GNU_SOURCE
#include "core/core.h"
#include "frame/frame_format.h"
#include "ucx_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

/* a destination record's key: the object's key with this bit (keys stay below it) */
#define SPLIT_RECORD_BIT (UINT64_C(1) << 63)

_Static_assert(CDT__UCX_KEY_MASK < SPLIT_RECORD_BIT, "a record's key is never an object's key");

int cdt__ucx_lane_split_env(bool *on)
{
    return cdt__ucx_env_switch("CDT_UCX_LANE_SPLIT", true, on);
}

/* where the sender's share of the large regions' `total` bytes ends: half, in whole pages */
static uint64_t split_point(uint64_t total)
{
    return (total / 2) & ~(uint64_t)4095;
}

/* bytes [from, to) of the regions' concatenation as iovecs of both sides: a[k] at a_base[k],
 * b[k] at b_base[k], each region len[k] bytes long on both. Returns the iovecs' count. */
static int share_iov(cdt_count n, const uint64_t *a_base, size_t a_step, const uint64_t *b_base,
                     size_t b_step, const uint64_t *len, size_t len_step, uint64_t from,
                     uint64_t to, struct iovec *a, struct iovec *b)
{
    int m = 0;
    uint64_t at = 0;
    for (cdt_count k = 0; k < n; k++) {
        uint64_t l = len[(size_t)k * len_step], lo = at > from ? at : from,
                 hi = at + l < to ? at + l : to;
        if (lo < hi) {
            a[m] = (struct iovec){(void *)(uintptr_t)(a_base[(size_t)k * a_step] + (lo - at)),
                                  (size_t)(hi - lo)};
            b[m] = (struct iovec){(void *)(uintptr_t)(b_base[(size_t)k * b_step] + (lo - at)),
                                  (size_t)(hi - lo)};
            m++;
        }
        at += l;
    }
    return m;
}

/* A cross-memory call that moved fewer bytes than asked is CDT_ERR_FRAME_MALFORMED (an address
 * the peer named was refused), judged once the peer showed it lives (its word came, or it
 * released the word): a peer that died fails the lane first (CDT_ERR_PEER). */

/* ---- the sender ---- */

/* whether every page of this process's pieces can be read (a failed push: the sender's own
 * memory, CDT_ERR_INVALID_ARG, or the receiver's destination). One byte a page through the
 * kernel, which reports a fault instead of raising it. */
static bool own_readable(const struct iovec *v, int m)
{
    for (int k = 0; k < m; k++)
        for (size_t at = 0; at < v[k].iov_len; at = (at | 4095) + 1) {
            unsigned char b;
            struct iovec local = {&b, 1}, remote = {(unsigned char *)v[k].iov_base + at, 1};
            if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1)
                return false;
        }
    return true;
}

int cdt__ucx_lane_split_plan(cdt_ucx_request r, cdt_count nsep)
{
    cdt_count regions = 0;
    int rc = cdt_frame_region_count(r->frame, &regions);
    if (rc != CDT_SUCCESS)
        return rc;
    struct iovec *iov = calloc((size_t)nsep, sizeof(*iov));
    if (iov == NULL)
        return CDT_ERR_NO_MEMORY;
    unsigned char *table =
        r->head + CDT__UCX_PREFIX_SIZE + CDT__UCX_LANE_EXT_SIZE + (size_t)r->lane_header;
    cdt_count k = 0;
    for (cdt_count i = 0; i < regions && rc == CDT_SUCCESS; i++) {
        cdt_count len = 0, got = 0;
        rc = cdt_frame_region_info(r->frame, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS || !cdt__ucx_separate(len, r->threshold, i))
            continue;
        cdt_iov piece = {0};
        if (k < nsep)
            rc = cdt_frame_region_iov(r->frame, i, 0, 1, &piece, &got);
        if (rc == CDT_SUCCESS && (k >= nsep || got != 1 || piece.len != len))
            rc = CDT_ERR_CALLBACK; /* lane_plan counted these, each one piece */
        if (rc == CDT_SUCCESS) {
            iov[k] = (struct iovec){piece.base, (size_t)len};
            cdt__put_u64(table + 8 * (size_t)k, (uint64_t)(uintptr_t)piece.base);
            k++;
        }
    }
    if (rc == CDT_SUCCESS && k != nsep)
        rc = CDT_ERR_CALLBACK;
    if (rc != CDT_SUCCESS) {
        free(iov);
        return rc;
    }
    r->split_iov = iov;
    r->split_n = nsep;
    r->lane_split = true;
    r->split_phase = 0;
    r->split_hold_until = 0;
    return CDT_SUCCESS;
}

/* the receiver's destination list at `addr` in its memory, read once; then the sender's share
 * written there. CDT_SUCCESS or the send's error (the word carries it to the receiver). */
static int push_with(cdt__ucx_lane_ep *l, cdt_ucx_request r, uint64_t addr, uint64_t *list,
                     uint64_t *src, uint64_t *len, struct iovec *mine, struct iovec *theirs)
{
    const cdt_count n = r->split_n;
    struct iovec local = {list, 16 * (size_t)n}, remote = {(void *)(uintptr_t)addr, local.iov_len};
    if (process_vm_readv((pid_t)l->tx.peer_pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len)
        return CDT_ERR_FRAME_MALFORMED;
    uint64_t total = 0;
    for (cdt_count k = 0; k < n; k++) {
        if (list[2 * k + 1] != (uint64_t)r->split_iov[k].iov_len)
            return CDT_ERR_FRAME_MISMATCH; /* the receiver's region is not the sender's */
        src[k] = (uint64_t)(uintptr_t)r->split_iov[k].iov_base;
        len[k] = (uint64_t)r->split_iov[k].iov_len;
        total += len[k];
    }
    const uint64_t share = split_point(total);
    int m = share_iov(n, src, 1, list, 2, len, 1, 0, share, mine, theirs);
    if (m > 0 && process_vm_writev((pid_t)l->tx.peer_pid, mine, (unsigned long)m, theirs,
                                   (unsigned long)m, 0) != (ssize_t)share)
        return own_readable(mine, m) ? CDT_ERR_FRAME_MALFORMED : CDT_ERR_INVALID_ARG;
    return CDT_SUCCESS;
}

static int push(cdt__ucx_lane_ep *l, cdt_ucx_request r, uint64_t addr)
{
    /* the list (2 words a region), the sources and lengths, both sides' iovecs: one block */
    const size_t n = (size_t)r->split_n;
    uint64_t *w = malloc(n * (4 * sizeof(uint64_t) + 2 * sizeof(struct iovec)));
    if (w == NULL)
        return CDT_ERR_NO_MEMORY;
    struct iovec *iov = (struct iovec *)(void *)(w + 4 * n);
    int rc = push_with(l, r, addr, w, w + 2 * n, w + 3 * n, iov, iov + n);
    free(w);
    return rc;
}

int cdt__ucx_lane_split_send(cdt__ucx_lane_ep *l, cdt_ucx_request r, cdt__lane_pack_fn *pack)
{
    if (r->split_phase == 0) {
        /* the next grant must be this object's record: the receiver posts no later grant
         * before it (§10.3, Regions moved by both cores, step 4) */
        const int64_t hold = l->ep->w->test_split_hold_ms; /* the test hook: 0 unset */
        const bool hold_in_push = l->ep->w->test_split_hold_in_push;
        if (hold > 0 && !hold_in_push) {
            if (r->split_hold_until == 0)
                r->split_hold_until = cdt__ucx_now_ms() + hold;
            if (cdt__ucx_now_ms() < r->split_hold_until)
                return 0;
        }
        uint64_t addr = 0;
        int rc = cdt__lane_claim_record(&l->tx, r->key | SPLIT_RECORD_BIT, &addr);
        if (rc <= 0)
            return rc; /* not posted yet, or another grant: the lane broke */
        /* claimed (1): push, then DONE; revoked (2): the receive ended, nothing to write.
         * A push that fails is judged only once the receiver released the word: a receiver
         * that died fails the lane (CDT_ERR_PEER) before that, one that lives named a bad
         * destination; the word tells it either way */
        if (rc == 1) {
            for (int64_t until = cdt__ucx_now_ms() + (hold_in_push ? hold : 0);
                 cdt__ucx_now_ms() < until;)
                sched_yield(); /* the test hook: a push that takes this long */
            if (addr != 0 && !r->detached && r->status == CDT_SUCCESS)
                r->split_status = push(l, r, addr);
            if ((rc = cdt__lane_record_done(&l->tx)) != CDT_SUCCESS)
                return rc;
        }
        r->split_phase = 1;
    }
    if (r->split_phase == 1) {
        /* the word, with the push's status */
        int rc =
            cdt__lane_pump_out(&l->tx, pack, r, &r->lane_off, r->lane_len + CDT__LANE_WORD_SIZE);
        if (rc <= 0)
            return rc;
        r->split_phase = 2;
    }
    /* the receiver releases the word once its read of this object's memory returned: the send
     * completes only then. This side served no grant after it, so nothing else is published. */
    uint64_t left = 0;
    int rc = cdt__lane_unreleased(&l->tx, &left);
    if (rc != CDT_SUCCESS)
        return rc;
    if (left != 0)
        return 0;
    if (r->split_status != CDT_SUCCESS && !r->detached)
        cdt__ucx_request_set_error(r, r->split_status);
    return 1;
}

/* ---- the receiver ---- */

int cdt__ucx_lane_split_head(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e, const cdt__ucx_head *h,
                             cdt_count nsep)
{
    e->split = true;
    e->split_n = h->split_count;
    /* a consumer that did not announce SPLIT takes none; the table names each large region */
    if (!(l->rx.own_features & CDT__LANE_FEATURE_SPLIT) || nsep != h->split_count)
        return CDT_ERR_FRAME_MALFORMED;
    e->split_src = malloc(8 * (size_t)h->split_count);
    if (e->split_src == NULL)
        return CDT_ERR_NO_MEMORY;
    for (cdt_count k = 0; k < h->split_count; k++)
        e->split_src[k] = cdt__get_u64(h->split_table + 8 * (size_t)k);
    return CDT_SUCCESS;
}

static void free_dest(cdt__ucx_lane_in *e)
{
    if (e->split_tmp != NULL)
        for (cdt_count k = 0; k < e->split_n; k++)
            free(e->split_tmp[k]);
    free(e->split_tmp);
    free(e->split_list);
    free(e->split_index);
    e->split_tmp = NULL;
    e->split_list = NULL;
    e->split_index = NULL;
}

/* the large regions' destinations: one piece of the object's memory where the region is one,
 * else a staging buffer written through the decoder when the word is in */
static int dest_list(cdt__ucx_lane_in *e, cdt_ucx_request r)
{
    const cdt_count n = e->split_n;
    e->split_list = calloc(2 * (size_t)n, sizeof(uint64_t));
    e->split_index = calloc((size_t)n, sizeof(cdt_count));
    e->split_tmp = calloc((size_t)n, sizeof(void *));
    if (e->split_list == NULL || e->split_index == NULL || e->split_tmp == NULL)
        return CDT_ERR_NO_MEMORY;
    cdt_frame_info in = {.field_mask = CDT_FRAME_INFO_ALL};
    int rc = cdt_decoder_info(r->dec, &in);
    cdt_count regions = in.region_count, k = 0;
    for (cdt_count i = 0; i < regions && rc == CDT_SUCCESS; i++) {
        cdt_count len = 0, pieces = 0;
        rc = cdt_decoder_region_info(r->dec, i, &len, NULL, NULL);
        if (rc != CDT_SUCCESS || !cdt__ucx_separate(len, r->threshold, i))
            continue;
        if (k >= n)
            return CDT_ERR_FRAME_MALFORMED;
        void *dst = NULL;
        rc = cdt_decoder_region_iov_count(r->dec, i, &pieces);
        if (rc == CDT_SUCCESS && pieces == 1) {
            cdt_iov iov = {0};
            cdt_count got = 0;
            rc = cdt_decoder_region_iov(r->dec, i, 0, 1, &iov, &got);
            if (rc == CDT_SUCCESS && (got != 1 || iov.len != len))
                rc = CDT_ERR_FRAME_MISMATCH;
            dst = iov.base;
        } else if (rc == CDT_SUCCESS) {
            dst = e->split_tmp[k] = malloc((size_t)len);
            if (dst == NULL)
                rc = CDT_ERR_NO_MEMORY;
        }
        e->split_index[k] = i;
        e->split_list[2 * k] = (uint64_t)(uintptr_t)dst;
        e->split_list[2 * k + 1] = (uint64_t)len;
        k++;
    }
    if (rc == CDT_SUCCESS && k != n)
        rc = CDT_ERR_FRAME_MALFORMED;
    return rc;
}

void cdt__ucx_lane_split_dest(cdt__ucx_lane_in *e)
{
    cdt_ucx_request r = e->r;
    if (r == NULL || e->split_ready)
        return;
    int rc = dest_list(e, r);
    if (rc != CDT_SUCCESS) {
        cdt__ucx_recv_fail(r, rc); /* detaches r: the record goes with address 0 */
        return;
    }
    e->split_ready = true;
}

/* the receiver's share, read out of the sender's memory */
static int pull(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e)
{
    const cdt_count n = e->split_n;
    uint64_t total = 0;
    for (cdt_count k = 0; k < n; k++)
        total += e->split_list[2 * k + 1];
    struct iovec *mine = malloc(2 * (size_t)n * sizeof(struct iovec)), *theirs = mine + n;
    if (mine == NULL)
        return CDT_ERR_NO_MEMORY;
    const uint64_t from = split_point(total);
    int m = share_iov(n, e->split_list, 2, e->split_src, 1, e->split_list + 1, 2, from, total, mine,
                      theirs);
    int rc = CDT_SUCCESS;
    if (m > 0 && process_vm_readv((pid_t)l->rx.peer_pid, mine, (unsigned long)m, theirs,
                                  (unsigned long)m, 0) != (ssize_t)(total - from))
        rc = CDT_ERR_FRAME_MALFORMED;
    free(mine);
    return rc;
}

int cdt__ucx_lane_split_record(cdt__ucx_lane_ep *l, cdt__ucx_lane_in *e)
{
    if (!e->split || e->split_posted)
        return 1;
    if (!e->split_ready)
        return 0;
    uint64_t addr = e->split_list != NULL ? (uint64_t)(uintptr_t)e->split_list : 0;
    int rc = cdt__lane_post_record(&l->rx, e->key | SPLIT_RECORD_BIT, addr, &e->split_pos);
    if (rc == CDT_ERR_BUSY)
        return 0;
    if (rc != CDT_SUCCESS)
        return rc;
    e->split_posted = true;
    e->split_rx = &l->rx;
    /* the sender writes its share now: this side reads its own meanwhile. A read that fails
     * fails the receive once the word is in (the sender lived); a sender that died fails the
     * lane before that, and the receive with CDT_ERR_PEER */
    if (e->r != NULL && addr != 0)
        e->split_status = pull(l, e);
    return 1;
}

/* 1: the sender writes nothing more for e's record (revoked before its claim, or its push
 * done); 0: its push is under way */
static int record_revoke(cdt__ucx_lane_in *e)
{
    int rc = cdt__lane_revoke_record(e->split_rx, e->split_pos, e->key | SPLIT_RECORD_BIT);
    return rc == 0 ? 0 : 1;
}

bool cdt__ucx_lane_split_detach(cdt__ucx_lane_in *e, cdt_ucx_request r)
{
    if (e->split_posted && e->split_list != NULL) {
        if (record_revoke(e) == 1)
            return false;  /* its memory is the application's again; the word still comes */
        e->split_held = r; /* the sender is writing into r's memory */
        r->w->split_holds++;
        return true;
    }
    free_dest(e); /* the record, still to post, goes with address 0 */
    e->split_ready = true;
    return false;
}

void cdt__ucx_lane_split_end(cdt__ucx_lane_in *e)
{
    cdt_ucx_request r = e->r;
    if (r != NULL && e->split_status != CDT_SUCCESS)
        cdt__ucx_recv_fail(r, e->split_status);
    if (r != NULL && r->status == CDT_SUCCESS && cdt__ucx_commit_status(r->trailer) == CDT_SUCCESS)
        for (cdt_count k = 0; k < e->split_n && e->split_index != NULL; k++) {
            cdt_count off = 0, i = e->split_index[k];
            int rc = cdt_decoder_region_info(r->dec, i, NULL, NULL, &off);
            if (rc == CDT_SUCCESS)
                rc = e->split_tmp[k] != NULL
                         ? cdt_decoder_write(r->dec, off, e->split_tmp[k],
                                             (cdt_count)e->split_list[2 * k + 1])
                         : cdt_decoder_region_done(r->dec, i);
            if (rc != CDT_SUCCESS) {
                cdt__ucx_recv_fail(r, rc);
                break;
            }
        }
    cdt__ucx_lane_split_free(e); /* and a receive held past its failure, let go */
}

/* a receive held past its end (its sender's push was under way) completes */
static void release_held(cdt__ucx_lane_in *e)
{
    cdt_ucx_request held = e->split_held;
    e->split_held = NULL;
    if (held == NULL)
        return;
    held->w->split_holds--;
    if (--held->outstanding == 0)
        cdt__ucx_recv_done(held);
}

void cdt__ucx_lane_split_free(cdt__ucx_lane_in *e)
{
    free_dest(e);
    free(e->split_src);
    e->split_src = NULL;
    release_held(e);
}

void cdt__ucx_lane_split_poll_held(cdt__ucx_lane_ep *l)
{
    /* the slot's DONE says the push returned (rule 6): the receive completes then, not at the
     * word, which a sender whose send ended after its push (its endpoint closed or failed)
     * never publishes. No walk of the queue while the worker holds none (the usual case). */
    if (l->ep->w->split_holds == 0)
        return;
    for (cdt__ucx_lane_in *e = l->in_head; e != NULL; e = e->next)
        if (e->split_held != NULL && record_revoke(e) == 1)
            release_held(e);
}

void cdt__ucx_lane_split_drain(cdt__ucx_lane_ep *l)
{
    const int64_t deadline = cdt__ucx_now_ms() + CDT__UCX_SPLIT_DRAIN_MS;
    for (cdt__ucx_lane_in *e = l->in_head; e != NULL; e = e->next) {
        if (!e->split_posted || e->split_list == NULL || (e->r == NULL && e->split_held == NULL))
            continue; /* no memory of a receive named in its record */
        /* revoked (or done), the sender's process gone, or the bound: the receive may end */
        while (record_revoke(e) == 0 && cdt__lane_peer_alive(&l->rx) == 1 &&
               cdt__ucx_now_ms() < deadline)
            sched_yield();
    }
}
