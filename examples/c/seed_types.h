/*
 * seed_types.h - the object types of the custom-datatype paper's evaluation, as libcdt custom
 * types. Shared by the examples, the transfer benchmark and the demo.
 *
 *   struct_vec            {int32 a, b, c; double d; int32 data[2048]}  fields packed, data a region
 *   struct_simple         {int32 a, b, c; double d}                    fields packed (4-byte gap)
 *   struct_simple_no_gap  {int32 a, b; double c}                       fields packed
 *   double_vec            a list of int32 arrays (like Vec<Vec<i32>>)  lengths packed, each array
 *                                                                      a region; the receiver
 *                                                                      allocates from the lengths
 */
#ifndef SEED_TYPES_H
#define SEED_TYPES_H

#include <cdt.h>

#define STRUCT_VEC_DATA_LEN 2048

typedef struct struct_vec {
    int32_t a, b, c;
    double d;
    int32_t data[STRUCT_VEC_DATA_LEN];
} struct_vec;

typedef struct struct_simple {
    int32_t a, b, c;
    double d;
} struct_simple;

typedef struct struct_simple_no_gap {
    int32_t a, b;
    double c;
} struct_simple_no_gap;

/* A list of int32 arrays. A receiver passes a zeroed double_vec; the type allocates it (free
 * with double_vec_clear). */
typedef struct double_vec {
    cdt_count n;
    cdt_count *lens;
    int32_t **data;
} double_vec;

/* Custom types (created once, never freed; NULL only without memory). */
cdt_type struct_vec_type(void);
cdt_type struct_simple_type(void);
cdt_type struct_simple_no_gap_type(void);
cdt_type double_vec_type(void);

/* struct_simple as a derived type, field by field (cdt_type_struct over offsetof, resized to
 * its sizeof), with its 4-byte gap declared padding (cdt_type_padded): its records travel as
 * their memory, 24 bytes each, one region for an array. Committed; the caller frees it. */
int struct_simple_padded_type_create(cdt_type *out);

/* Make a double_vec of n arrays of len ints with a recognisable pattern; 0 or CDT_ERR_NO_MEMORY. */
int double_vec_init(double_vec *v, cdt_count n, cdt_count len, int seed);
void double_vec_clear(double_vec *v);
/* 1 when a and b hold the same arrays */
int double_vec_equal(const double_vec *a, const double_vec *b);

void struct_vec_fill(struct_vec *v, cdt_count count, int seed);
void struct_simple_fill(struct_simple *v, cdt_count count, int seed);
void struct_simple_no_gap_fill(struct_simple_no_gap *v, cdt_count count, int seed);
/* field-by-field comparison (padding is not data) */
int struct_vec_equal(const struct_vec *a, const struct_vec *b, cdt_count count);
int struct_simple_equal(const struct_simple *a, const struct_simple *b, cdt_count count);
int struct_simple_no_gap_equal(const struct_simple_no_gap *a, const struct_simple_no_gap *b,
                               cdt_count count);

#endif
