/*
 * soak_common.c - time, random numbers, content, tags, object sizes and the classes of
 * statuses: computed alike by every peer thread and by the supervisor (see soak.c).
 */
#include "soak.h"

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sleep_ms(double ms)
{
    long long us = (long long)(ms * 1000);
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t rnd(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}
/* uniform in [lo, hi] */
cdt_count rnd_in(rng *r, cdt_count lo, cdt_count hi)
{
    if (hi <= lo)
        return lo;
    return lo + (cdt_count)(rnd(r) % (uint64_t)(hi - lo + 1));
}
double rnd_unit(rng *r)
{
    return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Content: byte `off` of a part whose key is `key` is byte (off & 7) of word (off >> 3). */
static inline uint64_t content_word(uint64_t key, uint64_t w)
{
    return mix64(key ^ (w * 0xd6e8feb86659fd93ull));
}

void content_fill(void *dst, cdt_count len, uint64_t key, cdt_count off)
{
    unsigned char *p = dst;
    while (len > 0 && (off & 7) != 0) {
        *p++ = (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8));
        off++;
        len--;
    }
    for (; len >= 8; len -= 8, off += 8, p += 8) {
        uint64_t v = content_word(key, (uint64_t)off >> 3);
        memcpy(p, &v, 8);
    }
    for (; len > 0; len--, off++)
        *p++ = (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8));
}

/* -1 when [src, src+len) holds the content of [off, off+len), else the first bad offset */
cdt_count content_check(const void *src, cdt_count len, uint64_t key, cdt_count off)
{
    const unsigned char *p = src;
    while (len > 0 && (off & 7) != 0) {
        if (*p != (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8)))
            return off;
        p++, off++, len--;
    }
    for (; len >= 8; len -= 8, off += 8, p += 8) {
        uint64_t v = content_word(key, (uint64_t)off >> 3), g;
        memcpy(&g, p, 8);
        if (g != v)
            for (int i = 0; i < 8; i++)
                if (p[i] != (unsigned char)(v >> (8 * i)))
                    return off + i;
    }
    for (; len > 0; len--, off++, p++)
        if (*p != (unsigned char)(content_word(key, (uint64_t)off >> 3) >> ((off & 7) * 8)))
            return off;
    return -1;
}

const char *fam_name[NFAM] = {"derived", "sobj", "dvec"};

cdt_ucx_tag tag_make(int fam, int final, int peer, int gen, int thread, uint64_t seq)
{
    return ((cdt_ucx_tag)fam << TAG_FAM_SHIFT) | (final ? TAG_FINAL : 0) |
           ((cdt_ucx_tag)(peer & 7) << 57) | ((cdt_ucx_tag)(gen & 0xffff) << 41) |
           ((cdt_ucx_tag)(thread & 3) << 39) | (seq & (((cdt_ucx_tag)1 << 39) - 1));
}
int tag_fam(cdt_ucx_tag t)
{
    return (int)(t >> TAG_FAM_SHIFT) & 3;
}
int tag_final(cdt_ucx_tag t)
{
    return (t & TAG_FINAL) != 0;
}
int tag_peer(cdt_ucx_tag t)
{
    return (int)(t >> 57) & 7;
}
int tag_gen(cdt_ucx_tag t)
{
    return (int)(t >> 41) & 0xffff;
}

/* the object's key: everything its bytes depend on */
uint64_t tag_key(cdt_ucx_tag t)
{
    return mix64(t ^ mix64(opt.seed));
}

/* object size in bytes: mostly small, some large */
cdt_count pick_size(rng *r, int final)
{
    double u = rnd_unit(r);
    cdt_count lo, hi;
    if (u < 0.03)
        return 0;
    if (u < 0.58)
        lo = 1, hi = 4 * KiB;
    else if (u < 0.86)
        lo = 4 * KiB, hi = 256 * KiB;
    else if (u < 0.975)
        lo = 256 * KiB, hi = 8 * MiB;
    else
        lo = 8 * MiB, hi = opt.max_bytes;
    if (final && hi > MiB)
        lo = 1, hi = MiB;
    if (hi > opt.max_bytes)
        hi = opt.max_bytes;
    if (lo > hi)
        lo = hi;
    /* log-uniform within the class */
    double x = (double)lo * pow((double)hi / (double)lo, rnd_unit(r));
    cdt_count n = (cdt_count)x;
    return n < lo ? lo : n > hi ? hi : n;
}

int st_idx(int rc)
{
    return rc < 0 && rc > -NSTATUS + 1 ? -rc : NSTATUS - 1;
}
int clean(int rc)
{
    return rc == CDT_ERR_PEER || rc == CDT_ERR_TIMEOUT || rc == CDT_ERR_CANCELED;
}
