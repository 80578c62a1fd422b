/*
 * The call census (UMADV_CALL_CENSUS) with the real CUPTI on a GPU: five
 * kernel launches and a synchronisation between two iteration
 * boundaries make one line that counts them under CUPTI's names (with
 * umadv's own calls on this thread at the boundary, where a profile
 * ends). Skips without a device.
 */
#include <umadv.h>

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler_gpu_kernels.h"
#include "tap.h"
#include "testutil.h"

#define NFLOATS (UINT64_C(1) << 20)

/* The count of the first function in @line whose name holds @part and
 * ends where its count begins ("name N, "); 0 when none. */
static unsigned long long calls_of(const char *line, const char *part)
{
    const char *at = line != NULL ? strstr(line, "by time: ") : NULL;
    unsigned long long n = 0;

    while (at != NULL && (at = strstr(at, part)) != NULL) {
        at += strlen(part);
        at += strcspn(at, " ;");
        if (*at == ' ' && sscanf(at, " %llu,", &n) == 1)
            return n;
    }
    return 0;
}

int main(void)
{
    umadv_context_t ctx = NULL;
    float *buf = NULL;
    const char *line;
    int count = 0, err = 0;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        skip_all("no CUDA device");
    log_capture_start();
    env_clear();
    setenv("UMADV_LOG", "info", 1);
    setenv("UMADV_CALL_CENSUS", "1", 1);
    plan(5);
    is(umadv_context_create(NULL, &ctx), UMADV_OK, "context on the gpu");
    ok(ctx != NULL && strstr(log_take(), "call census: counting") != NULL,
       "the census begins with the context");
    if (ctx == NULL)
        return exit_status();
    umadv_malloc(ctx, NFLOATS * sizeof(float), "buf", (void **)&buf);
    umadv_iteration_begin(ctx);
    log_take();
    for (int i = 0; i < 5; i++)
        err |= pg_launch_fill(buf, NFLOATS, (float)i);
    err |= (int)cudaDeviceSynchronize();
    umadv_iteration_begin(ctx);
    line = strstr(log_take(), "call census, iteration 0: ");
    ok(err == 0 && line != NULL, "iteration 0's line: %s", line != NULL ? line : "(none)");
    is(calls_of(line, "LaunchKernel"), 5, "the five launches, under CUPTI's name");
    ok(calls_of(line, "cudaDeviceSynchronize") >= 1, "and the synchronisation");
    umadv_free(ctx, buf);
    umadv_context_destroy(ctx);
    log_capture_stop();
    return exit_status();
}
