/*
 * VGG-16's layers on cuDNN and cuBLAS (see vgg.h). Activations are kept
 * per layer for backward, as a framework keeps them; ReLU works in place
 * on a layer's output (its gradient only needs the sign of the output);
 * the gradient of an activation is transient: allocated when backward
 * reaches its layer, freed once the layer below has consumed it.
 * With --split, each layer holds descriptors and algorithms for each size
 * of its parts (at most two: the remainder's parts hold one sample less),
 * and the footprint's largest step is a part's.
 *
 * Reproducibility: cuDNN runs FMA-only algorithms (no TF32), chosen once
 * per layer; with --deterministic only those cuDNN reports deterministic.
 * cuBLAS runs plain FP32 without atomics; pooling is
 * CUDNN_POOLING_MAX_DETERMINISTIC. The same inputs then give bitwise the
 * same weights, wherever umadv places the memory.
 */
#include "vgg.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../mlp_kernels.h"
#include "vgg_kernels.h"

/* VGG-16's configuration "D": output channels, 0 a max pool. */
static const int vgg16_cfg[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0,
                                512, 512, 512, 0, 512, 512, 512, 0};
#define VGG_CFG_LEN ((int)(sizeof(vgg16_cfg) / sizeof(vgg16_cfg[0])))
#define VGG_FC_WIDTH 4096

/* ---- layout (no GPU) ------------------------------------------------- */

