/*
 * diff_build.c - a random type built with libcdt and, in the MPICH build, as an MPI
 * datatype; printed when its seed fails; freed.
 */
#include "test_engine_diff.h"

/* ---- builders ---- */
int build_cdt(td *t)
{
    int nk = t->ctor == T_STRUCT ? (int)t->count : (t->ctor == T_PRE ? 0 : 1);
    for (int i = 0; i < nk; i++)
        if (build_cdt(t->kids[i]) != CDT_SUCCESS)
            return -1;
    cdt_type k = nk > 0 ? t->kids[0]->t : NULL;
    cdt_type types[MAXN];
    int rc = CDT_SUCCESS;
    switch (t->ctor) {
    case T_PRE:
        t->t = cdt_type_predefined(t->kind);
        return CDT_SUCCESS;
    case T_CONTIG:
        rc = cdt_type_contiguous(t->count, k, &t->t);
        break;
    case T_VEC:
        rc = cdt_type_vector(t->count, t->bl, t->stride, k, &t->t);
        break;
    case T_HVEC:
        rc = cdt_type_hvector(t->count, t->bl, t->stride, k, &t->t);
        break;
    case T_IDX:
        rc = cdt_type_indexed(t->count, t->bls, t->disps, k, &t->t);
        break;
    case T_HIDX:
        rc = cdt_type_hindexed(t->count, t->bls, t->disps, k, &t->t);
        break;
    case T_IDXB:
        rc = cdt_type_indexed_block(t->count, t->bl, DISPS(t), k, &t->t);
        break;
    case T_HIDXB:
        rc = cdt_type_hindexed_block(t->count, t->bl, DISPS(t), k, &t->t);
        break;
    case T_STRUCT:
        for (int i = 0; i < nk; i++)
            types[i] = t->kids[i]->t;
        rc = cdt_type_struct(t->count, t->bls, t->disps, types, &t->t);
        break;
    case T_SUB:
        rc = cdt_type_subarray(t->ndims, t->sizes, t->subsizes, t->starts, t->order, k, &t->t);
        break;
    case T_RESIZED:
        rc = cdt_type_resized(k, t->rlb, t->rext, &t->t);
        break;
    case T_DUP:
        rc = cdt_type_dup(k, &t->t);
        break;
    case T_PADDED:
        rc = cdt_type_padded(k, &t->t);
        break;
    }
    CHECK_OK(rc);
    return rc;
}

void dump(const td *t, int ind)
{
    fprintf(stderr, "%*sctor %d kind %d count %lld bl %lld stride %lld lb %lld ext %lld size %lld",
            ind, "", t->ctor, t->kind, (long long)t->count, (long long)t->bl, (long long)t->stride,
            (long long)t->lb, (long long)t->extent, (long long)t->nmap);
    if (t->ctor == T_RESIZED)
        fprintf(stderr, " rlb %lld rext %lld", (long long)t->rlb, (long long)t->rext);
    for (int i = 0; i < t->count && i < MAXN && t->ctor >= T_IDX && t->ctor <= T_STRUCT; i++)
        fprintf(stderr, " (%lld,%lld)", (long long)t->bls[i], (long long)t->disps[i]);
    fprintf(stderr, "\n");
    int nk = t->ctor == T_STRUCT ? (int)t->count : (t->ctor == T_PRE ? 0 : 1);
    for (int i = 0; i < nk; i++)
        dump(t->kids[i], ind + 2);
}

void free_td(td *t)
{
    int nk = t->ctor == T_STRUCT ? (int)t->count : (t->ctor == T_PRE ? 0 : 1);
    for (int i = 0; i < nk; i++)
        free_td(t->kids[i]);
    if (t->ctor != T_PRE)
        cdt_type_free(&t->t);
#ifdef CDT_TEST_MPICH
    if (t->ctor != T_PRE && t->m != MPI_DATATYPE_NULL && t->m != 0)
        MPI_Type_free(&t->m);
#endif
    free(t->map);
    free(t->ldisps);
    free(t);
}

