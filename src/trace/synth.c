/*
 * Synthetic DNN training traces.
 *
 * A model is first written down as a layer list over activation tensors
 * (a small graph: each layer reads one input and maybe a residual, writes
 * one output), then one iteration is emitted per requested iteration.
 *
 * STEPS. One step per layer group, not per kernel: a convolution with its
 * bias or batchnorm, ReLU and residual add is one layer ("conv3_1"), as is
 * a linear layer with its activation. Per iteration, in this order:
 *   "<layer>.fwd" for every layer, in layer order;
 *   "loss" (softmax cross-entropy, forward and its gradient in one step);
 *   "<layer>.bwd" for every layer, in reverse order;
 *   "sgd" (SGD with momentum) or "adam" (gpt2): one step over every parameter.
 * So an iteration has 2 * layers + 2 steps:
 *   vgg16        21 layers: conv1_1..conv5_3 (13), pool1..pool5, fc6..fc8
 *   resnet50     56 layers: conv1, maxpool, 16 bottlenecks of 3 convs
 *                (layerS.B.conv1..conv3) plus 4 layerS.0.downsample, avgpool, fc
 *   resnet-deep  depth + 2 layers: depth convolutions (conv1, stageS.B.conv1/2,
 *                stage2.0 and stage3.0 downsample) plus avgpool, fc
 *   gpt2         7 * blocks + 3 layers: embed; per block hN.ln1, hN.attn.qkv,
 *                hN.attn, hN.attn.proj, hN.ln2, hN.mlp.fc, hN.mlp.proj;
 *                ln_f, lm_head
 *
 * MODELS. fp32 everywhere (4-byte elements; token ids and labels int64).
 *   vgg16: torchvision VGG-16 on 224x224x3, 3x3 convs with bias and ReLU,
 *     2x2 max pools, fc6/fc7 (ReLU, dropout left out), fc8 to 1000 classes.
 *   resnet50: torchvision ResNet-50 v1.5 on 224x224x3, bottlenecks (3,4,6,3)
 *     with batchnorm, the stride on the 3x3 conv, projection shortcuts.
 *   resnet-deep: a CIFAR ResNet on 32x32x3 of basic blocks (two 3x3 convs),
 *     three stages of 16/32/64 channels, 1x1 projection shortcuts into stages
 *     2 and 3, global average pool, fc to 10 classes. depth counts the
 *     convolutions: 1 + 2 * blocks + 2, so it is odd and at least 9 (the
 *     default 1517, Layrub's network, has 757 blocks); blocks are spread
 *     over the stages as evenly as possible, earlier stages first.
 *   gpt2: GPT-2 small layout, d = 768, 12 heads, sequence 1024, vocabulary
 *     50257, depth = blocks (default 12), pre-norm blocks, 4d MLP with GELU,
 *     lm_head tied to the token embedding, attention as a fused causal
 *     kernel (no S x S matrix kept, as PyTorch's SDPA), dropout left out.
 *
 * ALLOCATIONS. Tags name the layer that makes them.
 *   Persistent (lifetime NONE, shared by all iterations): per parameterised
 *   layer "<layer>.weight" (weights, bias and norm scales in one buffer),
 *   "<layer>.weight.grad", and the optimizer state "<layer>.weight.momentum"
 *   (SGD) or ".exp_avg" and ".exp_avg_sq" (Adam). gpt2's embedding has two
 *   parameter buffers, "wte.weight" and "wpe.weight".
 *   Per iteration (new allocations every iteration), each alive from the
 *   step that first touches it to the step that last touches it:
 *   "input" (INPUT): the batch with its labels; read by the first layer's
 *     forward and backward and by the loss.
 *   "<layer>.out" (ACTIVATION): a layer's output. ReLU and residual adds
 *     are in place, so they add no tensor. Freed after the last backward
 *     step that reads it (or the last forward one if no backward does).
 *   "<layer>.pre" (ACTIVATION): the conv/linear result before batchnorm or
 *     GELU, which their backward needs.
 *   "<layer>.dx" (ACTIVATION): the gradient of a layer's input, written by
 *     that layer's backward (later consumers of the same tensor accumulate
 *     into it, RW), read and freed by the backward of the tensor's producer.
 *     "loss.dx" is the gradient of the logits. The batch gets no gradient.
 *   "<layer>.dpre" (ACTIVATION): inside a backward step, the gradient
 *     behind the ReLU/batchnorm/GELU epilogue; lives for that step only.
 *   "<layer>.ws" (WORKSPACE): cuDNN-like workspace of a k x k convolution
 *     (k > 1), min(larger of input and output / 8, 256 MiB), forward and
 *     backward each; 1x1 convolutions and GEMMs need none. One step only.
 *
 * ACCESSES (whole allocations).
 *   fwd: R input (and residual), R weights, W .pre and .out, RW .ws.
 *   loss: R logits, R input (labels), W loss.dx.
 *   bwd: R the gradient of its output, R saved tensors (input of convs,
 *     linears, norms, max pools and attention; output where ReLU, max pool
 *     or attention backward needs it; .pre), R weights when it computes an
 *     input gradient, W/RW .dx, RW .dpre and .ws, RW weight gradients.
 *     The first layer computes no input gradient: it reads no weights in
 *     backward and does half the backward FLOPs.
 *   optimizer: R gradients, RW weights and state.
 *
 * TIME. A step takes flops / (params->flops * efficiency) plus
 * bytes / (4.8e12 B/s HBM * 0.75) for its memory-bound parts. params->flops
 * defaults to 167e12: the rate a large 3x3 convolution reaches on an H200
 * with cuDNN's default TF32 (efficiency 1). 1x1 convolutions (thin GEMMs,
 * little reuse) get 0.39; fp32 GEMMs and attention 0.30, i.e. 50 TFLOP/s
 * (PyTorch keeps TF32 off for matmul by default: they run on the 67 TFLOP/s
 * fp32 units). Conv/linear backward does two GEMMs (data and weight
 * gradients): 2x the forward FLOPs; causal attention forward does
 * 2 * B * S^2 * d FLOPs, backward 2.5x that. Memory-bound traffic, in
 * passes over the output tensor: bias+ReLU 4 fwd / 4 bwd; BN+ReLU 5 / 8;
 * BN alone 3 / 5; BN+add+ReLU 8 / 10; ReLU 2 / 3; GELU 2 / 3; residual add
 * 3 / 2; layernorm 3 / 4 (over its input); embedding 3 / 4; softmax
 * cross-entropy 3 passes over the logits; max pool in+out forward,
 * 2 in + 2 out backward; average pool in+out both ways; SGD 5 and Adam 7
 * passes over the parameters.
 *
 * CALIBRATION. The two free constants (167e12 and 0.39) are fitted to
 * DESIGN.md's native PyTorch runs on an H200, fp32, batch 256: this model
 * gives VGG-16 182.8 ms per iteration (measured 182.5) and ResNet-50
 * 115.6 ms (measured 115.5). gpt2 (batch 8) comes out at 138 ms and
 * resnet-deep (batch 256, depth 1517) at 97 ms, neither measured. Peak live
 * bytes: VGG-16 17.25 GiB (PyTorch 19.56: it also keeps int64 max-pool
 * indices, and its caching allocator rounds up), ResNet-50 20.69 GiB
 * (PyTorch 20.94).
 */
