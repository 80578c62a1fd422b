/*
 * VGG-16's passes as umadv steps (see vgg.h): every layer's forward and
 * backward, and every update, is one step on the training stream with
 * its accesses declared, as examples/mlp_train.c does; cuDNN and cuBLAS
 * queue their work on that stream.
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

static void step_begin(vgg_t *v, const char *name, const char *pass)
{
    char step[64];

    snprintf(step, sizeof(step), "%s%s", name, pass);
    UMADV_CHECK(umadv_step_begin(v->ctx, step, v->stream));
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
        vgg_die("umadv_malloc(%zu bytes, %s): %s", fbytes(elems(s)), tag,
                umadv_status_string(status));
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

    step_begin(v, "loss", "");
    dlogits = alloc_grad(v, last->out, last->name);
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

/* ---- forward --------------------------------------------------------- */

static void relu_forward(vgg_t *v, vgg_layer_t *ly)
{
    DNN_CHECK(cudnnActivationForward(v->dnn, v->relu, &one, ly->y_desc, ly->y, &zero,
                                     ly->y_desc, ly->y));
}

static void conv_forward(vgg_t *v, vgg_layer_t *ly, const float *x)
{
    DNN_CHECK(cudnnConvolutionForward(v->dnn, &one, ly->x_desc, x, ly->w_desc, ly->w,
                                      ly->conv_desc, ly->fwd_algo, v->workspace,
                                      v->workspace_bytes, &zero, ly->y_desc, ly->y));
    DNN_CHECK(cudnnAddTensor(v->dnn, &one, ly->b_desc, ly->b, &one, ly->y_desc, ly->y));
    relu_forward(v, ly);
}

/* y (out x n) = W (out x in) x (in x n), column-major as cuBLAS reads it. */
static void fc_forward(vgg_t *v, vgg_layer_t *ly, const float *x)
{
    int out = ly->out.c, in = fc_in(ly);

    BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_N, CUBLAS_OP_N, out, ly->in.n, in, &one, ly->w,
                           out, x, in, &zero, ly->y, out));
    DNN_CHECK(cudnnAddTensor(v->dnn, &one, ly->b_desc, ly->b, &one, ly->y_desc, ly->y));
    if (ly->relu)
        relu_forward(v, ly);
}

static void step_forward(vgg_t *v, int l)
{
    vgg_layer_t *ly = &v->layer[l];
    const float *x = layer_input(v, l);

    step_begin(v, ly->name, ".forward");
    uses(v, x, fbytes(elems(ly->in)), UMADV_ACCESS_READ);
    uses(v, ly->y, fbytes(elems(ly->out)), UMADV_ACCESS_WRITE);
    if (ly->nw > 0) {
        uses(v, ly->w, fbytes(ly->nw), UMADV_ACCESS_READ);
        uses(v, ly->b, fbytes(ly->nb), UMADV_ACCESS_READ);
    }
    if (ly->kind == VGG_CONV && v->workspace != NULL)
        uses(v, v->workspace, v->workspace_bytes, UMADV_ACCESS_RW);
    if (ly->kind == VGG_CONV)
        conv_forward(v, ly, x);
    else if (ly->kind == VGG_FC)
        fc_forward(v, ly, x);
    else
        DNN_CHECK(cudnnPoolingForward(v->dnn, v->pool, &one, ly->x_desc, x, &zero, ly->y_desc,
                                      ly->y));
    step_end(v);
}

/* ---- backward -------------------------------------------------------- */

/* In place on @dy: the ReLU's gradient needs only the sign of its output
 * (in place, the output is also what cuDNN reads as the input). */
static void relu_backward(vgg_t *v, vgg_layer_t *ly, float *dy)
{
    DNN_CHECK(cudnnActivationBackward(v->dnn, v->relu, &one, ly->y_desc, ly->y, ly->y_desc, dy,
                                      ly->y_desc, ly->y, &zero, ly->y_desc, dy));
}

