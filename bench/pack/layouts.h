/*
 * layouts.h - the benchmark layouts of DDTBENCH.md, written once against a small builder
 * interface so that libcdt (pack_cdt.c) and each MPI (pack_mpi.c) build the same types.
 *
 * The including file defines, before including:
 *   T                       the type handle
 *   T_BYTE T_INT32 T_FLOAT T_DOUBLE
 *   B_CONTIG(n, t) B_VECTOR(c, bl, s, t) B_HVECTOR(c, bl, sb, t)
 *   B_IDX_BLOCK(c, bl, disps, t) B_HIDX_BLOCK(c, bl, bdisps, t)   (disps: int64_t arrays)
 *   B_STRUCT(c, bls, bdisps, types) B_RESIZED(t, lb, ext) B_SUBARRAY(nd, sz, sub, st, t) (C order)
 *   B_COMMIT(t) B_FREE(t) B_BOTTOM
 * and, for the hand-written loops, WITH_MANUAL.
 */
#ifndef BENCH_LAYOUTS_H
#define BENCH_LAYOUTS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct layout layout;
struct layout {
    const char *name;
    void *buf; /* what the pack call gets (B_BOTTOM for absolute addresses) */
    int64_t count;
    T type;
    int64_t bytes; /* packed bytes */
    void *mem[8];  /* allocations */
    int nmem;
    int64_t p[8]; /* parameters for the manual loops */
    int64_t *idx; /* index list (LAMMPS, SPECFEM) */
    void (*manual_pack)(const layout *l, char *out);
    void (*manual_unpack)(const layout *l, const char *in);
};

static uint64_t lay_rng = 88172645463325252ull;
static uint64_t lay_rand(void)
{
    lay_rng ^= lay_rng << 13;
    lay_rng ^= lay_rng >> 7;
    lay_rng ^= lay_rng << 17;
    return lay_rng;
}

static void *lay_alloc(layout *l, int64_t bytes)
{
    char *m = malloc((size_t)bytes + 64);
    for (int64_t i = 0; i < bytes; i++)
        m[i] = (char)(i * 7 + 3);
    l->mem[l->nmem++] = m;
    return m;
}

/* random permutation of 0..dim-1 truncated to ic */
static int64_t *lay_perm(int64_t dim, int64_t ic) /* first ic entries are used */
{
    (void)ic;
    int64_t *p = malloc(sizeof(int64_t) * (size_t)dim);
    for (int64_t i = 0; i < dim; i++)
        p[i] = i;
    for (int64_t i = dim - 1; i > 0; i--) {
        int64_t j = (int64_t)(lay_rand() % (uint64_t)(i + 1)), x = p[i];
        p[i] = p[j];
        p[j] = x;
    }
    return p;
}

/* Displacements were taken as absolute addresses; MPICH 4.0's MPI_Pack rejects MPI_BOTTOM
 * (a NULL inbuf), so every program uses the first array as the base instead. */
static void *lay_rebase(int64_t *disps, int n)
{
    int64_t anchor = disps[0];
    for (int i = 0; i < n; i++)
        disps[i] -= anchor;
    return (void *)(intptr_t)anchor;
}

#ifdef WITH_MANUAL
#define MANUAL(l, pk, up)                                                                          \
    do {                                                                                           \
        (l)->manual_pack = (pk);                                                                   \
        (l)->manual_unpack = (up);                                                                 \
    } while (0)
#else
#define MANUAL(l, pk, up) ((void)0)
#endif

/* ---------------- hand-written loops ---------------- */
#ifdef WITH_MANUAL
/* the layout's hand-written loops as bench_common.h methods */
static void manual_pack_all(const void *lp, char *out)
{
    const layout *l = lp;
    l->manual_pack(l, out);
}
static void manual_unpack_all(const void *lp, char *in)
{
    const layout *l = lp;
    l->manual_unpack(l, in);
}