static size_t elems(vgg_shape_t s)
{
    return (size_t)s.n * (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

static int scaled(int channels, int scale)
{
    return channels / scale > 0 ? channels / scale : 1;
}

static void layout_conv(vgg_layer_t *ly, vgg_shape_t in, int out_c, int block, int conv)
{
    ly->kind = VGG_CONV;
    ly->relu = 1;
    ly->in = in;
    ly->out = (vgg_shape_t){in.n, out_c, in.h, in.w};
    ly->nw = (size_t)out_c * (size_t)in.c * 9u;
    ly->nb = (size_t)out_c;
    snprintf(ly->name, sizeof(ly->name), "conv%d_%d", block, conv);
}

static void layout_pool(vgg_layer_t *ly, vgg_shape_t in, int block)
{
    ly->kind = VGG_POOL;
    ly->in = in;
    ly->out = (vgg_shape_t){in.n, in.c, in.h / 2, in.w / 2};
    snprintf(ly->name, sizeof(ly->name), "pool%d", block);
}

/* A fully connected layer sees its input as (c*h*w x n), sample-major. */
static void layout_fc(vgg_layer_t *ly, vgg_shape_t in, int out, int relu, int index)
{
    ly->kind = VGG_FC;
    ly->relu = relu;
    ly->in = in;
    ly->out = (vgg_shape_t){in.n, out, 1, 1};
    ly->nw = (size_t)out * (elems(in) / (size_t)in.n);
    ly->nb = (size_t)out;
    snprintf(ly->name, sizeof(ly->name), "fc%d", index);
}

void vgg_layout(vgg_t *v)
{
    const vgg_opts_t *o = &v->opt;
    vgg_shape_t s = {o->batch, 3, o->image, o->image};
    int l = 0, block = 1, conv = 1, fc = scaled(VGG_FC_WIDTH, o->width_scale);

    for (int i = 0; i < VGG_CFG_LEN; i++, l++) {
        if (vgg16_cfg[i] == 0) {
            layout_pool(&v->layer[l], s, block++);
            conv = 1;
        } else {
            layout_conv(&v->layer[l], s, scaled(vgg16_cfg[i], o->width_scale), block, conv++);
        }
        s = v->layer[l].out;
    }
    layout_fc(&v->layer[l], s, fc, 1, 6);
    layout_fc(&v->layer[l + 1], v->layer[l].out, fc, 1, 7);
    layout_fc(&v->layer[l + 2], v->layer[l + 1].out, o->classes, 0, 8);
}

static uint64_t fbytes(size_t n)
{
    return (uint64_t)n * sizeof(float);
}

/* ---- parts of the batch ---------------------------------------------- */

vgg_part_t vgg_part(const vgg_t *v, int p)
{
    int even = v->opt.batch / v->opt.split, big = v->opt.batch % v->opt.split;

    return (vgg_part_t){p * even + (p < big ? p : big), even + (p < big)};
}

int vgg_part_shape(const vgg_t *v, vgg_part_t part)
{
    return part.n > v->opt.batch / v->opt.split ? VGG_SHAPE_BIG : VGG_SHAPE_EVEN;
}

/* The size of each shape's parts; 0 where no part has that size. */
static void part_sizes(const vgg_opts_t *o, int n[VGG_SHAPES])
{
    n[VGG_SHAPE_EVEN] = o->batch / o->split;
    n[VGG_SHAPE_BIG] = o->batch % o->split != 0 ? n[VGG_SHAPE_EVEN] + 1 : 0;
}

/* ---- footprint (no GPU) ---------------------------------------------- */

static void note_step(vgg_footprint_t *f, uint64_t bytes, const char *name, const char *pass)
{
    if (bytes <= f->largest_step)
        return;
    f->largest_step = bytes;
    snprintf(f->largest_name, sizeof(f->largest_name), "%s%s", name, pass);
}

/* Per sample, and a layer's parameters once: what vgg_steps.c declares
 * for a part of @n samples, with @workspace bytes of cuDNN's. */
static void note_layer_steps(vgg_footprint_t *f, const vgg_layer_t *ly, int first, uint64_t n,
                             uint64_t workspace)
{
    uint64_t in = fbytes(elems(ly->in)) / (uint64_t)ly->in.n * n;
    uint64_t out = fbytes(elems(ly->out)) / (uint64_t)ly->out.n * n;
    uint64_t params = fbytes(ly->nw + ly->nb);

    note_step(f, in + out + params + workspace, ly->name, ".forward");
    note_step(f, in + 2u * out + (first ? 0 : in) + params + fbytes(ly->nw) + workspace,
              ly->name, ".backward");
    note_step(f, 3u * params, ly->name, ".update");
}

/* The largest step at the options' split: its parts of the most samples,
 * with their workspace once vgg_setup() has chosen the algorithms. */
static void note_steps(const vgg_t *v, vgg_footprint_t *f)
{
    const vgg_layer_t *last = &v->layer[VGG_LAYERS - 1];
    uint64_t batch = (uint64_t)v->opt.batch, logits = fbytes(elems(last->out));
    int n[VGG_SHAPES], most;

    part_sizes(&v->opt, n);
    most = n[VGG_SHAPE_BIG] > 0 ? VGG_SHAPE_BIG : VGG_SHAPE_EVEN;
    f->largest_step = 0;
    note_step(f, fbytes(elems(v->layer[0].in)) + batch * sizeof(int), "data", "");
    note_step(f, 2u * logits + batch * sizeof(int) + fbytes(batch), "loss", "");
    for (int l = 0; l < VGG_LAYERS; l++)
        note_layer_steps(f, &v->layer[l], l == 0, (uint64_t)n[most],
                         v->layer[l].shape[most].workspace);
}

/* What vgg_alloc() asks for, but the workspace (chosen on the GPU). */
void vgg_footprint(const vgg_t *v, vgg_footprint_t *f)
{
    uint64_t batch = (uint64_t)v->opt.batch;

    memset(f, 0, sizeof(*f));
    f->transient = fbytes(elems(v->layer[VGG_LAYERS - 1].out)); /* the logits' gradient */
    for (int l = 0; l < VGG_LAYERS; l++) {
        const vgg_layer_t *ly = &v->layer[l];
        uint64_t both = fbytes(elems(ly->out)) + (l > 0 ? fbytes(elems(ly->in)) : 0);

        f->weights += 3u * fbytes(ly->nw + ly->nb); /* values, gradients, momentum */
        f->activations += fbytes(elems(ly->out));
        f->transient = both > f->transient ? both : f->transient;
        f->blocks += ly->nw > 0 ? 7u : 1u;
    }
    f->input = fbytes(elems(v->layer[0].in)) + batch * sizeof(int) + fbytes(batch);
    f->blocks += 3u;
    f->total = f->weights + f->activations + f->input + f->transient;
    note_steps(v, f);
}

int vgg_split_auto(vgg_t *v, uint64_t budget)
{
    vgg_footprint_t f;
    uint64_t last = UINT64_MAX;
    int best = 1;

    for (int k = 1; budget > 0 && k <= v->opt.batch; k++) {
        v->opt.split = k;
        vgg_footprint(v, &f);
        if (f.largest_step < last)
            best = k; /* more parts than this gain nothing */
        last = f.largest_step;
        if (f.largest_step <= budget / 2)
            break;
    }
    v->opt.split = best;
    return best;
}

/* cuDNN's 4-d tensor descriptors count elements in an int: batch 768 at
 * 224x224 gives the first convolution 2.47e9 activations, which
 * cudnnSetTensor4dDescriptor refuses (CUDNN_STATUS_NOT_SUPPORTED, H100,
 * 2026-11-27). So the batch goes in parts of fewer. */
int vgg_split_floor(const vgg_t *v)
{
    size_t per_sample = 1, most = (size_t)INT_MAX;
    int k = 1;

    for (int l = 0; l < VGG_LAYERS; l++) {
        size_t in = elems(v->layer[l].in) / (size_t)v->opt.batch;
        size_t out = elems(v->layer[l].out) / (size_t)v->opt.batch;

        per_sample = in > per_sample ? in : per_sample;
        per_sample = out > per_sample ? out : per_sample;
    }
    while (k < v->opt.batch &&
           (size_t)((v->opt.batch + k - 1) / k) * per_sample > most)
        k++;
    return k;
}

/* ---- descriptors and algorithms -------------------------------------- */

static cudnnTensorDescriptor_t tensor_desc(vgg_shape_t s)
{
    cudnnTensorDescriptor_t d;

    DNN_CHECK(cudnnCreateTensorDescriptor(&d));
    DNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c,
                                         s.h, s.w));
    return d;
}

