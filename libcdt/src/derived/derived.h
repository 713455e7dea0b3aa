/*
 * derived.h - the derived datatype engine's internal structures (docs/ENGINE.md).
 *
 * A derived type keeps its constructor record (what the user asked for) and, once committed,
 * its canonical form: a small tree of loop nodes (docs/ENGINE.md, "Canonical form") whose leaves
 * are contiguous byte runs. Nodes are immutable and reference counted, so a parent's form shares
 * the subtrees of its children. The form never depends on the count a type is used with.
 */
#ifndef CDT_DERIVED_H
#define CDT_DERIVED_H

#include "core/core.h"

#include <stdatomic.h>
#include <stdint.h>

typedef enum cdt__node_kind {
    CDT__NODE_LEAF = 1,    /* one contiguous run of `len` bytes at off */
    CDT__NODE_VECTOR = 2,  /* count copies of child at off + i * stride (strided loop) */
    CDT__NODE_BLOCK = 3,   /* count copies of child at disps[i] (fixed-length indexed) */
    CDT__NODE_INDEXED = 4, /* count runs of lens[i] bytes at disps[i] (variable-length) */
    CDT__NODE_STRUCT = 5,  /* count different children at disps[i] (nested) */
} cdt__node_kind;

/* Pack kernels chosen at commit (pack_kernels.c). */
typedef enum cdt__kernel {
    CDT__K_LEAF = 1,
    CDT__K_VEC_LEAF,     /* vector of runs */
    CDT__K_VEC_VEC_LEAF, /* vector of vectors of runs */
    CDT__K_VEC_BLK_LEAF, /* vector of block-indexed runs */
    CDT__K_VEC_IDX,      /* vector of short run lists (structs with gaps) */
    CDT__K_VEC,          /* vector of anything */
    CDT__K_BLK_LEAF,     /* block-indexed runs */
    CDT__K_BLK,
    CDT__K_IDX,
    CDT__K_STRUCT,
    CDT__K_ZIP, /* struct of block-indexed runs over one index list (node->zip) */
} cdt__kernel;

/* A struct whose members are block-indexed runs over the same index list up to a scale:
 * member j's i-th run is len[j] bytes at base[j] + scale[j] * idx32[i] (LAMMPS gathers a
 * 24-byte and three 8-byte arrays at the same particle indices: idx32 = 8 * index, scales 3
 * and 1). Built at commit beside the members' own lists (form_share.c), which the range walk
 * and iov keep using; the kernel (DIR(zip)) reads the one list instead of one per member. */
#define CDT__ZIP_MAX 8
typedef struct cdt__zip {
    int members;
    cdt_count count; /* runs per member */
    cdt_count base[CDT__ZIP_MAX], scale[CDT__ZIP_MAX], len[CDT__ZIP_MAX];
    int32_t *idx32; /* the index list, times the members' common scale */
} cdt__zip;

typedef struct cdt__node cdt__node;
/* The first 64 bytes hold what the kernel of a run, a vector of runs or a vector of vectors of
 * runs reads before its loop (the run length copied from the leaf, the inner vector's count
 * and stride, the offset of the first run), and nodes are 64-byte aligned: a call reads one line
 * of its root node and none of its children. A large strided message evicts them from L1
 * between calls, and those misses form a chain (type, record, node, child) that the loop waits
 * for: vector_1000 had 8 L1 misses per call more than the hand loop, now 5; cdt_pack 20.5 ->
 * 15.8 ns over the same loop called directly (docs/ENGINE.md). */
struct cdt__node {
    cdt__node_kind kind;
    cdt__kernel kern;
    cdt_count size;   /* packed bytes of one instance */
    cdt_count first;  /* offset of the first run of an instance */
    cdt_count count;  /* VECTOR, BLOCK, INDEXED, STRUCT */
    cdt_count stride; /* VECTOR: bytes */
    cdt_count runlen; /* LEAF: len; VECTOR of runs or of vectors of runs: the runs' length */
    cdt_count in_count, in_stride; /* VECTOR of vectors of runs: the inner vector's */
    cdt_count off;      /* LEAF, VECTOR: byte offset of the data (others: 0, disps absolute) */
    cdt_count len;      /* LEAF: bytes */
    int depth;          /* 1 for a leaf */
    bool nojoin;        /* no two consecutive runs of an instance touch */
    atomic_long refs;   /* nodes are shared between the forms of types used by any thread */
    cdt_count nblocks;  /* runs of one instance (before merging across instances) */
    cdt_count last_end; /* end offset of the last run of an instance */
    cdt_count minlen, maxlen; /* INDEXED: shortest and longest run */
    cdt_count *disps;         /* BLOCK, INDEXED, STRUCT */
    int32_t *disps32;         /* BLOCK of runs: disps again when all fit 32 bits (else NULL) */
    cdt_count *lens;          /* INDEXED */
    cdt_count *prefix;        /* INDEXED, STRUCT: packed bytes before entry i (count + 1) */
    cdt_count *bprefix;       /* STRUCT: runs before entry i (count + 1) */
    cdt__node *child;         /* VECTOR, BLOCK */
    cdt__node **children;     /* STRUCT */
    cdt__zip *zip;            /* STRUCT with kernel CDT__K_ZIP */
} __attribute__((aligned(64)));

typedef enum cdt__ctor {
    CDT__CTOR_CONTIGUOUS = 1,
    CDT__CTOR_VECTOR,
    CDT__CTOR_HVECTOR,
    CDT__CTOR_INDEXED,
    CDT__CTOR_HINDEXED,
    CDT__CTOR_INDEXED_BLOCK,
    CDT__CTOR_HINDEXED_BLOCK,
    CDT__CTOR_STRUCT,
    CDT__CTOR_ALIAS, /* resized, dup and subarray: the layout of `types[0]` */
} cdt__ctor;

