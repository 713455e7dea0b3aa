/*
 * fuzz_input.h - reading a fuzz input as a stream of choices: a target that builds an object
 * and a schedule from the input takes bytes one at a time, and an input that ends early reads
 * as zeros (so every prefix of an input is a valid input too).
 */
#ifndef CDT_FUZZ_INPUT_H
#define CDT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct input {
    const uint8_t *p;
    size_t n, at;
} input;

static inline unsigned next(input *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}

static inline unsigned next16(input *in)
{
    unsigned lo = next(in);
    return lo | next(in) << 8;
}

/*
 * The harness's own loops over payload bytes are not the code under test. Left in the coverage
 * instrumentation, every byte compared costs a call into the fuzzer (about a third of all time
 * in the targets that build megabyte buffers), and ASan's check of every byte written keeps
 * them from being vectorised; they write only buffers the harness sized itself.
 */
#if defined(__clang__)
/* noinline: inlined into an instrumented caller, the loop would be instrumented again */
#define FUZZ_UNTRACED __attribute__((no_sanitize("coverage", "address"), noinline, unused))
#else
#define FUZZ_UNTRACED __attribute__((unused))
#endif

/* p[i] = first + i * step (mod 256): the recognisable payload of a sent object */
static FUZZ_UNTRACED void fuzz_fill(unsigned char *p, size_t n, unsigned first, unsigned step)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(first + i * step);
}

/* are all of flags[from, to) set? */
static FUZZ_UNTRACED int fuzz_all_set(const unsigned char *flags, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!flags[i])
            return 0;
    return 1;
}

#endif
