/* check.h - minimal assertions for the C tests: print where and why, count failures. */
#ifndef CDT_TEST_CHECK_H
#define CDT_TEST_CHECK_H

#include <cdt.h>
#include <stdio.h>
#include <stdlib.h>

/* One pair of counters per program. A program of one file keeps them static. A program of
 * several files defines CHECK_SHARED_COUNTERS before including this header in each file, and
 * the file with main defines them (`int check_failures, check_count;`): each file's own static
 * pair would hide its failures from check_report. */
#ifdef CHECK_SHARED_COUNTERS
extern int check_failures;
extern int check_count;
#else
static int check_failures;
static int check_count;
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* expect a status code; prints both names on mismatch */
#define CHECK_RC(call, want)                                                                       \
    do {                                                                                           \
        check_count++;                                                                             \
        int got_ = (call);                                                                         \
        if (got_ != (want)) {                                                                      \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s\n", __FILE__, __LINE__,       \
                    #call, cdt_err_name(got_), got_, cdt_err_name(want));                          \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_RC(call, CDT_SUCCESS)

static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures == 0 ? 0 : 1;
}

/* small deterministic PRNG (xorshift64*) so failures reproduce */
static inline uint64_t check_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

#endif