/* strided blocks: p0 = count, p1 = block bytes, p2 = stride bytes, mem[0] = base */
static void man_strided_pack(const layout *l, char *o)
{
    const char *s = (const char *)l->mem[0] + l->p[3];
    int64_t n = l->p[0], b = l->p[1], st = l->p[2];
    for (int64_t i = 0; i < n; i++, o += b)
        memcpy(o, s + i * st, (size_t)b);
}
static void man_strided_unpack(const layout *l, const char *in)
{
    char *s = (char *)l->mem[0] + l->p[3];
    int64_t n = l->p[0], b = l->p[1], st = l->p[2];
    for (int64_t i = 0; i < n; i++, in += b)
        memcpy(s + i * st, in, (size_t)b);
}
/* single doubles at a stride (element loops, as a programmer writes them) */
static void man_dstride_pack(const layout *l, char *o)
{
    const double *s = (const double *)l->mem[0];
    double *d = (double *)o;
    int64_t n = l->p[0], st = l->p[2] / 8;
    for (int64_t i = 0; i < n; i++)
        d[i] = s[i * st];
}
static void man_dstride_unpack(const layout *l, const char *in)
{
    double *s = (double *)l->mem[0];
    const double *d = (const double *)in;
    int64_t n = l->p[0], st = l->p[2] / 8;
    for (int64_t i = 0; i < n; i++)
        s[i * st] = d[i];
}
/* 2-level: p0 outer count, p1 outer stride (bytes), p2 inner count, p3 inner stride (bytes),
 * p4 block bytes, p5 start offset */
static void man_2d_pack(const layout *l, char *o)
{
    const char *s = (const char *)l->mem[0] + l->p[5];
    for (int64_t i = 0; i < l->p[0]; i++)
        for (int64_t j = 0; j < l->p[2]; j++, o += l->p[4])
            memcpy(o, s + i * l->p[1] + j * l->p[3], (size_t)l->p[4]);
}
static void man_2d_unpack(const layout *l, const char *in)
{
    char *s = (char *)l->mem[0] + l->p[5];
    for (int64_t i = 0; i < l->p[0]; i++)
        for (int64_t j = 0; j < l->p[2]; j++, in += l->p[4])
            memcpy(s + i * l->p[1] + j * l->p[3], in, (size_t)l->p[4]);
}
/* 2-level of single doubles */
static void man_2d_d_pack(const layout *l, char *o)
{
    const char *s = (const char *)l->mem[0];
    double *d = (double *)o;
    for (int64_t i = 0; i < l->p[0]; i++) {
        const double *r = (const double *)(s + i * l->p[1]);
        int64_t st = l->p[3] / 8;
        for (int64_t j = 0; j < l->p[2]; j++)
            *d++ = r[j * st];
    }
}
static void man_2d_d_unpack(const layout *l, const char *in)
{
    char *s = (char *)l->mem[0];
    const double *d = (const double *)in;
    for (int64_t i = 0; i < l->p[0]; i++) {
        double *r = (double *)(s + i * l->p[1]);
        int64_t st = l->p[3] / 8;
        for (int64_t j = 0; j < l->p[2]; j++)
            r[j * st] = *d++;
    }
}
/* arrays gathered through an index list: mem[k] arrays of p[k+1] elements of p[0] bytes */
static void man_gather_pack(const layout *l, char *o)
{
    int64_t ic = l->p[7];
    for (int a = 0; a < l->nmem; a++) {
        int64_t w = l->p[a];
        const char *s = l->mem[a];
        if (w == 24) {
            for (int64_t i = 0; i < ic; i++, o += 24)
                memcpy(o, s + l->idx[i] * 24, 24);
        } else if (w == 12) {
            for (int64_t i = 0; i < ic; i++, o += 12)
                memcpy(o, s + l->idx[i] * 12, 12);
        } else if (w == 8) {
            double *d = (double *)o;
            for (int64_t i = 0; i < ic; i++)
                d[i] = ((const double *)s)[l->idx[i]];
            o += 8 * ic;
        } else {
            float *d = (float *)o;
            for (int64_t i = 0; i < ic; i++)
                d[i] = ((const float *)s)[l->idx[i]];
            o += 4 * ic;
        }
    }
}
static void man_gather_unpack(const layout *l, const char *in)
{
    int64_t ic = l->p[7];
    for (int a = 0; a < l->nmem; a++) {
        int64_t w = l->p[a];
        char *s = l->mem[a];
        if (w == 24) {
            for (int64_t i = 0; i < ic; i++, in += 24)
                memcpy(s + l->idx[i] * 24, in, 24);
        } else if (w == 12) {
            for (int64_t i = 0; i < ic; i++, in += 12)
                memcpy(s + l->idx[i] * 12, in, 12);
        } else if (w == 8) {
            const double *d = (const double *)in;
            for (int64_t i = 0; i < ic; i++)
                ((double *)s)[l->idx[i]] = d[i];
            in += 8 * ic;
        } else {
            const float *d = (const float *)in;
            for (int64_t i = 0; i < ic; i++)
                ((float *)s)[l->idx[i]] = d[i];
            in += 4 * ic;
        }
    }
}
/* WRF: arrays mem[a] (Fortran order d1 x d2 x d3 floats; 2D when p[a]==2), sub-block
 * [is..ie] x [0..sd2) x [js..je] given by p[4..7]: off1, sd1, off3, sd3; d1 p[0], d2 p[1],
 * d3 p[2]; sd2 p[3] */
