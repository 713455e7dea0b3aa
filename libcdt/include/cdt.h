/*!
 * @file cdt.h
 * cdt.h - libcdt: complex datatypes for sending language objects between processes.
 *
 * This header is the whole core API. Read it top to bottom:
 *   1. conventions, status codes, cdt_strerror()
 *   2. types: predefined, derived (MPI-4.1 constructors), queries, commit, free
 *   3. custom types (user callbacks: state, query, pack, unpack, memory regions)
 *   4. operations: resumable pack / unpack of (buf, count, type) at any byte offset
 *   5. iov extraction and copy between two layouts
 *   6. frames: one message = header + packed bytes + out-of-band regions (docs/FORMAT.md)
 * The UCX transport has its own header, cdt_ucx.h; the serialized-object adapter every
 * language binding uses, cdt_sobj.h. What a compiled program may rely on: docs/ABI.md.
 *
 * Conventions (apply to every function unless it says otherwise):
 *  - Functions return CDT_SUCCESS (0) or a negative status code; cdt_strerror() names it. The
 *    one positive status is CDT_INPROGRESS (1): "not finished yet", never an error. Functions
 *    that answer a question instead return the answer and say so: cdt_version_number,
 *    cdt_version_string, cdt_strerror, cdt_err_name, cdt_kind_size, cdt_kind_name (0 or
 *    "invalid" for a value that is no kind), cdt_type_predefined (NULL), cdt_type_is_custom.
 *  - Output parameters are written only on success.
 *  - Inputs are borrowed for the call only and may be reused or freed when it returns, unless
 *    the function says it keeps them (an operation keeps its buffer; a frame keeps the object's
 *    memory its regions point at; handles keep the types they were given, by reference).
 *  - A status returned by a user callback that is not CDT_SUCCESS stops the operation and is
 *    returned to the caller unchanged. Callbacks should return codes <= CDT_ERR_USER_BASE so
 *    they cannot be mistaken for library codes.
 *  - Counts, sizes, offsets and displacements of data are 64-bit signed (cdt_count), as MPI-4's
 *    large counts. size_t appears only for C memory that the library writes or allocates for
 *    the caller (a text buffer, an allocator hook's request).
 *  - Functions that free accept NULL and do nothing.
 *  - Nothing is thread-safe on the same handle unless stated; distinct handles may be used
 *    concurrently. Committed types may be shared by any number of threads and operations; so
 *    a custom type's callbacks may run in several threads at once with the same context
 *    (each operation has its own state).
 */
#ifndef CDT_H
#define CDT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! @def CDT_API
 *  Marks the functions libcdt exports: default symbol visibility on ELF systems, dllexport
 *  (building the library) or dllimport on Windows, nothing when CDT_STATIC_DEFINE is defined
 *  (the static library: its CMake target cdtypes::core_static defines it for its users). */
#if defined(CDT_STATIC_DEFINE)
#define CDT_API
#elif defined(_WIN32)
#ifdef CDT_BUILDING
#define CDT_API __declspec(dllexport)
#else
#define CDT_API __declspec(dllimport)
#endif
#else
#define CDT_API __attribute__((visibility("default")))
#endif

/*! The major version of this header. Before 1.0 every minor version may change the ABI (the
 * shared libraries are libcdtypes.so.0.MINOR and libcdtypes-ucx.so.0.MINOR); from 1.0 only a
 * major version does (docs/ABI.md). */
#define CDT_VERSION_MAJOR 0
#define CDT_VERSION_MINOR 2 /*!< the minor version of this header (see CDT_VERSION_MAJOR) */
#define CDT_VERSION_PATCH 0 /*!< the patch version of this header */
/*! The version of this header as one number, MAJOR * 10000 + MINOR * 100 + PATCH; compare it
 *  with cdt_version_number(), the library's. */
#define CDT_VERSION_NUMBER (CDT_VERSION_MAJOR * 10000 + CDT_VERSION_MINOR * 100 + CDT_VERSION_PATCH)

/*! cdt_version_number() : @return CDT_VERSION_NUMBER of the library actually linked. */
CDT_API unsigned cdt_version_number(void);
/*! cdt_version_string() : @return "MAJOR.MINOR.PATCH" of the library actually linked (static
 *  storage). */
CDT_API const char *cdt_version_string(void);

/* ------------------------------------------------------------------------------------------
 * 1. Status codes
 * ---------------------------------------------------------------------------------------- */

/*! X(name, value, message). Values are stable ABI: never renumber, only append. */
#define CDT_STATUS_MAP(X)                                                                          \
    X(CDT_SUCCESS, 0, "success")                                                                   \
    X(CDT_INPROGRESS, 1, "operation in progress")                                                  \
    X(CDT_ERR_INVALID_ARG, -1, "invalid argument")                                                 \
    X(CDT_ERR_NO_MEMORY, -2, "out of memory")                                                      \
    X(CDT_ERR_OVERFLOW, -3, "count, size or displacement overflows 64 bits")                       \
    X(CDT_ERR_NOT_COMMITTED, -4, "datatype is not committed")                                      \
    X(CDT_ERR_UNSUPPORTED, -5, "operation not supported for this datatype")                        \
    X(CDT_ERR_ORDER, -6, "call out of order for this operation")                                   \
    X(CDT_ERR_TRUNCATED, -7, "data does not fit the destination")                                  \
    X(CDT_ERR_CALLBACK, -8, "a custom datatype callback broke its contract")                       \
    X(CDT_ERR_FRAME_MAGIC, -9, "not a libcdt frame (bad magic)")                                   \
    X(CDT_ERR_FRAME_VERSION, -10, "unsupported frame version or flags")                            \
    X(CDT_ERR_FRAME_MALFORMED, -11, "malformed frame")                                             \
    X(CDT_ERR_FRAME_TRUNCATED, -12, "frame is truncated")                                          \
    X(CDT_ERR_FRAME_MISMATCH, -13, "frame does not match the receiving datatype")                  \
    X(CDT_ERR_BYTE_ORDER, -14, "frame was written with another byte order")                        \
    X(CDT_ERR_INCOMPLETE, -15, "not all bytes of the operation were delivered")                    \
    X(CDT_ERR_TRANSPORT, -20, "transport error")                                                   \
    X(CDT_ERR_PEER, -21, "peer unreachable or gone")                                               \
    X(CDT_ERR_CANCELED, -22, "request canceled")                                                   \
    X(CDT_ERR_TIMEOUT, -23, "timed out")                                                           \
    X(CDT_ERR_BUSY, -24, "resource busy")                                                          \
    X(CDT_ERR_LIMIT, -25, "a limit set by the receiver was exceeded")

/*! Status codes: what every function that can fail returns (0 success, 1 in progress,
 *  negative: an error). The values are generated from CDT_STATUS_MAP. */
