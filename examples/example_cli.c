/*
 * The example programs' shared command-line pieces (example_cli.h).
 */
#include "example_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

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

int example_cuda_device(void)
{
    const char *text = getenv("UMADV_DEVICE");
    int count = 0, device = text != NULL ? atoi(text) : 0;
    cudaError_t err = cudaGetDeviceCount(&count);

    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "%s: no CUDA device (%s)\n", program_name,
                err != cudaSuccess ? cudaGetErrorString(err) : "none visible");
        exit(EXAMPLE_EXIT_SKIP);
    }
    if (device < 0 || device >= count)
        example_die("UMADV_DEVICE=%d: only %d CUDA device(s) visible", device, count);
    err = cudaSetDevice(device);
    if (err != cudaSuccess)
        example_die("cudaSetDevice(%d): %s", device, cudaGetErrorString(err));
    return device;
}
