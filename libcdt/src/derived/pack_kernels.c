/*
 * pack_kernels.c - pack/unpack of canonical forms: the node kernels that op.c drives.
 *
 * Each node carries the kernel chosen at commit (type_commit.c): vectors of runs copy fixed
 * sizes with constant-size memcpy (compiled to plain loads/stores), vectors of vectors and of
 * block-indexed runs run as nested loops without per-element interpretation, index lists are
 * walked with the run length decided once. Everything else falls back to the generic
 * recursion, which is also what serves partial fragments at their edges (range functions).
 * The kernels are written once in pack_template.h and expanded for both directions.
 */
/* the kernels are the hot loops of the library: libcdt/CMakeLists.txt compiles this file with
 * -O3 (outside Debug builds) so the compiler unrolls them whatever the build type says */
#include "derived.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CDT__FIXED_SIZES(X)                                                                        \
    X(1) X(2) X(4) X(8) X(12) X(16) X(24) X(32) X(40) X(48) X(64) X(96) X(128) X(256)
/* 16-byte moves per run for the other lengths of 17..256 bytes */
#define CDT__CHUNKS(X)                                                                             \
    X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

/* variable-length copies without a call up to 256 bytes: overlapping fixed-size moves */
static inline __attribute__((always_inline)) void move_var(char *d, const char *s, cdt_count n)
{
    switch (n) { /* the common sizes as constant moves (a jump table, predictable in loops) */
    case 4:
        memcpy(d, s, 4);
        return;
    case 8:
        memcpy(d, s, 8);
        return;
    case 16:
        memcpy(d, s, 16);
        return;
    case 24:
        memcpy(d, s, 24);
        return;
    case 32:
        memcpy(d, s, 32);
        return;
    case 48:
        memcpy(d, s, 48);
        return;
    case 64:
        memcpy(d, s, 64);
        return;
    case 128:
        memcpy(d, s, 128);
        return;
    default:
        break;
    }
    if (n > 16 && n <= 64) {
        cdt_count i = 0;
        for (; i + 16 < n; i += 16) {
            uint64_t a[2];
            memcpy(a, s + i, 16);
            memcpy(d + i, a, 16);
        }
        uint64_t b[2];
        memcpy(b, s + n - 16, 16);
        memcpy(d + n - 16, b, 16);
    } else if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else {
        memcpy(d, s, (size_t)n);
    }
}

#define DIR(x) pack_##x
#define MOVE(mem, str, n) memcpy((str), (mem), (n))
#define MOVE_VAR(mem, str, n) move_var((str), (mem), (n))
#include "pack_template.h"
#undef DIR
#undef MOVE
#undef MOVE_VAR

#define DIR(x) unpack_##x
#define MOVE(mem, str, n) memcpy((mem), (str), (n))
#define MOVE_VAR(mem, str, n) move_var((mem), (str), (n))
#include "pack_template.h"
#undef DIR
#undef MOVE
#undef MOVE_VAR

char *cdt__kern_pack(const cdt__node *n, const char *base, char *dst)
{
    return pack_one(n, (char *)base, dst);
}

const char *cdt__kern_unpack(const cdt__node *n, char *base, const char *src)
{
    return unpack_one(n, base, (char *)src);
}

char *cdt__kern_pack_rep(const cdt__node *n, const char *base, cdt_count count, cdt_count stride,
                         char *dst)
{
    return pack_rep(n, (char *)base, count, stride, dst);
}

const char *cdt__kern_unpack_rep(const cdt__node *n, char *base, cdt_count count, cdt_count stride,
                                 const char *src)
{
    return unpack_rep(n, base, count, stride, (char *)src);
}

/* stream range over whole and partial elements of the form root repeated at stride ext: whole
 * elements through the rep kernels, only the edges through the range walk */
static inline __attribute__((always_inline)) void form_move(const cdt__node *root, cdt_count ext,
                                                            char *buf, cdt_count offset,
                                                            cdt_count len, char *s, bool pack)
{
    if (len <= 0)
        return;
    cdt_count es = root->size;
    if (offset == 0 && len == es) { /* the whole stream of one element: its kernel directly */
        if (pack)
            pack_one(root, buf, s);
        else
            unpack_one(root, buf, s);
        return;
    }
    cdt_count e = offset / es, r = offset % es;
    if (r > 0) {
        cdt_count take = es - r < len ? es - r : len;
        s = pack ? pack_range(root, CDT__AT(buf, e * ext), r, take, s)
                 : unpack_range(root, CDT__AT(buf, e * ext), r, take, s);
        len -= take;
        e++;
    }
    cdt_count full = len / es;
    if (full > 0) {
        s = pack ? pack_rep(root, CDT__AT(buf, e * ext), full, ext, s)
                 : unpack_rep(root, CDT__AT(buf, e * ext), full, ext, s);
        e += full;
        len -= full * es;
    }
    if (len > 0) {
        if (pack)
            pack_range(root, CDT__AT(buf, e * ext), 0, len, s);
        else
            unpack_range(root, CDT__AT(buf, e * ext), 0, len, s);
    }
}

void cdt__form_pack(const cdt__node *root, cdt_count ext, const void *buf, cdt_count offset,
                    cdt_count len, void *dst)
{
    form_move(root, ext, (char *)buf, offset, len, dst, true);
}

void cdt__form_unpack(const cdt__node *root, cdt_count ext, void *buf, cdt_count offset,
                      cdt_count len, const void *src)
{
    form_move(root, ext, buf, offset, len, (char *)src, false);
}

