/*
 * A minimal TAP producer for automake's tap-driver.sh. One program per
 * unit; call plan() first (or skip_all()), then checks, then
 * return exit_status().
 */
#ifndef UMADV_TESTS_TAP_H
#define UMADV_TESTS_TAP_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_planned;
static int tap_run;
static int tap_failed;

static inline void plan(int n)
{
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

/* The whole program does not apply here: "1..0 # SKIP reason", exit 0. */
static inline void skip_all(const char *reason)
{
    printf("1..0 # SKIP %s\n", reason);
    fflush(stdout);
    exit(0);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
    va_list ap;

    fputs("# ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static inline int tap_result(int pass, const char *file, int line, const char *fmt,
                             va_list ap)
{
    tap_run++;
    if (!pass)
        tap_failed++;
    printf("%sok %d - ", pass ? "" : "not ", tap_run);
    vprintf(fmt, ap);
    putchar('\n');
    if (!pass)
        printf("#   failed at %s:%d\n", file, line);
    fflush(stdout);
    return pass;
}

static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_result(pass, file, line, fmt, ap);
    va_end(ap);
    return r;
}

#define ok(_cond, ...) tap_ok(!!(_cond), __FILE__, __LINE__, __VA_ARGS__)

#define is(_got, _want, ...) \
    do { \
        long long _g = (long long)(_got), _w = (long long)(_want); \
        if (!tap_ok(_g == _w, __FILE__, __LINE__, __VA_ARGS__)) \
            diag("  got: %lld, expected: %lld", _g, _w); \
    } while (0)

#define is_u64(_got, _want, ...) \
    do { \
        uint64_t _g = (uint64_t)(_got), _w = (uint64_t)(_want); \
        if (!tap_ok(_g == _w, __FILE__, __LINE__, __VA_ARGS__)) \
            diag("  got: %" PRIu64 ", expected: %" PRIu64, _g, _w); \
    } while (0)

#define is_str(_got, _want, ...) \
    do { \
        const char *_g = (_got), *_w = (_want); \
        int _same = (_g == NULL && _w == NULL) || \
                    (_g != NULL && _w != NULL && strcmp(_g, _w) == 0); \
        if (!tap_ok(_same, __FILE__, __LINE__, __VA_ARGS__)) \
            diag("  got: '%s', expected: '%s'", _g ? _g : "(null)", _w ? _w : "(null)"); \
    } while (0)

/* |got - want| <= tol * max(|want|, 1e-300) */
#define is_near(_got, _want, _tol, ...) \
    do { \
        double _g = (_got), _w = (_want); \
        int _near = fabs(_g - _w) <= (_tol) * fmax(fabs(_w), 1e-300); \
        if (!tap_ok(_near, __FILE__, __LINE__, __VA_ARGS__)) \
            diag("  got: %.9g, expected: %.9g (rel tol %g)", _g, _w, (double)(_tol)); \
    } while (0)

/* One check that does not apply: "ok N - name # SKIP reason". */
static inline void skip(const char *reason, const char *name)
{
    tap_run++;
    printf("ok %d - %s # SKIP %s\n", tap_run, name, reason);
    fflush(stdout);
}

static inline int exit_status(void)
{
    if (tap_planned != tap_run) {
        diag("planned %d tests but ran %d", tap_planned, tap_run);
        return 1;
    }
    return tap_failed ? 1 : 0;
}

#endif