enum cdt_status {
#define CDT_STATUS_ENUM_(name, value, msg) name = (value),
    CDT_STATUS_MAP(CDT_STATUS_ENUM_)
#undef CDT_STATUS_ENUM_
        CDT_ERR_USER_BASE = -1000 /*!< callbacks: return codes at or below this */
};
/*! @var CDT_SUCCESS
 *  success. */
/*! @var CDT_INPROGRESS
 *  "operation in progress": not finished yet (a request still pending); never an error. */
/*! @var CDT_ERR_INVALID_ARG
 *  "invalid argument": a NULL, negative or out-of-range argument, or a field_mask bit this
 *  library does not know. */
/*! @var CDT_ERR_NO_MEMORY
 *  "out of memory": an allocation failed. */
/*! @var CDT_ERR_OVERFLOW
 *  "count, size or displacement overflows 64 bits". */
/*! @var CDT_ERR_NOT_COMMITTED
 *  "datatype is not committed": call cdt_type_commit() first. */
/*! @var CDT_ERR_UNSUPPORTED
 *  "operation not supported for this datatype" (or, where a function says so, in this
 *  configuration). */
/*! @var CDT_ERR_ORDER
 *  "call out of order for this operation" (e.g. regions before the packed stream was unpacked). */
/*! @var CDT_ERR_TRUNCATED
 *  "data does not fit the destination". */
/*! @var CDT_ERR_CALLBACK
 *  "a custom datatype callback broke its contract" (e.g. a negative length, an uncommitted
 *  region type). */
/*! @var CDT_ERR_FRAME_MAGIC
 *  "not a libcdt frame (bad magic)". */
/*! @var CDT_ERR_FRAME_VERSION
 *  "unsupported frame version or flags". */
/*! @var CDT_ERR_FRAME_MALFORMED
 *  "malformed frame": a header or delivery that breaks the format (docs/FORMAT.md). */
/*! @var CDT_ERR_FRAME_TRUNCATED
 *  "frame is truncated": fewer bytes than the header needs. */
/*! @var CDT_ERR_FRAME_MISMATCH
 *  "frame does not match the receiving datatype". */
/*! @var CDT_ERR_BYTE_ORDER
 *  "frame was written with another byte order". */
/*! @var CDT_ERR_INCOMPLETE
 *  "not all bytes of the operation were delivered". */
/*! @var CDT_ERR_TRANSPORT
 *  "transport error": UCX failed. */
/*! @var CDT_ERR_PEER
 *  "peer unreachable or gone". */
/*! @var CDT_ERR_CANCELED
 *  "request canceled". */
/*! @var CDT_ERR_TIMEOUT
 *  "timed out". */
/*! @var CDT_ERR_BUSY
 *  "resource busy": e.g. a request still pending, events pending at cdt_ucx_worker_arm(). */
/*! @var CDT_ERR_LIMIT
 *  "a limit set by the receiver was exceeded" (cdt_decoder_params, cdt_ucx_recv_params). */

/*! cdt_strerror() : @return a static English message for `status` (never NULL). Unknown codes,
 *  such as a callback's own, give "unknown or user-defined error". */
CDT_API const char *cdt_strerror(int status);
/*! cdt_err_name() : @return the status' constant name ("CDT_ERR_INVALID_ARG"), or
 *  "CDT_ERR_USER" for codes libcdt does not define. */
CDT_API const char *cdt_err_name(int status);

/* ------------------------------------------------------------------------------------------
 * 2. Types
 * ---------------------------------------------------------------------------------------- */

/*! Counts, sizes, offsets and displacements of data: 64-bit signed, as MPI-4's large counts. */
typedef int64_t cdt_count;

/*! Opaque, reference-counted datatype handle. */
typedef struct cdt_type_s *cdt_type;

/*! A contiguous piece of memory. Same layout as struct iovec / ucp_dt_iov_t on LP64 systems. */
typedef struct cdt_iov {
    void *base;    /*!< first byte */
    cdt_count len; /*!< bytes */
} cdt_iov;

/*! Predefined element kinds. Values are stable ABI (they also appear in frames, docs/FORMAT.md). */
typedef enum cdt_kind {
    CDT_KIND_BYTE = 1,            /*!< uninterpreted byte (as MPI_BYTE) */
    CDT_KIND_CHAR = 2,            /*!< char */
    CDT_KIND_INT8 = 3,            /*!< int8_t */
    CDT_KIND_INT16 = 4,           /*!< int16_t */
    CDT_KIND_INT32 = 5,           /*!< int32_t */
    CDT_KIND_INT64 = 6,           /*!< int64_t */
    CDT_KIND_UINT8 = 7,           /*!< uint8_t */
    CDT_KIND_UINT16 = 8,          /*!< uint16_t */
    CDT_KIND_UINT32 = 9,          /*!< uint32_t */
    CDT_KIND_UINT64 = 10,         /*!< uint64_t */
    CDT_KIND_FLOAT = 11,          /*!< IEEE-754 binary32 */
    CDT_KIND_DOUBLE = 12,         /*!< IEEE-754 binary64 */
    CDT_KIND_COMPLEX_FLOAT = 13,  /*!< two binary32 */
    CDT_KIND_COMPLEX_DOUBLE = 14, /*!< two binary64 */
    CDT_KIND_BOOL = 15,           /*!< one byte, 0 or 1 */
    CDT_KIND_COUNT_ = 16,         /*!< number of kinds + 1; not a kind and not ABI: it grows
                                   * when a kind is added (names ending in _ are not pinned) */
    CDT_KIND_MIXED = 0            /*!< returned for types that mix kinds */
} cdt_kind;

/*! cdt_type_predefined() : the committed predefined type of `kind`, or NULL for an invalid kind.
 *  Predefined types are never freed; cdt_type_free() on one is CDT_ERR_INVALID_ARG. */
CDT_API cdt_type cdt_type_predefined(cdt_kind kind);

/*! The predefined types by name: CDT_BYTE is uninterpreted bytes (CDT_KIND_BYTE). They are function
 * calls, not constants (unlike MPI_INT), so they cannot initialise a static variable; call
 * cdt_type_predefined() at run time instead. */
