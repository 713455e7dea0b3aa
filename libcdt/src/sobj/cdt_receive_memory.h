/* Memory for received out-of-band buffers, shared by the adapter (cdt_sobj.c) and the Python
 * modules (cdtypes._ext, cdtypes._cffi_ext). Internal: not installed, not part of the ABI.
 *
 * A block of CDT_RECEIVE_HUGE_MIN bytes or more starts on a 2 MiB boundary and is marked for
 * transparent huge pages (madvise MADV_HUGEPAGE), as NumPy does for its own arrays of 4 MiB and
 * more. Where the kernel gives huge pages only on request (THP "madvise", a common default),
 * memory without the mark is 4 KiB pages, and a large message copied into it by the transport
 * (the kernel's cross-process copy, CMA) pins and maps 512 times as many pages: a 64 MiB MPI
 * message took 12.2 ms into such memory against 8.4-8.8 ms into a NumPy array or into marked
 * memory (MPICH, shared memory, 2-core AMD EPYC). Smaller blocks keep the caller's alignment.
 * The advice is only advice: a kernel without THP ignores it, and the block is valid anyway.
 *
 * cdt_receive_cache keeps freed data areas of 64 KiB and more for the next receive of the same
 * size: fresh memory costs a page fault (and the kernel's zeroing) per 4 KiB on its first write,
 * more than the copy or the transfer that fills it. An object of many equal buffers (512 arrays
 * of 128 KiB) reuses all of them; with 16 slots, as before, 496 of the 512 were fresh memory
 * each time and the object moved at 0.44-0.50 of the same bytes in one message. */
#ifndef CDT_RECEIVE_MEMORY_H
#define CDT_RECEIVE_MEMORY_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CDT_RECEIVE_HUGE_MIN ((size_t)4 << 20)
#define CDT_RECEIVE_HUGE_ALIGN ((size_t)2 << 20)

/* Where the data of a block from cdt_receive_memory_alloc(n, align, lead) starts: `lead`
 * bytes (at most 2 MiB) after the block's start for a small block, a whole 2 MiB for a large
 * block with a lead, so that the data still starts on a huge page while the caller's own lead
 * bytes (a size it keeps before the data) lie on an ordinary page that is not marked. */
static inline size_t cdt_receive_memory_skip(size_t n, size_t lead)
{
    return n >= CDT_RECEIVE_HUGE_MIN && lead > 0 ? CDT_RECEIVE_HUGE_ALIGN : lead;
}

/* A block for n data bytes (n + lead > 0) whose data (cdt_receive_memory_skip(n, lead) bytes in)
 * lies on an `align` boundary (a power of two, a multiple of sizeof(void *), at most 2 MiB; lead a
 * multiple of align), or NULL; free() on the block releases it. */
static inline void *cdt_receive_memory_alloc(size_t n, size_t align, size_t lead)
{
    void *p = NULL;
    int huge = n >= CDT_RECEIVE_HUGE_MIN;
    size_t skip = cdt_receive_memory_skip(n, lead);
    if (n > (size_t)-1 - skip ||
        posix_memalign(&p, huge ? CDT_RECEIVE_HUGE_ALIGN : align, skip + n) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (huge) /* the data's whole pages only: the allocator's bookkeeping and the lead stay out */
        (void)madvise((char *)p + skip, n & ~(size_t)4095, MADV_HUGEPAGE);
#endif
    return p;
}

/* Freed data areas by size: up to CDT_RECEIVE_CACHE_SIZES distinct sizes, each a list linked
 * through the areas' own first bytes, `limit` bytes in all. Not locked: the caller serialises
 * (the GIL, or a mutex). Zero-initialise, then set limit and lead (the lead the areas were
 * allocated with). */
#define CDT_RECEIVE_CACHE_SIZES 64
#define CDT_RECEIVE_CACHE_MIN ((size_t)64 << 10)

typedef struct {
    struct {
        size_t len;  /* the size of every area in the list */
        void *first; /* NULL: the entry is free */
    } sizes[CDT_RECEIVE_CACHE_SIZES];
    size_t bytes; /* cached, in all */
    size_t limit; /* at most */
    size_t lead;
} cdt_receive_cache;

static inline void cdt_receive_cache_free(const cdt_receive_cache *c, void *data, size_t n)
{
    free((char *)data - cdt_receive_memory_skip(n, c->lead));
}

/* a cached data area of exactly n bytes (removed from the cache), or NULL */
static inline void *cdt_receive_cache_take(cdt_receive_cache *c, size_t n)
{
    for (int i = 0; n >= CDT_RECEIVE_CACHE_MIN && i < CDT_RECEIVE_CACHE_SIZES; i++) {
        if (c->sizes[i].first != NULL && c->sizes[i].len == n) {
            void *data = c->sizes[i].first;
            memcpy(&c->sizes[i].first, data, sizeof data);
            c->bytes -= n;
            return data;
        }
    }
    return NULL;
}

/* free cached areas (other sizes than `keep` first) until `need` more bytes fit the limit */
static inline void cdt_receive_cache_trim(cdt_receive_cache *c, size_t need, size_t keep)
{
    for (int pass = 0; pass < 2 && c->bytes + need > c->limit; pass++) {
        for (int i = 0; i < CDT_RECEIVE_CACHE_SIZES && c->bytes + need > c->limit; i++) {
            if (pass == 0 && c->sizes[i].len == keep)
                continue;
            while (c->sizes[i].first != NULL && c->bytes + need > c->limit) {
                void *data = c->sizes[i].first;
                memcpy(&c->sizes[i].first, data, sizeof data);
                c->bytes -= c->sizes[i].len;
                cdt_receive_cache_free(c, data, c->sizes[i].len);
            }
        }
    }
}

/* keep a data area of n bytes for a later take, or free it (too small, over the limit, or 64
 * other sizes cached) */
static inline void cdt_receive_cache_give(cdt_receive_cache *c, void *data, size_t n)
{
    if (data == NULL)
        return;
    if (n < CDT_RECEIVE_CACHE_MIN || n > c->limit) {
        cdt_receive_cache_free(c, data, n);
        return;
    }
    cdt_receive_cache_trim(c, n, n);
    int slot = -1;
    for (int i = 0; i < CDT_RECEIVE_CACHE_SIZES; i++) {
        if (c->sizes[i].first != NULL && c->sizes[i].len == n) {
            slot = i;
            break;
        }
        if (slot < 0 && c->sizes[i].first == NULL)
            slot = i;
    }
    if (slot < 0) {
        cdt_receive_cache_free(c, data, n);
        return;
    }
    memcpy(data, &c->sizes[slot].first, sizeof data);
    c->sizes[slot].first = data;
    c->sizes[slot].len = n;
    c->bytes += n;
}

/* a new limit (0: cache nothing); what is cached above it is freed */
static inline void cdt_receive_cache_set_limit(cdt_receive_cache *c, size_t limit)
{
    c->limit = limit;
    cdt_receive_cache_trim(c, 0, 0);
}

#endif