static void man_wrf_pack(const layout *l, char *o)
{
    int64_t d1 = l->p[0], d2 = l->p[1], sd2 = l->p[3], o1 = l->p[4], s1 = l->p[5], o3 = l->p[6],
            s3 = l->p[7];
    float *d = (float *)o;
    for (int a = 0; a < l->nmem; a++) {
        const float *s = l->mem[a];
        int three = a >= 4;
        for (int64_t j = 0; j < s3; j++)
            for (int64_t k = 0; k < (three ? sd2 : 1); k++) {
                const float *r = three ? s + ((o3 + j) * d2 + k) * d1 + o1 : s + (o3 + j) * d1 + o1;
                for (int64_t i = 0; i < s1; i++)
                    *d++ = r[i];
            }
    }
}
static void man_wrf_unpack(const layout *l, const char *in)
{
    int64_t d1 = l->p[0], d2 = l->p[1], sd2 = l->p[3], o1 = l->p[4], s1 = l->p[5], o3 = l->p[6],
            s3 = l->p[7];
    const float *d = (const float *)in;
    for (int a = 0; a < l->nmem; a++) {
        float *s = l->mem[a];
        int three = a >= 4;
        for (int64_t j = 0; j < s3; j++)
            for (int64_t k = 0; k < (three ? sd2 : 1); k++) {
                float *r = three ? s + ((o3 + j) * d2 + k) * d1 + o1 : s + (o3 + j) * d1 + o1;
                for (int64_t i = 0; i < s1; i++)
                    r[i] = *d++;
            }
    }
}
/* struct {int a, b, c; double d} (24 bytes, gap after c) */
typedef struct {
    int32_t a, b, c;
    double d;
} simple_t;
static void man_simple_pack(const layout *l, char *o)
{
    const simple_t *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++, o += 20) {
        memcpy(o, &s[i].a, 4);
        memcpy(o + 4, &s[i].b, 4);
        memcpy(o + 8, &s[i].c, 4);
        memcpy(o + 12, &s[i].d, 8);
    }
}
static void man_simple_unpack(const layout *l, const char *in)
{
    simple_t *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++, in += 20) {
        memcpy(&s[i].a, in, 4);
        memcpy(&s[i].b, in + 4, 4);
        memcpy(&s[i].c, in + 8, 4);
        memcpy(&s[i].d, in + 12, 8);
    }
}
/* struct-vec {int a, b, c; double d; int data[2048]} */
typedef struct {
    int32_t a, b, c;
    double d;
    int32_t data[2048];
} svec_t;
static void man_svec_pack(const layout *l, char *o)
{
    const svec_t *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++) {
        memcpy(o, &s[i].a, 12);
        memcpy(o + 12, &s[i].d, 8);
        memcpy(o + 20, s[i].data, sizeof(s[i].data));
        o += 20 + sizeof(s[i].data);
    }
}
static void man_svec_unpack(const layout *l, const char *in)
{
    svec_t *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++) {
        memcpy(&s[i].a, in, 12);
        memcpy(&s[i].d, in + 12, 8);
        memcpy(s[i].data, in + 20, sizeof(s[i].data));
        in += 20 + sizeof(s[i].data);
    }
}
/* Vec<Vec<i32>>: p0 vectors of p1 bytes at the addresses in mem_list */
static void man_vecvec_pack(const layout *l, char *o)
{
    char **v = l->mem[1];
    for (int64_t i = 0; i < l->p[0]; i++, o += l->p[1])
        memcpy(o, v[i], (size_t)l->p[1]);
}
static void man_vecvec_unpack(const layout *l, const char *in)
{
    char **v = l->mem[1];
    for (int64_t i = 0; i < l->p[0]; i++, in += l->p[1])
        memcpy(v[i], in, (size_t)l->p[1]);
}
/* blocks of p1 bytes at byte offsets idx[i] of mem[0] */
static void man_hidx_pack(const layout *l, char *o)
{
    const char *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++, o += 64)
        memcpy(o, s + l->idx[i], 64);
}
static void man_hidx_unpack(const layout *l, const char *in)
{
    char *s = l->mem[0];
    for (int64_t i = 0; i < l->p[0]; i++, in += 64)
        memcpy(s + l->idx[i], in, 64);
}
/* FFT2: P elements, each N/P rows of N/P complex from rows of N complex */
static void man_fft_pack(const layout *l, char *o)
{
    int64_t n = l->p[0], np = l->p[1], P = n / np;
    const char *s = l->mem[0];
    for (int64_t e = 0; e < P; e++)
        for (int64_t r = 0; r < np; r++, o += np * 16)
            memcpy(o, s + e * np * 16 + r * n * 16, (size_t)(np * 16));
}
static void man_fft_unpack(const layout *l, const char *in)
{
    int64_t n = l->p[0], np = l->p[1], P = n / np;
    char *s = l->mem[0];
    for (int64_t e = 0; e < P; e++)
        for (int64_t r = 0; r < np; r++, in += np * 16)
            memcpy(s + e * np * 16 + r * n * 16, in, (size_t)(np * 16));
}
#endif