#define CDT_BYTE cdt_type_predefined(CDT_KIND_BYTE)
#define CDT_CHAR cdt_type_predefined(CDT_KIND_CHAR)     /*!< char (CDT_KIND_CHAR) */
#define CDT_INT8 cdt_type_predefined(CDT_KIND_INT8)     /*!< int8_t (CDT_KIND_INT8) */
#define CDT_INT16 cdt_type_predefined(CDT_KIND_INT16)   /*!< int16_t (CDT_KIND_INT16) */
#define CDT_INT32 cdt_type_predefined(CDT_KIND_INT32)   /*!< int32_t (CDT_KIND_INT32) */
#define CDT_INT64 cdt_type_predefined(CDT_KIND_INT64)   /*!< int64_t (CDT_KIND_INT64) */
#define CDT_UINT8 cdt_type_predefined(CDT_KIND_UINT8)   /*!< uint8_t (CDT_KIND_UINT8) */
#define CDT_UINT16 cdt_type_predefined(CDT_KIND_UINT16) /*!< uint16_t (CDT_KIND_UINT16) */
#define CDT_UINT32 cdt_type_predefined(CDT_KIND_UINT32) /*!< uint32_t (CDT_KIND_UINT32) */
#define CDT_UINT64 cdt_type_predefined(CDT_KIND_UINT64) /*!< uint64_t (CDT_KIND_UINT64) */
#define CDT_FLOAT cdt_type_predefined(CDT_KIND_FLOAT)   /*!< float (CDT_KIND_FLOAT) */
#define CDT_DOUBLE cdt_type_predefined(CDT_KIND_DOUBLE) /*!< double (CDT_KIND_DOUBLE) */
/*! float complex: two float (CDT_KIND_COMPLEX_FLOAT) */
#define CDT_COMPLEX_FLOAT cdt_type_predefined(CDT_KIND_COMPLEX_FLOAT)
/*! double complex: two double (CDT_KIND_COMPLEX_DOUBLE) */
#define CDT_COMPLEX_DOUBLE cdt_type_predefined(CDT_KIND_COMPLEX_DOUBLE)
#define CDT_BOOL cdt_type_predefined(CDT_KIND_BOOL) /*!< bool (CDT_KIND_BOOL) */

/*! cdt_kind_size() : size in bytes of one element of `kind`, 0 for an invalid kind. */
CDT_API cdt_count cdt_kind_size(cdt_kind kind);
/*! cdt_kind_name() : "int32", "double", ...; "invalid" for an invalid kind. */
CDT_API const char *cdt_kind_name(cdt_kind kind);

/*! Pass as `buf` when a type's displacements are absolute addresses (MPI_BOTTOM). */
#define CDT_BOTTOM ((void *)0)

/*! Subarray storage order (the `order` argument of cdt_type_subarray). */
enum cdt_order {
    CDT_ORDER_C = 0,       /*!< row-major: the last dimension varies fastest */
    CDT_ORDER_FORTRAN = 1, /*!< column-major: the first dimension varies fastest */
};

/*! Derived constructors, MPI-4.1 semantics with 64-bit counts. Each creates a new, uncommitted
 * type holding a reference to `oldtype` (the caller may free `oldtype` right away).
 * Errors: CDT_ERR_INVALID_ARG (negative count or blocklength, NULL array with count > 0, NULL
 * output, custom type as oldtype, bad order/ndims), CDT_ERR_OVERFLOW (size, extent or a
 * displacement out of 64-bit range), CDT_ERR_NO_MEMORY. */
CDT_API int cdt_type_contiguous(cdt_count count, cdt_type oldtype, cdt_type *newtype);
/*! stride in units of oldtype's extent; may be negative. */
CDT_API int cdt_type_vector(cdt_count count, cdt_count blocklength, cdt_count stride,
                            cdt_type oldtype, cdt_type *newtype);
/*! stride in bytes; may be negative. */
CDT_API int cdt_type_hvector(cdt_count count, cdt_count blocklength, cdt_count stride_bytes,
                             cdt_type oldtype, cdt_type *newtype);
/*! displacements in units of oldtype's extent. */
CDT_API int cdt_type_indexed(cdt_count count, const cdt_count blocklengths[],
                             const cdt_count displacements[], cdt_type oldtype, cdt_type *newtype);
/*! displacements in bytes. */
CDT_API int cdt_type_hindexed(cdt_count count, const cdt_count blocklengths[],
                              const cdt_count byte_displacements[], cdt_type oldtype,
                              cdt_type *newtype);
/*! cdt_type_indexed_block() : count blocks of blocklength elements each, at displacements in
 *  units of oldtype's extent (MPI_Type_create_indexed_block). */
CDT_API int cdt_type_indexed_block(cdt_count count, cdt_count blocklength,
                                   const cdt_count displacements[], cdt_type oldtype,
                                   cdt_type *newtype);
/*! cdt_type_hindexed_block() : as cdt_type_indexed_block, displacements in bytes
 *  (MPI_Type_create_hindexed_block). */
CDT_API int cdt_type_hindexed_block(cdt_count count, cdt_count blocklength,
                                    const cdt_count byte_displacements[], cdt_type oldtype,
                                    cdt_type *newtype);
/*! displacements in bytes; types[i] may differ. */
CDT_API int cdt_type_struct(cdt_count count, const cdt_count blocklengths[],
                            const cdt_count byte_displacements[], const cdt_type types[],
                            cdt_type *newtype);
/*! order: CDT_ORDER_C or CDT_ORDER_FORTRAN; 1 <= ndims <= 32. */
CDT_API int cdt_type_subarray(int ndims, const cdt_count sizes[], const cdt_count subsizes[],
                              const cdt_count starts[], int order, cdt_type oldtype,
                              cdt_type *newtype);
/*! New lb and extent (extent may be negative, as in MPI). */
CDT_API int cdt_type_resized(cdt_type oldtype, cdt_count lb, cdt_count extent, cdt_type *newtype);
/*! A new handle to the same layout; committed if oldtype is. */
CDT_API int cdt_type_dup(cdt_type oldtype, cdt_type *newtype);

/*! cdt_type_padded() : oldtype's elements moved as their memory, gaps included. For element
 *  types whose gaps are padding: a C struct described field by field (offsetof) and resized to
 *  its sizeof. The new type's typemap is the bytes of [lb, lb + extent) of oldtype (same lb and
 *  extent; kind CDT_KIND_BYTE; size = extent): a pack reads the gaps and an unpack writes them,
 *  so every byte of [lb, lb + count * extent) of the buffer must belong to it. An array of such
 *  elements is one contiguous block: it packs as one memcpy, and a frame sends it as one
 *  region (zero-copy from the region threshold on; between two processes of one host, both
 *  cores copy it: docs/TRANSPORT.md §10.3). Both ends use the padded type: its packed form
 *  (extent bytes an element) is not oldtype's, and as between any two types of different
 *  signatures (MPI's rule) nothing checks it: a receiver of oldtype gets a longer stream than
 *  its buffer holds (CDT_ERR_TRUNCATED); a padded receiver of oldtype's stream gets a short
 *  message and reads it as memory. Uncommitted, as every constructor's result.
 *  Errors: CDT_ERR_INVALID_ARG (NULL, custom oldtype, negative extent, a byte of oldtype
 *  outside the element's span), CDT_ERR_OVERFLOW, CDT_ERR_NO_MEMORY. See docs/ENGINE.md,
 *  Padding declared. */
CDT_API int cdt_type_padded(cdt_type oldtype, cdt_type *newtype);