/* Only plain FP32 arithmetic (no TF32 tensor cores): the gradient check
 * needs fp32's precision. The descriptor's CUDNN_FMA_MATH is what cuDNN
 * enforces when the algorithm runs; a result offered for tensor cores is
 * refused here so that it is never picked for its speed there. */
/* No algorithm passed algo_usable: a failure naming the layer and why. */
static void no_usable_algorithm(const vgg_t *v, const vgg_layer_t *ly, const char *pass)
{
    example_die("%s: cuDNN offers no usable %s algorithm (FP32 FMA%s, workspace <= %" PRIu64
                " bytes)", ly->name, pass, v->opt.deterministic ? ", deterministic" : "",
                v->opt.workspace_limit);
}

static int algo_usable(const vgg_t *v, cudnnStatus_t status, size_t memory,
                       cudnnDeterminism_t det, cudnnMathType_t math)
{
    return status == CUDNN_STATUS_SUCCESS && memory <= v->opt.workspace_limit &&
           math != CUDNN_TENSOR_OP_MATH && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
           (!v->opt.deterministic || det == CUDNN_DETERMINISTIC);
}

static void choose_fwd(vgg_t *v, vgg_layer_t *ly, vgg_part_shape_t *sh)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;

    DNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(v->dnn, sh->x_desc, ly->w_desc,
                                                     ly->conv_desc, sh->y_desc,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                                     perf));
    for (int i = 0; i < count; i++) {
        if (algo_usable(v, perf[i].status, perf[i].memory, perf[i].determinism,
                        perf[i].mathType)) {
            sh->fwd_algo = perf[i].algo;
            sh->workspace = perf[i].memory > sh->workspace ? perf[i].memory : sh->workspace;
            return;
        }
    }
    no_usable_algorithm(v, ly, "forward");
}

static void choose_bwd_data(vgg_t *v, vgg_layer_t *ly, vgg_part_shape_t *sh)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;

    DNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(v->dnn, ly->w_desc, sh->y_desc,
                                                          ly->conv_desc, sh->x_desc,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                          &count, perf));
    for (int i = 0; i < count; i++) {
        if (algo_usable(v, perf[i].status, perf[i].memory, perf[i].determinism,
                        perf[i].mathType)) {
            sh->data_algo = perf[i].algo;
            sh->workspace = perf[i].memory > sh->workspace ? perf[i].memory : sh->workspace;
            return;
        }
    }
    no_usable_algorithm(v, ly, "backward-data");
}

static void choose_bwd_filter(vgg_t *v, vgg_layer_t *ly, vgg_part_shape_t *sh)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;

    DNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        v->dnn, sh->x_desc, sh->y_desc, ly->conv_desc, ly->w_desc,
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
    for (int i = 0; i < count; i++) {
        if (algo_usable(v, perf[i].status, perf[i].memory, perf[i].determinism,
                        perf[i].mathType)) {
            sh->filter_algo = perf[i].algo;
            sh->workspace = perf[i].memory > sh->workspace ? perf[i].memory : sh->workspace;
            return;
        }
    }
    no_usable_algorithm(v, ly, "backward-filter");
}

