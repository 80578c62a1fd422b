/*
 * Kernels of mlp_train (see mlp_kernels.h). Element-wise kernels use
 * grid-stride loops; reductions give each thread a fixed range and
 * combine in a fixed tree, so results never depend on scheduling.
 */
#include "mlp_kernels.h"

#include "kernel_util.cuh"

__global__ static void fill_uniform_kernel(float *p, size_t n, float scale, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = scale * uniform_pm1(seed, i);
}

extern "C" cudaError_t mlp_fill_uniform(float *p, size_t n, float scale, uint64_t seed,
                                        cudaStream_t stream)
{
    fill_uniform_kernel<<<blocks_for(n), THREADS, 0, stream>>>(p, n, scale, seed);
    return cudaGetLastError();
}

__device__ static int sample_label(uint64_t seed, uint64_t sample, int classes)
{
    return (int)(mix64(seed ^ mix64(~sample)) % (uint64_t)classes);
}

/* Noise of unit variance: uniform on [-sqrt(3), sqrt(3)). */
__global__ static void gen_inputs_kernel(float *x, const float *protos, int features,
                                         int classes, size_t n, uint64_t first, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t sample = first + i / (size_t)features;
        int label = sample_label(seed, sample, classes);
        float proto = protos[(size_t)label * features + i % (size_t)features];

        x[i] = 1.7320508f * uniform_pm1(seed, first * (uint64_t)features + i) + proto;
    }
}

__global__ static void gen_labels_kernel(int *labels, int classes, int batch, uint64_t first,
                                         uint64_t seed)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < batch)
        labels[i] = sample_label(seed, first + (uint64_t)i, classes);
}

extern "C" cudaError_t mlp_gen_batch(float *x, int *labels, const float *protos, int features,
                                     int classes, int batch, uint64_t first, uint64_t seed,
                                     cudaStream_t stream)
{
    size_t n = (size_t)features * (size_t)batch;

    gen_inputs_kernel<<<blocks_for(n), THREADS, 0, stream>>>(x, protos, features, classes, n,
                                                             first, seed);
    gen_labels_kernel<<<blocks_for((size_t)batch), THREADS, 0, stream>>>(labels, classes, batch,
                                                                         first, seed);
    return cudaGetLastError();
}

__global__ static void bias_act_kernel(float *y, const float *b, int out, size_t n, int relu)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = y[i] + b[i % (size_t)out];
        y[i] = relu && !(v > 0.0f) ? 0.0f : v;
    }
}

extern "C" cudaError_t mlp_bias_act(float *y, const float *b, int out, int batch, int relu,
                                    cudaStream_t stream)
{
    size_t n = (size_t)out * (size_t)batch;

    bias_act_kernel<<<blocks_for(n), THREADS, 0, stream>>>(y, b, out, n, relu);
    return cudaGetLastError();
}

/* One thread per sample: the class count is small next to the batch. */
__global__ static void softmax_xent_kernel(const float *logits, const int *labels,
                                           int classes, int batch, float *loss,
                                           float *dlogits)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float *z;
    float *dz, m, sum = 0.0f, inv_batch = 1.0f / (float)batch;
    int y;

    if (i >= batch)
        return;
    z  = logits + (size_t)i * classes;
    dz = dlogits + (size_t)i * classes;
    y  = labels[i];
    m  = z[0];
    for (int c = 1; c < classes; c++)
        m = fmaxf(m, z[c]);
    for (int c = 0; c < classes; c++)
        sum += expf(z[c] - m);
    loss[i] = logf(sum) - (z[y] - m);
    for (int c = 0; c < classes; c++)
        dz[c] = (expf(z[c] - m) / sum - (c == y ? 1.0f : 0.0f)) * inv_batch;
}

extern "C" cudaError_t mlp_softmax_xent(const float *logits, const int *labels, int classes,
                                        int batch, float *loss, float *dlogits,
                                        cudaStream_t stream)
{
    softmax_xent_kernel<<<blocks_for((size_t)batch), THREADS, 0, stream>>>(
        logits, labels, classes, batch, loss, dlogits);
    return cudaGetLastError();
}

