/*
 * test_engine_units.c - constructors' error cases, the canonical form (cdt_type_describe),
 * and counts above 2^31 checked through size/extent/iov arithmetic without touching memory.
 */
#include "../core/check.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char text[4096];

static const char *form(cdt_type t)
{
    text[0] = '\0';
    if (cdt_type_describe(t, text, sizeof(text), NULL) != CDT_SUCCESS)
        return "<describe failed>";
    return text;
}

/* commit t, compare its form with want, free it */
#define CHECK_FORM(t, want)                                                                        \
    do {                                                                                           \
        cdt_type t_ = (t);                                                                         \
        CHECK_OK(cdt_type_commit(&t_));                                                            \
        const char *got_ = form(t_);                                                               \
        if (strcmp(got_, (want)) != 0) {                                                           \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: form '%s', expected '%s'\n", __FILE__, __LINE__, got_,         \
                    (want));                                                                       \
        }                                                                                          \
        check_count++;                                                                             \
        cdt_type_free(&t_);                                                                        \
    } while (0)

static cdt_type mk(int rc, cdt_type *t)
{
    CHECK_OK(rc);
    return *t;
}

static void test_errors(void)
{
    cdt_type t = NULL, u = NULL;
    cdt_count bl[2] = {1, 1}, d[2] = {0, 1}, neg[2] = {1, -1};
    cdt_type types[2] = {CDT_INT32, NULL};

    CHECK_RC(cdt_type_contiguous(-1, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_contiguous(1, NULL, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_contiguous(1, CDT_INT32, NULL), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_contiguous(INT64_MAX / 2, CDT_INT64, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_vector(-1, 1, 1, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_vector(2, -1, 1, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_vector(2, 1, INT64_MAX / 2, CDT_INT32, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_vector(5, 1, INT64_MAX / 8, CDT_INT32, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_hvector(-2, 1, 8, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_hvector(3, 1, INT64_MAX / 2 + 1, CDT_INT32, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_indexed(-1, bl, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_indexed(2, NULL, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_indexed(2, bl, NULL, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_indexed(2, neg, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    cdt_count big[2] = {0, INT64_MAX / 2};
    CHECK_RC(cdt_type_indexed(2, bl, big, CDT_INT32, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_hindexed(2, bl, NULL, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_hindexed(2, neg, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    cdt_count huge[2] = {0, INT64_MAX};
    CHECK_RC(cdt_type_hindexed(2, bl, huge, CDT_INT32, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_indexed_block(2, -1, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_indexed_block(2, 1, NULL, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_indexed_block(-2, 1, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_hindexed_block(2, 1, NULL, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_hindexed_block(2, -3, d, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_struct(2, bl, d, NULL, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_struct(2, bl, d, types, &t), CDT_ERR_INVALID_ARG); /* NULL entry */
    CHECK_RC(cdt_type_struct(2, NULL, d, types, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_struct(-1, bl, d, types, &t), CDT_ERR_INVALID_ARG);
    cdt_count sz[2] = {4, 4}, sub[2] = {2, 2}, st[2] = {1, 1}, bad[2] = {3, 0};
    CHECK_RC(cdt_type_subarray(0, sz, sub, st, CDT_ORDER_C, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_subarray(33, sz, sub, st, CDT_ORDER_C, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_subarray(2, sz, sub, st, 7, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_subarray(2, sz, sub, bad, CDT_ORDER_C, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_subarray(2, NULL, sub, st, CDT_ORDER_C, CDT_INT32, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_resized(NULL, 0, 8, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_resized(CDT_INT32, INT64_MAX, 8, &t), CDT_ERR_OVERFLOW);
    CHECK_RC(cdt_type_dup(NULL, &t), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_commit(NULL), CDT_ERR_INVALID_ARG);

    /* uncommitted types cannot be used */
    CHECK_OK(cdt_type_vector(2, 1, 2, CDT_INT32, &t));
    int buf[4];
    cdt_op op;
    cdt_count n;
    cdt_iov iov[2];
    CHECK_RC(cdt_op_pack_begin(buf, 1, t, &op), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_pack_size(1, t, &n), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_iov_count(buf, 1, t, &n), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_iov_get(buf, 1, t, 0, 2, iov, &n), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_copy(buf, 1, t, buf, 1, CDT_INT32), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_type_describe(t, text, sizeof(text), NULL), CDT_ERR_NOT_COMMITTED);
    /* a committed parent of an uncommitted child is fine (MPI semantics) */
    CHECK_OK(cdt_type_contiguous(2, t, &u));
    CHECK_OK(cdt_type_commit(&u));
    CHECK_OK(cdt_pack_size(3, u, &n));
    CHECK(n == 3 * 16);
    CHECK_RC(cdt_pack_size(-1, u, &n), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_iov_get(buf, 1, u, -1, 2, iov, &n), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_copy(buf, 2, CDT_INT32, buf, 1, CDT_INT32), CDT_ERR_TRUNCATED);
    CHECK_RC(cdt_type_free(&(cdt_type){CDT_INT32}), CDT_ERR_INVALID_ARG);
    cdt_type_free(&t);
    cdt_type_free(&u);
    CHECK(t == NULL && u == NULL);
}

static void test_queries(void)
{
    cdt_type t;
    cdt_count size, lb, ext, tlb, text_;
    /* vector(3, 2, -4, int32): blocks at 0, -16, -32 */
    CHECK_OK(cdt_type_vector(3, 2, -4, CDT_INT32, &t));
    CHECK_OK(cdt_type_size(t, &size));
    CHECK_OK(cdt_type_extent(t, &lb, &ext));
    CHECK_OK(cdt_type_true_extent(t, &tlb, &text_));
    CHECK(size == 24 && lb == -32 && ext == 40 && tlb == -32 && text_ == 40);
    cdt_type r;
    CHECK_OK(cdt_type_resized(t, -8, -20, &r));
    CHECK_OK(cdt_type_extent(r, &lb, &ext));
    CHECK_OK(cdt_type_true_extent(r, &tlb, &text_));
    CHECK(lb == -8 && ext == -20 && tlb == -32 && text_ == 40);
    cdt_type d;
    CHECK_OK(cdt_type_commit(&r));
    CHECK_OK(cdt_type_dup(r, &d));
    CHECK_OK(cdt_type_extent(d, &lb, &ext));
    CHECK(lb == -8 && ext == -20);
    CHECK_OK(cdt_pack_size(2, d, &size)); /* dup of a committed type is committed */
    CHECK(size == 48);
    cdt_kind k;
    CHECK_OK(cdt_type_kind(d, &k));
    CHECK(k == CDT_KIND_INT32);
    cdt_type_free(&t);
    cdt_type_free(&r);
    cdt_type_free(&d);
    /* subarray: lb 0, extent = whole array */
    cdt_count sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
    CHECK_OK(cdt_type_subarray(2, sz, sub, st, CDT_ORDER_C, CDT_DOUBLE, &t));
    CHECK_OK(cdt_type_extent(t, &lb, &ext));
    CHECK_OK(cdt_type_true_extent(t, &tlb, &text_));
    CHECK(lb == 0 && ext == 4 * 6 * 8 && tlb == (1 * 6 + 2) * 8 && text_ == (6 + 3) * 8);
    CHECK_FORM(t, "@64 vector(2, 48, contig(24))");
}

static void test_canonical(void)
{
    cdt_type t, u;
    /* vector with stride == blocklength is contiguous */
    CHECK_FORM(mk(cdt_type_vector(4, 2, 2, CDT_INT32, &t), &t), "contig(32)");
    CHECK_FORM(mk(cdt_type_contiguous(8, CDT_INT32, &t), &t), "contig(32)");
    CHECK_FORM(mk(cdt_type_contiguous(4, CDT_DOUBLE, &t), &t), "contig(32)");
    /* one strided layout, five constructions */
    const char *strided = "vector(3, 16, contig(8))";
    CHECK_FORM(mk(cdt_type_vector(3, 1, 2, CDT_DOUBLE, &t), &t), strided);
    CHECK_FORM(mk(cdt_type_hvector(3, 1, 16, CDT_DOUBLE, &t), &t), strided);
    cdt_count d3[3] = {0, 2, 4}, b3[3] = {1, 1, 1}, bd3[3] = {0, 16, 32};
    CHECK_FORM(mk(cdt_type_indexed_block(3, 1, d3, CDT_DOUBLE, &t), &t), strided);
    CHECK_FORM(mk(cdt_type_indexed(3, b3, d3, CDT_DOUBLE, &t), &t), strided);
    cdt_type dt3[3] = {CDT_DOUBLE, CDT_DOUBLE, CDT_DOUBLE};
    CHECK_FORM(mk(cdt_type_struct(3, b3, bd3, dt3, &t), &t), strided);
    /* resized extents fold into strides */
    CHECK_OK(cdt_type_resized(CDT_DOUBLE, 0, 16, &u));
    CHECK_FORM(mk(cdt_type_contiguous(3, u, &t), &t), strided);
    cdt_type_free(&u);
    /* two int32 made into a double-sized pair, in two ways */
    CHECK_OK(cdt_type_contiguous(2, CDT_INT32, &u));
    CHECK_FORM(mk(cdt_type_vector(3, 1, 2, u, &t), &t), strided);
    cdt_type_free(&u);
    /* adjacent indexed blocks merge */
    cdt_count bl2[2] = {1, 3}, d2[2] = {0, 1};
    CHECK_FORM(mk(cdt_type_indexed(2, bl2, d2, CDT_INT32, &t), &t), "contig(16)");
    /* zero-length blocks vanish */
    cdt_count blz[3] = {2, 0, 2}, dz[3] = {0, 100, 2};
    CHECK_FORM(mk(cdt_type_indexed(3, blz, dz, CDT_INT32, &t), &t), "contig(16)");
    /* struct with a gap: {int a, b, c; double d} */
    cdt_count sb[4] = {1, 1, 1, 1}, sd[4] = {0, 4, 8, 16};
    cdt_type st[4] = {CDT_INT32, CDT_INT32, CDT_INT32, CDT_DOUBLE};
    CHECK_FORM(mk(cdt_type_struct(4, sb, sd, st, &t), &t), "indexed([0:12,16:8])");
    cdt_count sb2[2] = {3, 1}, sd2[2] = {0, 16};
    cdt_type st2[2] = {CDT_INT32, CDT_DOUBLE};
    CHECK_FORM(mk(cdt_type_struct(2, sb2, sd2, st2, &t), &t), "indexed([0:12,16:8])");
    /* nested vectors whose strides line up flatten; others nest */
    CHECK_OK(cdt_type_vector(4, 1, 2, CDT_INT32, &u));
    CHECK_FORM(mk(cdt_type_hvector(3, 1, 32, u, &t), &t), "vector(12, 8, contig(4))");
    CHECK_FORM(mk(cdt_type_hvector(3, 1, 100, u, &t), &t),
               "vector(3, 100, vector(4, 8, contig(4)))");
    cdt_type_free(&u);
    /* blocks of a non-run child with uneven displacements */
    CHECK_OK(cdt_type_vector(2, 1, 2, CDT_INT32, &u));
    cdt_count bd[3] = {0, 100, 164};
    CHECK_FORM(mk(cdt_type_hindexed_block(3, 1, bd, u, &t), &t),
               "blockindexed([0,100,164], vector(2, 8, contig(4)))");
    cdt_type_free(&u);
    /* subarray in C order equals the Fortran-order subarray of the transposed shape */
    cdt_count sc[2] = {4, 6}, ssc[2] = {2, 3}, stc[2] = {1, 2};
    cdt_count sf[2] = {6, 4}, ssf[2] = {3, 2}, stf[2] = {2, 1};
    cdt_type a, b;
    CHECK_OK(cdt_type_subarray(2, sc, ssc, stc, CDT_ORDER_C, CDT_FLOAT, &a));
    CHECK_OK(cdt_type_subarray(2, sf, ssf, stf, CDT_ORDER_FORTRAN, CDT_FLOAT, &b));
    CHECK_OK(cdt_type_commit(&a));
    CHECK_OK(cdt_type_commit(&b));
    char fa[256];
    snprintf(fa, sizeof(fa), "%s", form(a));
    CHECK(strcmp(fa, form(b)) == 0);
    CHECK(strcmp(fa, "@32 vector(2, 24, contig(12))") == 0);
    cdt_type_free(&a);
    cdt_type_free(&b);
    /* empty */
    CHECK_FORM(mk(cdt_type_contiguous(0, CDT_INT32, &t), &t), "empty");
    /* describe truncates and reports the full length */
    CHECK_OK(cdt_type_vector(3, 1, 2, CDT_DOUBLE, &t));
    CHECK_OK(cdt_type_commit(&t));
    char small[8];
    size_t need = 0;
    CHECK_OK(cdt_type_describe(t, small, sizeof(small), &need));
    CHECK(need == strlen(strided) && strlen(small) == 7 && !strncmp(small, strided, 7));
    cdt_type_free(&t);
}

/* counts above 2^31: arithmetic only, no memory is touched */
static void test_large(void)
{
    cdt_type v, t;
    cdt_count size, lb, ext, n;
    CHECK_OK(cdt_type_vector(3, 1, 4, CDT_DOUBLE, &v)); /* 3 runs of 8 bytes, extent 72 */
    CHECK_OK(cdt_type_resized(v, 0, 96, &t));
    CHECK_OK(cdt_type_commit(&t));
    cdt_count count = (cdt_count)1 << 33;
    CHECK_OK(cdt_pack_size(count, t, &size));
    CHECK(size == count * 24);
    char *fake = (char *)(uintptr_t)0x100000; /* never dereferenced */
    CHECK_OK(cdt_iov_count(fake, count, t, &n));
    CHECK(n == 3 * count);
    cdt_iov iov[4];
    CHECK_OK(cdt_iov_get(fake, count, t, 3 * count - 2, 4, iov, &n));
    CHECK(n == 2);
    CHECK((char *)iov[0].base == fake + (count - 1) * 96 + 32 && iov[0].len == 8);
    CHECK((char *)iov[1].base == fake + (count - 1) * 96 + 64 && iov[1].len == 8);
    CHECK_OK(cdt_iov_get(fake, count, t, 3 * count, 4, iov, &n));
    CHECK(n == 0);
    cdt_type big;
    CHECK_OK(cdt_type_contiguous((cdt_count)1 << 40, t, &big));
    CHECK_OK(cdt_type_size(big, &size));
    CHECK_OK(cdt_type_extent(big, &lb, &ext));
    CHECK(size == ((cdt_count)24 << 40) && lb == 0 && ext == ((cdt_count)96 << 40));
    CHECK_OK(cdt_type_commit(&big));
    CHECK_RC(cdt_pack_size((cdt_count)1 << 40, big, &size), CDT_ERR_OVERFLOW);
    CHECK(strcmp(form(big), "vector(3298534883328, 32, contig(8))") == 0);
    cdt_type bigv;
    CHECK_OK(cdt_type_vector((cdt_count)3 << 31, 2, 5, CDT_INT32, &bigv));
    CHECK_OK(cdt_type_size(bigv, &size));
    CHECK(size == ((cdt_count)3 << 31) * 8);
    cdt_type_free(&bigv);
    cdt_type_free(&big);
    cdt_type_free(&t);
    cdt_type_free(&v);
}

/* pack at every split of every element through the operation API */
static void test_split_offsets(void)
{
    cdt_type t;
    cdt_count sb[4] = {1, 1, 1, 1}, sd[4] = {0, 4, 8, 16};
    cdt_type st[4] = {CDT_INT32, CDT_INT32, CDT_INT32, CDT_DOUBLE};
    CHECK_OK(cdt_type_struct(4, sb, sd, st, &t));
    CHECK_OK(cdt_type_commit(&t));
    unsigned char src[24 * 5], want[20 * 5], got[20 * 5];
    for (int i = 0; i < (int)sizeof(src); i++)
        src[i] = (unsigned char)i;
    for (int e = 0, k = 0; e < 5; e++) {
        memcpy(want + k, src + 24 * e, 12);
        memcpy(want + k + 12, src + 24 * e + 16, 8);
        k += 20;
    }
    for (int a = 0; a <= 100; a++)
        for (int b = a; b <= 100; b++) {
            cdt_op op;
            cdt_count used;
            memset(got, 0, sizeof(got));
            CHECK_OK(cdt_op_pack_begin(src, 5, t, &op));
            if (b > a)
                CHECK_OK(cdt_op_pack(op, a, got + a, b - a, &used));
            cdt_op_end(op);
            if (memcmp(got + a, want + a, (size_t)(b - a)) != 0) {
                CHECK(!"split pack");
                a = b = 101;
            }
        }
    cdt_type_free(&t);
}

/* cases the type-constructor fuzzer found (tests/fuzz/fuzz_type_create.c); each one was
 * undefined behaviour, caught by the sanitizer build */
static void test_fuzz_regressions(void)
{
    cdt_type a, b;
    /* subarray: start * stride of a later dimension passed 128 bits before the check */
    cdt_count sz[3] = {(cdt_count)1 << 62, (cdt_count)1 << 62, (cdt_count)1 << 40};
    cdt_count sub[3] = {1, 1, 1}, st[3] = {0, 0, (cdt_count)1 << 39};
    CHECK_RC(cdt_type_subarray(3, sz, sub, st, CDT_ORDER_FORTRAN, CDT_BYTE, &a), CDT_ERR_OVERFLOW);
    /* no blocks: the blocklength times the old size need not fit, commit must not compute it */
    CHECK_FORM(mk(cdt_type_hvector(0, INT64_MAX / 4, 8, CDT_DOUBLE, &a), &a), "empty");
    /* a vector of a vector whose count * stride does not fit 64 bits */
    CHECK_OK(cdt_type_hvector(2, 1, (cdt_count)3 << 61, CDT_BYTE, &a));
    CHECK_FORM(mk(cdt_type_hvector(2, 1, 8, a, &b), &b),
               "vector(2, 8, vector(2, 6917529027641081856, contig(1)))");
    cdt_type_free(&a);
    /* data at INT64_MIN: moving the node to offset 0 negated INT64_MIN */
    cdt_count one = 1, lowest = INT64_MIN;
    CHECK_OK(cdt_type_hindexed(1, &one, &lowest, CDT_BYTE, &a));
    CHECK_OK(cdt_type_resized(a, INT64_MIN, 2, &b));
    cdt_type_free(&a);
    CHECK_FORM(mk(cdt_type_contiguous(2, b, &a), &a),
               "@-9223372036854775808 vector(2, 2, contig(1))");
    cdt_type_free(&b);
    /* one element of a type with a huge extent: the kernels stepped the pointer by the extent
     * past the last element */
    CHECK_OK(cdt_type_vector(2, 1, 2, CDT_INT32, &a));
    CHECK_OK(cdt_type_resized(a, 0, -((cdt_count)1 << 62), &b));
    CHECK_OK(cdt_type_commit(&b));
    int32_t src[3] = {1, 2, 3}, dst[2] = {0, 0}, back[3] = {0, 0, 0};
    cdt_op op;
    cdt_count used = 0;
    CHECK_OK(cdt_op_pack_begin(src, 1, b, &op));
    CHECK_OK(cdt_op_pack(op, 0, dst, sizeof(dst), &used));
    cdt_op_end(op);
    CHECK(used == 8 && dst[0] == 1 && dst[1] == 3);
    CHECK_OK(cdt_op_unpack_begin(back, 1, b, &op));
    CHECK_OK(cdt_op_unpack(op, 0, dst, sizeof(dst)));
    cdt_op_end(op);
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 3);
    cdt_type_free(&a);
    cdt_type_free(&b);
}

/* Types whose displacements are absolute addresses, used with CDT_BOTTOM (a NULL base): the
 * engine must form every address from the displacement, never by offsetting a null pointer
 * (undefined behaviour that UBSan reports as "applying non-zero offset to null pointer"). */
static void test_bottom(void)
{
    static int32_t a[4] = {1, 2, 3, 4};
    static double b[3] = {0.5, 1.5, 2.5};
    cdt_count bl[2] = {4, 3};
    cdt_count disp[2] = {(cdt_count)(intptr_t)a, (cdt_count)(intptr_t)b};
    cdt_type types[2] = {CDT_INT32, CDT_DOUBLE};
    cdt_type t;
    CHECK_OK(cdt_type_struct(2, bl, disp, types, &t));
    CHECK_OK(cdt_type_commit(&t));
    cdt_count size = 0;
    CHECK_OK(cdt_pack_size(1, t, &size));
    CHECK(size == 4 * 4 + 3 * 8);

    unsigned char packed[40];
    cdt_op op;
    cdt_count used = 0, n = 0;
    CHECK_OK(cdt_op_pack_begin(CDT_BOTTOM, 1, t, &op));
    CHECK_OK(cdt_op_pack(op, 0, packed, 5, &used)); /* a fragment that splits an element */
    CHECK_OK(cdt_op_pack(op, 5, packed + 5, size - 5, &used));
    CHECK_OK(cdt_op_end(op));
    CHECK(memcmp(packed, a, 16) == 0 && memcmp(packed + 16, b, 24) == 0);

    cdt_iov iov[2];
    CHECK_OK(cdt_iov_count(CDT_BOTTOM, 1, t, &n));
    CHECK(n == 2);
    CHECK_OK(cdt_iov_get(CDT_BOTTOM, 1, t, 0, 2, iov, &n));
    CHECK(n == 2 && iov[0].base == (void *)a && iov[1].base == (void *)b);

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    CHECK_OK(cdt_op_unpack_begin(CDT_BOTTOM, 1, t, &op));
    CHECK_OK(cdt_op_unpack(op, 7, packed + 7, size - 7));
    CHECK_OK(cdt_op_unpack(op, 0, packed, 7));
    CHECK_OK(cdt_op_end(op));
    CHECK(a[3] == 4 && b[2] == 2.5);

    int32_t c[4];
    double e[3];
    cdt_type dst;
    cdt_count dbl[2] = {4, 3};
    cdt_count dd[2] = {(cdt_count)(intptr_t)c, (cdt_count)(intptr_t)e};
    CHECK_OK(cdt_type_struct(2, dbl, dd, types, &dst));
    CHECK_OK(cdt_type_commit(&dst));
    CHECK_OK(cdt_copy(CDT_BOTTOM, 1, t, CDT_BOTTOM, 1, dst));
    CHECK(memcmp(c, a, sizeof(c)) == 0 && memcmp(e, b, sizeof(e)) == 0);

    void *frame_buf = NULL;
    cdt_frame frame;
    cdt_count fsize;
    CHECK_OK(cdt_frame_encode(CDT_BOTTOM, 1, t, NULL, &frame));
    CHECK_OK(cdt_frame_size(frame, &fsize));
    frame_buf = malloc((size_t)fsize);
    CHECK(frame_buf != NULL);
    CHECK_OK(cdt_frame_gather(frame, 0, frame_buf, fsize));
    CHECK_OK(cdt_frame_free(frame));
    memset(c, 0, sizeof(c));
    memset(e, 0, sizeof(e));
    CHECK_OK(cdt_frame_decode(frame_buf, fsize, CDT_BOTTOM, 1, dst));
    CHECK(memcmp(c, a, sizeof(c)) == 0 && memcmp(e, b, sizeof(e)) == 0);
    free(frame_buf);
    cdt_type_free(&dst);
    cdt_type_free(&t);
}

/* cdt_pack / cdt_unpack: whole messages one after another in one buffer, and every refusal */
static void test_pack_whole(void)
{
    int32_t a[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    double d[2] = {1.5, -2.5}, dback[2] = {0};
    cdt_type v, loose;
    CHECK_OK(cdt_type_vector(3, 1, 2, CDT_INT32, &v)); /* a[0], a[2], a[4] */
    CHECK_OK(cdt_type_commit(&v));
    unsigned char packed[64];
    cdt_count pos = 0;
    CHECK_OK(cdt_pack(a, 1, v, packed, sizeof packed, &pos));
    CHECK(pos == 12);
    CHECK_OK(cdt_pack(d, 2, CDT_DOUBLE, packed, sizeof packed, &pos));
    CHECK(pos == 28);
    CHECK_RC(cdt_pack(d, 5, CDT_DOUBLE, packed, sizeof packed, &pos), CDT_ERR_TRUNCATED);
    CHECK(pos == 28);
    CHECK_OK(cdt_pack(d, 0, CDT_DOUBLE, NULL, 28, &pos)); /* nothing to write: no dst needed */
    CHECK(pos == 28);
    cdt_count rpos = 0;
    CHECK_OK(cdt_unpack(packed, pos, &rpos, back, 1, v));
    CHECK_OK(cdt_unpack(packed, pos, &rpos, dback, 2, CDT_DOUBLE));
    CHECK(rpos == 28);
    CHECK(back[0] == 1 && back[1] == 0 && back[2] == 3 && back[4] == 5 && back[5] == 0);
    CHECK(dback[0] == 1.5 && dback[1] == -2.5);
    CHECK_RC(cdt_unpack(packed, pos, &rpos, dback, 1, CDT_DOUBLE), CDT_ERR_TRUNCATED);
    CHECK(rpos == 28);

    pos = 0;
    CHECK_RC(cdt_pack(a, 1, NULL, packed, 64, &pos), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_pack(a, 1, v, packed, 64, NULL), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_pack(a, -1, v, packed, 64, &pos), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_pack(a, 1, v, packed, -1, &pos), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_pack(a, 1, v, NULL, 64, &pos), CDT_ERR_INVALID_ARG);
    pos = 65;
    CHECK_RC(cdt_pack(a, 1, v, packed, 64, &pos), CDT_ERR_INVALID_ARG);
    pos = -1;
    CHECK_RC(cdt_unpack(packed, 64, &pos, back, 1, v), CDT_ERR_INVALID_ARG);
    pos = 0;
    CHECK_RC(cdt_unpack(NULL, 64, &pos, back, 1, v), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_pack(a, INT64_MAX / 2, v, packed, 64, &pos), CDT_ERR_OVERFLOW);
    CHECK(pos == 0);
    CHECK_OK(cdt_type_contiguous(2, CDT_INT32, &loose));
    CHECK_RC(cdt_pack(a, 1, loose, packed, 64, &pos), CDT_ERR_NOT_COMMITTED);
    CHECK_RC(cdt_unpack(packed, 64, &pos, a, 1, loose), CDT_ERR_NOT_COMMITTED);
    cdt_type_free(&loose);
    cdt_type_free(&v);
}

/* cdt_type_padded: a C struct's records as their memory, gaps included; one block for many */
typedef struct {
    int32_t a; /* 4 bytes of padding after it */
    double b;
    int16_t c; /* 6 after it */
} padded_rec;

static void test_padded(void)
{
    cdt_type fields, rec, p, bad, custom_like;
    cdt_count bl[3] = {1, 1, 1};
    cdt_count disp[3] = {offsetof(padded_rec, a), offsetof(padded_rec, b), offsetof(padded_rec, c)};
    cdt_type kinds[3] = {CDT_INT32, CDT_DOUBLE, CDT_INT16};
    CHECK_OK(cdt_type_struct(3, bl, disp, kinds, &fields));
    CHECK_OK(cdt_type_resized(fields, 0, sizeof(padded_rec), &rec));
    CHECK_OK(cdt_type_commit(&rec));
    CHECK_OK(cdt_type_padded(rec, &p));
    CHECK_OK(cdt_type_commit(&p));
    cdt_count size, lb, extent;
    cdt_kind kind;
    CHECK_OK(cdt_type_size(p, &size));
    CHECK_OK(cdt_type_extent(p, &lb, &extent));
    CHECK_OK(cdt_type_kind(p, &kind));
    CHECK(size == (cdt_count)sizeof(padded_rec) && lb == 0 && extent == size);
    CHECK(kind == CDT_KIND_BYTE);
    CHECK_FORM(mk(cdt_type_padded(rec, &bad), &bad), "contig(24)"); /* one block */

    /* the pack is the records' memory, the gaps' bytes included; the unpack writes them */
    enum { N = 1000 };
    padded_rec *src = malloc(N * sizeof(*src)), *dst = malloc(N * sizeof(*dst));
    unsigned char *packed = malloc(N * sizeof(*src));
    CHECK(src != NULL && dst != NULL && packed != NULL);
    for (size_t i = 0; i < N * sizeof(*src); i++)
        ((unsigned char *)src)[i] = (unsigned char)(i * 7 + 3);
    memset(dst, 0, N * sizeof(*dst));
    cdt_count pos = 0;
    CHECK_OK(cdt_pack(src, N, p, packed, N * sizeof(*src), &pos));
    CHECK(pos == N * (cdt_count)sizeof(*src));
    CHECK(memcmp(packed, src, N * sizeof(*src)) == 0);
    cdt_count rpos = 0;
    CHECK_OK(cdt_unpack(packed, pos, &rpos, dst, N, p));
    CHECK(memcmp(dst, src, N * sizeof(*src)) == 0);
    /* a frame sends a large array of them as one region, taken in place */
    cdt_frame f;
    cdt_count regions = 0, frame_size = 0;
    CHECK_OK(cdt_frame_encode(src, N, p, NULL, &f));
    CHECK_OK(cdt_frame_region_count(f, &regions));
    CHECK(regions == 1);
    /* the unpadded type's receiver gets a longer stream than it holds: an error */
    CHECK_OK(cdt_frame_size(f, &frame_size));
    unsigned char *wire = malloc((size_t)frame_size);
    CHECK(wire != NULL);
    CHECK_OK(cdt_frame_gather(f, 0, wire, frame_size));
    cdt_decoder d;
    CHECK_OK(cdt_decoder_create(wire, frame_size, &d));
    CHECK_RC(cdt_decoder_bind(d, dst, N, rec), CDT_ERR_TRUNCATED);
    cdt_decoder_free(d);
    free(wire);
    cdt_frame_free(f);

    /* a negative lb: the element's bytes [lb, lb + extent) around its origin */
    cdt_type shifted, ps;
    CHECK_OK(cdt_type_resized(rec, -8, 40, &shifted));
    CHECK_OK(cdt_type_padded(shifted, &ps));
    CHECK_OK(cdt_type_commit(&ps));
    pos = 0;
    CHECK_OK(cdt_pack((unsigned char *)src + 8, 2, ps, packed, 80, &pos));
    CHECK(pos == 80 && memcmp(packed, src, 80) == 0);
    cdt_type_free(&ps);
    cdt_type_free(&shifted);

    /* refused: bytes outside the extent (elements would overlap), a negative extent, NULL */
    CHECK_OK(cdt_type_resized(rec, 0, 16, &bad)); /* c at 16 lies outside [0, 16) */
    CHECK_RC(cdt_type_padded(bad, &custom_like), CDT_ERR_INVALID_ARG);
    cdt_type_free(&bad);
    CHECK_OK(cdt_type_resized(rec, 4, 24, &bad)); /* a at 0 lies before lb */
    CHECK_RC(cdt_type_padded(bad, &custom_like), CDT_ERR_INVALID_ARG);
    cdt_type_free(&bad);
    CHECK_OK(cdt_type_resized(rec, 24, -24, &bad));
    CHECK_RC(cdt_type_padded(bad, &custom_like), CDT_ERR_INVALID_ARG);
    cdt_type_free(&bad);
    CHECK_RC(cdt_type_padded(NULL, &custom_like), CDT_ERR_INVALID_ARG);
    CHECK_RC(cdt_type_padded(rec, NULL), CDT_ERR_INVALID_ARG);
    /* an empty element of extent 0 is empty padded too */
    CHECK_OK(cdt_type_contiguous(0, CDT_INT32, &bad));
    CHECK_OK(cdt_type_padded(bad, &custom_like));
    CHECK_OK(cdt_type_size(custom_like, &size));
    CHECK(size == 0);
    cdt_type_free(&custom_like);
    cdt_type_free(&bad);

    free(src);
    free(dst);
    free(packed);
    cdt_type_free(&p);
    cdt_type_free(&rec);
    cdt_type_free(&fields);
}

/* cdt_copy between two layouts with gaps goes through 16 KiB chunks: a copy of many of them,
 * whose chunk edges cut elements (12-byte records; 16384 is no multiple of 12), a shorter
 * source into a longer destination, and a negative stride, each against pack + unpack */
static void test_copy_chunks(void)
{
    enum { N = 50000 };
    cdt_type rec = NULL, src_t = NULL, dst_t = NULL, rev = NULL;
    /* three int32 of every 16 bytes on one side, of every 20 bytes (8 bytes in) on the other */
    CHECK_OK(cdt_type_vector(N, 3, 4, CDT_INT32, &src_t));
    CHECK_OK(cdt_type_contiguous(3, CDT_INT32, &rec));
    CHECK_OK(cdt_type_hvector(N, 1, 20, rec, &dst_t));
    CHECK_OK(cdt_type_hvector(N, 1, -16, rec, &rev));
    CHECK_OK(cdt_type_commit(&src_t));
    CHECK_OK(cdt_type_commit(&dst_t));
    CHECK_OK(cdt_type_commit(&rev));
    int32_t *src = malloc(sizeof(int32_t) * 4 * N), *dst = malloc(20 * (size_t)N + 8),
            *want = malloc(20 * (size_t)N + 8), *packed = malloc(12 * (size_t)N);
    CHECK(src != NULL && dst != NULL && want != NULL && packed != NULL);
    for (int i = 0; i < 4 * N; i++)
        src[i] = i * 7 + 1;
    cdt_count pos = 0;
    CHECK_OK(cdt_pack(src, 1, src_t, packed, 12 * (cdt_count)N, &pos));
    memset(dst, 0x5a, 20 * (size_t)N + 8);
    memset(want, 0x5a, 20 * (size_t)N + 8);
    pos = 0;
    CHECK_OK(cdt_unpack(packed, 12 * (cdt_count)N, &pos, (char *)want + 8, 1, dst_t));
    CHECK_OK(cdt_copy(src, 1, src_t, (char *)dst + 8, 1, dst_t));
    CHECK(memcmp(dst, want, 20 * (size_t)N + 8) == 0);
    /* 1,000 records of the source (12,000 bytes: one chunk) and 30,000 (several) into the
     * longer destination: its leading records, the rest untouched */
    cdt_type part = NULL;
    for (int k = 0; k < 2; k++) {
        int records = k == 0 ? 1000 : 30000;
        CHECK_OK(cdt_type_vector(records, 3, 4, CDT_INT32, &part));
        CHECK_OK(cdt_type_commit(&part));
        memset(dst, 0x5a, 20 * (size_t)N + 8);
        CHECK_OK(cdt_copy(src, 1, part, (char *)dst + 8, 1, dst_t));
        size_t head = 8 + 20 * (size_t)(records - 1) + 12;
        CHECK(memcmp(dst, want, head) == 0);
        CHECK(((unsigned char *)dst)[head] == 0x5a &&
              ((unsigned char *)dst)[20 * (size_t)N + 7] == 0x5a);
        cdt_type_free(&part);
    }
    /* into a negative stride: record i lands at -16 i from the base (the last one first) */
    int32_t *back = malloc(16 * (size_t)N);
    CHECK(back != NULL);
    memset(back, 0, 16 * (size_t)N);
    CHECK_OK(cdt_copy(src, 1, src_t, (char *)back + 16 * (size_t)(N - 1), 1, rev));
    int ok = 1;
    for (int i = 0; i < N && ok; i++)
        for (int j = 0; j < 3; j++)
            ok &= back[4 * (N - 1 - i) + j] == src[4 * i + j];
    CHECK(ok);
    free(back);
    /* long runs (8 KiB blocks) on both sides: copied where they lie; long into short: chunks */
    cdt_type big_src = NULL, big_dst = NULL;
    CHECK_OK(cdt_type_vector(20, 2048, 3000, CDT_INT32, &big_src));
    CHECK_OK(cdt_type_hvector(40, 4096, 9000, CDT_BYTE, &big_dst));
    CHECK_OK(cdt_type_commit(&big_src));
    CHECK_OK(cdt_type_commit(&big_dst));
    for (int k = 0; k < 2; k++) {
        cdt_type to = k == 0 ? big_dst : dst_t;
        memset(dst, 0x5a, 20 * (size_t)N + 8);
        memset(want, 0x5a, 20 * (size_t)N + 8);
        pos = 0;
        CHECK_OK(cdt_pack(src, 1, big_src, packed, 12 * (cdt_count)N, &pos));
        cdt_count upos = 0;
        CHECK_OK(cdt_unpack(packed, pos, &upos, want, k == 0 ? 1 : 0, to));
        if (k == 1) { /* 163,840 bytes into the 12-byte records: the first 13,653 of them */
            cdt_type lead = NULL;
            CHECK_OK(cdt_type_contiguous(pos, CDT_BYTE, &lead));
            CHECK_OK(cdt_type_commit(&lead));
            CHECK_OK(cdt_copy(packed, 1, lead, (char *)want + 8, 1, dst_t));
            cdt_type_free(&lead);
        }
        CHECK_OK(
            cdt_copy(src, 1, big_src, k == 0 ? (void *)dst : (void *)((char *)dst + 8), 1, to));
        CHECK(memcmp(dst, want, 20 * (size_t)N + 8) == 0);
    }
    cdt_type_free(&big_src);
    cdt_type_free(&big_dst);
    free(src);
    free(dst);
    free(want);
    free(packed);
    cdt_type_free(&rec);
    cdt_type_free(&src_t);
    cdt_type_free(&dst_t);
    cdt_type_free(&rev);
}

int main(void)
{
    test_errors();
    test_copy_chunks();
    test_pack_whole();
    test_queries();
    test_canonical();
    test_large();
    test_split_offsets();
    test_fuzz_regressions();
    test_bottom();
    test_padded();
    return check_report("test_engine_units");
}
