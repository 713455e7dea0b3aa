/*
 * soak_verify.c - a received object checked byte for byte against what its tag says: the
 * derived stream through both layouts' iovecs, the sobj's and the dvec's parts (see soak.c).
 */
#include "soak.h"

typedef struct iov_cursor {
    const void *buf;
    cdt_type type;
    cdt_count next, n, i;
    cdt_iov iov[256];
    const char *p; /* current piece */
    cdt_count left;
} iov_cursor;

static int cursor_take(iov_cursor *c)
{
    while (c->left == 0) {
        if (c->i == c->n) {
            int rc = cdt_iov_get(c->buf, 1, c->type, c->next, 256, c->iov, &c->n);
            if (rc != CDT_SUCCESS)
                return rc;
            c->next += c->n;
            c->i = 0;
            if (c->n == 0)
                return 1; /* end */
        }
        c->p = c->iov[c->i].base;
        c->left = c->iov[c->i].len;
        c->i++;
    }
    return CDT_SUCCESS;
}

/* Compare the data of (rbuf, 1, rtype) with the content the sender's layout d holds for key.
 * Returns -1 when equal, else the first wrong stream offset; *rc gets a library error. */
static cdt_count derived_verify(const dspec *d, uint64_t key, const void *rbuf, cdt_type rtype,
                                int *rc)
{
    static char fake_mem_anchor[1];
    /* the sender's memory starts at a fake address: only offsets from it are used */
    const char *fake_mem = fake_mem_anchor;
    iov_cursor s = {.buf = fake_mem - d->true_lb, .type = d->type};
    iov_cursor r = {.buf = rbuf, .type = rtype};
    cdt_count pos = 0;
    *rc = CDT_SUCCESS;
    for (;;) {
        int a = cursor_take(&s), b = cursor_take(&r);
        if (a < 0 || b < 0) {
            *rc = a < 0 ? a : b;
            return pos;
        }
        if (a == 1 || b == 1)
            return a == b ? -1 : pos; /* both must end together */
        cdt_count n = s.left < r.left ? s.left : r.left;
        cdt_count bad = content_check(r.p, n, key, (cdt_count)(s.p - fake_mem));
        if (bad >= 0)
            return pos + (bad - (cdt_count)(s.p - fake_mem));
        s.p += n, s.left -= n, r.p += n, r.left -= n, pos += n;
    }
}

static void wrong(cdt_ucx_tag tag, const char *what, cdt_count at)
{
    ADD(g_st.wrong, 1);
    report("WRONG DATA: %s object from peer %d (tag 0x%016" PRIx64 "): %s at byte %" PRId64,
           fam_name[tag_fam(tag)], tag_peer(tag), (uint64_t)tag, what, at);
}

/* check a received object against what its tag says; returns its bytes, -1 when wrong */
cdt_count verify(rctx *x, double_vec *dv, cdt_ucx_tag tag)
{
    uint64_t key = tag_key(tag);
    rng kr = {key};
    cdt_count size = pick_size(&kr, tag_final(tag)), bytes = -1;
    if (tag_fam(tag) != x->fam) {
        wrong(tag, "family does not match the receive's mask", 0);
        return -1;
    }
    if (x->fam == FAM_DERIVED) {
        dspec d;
        int rc = derived_build(key, size, &d);
        if (rc != CDT_SUCCESS) {
            report("rebuilding the sender's type: %s", cdt_err_name(rc));
            ADD(g_st.unexpected, 1);
            return -1;
        }
        if (d.size != x->stream) {
            wrong(tag, "stream length differs from the sender's type size", x->stream);
        } else {
            cdt_count bad = derived_verify(&d, key, x->mem, x->type, &rc);
            if (rc != CDT_SUCCESS) {
                report("iov of a derived type: %s", cdt_err_name(rc));
                ADD(g_st.unexpected, 1);
            } else if (bad >= 0) {
                char what[128];
                snprintf(what, sizeof(what), "%s, %" PRId64 " B: stream byte differs",
                         shape_name[d.shape], d.size);
                wrong(tag, what, bad);
            } else {
                bytes = d.size;
            }
        }
        cdt_type_free(&d.type);
        return bytes;
    }
    if (x->fam == FAM_SOBJ) {
        sspec s;
        sobj_spec(key, size, &s);
        if (x->so.inband_len != s.inband_len || x->so.nbuffers != s.nbuf) {
            wrong(tag, "sobj shape (in-band length or buffer count)", 0);
            return -1;
        }
        cdt_count bad = content_check(x->so.inband, s.inband_len, part_key(key, -1), 0);
        if (bad >= 0) {
            wrong(tag, "sobj in-band byte", bad);
            return -1;
        }
        bytes = s.inband_len;
        for (int i = 0; i < s.nbuf; i++) {
            if (x->so.buffers[i].len != s.len[i] || x->so.buffers[i].kind != s.kind[i]) {
                wrong(tag, "sobj buffer length or kind", i);
                return -1;
            }
            bad = content_check(x->so.buffers[i].base, s.len[i], part_key(key, i), 0);
            if (bad >= 0) {
                wrong(tag, "sobj buffer byte", bad);
                return -1;
            }
            bytes += s.len[i];
        }
        return bytes;
    }
    vspec v;
    dvec_spec(key, size, &v);
    if (dv->n != v.n) {
        wrong(tag, "dvec array count", dv->n);
        return -1;
    }
    bytes = 0;
    for (int i = 0; i < v.n; i++) {
        if (dv->lens[i] != v.len[i]) {
            wrong(tag, "dvec array length", i);
            return -1;
        }
        cdt_count bad = content_check(dv->data[i], v.len[i] * 4, part_key(key, i), 0);
        if (bad >= 0) {
            wrong(tag, "dvec array byte", bad);
            return -1;
        }
        bytes += v.len[i] * 4;
    }
    return bytes;
}
