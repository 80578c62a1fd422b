/*
 * vgg_train: trains VGG-16 (cuDNN convolutions, cuBLAS fully connected
 * layers, fp32, NCHW) on memory from umadv, as a C application links
 * umadv: every tensor, weight, gradient, momentum buffer and the cuDNN
 * workspace comes from umadv_malloc(); every layer's forward and backward
 * and every update is a umadv step; each iteration is marked with
 * umadv_iteration_begin(); iteration --profile-iter is profiled and the
 * plan built after it. Policy and budget come from umadv's environment
 * (UMADV_POLICY, UMADV_BUDGET), as for examples/mlp_train.c. Every
 * buffer but the weights, biases and momenta is marked stageable
 * (umadv_set_stageable(3)): only the steps' kernels and CUDA copies touch
 * it, so umadv may evict it through pinned staging (UMADV_STAGE=0: never).
 * --split K runs each layer in K parts along the batch (vgg_steps.c), so
 * that a budget below one layer's working set still trains.
 *
 * The data: synthetic images made on the GPU from --seed (a label uniform
 * over the classes, each pixel noise plus the label's prototype), batch
 * i the samples i*batch .. (i+1)*batch - 1, or always the first batch with
 * --fixed-batch. The checks: --check-grad compares analytic gradients
 * with central finite differences; --fixed-batch fails unless the loss
 * falls; the digest of the final weights compares runs bitwise.
 */
#include "vgg.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../mlp_kernels.h"

/* Never ask for more managed memory than this share of the free memory:
 * oversubscribing a shared GPU can hang it. */
#define FREE_SHARE 0.9

/* ---- errors ---------------------------------------------------------- */

void vgg_check_cuda(cudaError_t err, const char *call, int line)
{
    if (err != cudaSuccess)
        example_die("%s failed (line %d): %s", call, line, cudaGetErrorString(err));
}

void vgg_check_dnn(cudnnStatus_t status, const char *call, int line)
{
    if (status != CUDNN_STATUS_SUCCESS)
        example_die("%s failed (line %d): %s", call, line, cudnnGetErrorString(status));
}

void vgg_check_blas(cublasStatus_t status, const char *call, int line)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        example_die("%s failed (line %d): %s", call, line, cublasGetStatusString(status));
}

void vgg_check_umadv(umadv_status_t status, const char *call, int line)
{
    if (status != UMADV_OK)
        example_die("%s failed (line %d): %s", call, line, umadv_status_string(status));
}

