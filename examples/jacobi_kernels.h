/* jacobi's kernel (jacobi_kernels.cu), callable from C. */
#ifndef JACOBI_KERNELS_H
#define JACOBI_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One Jacobi sweep of the n x n grid @in into @out: every interior point
 * becomes the mean of its four neighbours; the border is copied. */
int jacobi_sweep(const float *in, float *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