#include "trace/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "trace/trace_io.h"

#define SYNTH_NONE          UINT32_MAX
#define SYNTH_FP32          4
#define SYNTH_INT64         8
#define SYNTH_HBM_BW        4.8e12
#define SYNTH_MEM_EFF       0.75
#define SYNTH_FLOPS_DEFAULT 167e12
#define SYNTH_EFF_CONV      1.0
#define SYNTH_EFF_CONV1X1   0.39
#define SYNTH_EFF_GEMM      0.30
#define SYNTH_WS_MAX        (256 * UMADV_MIB)
/* Past this one tensor is absurd; it also keeps every product in range. */
#define SYNTH_TENSOR_MAX    (UINT64_C(1) << 44)
#define SYNTH_BATCH_MAX     UMADV_SYNTH_BATCH_MAX
#define SYNTH_ITER_MAX      UMADV_SYNTH_ITER_MAX

#define GPT2_D     768
#define GPT2_SEQ   1024
#define GPT2_VOCAB 50257

/* What follows a conv or linear inside its layer group. */
typedef enum synth_epi {
    EPI_NONE,
    EPI_BIAS_RELU,    /* VGG convs */
    EPI_BN_RELU,
    EPI_BN,           /* projection shortcut */
    EPI_BN_ADD_RELU,  /* last conv of a residual block */
    EPI_RELU,         /* fc6, fc7: the bias is in the GEMM */
    EPI_GELU,
    EPI_ADD,          /* transformer residual */
    EPI_COUNT
} synth_epi_t;

static const struct {
    unsigned relu : 1;   /* backward reads the output (ReLU mask) */
    unsigned pre : 1;    /* keeps the pre-epilogue tensor for backward */
    unsigned dpre : 1;   /* backward needs a gradient behind the epilogue */
    unsigned bn : 1;     /* 2 * channels of batchnorm parameters, no bias */
    double   fwd, bwd;   /* memory passes over the output */
} synth_epis[EPI_COUNT] = {
    [EPI_NONE]        = {0, 0, 0, 0, 0, 0},
    [EPI_BIAS_RELU]   = {1, 0, 1, 0, 4, 4},
    [EPI_BN_RELU]     = {1, 1, 1, 1, 5, 8},
    [EPI_BN]          = {0, 1, 1, 1, 3, 5},
    [EPI_BN_ADD_RELU] = {1, 1, 1, 1, 8, 10},
    [EPI_RELU]        = {1, 0, 1, 0, 2, 3},
    [EPI_GELU]        = {0, 1, 1, 0, 2, 3},
    [EPI_ADD]         = {0, 0, 0, 0, 3, 2},
};

typedef struct synth_tensor {
    uint64_t size;
    uint32_t c, h, w;               /* per-sample shape */
    /* Current iteration: allocations and the steps that touched them. */
    uint32_t alloc, first, last;
    uint32_t grad, grad_first, grad_last;
} synth_tensor_t;

typedef struct synth_param {
    char     tag[48];
    uint64_t size;
    uint32_t weight, grad, state[2];
} synth_param_t;

typedef struct synth_layer {
    char     name[40];
    uint32_t in, residual;          /* tensors read; residual may be NONE */
    uint32_t out, pre;              /* tensors written; pre may be NONE */
    uint32_t param[2];              /* parameter buffers used, or NONE */
    unsigned save_in : 1;           /* backward reads the input */
    unsigned save_out : 1;          /* backward reads the output */
    unsigned w_bwd : 1;             /* backward reads weights for the input gradient */
    unsigned dpre : 1;
    uint64_t ws;                    /* workspace bytes, fwd and bwd each */
    double   flops_fwd, flops_bwd, eff;
    double   bytes_fwd, bytes_bwd;  /* memory-bound traffic */
} synth_layer_t;

/* Building stops at the first failure, kept in @status, so that model
 * descriptions read as plain layer lists. */
typedef struct synth_net {
    uint32_t        batch;
    umadv_status_t  status;
    synth_layer_t  *layers;
    size_t          nlayers, layers_cap;
    synth_tensor_t *tensors;
    size_t          ntensors, tensors_cap;
    synth_param_t  *params;
    size_t          nparams, params_cap;
    uint32_t        input;          /* the batch tensor */
} synth_net_t;