/* ---- options --------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
        "usage: " VGG_PROG " [OPTION]...\n"
        "Train VGG-16 (cuDNN, cuBLAS, fp32) on CUDA managed memory through umadv.\n\n"
        "  --batch N            images per iteration (default 32)\n"
        "  --iters N            training iterations (default 10)\n"
        "  --image-size N       image height and width, a multiple of 32 (default 224)\n"
        "  --width-scale N      divide every layer's channels by N (default 1: VGG-16)\n"
        "  --classes N          classes of the synthetic data set (default 1000)\n"
        "  --profile-iter N     iteration umadv profiles; the plan is built after it\n"
        "                       (default 1; iteration 0 warms up)\n"
        "  --lr X               learning rate (default 0.01)\n"
        "  --momentum X         SGD momentum (default 0.9)\n"
        "  --seed N             seed of the data and the initial weights (default 1)\n"
        "  --workspace-limit SIZE  most cuDNN workspace an algorithm may use (default 512M)\n"
        "  --deterministic      only convolution algorithms cuDNN reports deterministic\n"
        "  --split K|auto       run each layer's forward and backward in K parts along\n"
        "                       the batch, each part a umadv step (default 1); auto: the\n"
        "                       fewest parts whose largest step takes half of UMADV_BUDGET;\n"
        "                       raised to the parts cuDNN can describe (each tensor under\n"
        "                       2^31 elements: batch 669 and over at 224x224)\n"
        "  --fixed-batch        train on the first batch every iteration; fail unless\n"
        "                       the loss falls\n"
        "  --check-grad         compare analytic gradients with central finite differences\n"
        "                       on one batch (deterministic algorithms), train nothing;\n"
        "                       meant for a scaled-down network; tanh and average pooling\n"
        "                       stand for ReLU and max pooling (the same calls, no kinks)\n"
        "  --trace FILE         save the profiled iteration to FILE (umadv-trace(5)) once\n"
        "                       the iteration after it has measured its steps (umadv\n"
        "                       plan FILE simulates it); FILE is replaced only whole\n"
        "  --declarations complete|partial  complete (default): each step tells umadv\n"
        "                       that it declares every buffer it touches\n"
        "                       (umadv_step_access_complete), so the profile needs no\n"
        "                       evictions to find the rest; partial: it does not, and\n"
        "                       the profile finds by faults what each cuDNN and cuBLAS\n"
        "                       kernel touches beyond its step's declarations\n"
        "  --footprint          print the managed-memory footprint and exit (no GPU needed)\n"
        "  --help               show this help and exit\n\n"
        "Policy and budget come from umadv's knobs: UMADV_POLICY (oracle, demand,\n"
        "prefetch-all, plan), UMADV_BUDGET (e.g. 8G); see umadv(7).\n"
        "Prints 'iter N loss X ms Y fetched B evicted B staged B restored B faults N' per\n"
        "iteration (bytes moved by UVM and through pinned staging; faults: the GPU fault groups\n"
        "of the iteration before, which umadv counts at the next iteration's begin), the digest\n"
        "of the final weights and a summary of umadv's counters.\n"
        "Exit status: 0 done, 1 failed (a check included), 2 usage error, 77 no CUDA device.\n");
}

static uint64_t parse_size(const char *flag, const char *text)
{
    uint64_t v;

    if (umadv_size_parse(text, &v) != UMADV_OK)
        example_usage_error("invalid value '%s' for --%s: a size such as 512M", text, flag);
    return v;
}

enum { OPT_BATCH = 256, OPT_ITERS, OPT_IMAGE, OPT_WIDTH, OPT_CLASSES, OPT_PROFILE, OPT_LR,
       OPT_MOMENTUM, OPT_SEED, OPT_WORKSPACE, OPT_DETERMINISTIC, OPT_FIXED, OPT_CHECK_GRAD,
       OPT_FOOTPRINT, OPT_SPLIT, OPT_TRACE, OPT_DECLARATIONS, OPT_HELP };

static const struct option long_opts[] = {
    {"batch", required_argument, NULL, OPT_BATCH},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"image-size", required_argument, NULL, OPT_IMAGE},
    {"width-scale", required_argument, NULL, OPT_WIDTH},
    {"classes", required_argument, NULL, OPT_CLASSES},
    {"profile-iter", required_argument, NULL, OPT_PROFILE},
    {"lr", required_argument, NULL, OPT_LR},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"seed", required_argument, NULL, OPT_SEED},
    {"workspace-limit", required_argument, NULL, OPT_WORKSPACE},
    {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
    {"fixed-batch", no_argument, NULL, OPT_FIXED},
    {"check-grad", no_argument, NULL, OPT_CHECK_GRAD},
    {"footprint", no_argument, NULL, OPT_FOOTPRINT},
    {"split", required_argument, NULL, OPT_SPLIT},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"declarations", required_argument, NULL, OPT_DECLARATIONS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}
};

static void opts_default(vgg_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->batch           = 32;
    o->iters           = 10;
    o->image           = 224;
    o->width_scale     = 1;
    o->classes         = 1000;
    o->profile_iter    = 1;
    o->lr              = 0.01;
    o->momentum        = 0.9;
    o->seed            = 1;
    o->workspace_limit = UINT64_C(512) << 20;
    o->split           = 1;
    o->declarations_complete = 1;
}

static void opt_apply(vgg_opts_t *o, int c, const char *flag, const char *arg)
{
    switch (c) {
    case OPT_BATCH:         o->batch = (int)example_parse_int(flag, arg, 1, 1 << 16); break;
    case OPT_ITERS:         o->iters = (int)example_parse_int(flag, arg, 1, 1 << 24); break;
    case OPT_IMAGE:         o->image = (int)example_parse_int(flag, arg, 32, 4096); break;
    case OPT_WIDTH:         o->width_scale = (int)example_parse_int(flag, arg, 1, 512); break;
    case OPT_CLASSES:       o->classes = (int)example_parse_int(flag, arg, 2, 1 << 16); break;
    case OPT_PROFILE:       o->profile_iter = (int)example_parse_int(flag, arg, 0, 1 << 24); break;
    case OPT_LR:            o->lr = example_parse_real(flag, arg, 1e-12, 1e3); break;
    case OPT_MOMENTUM:      o->momentum = example_parse_real(flag, arg, 0.0, 1.0); break;
    case OPT_SEED:          o->seed = (uint64_t)example_parse_int(flag, arg, 0, LLONG_MAX); break;
    case OPT_WORKSPACE:     o->workspace_limit = parse_size(flag, arg); break;
    case OPT_DETERMINISTIC: o->deterministic = 1; break;
    case OPT_FIXED:         o->fixed_batch = 1; break;
    case OPT_CHECK_GRAD:    o->check_grad = 1; break;
    case OPT_FOOTPRINT:     o->footprint_only = 1; break;
    case OPT_TRACE:         o->trace = arg; break;
    case OPT_DECLARATIONS:
        if (strcmp(arg, "complete") != 0 && strcmp(arg, "partial") != 0)
            example_usage_error("invalid value '%s' for --declarations: complete or partial",
                                arg);
        o->declarations_complete = strcmp(arg, "complete") == 0;
        break;
    case OPT_SPLIT:
        o->split_auto = strcmp(arg, "auto") == 0;
        o->split = o->split_auto ? 1 : (int)example_parse_int(flag, arg, 1, 1 << 16);
        break;
    }
}

static void opts_check(vgg_opts_t *o)
{
    if (o->image % 32 != 0)
        example_usage_error("invalid value '%d' for --image-size: a multiple of 32 (five 2x2 pools)",
                    o->image);
    if (o->split > o->batch)
        example_usage_error("invalid value '%d' for --split: at most --batch (%d) parts", o->split,
                    o->batch);
    if (o->profile_iter >= o->iters)
        example_usage_error("invalid value '%d' for --profile-iter: an iteration below --iters (%d)",
                    o->profile_iter, o->iters);
    /* A finite difference must see the same arithmetic as the gradient. */
    if (o->check_grad)
        o->deterministic = 1;
}

