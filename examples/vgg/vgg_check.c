/*
 * vgg_train's checks (see vgg.h): the gradient check and the digest of
 * the weights.
 *
 * The gradient check's tolerance, for fp32: a loss L computed in fp32
 * carries a rounding error d of a few tens of ulps of |L| (the sums of
 * 16 layers; changing one weight changes the roundings downstream), so a
 * central difference (L+ - L-) / 2h carries up to d / h of noise: the
 * absolute floor FD_NOISE_ULPS * eps * max(1, |L|) / h. Above it, the
 * truncation error is O(h^2) where the loss is smooth; ReLU and max
 * pooling are continuous with kinks, which a step of FD_STEP crosses at
 * a few units at most, an error of a few percent: FD_RTOL, unless the
 * step crosses many (a first layer's bias shifts every pre-activation of
 * its channel): where the differences at FD_STEP and FD_STEP / 2 disagree
 * by more than FD_SMOOTH (a quarter of the tolerance: conv2_2's weight
 * passed a check at the tolerance and still missed by 5.8% on an H100),
 * the point is not smooth enough to judge,
 * and the next largest gradient of the tensor is checked instead (at most
 * FD_TRIES; a wrong gradient is smooth too, and still fails). A check whose
 * analytic gradient is below ten times the floor proves little, so each
 * tensor is checked where its gradient is largest, and the check fails
 * if no check at all stands above the floor.
 */
#include "vgg.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../mlp_kernels.h"

#define FD_STEP 1e-2
#define FD_RTOL 5e-2
#define FD_NOISE_ULPS 32.0
#define FD_SMOOTH (FD_RTOL / 4)
#define FD_TRIES 8

typedef struct grad_tally {
    int checks, significant, mismatches;
    double floor; /* the absolute noise floor of a finite difference */
} grad_tally_t;

static float read_at(const float *p, size_t i)
{
    float x;

    CUDA_CHECK(cudaMemcpy(&x, p + i, sizeof(x), cudaMemcpyDefault));
    return x;
}

/* cudaMemcpy from pageable memory may return before the copy lands, and
 * the training stream does not wait for the legacy stream: sync. */
static void write_at(float *p, size_t i, float x)
{
    CUDA_CHECK(cudaMemcpy(p + i, &x, sizeof(x), cudaMemcpyDefault));
    CUDA_CHECK(cudaDeviceSynchronize());
}

/* The loss of the current weights on the batch in place (forward only). */
static double loss_now(vgg_t *v)
{
    UMADV_CHECK(umadv_iteration_begin(v->ctx));
    vgg_forward_loss(v, 0);
    CUDA_CHECK(cudaStreamSynchronize(v->stream));
    return *v->loss;
}

/* The element of @grad (n floats, device) largest in magnitude. */
static int was_tried(size_t i, const size_t *tried, int ntried)
{
    for (int k = 0; k < ntried; k++)
        if (tried[k] == i)
            return 1;
    return 0;
}

/* The index of the largest |grad| that is not among @tried[0..ntried). */
static size_t largest(const float *grad, size_t n, const size_t *tried, int ntried)
{
    float *host = malloc(n * sizeof(*host));
    size_t best = SIZE_MAX;

    if (host == NULL)
        example_die("out of host memory");
    CUDA_CHECK(cudaMemcpy(host, grad, n * sizeof(*host), cudaMemcpyDefault));
    for (size_t i = 0; i < n; i++)
        if (!was_tried(i, tried, ntried) &&
            (best == SIZE_MAX || fabsf(host[i]) > fabsf(host[best])))
            best = i;
    free(host);
    return best;
}

/* Central difference at w[i] of @step, divided by the steps fp32 really
 * took. */
static double numeric_grad(vgg_t *v, float *w, size_t i, double step)
{
    float w0 = read_at(w, i), up = (float)(w0 + step), down = (float)(w0 - step);
    double plus, minus;

    write_at(w, i, up);
    plus = loss_now(v);
    write_at(w, i, down);
    minus = loss_now(v);
    write_at(w, i, w0);
    return (plus - minus) / ((double)up - (double)down);
}

/* Whether the loss is smooth enough at w[i] to judge: the differences
 * at FD_STEP and FD_STEP / 2 agree within FD_SMOOTH (the smaller step's
 * noise floor is twice the other's). */