/* ---------------- the layouts ---------------- */

/* NAS_LU_x: contiguous(5*D2, DOUBLE) */
static void lay_nas_lu_x(layout *l, int64_t d2)
{
    char *m = lay_alloc(l, 5 * d2 * 8);
    l->type = B_CONTIG(5 * d2, T_DOUBLE);
    l->buf = m;
    l->count = 1;
    l->bytes = 5 * d2 * 8;
    l->p[0] = 1, l->p[1] = l->bytes, l->p[2] = l->bytes, l->p[3] = 0;
    MANUAL(l, man_strided_pack, man_strided_unpack);
}

/* NAS_LU_y: vector(D3, 1, D2+2, contiguous(5, DOUBLE)) */
static void lay_nas_lu_y(layout *l, int64_t d2)
{
    int64_t d3 = d2;
    char *m = lay_alloc(l, d3 * (d2 + 2) * 40);
    T c = B_CONTIG(5, T_DOUBLE);
    l->type = B_VECTOR(d3, 1, d2 + 2, c);
    B_FREE(c);
    l->buf = m;
    l->count = 1;
    l->bytes = d3 * 40;
    l->p[0] = d3, l->p[1] = 40, l->p[2] = (d2 + 2) * 40, l->p[3] = 0;
    MANUAL(l, man_strided_pack, man_strided_unpack);
}

/* NAS_MG_x: hvector(D3-2, 1, D1*D2*8, vector(D2-2, 1, D1, DOUBLE)) */
static void lay_nas_mg_x(layout *l, int64_t d1, int64_t d2, int64_t d3)
{
    char *m = lay_alloc(l, d1 * d2 * d3 * 8);
    T v = B_VECTOR(d2 - 2, 1, d1, T_DOUBLE);
    l->type = B_HVECTOR(d3 - 2, 1, d1 * d2 * 8, v);
    B_FREE(v);
    l->buf = m;
    l->count = 1;
    l->bytes = (d3 - 2) * (d2 - 2) * 8;
    l->p[0] = d3 - 2, l->p[1] = d1 * d2 * 8, l->p[2] = d2 - 2, l->p[3] = d1 * 8, l->p[4] = 8;
    l->p[5] = 0;
    MANUAL(l, man_2d_d_pack, man_2d_d_unpack);
}

/* NAS_MG_y: vector(D3-2, D1-2, D1*D2, DOUBLE) */
static void lay_nas_mg_y(layout *l, int64_t d1, int64_t d2, int64_t d3)
{
    char *m = lay_alloc(l, d1 * d2 * d3 * 8);
    l->type = B_VECTOR(d3 - 2, d1 - 2, d1 * d2, T_DOUBLE);
    l->buf = m;
    l->count = 1;
    l->bytes = (d3 - 2) * (d1 - 2) * 8;
    l->p[0] = d3 - 2, l->p[1] = (d1 - 2) * 8, l->p[2] = d1 * d2 * 8, l->p[3] = 0;
    MANUAL(l, man_strided_pack, man_strided_unpack);
}