static void setup_conv(vgg_t *v, vgg_layer_t *ly)
{
    DNN_CHECK(cudnnCreateFilterDescriptor(&ly->w_desc));
    DNN_CHECK(cudnnSetFilter4dDescriptor(ly->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                         ly->out.c, ly->in.c, 3, 3));
    DNN_CHECK(cudnnCreateConvolutionDescriptor(&ly->conv_desc));
    DNN_CHECK(cudnnSetConvolution2dDescriptor(ly->conv_desc, 1, 1, 1, 1, 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    DNN_CHECK(cudnnSetConvolutionMathType(ly->conv_desc, CUDNN_FMA_MATH));
    for (int k = 0; k < VGG_SHAPES; k++) {
        vgg_part_shape_t *sh = &ly->shape[k];

        if (sh->n == 0)
            continue;
        choose_fwd(v, ly, sh);
        choose_bwd_data(v, ly, sh);
        choose_bwd_filter(v, ly, sh);
        printf("algorithms %s n %d fwd %d bwd_data %d bwd_filter %d workspace %zu\n", ly->name,
               sh->n, (int)sh->fwd_algo, (int)sh->data_algo, (int)sh->filter_algo,
               sh->workspace);
        ly->workspace = sh->workspace > ly->workspace ? sh->workspace : ly->workspace;
    }
}

/* Descriptors of each part size (a split layer's parts hold n samples). */
static void setup_shapes(vgg_t *v, vgg_layer_t *ly)
{
    int n[VGG_SHAPES];

    part_sizes(&v->opt, n);
    for (int k = 0; k < VGG_SHAPES; k++) {
        vgg_part_shape_t *sh = &ly->shape[k];

        sh->n = n[k];
        if (n[k] == 0)
            continue;
        sh->x_desc = tensor_desc((vgg_shape_t){n[k], ly->in.c, ly->in.h, ly->in.w});
        sh->y_desc = tensor_desc((vgg_shape_t){n[k], ly->out.c, ly->out.h, ly->out.w});
    }
}

/* The gradient check runs the same calls with smooth modes: tanh for
 * ReLU (its gradient too is read from the output, so in place works) and
 * average for max pooling. ReLU's and max's kinks made central
 * differences miss by 5-29% at random layers (H100, five seeds, 32x32,
 * width 1/8), which says nothing of the code under test. */
void vgg_setup(vgg_t *v)
{
    int smooth = v->opt.check_grad;

    DNN_CHECK(cudnnCreateActivationDescriptor(&v->relu));
    DNN_CHECK(cudnnSetActivationDescriptor(v->relu,
                                           smooth ? CUDNN_ACTIVATION_TANH : CUDNN_ACTIVATION_RELU,
                                           CUDNN_NOT_PROPAGATE_NAN, 0.0));
    DNN_CHECK(cudnnCreatePoolingDescriptor(&v->pool));
    DNN_CHECK(cudnnSetPooling2dDescriptor(v->pool,
                                          smooth ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                 : CUDNN_POOLING_MAX_DETERMINISTIC,
                                          CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
    v->workspace_bytes = 0;
    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];

        setup_shapes(v, ly);
        if (ly->nb > 0)
            ly->b_desc = tensor_desc((vgg_shape_t){1, ly->out.c, 1, 1});
        if (ly->kind == VGG_CONV)
            setup_conv(v, ly);
        if (ly->workspace > v->workspace_bytes)
            v->workspace_bytes = ly->workspace;
    }
}

/* ---- memory ---------------------------------------------------------- */

/* Memory only the steps' kernels and CUDA copies touch may be staged
 * (umadv_set_stageable(3)): its evictions then copy it to pinned host
 * memory at the link's speed instead of migrating at UVM's. The weights,
 * biases and momenta are not: the digest hashes the weights outside any
 * step. */
enum { KEEP = 0, STAGE = 1 };

static void *alloc(vgg_t *v, size_t bytes, const char *name, const char *what, int stage)
{
    char tag[64];
    void *p;
    umadv_status_t status;

    snprintf(tag, sizeof(tag), "%s%s", name, what);
    status = umadv_malloc(v->ctx, bytes, tag, &p);
    if (status != UMADV_OK)
        example_die("umadv_malloc(%zu bytes, %s): %s", bytes, tag, umadv_status_string(status));
    if (stage)
        UMADV_CHECK(umadv_set_stageable(v->ctx, p, 1));
    return p;
}

static void free_block(vgg_t *v, void *p)
{
    if (p != NULL)
        UMADV_CHECK(umadv_free(v->ctx, p));
}

void vgg_alloc(vgg_t *v)
{
    size_t batch = (size_t)v->opt.batch;

    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];

        if (ly->nw > 0) {
            ly->w  = alloc(v, fbytes(ly->nw), ly->name, ".weight", KEEP);
            ly->b  = alloc(v, fbytes(ly->nb), ly->name, ".bias", KEEP);
            ly->dw = alloc(v, fbytes(ly->nw), ly->name, ".weight.grad", STAGE);
            ly->db = alloc(v, fbytes(ly->nb), ly->name, ".bias.grad", STAGE);
            ly->vw = alloc(v, fbytes(ly->nw), ly->name, ".weight.momentum", KEEP);
            ly->vb = alloc(v, fbytes(ly->nb), ly->name, ".bias.momentum", KEEP);
        }
        ly->y = alloc(v, fbytes(elems(ly->out)), ly->name, ".out", STAGE);
    }
    v->input = alloc(v, fbytes(elems(v->layer[0].in)), "input", "", STAGE);
    v->labels = alloc(v, batch * sizeof(int), "labels", "", STAGE);
    v->loss_rows = alloc(v, fbytes(batch), "loss", "", STAGE);
    if (v->workspace_bytes > 0)
        v->workspace = alloc(v, v->workspace_bytes, "cudnn", ".workspace", STAGE);
    CUDA_CHECK(cudaHostAlloc((void **)&v->loss, sizeof(double), cudaHostAllocMapped));
}

