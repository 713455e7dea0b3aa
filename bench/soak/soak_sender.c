/*
 * soak_sender.c - a peer's sender threads: random objects to random live peers, reconnecting
 * after deaths, then the final phase's fixed count to every peer (see soak.c).
 */
#include "soak.h"

/* -------- senders -------- */

typedef struct send_obj {
    int fam;
    void *mem; /* derived: the buffer */
    dspec d;
    cdt_sobj so;
    sspec ss;
    double_vec dv;
    cdt_count bytes;
} send_obj;

static void send_obj_free(send_obj *o)
{
    free(o->mem);
    cdt_type_free(&o->d.type);
    if (o->fam == FAM_SOBJ) {
        free(o->so.inband);
        for (cdt_count i = 0; i < o->so.nbuffers; i++)
            free(o->so.buffers[i].base);
        free(o->so.buffers);
    }
    if (o->fam == FAM_DVEC)
        double_vec_clear(&o->dv);
    memset(o, 0, sizeof(*o));
}

static int send_obj_make(send_obj *o, int fam, uint64_t key, cdt_count size)
{
    memset(o, 0, sizeof(*o));
    o->fam = fam;
    if (fam == FAM_DERIVED) {
        int rc = derived_build(key, size, &o->d);
        if (rc != CDT_SUCCESS)
            return rc;
        o->mem = malloc((size_t)o->d.true_extent + 1);
        if (o->mem == NULL)
            return CDT_ERR_NO_MEMORY;
        content_fill(o->mem, o->d.true_extent, key, 0);
        o->bytes = o->d.size;
    } else if (fam == FAM_SOBJ) {
        sobj_spec(key, size, &o->ss);
        o->so.inband_len = o->ss.inband_len;
        o->so.inband = malloc((size_t)o->ss.inband_len + 1);
        o->so.buffers = calloc((size_t)o->ss.nbuf + 1, sizeof(cdt_sobj_buffer));
        o->so.nbuffers = o->ss.nbuf;
        if (o->so.inband == NULL || o->so.buffers == NULL)
            return CDT_ERR_NO_MEMORY;
        content_fill(o->so.inband, o->ss.inband_len, part_key(key, -1), 0);
        o->bytes = o->ss.inband_len;
        for (int i = 0; i < o->ss.nbuf; i++) {
            o->so.buffers[i] =
                (cdt_sobj_buffer){malloc((size_t)o->ss.len[i] + 1), o->ss.len[i], o->ss.kind[i]};
            if (o->so.buffers[i].base == NULL)
                return CDT_ERR_NO_MEMORY;
            content_fill(o->so.buffers[i].base, o->ss.len[i], part_key(key, i), 0);
            o->bytes += o->ss.len[i];
        }
    } else {
        vspec v;
        dvec_spec(key, size, &v);
        if (double_vec_init(&o->dv, v.n, 0, 0) != CDT_SUCCESS)
            return CDT_ERR_NO_MEMORY;
        for (int i = 0; i < v.n; i++) {
            free(o->dv.data[i]);
            o->dv.lens[i] = v.len[i];
            o->dv.data[i] = malloc((size_t)v.len[i] * 4 + 1);
            if (o->dv.data[i] == NULL)
                return CDT_ERR_NO_MEMORY;
            content_fill(o->dv.data[i], v.len[i] * 4, part_key(key, i), 0);
            o->bytes += v.len[i] * 4;
        }
    }
    return CDT_SUCCESS;
}

static cdt_type fam_send_type(const send_obj *o)
{
    return o->fam == FAM_DERIVED ? o->d.type
           : o->fam == FAM_SOBJ  ? cdt_sobj_type()
                                 : double_vec_type();
}
static const void *fam_send_buf(const send_obj *o)
{
    return o->fam == FAM_DERIVED ? (const char *)o->mem - o->d.true_lb
           : o->fam == FAM_SOBJ  ? (const void *)&o->so
                                 : (const void *)&o->dv;
}

