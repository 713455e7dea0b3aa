/*!
 * @file cdt_sobj.h
 * cdt_sobj.h - the serialized-object adapter shared by every language binding.
 *
 * pickle protocol 5, Serde and Julia's Serialization all turn an object into the same shape:
 * in-band bytes (the serializer's stream) plus a list of out-of-band buffers (arrays that must
 * not be copied). cdt_sobj is that shape, and cdt_sobj_type() is a ready custom type for it:
 * the in-band bytes are the packed stream, each buffer is a memory region. Bindings only
 * fill a cdt_sobj and call the core; bug fixes here reach every language.
 *
 * Receiving: the frame header announces the in-band size and every buffer's length, so
 * cdt_sobj_recv_prepare() asks the caller's allocator for all memory before any data lands.
 */
#ifndef CDT_SOBJ_H
#define CDT_SOBJ_H

#include "cdt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*! One out-of-band buffer. An element of the caller's array, so its size is part of the ABI for
 * good (24 bytes on LP64; pinned by tests/abi). */
typedef struct cdt_sobj_buffer {
    void *base;    /*!< first byte (NULL only when len is 0) */
    cdt_count len; /*!< bytes; a multiple of the element size of kind */
    cdt_kind kind; /*!< element kind; CDT_KIND_BYTE when unknown */
} cdt_sobj_buffer;

/*! Allocate `len` bytes for buffer `index` (-1: the in-band bytes) whose elements are `kind`.
 * Return CDT_SUCCESS and set *base (may be NULL only when len == 0), or an error code that
 * cdt_sobj_recv_prepare() returns unchanged. Memory belongs to the caller. */
typedef int(cdt_sobj_alloc_func_t)(void *user, cdt_count index, cdt_count len, cdt_kind kind,
                                   void **base);

/*! Fields of cdt_sobj that are optional, for its field_mask. */
enum cdt_sobj_field {
    CDT_SOBJ_FIELD_ALLOC = 1u << 0,        /*!< alloc and alloc_user are set */
    CDT_SOBJ_FIELD_INBAND_PARTS = 1u << 1, /*!< inband_parts and inband_nparts are set (send) */
};
/*! Bits from here up belong to the library: cdt_sobj_recv_prepare() sets them to record what
 * it allocated, and cdt_sobj_release() reads them. Leave them as recv_prepare left them. */
#define CDT_SOBJ_FIELD_LIBRARY_ (1ull << 48)

/*! A serialized object. Zero it, then fill it; the struct can grow at its end: a later field
 * is read only when its bit is set in field_mask, so a program compiled against this header
 * keeps working with a later library. */
typedef struct cdt_sobj {
    /*! CDT_SOBJ_FIELD_* bits of the optional fields that are set (0 when none). A bit below
     * CDT_SOBJ_FIELD_LIBRARY_ that this library does not know is CDT_ERR_INVALID_ARG. */
    uint64_t field_mask;
    /*! send: the caller's bytes and buffers (not copied). receive: filled by recv_prepare. */
    void *inband;
    cdt_count inband_len;     /*!< bytes at inband */
    cdt_sobj_buffer *buffers; /*!< the out-of-band buffers, nbuffers entries */
    cdt_count nbuffers;       /*!< entries of buffers (each one memory region of the frame) */
    /*! CDT_SOBJ_FIELD_ALLOC, receive: where memory comes from (not set, or NULL: one malloc'd
     * block, released by cdt_sobj_release) */
    cdt_sobj_alloc_func_t *alloc;
    void *alloc_user; /*!< the first argument of alloc */
    /*! CDT_SOBJ_FIELD_INBAND_PARTS, send: the in-band bytes as pieces, in order (inband is then
     * not read; inband_len is the pieces' total, or the send fails with CDT_ERR_INVALID_ARG).
     * A serializer that writes its stream in chunks, handing over a large payload by reference
     * (pickle's large bytes objects), sends them as they are instead of joining them into one
     * copy first. Not copied: the pieces stay valid and unchanged while the object is sent. */
    const cdt_iov *inband_parts;
    cdt_count inband_nparts; /*!< entries of inband_parts */
} cdt_sobj;

/*! cdt_sobj_type() : the custom type of one cdt_sobj (use count 1). Lives for the whole
 *  program; do not free it. */
CDT_API cdt_type cdt_sobj_type(void);

/*! cdt_sobj_recv_prepare() : size obj from the header the decoder validated: allocates the
 *  in-band bytes and one buffer per region, and the buffers array itself (malloc; freed by
 *  cdt_sobj_release). With obj->alloc set, each part comes from one call of it; without, the
 *  whole object is ONE allocation (parts on 64-byte boundaries, freed by cdt_sobj_release). It does
 * not bind the decoder: the caller then calls cdt_decoder_bind(decoder, obj, 1, cdt_sobj_type()).
 * On error obj is left as it was and nothing stays allocated by the adapter. Memory the hook
 * gave out is the caller's in every case: when a later part fails, the parts before it are
 * not named by obj, so a hook that can fail records what it gave (in alloc_user) to free it.
 * Memory: without a hook, one block of at most frame_size plus 64 bytes of alignment per part,
 * plus the buffers array (sizeof(cdt_sobj_buffer) per region); with a hook, the lengths the
 * header announces. A receiver of untrusted peers bounds both with the frame limits
 * (cdt_decoder_create_advanced; cdt_ucx_recv_params.max_frame_bytes / max_regions), which are
 * checked before this is called. */
CDT_API int cdt_sobj_recv_prepare(cdt_sobj *obj, cdt_decoder decoder);

/*! cdt_sobj_release() : free what recv_prepare allocated itself (the buffers array, and the
 *  data when obj->alloc was NULL) and clear obj's data fields. */
CDT_API void cdt_sobj_release(cdt_sobj *obj);

#ifdef __cplusplus
}
#endif
#endif
