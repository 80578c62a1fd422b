/*
 * The GPU side of vgg_train that cuDNN and cuBLAS do not cover: the
 * synthetic images. The loss, the optimizer and the weights' hash come
 * from mlp_train's kernels (../mlp_kernels.h), shared rather than copied.
 */
#ifndef UMADV_EXAMPLES_VGG_KERNELS_H
#define UMADV_EXAMPLES_VGG_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Samples first .. first+batch-1 of the synthetic image set, NCHW with
 * @pixels = channels x height x width floats a sample, each a pure
 * function of (seed, sample index): a label uniform over the classes and
 * pixels = uniform noise in [-1, 1) + the label's prototype image (uniform
 * in [-1, 1), made from the seed on the fly: no table of classes x pixels),
 * so the classes are separable at any image size. */
cudaError_t vgg_gen_images(float *x, int *labels, size_t pixels, int classes, int batch,
                           uint64_t first, uint64_t seed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