typedef struct synth_model {
    const char *name;
    uint32_t    batch, depth, depth_min, depth_max;
    int         adam;
    void      (*build)(synth_net_t *net, uint32_t depth);
} synth_model_t;

/* Emission state; same sticky-failure rule as synth_net_t. */
typedef struct synth_emit {
    umadv_trace_t        *trace;
    synth_net_t          *net;
    const synth_model_t  *model;
    double                flops;
    uint32_t              iteration, step;
    umadv_status_t        status;
} synth_emit_t;

static const char *const synth_model_names[] = {"vgg16", "resnet50", "gpt2", "resnet-deep",
                                                NULL};

/* ---- building the layer list ------------------------------------------ */

static void net_fail(synth_net_t *net, umadv_status_t status)
{
    if (net->status == UMADV_OK)
        net->status = status;
}

/* A zeroed element past the @n in use of one of the net's arrays (the
 * caller counts it); NULL, and the net failed, when memory runs out. */
static void *net_push(synth_net_t *net, void **array, size_t *cap, size_t n, size_t elem_size)
{
    void *elem;

    if (umadv__array_reserve(array, cap, n + 1, elem_size) != UMADV_OK) {
        net_fail(net, UMADV_ERR_NO_MEMORY);
        return NULL;
    }
    elem = (char *)*array + n * elem_size;
    memset(elem, 0, elem_size);
    return elem;
}

static uint32_t net_tensor(synth_net_t *net, uint32_t c, uint32_t h, uint32_t w,
                           uint64_t elem)
{
    synth_tensor_t *t;
    uint64_t per_sample = (uint64_t)c * h * w * elem; /* < 2^64: shapes are small */
    uint64_t size;

    if (net->status != UMADV_OK)
        return SYNTH_NONE;
    if (__builtin_mul_overflow(per_sample, (uint64_t)net->batch, &size) ||
        size > SYNTH_TENSOR_MAX) {
        net_fail(net, UMADV_ERR_INVALID_PARAM);
        return SYNTH_NONE;
    }
    t = net_push(net, (void **)&net->tensors, &net->tensors_cap, net->ntensors, sizeof(*t));
    if (t == NULL)
        return SYNTH_NONE;
    t->size = size;
    t->c = c;
    t->h = h;
    t->w = w;
    return (uint32_t)net->ntensors++;
}

static uint32_t net_param(synth_net_t *net, const char *layer, uint64_t elems)
{
    synth_param_t *p;

    if (net->status != UMADV_OK)
        return SYNTH_NONE;
    p = net_push(net, (void **)&net->params, &net->params_cap, net->nparams, sizeof(*p));
    if (p == NULL)
        return SYNTH_NONE;
    snprintf(p->tag, sizeof(p->tag), "%s", layer);
    p->size = elems * SYNTH_FP32;
    return (uint32_t)net->nparams++;
}

/* A new layer reading @in; NULL once building has failed. */
static synth_layer_t *net_layer(synth_net_t *net, const char *name, uint32_t in)
{
    synth_layer_t *l;

    if (net->status != UMADV_OK || in == SYNTH_NONE)
        return NULL;
    l = net_push(net, (void **)&net->layers, &net->layers_cap, net->nlayers, sizeof(*l));
    if (l == NULL)
        return NULL;
    net->nlayers++;
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->in = in;
    l->residual = l->out = l->pre = SYNTH_NONE;
    l->param[0] = l->param[1] = SYNTH_NONE;
    l->eff = SYNTH_EFF_GEMM;
    return l;
}

/* Give @l its output, the pre tensor epilogue @epi keeps for backward and
 * the epilogue's memory traffic; returns the output tensor. */
static uint32_t net_finish(synth_net_t *net, synth_layer_t *l, synth_epi_t epi,
                           uint32_t c, uint32_t h, uint32_t w)
{
    l->out = net_tensor(net, c, h, w, SYNTH_FP32);
    if (synth_epis[epi].pre)
        l->pre = net_tensor(net, c, h, w, SYNTH_FP32);
    if (l->out == SYNTH_NONE)
        return SYNTH_NONE;
    l->save_out |= synth_epis[epi].relu;
    l->dpre = synth_epis[epi].dpre;
    l->bytes_fwd += synth_epis[epi].fwd * (double)net->tensors[l->out].size;
    l->bytes_bwd += synth_epis[epi].bwd * (double)net->tensors[l->out].size;
    return l->out;
}

static uint32_t net_conv(synth_net_t *net, const char *name, uint32_t x, uint32_t cout,
                         uint32_t k, uint32_t stride, synth_epi_t epi, uint32_t residual)
{
    synth_layer_t *l = net_layer(net, name, x);
    const synth_tensor_t *in;
    uint32_t ho, wo, out;
    double macs;

    if (l == NULL)
        return SYNTH_NONE;
    in = &net->tensors[x];
    ho = (in->h + 2 * (k / 2) - k) / stride + 1;
    wo = (in->w + 2 * (k / 2) - k) / stride + 1;
    macs = (double)net->batch * cout * ho * wo * in->c * k * k;
    l->residual = residual;
    l->save_in = l->w_bwd = 1;
    l->param[0] = net_param(net, name, (uint64_t)cout * in->c * k * k +
                                       (synth_epis[epi].bn ? 2u : 1u) * cout);
    l->flops_fwd = 2 * macs;
    l->flops_bwd = 4 * macs;
    l->eff = k > 1 ? SYNTH_EFF_CONV : SYNTH_EFF_CONV1X1;
    out = net_finish(net, l, epi, cout, ho, wo);
    if (out != SYNTH_NONE && k > 1)
        l->ws = UMADV_MIN(UMADV_MAX(net->tensors[x].size, net->tensors[out].size) / 8,
                          SYNTH_WS_MAX);
    return out;
}

/* A linear layer over the last dimension (c) of @x; @param NONE makes its
 * own weights and bias, otherwise it shares @param (tied, no bias). */
