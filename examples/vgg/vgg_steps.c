/*
 * VGG-16's passes as umadv steps (see vgg.h): every layer's forward and
 * backward, and every update, is one step on the training stream with
 * its accesses declared, as examples/mlp_train.c does; cuDNN and cuBLAS
 * queue their work on that stream.
 *
 * With --split K, each layer's forward and backward run in K parts along
 * the batch (tvDNN's sectioning of memory objects, ooc_cuDNN's division
 * of N): the same cuDNN or cuBLAS call on a part's slices, each part its
 * own step declaring only its slices, so that a budget below one layer's
 * whole working set still holds a part, and umadv can move one part's
 * data while another computes. The data, loss and update steps stay whole.
 */
#include "vgg.h"

#include <stdio.h>

#include "../mlp_kernels.h"
#include "vgg_kernels.h"

static const float one = 1.0f, zero = 0.0f;

static size_t elems(vgg_shape_t s)
{
    return (size_t)s.n * (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

static size_t fbytes(size_t n)
{
    return n * sizeof(float);
}

/* Every step declares each buffer its kernels touch (uses), and says so
 * unless --declarations partial: the profile then takes the step on its
 * word instead of evicting every other buffer before each cuDNN or
 * cuBLAS kernel to find by faults what else it touches (umadv(3)). */
static void step_opened(vgg_t *v)
{
    if (v->opt.declarations_complete)
        UMADV_CHECK(umadv_step_access_complete(v->ctx));
}

static void step_begin(vgg_t *v, const char *name, const char *pass)
{
    char step[64];

    snprintf(step, sizeof(step), "%s%s", name, pass);
    UMADV_CHECK(umadv_step_begin(v->ctx, step, v->stream));
    step_opened(v);
}

static void uses(vgg_t *v, const void *p, size_t bytes, umadv_access_mode_t mode)
{
    UMADV_CHECK(umadv_step_access(v->ctx, p, bytes, mode));
}

static void step_end(vgg_t *v)
{
    UMADV_CHECK(umadv_step_end(v->ctx, 0));
}

static const float *layer_input(const vgg_t *v, int l)
{
    return l == 0 ? v->input : v->layer[l - 1].y;
}

/* Features a sample brings to a fully connected layer. */
static int fc_in(const vgg_layer_t *ly)
{
    return (int)(ly->nw / ly->nb);
}

static void *alloc_grad(vgg_t *v, vgg_shape_t s, const char *name)
{
    char tag[64];
    void *p;
    umadv_status_t status;

    snprintf(tag, sizeof(tag), "%s.grad", name);
    status = umadv_malloc(v->ctx, fbytes(elems(s)), tag, &p);
    if (status != UMADV_OK)
        example_die("umadv_malloc(%zu bytes, %s): %s", fbytes(elems(s)), tag,
                umadv_status_string(status));
    UMADV_CHECK(umadv_set_stageable(v->ctx, p, 1)); /* vgg_net.c, alloc */
    return p;
}

/* ---- data and loss --------------------------------------------------- */

void vgg_data(vgg_t *v, uint64_t first)
{
    vgg_shape_t in = v->layer[0].in;
    size_t pixels = elems(in) / (size_t)in.n;

    step_begin(v, "data", "");
    uses(v, v->input, fbytes(elems(in)), UMADV_ACCESS_WRITE);
    uses(v, v->labels, (size_t)in.n * sizeof(int), UMADV_ACCESS_WRITE);
    CUDA_CHECK(vgg_gen_images(v->input, v->labels, pixels, v->opt.classes, in.n, first,
                              v->opt.seed, v->stream));
    step_end(v);
}

/* The mean loss into *v->loss; returns the logits' gradient (transient),
 * or frees it and returns NULL when no backward follows. */
static float *step_loss(vgg_t *v, int backward)
{
    const vgg_layer_t *last = &v->layer[VGG_LAYERS - 1];
    size_t logits = fbytes(elems(last->out)), batch = (size_t)v->opt.batch;
    float *dlogits;

    /* allocated before its step begins, so that the plan can populate it
     * before the step's kernels (umadv(3), Marking the work) */
    dlogits = alloc_grad(v, last->out, last->name);
    step_begin(v, "loss", "");
    uses(v, last->y, logits, UMADV_ACCESS_READ);
    uses(v, v->labels, batch * sizeof(int), UMADV_ACCESS_READ);
    uses(v, v->loss_rows, fbytes(batch), UMADV_ACCESS_WRITE);
    uses(v, dlogits, logits, UMADV_ACCESS_WRITE);
    CUDA_CHECK(mlp_softmax_xent(last->y, v->labels, v->opt.classes, v->opt.batch,
                                v->loss_rows, dlogits, v->stream));
    CUDA_CHECK(mlp_mean(v->loss_rows, v->opt.batch, v->loss, v->stream));
    if (!backward) {
        UMADV_CHECK(umadv_free(v->ctx, dlogits));
        dlogits = NULL;
    }
    step_end(v);
    return dlogits;
}

/* ---- parts ------------------------------------------------------------ */

/* What one part of a layer's step works on: its samples' slices of the
 * layer's input, output and their gradients (NCHW: a sample's data is
 * contiguous, so a part is a sub-tensor), its shape's descriptors. */
typedef struct part_io {
    int                     index, n;
    const vgg_part_shape_t *sh;
    const float            *x;
    float                  *y, *dy, *dx;
    size_t                  x_bytes, y_bytes;
    float                   beta; /* 0 for the first part; then accumulate */
} part_io_t;

static size_t sample_elems(vgg_shape_t s)
{
    return elems(s) / (size_t)s.n;
}

static part_io_t part_io(const vgg_t *v, const vgg_layer_t *ly, int p, const float *x,
                         float *dy, float *dx)
{
    vgg_part_t part = vgg_part(v, p);
    size_t in = sample_elems(ly->in) * (size_t)part.first;
    size_t out = sample_elems(ly->out) * (size_t)part.first;

    return (part_io_t){
        .index = p, .n = part.n, .sh = &ly->shape[vgg_part_shape(v, part)],
        .x = x + in, .y = ly->y + out, .dy = dy != NULL ? dy + out : NULL,
        .dx = dx != NULL ? dx + in : NULL,
        .x_bytes = fbytes(sample_elems(ly->in) * (size_t)part.n),
        .y_bytes = fbytes(sample_elems(ly->out) * (size_t)part.n),
        .beta = p == 0 ? 0.0f : 1.0f};
}

/* "conv1_1.forward", or "conv1_1.forward.part2" when the layer is split. */
static void part_begin(vgg_t *v, const vgg_layer_t *ly, const char *pass, int p)
{
    char step[64];

    if (v->opt.split == 1)
        snprintf(step, sizeof(step), "%s%s", ly->name, pass);
    else
        snprintf(step, sizeof(step), "%s%s.part%d", ly->name, pass, p);
    UMADV_CHECK(umadv_step_begin(v->ctx, step, v->stream));
    step_opened(v);
}

static void uses_workspace(vgg_t *v, const vgg_layer_t *ly, const part_io_t *io)
{
    if (ly->kind == VGG_CONV && io->sh->workspace > 0)
        uses(v, v->workspace, io->sh->workspace, UMADV_ACCESS_RW);
}

/* ---- forward --------------------------------------------------------- */

static void relu_forward(vgg_t *v, const part_io_t *io)
{
    DNN_CHECK(cudnnActivationForward(v->dnn, v->relu, &one, io->sh->y_desc, io->y, &zero,
                                     io->sh->y_desc, io->y));
}

static void conv_forward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    DNN_CHECK(cudnnConvolutionForward(v->dnn, &one, io->sh->x_desc, io->x, ly->w_desc, ly->w,
                                      ly->conv_desc, io->sh->fwd_algo, v->workspace,
                                      io->sh->workspace, &zero, io->sh->y_desc, io->y));
    DNN_CHECK(cudnnAddTensor(v->dnn, &one, ly->b_desc, ly->b, &one, io->sh->y_desc, io->y));
    relu_forward(v, io);
}

/* y (out x n) = W (out x in) x (in x n), column-major as cuBLAS reads it. */
static void fc_forward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    int out = ly->out.c, in = fc_in(ly);

    BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_N, CUBLAS_OP_N, out, io->n, in, &one, ly->w,
                           out, io->x, in, &zero, io->y, out));
    DNN_CHECK(cudnnAddTensor(v->dnn, &one, ly->b_desc, ly->b, &one, io->sh->y_desc, io->y));
    if (ly->relu)
        relu_forward(v, io);
}