typedef struct conn {
    cdt_ucx_ep ep;
    int gen;
    int had;  /* connected before: the next connect is a reconnection */
    int sent; /* objects sent on this endpoint */
} conn;

static void print_transports(cdt_ucx_ep ep)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return;
    char lanes[256];
    if (cdt_ucx_ep_transports(ep, lanes, sizeof(lanes)) == CDT_SUCCESS)
        fprintf(f, "cdt_ucx_ep_transports: %s\n", lanes);
    ucp_ep_print_info((ucp_ep_h)cdt_ucx_ep_handle(ep), f);
    fclose(f);
    msg *m = calloc(1, sizeof(*m));
    if (m != NULL) {
        m->type = M_INFO;
        m->peer = g_me;
        snprintf(m->text, sizeof(m->text), "%s", text);
        send_msg(m);
        free(m);
    }
    free(text);
}

/* one object to `target`; returns the status (clean statuses are counted, not fatal) */
static int send_one(int th, conn *c, int target, int final, uint64_t *seq, rng *r)
{
    pthread_mutex_lock(&g_lock);
    int port = tab_port[target], gen = tab_gen[target];
    pthread_mutex_unlock(&g_lock);
    if (port == 0)
        return CDT_ERR_PEER;
    if (c->ep != NULL && (c->gen != gen || cdt_ucx_ep_status(c->ep) != CDT_SUCCESS)) {
        cdt_ucx_ep_close(c->ep, 0);
        c->ep = NULL;
    }
    if (c->ep == NULL) {
        int rc = cdt_ucx_ep_connect(g_w, "127.0.0.1", (uint16_t)port, 3000, &c->ep);
        beat(th);
        if (rc != CDT_SUCCESS) {
            c->ep = NULL;
            ADD(g_st.err_conn[st_idx(rc)], 1);
            if (!clean(rc) && rc != CDT_ERR_TRANSPORT) {
                ADD(g_st.unexpected, 1);
                report("connect to peer %d.%d: %s", target, gen, cdt_err_name(rc));
            }
            return rc;
        }
        c->gen = gen;
        ADD(g_st.connects, 1);
        if (c->had)
            ADD(g_st.reconnects, 1);
        c->had = 1;
        c->sent = 0;
    }
    /* after a few objects, when the lane's offer has come (docs/TRANSPORT.md §10.2) */
    if (++c->sent == 16 && g_me == 0 && g_gen == 0 && !atomic_exchange(&g_info_sent, 1))
        print_transports(c->ep);
    int fam = (int)(rnd(r) % NFAM);
    cdt_ucx_tag tag = tag_make(fam, final, g_me, g_gen, th, ++*seq);
    uint64_t key = tag_key(tag);
    rng kr = {key};
    send_obj o;
    int rc = send_obj_make(&o, fam, key, pick_size(&kr, final));
    if (rc != CDT_SUCCESS) {
        report("building a %s object: %s", fam_name[fam], cdt_err_name(rc));
        ADD(g_st.unexpected, 1);
        send_obj_free(&o);
        return rc;
    }
    cdt_ucx_request q;
    rc = cdt_ucx_isend(c->ep, fam_send_buf(&o), 1, fam_send_type(&o), tag, &q);
    if (rc == CDT_SUCCESS && g_die_in_send) {
        /* the kill inside the send window (soak.c): the object's messages are posted and
         * moving; die after a random number of progress calls, as a crash would */
        for (uint64_t k = rnd(r) % 64; k > 0; k--)
            cdt_ucx_worker_progress(g_w);
        raise(SIGKILL);
    }
    if (rc == CDT_SUCCESS) {
        double t0 = now_s();
        /* a send still pending when the peer is told to stop (the final phase's bound passed)
         * is given up like one that timed out: its endpoint is closed and it must end */
        rc = wait_req_until(q, 30000, th, 1);
        if (rc == CDT_ERR_TIMEOUT) {
            pthread_mutex_lock(&g_lock);
            int still = tab_port[target] != 0 && tab_gen[target] == gen;
            pthread_mutex_unlock(&g_lock);
            note("send of a %s object (%" PRId64 " B, tag 0x%016" PRIx64 ") to peer %d.%d "
                 "pending after %.0f s (peer %s); endpoint closed",
                 fam_name[fam], o.bytes, (uint64_t)tag, target, gen, now_s() - t0,
                 still ? "still alive" : "gone since");
            /* close by force: the send must then complete (with an error) */
            cdt_ucx_ep_close(c->ep, 0);
            c->ep = NULL;
            int rc2 = wait_req(q, 10000, th);
            if (rc2 == CDT_ERR_TIMEOUT) {
                ADD(g_st.stuck, 1);
                report("send to peer %d.%d (%s, %" PRId64 " B) still pending 10 s after its "
                       "endpoint was closed; object leaked",
                       target, gen, fam_name[fam], o.bytes);
                return rc;
            }
        }
        cdt_ucx_request_free(q);
    }
    if (rc == CDT_SUCCESS) {
        ADD(g_st.sent[fam], 1);
        ADD(g_st.sent_bytes, o.bytes);
        if (final)
            ADD(g_st.final_sent[target], 1);
    } else {
        ADD(g_st.err_send[st_idx(rc)], 1);
        if (!clean(rc)) {
            ADD(g_st.unexpected, 1);
            report("send of %s object (%" PRId64 " B) to peer %d.%d: %s", fam_name[fam], o.bytes,
                   target, gen, cdt_err_name(rc));
        }
        if (c->ep != NULL) {
            cdt_ucx_ep_close(c->ep, 0);
            c->ep = NULL;
        }
    }
    send_obj_free(&o);
    return rc;
}