static void conv_backward(vgg_t *v, vgg_layer_t *ly, const float *x, float *dy, float *dx)
{
    relu_backward(v, ly, dy);
    DNN_CHECK(cudnnConvolutionBackwardBias(v->dnn, &one, ly->y_desc, dy, &zero, ly->b_desc,
                                           ly->db));
    DNN_CHECK(cudnnConvolutionBackwardFilter(v->dnn, &one, ly->x_desc, x, ly->y_desc, dy,
                                             ly->conv_desc, ly->filter_algo, v->workspace,
                                             v->workspace_bytes, &zero, ly->w_desc, ly->dw));
    if (dx != NULL)
        DNN_CHECK(cudnnConvolutionBackwardData(v->dnn, &one, ly->w_desc, ly->w, ly->y_desc, dy,
                                               ly->conv_desc, ly->data_algo, v->workspace,
                                               v->workspace_bytes, &zero, ly->x_desc, dx));
}

/* dW = dy x^T, db = the sum of dy over the batch, dx = W^T dy. */
static void fc_backward(vgg_t *v, vgg_layer_t *ly, const float *x, float *dy, float *dx)
{
    int out = ly->out.c, in = fc_in(ly), n = ly->in.n;

    if (ly->relu)
        relu_backward(v, ly, dy);
    BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, &one, dy, out, x, in,
                           &zero, ly->dw, out));
    DNN_CHECK(cudnnConvolutionBackwardBias(v->dnn, &one, ly->y_desc, dy, &zero, ly->b_desc,
                                           ly->db));
    if (dx != NULL)
        BLAS_CHECK(cublasSgemm(v->blas, CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, &one, ly->w, out,
                               dy, out, &zero, dx, in));
}

static void backward_uses(vgg_t *v, vgg_layer_t *ly, const float *x, float *dy, float *dx)
{
    uses(v, x, fbytes(elems(ly->in)), UMADV_ACCESS_READ);
    uses(v, ly->y, fbytes(elems(ly->out)), UMADV_ACCESS_READ);
    uses(v, dy, fbytes(elems(ly->out)), ly->relu ? UMADV_ACCESS_RW : UMADV_ACCESS_READ);
    if (dx != NULL)
        uses(v, dx, fbytes(elems(ly->in)), UMADV_ACCESS_WRITE);
    if (ly->nw > 0) {
        uses(v, ly->w, fbytes(ly->nw), UMADV_ACCESS_READ);
        uses(v, ly->dw, fbytes(ly->nw), UMADV_ACCESS_WRITE);
        uses(v, ly->db, fbytes(ly->nb), UMADV_ACCESS_WRITE);
    }
    if (ly->kind == VGG_CONV && v->workspace != NULL)
        uses(v, v->workspace, v->workspace_bytes, UMADV_ACCESS_RW);
}

/* Gradients of layer l from @dy, its output's gradient; returns its
 * input's gradient (NULL for the first layer) and frees @dy. */
static float *step_backward(vgg_t *v, int l, float *dy)
{
    vgg_layer_t *ly = &v->layer[l];
    const float *x = layer_input(v, l);
    float *dx = NULL;

    step_begin(v, ly->name, ".backward");
    if (l > 0)
        dx = alloc_grad(v, ly->in, v->layer[l - 1].name);
    backward_uses(v, ly, x, dy, dx);
    if (ly->kind == VGG_CONV)
        conv_backward(v, ly, x, dy, dx);
    else if (ly->kind == VGG_FC)
        fc_backward(v, ly, x, dy, dx);
    else
        DNN_CHECK(cudnnPoolingBackward(v->dnn, v->pool, &one, ly->y_desc, ly->y, ly->y_desc, dy,
                                       ly->x_desc, x, &zero, ly->x_desc, dx));
    /* Stream order keeps the block alive for the work queued above. */
    UMADV_CHECK(umadv_free(v->ctx, dy));
    step_end(v);
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
