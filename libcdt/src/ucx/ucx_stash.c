/*
 * ucx_stash.c - what a single-mode receive holds before its decoder exists (the bytes of a
 * head larger than the request's head buffer, and pieces that came out of order), and its
 * release. Used by ucx_single.c, which fills them, and ucx_recv_state.c, which completes
 * receives; depends on neither (the single-mode fuzz target compiles it alone).
 */
#include "ucx_internal.h"

#include <stdlib.h>

static void stash_free_all(cdt_ucx_request r)
{
    while (r->stash != NULL) {
        cdt__ucx_stash *s = r->stash;
        r->stash = s->next;
        free(s);
    }
}

void cdt__ucx_single_clear(cdt_ucx_request r)
{
    stash_free_all(r);
    if (r->pre != NULL && r->pre != r->head)
        free(r->pre);
    r->pre = NULL;
}
