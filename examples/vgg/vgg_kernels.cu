/*
 * Kernels of vgg_train (see vgg_kernels.h): grid-stride loops, each value
 * a hash of its indices, so a batch is the same whatever the launch shape.
 */
#include "vgg_kernels.h"

#define THREADS 256
#define MAX_BLOCKS 65535
/* Keeps the prototypes' stream apart from the noise's. */
#define PROTO_KEY 0x70726f746f747970ull

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;

    return (unsigned)(b < MAX_BLOCKS ? (b > 0 ? b : 1) : MAX_BLOCKS);
}

/* splitmix64's finaliser: a bijection that spreads every input bit. */
__device__ static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) on a grid of 2^-23: exact in float. */
__device__ static float uniform_pm1(uint64_t seed, uint64_t key)
{
    uint64_t h = mix64(seed ^ mix64(key));

    return (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

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