/* NAS_MG_z: vector(D2-2, D1-2, D1, DOUBLE) */
static void lay_nas_mg_z(layout *l, int64_t d1, int64_t d2, int64_t d3)
{
    (void)d3;
    char *m = lay_alloc(l, d1 * d2 * 8);
    l->type = B_VECTOR(d2 - 2, d1 - 2, d1, T_DOUBLE);
    l->buf = m;
    l->count = 1;
    l->bytes = (d2 - 2) * (d1 - 2) * 8;
    l->p[0] = d2 - 2, l->p[1] = (d1 - 2) * 8, l->p[2] = d1 * 8, l->p[3] = 0;
    MANUAL(l, man_strided_pack, man_strided_unpack);
}

/* MILC_su3_zd: hvector(2, 1, 24*D2*D3*D4*D5/2 (bytes), vector(D5, D2*D3/2, D2*D3*D4/2,
 * contiguous(6, FLOAT))) */
static void lay_milc(layout *l, int64_t d2, int64_t d3, int64_t d4, int64_t d5)
{
    int64_t hstride = 24 * d2 * d3 * d4 * d5 / 2;
    int64_t vstride = d2 * d3 * d4 / 2 * 24, bl = d2 * d3 / 2;
    char *m = lay_alloc(l, hstride * 2 + 64);
    T c = B_CONTIG(6, T_FLOAT);
    T v = B_VECTOR(d5, bl, d2 * d3 * d4 / 2, c);
    l->type = B_HVECTOR(2, 1, hstride, v);
    B_FREE(c);
    B_FREE(v);
    l->buf = m;
    l->count = 1;
    l->bytes = 2 * d5 * bl * 24;
    l->p[0] = 2, l->p[1] = hstride, l->p[2] = d5, l->p[3] = vstride, l->p[4] = bl * 24;
    l->p[5] = 0;
    MANUAL(l, man_2d_pack, man_2d_unpack);
}

/* WRF_{x,y}_{vec,sa}: struct over 4 2D and 3 3D float arrays at absolute addresses */
static void lay_wrf(layout *l, int sa, int64_t ims, int64_t ime, int64_t jms, int64_t jme,
                    int64_t is, int64_t ie, int64_t js, int64_t je)
{
    int64_t d1 = ime - ims + 1, d2 = 65, d3 = jme - jms + 1, sd2 = 64;
    int64_t sd1 = ie - is + 1, sd3 = je - js + 1, o1 = is - ims, o3 = js - jms;
    T types[7];
    int64_t bls[7], disps[7];
    for (int a = 0; a < 7; a++) {
        int three = a >= 4;
        float *m = lay_alloc(l, (three ? d1 * d2 * d3 : d1 * d3) * 4);
        bls[a] = 1;
        disps[a] = (int64_t)(intptr_t)m;
        if (sa) {
            int64_t sz3[3] = {d3, d2, d1}, sub3[3] = {sd3, sd2, sd1}, st3[3] = {o3, 0, o1};
            int64_t sz2[2] = {d3, d1}, sub2[2] = {sd3, sd1}, st2[2] = {o3, o1};
            types[a] = three ? B_SUBARRAY(3, sz3, sub3, st3, T_FLOAT)
                             : B_SUBARRAY(2, sz2, sub2, st2, T_FLOAT);
        } else if (three) {
            T v = B_VECTOR(sd2, sd1, d1, T_FLOAT);
            types[a] = B_HVECTOR(sd3, 1, d1 * d2 * 4, v);
            B_FREE(v);
            disps[a] += (o3 * d2 * d1 + o1) * 4;
        } else {
            types[a] = B_VECTOR(sd3, sd1, d1, T_FLOAT);
            disps[a] += (o3 * d1 + o1) * 4;
        }
    }
    l->buf = lay_rebase(disps, 7);
    l->type = B_STRUCT(7, bls, disps, types);
    for (int a = 0; a < 7; a++)
        B_FREE(types[a]);
    l->count = 1;
    l->bytes = (4 * sd3 * sd1 + 3 * sd3 * sd2 * sd1) * 4;
    l->p[0] = d1, l->p[1] = d2, l->p[2] = d3, l->p[3] = sd2, l->p[4] = o1, l->p[5] = sd1;
    l->p[6] = o3, l->p[7] = sd3;
    MANUAL(l, man_wrf_pack, man_wrf_unpack);
}