#ifdef CDT_TEST_MPICH
static MPI_Datatype mpi_kind(cdt_kind k)
{
    switch (k) {
    case CDT_KIND_BYTE:
        return MPI_BYTE;
    case CDT_KIND_INT16:
        return MPI_INT16_T;
    case CDT_KIND_INT32:
        return MPI_INT32_T;
    case CDT_KIND_INT64:
        return MPI_INT64_T;
    case CDT_KIND_FLOAT:
        return MPI_FLOAT;
    case CDT_KIND_DOUBLE:
        return MPI_DOUBLE;
    case CDT_KIND_UINT8:
        return MPI_UINT8_T;
    case CDT_KIND_COMPLEX_DOUBLE:
        return MPI_C_DOUBLE_COMPLEX;
    default:
        return MPI_BYTE;
    }
}

void build_mpi(td *t)
{
    int nk = t->ctor == T_STRUCT ? (int)t->count : (t->ctor == T_PRE ? 0 : 1);
    for (int i = 0; i < nk; i++)
        build_mpi(t->kids[i]);
    MPI_Datatype k = nk > 0 ? t->kids[0]->m : MPI_DATATYPE_NULL, tmp = MPI_DATATYPE_NULL;
    int bls[MAXN], sz[3], ss[3], st[3];
    int64_t nd = t->ldisps != NULL ? t->count : MAXN;
    int *disps = malloc((size_t)nd * sizeof(int));
    MPI_Aint *adisps = malloc((size_t)nd * sizeof(MPI_Aint));
    MPI_Datatype types[MAXN];
    for (int i = 0; i < (int)t->count && i < nd; i++) {
        if (i < MAXN) /* long lists are (h)indexed_block: no block lengths */
            bls[i] = (int)t->bls[i];
        disps[i] = (int)DISPS(t)[i];
        adisps[i] = DISPS(t)[i];
    }
    int c = (int)t->count;
    switch (t->ctor) {
    case T_PRE:
        t->m = mpi_kind(t->kind);
        free(disps);
        free(adisps);
        return;
    case T_CONTIG:
        MPI_Type_contiguous(c, k, &tmp);
        break;
    case T_VEC:
        MPI_Type_vector(c, (int)t->bl, (int)t->stride, k, &tmp);
        break;
    case T_HVEC:
        MPI_Type_create_hvector(c, (int)t->bl, t->stride, k, &tmp);
        break;
    case T_IDX:
        MPI_Type_indexed(c, bls, disps, k, &tmp);
        break;
    case T_HIDX:
        MPI_Type_create_hindexed(c, bls, adisps, k, &tmp);
        break;
    case T_IDXB:
        MPI_Type_create_indexed_block(c, (int)t->bl, disps, k, &tmp);
        break;
    case T_HIDXB:
        MPI_Type_create_hindexed_block(c, (int)t->bl, adisps, k, &tmp);
        break;
    case T_STRUCT:
        for (int i = 0; i < nk; i++)
            types[i] = t->kids[i]->m;
        MPI_Type_create_struct(c, bls, adisps, types, &tmp);
        break;
    case T_SUB:
        for (int d = 0; d < t->ndims; d++) {
            sz[d] = (int)t->sizes[d];
            ss[d] = (int)t->subsizes[d];
            st[d] = (int)t->starts[d];
        }
        MPI_Type_create_subarray(t->ndims, sz, ss, st,
                                 t->order == CDT_ORDER_C ? MPI_ORDER_C : MPI_ORDER_FORTRAN, k,
                                 &tmp);
        break;
    case T_RESIZED:
        MPI_Type_create_resized(k, t->rlb, t->rext, &tmp);
        break;
    case T_DUP:
        MPI_Type_dup(k, &tmp);
        break;
    case T_PADDED: { /* the element's bytes; the bounds are pinned below */
        MPI_Aint at = t->lb;
        MPI_Type_create_hindexed_block(1, (int)t->extent, &at, MPI_BYTE, &tmp);
        break;
    }
    }
    /* libcdt adds no alignment padding to extents (MPI leaves epsilon to the implementation):
     * pin MPICH's bounds to the reference's so both describe the same typemap */
    MPI_Aint lb, ext;
    MPI_Type_get_extent(tmp, &lb, &ext);
    if (lb != t->lb || ext != t->extent) {
        MPI_Type_create_resized(tmp, t->lb, t->extent, &t->m);
        MPI_Type_free(&tmp);
    } else {
        t->m = tmp;
    }
    MPI_Type_commit(&t->m);
    free(disps);
    free(adisps);
}
#endif