static void opts_parse(int argc, char **argv, vgg_opts_t *o)
{
    int c, index;

    opts_default(o);
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", long_opts, &index)) != -1) {
        if (c == OPT_HELP) {
            usage(stdout);
            exit(EXIT_SUCCESS);
        }
        if (c == ':')
            example_usage_error("option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            example_usage_error("unknown option '%s'", argv[optind - 1]);
        opt_apply(o, c, long_opts[index].name, optarg);
    }
    if (optind < argc)
        example_usage_error("unexpected argument '%s'", argv[optind]);
    opts_check(o);
}

/* --split auto: from UMADV_BUDGET, read as umadv reads it (a bad value
 * is an error naming the variable); no budget, no split. Either way at
 * least the parts cuDNN can describe (vgg_split_floor). */
static void split_choose(vgg_t *v)
{
    const char *text = getenv("UMADV_BUDGET");
    uint64_t budget = 0;

    if (v->opt.split_auto) {
        if (text != NULL && *text != '\0' && umadv_size_parse(text, &budget) != UMADV_OK)
            example_die("UMADV_BUDGET=%s: not a size (--split auto reads it)", text);
        vgg_split_auto(v, budget);
    }
    if (v->opt.split < vgg_split_floor(v)) {
        fprintf(stderr, "%s: --split %d raised to %d: cuDNN describes tensors of fewer than "
                "2^31 elements\n", VGG_PROG, v->opt.split, vgg_split_floor(v));
        v->opt.split = vgg_split_floor(v);
    }
}

/* ---- device, memory and context ------------------------------------- */