static void layout_move(cdt_type type, char *buf, cdt_count offset, cdt_count len, char *s,
                        bool pack)
{
    cdt__node *root;
    if (len <= 0 || cdt__type_form(type, &root) != CDT_SUCCESS)
        return;
    if (pack)
        cdt__form_pack(root, type->extent, buf, offset, len, s);
    else
        cdt__form_unpack(root, type->extent, buf, offset, len, s);
}

void cdt__layout_pack(cdt_type type, const void *buf, cdt_count count, cdt_count offset,
                      cdt_count len, void *dst)
{
    (void)count;
    layout_move(type, (char *)buf, offset, len, dst, true);
}

void cdt__layout_unpack(cdt_type type, void *buf, cdt_count count, cdt_count offset, cdt_count len,
                        const void *src)
{
    (void)count;
    layout_move(type, buf, offset, len, (char *)src, false);
}

int cdt_pack_size(cdt_count count, cdt_type type, cdt_count *size)
{
    if (type == NULL || size == NULL || count < 0 || type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_INVALID_ARG;
    if (!(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED;
    cdt_count s;
    if (cdt__mul_overflows(count, type->size, &s))
        return CDT_ERR_OVERFLOW;
    *size = s;
    return CDT_SUCCESS;
}

/* the checks shared by cdt_pack and cdt_unpack; *bytes: the packed size of (count, type) */
static int whole_message_args(cdt_count count, cdt_type type, cdt_count area_size,
                              const cdt_count *position, cdt_count *bytes)
{
    if (type == NULL || position == NULL || count < 0 || area_size < 0 || *position < 0 ||
        *position > area_size)
        return CDT_ERR_INVALID_ARG;
    if (type->cls == CDT__CLASS_CUSTOM)
        return CDT_ERR_UNSUPPORTED; /* a custom type's stream needs its operation (state) */
    if (!(type->flags & CDT__TYPE_COMMITTED))
        return CDT_ERR_NOT_COMMITTED;
    if (cdt__mul_overflows(count, type->size, bytes))
        return CDT_ERR_OVERFLOW;
    return *bytes > area_size - *position ? CDT_ERR_TRUNCATED : CDT_SUCCESS;
}

/* count whole elements through the form root to or from at: the root's kernel directly (count
 * 1) or its count loop (count > 1), with no division of a range by the element size and no
 * edge checks, which the fragment path (form_move) needs and a whole message does not */
static inline __attribute__((always_inline)) void
move_elements(const cdt__node *root, char *buf, cdt_count count, cdt_count ext, char *at, bool pack)
{
    if (count == 1) {
        if (pack)
            pack_one(root, buf, at);
        else
            unpack_one(root, buf, at);
    } else if (pack) {
        pack_rep(root, buf, count, ext, at);
    } else {
        unpack_rep(root, buf, count, ext, at);
    }
}

/* the same through cdt__type_form, which builds a form if needed, for a type whose form
 * move_whole does not read inline: commit publishes every derived type's form and every
 * predefined type is one block, so today no type that passes the checks comes here; it keeps
 * the whole-message calls right should either change */
static __attribute__((noinline)) int move_elements_slow(char *buf, cdt_count count, cdt_type type,
                                                        char *at, cdt_count bytes,
                                                        cdt_count *position, bool pack)
{
    cdt__node *root;
    int rc = cdt__type_form(type, &root);
    if (rc != CDT_SUCCESS)
        return rc;
    move_elements(root, buf, count, type->extent, at, pack);
    *position += bytes;
    return CDT_SUCCESS;
}

/* One call for a whole message, without an operation object: the same kernels as
 * cdt_op_pack over [0, size), minus the operation's fixed cost (allocation from the per-thread
 * spare, state, range bookkeeping: about 375 instructions per message, 8-10 ns of a 92 ns copy
 * of 16 KiB). A type whose data is one block is one memcpy from true_lb. A derived type's form
 * (built at commit) is read here, without the call into type_commit.c. *position advances
 * before the copy, which cannot fail: nothing is live across the copy's call, so neither path
 * saves registers (callgrind per cdt_pack / cdt_unpack, against form_move and cdt__type_form
 * before: -36 / -30 instructions on a form, -48 / -42 with count > 1, -9 / -4 on one block;
 * bench/results/pack_perf.md). */
static int move_whole(char *buf, cdt_count count, cdt_type type, char *area, cdt_count area_size,
                      cdt_count *position, bool pack)
{
    cdt_count bytes;
    int rc = whole_message_args(count, type, area_size, position, &bytes);
    if (rc != CDT_SUCCESS || bytes == 0)
        return rc;
    if (area == NULL)
        return CDT_ERR_INVALID_ARG;
    char *at = area + *position;
    if (cdt__layout_is_contiguous(type, count)) {
        char *data = CDT__AT(buf, type->true_lb);
        *position += bytes;
        memcpy(pack ? at : data, pack ? data : at, (size_t)bytes);
        return CDT_SUCCESS;
    }
    cdt__node *root = type->cls == CDT__CLASS_DERIVED
                          ? atomic_load_explicit(&type->derived->form, memory_order_acquire)
                          : NULL;
    if (root == NULL)
        return move_elements_slow(buf, count, type, at, bytes, position, pack);
    *position += bytes;
    move_elements(root, buf, count, type->extent, at, pack);
    return CDT_SUCCESS;
}

int cdt_pack(const void *buf, cdt_count count, cdt_type type, void *dst, cdt_count dst_size,
             cdt_count *position)
{
    return move_whole((char *)buf, count, type, dst, dst_size, position, true);
}

int cdt_unpack(const void *src, cdt_count src_size, cdt_count *position, void *buf, cdt_count count,
               cdt_type type)
{
    return move_whole(buf, count, type, (char *)src, src_size, position, false);
}
