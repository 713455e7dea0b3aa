/* mpmd_objects.h - the objects of the multi-language MPI job, in the order every language's
 * rank sends them (mpmd_rank.c, mpmd_rank.py, rust/cdtypes/examples/mpmd_rank.rs,
 * julia/test/mpmd_rank.jl): the shared test vectors (tests/vectors/NAME.bin, read as
 * serialized objects: stream + regions with their kinds) and "large", made the same way in
 * every language: stream = bytes 0..15; regions uint8 1 MiB of (31 i + 7) mod 256, byte 10
 * of i, double 80,000 bytes of (13 i + 1) mod 256 (two of them over the protocol's 64 KiB
 * threshold: the parts message). */
#ifndef MPMD_OBJECTS_H
#define MPMD_OBJECTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdt.h"
#include "cdt_sobj.h"

enum { MPMD_COUNT = 7, MPMD_LARGE = 6 };
static const char *const mpmd_names[MPMD_COUNT] = {
    "c_vector_int32",  "python_buffers", "python_empty_region", "python_inband", "rust_u32_vec_f64",
    "rust_vec_string", "large"};

typedef struct mpmd_object {
    cdt_sobj so;          /* what is sent and expected */
    unsigned char *frame; /* its frame's bytes (the vector's file) */
    cdt_count frame_len;
} mpmd_object;

static unsigned char *mpmd_read(const char *path, cdt_count *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = n;
    return p;
}

/* the large object's regions, filled with their patterns */
static int mpmd_make_large(mpmd_object *o)
{
    static const cdt_kind kinds[3] = {CDT_KIND_UINT8, CDT_KIND_BYTE, CDT_KIND_DOUBLE};
    static const cdt_count lens[3] = {1 << 20, 10, 80000};
    unsigned char *stream = malloc(16);
    cdt_sobj_buffer *bufs = calloc(3, sizeof *bufs);
    if (stream == NULL || bufs == NULL)
        return -1;
    for (int i = 0; i < 16; i++)
        stream[i] = (unsigned char)i;
    for (int r = 0; r < 3; r++) {
        unsigned char *p = malloc((size_t)lens[r]);
        if (p == NULL)
            return -1;
        for (cdt_count i = 0; i < lens[r]; i++)
            p[i] = (unsigned char)(r == 0 ? 31 * i + 7 : r == 1 ? i : 13 * i + 1);
        bufs[r].base = p;
        bufs[r].len = lens[r];
        bufs[r].kind = kinds[r];
    }
    o->so.inband = stream;
    o->so.inband_len = 16;
    o->so.buffers = bufs;
    o->so.nbuffers = 3;
    cdt_frame f;
    if (cdt_frame_encode(&o->so, 1, cdt_sobj_type(), NULL, &f) != CDT_SUCCESS)
        return -1;
    cdt_frame_size(f, &o->frame_len);
    o->frame = malloc((size_t)o->frame_len);
    int rc = o->frame == NULL ? -1 : cdt_frame_gather(f, 0, o->frame, o->frame_len);
    cdt_frame_free(f);
    return rc;
}

/* object k: a vector read from DIR/NAME.bin as a serialized object, or the large one */
static int mpmd_load(mpmd_object *o, const char *dir, int k)
{
    memset(o, 0, sizeof *o);
    if (k == MPMD_LARGE)
        return mpmd_make_large(o);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, mpmd_names[k]);
    o->frame = mpmd_read(path, &o->frame_len);
    if (o->frame == NULL)
        return -1;
    cdt_decoder d;
    if (cdt_decoder_create(o->frame, o->frame_len, &d) != CDT_SUCCESS)
        return -1;
    int rc = cdt_sobj_recv_prepare(&o->so, d);
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_bind(d, &o->so, 1, cdt_sobj_type());
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_write(d, 0, o->frame, o->frame_len);
    if (rc == CDT_SUCCESS)
        rc = cdt_decoder_finish(d);
    cdt_decoder_free(d);
    return rc == CDT_SUCCESS ? 0 : -1;
}

static void mpmd_free(mpmd_object *o)
{
    if (o->frame != NULL && o->so.nbuffers == 3 && o->so.inband_len == 16 &&
        o->frame_len > (1 << 20)) { /* the large one: its own allocations */
        for (int r = 0; r < 3; r++)
            free(o->so.buffers[r].base);
        free(o->so.buffers);
        free(o->so.inband);
    } else {
        cdt_sobj_release(&o->so);
    }
    free(o->frame);
}

#endif
