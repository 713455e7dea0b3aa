/*
 * failinj.h - failure injection for libcdt's calls (in the manner of SQLite's OOM tests).
 *
 * The test programs link the static library with the linker's --wrap for every allocation
 * function libcdt uses, so each allocation of libcdt (and of the test's callbacks) passes
 * through failinj_alloc_fails(). A scenario is run again and again, N = 1, 2, ...: run N makes
 * the Nth allocation (or, in callback mode, the Nth custom-type callback) fail, once, and the
 * run ends when a whole scenario passes without reaching the Nth point.
 *
 * Each library call of a scenario is one STEP(). The step that met the failure must return the
 * injected status (CDT_ERR_NO_MEMORY, or the callback's own code), and the same call, made
 * again without the failure, must succeed: afterwards the scenario checks every byte. Leaks are
 * found by LeakSanitizer in the ASan build (ASAN_OPTIONS=detect_leaks=1).
 */
#ifndef CDT_FAILINJ_H
#define CDT_FAILINJ_H

#include <cdt.h>
#include <stdio.h>

/* the code an injected callback failure returns */
#define FAILINJ_CB_ERROR (CDT_ERR_USER_BASE - 42)

enum failinj_mode { FAILINJ_ALLOC, FAILINJ_CALLBACK };

typedef struct failinj_state {
    enum failinj_mode mode;
    long fail_at;  /* 1-based point that fails in this run; 0: none */
    long count;    /* points passed in this run while armed */
    int armed;     /* inside a STEP */
    int fired;     /* the point was reached (at most once per run) */
    int problems;  /* wrong status, failed retry or wrong bytes: the run fails */
    int no_retry;  /* known defect (FAILINJ_NO_RETRY=1): a call that met the failure is not made
                      again; its status and the absence of leaks are still checked */
    int abandoned; /* the scenario stopped at the call that met the failure (no_retry) */
} failinj_state;

extern failinj_state failinj;

/* nonzero: the caller (an allocation wrapper) must fail now */
int failinj_alloc_fails(void);
/* nonzero: the calling custom-type callback must return FAILINJ_CB_ERROR now */
int failinj_callback_fails(void);

/* report a problem of the current run (prints the scenario, mode and N) */
void failinj_problem(const char *file, int line, const char *what, int rc);

#define FI_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            failinj_problem(__FILE__, __LINE__, "CHECK(" #cond ") failed", 0);                     \
    } while (0)

/* the status an injected failure must produce in the current mode */
#define FAILINJ_EXPECTED (failinj.mode == FAILINJ_ALLOC ? CDT_ERR_NO_MEMORY : FAILINJ_CB_ERROR)

/* One library call that may meet the injected failure. If it did and reported it, run the
 * same call again (the failure fires only once per run). The call must finally succeed;
 * otherwise the scenario jumps to its `out` label (clean-up). A call that meets the failure
 * and still succeeds (a fallback without the allocation) is fine. */
#define STEP(call)                                                                                 \
    do {                                                                                           \
        int before_ = failinj.fired;                                                               \
        failinj.armed = 1;                                                                         \
        int rc_ = (call);                                                                          \
        failinj.armed = 0;                                                                         \
        if (!before_ && failinj.fired && rc_ != CDT_SUCCESS) {                                     \
            if (rc_ != FAILINJ_EXPECTED)                                                           \
                failinj_problem(__FILE__, __LINE__, #call " met the failure, returned", rc_);      \
            if (failinj.no_retry) {                                                                \
                failinj.abandoned = 1;                                                             \
                goto out;                                                                          \
            }                                                                                      \
            rc_ = (call);                                                                          \
            if (rc_ != CDT_SUCCESS)                                                                \
                failinj_problem(__FILE__, __LINE__, #call " failed again without the failure",     \
                                rc_);                                                              \
        } else if (rc_ != CDT_SUCCESS) {                                                           \
            failinj_problem(__FILE__, __LINE__, #call " failed with no failure injected", rc_);    \
        }                                                                                          \
        if (rc_ != CDT_SUCCESS)                                                                    \
            goto out;                                                                              \
    } while (0)

/* A call that releases (cdt_op_end, cdt_frame_free, cdt_decoder_free): no retry is possible;
 * a state_free callback's injected failure is its status, the object is released anyway. */
#define STEP_FREE(call)                                                                            \
    do {                                                                                           \
        int before_ = failinj.fired;                                                               \
        failinj.armed = 1;                                                                         \
        int rc_ = (call);                                                                          \
        failinj.armed = 0;                                                                         \
        if (rc_ != CDT_SUCCESS && !(!before_ && failinj.fired && rc_ == FAILINJ_EXPECTED))         \
            failinj_problem(__FILE__, __LINE__, #call " returned", rc_);                           \
    } while (0)

typedef struct failinj_scenario {
    const char *name;
    void (*run)(void);
    int modes; /* bit 1 << FAILINJ_ALLOC, 1 << FAILINJ_CALLBACK */
} failinj_scenario;

/* run the named scenario (or every one with "all") in both modes; returns the exit status */
int failinj_main(int argc, char **argv, const failinj_scenario *scenarios, int n);

#endif