/*! cdt_type_commit() : compile *type to its canonical form and pick its pack kernels. Must be
 *  called before a derived type is used in an operation. Idempotent; a no-op on predefined and
 *  custom types. *type is not changed (the pointer is MPI's signature): the same handle is
 *  now committed. */
CDT_API int cdt_type_commit(cdt_type *type);

/*! cdt_type_free() : drop the caller's reference and set *type to NULL. The type lives on while
 *  operations, frames or other types still use it. NULL or *type == NULL: no-op.
 *  Errors: CDT_ERR_INVALID_ARG for predefined types. */
CDT_API int cdt_type_free(cdt_type *type);

/*! Queries. size = bytes of data in one element; lb/extent as MPI (after resized);
 * true_lb/true_extent = span of the bytes actually touched. Custom types: CDT_ERR_UNSUPPORTED
 * (their size depends on the object; use an operation). */
CDT_API int cdt_type_size(cdt_type type, cdt_count *size);
/*! cdt_type_extent() : lower bound and extent of one element, as MPI (after cdt_type_resized).
 *  Custom types: CDT_ERR_UNSUPPORTED. */
CDT_API int cdt_type_extent(cdt_type type, cdt_count *lb, cdt_count *extent);
/*! cdt_type_true_extent() : true lower bound and true extent: the span of the bytes one element
 *  actually touches. Custom types: CDT_ERR_UNSUPPORTED. */
CDT_API int cdt_type_true_extent(cdt_type type, cdt_count *true_lb, cdt_count *true_extent);
/*! cdt_type_kind() : the single predefined kind every byte of the type belongs to, or
 *  CDT_KIND_MIXED (also for custom types). */
CDT_API int cdt_type_kind(cdt_type type, cdt_kind *kind);
/*! cdt_type_is_custom() : 1 for custom types, 0 otherwise (also for NULL). */
CDT_API int cdt_type_is_custom(cdt_type type);

/*! cdt_type_describe() : write a human-readable description of a committed type's canonical
 *  form into buf (NUL-terminated, truncated to len). *needed (if not NULL) receives the full
 *  length without the NUL. Two constructions of the same layout print the same text. */
CDT_API int cdt_type_describe(cdt_type type, char *buf, size_t len, size_t *needed);

/* ------------------------------------------------------------------------------------------
 * 3. Custom types (MPI_Type_create_custom of Tronge et al.)
 *
 * The library drives these callbacks; `state` is what the state callback returned (NULL when
 * there is no state callback). On the send side buf is the object passed to the operation; on
 * the receive side it is the object to fill. The region callbacks take `void *buf` for both
 * sides: when packing it is the caller's const object, and a callback must not write through
 * it (the library never does). The state callback's `src` is likewise the object to fill on
 * the receive side.
 * ---------------------------------------------------------------------------------------- */

/*! Called once when an operation begins. May be NULL (state is then NULL). When it fails, the
 * operation does not begin and state_free is not called (there is no state). */
typedef int(cdt_custom_state_func_t)(void *context, const void *src, cdt_count src_count,
                                     void **state);
/*! Called exactly once per operation that began (also when state_fn is NULL, with NULL), when it
 * ends, also after any error. May be NULL. */
typedef int(cdt_custom_state_free_func_t)(void *state);
/*! Total packed bytes of (buf, count). Required. */
typedef int(cdt_custom_query_func_t)(void *state, const void *buf, cdt_count count,
                                     cdt_count *packed_size);
/*! Pack bytes [offset, offset + *used) of the packed stream into dst. *used may be less than
 * dst_size (a partial fill: the next call continues at offset + *used) but must be > 0 while
 * offset < packed size. Required. */
typedef int(cdt_custom_pack_func_t)(void *state, const void *buf, cdt_count count, cdt_count offset,
                                    void *dst, cdt_count dst_size, cdt_count *used);
/*! Unpack src_size bytes found at `offset` of the packed stream. Required for receiving.
 *
 * The bytes come from the frame, that is from the sender, not from the receiver's `count`: a
 * decoder bounds offset + src_size by the packed size that the frame's header announces, but it
 * cannot know how many bytes (buf, count) holds (a custom object's packed size is the
 * callback's own business). The library refuses a frame whose header carries an object count
 * other than the receiver's `count` before this callback runs (CDT_ERR_FRAME_MISMATCH; every
 * frame this library writes carries it, docs/FORMAT.md), but a frame of an earlier writer
 * carries none, and a hostile frame may state the receiver's count over any packed size: both
 * can hand this callback offsets past what (buf, count) holds. So an unpack callback MUST check
 * every offset and length against its own state (count, the lengths it has read so far) before
 * it writes, and return an error (CDT_ERR_TRUNCATED, or a code at or below CDT_ERR_USER_BASE)
 * for bytes it has no room for; the error reaches the caller unchanged. The library checks
 * what it can see: the header against the bytes, the header's object count against the
 * receiver's count, and the receiver's region count and region sizes against the header
 * (CDT_ERR_FRAME_MISMATCH). */
typedef int(cdt_custom_unpack_func_t)(void *state, void *buf, cdt_count count, cdt_count offset,
                                      const void *src, cdt_count src_size);
/*! Number of memory regions of (buf, count). May be NULL (no regions). */
typedef int(cdt_custom_region_count_func_t)(void *state, void *buf, cdt_count count,
                                            cdt_count *region_count);
/*! Fill the arrays (region_count entries each): region i is reg_lens[i] elements of
 * reg_types[i] (any committed predefined or derived type) at reg_bases[i]. On the receive side
 * it is called after the packed bytes were unpacked, so a dynamic object can allocate first.
 * Required when region_count can return > 0. */
typedef int(cdt_custom_region_func_t)(void *state, void *buf, cdt_count count,
                                      cdt_count region_count, void *reg_bases[],
                                      cdt_count reg_lens[], cdt_type reg_types[]);

/*! Fields of cdt_custom_params; set a bit in field_mask for every field you fill (ABI can grow:
 * a caller compiled against an older header sets fewer bits, and a bit this library does not
 * know is refused with CDT_ERR_INVALID_ARG rather than ignored). QUERY and PACK are required. */
enum cdt_custom_param_field {
    CDT_CUSTOM_PARAM_STATE = 1u << 0,        /*!< state_fn */
    CDT_CUSTOM_PARAM_STATE_FREE = 1u << 1,   /*!< state_free_fn */
    CDT_CUSTOM_PARAM_QUERY = 1u << 2,        /*!< query_fn (required) */
    CDT_CUSTOM_PARAM_PACK = 1u << 3,         /*!< pack_fn (required) */
    CDT_CUSTOM_PARAM_UNPACK = 1u << 4,       /*!< unpack_fn */
    CDT_CUSTOM_PARAM_REGIONS = 1u << 5,      /*!< region_count_fn and region_fn */
    CDT_CUSTOM_PARAM_CONTEXT = 1u << 6,      /*!< context */
    CDT_CUSTOM_PARAM_CONTEXT_FREE = 1u << 7, /*!< context_free_fn */
    CDT_CUSTOM_PARAM_INORDER = 1u << 8,      /*!< inorder */
    CDT_CUSTOM_PARAM_FLAGS = 1u << 9,        /*!< flags */
};