/* LAMMPS: struct of indexed_block(ic, 3, 3*idx, DOUBLE) + (n-1) x indexed_block(ic, 1, idx,
 * DOUBLE) over separate arrays (absolute addresses) */
static void lay_lammps(layout *l, int narrays, int64_t ic, int64_t dim)
{
    l->idx = lay_perm(dim, ic);
    int64_t *idx3 = malloc(sizeof(int64_t) * (size_t)ic);
    for (int64_t i = 0; i < ic; i++)
        idx3[i] = 3 * l->idx[i];
    T types[8];
    int64_t bls[8], disps[8];
    for (int a = 0; a < narrays; a++) {
        void *m = lay_alloc(l, dim * (a == 0 ? 24 : 8));
        bls[a] = 1;
        disps[a] = (int64_t)(intptr_t)m;
        types[a] =
            a == 0 ? B_IDX_BLOCK(ic, 3, idx3, T_DOUBLE) : B_IDX_BLOCK(ic, 1, l->idx, T_DOUBLE);
        l->p[a] = a == 0 ? 24 : 8;
    }
    l->buf = lay_rebase(disps, narrays);
    l->type = B_STRUCT(narrays, bls, disps, types);
    for (int a = 0; a < narrays; a++)
        B_FREE(types[a]);
    free(idx3);
    l->count = 1;
    l->bytes = ic * (24 + 8 * (narrays - 1));
    l->p[7] = ic;
    MANUAL(l, man_gather_pack, man_gather_unpack);
}

/* SPECFEM3D_oc: indexed_block(ic, 1, idx, FLOAT) */
static void lay_specfem_oc(layout *l, int64_t ic, int64_t dim)
{
    l->idx = lay_perm(dim, ic);
    void *m = lay_alloc(l, dim * 4);
    l->type = B_IDX_BLOCK(ic, 1, l->idx, T_FLOAT);
    l->buf = m;
    l->count = 1;
    l->bytes = ic * 4;
    l->p[0] = 4, l->p[7] = ic;
    MANUAL(l, man_gather_pack, man_gather_unpack);
}

/* SPECFEM3D_cm: struct of indexed_block(ic_cm, 3, 3*idx, FLOAT), indexed_block(ic_ic, 3, 3*idx,
 * FLOAT); both arrays use the first ic_ic entries of one permutation for simplicity of the loop */
static void lay_specfem_cm(layout *l, int64_t ic, int64_t dim_cm, int64_t dim_ic)
{
    l->idx = lay_perm(dim_ic, ic);
    int64_t *idx3 = malloc(sizeof(int64_t) * (size_t)ic);
    for (int64_t i = 0; i < ic; i++)
        idx3[i] = 3 * l->idx[i];
    T types[2];
    int64_t bls[2] = {1, 1}, disps[2];
    for (int a = 0; a < 2; a++) {
        void *m = lay_alloc(l, (a == 0 ? dim_cm : dim_ic) * 12);
        disps[a] = (int64_t)(intptr_t)m;
        types[a] = B_IDX_BLOCK(ic, 3, idx3, T_FLOAT);
        l->p[a] = 12;
    }
    l->buf = lay_rebase(disps, 2);
    l->type = B_STRUCT(2, bls, disps, types);
    B_FREE(types[0]);
    B_FREE(types[1]);
    free(idx3);
    l->count = 1;
    l->bytes = 2 * ic * 12;
    l->p[7] = ic;
    MANUAL(l, man_gather_pack, man_gather_unpack);
}

/* SPECFEM3D_mt: vector(D3, 1, 2, contiguous(3, FLOAT)) */
static void lay_specfem_mt(layout *l, int64_t d3)
{
    char *m = lay_alloc(l, d3 * 24);
    T c = B_CONTIG(3, T_FLOAT);
    l->type = B_VECTOR(d3, 1, 2, c);
    B_FREE(c);
    l->buf = m;
    l->count = 1;
    l->bytes = d3 * 12;
    l->p[0] = d3, l->p[1] = 12, l->p[2] = 24, l->p[3] = 0;
    MANUAL(l, man_strided_pack, man_strided_unpack);
}