static void part_forward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    part_begin(v, ly, ".forward", io->index);
    uses(v, io->x, io->x_bytes, UMADV_ACCESS_READ);
    uses(v, io->y, io->y_bytes, UMADV_ACCESS_WRITE);
    if (ly->nw > 0) {
        uses(v, ly->w, fbytes(ly->nw), UMADV_ACCESS_READ);
        uses(v, ly->b, fbytes(ly->nb), UMADV_ACCESS_READ);
    }
    uses_workspace(v, ly, io);
    if (ly->kind == VGG_CONV)
        conv_forward(v, ly, io);
    else if (ly->kind == VGG_FC)
        fc_forward(v, ly, io);
    else
        DNN_CHECK(cudnnPoolingForward(v->dnn, v->pool, &one, io->sh->x_desc, io->x, &zero,
                                      io->sh->y_desc, io->y));
    step_end(v);
}

static void step_forward(vgg_t *v, int l)
{
    for (int p = 0; p < v->opt.split; p++) {
        part_io_t io = part_io(v, &v->layer[l], p, layer_input(v, l), NULL, NULL);

        part_forward(v, &v->layer[l], &io);
    }
}

/* ---- backward -------------------------------------------------------- */

/* In place on @dy: the ReLU's gradient needs only the sign of its output
 * (in place, the output is also what cuDNN reads as the input). */