void *sender_main(void *arg)
{
    int th = (int)(intptr_t)arg;
    rng r = {mix64(opt.seed ^ ((uint64_t)g_me << 40) ^ ((uint64_t)g_gen << 8) ^ (uint64_t)th)};
    conn c[MAX_PEERS] = {{0}};
    uint64_t seq = 0;
    int final_done = 0;
    while (!g_stop) {
        beat(th);
        if (g_final && !final_done) {
            /* A receive posted before the phase began waits only the traffic's short patience
             * (1 s, or the dvec timeout) and may match a final object and then be abandoned by the
             * soak's own timer before the object's tail arrived, which looks like an idle receive
             * and loses the object: the two such losses of the 30-minute soaks. The final objects
             * start once every such receive has ended. */
            sleep_ms(opt.dvec_timeout_ms > 1000 ? opt.dvec_timeout_ms + 1000 : 2000);
            for (int t = 0; t < opt.peers; t++)
                for (int k = 0; t != g_me && k < opt.final_per_target; k++) {
                    int rc = send_one(th, &c[t], t, 1, &seq, &r);
                    if (rc != CDT_SUCCESS) {
                        /* what the transport says: the connect or the send, peer, lanes */
                        char detail[512];
                        cdt_ucx_last_error(detail, sizeof(detail));
                        ADD(g_st.final_send_err, 1);
                        report("final object to peer %d not sent: %s (%s)", t, cdt_err_name(rc),
                               detail);
                    }
                }
            final_done = 1;
            ADD(g_st.final_done, 1);
            continue;
        }
        if (g_quiesce || final_done) {
            sleep_ms(20);
            continue;
        }
        int cand[MAX_PEERS], n = 0;
        pthread_mutex_lock(&g_lock);
        for (int t = 0; t < opt.peers; t++)
            if (t != g_me && tab_port[t] != 0)
                cand[n++] = t;
        pthread_mutex_unlock(&g_lock);
        if (n == 0) {
            sleep_ms(20);
            continue;
        }
        int t = cand[rnd(&r) % (uint64_t)n];
        if (send_one(th, &c[t], t, 0, &seq, &r) != CDT_SUCCESS)
            sleep_ms(10);
    }
    for (int t = 0; t < opt.peers; t++)
        if (c[t].ep != NULL)
            cdt_ucx_ep_close(c[t].ep, 500);
    return NULL;
}
