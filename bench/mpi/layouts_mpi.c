/* layouts_mpi.c - bench/pack's layouts built with MPI's constructors (layouts_api.h). */
#include "layouts_api.h"

#include "builders_mpi.h"
#include "layouts.h"

static layout all[64];
static int n_all;

int layouts_mpi_make(mpi_layout *out, int max)
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

void layouts_mpi_free(void)
{
    layouts_free(all, n_all);
}
