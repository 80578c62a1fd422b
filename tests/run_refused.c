/*
 * run_refused: a plain CUDA program (no umadv code) for
 * tests/test_run_refused.sh: the calls that cannot take managed memory,
 * on cudaMalloc and cudaMallocAsync blocks, each call's status printed.
 * Under umadv run --managed-malloc those blocks are managed (routed), and
 * umadv refuses the calls with cudaErrorNotSupported (801) and an error
 * naming each; without a GPU every call fails as it does without umadv.
 */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void)
{
    struct cudaMemPoolPtrExportData data;
    cudaIpcMemHandle_t handle;
    void *dev = NULL, *async = NULL;
    cudaError_t err;

    err = cudaMalloc(&dev, 1 << 20);
    printf("cudaMalloc %d\n", (int)err);
    if (err == cudaSuccess)
        printf("cudaIpcGetMemHandle %d\n", (int)cudaIpcGetMemHandle(&handle, dev));
    err = cudaMallocAsync(&async, 1 << 16, 0);
    printf("cudaMallocAsync %d\n", (int)err);
    if (err == cudaSuccess) {
        printf("cudaMemPoolExportPointer %d\n", (int)cudaMemPoolExportPointer(&data, async));
        printf("cudaFreeAsync %d\n", (int)cudaFreeAsync(async, 0));
    }
    if (dev != NULL)
        printf("cudaFree %d\n", (int)cudaFree(dev));
    return 0;
}