static void relu_backward(vgg_t *v, const part_io_t *io)
{
    const vgg_part_shape_t *sh = io->sh;

    DNN_CHECK(cudnnActivationBackward(v->dnn, v->relu, &one, sh->y_desc, io->y, sh->y_desc,
                                      io->dy, sh->y_desc, io->y, &zero, sh->y_desc, io->dy));
}

/* The weights' and bias's gradients sum over the parts (beta 1 after the
 * first): a split changes the order of that sum, not the sum's terms. */
static void conv_backward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    const vgg_part_shape_t *sh = io->sh;

    relu_backward(v, io);
    DNN_CHECK(cudnnConvolutionBackwardBias(v->dnn, &one, sh->y_desc, io->dy, &io->beta,
                                           ly->b_desc, ly->db));
    DNN_CHECK(cudnnConvolutionBackwardFilter(v->dnn, &one, sh->x_desc, io->x, sh->y_desc,
                                             io->dy, ly->conv_desc, sh->filter_algo,
                                             v->workspace, sh->workspace, &io->beta,
                                             ly->w_desc, ly->dw));
    if (io->dx != NULL)
        DNN_CHECK(cudnnConvolutionBackwardData(v->dnn, &one, ly->w_desc, ly->w, sh->y_desc,
                                               io->dy, ly->conv_desc, sh->data_algo,
                                               v->workspace, sh->workspace, &zero, sh->x_desc,
                                               io->dx));
}

/* dW = dy x^T, db = the sum of dy over the batch, dx = W^T dy. */
static void fc_backward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    int out = ly->out.c, in = fc_in(ly);

    if (ly->relu)
        relu_backward(v, io);
    BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_N, CUBLAS_OP_T, out, in, io->n, &one, io->dy, out,
                           io->x, in, &io->beta, ly->dw, out));
    DNN_CHECK(cudnnConvolutionBackwardBias(v->dnn, &one, io->sh->y_desc, io->dy, &io->beta,
                                           ly->b_desc, ly->db));
    if (io->dx != NULL)
        BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_T, CUBLAS_OP_N, in, io->n, out, &one, ly->w,
                               out, io->dy, out, &zero, io->dx, in));
}