struct cdt__derived {
    cdt__ctor ctor;
    cdt_count count, blocklength, stride;
    cdt_count *blocklens; /* INDEXED, HINDEXED, STRUCT */
    cdt_count *disps;     /* indexed, struct kinds: as given (units or bytes) */
    cdt_type *types;      /* STRUCT: count entries; otherwise one (the old type) */
    cdt_count ntypes;
    /* canonical form, built on first need (commit of it or of a parent). Parents committed
     * in two threads may build an uncommitted child's form at once: the first one published
     * wins, the other is released (type_commit.c). */
    _Atomic(cdt__node *) form;
};

/* type_commit.c */
CDT__HIDDEN int cdt__type_form(cdt_type type, cdt__node **form); /* borrowed */

/* form_node.c: a node is made with cdt__node_new (one reference, kind set), shaped by the
 * caller, and finished by cdt__node_done, which fills the derived fields and the kernel (on
 * failure it releases the node and returns NULL; NULL in gives NULL out). */
CDT__HIDDEN void cdt__node_release(cdt__node *n);
CDT__HIDDEN cdt__node *cdt__node_retain(cdt__node *n);
CDT__HIDDEN cdt__node *cdt__node_new(cdt__node_kind kind);
CDT__HIDDEN cdt__node *cdt__node_leaf(cdt_count off, cdt_count len); /* not yet done */
CDT__HIDDEN bool cdt__node_is_empty(const cdt__node *n);
CDT__HIDDEN cdt__node *cdt__node_done(cdt__node *n);
CDT__HIDDEN cdt__node *cdt__node_empty(void);            /* a done empty leaf */
CDT__HIDDEN cdt__node *cdt__node_predefined(cdt_type t); /* static: never freed */

/* form_share.c: commit-time sharing */
CDT__HIDDEN bool cdt__node_equal(const cdt__node *a, const cdt__node *b); /* offsets included */
/* each of kids[0..n) equal to an earlier one is replaced by (a reference to) that one */
CDT__HIDDEN void cdt__share_equal(cdt__node **kids, cdt_count n);
/* a finalized STRUCT node's zip, when its members qualify (else n is left as it was); the zip
 * is freed with its node (cdt__node_release) */
CDT__HIDDEN int cdt__zip_build(cdt__node *n);
/* cdt__node_done, then the zip of a STRUCT node whose members qualify: how the commit finishes
 * a node that may be a struct */
CDT__HIDDEN cdt__node *cdt__form_done(cdt__node *n);

/* pack_kernels.c: whole instances, base = address of the instance (off not yet added) */
CDT__HIDDEN char *cdt__kern_pack(const cdt__node *n, const char *base, char *dst);
CDT__HIDDEN const char *cdt__kern_unpack(const cdt__node *n, char *base, const char *src);
/* count instances at base + i * stride */
CDT__HIDDEN char *cdt__kern_pack_rep(const cdt__node *n, const char *base, cdt_count count,
                                     cdt_count stride, char *dst);
CDT__HIDDEN const char *cdt__kern_unpack_rep(const cdt__node *n, char *base, cdt_count count,
                                             cdt_count stride, const char *src);

/* Stream bytes [offset, offset + len) of (buf, count, type) out of / into the buffer
 * (type committed or predefined; the range must lie inside the stream). */
CDT__HIDDEN void cdt__layout_pack(cdt_type type, const void *buf, cdt_count count, cdt_count offset,
                                  cdt_count len, void *dst);
CDT__HIDDEN void cdt__layout_unpack(cdt_type type, void *buf, cdt_count count, cdt_count offset,
                                    cdt_count len, const void *src);

/* The same over a form (root repeated at stride ext), as operations call it. */
CDT__HIDDEN void cdt__form_pack(const cdt__node *root, cdt_count ext, const void *buf,
                                cdt_count offset, cdt_count len, void *dst);
CDT__HIDDEN void cdt__form_unpack(const cdt__node *root, cdt_count ext, void *buf, cdt_count offset,
                                  cdt_count len, const void *src);

/* iov.c: the range_iov operation of the layout classes (core/type.h) */
CDT__HIDDEN int cdt__layout_range_iov_pieces(void *buf, cdt_count count, cdt_type type,
                                             cdt_count start, cdt_count len, cdt_count first,
                                             cdt_count max, cdt_iov *iov, cdt_count *n_out);

/* type_create.c: free a derived type's record and form (the type's last reference went) */
CDT__HIDDEN void cdt__derived_destroy(struct cdt__derived *derived);

/* layout_class.c: the operations of predefined and derived types */
CDT__HIDDEN extern const cdt__type_ops cdt__layout_ops;

/* Run iterator (iov.c): the runs of (buf, count, type) in packed order, unmerged. */
typedef struct cdt__runs {
    struct cdt__runs_frame {
        const cdt__node *n;
        char *base;
        cdt_count i;
    } * stack;
    int sp;
    cdt__node top; /* the count-fold vector over the type's form */
    struct cdt__runs_frame small[8];
} cdt__runs;
CDT__HIDDEN int cdt__runs_init(cdt__runs *it, const void *buf, cdt_count count, cdt_type type);
/* position at run index k (k <= total runs) */
CDT__HIDDEN void cdt__runs_seek(cdt__runs *it, cdt_count k);
/* next run; false at the end */
CDT__HIDDEN bool cdt__runs_next(cdt__runs *it, char **addr, cdt_count *len);
CDT__HIDDEN void cdt__runs_fini(cdt__runs *it);

#endif /* CDT_DERIVED_H */