/* He-uniform for the convolutions (variance 2/fan_in keeps the signal's
 * scale through 13 of them, no normalisation needed); the fully connected
 * layers uniform of standard deviation 0.01, as torchvision initialises
 * VGG's classifier (He there made the first logits large: at 224x224,
 * batch 64, lr 0.01, the loss began at 11.9 and diverged to NaN in five
 * iterations on an H100), except under --check-grad, where He-uniform
 * throughout keeps the gradients far above fp32's finite-difference
 * noise (with the small classifier, 1 of 32 checked gradients stood ten
 * times above it); zero biases. One seed per tensor. */
void vgg_init(vgg_t *v)
{
    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];
        double fan_in = (double)(ly->nw / ly->nb);
        float scale;

        if (ly->nw == 0)
            continue;
        scale = (float)(ly->kind == VGG_CONV || v->opt.check_grad ? sqrt(6.0 / fan_in)
                                                                   : 0.01 * sqrt(3.0));
        CUDA_CHECK(mlp_fill_uniform(ly->w, ly->nw, scale,
                                    v->opt.seed * 1000003u + 17u + (uint64_t)l, v->stream));
        CUDA_CHECK(cudaMemsetAsync(ly->b, 0, fbytes(ly->nb), v->stream));
        CUDA_CHECK(cudaMemsetAsync(ly->vw, 0, fbytes(ly->nw), v->stream));
        CUDA_CHECK(cudaMemsetAsync(ly->vb, 0, fbytes(ly->nb), v->stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(v->stream));
}

static void destroy_descs(vgg_layer_t *ly)
{
    for (int k = 0; k < VGG_SHAPES; k++) {
        if (ly->shape[k].n == 0)
            continue;
        DNN_CHECK(cudnnDestroyTensorDescriptor(ly->shape[k].x_desc));
        DNN_CHECK(cudnnDestroyTensorDescriptor(ly->shape[k].y_desc));
    }
    if (ly->nb > 0)
        DNN_CHECK(cudnnDestroyTensorDescriptor(ly->b_desc));
    if (ly->kind == VGG_CONV) {
        DNN_CHECK(cudnnDestroyFilterDescriptor(ly->w_desc));
        DNN_CHECK(cudnnDestroyConvolutionDescriptor(ly->conv_desc));
    }
}

void vgg_free(vgg_t *v)
{
    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];
        float *p[] = {ly->w, ly->b, ly->dw, ly->db, ly->vw, ly->vb, ly->y};

        for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
            free_block(v, p[i]);
        destroy_descs(ly);
    }
    free_block(v, v->input);
    free_block(v, v->labels);
    free_block(v, v->loss_rows);
    free_block(v, v->workspace);
    DNN_CHECK(cudnnDestroyActivationDescriptor(v->relu));
    DNN_CHECK(cudnnDestroyPoolingDescriptor(v->pool));
    CUDA_CHECK(cudaFreeHost(v->loss));
}