/* Exit 77 without a device, so that test harnesses count a skip. */
static void device_open(vgg_t *v)
{
    example_cuda_device();
    CUDA_CHECK(cudaStreamCreateWithFlags(&v->stream, cudaStreamNonBlocking));
    DNN_CHECK(cudnnCreate(&v->dnn));
    DNN_CHECK(cudnnSetStream(v->dnn, v->stream));
    BLAS_CHECK(cublasCreate(&v->blas));
    BLAS_CHECK(cublasSetStream(v->blas, v->stream));
    /* Reproducible FP32: no TF32 or reduced precision, no atomics. */
    BLAS_CHECK(cublasSetMathMode(v->blas, CUBLAS_DEFAULT_MATH));
    BLAS_CHECK(cublasSetAtomicsMode(v->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    BLAS_CHECK(cublasSetPointerMode(v->blas, CUBLAS_POINTER_MODE_HOST));
}

static void device_close(vgg_t *v)
{
    BLAS_CHECK(cublasDestroy(v->blas));
    DNN_CHECK(cudnnDestroy(v->dnn));
    CUDA_CHECK(cudaStreamDestroy(v->stream));
}

/* Refuse a run whose managed memory could pass FREE_SHARE of the free GPU
 * memory. Returns that share: umadv's cap on managed memory. */
static uint64_t memory_check(uint64_t need)
{
    size_t free_b = 0, total_b = 0;
    uint64_t cap;

    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    cap = (uint64_t)(FREE_SHARE * (double)free_b);
    if (need > cap)
        example_die("this run needs %" PRIu64 " bytes of managed memory, more than %.0f%% of the "
                "%zu bytes free: use a smaller --batch or --image-size, or a larger "
                "--width-scale", need, FREE_SHARE * 100.0, free_b);
    return cap;
}

/* The guard UMADV_MAX_MANAGED, set to the cap unless the user chose one. */
static void context_open(vgg_t *v, uint64_t cap)
{
    umadv_context_params_t params = {0};
    umadv_status_t status;

    if (getenv("UMADV_MAX_MANAGED") == NULL) {
        params.field_mask  = UMADV_CONTEXT_FIELD_MAX_MANAGED;
        params.max_managed = cap;
    }
    status = umadv_context_create(&params, &v->ctx);
    if (status == UMADV_ERR_NO_DEVICE) {
        fprintf(stderr, VGG_PROG ": umadv finds no usable CUDA device\n");
        exit(EXAMPLE_EXIT_SKIP);
    }
    if (status != UMADV_OK)
        example_die("umadv_context_create: %s", umadv_status_string(status));
}

/* ---- report ---------------------------------------------------------- */

static void print_header(const vgg_t *v)
{
    const vgg_opts_t *o = &v->opt;
    const vgg_layer_t *fc6 = &v->layer[VGG_LAYERS - 3];

    printf(VGG_PROG ": VGG-16 at %dx%d, width 1/%d (conv1 %d channels, fc %d), %d classes, "
           "batch %d, lr %g, momentum %g, seed %" PRIu64 "%s%s\n", o->image, o->image,
           o->width_scale, v->layer[0].out.c, fc6->out.c, o->classes, o->batch, o->lr,
           o->momentum, o->seed, o->deterministic ? ", deterministic" : "",
           o->fixed_batch ? ", fixed batch" : "");
    printf("split %d (parts of %d and %d samples)%s\n", o->split, vgg_part(v, 0).n,
           vgg_part(v, o->split - 1).n, o->split_auto ? ", chosen from UMADV_BUDGET" : "");
}

static void footprint_print(const vgg_footprint_t *f)
{
    printf("footprint weights %" PRIu64 " (values, gradients, momentum)\n", f->weights);
    printf("footprint activations %" PRIu64 " (every layer's output, kept for backward)\n",
           f->activations);
    printf("footprint input %" PRIu64 "\n", f->input);
    printf("footprint transient %" PRIu64 " (activation gradients at their peak)\n",
           f->transient);
    printf("footprint total %" PRIu64 " (without the cuDNN workspace)\n", f->total);
    printf("footprint largest_step %" PRIu64 " %s (without the cuDNN workspace)\n",
           f->largest_step, f->largest_name);
}

/* The counters since the context began: what umadv moved, and its peaks. */
static void print_summary(const vgg_t *v)
{
    umadv_stats_t st = {.size = sizeof(st)};
    const char *policy = getenv("UMADV_POLICY"), *budget = getenv("UMADV_BUDGET");

    UMADV_CHECK(umadv_get_stats(v->ctx, &st));
    printf("summary policy %s budget %s faults %" PRIu64 " fetched_bytes %" PRIu64
           " evicted_bytes %" PRIu64 " staged_bytes %" PRIu64 " restored_bytes %" PRIu64
           " managed_peak %" PRIu64 " resident_peak %" PRIu64 "\n",
           policy != NULL ? policy : "default", budget != NULL ? budget : "none", st.gpu_faults,
           st.fetched_bytes, st.evicted_bytes, st.staged_bytes, st.restored_bytes,
           st.managed_peak, st.resident_peak);
}

/* ---- training -------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The plan follows the profiled iteration; without one, umadv still keeps
 * the data correct, so training goes on. */
static void plan_after_profile(vgg_t *v)
{
    umadv_status_t status = umadv_plan(v->ctx);

    if (status != UMADV_OK)
        fprintf(stderr, VGG_PROG ": umadv_plan: %s: training goes on without a plan\n",
                umadv_status_string(status));
}

static double iteration(vgg_t *v, int it)
{
    uint64_t first = v->opt.fixed_batch ? 0 : (uint64_t)it * (uint64_t)v->opt.batch;

    UMADV_CHECK(umadv_iteration_begin(v->ctx));
    vgg_data(v, first);
    vgg_forward_loss(v, 1);
    vgg_update(v);
    CUDA_CHECK(cudaStreamSynchronize(v->stream));
    return *v->loss;
}

static umadv_stats_t stats_now(const vgg_t *v)
{
    umadv_stats_t st = {.size = sizeof(st)};

    UMADV_CHECK(umadv_get_stats(v->ctx, &st));
    return st;
}

/* One iteration's line: its loss, time, and what umadv moved during it
 * (bench/vgg.py reads the steady state from these). */
static void print_iteration(int it, double loss, double ms, const umadv_stats_t *before,
                            const umadv_stats_t *after)
{
    printf("iter %d loss %.9f ms %.3f fetched %" PRIu64 " evicted %" PRIu64 " staged %" PRIu64
           " restored %" PRIu64 " faults %" PRIu64 "\n", it, loss, ms,
           after->fetched_bytes - before->fetched_bytes,
           after->evicted_bytes - before->evicted_bytes,
           after->staged_bytes - before->staged_bytes,
           after->restored_bytes - before->restored_bytes, after->gpu_faults - before->gpu_faults);
}

/* --trace: the profile is saved once the timing pass (the iteration after
 * it) has given its steps their measured durations, which the next
 * iteration's begin applies; or at the end when fewer iterations follow. */
static void trace_save(vgg_t *v, int it)
{
    umadv_status_t status;
    int last = v->opt.profile_iter + 2 < v->opt.iters ? v->opt.profile_iter + 2 : v->opt.iters - 1;

    if (v->opt.trace == NULL || it != last)
        return;
    status = umadv_trace_save(v->ctx, v->opt.trace);
    if (status != UMADV_OK)
        example_die("umadv_trace_save %s: %s", v->opt.trace, umadv_status_string(status));
}

/* Returns 0, or 1 when --fixed-batch's loss did not fall. */
static int train(vgg_t *v)
{
    double first_loss = 0.0, loss = 0.0;

    for (int it = 0; it < v->opt.iters; it++) {
        umadv_stats_t before, after;
        double start;

        if (it == v->opt.profile_iter)
            UMADV_CHECK(umadv_profile_next_iteration(v->ctx));
        before = stats_now(v);
        start = now_ms();
        loss = iteration(v, it);
        after = stats_now(v);
        print_iteration(it, loss, now_ms() - start, &before, &after);
        fflush(stdout);
        if (!isfinite(loss))
            example_die("iteration %d: the loss is %g", it, loss);
        if (it == 0)
            first_loss = loss;
        if (it == v->opt.profile_iter)
            plan_after_profile(v);
        trace_save(v, it);
    }
    if (!v->opt.fixed_batch || v->opt.iters < 2)
        return 0;
    printf("fixed_batch loss first %.9f last %.9f %s\n", first_loss, loss,
           loss < first_loss ? "falls" : "DOES NOT FALL");
    return loss < first_loss ? 0 : 1;
}

int main(int argc, char **argv)
{
    static vgg_t v;
    vgg_footprint_t fp;
    int failed;

    example_cli_name(VGG_PROG);
    opts_parse(argc, argv, &v.opt);
    vgg_layout(&v);
    split_choose(&v);
    vgg_footprint(&v, &fp);
    print_header(&v);
    footprint_print(&fp);
    if (v.opt.footprint_only)
        return EXIT_SUCCESS;
    device_open(&v);
    vgg_setup(&v);
    printf("footprint workspace %zu (cuDNN, the most one layer's algorithms need)\n",
           v.workspace_bytes);
    vgg_footprint(&v, &fp);
    printf("largest_step %" PRIu64 " %s (with its cuDNN workspace)\n", fp.largest_step,
           fp.largest_name);
    fflush(stdout);
    context_open(&v, memory_check(fp.total + v.workspace_bytes));
    vgg_alloc(&v);
    vgg_init(&v);
    failed = v.opt.check_grad ? vgg_check_grad(&v) : train(&v);
    printf("digest 0x%016" PRIx64 "\n", vgg_digest(&v));
    print_summary(&v);
    vgg_free(&v);
    umadv_context_destroy(v.ctx);
    device_close(&v);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