/*! Bits of cdt_custom_params.flags: promises a type makes about its callbacks, which let the
 * library skip work it otherwise does to be safe (a bit this library does not know is refused
 * with CDT_ERR_INVALID_ARG). */
enum cdt_custom_flag {
    /*! unpack_fn reads each byte of src at most once: a length or offset it checks is kept in
     *  its own memory (a local, its state) and the value checked is the value used; src is
     *  never read again for it. The bytes may then change while the callback runs without
     *  harm beyond the object's own values, and a transport may hand the callback bytes
     *  straight out of memory the sending process shares (a local lane: docs/TRANSPORT.md
     *  §10.4) instead of a private copy of each fragment: one pass fewer on the receiver.
     *  Read such a value with one load into a local (memcpy into a local, or a volatile or
     *  atomic load where the compiler could otherwise load it twice). Without the flag the
     *  callback always reads private memory that nobody else writes. */
    CDT_CUSTOM_FLAG_UNPACK_READS_ONCE = 1u << 0,
};

/*! Called once with the type's context when the type's last reference goes (the handle freed
 * and no operation, frame, request or other type holding it any more), from whatever thread
 * drops that reference. */
typedef void(cdt_custom_context_free_func_t)(void *context);

/*! A custom type's callbacks and options (cdt_type_create_custom_advanced). */
typedef struct cdt_custom_params {
    uint64_t field_mask; /*!< CDT_CUSTOM_PARAM_* bits of the fields below that are set */
    cdt_custom_state_func_t *state_fn;           /*!< begins an operation (NULL: no state) */
    cdt_custom_state_free_func_t *state_free_fn; /*!< ends an operation (may be NULL) */
    cdt_custom_query_func_t *query_fn;           /*!< packed size of the object (required) */
    cdt_custom_pack_func_t *pack_fn;             /*!< packs the stream (required) */
    cdt_custom_unpack_func_t *unpack_fn;         /*!< unpacks the stream (NULL: send-only type) */
    cdt_custom_region_count_func_t *region_count_fn; /*!< number of regions (NULL: none) */
    cdt_custom_region_func_t *region_fn; /*!< the regions (required with region_count_fn) */
    void *context;                       /*!< passed to state_fn; default NULL */
    /*! called with context when the type's last reference goes; default: none */
    cdt_custom_context_free_func_t *context_free_fn;
    /*! nonzero: unpack_fn sees fragments in increasing offset order (the engine holds early
     *  ones); zero, the default: in any order */
    int inorder;
    /*! CDT_CUSTOM_FLAG_* bits; default 0 */
    uint64_t flags;
} cdt_custom_params;

/*! cdt_type_create_custom_advanced() : create a custom type (committed on creation) from a
 *  params struct that can grow, with an optional destructor for its context: types are
 *  reference-counted and outlive cdt_type_free() while operations, frames, requests or other
 *  types hold them, so only the library knows when the context may go (a binding that keeps
 *  a language object as the context frees it there).
 *  Errors: CDT_ERR_INVALID_ARG (NULL params or type, a field_mask bit or a flags bit this
 *  library does not know, query_fn or pack_fn missing, region_count_fn without region_fn),
 *  CDT_ERR_NO_MEMORY. When it fails, context_free_fn is not called. */
CDT_API int cdt_type_create_custom_advanced(const cdt_custom_params *params, cdt_type *type);

/*! cdt_type_create_custom() : create a custom type (committed on creation); the signature of
 *  MPI_Type_create_custom in the proposal, the same as cdt_type_create_custom_advanced without
 *  a context destructor.
 *  `context` : passed to state_fn; owned by the caller, must outlive the type.
 *  `inorder` : nonzero = unpack callbacks must see fragments in increasing offset order (the
 *             engine buffers early fragments); zero = fragments may be unpacked in any order.
 *  Errors: CDT_ERR_INVALID_ARG when query_fn or pack_fn is NULL, or region_count_fn is set
 *  without region_fn. unpack_fn may be NULL for send-only types (unpacking is then
 *  CDT_ERR_UNSUPPORTED). */
CDT_API int cdt_type_create_custom(
    cdt_custom_state_func_t *state_fn, cdt_custom_state_free_func_t *state_free_fn,
    cdt_custom_query_func_t *query_fn, cdt_custom_pack_func_t *pack_fn,
    cdt_custom_unpack_func_t *unpack_fn, cdt_custom_region_count_func_t *region_count_fn,
    cdt_custom_region_func_t *region_fn, void *context, int inorder, cdt_type *type);

/* ------------------------------------------------------------------------------------------
 * 4. Operations: one engine for every kind of type
 *
 * An operation binds (buf, count, type). Its packed stream is the bytes the type packs;
 * memory regions (custom types only) are separate and move untouched. Sequence:
 *   begin -> [packed_size] -> pack/unpack fragments (any order, any size) -> [regions] -> end
 * For predefined and derived types the packed stream is every byte of the data and there are
 * no regions.
 * ---------------------------------------------------------------------------------------- */

/*! An operation: (buf, count, type) being packed (cdt_op_pack_begin) or unpacked
 *  (cdt_op_unpack_begin), until cdt_op_end() frees it. */
typedef struct cdt_op_s *cdt_op;

/*! cdt_op_pack_begin() / cdt_op_unpack_begin() : start an operation. Calls the custom type's
 *  state callback. The operation holds a reference to `type`.
 *  Errors: CDT_ERR_INVALID_ARG (NULL type/op, count < 0), CDT_ERR_NOT_COMMITTED, the state
 *  callback's code (then no other callback has been called and state_free is not called). */
CDT_API int cdt_op_pack_begin(const void *buf, cdt_count count, cdt_type type, cdt_op *op);
/*! cdt_op_unpack_begin() : start an operation that unpacks into (buf, count, type); as
 *  cdt_op_pack_begin(). */
CDT_API int cdt_op_unpack_begin(void *buf, cdt_count count, cdt_type type, cdt_op *op);

/*! cdt_op_packed_size() : bytes of the packed stream (query callback for custom types; asked
 *  once and remembered). */
CDT_API int cdt_op_packed_size(cdt_op op, cdt_count *packed_size);

/*! cdt_op_pack() : pack stream bytes starting at `offset` into dst (dst_size bytes). *used
 *  receives the bytes written: at most dst_size, 0 only at the end of the stream; less than
 *  dst_size when a custom pack callback fills partially. Any offset and size are allowed, also
 *  ones that split an element; for custom types with inorder set, offset must be where the
 *  previous call stopped (CDT_ERR_ORDER otherwise). Pack operations only. */
