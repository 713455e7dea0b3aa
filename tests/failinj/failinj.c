/*
 * failinj.c - the allocation wrappers (-Wl,--wrap=malloc,...) and the driver of failinj.h.
 */
#include "failinj.h"

#include <stdlib.h>
#include <string.h>

failinj_state failinj;
static const char *current_scenario = "";

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static int point_reached(enum failinj_mode mode)
{
    if (!failinj.armed || failinj.mode != mode || failinj.fired)
        return 0;
    if (++failinj.count != failinj.fail_at)
        return 0;
    failinj.fired = 1;
    return 1;
}

int failinj_alloc_fails(void)
{
    return point_reached(FAILINJ_ALLOC);
}

int failinj_callback_fails(void)
{
    return point_reached(FAILINJ_CALLBACK);
}

void *__wrap_malloc(size_t n)
{
    return failinj_alloc_fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return failinj_alloc_fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return failinj_alloc_fails() ? NULL : __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return failinj_alloc_fails() ? NULL : __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    return failinj_alloc_fails() ? 12 /* ENOMEM */ : __real_posix_memalign(p, align, n);
}

static const char *mode_name(enum failinj_mode m)
{
    return m == FAILINJ_ALLOC ? "allocation" : "callback";
}

void failinj_problem(const char *file, int line, const char *what, int rc)
{
    failinj.problems++;
    if (failinj.problems > 10)
        return;
    fprintf(stderr, "%s:%d: [%s, %s failure at point %ld%s] %s", file, line, current_scenario,
            mode_name(failinj.mode), failinj.fail_at, failinj.fired ? "" : " (not reached)", what);
    if (rc != 0)
        fprintf(stderr, " %s (%d)", cdt_err_name(rc), rc);
    fputc('\n', stderr);
}

/* run one scenario with the failure at N = 1, 2, ... until a run does not reach N */
static int run_mode(const failinj_scenario *s, enum failinj_mode mode)
{
    const long max_points = 100000;
    int bad_runs = 0;
    int no_retry =
        getenv("FAILINJ_NO_RETRY") != NULL && strcmp(getenv("FAILINJ_NO_RETRY"), "1") == 0;
    if (no_retry)
        printf("%s: FAILINJ_NO_RETRY=1 (a known defect): calls that met a failure are not made "
               "again\n",
               s->name);
    for (long n = 1; n <= max_points; n++) {
        failinj = (failinj_state){.mode = mode, .fail_at = n, .no_retry = no_retry};
        s->run();
        if (failinj.problems > 0)
            bad_runs++;
        if (!failinj.fired) {
            printf("%s: %s failures: %ld points, %d runs with problems\n", s->name, mode_name(mode),
                   n - 1, bad_runs);
            return bad_runs;
        }
    }
    fprintf(stderr, "%s: more than %ld %s points\n", s->name, max_points, mode_name(mode));
    return bad_runs + 1;
}

int failinj_main(int argc, char **argv, const failinj_scenario *scenarios, int n)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCENARIO|all\n", argv[0]);
        return 2;
    }
    int found = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        const failinj_scenario *s = &scenarios[i];
        if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], s->name) != 0)
            continue;
        found = 1;
        current_scenario = s->name;
        /* a clean run first: the scenario itself must pass */
        failinj = (failinj_state){.mode = FAILINJ_ALLOC, .fail_at = 0};
        s->run();
        if (failinj.problems > 0) {
            fprintf(stderr, "%s: fails without any injected failure\n", s->name);
            bad++;
            continue;
        }
        for (int m = FAILINJ_ALLOC; m <= FAILINJ_CALLBACK; m++)
            if (s->modes & (1 << m))
                bad += run_mode(s, (enum failinj_mode)m);
    }
    if (!found) {
        fprintf(stderr, "unknown scenario %s\n", argv[1]);
        return 2;
    }
    return bad == 0 ? 0 : 1;
}
