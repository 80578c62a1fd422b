/*
 * The example programs' shared command-line pieces (example_cli.h).
 */
#include "example_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const char *program_name = "example";

void example_cli_name(const char *program)
{
    program_name = program;
}

void example_vreport(const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", program_name);
    vfprintf(stderr, fmt, ap);
}

void example_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    example_vreport(fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(EXIT_FAILURE);
}

void example_usage_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    example_vreport(fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", program_name);
    exit(EXAMPLE_EXIT_USAGE);
}

long long example_parse_int(const char *flag, const char *text, long long min, long long max)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
        example_usage_error("invalid value '%s' for --%s: an integer from %lld to %lld", text,
                            flag, min, max);
    return v;
}

double example_parse_real(const char *flag, const char *text, double min, double max)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(v >= min && v < max))
        example_usage_error("invalid value '%s' for --%s: a number in [%g, %g)", text, flag, min,
                            max);
    return v;
}
