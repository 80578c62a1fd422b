/*
 * What the GPU benchmark programs check before they measure anything
 * (bench_gpu.h).
 */
#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

void bench_cuda_check(const char *prog, int err, const char *call)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s\n", prog, call, cudaGetErrorString((cudaError_t)err));
        exit(EXIT_FAILURE);
    }
}

struct cudaMemLocation bench_location(int host)
{
    struct cudaMemLocation loc = {0};

    loc.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    return loc; /* id 0: device 0, and ignored for the host */
}

int bench_int_option(const char *v, int lo, int hi,
                     void (*usage_error)(const char *what, const char *v), const char *what)
{
    char *end;
    long n = strtol(v, &end, 10);

    if (*end != '\0' || end == v || n < lo || n > hi)
        usage_error(what, v);
    return (int)n;
}

/* ---- contexts apart ----------------------------------------------------- */

static struct bench_driver {
    CUresult (*get_error_string)(CUresult, const char **);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*ctx_create)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice);
    CUresult (*ctx_push_current)(CUcontext);
    CUresult (*ctx_pop_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
} driver;

static void *driver_entry(const char *prog, const char *name)
{
    enum cudaDriverEntryPointQueryResult found;
    void *fn = NULL;

    bench_cuda_check(prog, cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION,
                                                            cudaEnableDefault, &found),
                     "cudaGetDriverEntryPointByVersion");
    if (found != cudaDriverEntryPointSuccess || fn == NULL) {
        fprintf(stderr, "%s: the driver has no %s\n", prog, name);
        exit(EXIT_FAILURE);
    }
    return fn;
}

static void driver_check(const char *prog, CUresult res, const char *call)
{
    const char *why = NULL;

    if (res == CUDA_SUCCESS)
        return;
    if (driver.get_error_string != NULL)
        driver.get_error_string(res, &why);
    fprintf(stderr, "%s: %s: %s\n", prog, call, why != NULL ? why : "unknown CUDA error");
    exit(EXIT_FAILURE);
}

CUcontext bench_context_apart(const char *prog)
{
    CUcontext ctx = NULL;
    CUdevice dev;

    driver.get_error_string = driver_entry(prog, "cuGetErrorString");
    driver.device_get = driver_entry(prog, "cuDeviceGet");
    driver.ctx_create = driver_entry(prog, "cuCtxCreate");
    driver.ctx_push_current = driver_entry(prog, "cuCtxPushCurrent");
    driver.ctx_pop_current = driver_entry(prog, "cuCtxPopCurrent");
    driver.ctx_set_current = driver_entry(prog, "cuCtxSetCurrent");
    driver_check(prog, driver.device_get(&dev, 0), "cuDeviceGet");
    driver_check(prog, driver.ctx_create(&ctx, NULL, 0, dev), "cuCtxCreate");
    driver_check(prog, driver.ctx_pop_current(NULL), "cuCtxPopCurrent");
    return ctx;
}

void bench_context_set(const char *prog, CUcontext ctx)
{
    driver_check(prog, driver.ctx_set_current(ctx), "cuCtxSetCurrent");
}

void bench_context_push(const char *prog, CUcontext ctx)
{
    driver_check(prog, driver.ctx_push_current(ctx), "cuCtxPushCurrent");
}

void bench_context_pop(const char *prog)
{
    driver_check(prog, driver.ctx_pop_current(NULL), "cuCtxPopCurrent");
}

void bench_require_managed_gpu(const char *prog)
{
    int count = 0, cma = 0;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("%s: no CUDA device\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
    bench_cuda_check(prog, cudaSetDevice(0), "cudaSetDevice");
    bench_cuda_check(prog, cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, 0),
                     "cudaDeviceGetAttribute");
    if (cma == 0) {
        printf("%s: device 0 has no concurrent managed access\n", prog);
        exit(BENCH_EXIT_SKIP);
    }
}