/* FFT2: resized(vector(N/P, N/P, N, complex), 0, N/P*16), count P */
static void lay_fft2(layout *l, int64_t n, int64_t P)
{
    int64_t np = n / P;
    char *m = lay_alloc(l, n * n * 16 / P);
    T cx = B_CONTIG(2, T_DOUBLE);
    T v = B_VECTOR(np, np, n, cx);
    l->type = B_RESIZED(v, 0, np * 16);
    B_FREE(cx);
    B_FREE(v);
    l->buf = m;
    l->count = P;
    l->bytes = np * np * 16 * P;
    l->p[0] = n, l->p[1] = np;
    MANUAL(l, man_fft_pack, man_fft_unpack);
}

/* seed 000 / 001: struct {int a, b, c; double d} resized to 24, count n */
static void lay_struct_simple(layout *l, int64_t n, int gap)
{
    void *m = lay_alloc(l, n * 24);
    T types[2] = {T_INT32, T_DOUBLE};
    int64_t bls[2] = {gap ? 3 : 2, 1}, disps[2] = {0, gap ? 16 : 8};
    T s = B_STRUCT(2, bls, disps, types);
    l->type = B_RESIZED(s, 0, gap ? 24 : 16);
    B_FREE(s);
    l->buf = m;
    l->count = n;
    l->bytes = n * (gap ? 20 : 16);
    l->p[0] = n, l->p[1] = 16, l->p[2] = 16, l->p[3] = 0;
    if (gap) {
        MANUAL(l, man_simple_pack, man_simple_unpack);
    } else {
        MANUAL(l, man_strided_pack, man_strided_unpack);
        l->p[0] = 1, l->p[1] = n * 16;
    }
}

/* seed 000 struct-vec {int a, b, c; double d; int data[2048]}, count n */
static void lay_struct_vec(layout *l, int64_t n)
{
    int64_t sz = 24 + 2048 * 4;
    void *m = lay_alloc(l, n * sz);
    T types[3] = {T_INT32, T_DOUBLE, T_INT32};
    int64_t bls[3] = {3, 1, 2048}, disps[3] = {0, 16, 24};
    T s = B_STRUCT(3, bls, disps, types);
    l->type = B_RESIZED(s, 0, sz);
    B_FREE(s);
    l->buf = m;
    l->count = n;
    l->bytes = n * (20 + 2048 * 4);
    l->p[0] = n;
    MANUAL(l, man_svec_pack, man_svec_unpack);
}

/* seed 000 double-vec: Vec<Vec<i32>>: n vectors of len bytes, each its own allocation */
static void lay_double_vec(layout *l, int64_t n, int64_t len)
{
    char **v = malloc(sizeof(char *) * (size_t)n);
    int64_t *d = malloc(sizeof(int64_t) * (size_t)n);
    char *pool = lay_alloc(l, n * (len + 64)); /* separate blocks with malloc-like gaps */
    for (int64_t i = 0; i < n; i++) {
        v[i] = pool + i * (len + 64);
        d[i] = (int64_t)(intptr_t)v[i];
    }
    l->mem[l->nmem++] = v;
    l->buf = lay_rebase(d, (int)n);
    l->type = B_HIDX_BLOCK(n, len / 4, d, T_INT32);
    free(d);
    l->count = 1;
    l->bytes = n * len;
    l->p[0] = n, l->p[1] = len;
    MANUAL(l, man_vecvec_pack, man_vecvec_unpack);
}

/* seed 001: vector(n, 1, 24, DOUBLE) */
/* vector(n, 1, stride, DOUBLE): every stride-th double */
static void lay_vec(layout *l, int64_t n, int64_t stride)
{
    void *m = lay_alloc(l, n * stride * 8);
    l->type = B_VECTOR(n, 1, stride, T_DOUBLE);
    l->buf = m;
    l->count = 1;
    l->bytes = n * 8;
    l->p[0] = n, l->p[1] = 8, l->p[2] = stride * 8, l->p[3] = 0;
    MANUAL(l, man_dstride_pack, man_dstride_unpack);
}

/* seed 001: 3D face of a cube: hvector(mz, 1, nx*ny*8, vector(my, 1, nx, DOUBLE)) */
static void lay_face(layout *l, int64_t nx, int64_t ny, int64_t nz, int64_t my, int64_t mz)
{
    char *m = lay_alloc(l, nx * ny * nz * 8);
    T v = B_VECTOR(my, 1, nx, T_DOUBLE);
    l->type = B_HVECTOR(mz, 1, nx * ny * 8, v);
    B_FREE(v);
    l->buf = m;
    l->count = 1;
    l->bytes = my * mz * 8;
    l->p[0] = mz, l->p[1] = nx * ny * 8, l->p[2] = my, l->p[3] = nx * 8, l->p[4] = 8, l->p[5] = 0;
    MANUAL(l, man_2d_d_pack, man_2d_d_unpack);
}

