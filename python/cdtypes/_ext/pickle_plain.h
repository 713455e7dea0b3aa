/* Whether a pickle stream is "plain" (docs/MPI.md §14.5, the early answer): it only builds
 * builtin scalars and containers, and loading it with pickle cannot raise except MemoryError.
 * The walk mirrors CPython's C unpickler (Modules/_pickle.c): its opcodes, its argument
 * lengths, its value stack split from its mark stack (a pop never goes below the last mark),
 * the target each container opcode needs, the hashability of dict keys and set items, the
 * memo entries a GET reads and the out-of-band buffers NEXT_BUFFER takes. Anything it does not
 * know, or cannot show safe, makes the stream not plain: the caller then answers late, which
 * is always correct. Included by the C extension (_ext/mpi.c) and by the cffi backend's
 * generated source (_cffi_build.py), so both backends (and PyPy) make the same decision. */
#ifndef CDTPY_PICKLE_PLAIN_H
#define CDTPY_PICKLE_PLAIN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a value on the unpickler's stack (or in its memo) is, as far as the walk cares. */
enum {
    PP_NONE = 0, /* a memo slot not stored */
    PP_HASHABLE, /* None, bool, int, float, str, bytes, frozenset, a tuple of hashables */
    PP_OTHER,    /* bytearray, a tuple holding something unhashable */
    PP_BUFFER,   /* an out-of-band buffer (NEXT_BUFFER); READONLY_BUFFER takes only these */
    PP_LIST,
    PP_DICT,
    PP_SET
};

/* What the walk holds inline (on the caller's stack) before it allocates: a small object's
 * stream (a 1 KiB dict: a few dozen values, two marks, a few dozen memo entries) is scanned
 * without malloc, where three allocations and their frees were a fifth of the scan. */
enum { PP_INLINE_V = 256, PP_INLINE_MARKS = 32, PP_INLINE_MEMO = 256 };

typedef struct {
    unsigned char *v; /* kinds of the value stack */
    size_t n, cap;
    size_t *marks; /* the value stack's size at each MARK */
    size_t nmarks, capmarks;
    unsigned char *memo; /* kind per memo index, PP_NONE where not stored */
    size_t nmemo;
    size_t memo_len; /* memo entries stored: where MEMOIZE stores (pickle's memo_len) */
    unsigned char v0[PP_INLINE_V];
    size_t marks0[PP_INLINE_MARKS];
    unsigned char memo0[PP_INLINE_MEMO];
} pp_walk;

static void pp_init(pp_walk *w)
{
    w->v = w->v0;
    w->n = 0;
    w->cap = PP_INLINE_V;
    w->marks = w->marks0;
    w->nmarks = 0;
    w->capmarks = PP_INLINE_MARKS;
    w->memo = w->memo0;
    w->nmemo = PP_INLINE_MEMO;
    w->memo_len = 0;
    memset(w->memo0, PP_NONE, sizeof w->memo0);
}

/* *p (n elements of size elem, held inline while *p == inline_buf) grown to cap elements:
 * the inline array copied to the heap the first time, the heap array reallocated after. */
static int pp_grow(void **p, const void *inline_buf, size_t n, size_t cap, size_t elem)
{
    void *q;
    if (*p == inline_buf) {
        q = malloc(cap * elem);
        if (q != NULL)
            memcpy(q, inline_buf, n * elem);
    } else {
        q = realloc(*p, cap * elem);
    }
    if (q == NULL)
        return 0;
    *p = q;
    return 1;
}

static void pp_release(pp_walk *w)
{
    if (w->v != w->v0)
        free(w->v);
    if (w->marks != w->marks0)
        free(w->marks);
    if (w->memo != w->memo0)
        free(w->memo);
}

static int pp_push(pp_walk *w, unsigned char kind)
{
    if (w->n == w->cap) {
        if (!pp_grow((void **)&w->v, w->v0, w->n, 2 * w->cap, 1))
            return 0;
        w->cap *= 2;
    }
    w->v[w->n++] = kind;
    return 1;
}

static size_t pp_fence(const pp_walk *w)
{
    return w->nmarks ? w->marks[w->nmarks - 1] : 0;
}

/* Store kind at memo index i; indices are bounded by the caller (no table larger than the
 * stream). */
static int pp_memo_put(pp_walk *w, uint64_t i, unsigned char kind)
{
    if (i >= w->nmemo) {
        size_t n = w->nmemo;
        while (n <= i)
            n *= 2;
        if (!pp_grow((void **)&w->memo, w->memo0, w->nmemo, n, 1))
            return 0;
        memset(w->memo + w->nmemo, PP_NONE, n - w->nmemo);
        w->nmemo = n;
    }
    if (w->memo[i] == PP_NONE)
        w->memo_len++;
    w->memo[i] = kind;
    return 1;
}