static uint32_t net_linear(synth_net_t *net, const char *name, uint32_t x, uint32_t nout,
                           synth_epi_t epi, uint32_t residual, uint32_t param)
{
    synth_layer_t *l = net_layer(net, name, x);
    const synth_tensor_t *in;
    double macs;

    if (l == NULL)
        return SYNTH_NONE;
    in = &net->tensors[x];
    macs = (double)net->batch * in->h * in->w * in->c * nout;
    l->residual = residual;
    l->save_in = l->w_bwd = 1;
    l->param[0] = param != SYNTH_NONE ? param
                                      : net_param(net, name, ((uint64_t)in->c + 1) * nout);
    l->flops_fwd = 2 * macs;
    l->flops_bwd = 4 * macs;
    l->eff = SYNTH_EFF_GEMM;
    return net_finish(net, l, epi, nout, in->h, in->w);
}

static uint32_t net_maxpool(synth_net_t *net, const char *name, uint32_t x, uint32_t k,
                            uint32_t stride, uint32_t pad)
{
    synth_layer_t *l = net_layer(net, name, x);
    const synth_tensor_t *in;
    uint32_t out;

    if (l == NULL)
        return SYNTH_NONE;
    in = &net->tensors[x];
    /* cuDNN's pooling backward wants input and output, not indices. */
    l->save_in = l->save_out = 1;
    out = net_finish(net, l, EPI_NONE, in->c, (in->h + 2 * pad - k) / stride + 1,
                     (in->w + 2 * pad - k) / stride + 1);
    if (out != SYNTH_NONE) {
        l->bytes_fwd = (double)(net->tensors[x].size + net->tensors[out].size);
        l->bytes_bwd = 2 * l->bytes_fwd;
    }
    return out;
}

static uint32_t net_avgpool(synth_net_t *net, const char *name, uint32_t x)
{
    synth_layer_t *l = net_layer(net, name, x);
    uint32_t out;

    if (l == NULL)
        return SYNTH_NONE;
    out = net_finish(net, l, EPI_NONE, net->tensors[x].c, 1, 1);
    if (out != SYNTH_NONE)
        l->bytes_fwd = l->bytes_bwd = (double)(net->tensors[x].size + net->tensors[out].size);
    return out;
}

static uint32_t net_layernorm(synth_net_t *net, const char *name, uint32_t x)
{
    synth_layer_t *l = net_layer(net, name, x);
    const synth_tensor_t *in;

    if (l == NULL)
        return SYNTH_NONE;
    in = &net->tensors[x];
    l->save_in = l->w_bwd = 1;
    l->param[0] = net_param(net, name, 2 * (uint64_t)in->c);
    l->bytes_fwd = 3 * (double)in->size;
    l->bytes_bwd = 4 * (double)in->size;
    return net_finish(net, l, EPI_NONE, in->c, in->h, in->w);
}

/* ---- the models -------------------------------------------------------- */

static void net_input(synth_net_t *net, uint32_t c, uint32_t h, uint32_t w)
{
    /* Images and their int64 labels in one buffer, as a loader hands them. */
    net->input = net_tensor(net, 1, 1, c * h * w * SYNTH_FP32 + SYNTH_INT64, 1);
    if (net->input != SYNTH_NONE) {
        net->tensors[net->input].c = c;
        net->tensors[net->input].h = h;
        net->tensors[net->input].w = w;
    }
}

static void build_vgg16(synth_net_t *net, uint32_t depth)
{
    static const uint32_t convs[5] = {2, 2, 3, 3, 3};
    static const uint32_t width[5] = {64, 128, 256, 512, 512};
    char name[40];
    uint32_t x;

    (void)depth;
    net_input(net, 3, 224, 224);
    x = net->input;
    for (int s = 0; s < 5; s++) {
        for (uint32_t i = 0; i < convs[s]; i++) {
            snprintf(name, sizeof(name), "conv%d_%u", s + 1, i + 1);
            x = net_conv(net, name, x, width[s], 3, 1, EPI_BIAS_RELU, SYNTH_NONE);
        }
        snprintf(name, sizeof(name), "pool%d", s + 1);
        x = net_maxpool(net, name, x, 2, 2, 0);
    }
    if (x != SYNTH_NONE) {
        /* Flatten: fc6 sees 512 * 7 * 7 features. */
        synth_tensor_t *t = &net->tensors[x];
        t->c *= t->h * t->w;
        t->h = t->w = 1;
    }
    x = net_linear(net, "fc6", x, 4096, EPI_RELU, SYNTH_NONE, SYNTH_NONE);
    x = net_linear(net, "fc7", x, 4096, EPI_RELU, SYNTH_NONE, SYNTH_NONE);
    net_linear(net, "fc8", x, 1000, EPI_NONE, SYNTH_NONE, SYNTH_NONE);
}

static uint32_t resnet50_block(synth_net_t *net, uint32_t x, int stage, uint32_t block)
{
    uint32_t width = UINT32_C(64) << stage, stride = stage > 0 && block == 0 ? 2 : 1;
    uint32_t shortcut = x, y;
    char name[40];

    snprintf(name, sizeof(name), "layer%d.%u.conv1", stage + 1, block);
    y = net_conv(net, name, x, width, 1, 1, EPI_BN_RELU, SYNTH_NONE);
    snprintf(name, sizeof(name), "layer%d.%u.conv2", stage + 1, block);
    y = net_conv(net, name, y, width, 3, stride, EPI_BN_RELU, SYNTH_NONE);
    if (block == 0) {
        snprintf(name, sizeof(name), "layer%d.%u.downsample", stage + 1, block);
        shortcut = net_conv(net, name, x, 4 * width, 1, stride, EPI_BN, SYNTH_NONE);
    }
    snprintf(name, sizeof(name), "layer%d.%u.conv3", stage + 1, block);
    return net_conv(net, name, y, 4 * width, 1, 1, EPI_BN_ADD_RELU, shortcut);
}