CDT_API int cdt_op_pack(cdt_op op, cdt_count offset, void *dst, cdt_count dst_size,
                        cdt_count *used);

/*! cdt_op_unpack() : unpack src_size stream bytes that start at `offset`. Fragments may come in
 *  any order; they must not overlap or pass the end of the stream (CDT_ERR_TRUNCATED). For
 *  custom types with inorder set, early fragments are copied and delivered once the gap before
 *  them is filled. Unpack operations only.
 *  After an error (CDT_ERR_NO_MEMORY, the unpack callback's code) the same call may be made
 *  again: a fragment that could not be taken was not recorded; with inorder set, a fragment
 *  that was taken before delivering the held fragments it made due failed is recognised, and
 *  the call resumes that delivery (so does the next call of any fragment, also a zero-length
 *  one). Fragments still held when the operation ends were not delivered (see
 *  cdt_op_unpacked_bytes). Pack operations: CDT_ERR_ORDER. */
CDT_API int cdt_op_unpack(cdt_op op, cdt_count offset, const void *src, cdt_count src_size);

/*! cdt_op_region_count() / cdt_op_regions() : the memory regions of the object (0 unless the
 *  type is custom with a region_count callback). On an unpack operation, call after the
 *  packed stream was unpacked (CDT_ERR_ORDER otherwise). Arrays hold n entries. Region types
 *  are borrowed: valid until cdt_op_end(). CDT_ERR_CALLBACK if a callback gives a negative
 *  length, a NULL base with a positive length, or an uncommitted or custom region type. */
CDT_API int cdt_op_region_count(cdt_op op, cdt_count *n);
/*! cdt_op_regions() : the base, length (elements of the region's type) and type of each of
 *  the n regions (n must be what cdt_op_region_count gives: CDT_ERR_INVALID_ARG otherwise). */
CDT_API int cdt_op_regions(cdt_op op, cdt_count n, void *bases[], cdt_count lens[],
                           cdt_type types[]);

/*! cdt_op_unpacked_bytes() : stream bytes delivered to the unpack callback or the buffer so
 *  far (fragments still buffered for inorder delivery do not count). */
CDT_API int cdt_op_unpacked_bytes(cdt_op op, cdt_count *bytes);

/*! cdt_op_end() : finish the operation, call state_free exactly once, drop the type
 *  reference, free op. Returns state_free's status (the operation is freed regardless).
 *  NULL: no-op. */
CDT_API int cdt_op_end(cdt_op op);

/*! cdt_pack_size() : packed stream bytes of (count, type), derived or predefined types only. */
CDT_API int cdt_pack_size(cdt_count count, cdt_type type, cdt_count *size);

/*! cdt_pack() : pack all of (buf, count, type) at dst + *position in one call and advance
 *  *position by its packed size, as MPI_Pack does (several messages can be packed one after
 *  another into one buffer). The same bytes as an operation over the whole stream, without the
 *  operation's fixed cost: the fastest way to pack a whole message. Derived and predefined
 *  types only; a custom type's stream needs its operation or a frame (CDT_ERR_UNSUPPORTED).
 *  Errors: CDT_ERR_TRUNCATED (nothing written) when dst_size - *position is smaller than the
 *  packed size; CDT_ERR_INVALID_ARG (NULL type or position, negative count or size, *position
 *  outside [0, dst_size], NULL dst with bytes to write); CDT_ERR_NOT_COMMITTED;
 *  CDT_ERR_OVERFLOW. *position is unchanged on error. */
CDT_API int cdt_pack(const void *buf, cdt_count count, cdt_type type, void *dst, cdt_count dst_size,
                     cdt_count *position);
/*! cdt_unpack() : the reverse of cdt_pack, as MPI_Unpack: cdt_pack_size(count, type) bytes from
 *  src + *position into (buf, count, type); *position advances past them. CDT_ERR_TRUNCATED
 *  (nothing written) when fewer than that remain in src_size; other errors as cdt_pack. */
CDT_API int cdt_unpack(const void *src, cdt_count src_size, cdt_count *position, void *buf,
                       cdt_count count, cdt_type type);

/* ------------------------------------------------------------------------------------------
 * 5. iov extraction and copy between layouts (predefined and derived types)
 * ---------------------------------------------------------------------------------------- */

/*! cdt_iov_count() : number of maximal contiguous pieces of (buf, count, type), in packed
 *  order (adjacent pieces are merged). */
CDT_API int cdt_iov_count(const void *buf, cdt_count count, cdt_type type, cdt_count *n);
/*! cdt_iov_get() : pieces [first, first + max) into iov; *n_out receives how many were written
 *  (fewer at the end). Cost is proportional to the pieces written, not to `first`, when no
 *  two blocks of the layout touch (so no pieces merge: the usual case of blocks with gaps
 *  between them); otherwise the walk starts at piece 0. To walk all pieces, ask for them in
 *  large batches. */
CDT_API int cdt_iov_get(const void *buf, cdt_count count, cdt_type type, cdt_count first,
                        cdt_count max, cdt_iov iov[], cdt_count *n_out);
/*! cdt_copy() : copy the data of (src, scount, stype) into (dst, dcount, dtype) as if packed and
 *  unpacked, without allocating (a 16 KiB chunk on the stack when both layouts have gaps; one
 *  pass when either is contiguous). CDT_ERR_TRUNCATED when the source holds more bytes
 *  than the destination; a shorter source fills the destination's leading bytes. The source
 *  and destination memory must not overlap (as MPI requires of its buffers). */
CDT_API int cdt_copy(const void *src, cdt_count scount, cdt_type stype, void *dst, cdt_count dcount,
                     cdt_type dtype);

/* ------------------------------------------------------------------------------------------
 * 6. Frames: one object = one message (wire format: docs/FORMAT.md)
 *
 *   | header (fixed part + region table) | packed stream | pad | region 0 | pad | region 1 ...
 *
 * The header carries the packed size and every region's byte length and element kind, so a
 * receiver can allocate before region bytes arrive: no second message, no lock.
 * ---------------------------------------------------------------------------------------- */

typedef struct cdt_frame_s *cdt_frame;     /*!< an encoded message (send side) */
typedef struct cdt_decoder_s *cdt_decoder; /*!< a message being received */

/*! Bytes of the fixed header part; the full header size is known from these bytes. */
#define CDT_FRAME_FIXED_HEADER_SIZE 48
/*! Bytes per region in the header's region table. */
#define CDT_FRAME_REGION_ENTRY_SIZE 16
/*! Start of every region in a frame is aligned to this many bytes. */
#define CDT_FRAME_ALIGN 8

/*! Fields of cdt_frame_params, for its field_mask. */
enum cdt_frame_params_field {
    CDT_FRAME_PARAM_REGION_THRESHOLD = 1u << 0, /*!< region_threshold */
    /*! head_alloc, head_release (both required) and head_alloc_arg */
    CDT_FRAME_PARAM_HEAD_ALLOCATOR = 1u << 1,
};

