/* layouts_cdt.c - bench/pack's layouts built with libcdt's constructors (layouts_api.h). */
#include "layouts_api.h"

#include "builders_cdt.h"
#include "layouts.h"

static layout all[2][64]; /* two sets: one rank sending to itself needs a receive side */
static int n_all[2];

int layouts_cdt_make(cdt_layout *out, int max, int set)
{
    n_all[set] = layouts_make(all[set], 64);
    int n = n_all[set] < max ? n_all[set] : max;
    for (int i = 0; i < n; i++) {
        out[i].name = all[set][i].name;
        out[i].buf = all[set][i].buf;
        out[i].count = all[set][i].count;
        out[i].type = all[set][i].type;
        out[i].bytes = all[set][i].bytes;
    }
    return n;
}

void layouts_cdt_free(void)
{
    for (int set = 0; set < 2; set++)
        layouts_free(all[set], n_all[set]);
}