static void build_resnet50(synth_net_t *net, uint32_t depth)
{
    static const uint32_t blocks[4] = {3, 4, 6, 3};
    uint32_t x;

    (void)depth;
    net_input(net, 3, 224, 224);
    x = net_conv(net, "conv1", net->input, 64, 7, 2, EPI_BN_RELU, SYNTH_NONE);
    x = net_maxpool(net, "maxpool", x, 3, 2, 1);
    for (int s = 0; s < 4; s++)
        for (uint32_t b = 0; b < blocks[s]; b++)
            x = resnet50_block(net, x, s, b);
    x = net_avgpool(net, "avgpool", x);
    net_linear(net, "fc", x, 1000, EPI_NONE, SYNTH_NONE, SYNTH_NONE);
}

static uint32_t basic_block(synth_net_t *net, uint32_t x, int stage, uint32_t block)
{
    uint32_t width = UINT32_C(16) << stage, stride = stage > 0 && block == 0 ? 2 : 1;
    uint32_t shortcut = x, y;
    char name[40];

    snprintf(name, sizeof(name), "stage%d.%u.conv1", stage + 1, block);
    y = net_conv(net, name, x, width, 3, stride, EPI_BN_RELU, SYNTH_NONE);
    if (stride != 1) {
        snprintf(name, sizeof(name), "stage%d.%u.downsample", stage + 1, block);
        shortcut = net_conv(net, name, x, width, 1, stride, EPI_BN, SYNTH_NONE);
    }
    snprintf(name, sizeof(name), "stage%d.%u.conv2", stage + 1, block);
    return net_conv(net, name, y, width, 3, 1, EPI_BN_ADD_RELU, shortcut);
}

static void build_resnet_deep(synth_net_t *net, uint32_t depth)
{
    uint32_t blocks = (depth - 3) / 2, x;

    net_input(net, 3, 32, 32);
    x = net_conv(net, "conv1", net->input, 16, 3, 1, EPI_BN_RELU, SYNTH_NONE);
    for (int s = 0; s < 3; s++) {
        uint32_t n = blocks / 3 + ((uint32_t)s < blocks % 3);
        for (uint32_t b = 0; b < n; b++)
            x = basic_block(net, x, s, b);
    }
    x = net_avgpool(net, "avgpool", x);
    net_linear(net, "fc", x, 10, EPI_NONE, SYNTH_NONE, SYNTH_NONE);
}

static uint32_t gpt2_embed(synth_net_t *net)
{
    synth_layer_t *l;

    net->input = net_tensor(net, 1, GPT2_SEQ, 1, SYNTH_INT64);
    l = net_layer(net, "embed", net->input);
    if (l == NULL)
        return SYNTH_NONE;
    l->save_in = 1; /* backward scatters by token id */
    l->param[0] = net_param(net, "wte", (uint64_t)GPT2_VOCAB * GPT2_D);
    l->param[1] = net_param(net, "wpe", (uint64_t)GPT2_SEQ * GPT2_D);
    net_finish(net, l, EPI_NONE, GPT2_D, GPT2_SEQ, 1);
    if (l->out != SYNTH_NONE) {
        l->bytes_fwd = 3 * (double)net->tensors[l->out].size;
        l->bytes_bwd = 4 * (double)net->tensors[l->out].size;
    }
    return l->out;
}

static uint32_t gpt2_attention(synth_net_t *net, const char *name, uint32_t qkv)
{
    synth_layer_t *l = net_layer(net, name, qkv);
    double s = GPT2_SEQ;

    if (l == NULL)
        return SYNTH_NONE;
    l->save_in = l->save_out = 1;
    /* Causal: half of QK^T and of PV, 2 * S^2 * d each. */
    l->flops_fwd = 2.0 * net->batch * s * s * GPT2_D;
    l->flops_bwd = 2.5 * l->flops_fwd;
    l->eff = SYNTH_EFF_GEMM;
    return net_finish(net, l, EPI_NONE, GPT2_D, GPT2_SEQ, 1);
}

static uint32_t gpt2_block(synth_net_t *net, uint32_t h, uint32_t block)
{
    char name[40];
    uint32_t x;

#define GPT2_NAME(_what) (snprintf(name, sizeof(name), "h%u.%s", block, _what), name)
    x = net_layernorm(net, GPT2_NAME("ln1"), h);
    x = net_linear(net, GPT2_NAME("attn.qkv"), x, 3 * GPT2_D, EPI_NONE, SYNTH_NONE, SYNTH_NONE);
    x = gpt2_attention(net, GPT2_NAME("attn"), x);
    h = net_linear(net, GPT2_NAME("attn.proj"), x, GPT2_D, EPI_ADD, h, SYNTH_NONE);
    x = net_layernorm(net, GPT2_NAME("ln2"), h);
    x = net_linear(net, GPT2_NAME("mlp.fc"), x, 4 * GPT2_D, EPI_GELU, SYNTH_NONE, SYNTH_NONE);
    return net_linear(net, GPT2_NAME("mlp.proj"), x, GPT2_D, EPI_ADD, h, SYNTH_NONE);
#undef GPT2_NAME
}

static void build_gpt2(synth_net_t *net, uint32_t depth)
{
    uint32_t h = gpt2_embed(net);

    for (uint32_t b = 0; b < depth; b++)
        h = gpt2_block(net, h, b);
    h = net_layernorm(net, "ln_f", h);
    if (net->status == UMADV_OK) /* tied to wte, the embedding's first buffer */
        net_linear(net, "lm_head", h, GPT2_VOCAB, EPI_NONE, SYNTH_NONE, net->layers[0].param[0]);
}

