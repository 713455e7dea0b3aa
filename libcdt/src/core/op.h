/* op.h - internal view of an operation, used by the frame encoder and decoder. */
#ifndef CDT_OP_H
#define CDT_OP_H

#include "ranges.h"
#include "type.h"

typedef struct cdt__pending cdt__pending; /* early fragment waiting for in-order delivery */
struct cdt__node;

#define CDT__OP_INLINE_REGIONS 4

/* cdt__op_init sets every field by name: a new field needs its line there (the inline region
 * arrays need none: they are used only once fetched). */
struct cdt_op_s {
    cdt_type type;
    bool is_pack;
    void *buf;
    cdt_count count;
    void *state;
    /* predefined and derived types: the committed form, moved by the kernels directly (no
     * allocation); NULL for custom types */
    const struct cdt__node *form;

    bool size_known;
    cdt_count packed_size;

    cdt_count next_offset; /* inorder custom types: where the stream continues */
    cdt__ranges arrived;   /* unpack: stream bytes received (delivered or pending) */
    cdt__pending *pending; /* unpack, inorder: sorted by offset */
    cdt_count delivered;   /* unpack: bytes handed to the callback or the buffer */
    /* unpack, inorder: a fragment that a call took before delivering held fragments failed;
     * the same fragment given again resumes that delivery (retry_end < 0: none) */
    cdt_count retry_offset, retry_end;

    bool regions_known; /* regions fetched once, kept for the operation's life */
    cdt_count region_count;
    void **region_bases;
    cdt_count *region_lens;
    cdt_type *region_types;
    /* the regions of an object with few of them live here, not in an allocation (small
     * objects with a region or two are common); cdt__op_move keeps the pointers right */
    void *region_inline_bases[CDT__OP_INLINE_REGIONS];
    cdt_count region_inline_lens[CDT__OP_INLINE_REGIONS];
    cdt_type region_inline_types[CDT__OP_INLINE_REGIONS];
};

/* *dst = *src for an operation that moves to other storage (the frame encoder begins one on
 * the stack): pointers into the operation's own inline storage follow it. */
CDT__HIDDEN void cdt__op_move(struct cdt_op_s *dst, const struct cdt_op_s *src);

/* Begin / end an operation in storage the caller owns (frames and decoders embed theirs, so a
 * small message costs no extra allocation). cdt__op_fini returns state_free's status. */
CDT__HIDDEN int cdt__op_init(struct cdt_op_s *op, void *buf, cdt_count count, cdt_type type,
                             bool is_pack);
CDT__HIDDEN int cdt__op_fini(struct cdt_op_s *op);
/* Fix the stream size of an unpack operation (the frame header knows it). */
CDT__HIDDEN int cdt__op_set_stream_size(cdt_op op, cdt_count size);
/* Fetch (once) and validate the regions; pointers stay owned by op. */
CDT__HIDDEN int cdt__op_fetch_regions(cdt_op op);
/* Region byte size = lens[i] * size of types[i]; validated by cdt__op_fetch_regions. */
CDT__HIDDEN cdt_count cdt__op_region_bytes(cdt_op op, cdt_count index);
/* A receive of a frame without regions whose whole packed stream src[0, len) is at hand: an
 * operation on the stack that takes the stream as one fragment (no fragment bookkeeping, no
 * allocation for a layout type), and for a custom type the check that it expects no regions
 * (CDT_ERR_FRAME_MISMATCH otherwise). The same results as a decoder's bind, write and finish. */
CDT__HIDDEN int cdt__op_unpack_whole(void *buf, cdt_count count, cdt_type type, const void *src,
                                     cdt_count len);
/* The same for a begun unpack operation (cdt__op_init): the stream src[0, len) as its one
 * fragment; the caller goes on with the regions and ends the operation. */
CDT__HIDDEN int cdt__op_deliver_whole(cdt_op op, const void *src, cdt_count len);
/* Pieces of the byte range [start, start + len) of the packed stream of (buf, count, type);
 * iov == NULL only counts. Layout types only. */
CDT__HIDDEN int cdt__layout_range_iov(void *buf, cdt_count count, cdt_type type, cdt_count start,
                                      cdt_count len, cdt_count first, cdt_count max, cdt_iov *iov,
                                      cdt_count *n_out);

#endif
