/*
 * Kernels of vgg_train (see vgg_kernels.h): grid-stride loops, each value
 * a hash of its indices, so a batch is the same whatever the launch shape.
 */
#include "vgg_kernels.h"

#include "../kernel_util.cuh"

/* Keeps the prototypes' stream apart from the noise's. */
#define PROTO_KEY 0x70726f746f747970ull

__device__ static int sample_label(uint64_t seed, uint64_t sample, int classes)
{
    return (int)(mix64(seed ^ mix64(~sample)) % (uint64_t)classes);
}

__global__ static void gen_images_kernel(float *x, size_t pixels, int classes, size_t n,
                                         uint64_t first, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t sample = first + i / pixels;
        uint64_t label = (uint64_t)sample_label(seed, sample, classes);
        uint64_t at = i % pixels;

        x[i] = uniform_pm1(seed, sample * pixels + at) +
               uniform_pm1(seed ^ PROTO_KEY, label * pixels + at);
    }
}

__global__ static void gen_labels_kernel(int *labels, int classes, int batch, uint64_t first,
                                         uint64_t seed)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < batch)
        labels[i] = sample_label(seed, first + (uint64_t)i, classes);
}

extern "C" cudaError_t vgg_gen_images(float *x, int *labels, size_t pixels, int classes,
                                      int batch, uint64_t first, uint64_t seed,
                                      cudaStream_t stream)
{
    size_t n = pixels * (size_t)batch;

    gen_images_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, pixels, classes, n, first,
                                                             seed);
    gen_labels_kernel<<<blocks_for((size_t)batch), THREADS, 0, stream>>>(labels, classes,
                                                                         batch, first, seed);
    return cudaGetLastError();
}