static const synth_model_t synth_models[] = {
    {"vgg16",       256, 16,   16, 16,     0, build_vgg16},
    {"resnet50",    256, 50,   50, 50,     0, build_resnet50},
    {"gpt2",        8,   12,   1,  1024,   1, build_gpt2},
    {"resnet-deep", 256, 1517, 9,  100001, 0, build_resnet_deep},
};

static const synth_model_t *synth_model_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < UMADV_ARRAY_SIZE(synth_models); i++)
        if (strcmp(synth_models[i].name, name) == 0)
            return &synth_models[i];
    return NULL;
}

static void net_cleanup(synth_net_t *net)
{
    free(net->layers);
    free(net->tensors);
    free(net->params);
}

/* ---- emitting the trace ------------------------------------------------ */

static void emit_fail(synth_emit_t *em, umadv_status_t status)
{
    if (em->status == UMADV_OK)
        em->status = status;
}

static uint64_t emit_duration(const synth_emit_t *em, double flops, double eff, double bytes)
{
    double seconds = flops / (em->flops * eff) + bytes / (SYNTH_HBM_BW * SYNTH_MEM_EFF);

    return (uint64_t)llround(seconds * 1e9);
}

static void emit_step(synth_emit_t *em, const char *layer, const char *suffix,
                      uint64_t duration_ns)
{
    char name[64];

    if (em->status != UMADV_OK)
        return;
    if (suffix != NULL)
        snprintf(name, sizeof(name), "%s.%s", layer, suffix);
    else
        snprintf(name, sizeof(name), "%s", layer);
    emit_fail(em, umadv__trace_add_step(em->trace, name, UMADV_STEP_LAYER, em->iteration,
                                        duration_ns, &em->step));
}

static void emit_access(synth_emit_t *em, uint32_t alloc, uint32_t mode)
{
    if (em->status != UMADV_OK)
        return;
    emit_fail(em, umadv__trace_add_access(em->trace, alloc, 0, em->trace->allocs[alloc].size,
                                          mode, 0));
}

static uint32_t emit_alloc(synth_emit_t *em, uint64_t size, umadv_alloc_kind_t kind,
                           const char *layer, const char *suffix)
{
    char tag[64];
    uint32_t id = SYNTH_NONE;

    if (em->status != UMADV_OK)
        return SYNTH_NONE;
    if (suffix != NULL)
        snprintf(tag, sizeof(tag), "%s.%s", layer, suffix);
    else
        snprintf(tag, sizeof(tag), "%s", layer);
    emit_fail(em, umadv__trace_add_alloc(em->trace, 0, size, kind, tag, &id));
    return em->status == UMADV_OK ? id : SYNTH_NONE;
}

/* A buffer that lives inside the current step only. */
static void emit_scratch(synth_emit_t *em, uint64_t size, umadv_alloc_kind_t kind,
                         const char *layer, const char *suffix)
{
    uint32_t id;

    if (size == 0)
        return;
    id = emit_alloc(em, size, kind, layer, suffix);
    emit_access(em, id, UMADV_ACCESS_RW);
    if (em->status == UMADV_OK)
        emit_fail(em, umadv__trace_set_lifetime(em->trace, id, em->step, em->step));
}

static void emit_read(synth_emit_t *em, uint32_t tensor)
{
    synth_tensor_t *t = &em->net->tensors[tensor];

    emit_access(em, t->alloc, UMADV_ACCESS_READ);
    t->last = em->step;
}

static void emit_write(synth_emit_t *em, uint32_t tensor, umadv_alloc_kind_t kind,
                       const char *layer, const char *suffix)
{
    synth_tensor_t *t = &em->net->tensors[tensor];

    t->alloc = emit_alloc(em, t->size, kind, layer, suffix);
    t->first = t->last = em->step;
    emit_access(em, t->alloc, UMADV_ACCESS_WRITE);
}

/* The first consumer in backward order creates a tensor's gradient, the
 * others accumulate into it. */
static void emit_grad_write(synth_emit_t *em, uint32_t tensor, const char *layer)
{
    synth_tensor_t *t = &em->net->tensors[tensor];

    if (t->grad == SYNTH_NONE) {
        t->grad = emit_alloc(em, t->size, UMADV_ALLOC_ACTIVATION, layer, "dx");
        t->grad_first = em->step;
        emit_access(em, t->grad, UMADV_ACCESS_WRITE);
    } else {
        emit_access(em, t->grad, UMADV_ACCESS_RW);
    }
    t->grad_last = em->step;
}

static void emit_grad_read(synth_emit_t *em, uint32_t tensor)
{
    synth_tensor_t *t = &em->net->tensors[tensor];

    emit_access(em, t->grad, UMADV_ACCESS_READ);
    t->grad_last = em->step;
}

static void emit_params(synth_emit_t *em, const synth_layer_t *l, int grads)
{
    for (int i = 0; i < 2; i++) {
        if (l->param[i] == SYNTH_NONE)
            continue;
        if (grads)
            emit_access(em, em->net->params[l->param[i]].grad, UMADV_ACCESS_RW);
        else
            emit_access(em, em->net->params[l->param[i]].weight, UMADV_ACCESS_READ);
    }
}

static void emit_forward(synth_emit_t *em, const synth_layer_t *l)
{
    emit_step(em, l->name, "fwd", emit_duration(em, l->flops_fwd, l->eff, l->bytes_fwd));
    emit_read(em, l->in);
    if (l->residual != SYNTH_NONE)
        emit_read(em, l->residual);
    emit_params(em, l, 0);
    emit_scratch(em, l->ws, UMADV_ALLOC_WORKSPACE, l->name, "ws");
    if (l->pre != SYNTH_NONE)
        emit_write(em, l->pre, UMADV_ALLOC_ACTIVATION, l->name, "pre");
    emit_write(em, l->out, UMADV_ALLOC_ACTIVATION, l->name, "out");
}

