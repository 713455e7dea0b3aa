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

#endif