/*! Memory for a frame's head (header + packed stream). alloc returns `bytes` bytes or NULL
 * (the encode then fails with CDT_ERR_NO_MEMORY); release takes back what alloc gave, with the
 * same size, at cdt_frame_free. Both may be called from any thread that encodes or frees. */
typedef void *(cdt_frame_alloc_func_t)(void *arg, size_t bytes);
/*! Takes back a head that the alloc function gave, with the same `bytes` (cdt_frame_params). */
typedef void(cdt_frame_release_func_t)(void *arg, void *ptr, size_t bytes);

/*! Encoding options. Set the bits of field_mask for the fields you fill (ABI can grow). */
typedef struct cdt_frame_params {
    uint64_t field_mask; /*!< CDT_FRAME_PARAM_* bits of the fields that are set */
    /*! Predefined/derived types whose data is one contiguous block of at least this many bytes
     * travel as a region (zero-copy) instead of being packed. Default 8192; a negative value
     * disables. */
    cdt_count region_threshold;
    /*! CDT_FRAME_PARAM_HEAD_ALLOCATOR: where heads larger than the frame's own small inline
     * storage live. Default malloc/free. A transport that sends many large packed streams
     * hands out reused buffers here: fresh memory costs a page fault per 4 KiB touched, which
     * is slower than the packing itself. */
    cdt_frame_alloc_func_t *head_alloc;
    cdt_frame_release_func_t *head_release; /*!< gives back what head_alloc gave */
    void *head_alloc_arg;                   /*!< the first argument of both */
} cdt_frame_params;

/*! cdt_frame_encode() : build the frame of (buf, count, type): packs the packed stream into a
 *  buffer the frame owns (after the header) and lists the regions by reference (no copy). buf
 *  and the regions must stay unchanged until cdt_frame_free(). params may be NULL.
 *  Errors: as the operation functions, CDT_ERR_CALLBACK, CDT_ERR_NO_MEMORY. */
CDT_API int cdt_frame_encode(const void *buf, cdt_count count, cdt_type type,
                             const cdt_frame_params *params, cdt_frame *frame);
/*! cdt_frame_size() : total bytes of the frame. */
CDT_API int cdt_frame_size(cdt_frame frame, cdt_count *bytes);
/*! cdt_frame_head() : the frame's first piece, header + packed stream, contiguous and owned by
 *  the frame. */
CDT_API int cdt_frame_head(cdt_frame frame, const void **data, cdt_count *len);
/*! cdt_frame_region_count() : number of regions (entries of the header's region table). */
CDT_API int cdt_frame_region_count(cdt_frame frame, cdt_count *n);
/*! cdt_frame_region_info() : byte length, element kind and frame offset of region `index`. */
CDT_API int cdt_frame_region_info(cdt_frame frame, cdt_count index, cdt_count *len_bytes,
                                  cdt_kind *kind, cdt_count *frame_offset);
/*! cdt_frame_region_iov_count() / cdt_frame_region_iov() : the memory of region `index` as
 *  contiguous pieces, in order (one piece for a region of contiguous type; none when empty). */
CDT_API int cdt_frame_region_iov_count(cdt_frame frame, cdt_count index, cdt_count *n);
/*! cdt_frame_region_iov() : pieces [first, first + max) of region `index` into iov; *n_out
 *  receives how many were written. */
CDT_API int cdt_frame_region_iov(cdt_frame frame, cdt_count index, cdt_count first, cdt_count max,
                                 cdt_iov iov[], cdt_count *n_out);
/*! cdt_frame_iov_count() / cdt_frame_iov() : the whole frame as pieces, in order (head,
 *  padding, region pieces); their concatenation is the frame. */
CDT_API int cdt_frame_iov_count(cdt_frame frame, cdt_count *n);
/*! cdt_frame_iov() : pieces [first, first + max) of the frame into iov; *n_out receives how
 *  many were written. */
CDT_API int cdt_frame_iov(cdt_frame frame, cdt_count first, cdt_count max, cdt_iov iov[],
                          cdt_count *n_out);
/*! cdt_frame_gather() : copy frame bytes [offset, offset + len) into dst. */
CDT_API int cdt_frame_gather(cdt_frame frame, cdt_count offset, void *dst, cdt_count len);
/*! cdt_frame_free() : end the frame's operation (state_free) and release it; returns
 *  state_free's status. NULL: no-op. */
CDT_API int cdt_frame_free(cdt_frame frame);

/*! Fields of cdt_frame_info, for its field_mask. */
enum cdt_frame_info_field {
    CDT_FRAME_INFO_VERSION = 1u << 0,      /*!< version */
    CDT_FRAME_INFO_FLAGS = 1u << 1,        /*!< flags */
    CDT_FRAME_INFO_HEADER_SIZE = 1u << 2,  /*!< header_size */
    CDT_FRAME_INFO_PACKED_SIZE = 1u << 3,  /*!< packed_size */
    CDT_FRAME_INFO_REGION_COUNT = 1u << 4, /*!< region_count */
    CDT_FRAME_INFO_REGION_BYTES = 1u << 5, /*!< region_bytes */
    CDT_FRAME_INFO_FRAME_SIZE = 1u << 6,   /*!< frame_size */
    CDT_FRAME_INFO_OBJECT_COUNT = 1u << 7, /*!< object_count (since 0.2.0) */
};
/*! Every field this header declares. A program compiled with it keeps this value, so a later
 * library with more fields never writes past the program's struct. */
#define CDT_FRAME_INFO_ALL 0xffu

/*! What a valid header says. An output struct that can grow: the caller sets field_mask to the
 * CDT_FRAME_INFO_* bits of the fields it wants (CDT_FRAME_INFO_ALL for all), and the library
 * writes those fields only. A mask of 0 or with a bit this library does not know is
 * CDT_ERR_INVALID_ARG (0 is almost always a caller that forgot to set it). */
typedef struct cdt_frame_info {
    uint64_t field_mask;    /*!< in: the fields to fill */
    uint32_t version;       /*!< the format version of the frame */
    uint32_t flags;         /*!< the header's flags (docs/FORMAT.md) */
    cdt_count header_size;  /*!< fixed part + region table */
    cdt_count packed_size;  /*!< bytes of the packed stream */
    cdt_count region_count; /*!< entries in the region table */
    cdt_count region_bytes; /*!< sum of region lengths */
    cdt_count frame_size;   /*!< total bytes, padding included */
    cdt_count object_count; /*!< the sender's object count (FORMAT.md §4); -1 when the frame
                                 carries none (flag OBJECT_COUNT clear: an earlier writer's) */
} cdt_frame_info;