/* Whether s[0..n) is UTF-8 as pickle's BINUNICODE decoding ("surrogatepass") accepts it:
 * shortest forms, code points up to U+10FFFF, encoded surrogates allowed. */
static int pp_utf8(const unsigned char *s, uint64_t n)
{
    uint64_t i = 0;
    while (i < n) {
        if (n - i >= 8) { /* eight ASCII bytes at a time: the common case */
            uint64_t word;
            memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080u) == 0) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        unsigned need;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i <= need)
            return 0;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += need + 1;
    }
    return 1;
}

static uint64_t pp_le(const unsigned char *p, int width)
{
    uint64_t x = 0;
    for (int k = width - 1; k >= 0; k--)
        x = (x << 8) | p[k];
    return x;
}

/* Pop the values down to the last mark and the mark itself; *items gets their first index.
 * 0 without a mark. */
static int pp_pop_mark(pp_walk *w, size_t *items)
{
    if (w->nmarks == 0)
        return 0;
    *items = w->marks[--w->nmarks];
    return 1;
}

static int pp_all_hashable(const pp_walk *w, size_t from, size_t step)
{
    for (size_t i = from; i < w->n; i += step)
        if (w->v[i] != PP_HASHABLE)
            return 0;
    return 1;
}

/* The walk: 1 plain, 0 not plain (or out of memory: not plain either). */
static int pp_walk_stream(pp_walk *w, const unsigned char *s, size_t n, size_t nbuf)
{
    /* frame_end: where the current frame ends (0: outside frames). CPython's C unpickler
     * lets an opcode cross a frame's end; pickle.py's (PyPy's) refuses it, and a FRAME
     * before the current one ended: refused here for both. */
    size_t pos = 0, used_buffers = 0, frame_end = 0;
    while (pos < n) {
        if (frame_end != 0 && pos > frame_end)
            return 0;
        if (pos == frame_end)
            frame_end = 0;
        unsigned char op = s[pos++];
        size_t left = n - pos;
        const unsigned char *a = s + pos;
        uint64_t len = 0;
        int width = 0;
        switch (op) {
        case 0x80: /* PROTO */
            if (left < 1 || a[0] > 5)
                return 0;
            pos += 1;
            break;
        case 0x95: /* FRAME: the bytes it announces must be there */
            if (frame_end != 0 || left < 8 || pp_le(a, 8) > left - 8)
                return 0;
            pos += 8;
            frame_end = pos + (size_t)pp_le(a, 8);
            if (frame_end == pos)
                frame_end = 0; /* an empty frame: nothing is read from it */
            break;
        case '.': /* STOP: pops the result */
            return (frame_end == 0 || pos <= frame_end) && w->n > pp_fence(w);
        case 'N':
        case 0x88:
        case 0x89:
            if (!pp_push(w, PP_HASHABLE))
                return 0;
            break;
        case 'J':
        case 'K':
        case 'M':
        case 'G': /* BININT, BININT1, BININT2, BINFLOAT */
            width = op == 'J' ? 4 : op == 'K' ? 1 : op == 'M' ? 2 : 8;
            if (left < (size_t)width || !pp_push(w, PP_HASHABLE))
                return 0;
            pos += (size_t)width;
            break;
        case 0x8a: /* LONG1 */
        case 0x8b: /* LONG4: a negative length raises */
        case 0x8c: /* SHORT_BINUNICODE */
        case 'X':  /* BINUNICODE */
        case 0x8d: /* BINUNICODE8 */
        case 'C':  /* SHORT_BINBYTES */
        case 'B':  /* BINBYTES */
        case 0x8e: /* BINBYTES8 */
        case 0x96: /* BYTEARRAY8 */
            width = (op == 0x8a || op == 0x8c || op == 'C')  ? 1
                    : (op == 0x8b || op == 'X' || op == 'B') ? 4
                                                             : 8;
            if (left < (size_t)width)
                return 0;
            len = pp_le(a, width);
            if ((op == 0x8b && len >= ((uint64_t)1 << 31)) || len > left - (size_t)width)
                return 0;
            if ((op == 0x8c || op == 'X' || op == 0x8d) && !pp_utf8(a + width, len))
                return 0;
            if (!pp_push(w, op == 0x96 ? PP_OTHER : PP_HASHABLE))
                return 0;
            pos += (size_t)width + (size_t)len;
            break;
        case ']':
        case '}':
        case 0x8f:
        case ')': /* EMPTY_LIST, EMPTY_DICT, EMPTY_SET, EMPTY_TUPLE */
            if (!pp_push(w, op == ']'    ? PP_LIST
                            : op == '}'  ? PP_DICT
                            : op == 0x8f ? PP_SET
                                         : PP_HASHABLE))
                return 0;
            break;
        case '(': /* MARK */
            if (w->nmarks == w->capmarks) {
                if (!pp_grow((void **)&w->marks, w->marks0, w->nmarks, 2 * w->capmarks,
                             sizeof *w->marks))
                    return 0;
                w->capmarks *= 2;
            }
            w->marks[w->nmarks++] = w->n;
            break;
        case 'a': /* APPEND: a value onto the list below it */
            if (w->n < pp_fence(w) + 2 || w->v[w->n - 2] != PP_LIST)
                return 0;
            w->n--;
            break;
        case 's': /* SETITEM: key and value onto the dict below them */
            if (w->n < pp_fence(w) + 3 || w->v[w->n - 3] != PP_DICT ||
                w->v[w->n - 2] != PP_HASHABLE)
                return 0;
            w->n -= 2;
            break;
        case 'e':    /* APPENDS */
        case 'u':    /* SETITEMS */
        case 0x90: { /* ADDITEMS */
            size_t items;
            if (!pp_pop_mark(w, &items) || items < pp_fence(w) + 1)
                return 0;
            unsigned char target = w->v[items - 1];
            if (op == 'e' && target != PP_LIST)
                return 0;
            if (op == 'u' &&
                (target != PP_DICT || (w->n - items) % 2 != 0 || !pp_all_hashable(w, items, 2)))
                return 0;
            if (op == 0x90 && (target != PP_SET || !pp_all_hashable(w, items, 1)))
                return 0;
            w->n = items;
            break;
        }
        case 0x91:  /* FROZENSET */
        case 't': { /* TUPLE */
            size_t items;
            if (!pp_pop_mark(w, &items))
                return 0;
            int hashable = pp_all_hashable(w, items, 1);
            if (op == 0x91 && !hashable)
                return 0;
            w->n = items;
            if (!pp_push(w, hashable ? PP_HASHABLE : PP_OTHER))
                return 0;
            break;
        }
        case 0x85:
        case 0x86:
        case 0x87: { /* TUPLE1, TUPLE2, TUPLE3 */
            size_t k = (size_t)(op - 0x84);
            if (w->n < pp_fence(w) + k)
                return 0;
            int hashable = pp_all_hashable(w, w->n - k, 1);
            w->n -= k;
            if (!pp_push(w, hashable ? PP_HASHABLE : PP_OTHER))
                return 0;
            break;
        }
        case '0': /* POP: the last mark if it is on top, else a value above it */
            if (w->nmarks && w->marks[w->nmarks - 1] == w->n)
                w->nmarks--;
            else if (w->n <= pp_fence(w))
                return 0;
            else
                w->n--;
            break;
        case '1': { /* POP_MARK */
            size_t items;
            if (!pp_pop_mark(w, &items))
                return 0;
            w->n = items;
            break;
        }
        case '2': /* DUP */
            if (w->n <= pp_fence(w) || !pp_push(w, w->v[w->n - 1]))
                return 0;
            break;
        case 0x94:  /* MEMOIZE: at the number of entries stored */
        case 'q':   /* BINPUT */
        case 'r': { /* LONG_BINPUT */
            uint64_t i;
            if (op == 0x94) {
                i = w->memo_len;
            } else {
                width = op == 'q' ? 1 : 4;
                if (left < (size_t)width)
                    return 0;
                i = pp_le(a, width);
                pos += (size_t)width;
            }
            /* a memo table no larger than the stream: pickle's own writer never needs more */
            if (w->n <= pp_fence(w) || i >= n || !pp_memo_put(w, i, w->v[w->n - 1]))
                return 0;
            break;
        }
        case 'h':   /* BINGET */
        case 'j': { /* LONG_BINGET */
            width = op == 'h' ? 1 : 4;
            if (left < (size_t)width)
                return 0;
            uint64_t i = pp_le(a, width);
            pos += (size_t)width;
            if (i >= w->nmemo || w->memo[i] == PP_NONE || !pp_push(w, w->memo[i]))
                return 0;
            break;
        }
        case 0x97: /* NEXT_BUFFER */
            if (used_buffers >= nbuf || !pp_push(w, PP_BUFFER))
                return 0;
            used_buffers++;
            break;
        case 0x98: /* READONLY_BUFFER */
            if (w->n <= pp_fence(w) || w->v[w->n - 1] != PP_BUFFER)
                return 0;
            break;
        default: /* GLOBAL, REDUCE, BUILD, ..., the text opcodes, anything unknown */
            return 0;
        }
    }
    return 0; /* no STOP */
}

/* 1 when the pickle s[0..n) is plain, with nbuf out-of-band buffers given to the loader. */
static int cdtpy_pickle_plain(const unsigned char *s, size_t n, size_t nbuf)
{
    pp_walk w;
    pp_init(&w);
    int plain = pp_walk_stream(&w, s, n, nbuf);
    pp_release(&w);
    return plain;
}

#endif
