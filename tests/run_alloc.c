/*
 * run_alloc: a plain CUDA program for tests/test_run*.sh, with no umadv
 * code. It allocates and frees through every call umadv run interposes
 * and prints each call's status (and whether a block was written and
 * read back intact), so that a run under `umadv run` can be compared with
 * a plain one: without a GPU both fail the same way; with one, both
 * succeed, except cudaIpcGetMemHandle on routed memory (--managed-malloc),
 * which umadv refuses with cudaErrorNotSupported.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void report(const char *call, cudaError_t err)
{
    printf("%s %d\n", call, (int)err);
}

/* Write a pattern through cudaMemcpy and read it back. */
static void round_trip(const char *what, void *dev)
{
    unsigned char in[4096], out[4096];
    cudaError_t err;

    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7 + 3);
    err = cudaMemcpy(dev, in, sizeof(in), cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(out, dev, sizeof(out), cudaMemcpyDeviceToHost);
    printf("%s round trip %s\n", what,
           err != cudaSuccess ? "failed" : memcmp(in, out, sizeof(in)) == 0 ? "intact" : "CORRUPT");
}

int main(void)
{
    void *managed = NULL, *dev = NULL, *async = NULL;
    cudaIpcMemHandle_t handle;
    cudaError_t err;

    err = cudaMallocManaged(&managed, 1 << 20, cudaMemAttachGlobal);
    report("cudaMallocManaged", err);
    if (err == cudaSuccess)
        round_trip("managed", managed);
    err = cudaMalloc(&dev, 1 << 20);
    report("cudaMalloc", err);
    if (err == cudaSuccess) {
        round_trip("device", dev);
        report("cudaIpcGetMemHandle", cudaIpcGetMemHandle(&handle, dev));
    }
    err = cudaMallocAsync(&async, 1 << 16, 0);
    report("cudaMallocAsync", err);
    if (err == cudaSuccess)
        report("cudaFreeAsync", cudaFreeAsync(async, 0));
    if (managed != NULL)
        report("cudaFree managed", cudaFree(managed));
    if (dev != NULL)
        report("cudaFree device", cudaFree(dev));
    return 0;
}