/*! cdt_frame_header_size() : from the first `len` bytes of a frame (len >=
 *  CDT_FRAME_FIXED_HEADER_SIZE), validate the fixed part and give the full header size.
 *  Errors: CDT_ERR_FRAME_TRUNCATED (len too small), CDT_ERR_FRAME_MAGIC, CDT_ERR_FRAME_VERSION,
 *  CDT_ERR_BYTE_ORDER, CDT_ERR_FRAME_MALFORMED. */
CDT_API int cdt_frame_header_size(const void *data, cdt_count len, cdt_count *header_size);

/*! cdt_decoder_create() : validate a complete header (data holds at least header_size bytes;
 *  more is ignored) and start a decoder. The header is copied: data need not outlive the call.
 *  Nothing is allocated in proportion to the values the header claims beyond its own size. */
CDT_API int cdt_decoder_create(const void *data, cdt_count len, cdt_decoder *decoder);

/*! Fields of cdt_decoder_params, for its field_mask. */
enum cdt_decoder_params_field {
    CDT_DECODER_PARAM_MAX_FRAME_BYTES = 1u << 0, /*!< max_frame_bytes */
    CDT_DECODER_PARAM_MAX_REGIONS = 1u << 1,     /*!< max_regions */
};

/*! Limits for frames from peers that are not trusted (docs/SECURITY.md). A frame over a limit
 * is refused with CDT_ERR_LIMIT by cdt_decoder_create_advanced(), from its header alone,
 * before anything is allocated for it. Set the bits of field_mask for the fields you fill. */
typedef struct cdt_decoder_params {
    uint64_t field_mask; /*!< CDT_DECODER_PARAM_* bits of the fields that are set */
    /*! CDT_DECODER_PARAM_MAX_FRAME_BYTES: largest frame_size accepted (header, packed stream,
     * padding and regions). It bounds what a receiver that allocates from the header (such as
     * cdt_sobj_recv_prepare) is made to allocate. Default: no limit (INT64_MAX). */
    cdt_count max_frame_bytes;
    /*! CDT_DECODER_PARAM_MAX_REGIONS: most regions accepted. Default: no limit. */
    cdt_count max_regions;
} cdt_decoder_params;

/*! cdt_decoder_create_advanced() : cdt_decoder_create() with limits; params may be NULL (no
 *  limits: the same as cdt_decoder_create). Errors: those of cdt_decoder_create(),
 *  CDT_ERR_LIMIT (the header announces more than a limit allows), CDT_ERR_INVALID_ARG (a
 *  negative limit). */
CDT_API int cdt_decoder_create_advanced(const void *data, cdt_count len,
                                        const cdt_decoder_params *params, cdt_decoder *decoder);
/*! cdt_decoder_info() : what the decoder's header says: the fields info->field_mask asks for
 *  (see cdt_frame_info). Errors: CDT_ERR_INVALID_ARG (NULL argument, a field_mask of 0 or with
 *  an unknown bit). */
CDT_API int cdt_decoder_info(cdt_decoder decoder, cdt_frame_info *info);
/*! cdt_decoder_region_info() : byte length, element kind and offset within the frame of region
 *  `index`. */
CDT_API int cdt_decoder_region_info(cdt_decoder decoder, cdt_count index, cdt_count *len_bytes,
                                    cdt_kind *kind, cdt_count *frame_offset);
/*! cdt_decoder_bind() : choose where the object goes, and begin the unpack operation. For a
 *  custom type `count` must be the object count the header carries (CDT_ERR_FRAME_MISMATCH,
 *  nothing bound; a frame of an earlier writer carries none and any count is taken), the
 *  packed stream goes to its unpack callback and the regions to the places its region
 *  callback gives (count and byte lengths must match the header: CDT_ERR_FRAME_MISMATCH). For
 *  predefined and derived types, the packed stream followed by the regions is unpacked as one
 *  stream (the sender chose the split; `count` is the room, more data: CDT_ERR_TRUNCATED). */
CDT_API int cdt_decoder_bind(cdt_decoder decoder, void *buf, cdt_count count, cdt_type type);
/*! cdt_decoder_write() : deliver frame bytes [offset, offset + len) (offsets of the whole frame;
 *  header bytes are checked against the header given at create, padding must be zero). Pieces
 *  may come in any order but not overlap (CDT_ERR_FRAME_MALFORMED). A custom receiver learns
 *  where regions go only from the complete packed stream, so region bytes that come before it
 *  are kept in a copy (at most the frame's size) and written when the stream is complete.
 *  Bytes count as arrived only once written: when a call fails, the parts of the piece before
 *  the failing area (header, packed stream, padding, a region) were taken, the rest was not,
 *  and cdt_decoder_finish() reports CDT_ERR_INCOMPLETE until it is given again. Making the same
 *  call again resumes after what the failed call took. */
CDT_API int cdt_decoder_write(cdt_decoder decoder, cdt_count offset, const void *src,
                              cdt_count len);
/*! cdt_decoder_region_iov_count() / cdt_decoder_region_iov() : after the packed stream was
 *  fully written, the destination memory of region `index` as pieces, so that a transport can
 *  receive region bytes there directly (then report them with cdt_decoder_region_done()). */
CDT_API int cdt_decoder_region_iov_count(cdt_decoder decoder, cdt_count index, cdt_count *n);
/*! cdt_decoder_region_iov() : pieces [first, first + max) of region `index`'s destination into
 *  iov; *n_out receives how many were written. */
CDT_API int cdt_decoder_region_iov(cdt_decoder decoder, cdt_count index, cdt_count first,
                                   cdt_count max, cdt_iov iov[], cdt_count *n_out);
/*! cdt_decoder_region_done() : report that all bytes of region `index` were received into the
 *  memory cdt_decoder_region_iov gave. CDT_ERR_ORDER when reported before, or when some of its
 *  bytes came through cdt_decoder_write(). */
CDT_API int cdt_decoder_region_done(cdt_decoder decoder, cdt_count index);
/*! cdt_decoder_finish() : check that every byte arrived and reached the object
 *  (CDT_ERR_INCOMPLETE otherwise, also for stream fragments still held for in-order delivery).
 *  Never reports success for bytes that were refused or not delivered. */
CDT_API int cdt_decoder_finish(cdt_decoder decoder);
/*! cdt_decoder_free() : end the unpack operation (state_free) and free; returns its status. */
CDT_API int cdt_decoder_free(cdt_decoder decoder);

/*! cdt_frame_decode() : one call: validate the frame in data[0, len) completely, then unpack it
 *  into (buf, count, type). Nothing is written to buf before the header is validated, nor
 *  when a custom type's `count` differs from the header's object count
 *  (CDT_ERR_FRAME_MISMATCH, as cdt_decoder_bind). */
CDT_API int cdt_frame_decode(const void *data, cdt_count len, void *buf, cdt_count count,
                             cdt_type type);

#ifdef __cplusplus
}
#endif
#endif /*!< CDT_H */
