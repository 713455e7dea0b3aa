/*
 * frame_object.h - the sender's frame object, shared by frame_encode.c (which builds it) and
 * frame_object.c (which hands it out: sizes, head, regions, iov lists, gather, free). Only
 * files of frame/ include it.
 */
#ifndef CDT_FRAME_OBJECT_H
#define CDT_FRAME_OBJECT_H

#include "frame_format.h"
#include "core/core.h"

typedef struct frame_region {
    cdt__region_rec rec;
    cdt_count first_piece, n_pieces; /* into frame->pieces */
} frame_region;

/* Small frames live in one allocation: the operation, the head and the iov list inline. */
#define INLINE_HEAD 256
#define INLINE_IOV 4

struct cdt_frame_s {
    cdt_op op; /* &op_storage once begun */
    struct cdt_op_s op_storage;
    unsigned char *head;                    /* header + packed stream: head_inline or allocated */
    cdt_frame_alloc_func_t *head_alloc;     /* NULL: malloc */
    cdt_frame_release_func_t *head_release; /* NULL: head came from malloc */
    void *head_alloc_arg;
    cdt_count head_len, frame_size;
    /* deferred frames (cdt__frame_encode_deferred): head holds the header only, and the packed
     * stream is packed by cdt_frame_gather when it is asked for */
    bool deferred;
    cdt_count header_size, head_alloc_len;
    cdt_count region_count;
    frame_region *regions;
    cdt__region_shape region_shape; /* layout_frame's */
    cdt_iov *pieces;                /* all regions' pieces, in order */
    cdt_count n_pieces;
    cdt_iov *iov;         /* head, then per region: optional pad, pieces */
    cdt_count *iov_start; /* frame offset of each iov entry: gather finds its start by bisection */
    cdt_count n_iov;
    cdt_iov iov_inline[INLINE_IOV];
    cdt_count iov_start_inline[INLINE_IOV];
    unsigned char head_inline[INLINE_HEAD];
};

#endif
