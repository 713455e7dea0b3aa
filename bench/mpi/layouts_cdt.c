/* layouts_cdt.c - bench/pack's layouts built with libcdt's constructors (layouts_api.h). */
#include "layouts_api.h"

#include "builders_cdt.h"
#include "layouts.h"

static layout all[64];
static int n_all;

int layouts_cdt_make(cdt_layout *out, int max)
{
    n_all = layouts_make(all, 64);
    int n = n_all < max ? n_all : max;
    for (int i = 0; i < n; i++) {
        out[i].name = all[i].name;
        out[i].buf = all[i].buf;
        out[i].count = all[i].count;
        out[i].type = all[i].type;
        out[i].bytes = all[i].bytes;
    }
    return n;
}

void layouts_cdt_free(void)
{
    layouts_free(all, n_all);
}