/* seed 001: random hindexed_block of 8-double blocks */
static void lay_rand_hidx(layout *l, int64_t n)
{
    char *m = lay_alloc(l, n * 64);
    int64_t *perm = lay_perm(n, n);
    for (int64_t i = 0; i < n; i++)
        perm[i] *= 64;
    l->idx = perm;
    l->type = B_HIDX_BLOCK(n, 8, perm, T_DOUBLE);
    l->buf = m;
    l->count = 1;
    l->bytes = n * 64;
    l->p[0] = n;
    MANUAL(l, man_hidx_pack, man_hidx_unpack);
}

/* every layout: returns how many were filled (at most max) */
static int layouts_make(layout *ls, int max)
{
    int n = 0;
#define ADD(nm, call)                                                                              \
    do {                                                                                           \
        if (n < max) {                                                                             \
            memset(&ls[n], 0, sizeof(ls[n]));                                                      \
            ls[n].name = nm;                                                                       \
            layout *l_ = &ls[n];                                                                   \
            call;                                                                                  \
            B_COMMIT(ls[n].type);                                                                  \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)
    ADD("NAS_LU_x", lay_nas_lu_x(l_, 408));
    ADD("NAS_LU_y", lay_nas_lu_y(l_, 408));
    ADD("NAS_MG_x", lay_nas_mg_x(l_, 130, 66, 66));
    ADD("NAS_MG_y", lay_nas_mg_y(l_, 130, 66, 66));
    ADD("NAS_MG_z", lay_nas_mg_z(l_, 130, 66, 66));
    ADD("MILC_su3_zd", lay_milc(l_, 8, 8, 8, 8));
    ADD("WRF_y_vec", lay_wrf(l_, 0, -4, 27, 34, 85, 1, 23, 41, 43));
    ADD("WRF_x_vec", lay_wrf(l_, 0, 4, 27, 14, 47, 18, 20, 18, 43));
    ADD("WRF_y_sa", lay_wrf(l_, 1, -4, 27, 34, 85, 1, 23, 41, 43));
    ADD("WRF_x_sa", lay_wrf(l_, 1, 4, 27, 14, 47, 18, 20, 18, 43));
    ADD("LAMMPS_full", lay_lammps(l_, 6, 3062, 3534));
    ADD("LAMMPS_atomic", lay_lammps(l_, 4, 243, 4084));
    ADD("SPECFEM3D_oc", lay_specfem_oc(l_, 3225, 88881));
    ADD("SPECFEM3D_cm", lay_specfem_cm(l_, 3009, 834917, 51153));
    ADD("SPECFEM3D_mt", lay_specfem_mt(l_, 7600));
    ADD("FFT2", lay_fft2(l_, 512, 2));
    ADD("struct_simple", lay_struct_simple(l_, 100000, 1));
    ADD("struct_simple_no_gap", lay_struct_simple(l_, 100000, 0));
    ADD("struct_vec", lay_struct_vec(l_, 64));
    ADD("double_vec_1KiB", lay_double_vec(l_, 1024, 1024));
    ADD("vector_1000", lay_vec(l_, 1000, 24));
    ADD("vector_100000", lay_vec(l_, 100000, 24));
    /* the demo's strided row: 8 MiB of every other double of 16 MiB (examples/c/transfer_demo.c;
     * memcpy of its 8 MiB is raw's one pass, the hand loop the best a pack can do) */
    ADD("demo_strided_8MiB", lay_vec(l_, 1 << 20, 2));
    ADD("face_200cube", lay_face(l_, 200, 200, 200, 100, 100));
    ADD("rand_hindexed_block", lay_rand_hidx(l_, 100000));
#undef ADD
    return n;
}

static void layouts_free(layout *ls, int n)
{
    for (int i = 0; i < n; i++) {
        B_FREE(ls[i].type);
        for (int k = 0; k < ls[i].nmem; k++)
            free(ls[i].mem[k]);
        free(ls[i].idx);
    }
}

#endif /* BENCH_LAYOUTS_H */
