/*
 * vgg_train's model: VGG-16 (13 convolutions 3x3 pad 1 with ReLU, 5 max
 * pools 2x2, 3 fully connected layers, the first two with ReLU), fp32,
 * NCHW, on memory from umadv_malloc(). vgg_net.c holds the layers (cuDNN
 * and cuBLAS, one umadv step per layer and pass); vgg_train.c the program
 * (options, training, checks, results).
 */
#ifndef UMADV_EXAMPLES_VGG_H
#define UMADV_EXAMPLES_VGG_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <umadv.h>

#include "../example_cli.h"

#define VGG_PROG "vgg_train"
/* 13 convolutions, 5 pools, 3 fully connected */
#define VGG_LAYERS 21

typedef enum vgg_kind { VGG_CONV, VGG_POOL, VGG_FC } vgg_kind_t;

typedef struct vgg_shape {
    int n, c, h, w;
} vgg_shape_t;

typedef struct vgg_opts {
    int      batch, iters, image, width_scale, classes, profile_iter;
    double   lr, momentum;
    uint64_t seed;
    uint64_t workspace_limit; /* bytes an algorithm may ask for */
    int      deterministic, fixed_batch, check_grad, footprint_only;
    int      split;      /* parts of the batch each layer runs in (1: whole) */
    int      split_auto; /* --split auto: from UMADV_BUDGET (vgg_split_auto) */
    const char *trace;   /* --trace: the profiled iteration's trace is saved here */
    int      declarations_complete; /* each step says it declares all it touches */
} vgg_opts_t;

/* Samples [first, first + n) of the batch: one part of a split layer. */
typedef struct vgg_part {
    int first, n;
} vgg_part_t;

/* What a layer's parts of one size share: descriptors of n samples and
 * the algorithms cuDNN offers for them. The first batch % split parts
 * hold one sample more than the rest (the shape VGG_SHAPE_BIG). */
enum { VGG_SHAPE_BIG, VGG_SHAPE_EVEN, VGG_SHAPES };

typedef struct vgg_part_shape {
    int                             n; /* samples; 0: no part has this size */
    cudnnTensorDescriptor_t         x_desc, y_desc;
    cudnnConvolutionFwdAlgo_t       fwd_algo;
    cudnnConvolutionBwdDataAlgo_t   data_algo;
    cudnnConvolutionBwdFilterAlgo_t filter_algo;
    size_t                          workspace; /* the most its three algorithms need */
} vgg_part_shape_t;

typedef struct vgg_layer {
    vgg_kind_t  kind;
    char        name[32];
    vgg_shape_t in, out;
    int         relu;
    size_t      nw, nb;                 /* weights and biases (elements); 0 for a pool */
    float      *w, *b, *dw, *db, *vw, *vb;
    float      *y;                      /* the output, kept for backward */
    cudnnTensorDescriptor_t       b_desc;
    cudnnFilterDescriptor_t       w_desc;
    cudnnConvolutionDescriptor_t  conv_desc;
    vgg_part_shape_t              shape[VGG_SHAPES];
    size_t      workspace;              /* the most its shapes need */
} vgg_layer_t;

/* Bytes by what they hold; transient is the peak of activation gradients;
 * largest_step what the largest step declares at once (its workspace
 * left out: cuDNN chooses it on the GPU), named by largest_name. */
typedef struct vgg_footprint {
    uint64_t weights, activations, input, transient, total; /* total: all but workspace */
    uint64_t largest_step;
    char     largest_name[48];
    unsigned blocks;
} vgg_footprint_t;

typedef struct vgg {
    vgg_opts_t      opt;
    umadv_context_t ctx;
    cudnnHandle_t   dnn;
    cublasHandle_t  blas;
    cudaStream_t    stream;
    cudnnActivationDescriptor_t relu;
    cudnnPoolingDescriptor_t    pool;
    vgg_layer_t     layer[VGG_LAYERS];
    float          *input;
    int            *labels;
    float          *loss_rows;
    void           *workspace;
    size_t          workspace_bytes;
    double         *loss;       /* mapped host memory: the last batch's mean loss */
} vgg_t;

/* ---- vgg_train.c: errors --------------------------------------------- */
void vgg_check_cuda(cudaError_t err, const char *call, int line);
void vgg_check_dnn(cudnnStatus_t status, const char *call, int line);
void vgg_check_blas(cublasStatus_t status, const char *call, int line);
void vgg_check_umadv(umadv_status_t status, const char *call, int line);

#define CUDA_CHECK(_call) vgg_check_cuda((_call), #_call, __LINE__)
#define DNN_CHECK(_call) vgg_check_dnn((_call), #_call, __LINE__)
#define BLAS_CHECK(_call) vgg_check_blas((_call), #_call, __LINE__)
#define UMADV_CHECK(_call) vgg_check_umadv((_call), #_call, __LINE__)

/* ---- vgg_net.c ------------------------------------------------------- */

/* The layer table from the options (shapes and names; no GPU). */
void vgg_layout(vgg_t *v);
void vgg_footprint(const vgg_t *v, vgg_footprint_t *f);
/* --split auto: the fewest parts whose largest step takes at most half of
 * @budget (room to move the next part while one computes), or the most
 * that still make it smaller when none does; 1 without a budget. */
int vgg_split_auto(vgg_t *v, uint64_t budget);
/* The fewest parts whose tensors cuDNN can describe: each under 2^31
 * elements. */
int vgg_split_floor(const vgg_t *v);
/* Part @p of the batch (0 .. split - 1) and the shape of its size. */
vgg_part_t vgg_part(const vgg_t *v, int p);
int vgg_part_shape(const vgg_t *v, vgg_part_t part);
/* Descriptors and the algorithms, chosen once; then every buffer. */
void vgg_setup(vgg_t *v);
void vgg_alloc(vgg_t *v);
/* Initial weights from --seed; zero momentum. */
void vgg_init(vgg_t *v);
void vgg_free(vgg_t *v);

/* One pass, each layer a umadv step (one a part with --split): the batch (samples first ..), the
 * forward, the loss into *v->loss; with @backward, the gradients too. */
void vgg_data(vgg_t *v, uint64_t first);
void vgg_forward_loss(vgg_t *v, int backward);
void vgg_update(vgg_t *v);

/* ---- vgg_check.c ----------------------------------------------------- */

/* Analytic gradients against central finite differences on the first
 * batch; prints one line a check. Returns 0 when all agree, 1 if not. */
int vgg_check_grad(vgg_t *v);
/* A hash of the bits of every weight and bias, in layer order: equal
 * digests mean bitwise equal models. */
uint64_t vgg_digest(vgg_t *v);

#endif