static void emit_loss(synth_emit_t *em, uint32_t logits)
{
    double bytes = 3 * (double)em->net->tensors[logits].size;

    emit_step(em, "loss", NULL, emit_duration(em, 0, 1, bytes));
    emit_read(em, logits);
    emit_read(em, em->net->input);
    emit_grad_write(em, logits, "loss");
}

static void emit_backward(synth_emit_t *em, const synth_layer_t *l)
{
    int dx = l->in != em->net->input;
    double flops = dx ? l->flops_bwd : l->flops_bwd / 2;

    emit_step(em, l->name, "bwd", emit_duration(em, flops, l->eff, l->bytes_bwd));
    emit_grad_read(em, l->out);
    if (l->save_in)
        emit_read(em, l->in);
    if (l->save_out)
        emit_read(em, l->out);
    if (l->pre != SYNTH_NONE)
        emit_read(em, l->pre);
    if (dx && l->w_bwd)
        emit_params(em, l, 0);
    if (l->dpre)
        emit_scratch(em, em->net->tensors[l->out].size, UMADV_ALLOC_ACTIVATION, l->name,
                     "dpre");
    emit_scratch(em, l->ws, UMADV_ALLOC_WORKSPACE, l->name, "ws");
    if (dx)
        emit_grad_write(em, l->in, l->name);
    if (l->residual != SYNTH_NONE)
        emit_grad_write(em, l->residual, l->name);
    emit_params(em, l, 1);
}

static void emit_optimizer(synth_emit_t *em)
{
    const synth_net_t *net = em->net;
    int nstate = em->model->adam ? 2 : 1;
    double bytes = 0;

    for (size_t i = 0; i < net->nparams; i++)
        bytes += (double)net->params[i].size;
    emit_step(em, em->model->adam ? "adam" : "sgd", NULL,
              emit_duration(em, 0, 1, (em->model->adam ? 7 : 5) * bytes));
    for (size_t i = 0; i < net->nparams; i++) {
        emit_access(em, net->params[i].grad, UMADV_ACCESS_READ);
        emit_access(em, net->params[i].weight, UMADV_ACCESS_RW);
        for (int s = 0; s < nstate; s++)
            emit_access(em, net->params[i].state[s], UMADV_ACCESS_RW);
    }
}

static void emit_persistent(synth_emit_t *em)
{
    static const char *const state_tags[2][2] = {{"weight.momentum", NULL},
                                                 {"weight.exp_avg", "weight.exp_avg_sq"}};
    int adam = em->model->adam;

    for (size_t i = 0; i < em->net->nparams; i++) {
        synth_param_t *p = &em->net->params[i];
        p->weight = emit_alloc(em, p->size, UMADV_ALLOC_WEIGHT, p->tag, "weight");
        p->grad = emit_alloc(em, p->size, UMADV_ALLOC_GRADIENT, p->tag, "weight.grad");
        for (int s = 0; s < 1 + adam; s++)
            p->state[s] = emit_alloc(em, p->size, UMADV_ALLOC_OPTIMIZER, p->tag,
                                     state_tags[adam][s]);
    }
}

static void emit_lifetimes(synth_emit_t *em)
{
    for (size_t i = 0; i < em->net->ntensors && em->status == UMADV_OK; i++) {
        synth_tensor_t *t = &em->net->tensors[i];
        if (t->alloc != SYNTH_NONE)
            emit_fail(em, umadv__trace_set_lifetime(em->trace, t->alloc, t->first, t->last));
        if (t->grad != SYNTH_NONE && em->status == UMADV_OK)
            emit_fail(em, umadv__trace_set_lifetime(em->trace, t->grad, t->grad_first,
                                                    t->grad_last));
    }
}

static void emit_iteration(synth_emit_t *em)
{
    synth_net_t *net = em->net;
    synth_tensor_t *input = &net->tensors[net->input];

    for (size_t i = 0; i < net->ntensors; i++)
        net->tensors[i].alloc = net->tensors[i].grad = SYNTH_NONE;
    input->alloc = emit_alloc(em, input->size, UMADV_ALLOC_INPUT, "input", NULL);
    input->first = em->trace->nsteps;
    for (size_t i = 0; i < net->nlayers; i++)
        emit_forward(em, &net->layers[i]);
    emit_loss(em, net->layers[net->nlayers - 1].out);
    for (size_t i = net->nlayers; i-- > 0;)
        emit_backward(em, &net->layers[i]);
    emit_optimizer(em);
    emit_lifetimes(em);
}

/* ---- entry points ------------------------------------------------------ */

const char *const *umadv__synth_models(void)
{
    return synth_model_names;
}

void umadv__synth_params_default(const char *model, umadv_synth_params_t *params)
{
    const synth_model_t *m = synth_model_find(model);

    memset(params, 0, sizeof(*params));
    params->model        = model;
    params->batch        = m != NULL ? m->batch : 256;
    params->depth        = 0;
    params->iterations   = 1;
    params->section_size = UMADV_SECTION_SIZE_DEFAULT;
    params->flops        = 0;
}

static umadv_status_t synth_check_depth(const synth_model_t *m, uint32_t depth)
{
    if (depth < m->depth_min || depth > m->depth_max ||
        (m->build == build_resnet_deep && depth % 2 == 0)) {
        if (m->depth_min == m->depth_max)
            umadv_error("depth %u: %s has a fixed depth of %u (or 0)", depth, m->name,
                        m->depth_min);
        else if (m->build == build_resnet_deep)
            umadv_error("depth %u: %s needs an odd number of convolutions in [%u, %u] "
                        "(stem, 2 per basic block, 2 projections)", depth, m->name,
                        m->depth_min, m->depth_max);
        else
            umadv_error("depth %u: %s blocks must be in [%u, %u]", depth, m->name,
                        m->depth_min, m->depth_max);
        return UMADV_ERR_INVALID_PARAM;
    }
    return UMADV_OK;
}

