/* loopcost_hand.c - the hand-written loops of bench_loopcost (layouts.h's man_2d_d_*: rows of
 * doubles at a stride), built with the benchmark's flags. One row count of 1 is vector_1000. */
void lc_hand_pack(const char *s, long rows, long row_stride, long n, long stride, double *d)
{
    for (long i = 0; i < rows; i++) {
        const double *r = (const double *)(s + i * row_stride);
        long st = stride / 8;
        for (long j = 0; j < n; j++)
            *d++ = r[j * st];
    }
}

void lc_hand_unpack(char *s, long rows, long row_stride, long n, long stride, const double *d)
{
    for (long i = 0; i < rows; i++) {
        double *r = (double *)(s + i * row_stride);
        long st = stride / 8;
        for (long j = 0; j < n; j++)
            r[j * st] = *d++;
    }
}
