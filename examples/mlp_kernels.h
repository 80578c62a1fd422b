/*
 * The GPU side of mlp_train: data generation, bias + activation, the loss
 * and its gradient, reductions, the optimizer and a checksum. Every
 * launcher queues work on @stream and returns cudaGetLastError().
 *
 * Matrices are column-major as cuBLAS reads them: a batch of activations
 * is (features x batch), so each sample's features are contiguous.
 * Nothing here uses atomics or reductions in a data-dependent order: the
 * same inputs give bitwise the same outputs on the same GPU, whatever the
 * placement of the memory.
 */
#ifndef UMADV_EXAMPLES_MLP_KERNELS_H
#define UMADV_EXAMPLES_MLP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* p[i] = scale * u(seed, i), u uniform in [-1, 1) from a counter hash. */
cudaError_t mlp_fill_uniform(float *p, size_t n, float scale, uint64_t seed,
                             cudaStream_t stream);

/* Samples first .. first+batch-1 of the synthetic data set, each a pure
 * function of (seed, sample index): a label uniform over the classes and
 * features = unit-variance uniform noise + the label's prototype row
 * (@protos, classes x features, column c*features.. is class c). */
cudaError_t mlp_gen_batch(float *x, int *labels, const float *protos, int features,
                          int classes, int batch, uint64_t first, uint64_t seed,
                          cudaStream_t stream);

/* y = act(y + b) in place, y (out x batch); relu != 0: max(., 0). */
cudaError_t mlp_bias_act(float *y, const float *b, int out, int batch, int relu,
                         cudaStream_t stream);

/* Softmax cross-entropy of @logits (classes x batch) against @labels:
 * loss[i] per sample, dlogits = (softmax - onehot) / batch, the gradient
 * of the batch mean. */
cudaError_t mlp_softmax_xent(const float *logits, const int *labels, int classes, int batch,
                             float *loss, float *dlogits, cudaStream_t stream);

/* *mean = mean of loss[0..n), summed in double in a fixed order; @mean may
 * be mapped host memory. */
cudaError_t mlp_mean(const float *loss, int n, double *mean, cudaStream_t stream);

/* dy[i] = 0 where y[i] <= 0: the ReLU's gradient, read from its output. */
cudaError_t mlp_relu_backward(float *dy, const float *y, size_t n, cudaStream_t stream);

/* db[j] = sum over the batch of dz (out x batch), in two fixed-order
 * passes through @partial (nchunks x out floats). */
cudaError_t mlp_bias_grad(const float *dz, int out, int batch, float *partial, int nchunks,
                          float *db, cudaStream_t stream);

/* SGD with momentum (PyTorch's form): v = mu v + g; w -= lr v. */
cudaError_t mlp_sgd(float *w, float *v, const float *g, size_t n, float lr, float mu,
                    cudaStream_t stream);

/* Words of a float array hashed by one thread of mlp_hash. */
#define MLP_HASH_CHUNK 4096

/* hashes[c] = FNV-1a (64 bit) of the bits of p[c*MLP_HASH_CHUNK ..), for
 * ceil(n / MLP_HASH_CHUNK) chunks; @hashes is device memory. */
cudaError_t mlp_hash(const float *p, size_t n, uint64_t *hashes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