static void pool_backward(vgg_t *v, const part_io_t *io)
{
    const vgg_part_shape_t *sh = io->sh;

    DNN_CHECK(cudnnPoolingBackward(v->dnn, v->pool, &one, sh->y_desc, io->y, sh->y_desc, io->dy,
                                   sh->x_desc, io->x, &zero, sh->x_desc, io->dx));
}

static void backward_uses(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    /* The first part overwrites the gradients, the others add to them. */
    umadv_access_mode_t sum = io->index == 0 ? UMADV_ACCESS_WRITE : UMADV_ACCESS_RW;

    uses(v, io->x, io->x_bytes, UMADV_ACCESS_READ);
    uses(v, io->y, io->y_bytes, UMADV_ACCESS_READ);
    uses(v, io->dy, io->y_bytes, ly->relu ? UMADV_ACCESS_RW : UMADV_ACCESS_READ);
    if (io->dx != NULL)
        uses(v, io->dx, io->x_bytes, UMADV_ACCESS_WRITE);
    if (ly->nw > 0) {
        uses(v, ly->w, fbytes(ly->nw), UMADV_ACCESS_READ);
        uses(v, ly->dw, fbytes(ly->nw), sum);
        uses(v, ly->db, fbytes(ly->nb), sum);
    }
    uses_workspace(v, ly, io);
}

static void part_backward(vgg_t *v, vgg_layer_t *ly, const part_io_t *io)
{
    backward_uses(v, ly, io);
    if (ly->kind == VGG_CONV)
        conv_backward(v, ly, io);
    else if (ly->kind == VGG_FC)
        fc_backward(v, ly, io);
    else
        pool_backward(v, io);
}

/* Gradients of layer l from @dy, its output's gradient; returns its
 * input's gradient (NULL for the first layer), allocated just before the
 * first part's step, and frees @dy in the last part's. */
static float *step_backward(vgg_t *v, int l, float *dy)
{
    vgg_layer_t *ly = &v->layer[l];
    float *dx = NULL;

    for (int p = 0; p < v->opt.split; p++) {
        part_io_t io;

        if (l > 0 && p == 0) /* before its step: see step_loss */
            dx = alloc_grad(v, ly->in, v->layer[l - 1].name);
        part_begin(v, ly, ".backward", p);
        io = part_io(v, ly, p, layer_input(v, l), dy, dx);
        part_backward(v, ly, &io);
        /* Stream order keeps the block alive for the work queued above. */
        if (p == v->opt.split - 1)
            UMADV_CHECK(umadv_free(v->ctx, dy));
        step_end(v);
    }
    return dx;
}

void vgg_forward_loss(vgg_t *v, int backward)
{
    float *grad;

    for (int l = 0; l < VGG_LAYERS; l++)
        step_forward(v, l);
    grad = step_loss(v, backward);
    for (int l = VGG_LAYERS - 1; grad != NULL && l >= 0; l--)
        grad = step_backward(v, l, grad);
}

/* ---- update ---------------------------------------------------------- */

static void step_update(vgg_t *v, vgg_layer_t *ly)
{
    float lr = (float)v->opt.lr, mu = (float)v->opt.momentum;

    step_begin(v, ly->name, ".update");
    uses(v, ly->w, fbytes(ly->nw), UMADV_ACCESS_RW);
    uses(v, ly->b, fbytes(ly->nb), UMADV_ACCESS_RW);
    uses(v, ly->vw, fbytes(ly->nw), UMADV_ACCESS_RW);
    uses(v, ly->vb, fbytes(ly->nb), UMADV_ACCESS_RW);
    uses(v, ly->dw, fbytes(ly->nw), UMADV_ACCESS_READ);
    uses(v, ly->db, fbytes(ly->nb), UMADV_ACCESS_READ);
    CUDA_CHECK(mlp_sgd(ly->w, ly->vw, ly->dw, ly->nw, lr, mu, v->stream));
    CUDA_CHECK(mlp_sgd(ly->b, ly->vb, ly->db, ly->nb, lr, mu, v->stream));
    step_end(v);
}

void vgg_update(vgg_t *v)
{
    for (int l = 0; l < VGG_LAYERS; l++)
        if (v->layer[l].nw > 0)
            step_update(v, &v->layer[l]);
}
