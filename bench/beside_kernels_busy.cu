/*
 * The GPU side of bench/beside_kernels: a kernel that keeps every SM busy
 * for a set time, in many waves of blocks, as a training step's GEMM does
 * (a 16-layer MLP's step takes about 19 ms on an H200).
 */
#include <time.h>

#include <cuda_runtime.h>

#include "beside_kernels_busy.h"

#define BLOCK 256

/* Each block spins @cycles clocks, touching its own words of @w (managed
 * memory, as a real kernel's operands are), then stores a result. */
__global__ static void busy(unsigned long long *w, size_t n, long long cycles)
{
    long long start = clock64();
    unsigned long long acc = blockIdx.x;
    size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) % n;

    while (clock64() - start < cycles)
        acc = acc * 6364136223846793005ULL + w[i];
    w[i] = acc;
}

extern "C" int busy_launch(unsigned long long *w, size_t n, unsigned blocks, long long cycles,
                           void *stream)
{
    busy<<<blocks, BLOCK, 0, (cudaStream_t)stream>>>(w, n, cycles);
    return (int)cudaGetLastError();
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

extern "C" int busy_calibrate(unsigned long long *w, size_t n, unsigned blocks, double busy_ms,
                              void *stream, long long *cycles_p, double *took_ms_p)
{
    long long cycles = 100000;
    double ms = 0;

    for (int i = 0; i < 2; i++) {
        double t0 = now_ms();
        int err = busy_launch(w, n, blocks, cycles, stream);

        if (err == 0)
            err = (int)cudaStreamSynchronize((cudaStream_t)stream);
        if (err != 0)
            return err;
        ms = now_ms() - t0;
        if (i == 0)
            cycles = (long long)((double)cycles * busy_ms / ms);
    }
    *cycles_p = cycles;
    *took_ms_p = ms;
    return 0;
}