#define MEAN_THREADS 1024

/* One block: thread t sums t, t + 1024, ...; then a fixed halving tree. */
__global__ static void mean_kernel(const float *v, int n, double *mean)
{
    __shared__ double part[MEAN_THREADS];
    double s = 0.0;

    for (int i = threadIdx.x; i < n; i += MEAN_THREADS)
        s += v[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int half = MEAN_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *mean = part[0] / n;
}

extern "C" cudaError_t mlp_mean(const float *loss, int n, double *mean, cudaStream_t stream)
{
    mean_kernel<<<1, MEAN_THREADS, 0, stream>>>(loss, n, mean);
    return cudaGetLastError();
}

__global__ static void relu_backward_kernel(float *dy, const float *y, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!(y[i] > 0.0f))
            dy[i] = 0.0f;
}

extern "C" cudaError_t mlp_relu_backward(float *dy, const float *y, size_t n,
                                         cudaStream_t stream)
{
    relu_backward_kernel<<<blocks_for(n), THREADS, 0, stream>>>(dy, y, n);
    return cudaGetLastError();
}

/* Pass 1: block (x, chunk) sums its rows of samples for THREADS features;
 * neighbouring threads read neighbouring features (coalesced). */
__global__ static void bias_partial_kernel(const float *dz, int out, int batch, int per_chunk,
                                           float *partial)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int first = blockIdx.y * per_chunk;
    int last = min(batch, first + per_chunk);
    float s = 0.0f;

    if (j >= out)
        return;
    for (int i = first; i < last; i++)
        s += dz[(size_t)i * out + j];
    partial[(size_t)blockIdx.y * out + j] = s;
}

__global__ static void bias_final_kernel(const float *partial, int out, int nchunks, float *db)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;

    if (j >= out)
        return;
    for (int c = 0; c < nchunks; c++)
        s += partial[(size_t)c * out + j];
    db[j] = s;
}

extern "C" cudaError_t mlp_bias_grad(const float *dz, int out, int batch, float *partial,
                                     int nchunks, float *db, cudaStream_t stream)
{
    int per_chunk = (batch + nchunks - 1) / nchunks;
    dim3 grid((unsigned)((out + THREADS - 1) / THREADS), (unsigned)nchunks);

    bias_partial_kernel<<<grid, THREADS, 0, stream>>>(dz, out, batch, per_chunk, partial);
    bias_final_kernel<<<grid.x, THREADS, 0, stream>>>(partial, out, nchunks, db);
    return cudaGetLastError();
}

__global__ static void sgd_kernel(float *w, float *v, const float *g, size_t n, float lr,
                                  float mu)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float vi = mu * v[i] + g[i];
        v[i] = vi;
        w[i] -= lr * vi;
    }
}

extern "C" cudaError_t mlp_sgd(float *w, float *v, const float *g, size_t n, float lr,
                               float mu, cudaStream_t stream)
{
    sgd_kernel<<<blocks_for(n), THREADS, 0, stream>>>(w, v, g, n, lr, mu);
    return cudaGetLastError();
}

__global__ static void hash_kernel(const float *p, size_t n, size_t nchunks, uint64_t *hashes)
{
    size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t first = c * MLP_HASH_CHUNK, last;
    uint64_t h = 0xcbf29ce484222325ull;

    if (c >= nchunks)
        return;
    last = first + MLP_HASH_CHUNK < n ? first + MLP_HASH_CHUNK : n;
    for (size_t i = first; i < last; i++)
        h = (h ^ __float_as_uint(p[i])) * 0x100000001b3ull;
    hashes[c] = h;
}

extern "C" cudaError_t mlp_hash(const float *p, size_t n, uint64_t *hashes,
                                cudaStream_t stream)
{
    size_t nchunks = (n + MLP_HASH_CHUNK - 1) / MLP_HASH_CHUNK;

    hash_kernel<<<blocks_for(nchunks), THREADS, 0, stream>>>(p, n, nchunks, hashes);
    return cudaGetLastError();
}