static umadv_status_t synth_check(const umadv_synth_params_t *params, const synth_model_t *m)
{
    if (m == NULL) {
        umadv_error("model '%s': unknown, use vgg16, resnet50, gpt2 or resnet-deep",
                    params->model != NULL ? params->model : "(null)");
        return UMADV_ERR_INVALID_PARAM;
    }
    if (params->batch == 0 || params->batch > SYNTH_BATCH_MAX) {
        umadv_error("batch %u: must be in [1, %u]", params->batch, SYNTH_BATCH_MAX);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (params->iterations == 0 || params->iterations > SYNTH_ITER_MAX) {
        umadv_error("iterations %u: must be in [1, %u]", params->iterations, SYNTH_ITER_MAX);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (params->section_size < UMADV_SECTION_SIZE_MIN ||
        params->section_size > UMADV_SECTION_SIZE_MAX ||
        (params->section_size & (params->section_size - 1)) != 0) {
        umadv_error("section_size %llu: must be a power of two from 64 KiB to 1 GiB",
                    (unsigned long long)params->section_size);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (!(params->flops >= 0) || isinf(params->flops)) {
        umadv_error("flops %g: must be a positive rate, or 0 for the default", params->flops);
        return UMADV_ERR_INVALID_PARAM;
    }
    return synth_check_depth(m, params->depth ? params->depth : m->depth);
}

static umadv_status_t synth_net_build(const synth_model_t *m, uint32_t batch, uint32_t depth,
                                      synth_net_t *net)
{
    memset(net, 0, sizeof(*net));
    net->batch = batch;
    m->build(net, depth);
    if (net->status == UMADV_ERR_INVALID_PARAM)
        umadv_error("batch %u: %s tensors would exceed %llu bytes", batch, m->name,
                    (unsigned long long)SYNTH_TENSOR_MAX);
    if (net->status != UMADV_OK)
        net_cleanup(net);
    return net->status;
}

static uint64_t sections_so_far(const umadv_trace_t *trace)
{
    uint64_t n = 0;

    for (uint32_t a = 0; a < trace->nallocs; a++)
        n += UMADV_DIV_ROUND_UP(trace->allocs[a].size, trace->section_size);
    return n;
}

/* Every iteration allocates what the first did: after it, the whole
 * trace's sections are known, and a trace a file cannot hold (issue 9:
 * resnet-deep at 64K sections over 100 iterations took 1.5 GB and 10 s
 * before the writer refused it) is refused before it is built. */
static umadv_status_t check_sections(const synth_emit_t *em, const umadv_synth_params_t *params,
                                     uint64_t persistent, uint64_t after_first)
{
    uint64_t per_iter = after_first - persistent;
    uint64_t total = persistent + per_iter * params->iterations;
    uint64_t fit = per_iter ? (UMADV_TRACE_IO_MAX_SECTIONS - UMADV_MIN(persistent,
                                   UMADV_TRACE_IO_MAX_SECTIONS)) / per_iter : 0;

    if (total <= UMADV_TRACE_IO_MAX_SECTIONS)
        return UMADV_OK;
    umadv_error("%s with %llu-byte sections: %u iterations make %llu sections, more than a "
                "trace holds (%u); use at most %llu iterations or a larger section size",
                em->model->name, (unsigned long long)params->section_size,
                params->iterations, (unsigned long long)total, UMADV_TRACE_IO_MAX_SECTIONS,
                (unsigned long long)fit);
    return UMADV_ERR_INVALID_PARAM;
}

static umadv_status_t synth_emit(synth_emit_t *em, const umadv_synth_params_t *params,
                                 uint32_t depth)
{
    umadv_trace_t *trace = em->trace;
    uint64_t persistent;
    char source[160];

    snprintf(source, sizeof(source), "synthetic %s batch=%u depth=%u iterations=%u",
             em->model->name, params->batch, depth, params->iterations);
    emit_fail(em, umadv__trace_set_source(trace, source));
    snprintf(trace->device.name, sizeof(trace->device.name), "NVIDIA H200");
    trace->device.memory = 141 * UMADV_GIB;
    trace->device.cc_major = 9;
    trace->device.cc_minor = 0;
    trace->device.driver_version = 13000;
    emit_persistent(em);
    persistent = sections_so_far(trace);
    for (em->iteration = 0; em->iteration < params->iterations && em->status == UMADV_OK;
         em->iteration++) {
        emit_iteration(em);
        if (em->iteration == 0 && em->status == UMADV_OK)
            em->status = check_sections(em, params, persistent, sections_so_far(trace));
    }
    return em->status;
}

umadv_status_t umadv__synth_build(const umadv_synth_params_t *params, umadv_trace_t *trace)
{
    const synth_model_t *model = synth_model_find(params->model);
    synth_emit_t em = {0};
    umadv_trace_t out;
    synth_net_t net;
    char why[160];
    uint32_t depth;
    umadv_status_t status;

    status = synth_check(params, model);
    if (status != UMADV_OK)
        return status;
    depth = params->depth ? params->depth : model->depth;
    status = synth_net_build(model, params->batch, depth, &net);
    if (status != UMADV_OK)
        return status;
    status = umadv__trace_init(&out, params->section_size);
    if (status != UMADV_OK)
        goto err_net;
    em.trace = &out;
    em.net   = &net;
    em.model = model;
    em.flops = params->flops > 0 ? params->flops : SYNTH_FLOPS_DEFAULT;
    status = synth_emit(&em, params, depth);
    if (status != UMADV_OK)
        goto err_trace;
    status = umadv__trace_finalize(&out, why, sizeof(why));
    if (status != UMADV_OK) {
        umadv_error("synthetic %s batch %u: %s", model->name, params->batch, why);
        goto err_trace;
    }
    net_cleanup(&net);
    *trace = out;
    return UMADV_OK;

err_trace:
    umadv__trace_cleanup(&out);
err_net:
    net_cleanup(&net);
    return status;
}