static int smooth_at(vgg_t *v, const grad_tally_t *t, float *w, size_t i, double *numeric)
{
    double half = numeric_grad(v, w, i, FD_STEP / 2);

    *numeric = numeric_grad(v, w, i, FD_STEP);
    return fabs(*numeric - half) <= FD_SMOOTH * fmax(fabs(*numeric), fabs(half)) + 2 * t->floor;
}

static void check_one(vgg_t *v, grad_tally_t *t, const char *name, const char *what, float *w,
                      const float *grad, size_t n)
{
    size_t tried[FD_TRIES], i = 0;
    double analytic, numeric = 0, scale, error, tol;
    int ntried = 0, ok;

    while (ntried < FD_TRIES && ntried < (int)n) {
        i = largest(grad, n, tried, ntried);
        tried[ntried++] = i;
        if (smooth_at(v, t, w, i, &numeric))
            break;
        printf("grad_check %s.%s[%zu] not smooth at the step: the next largest instead\n",
               name, what, i);
    }
    analytic = read_at(grad, i);
    scale = fmax(fabs(analytic), fabs(numeric));
    error = fabs(analytic - numeric);
    tol = FD_RTOL * scale + t->floor;
    ok = error <= tol;
    t->checks++;
    t->significant += fabs(analytic) >= 10.0 * t->floor;
    t->mismatches += !ok;
    printf("grad_check %s.%s[%zu] analytic %.6e numeric %.6e error %.3e tol %.3e %s\n", name,
           what, i, analytic, numeric, error, tol, ok ? "ok" : "MISMATCH");
}

int vgg_check_grad(vgg_t *v)
{
    grad_tally_t t = {0};
    double loss;

    UMADV_CHECK(umadv_iteration_begin(v->ctx));
    vgg_data(v, 0);
    vgg_forward_loss(v, 1);
    CUDA_CHECK(cudaStreamSynchronize(v->stream));
    loss = *v->loss;
    t.floor = FD_NOISE_ULPS * FLT_EPSILON * fmax(1.0, fabs(loss)) / FD_STEP;
    printf("grad_check loss %.9f step %g rtol %g noise_floor %.3e\n", loss, FD_STEP, FD_RTOL,
           t.floor);
    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];

        if (ly->nw == 0)
            continue;
        check_one(v, &t, ly->name, "weight", ly->w, ly->dw, ly->nw);
        check_one(v, &t, ly->name, "bias", ly->b, ly->db, ly->nb);
    }
    printf("grad_check %d checks, %d above ten times the noise floor, %d mismatches: %s\n",
           t.checks, t.significant, t.mismatches,
           t.mismatches == 0 && t.significant > 0 ? "pass" : "FAIL");
    return t.mismatches == 0 && t.significant > 0 ? 0 : 1;
}

/* ---- digest ---------------------------------------------------------- */

static void hash_tensor(vgg_t *v, const float *p, size_t n, uint64_t *dev, uint64_t *host,
                        uint64_t *h)
{
    size_t chunks = (n + MLP_HASH_CHUNK - 1) / MLP_HASH_CHUNK;

    CUDA_CHECK(mlp_hash(p, n, dev, v->stream));
    CUDA_CHECK(cudaMemcpyAsync(host, dev, chunks * sizeof(*dev), cudaMemcpyDeviceToHost,
                               v->stream));
    CUDA_CHECK(cudaStreamSynchronize(v->stream));
    for (size_t c = 0; c < chunks; c++)
        *h = (*h ^ host[c]) * 0x100000001b3ull;
}

uint64_t vgg_digest(vgg_t *v)
{
    size_t most = 0, chunks;
    uint64_t h = 0xcbf29ce484222325ull, *dev, *host;

    for (int l = 0; l < VGG_LAYERS; l++)
        most = v->layer[l].nw > most ? v->layer[l].nw : most;
    chunks = most / MLP_HASH_CHUNK + 1;
    host = malloc(chunks * sizeof(*host));
    if (host == NULL)
        example_die("out of host memory");
    CUDA_CHECK(cudaMalloc((void **)&dev, chunks * sizeof(*dev)));
    for (int l = 0; l < VGG_LAYERS; l++) {
        vgg_layer_t *ly = &v->layer[l];

        if (ly->nw == 0)
            continue;
        hash_tensor(v, ly->w, ly->nw, dev, host, &h);
        hash_tensor(v, ly->b, ly->nb, dev, host, &h);
    }
    CUDA_CHECK(cudaFree(dev));
    free(host);
    return h;
}
