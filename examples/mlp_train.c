/*
 * mlp_train: trains a multi-layer perceptron on CUDA managed memory through
 * umadv's public API, as an application would.
 *
 * The network: --layers fully connected layers, hidden -> hidden with bias
 * and ReLU, the last one hidden -> classes, softmax cross-entropy, SGD with
 * momentum. The data: an endless synthetic classification stream made on
 * the GPU from a fixed seed; sample s has a uniform random label and its
 * features are unit noise plus the label's prototype, so the classes are
 * separable and the loss falls. Iteration i trains on samples i*batch ..
 * (i+1)*batch - 1.
 *
 * Memory, as a framework lays it out: weights, their gradients and the
 * momentum are persistent; the output of every layer is kept for backward
 * (persistent buffers, reused by every iteration), so at a large batch
 * the activations dominate; the gradient of each activation is transient,
 * allocated when backward reaches its layer and freed once the layer below
 * has consumed it, as PyTorch's autograd does (umadv's pool plays the
 * caching allocator).
 *
 * Every layer's forward, backward and update is one umadv step on the
 * training stream, with its accesses declared, all of them
 * (umadv_step_access_complete). Every buffer but the class prototypes is
 * marked stageable (umadv_set_stageable): only the steps' kernels touch
 * it, so umadv may evict it through pinned staging (UMADV_STAGE=0:
 * never). The weights, biases and momenta are also written outside any
 * step (initialised again for each run of --policies) and read there
 * (the checksum): staging is turned off around those, which restores
 * them; the prototypes are written only there. Iteration --profile-iter is
 * profiled and planned; the policy and budget come from UMADV_POLICY and
 * UMADV_BUDGET. Every kernel is deterministic (no atomics, fixed reduction
 * orders, FP32 cuBLAS without TF32), so the loss sequence and the checksum
 * of the final weights are bitwise the same under every policy.
 *
 * A long run (--budget-change N): every N iterations the budget changes,
 * through umadv_set_budget(), to a fraction of the footprint drawn at
 * random in --budget-range; the draws depend on --budget-seed and the
 * block of N iterations only, so every policy of --policies sees the same
 * sequence. After each block the program prints the executor's resident
 * peak against the budget in force; at the end, the managed bytes umadv
 * still holds after the model is freed and the GPU memory left in use
 * once the context is destroyed.
 */
#include <umadv.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "example_cli.h"
#include "mlp_kernels.h"

#define PROG "mlp_train"

/* Never ask for more managed memory than this share of the free memory:
 * oversubscribing a shared GPU can hang it. */
#define FREE_SHARE 0.9
#define BIAS_CHUNKS 64
#define DEFAULT_SECTION (UINT64_C(2) << 20)
#define DEFAULT_ARENA (UINT64_C(1) << 30)
#define MAX_RUNS 16

#define CUDA_CHECK(_call) check_cuda((_call), #_call, __LINE__)
#define BLAS_CHECK(_call) check_blas((_call), #_call, __LINE__)
#define UMADV_CHECK(_call) check_umadv((_call), #_call, __LINE__)

typedef struct mlp_opts {
    int         batch, hidden, layers, iters, classes, profile_iter;
    double      lr, momentum, separation;
    uint64_t    seed;
    int         footprint_only;
    const char *trace_path;
    umadv_policy_t policies[MAX_RUNS]; /* --policies; none: one run, UMADV_POLICY's */
    int         npolicies;
    int         budget_change;           /* iterations between budgets; 0: none */
    uint64_t    budget_seed;
    double      budget_lo, budget_hi;    /* fractions of the footprint */
} mlp_opts_t;

typedef struct mlp_layer {
    int    in, out;
    float *w, *b;    /* w is (out x in), column-major */
    float *dw, *db;
    float *vw, *vb;  /* momentum */
} mlp_layer_t;

/* Bytes by what they hold; transient is the peak of activation gradients. */
typedef struct mlp_footprint {
    uint64_t weights, gradients, optimizer, activations, input, workspace, transient;
    uint64_t total;
    unsigned blocks; /* persistent allocations */
} mlp_footprint_t;

typedef struct mlp {
    mlp_opts_t      opt;
    umadv_context_t ctx;
    cublasHandle_t  blas;
    cudaStream_t    stream;
    mlp_layer_t    *layer;
    float         **act;      /* act[0] the input, act[l + 1] layer l's output */
    int            *labels;
    float          *protos;   /* class prototypes, classes x hidden */
    float          *loss_rows;
    float          *partial;  /* bias-gradient partial sums */
    double         *loss;     /* per iteration, mapped host memory */
    double         *iter_ms;
    int             run;         /* runs so far: the first one profiles */
    int             steady_from; /* first iteration measured as steady state */
    umadv_stats_t   steady_start;/* counters when it began */
    uint64_t        footprint;   /* bytes the budget fractions are of */
    umadv_policy_t  policy;      /* of the run under way */
    uint64_t        budget_now;  /* set through umadv_set_budget(); 0: none */
    int             budgets_set, budgets_refused, blocks_over;
} mlp_t;

/* ---- errors ---------------------------------------------------------- */

static void check_cuda(cudaError_t err, const char *call, int line)
{
    if (err != cudaSuccess)
        example_die("%s failed (line %d): %s", call, line, cudaGetErrorString(err));
}

static void check_blas(cublasStatus_t status, const char *call, int line)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        example_die("%s failed (line %d): %s", call, line, cublasGetStatusString(status));
}

static void check_umadv(umadv_status_t status, const char *call, int line)
{
    if (status != UMADV_OK)
        example_die("%s failed (line %d): %s", call, line, umadv_status_string(status));
}

static const char *size_str(uint64_t bytes, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;

    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.2f %s", v, unit[u]);
    return buf;
}

/* ---- options --------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out,
        "usage: " PROG " [OPTION]...\n"
        "Train a multi-layer perceptron on CUDA managed memory through umadv.\n\n"
        "  --batch N          samples per iteration (default 4096)\n"
        "  --hidden N         width of every hidden layer and of the input (default 4096)\n"
        "  --layers N         fully connected layers, the last one to the classes (default 8)\n"
        "  --classes N        classes of the synthetic data set (default 10)\n"
        "  --iters N          training iterations (default 10)\n"
        "  --profile-iter N   iteration umadv profiles; the plan is built after it\n"
        "                     (default 1; iteration 0 warms up)\n"
        "  --lr X             learning rate (default 0.45/sqrt(hidden))\n"
        "  --momentum X       SGD momentum (default 0.9)\n"
        "  --seed N           seed of the data set and the initial weights (default 1)\n"
        "  --policies LIST    train once per policy of the comma-separated LIST, in this\n"
        "                     process, from the same initial weights: the first run\n"
        "                     profiles, the others switch with umadv_set_policy()\n"
        "                     (e.g. oracle,demand,prefetch-all,plan)\n"
        "  --budget-change N  every N iterations, a new budget through umadv_set_budget():\n"
        "                     a fraction of the footprint drawn from --budget-range, the\n"
        "                     same sequence for every policy (0: never, the default)\n"
        "  --budget-seed N    seed of those draws (default: --seed)\n"
        "  --budget-range LO,HI  the fractions drawn from (default 0.25,1)\n"
        "  --save-trace PATH  write the profiled iteration as an umadv trace (once the\n"
        "                     timing pass after it has measured the step durations)\n"
        "  --footprint        print the managed-memory footprint and exit (no GPU needed)\n"
        "  --help             show this help and exit\n\n"
        "Policy and budget come from umadv's knobs: UMADV_POLICY (oracle, demand,\n"
        "prefetch-all, plan), UMADV_BUDGET (e.g. 8G); see umadv(7).\n"
        "Prints 'run POLICY', then 'iter N loss X' per iteration, the checksum of\n"
        "the final weights, ms/iteration and umadv's counters, for every run.\n"
        "Exit status: 0 done, 1 failed, 2 usage error, 77 no CUDA device.\n");
}

enum { OPT_BATCH = 256, OPT_HIDDEN, OPT_LAYERS, OPT_CLASSES, OPT_ITERS, OPT_PROFILE,
       OPT_LR, OPT_MOMENTUM, OPT_SEED, OPT_POLICIES, OPT_TRACE, OPT_FOOTPRINT, OPT_HELP,
       OPT_BUDGET_CHANGE, OPT_BUDGET_SEED, OPT_BUDGET_RANGE };

static const struct option long_opts[] = {
    {"batch", required_argument, NULL, OPT_BATCH},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"classes", required_argument, NULL, OPT_CLASSES},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"profile-iter", required_argument, NULL, OPT_PROFILE},
    {"lr", required_argument, NULL, OPT_LR},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"seed", required_argument, NULL, OPT_SEED},
    {"policies", required_argument, NULL, OPT_POLICIES},
    {"save-trace", required_argument, NULL, OPT_TRACE},
    {"footprint", no_argument, NULL, OPT_FOOTPRINT},
    {"budget-change", required_argument, NULL, OPT_BUDGET_CHANGE},
    {"budget-seed", required_argument, NULL, OPT_BUDGET_SEED},
    {"budget-range", required_argument, NULL, OPT_BUDGET_RANGE},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}
};

static void opts_default(mlp_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->batch        = 4096;
    o->hidden       = 4096;
    o->layers       = 8;
    o->classes      = 10;
    o->iters        = 10;
    o->profile_iter = 1;
    o->lr           = 0.0; /* set from the width once it is known */
    o->momentum     = 0.9;
    o->separation   = 10.0;
    o->seed         = 1;
    o->budget_seed  = UINT64_MAX; /* --seed's, once parsed */
    o->budget_lo    = 0.25;
    o->budget_hi    = 1.0;
}

static void parse_policies(mlp_opts_t *o, const char *flag, const char *text)
{
    char name[64];
    const char *p = text;

    o->npolicies = 0;
    for (;;) {
        size_t len = strcspn(p, ",");

        if (o->npolicies == MAX_RUNS)
            example_usage_error("invalid value '%s' for --%s: at most %d policies", text, flag,
                        MAX_RUNS);
        snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : 0), p);
        if (umadv_policy_parse(name, &o->policies[o->npolicies]) != UMADV_OK)
            example_usage_error("invalid value '%s' for --%s: '%.*s' is not a policy (oracle, demand, "
                        "prefetch-all, plan)", text, flag, (int)len, p);
        o->npolicies++;
        if (p[len] == '\0')
            return;
        p += len + 1;
    }
}

/* LO,HI with 0 < LO <= HI <= 1. */
static void parse_range(mlp_opts_t *o, const char *flag, const char *text)
{
    char *end;

    errno = 0;
    o->budget_lo = strtod(text, &end);
    if (errno == 0 && end != text && *end == ',') {
        const char *hi = end + 1;
        o->budget_hi = strtod(hi, &end);
        if (errno == 0 && end != hi && *end == '\0' && o->budget_lo > 0.0 &&
            o->budget_lo <= o->budget_hi && o->budget_hi <= 1.0)
            return;
    }
    example_usage_error("invalid value '%s' for --%s: LO,HI, fractions of the footprint with "
                "0 < LO <= HI <= 1", text, flag);
}

/* One option; the flag's name for messages is long_opts[index]. */
static void opt_apply(mlp_opts_t *o, int c, const char *flag, const char *arg)
{
    switch (c) {
    case OPT_BATCH:     o->batch = (int)example_parse_int(flag, arg, 1, 1 << 24); break;
    case OPT_HIDDEN:    o->hidden = (int)example_parse_int(flag, arg, 1, 1 << 16); break;
    case OPT_LAYERS:    o->layers = (int)example_parse_int(flag, arg, 1, 1024); break;
    case OPT_CLASSES:   o->classes = (int)example_parse_int(flag, arg, 2, 1 << 16); break;
    case OPT_ITERS:     o->iters = (int)example_parse_int(flag, arg, 1, 1 << 24); break;
    case OPT_PROFILE:   o->profile_iter = (int)example_parse_int(flag, arg, 0, 1 << 24); break;
    case OPT_LR:        o->lr = example_parse_real(flag, arg, 1e-12, 1e3); break;
    case OPT_MOMENTUM:  o->momentum = example_parse_real(flag, arg, 0.0, 1.0); break;
    case OPT_SEED:      o->seed = (uint64_t)example_parse_int(flag, arg, 0, LLONG_MAX); break;
    case OPT_POLICIES:  parse_policies(o, flag, arg); break;
    case OPT_TRACE:     o->trace_path = arg; break;
    case OPT_FOOTPRINT: o->footprint_only = 1; break;
    case OPT_BUDGET_CHANGE: o->budget_change = (int)example_parse_int(flag, arg, 0, 1 << 24); break;
    case OPT_BUDGET_SEED:   o->budget_seed = (uint64_t)example_parse_int(flag, arg, 0, LLONG_MAX); break;
    case OPT_BUDGET_RANGE:  parse_range(o, flag, arg); break;
    }
}

static void opts_parse(int argc, char **argv, mlp_opts_t *o)
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
    if (o->profile_iter >= o->iters)
        example_usage_error("invalid value '%d' for --profile-iter: an iteration below --iters (%d)",
                    o->profile_iter, o->iters);
    if (o->budget_seed == UINT64_MAX)
        o->budget_seed = o->seed;
    /* Measured: 0.02 learns at width 512, 0.01 at 4096, 0.03 diverges there. */
    if (o->lr == 0.0)
        o->lr = 0.45 / sqrt((double)o->hidden);
}

/* ---- shapes and footprint -------------------------------------------- */

static int layer_out(const mlp_opts_t *o, int l)
{
    return l == o->layers - 1 ? o->classes : o->hidden;
}

static uint64_t floats(uint64_t rows, uint64_t cols)
{
    return rows * cols * sizeof(float);
}

/* The peak of activation gradients: the one a backward step reads and the
 * one it makes for the layer below (none below layer 0). */
static uint64_t transient_peak(const mlp_opts_t *o)
{
    uint64_t peak = floats((uint64_t)o->classes, (uint64_t)o->batch);

    for (int l = o->layers - 1; l > 0; l--) {
        uint64_t both = floats((uint64_t)layer_out(o, l) + (uint64_t)o->hidden,
                               (uint64_t)o->batch);
        peak = both > peak ? both : peak;
    }
    return peak;
}

static void footprint_compute(const mlp_opts_t *o, mlp_footprint_t *f)
{
    uint64_t b = (uint64_t)o->batch, h = (uint64_t)o->hidden, c = (uint64_t)o->classes;

    memset(f, 0, sizeof(*f));
    for (int l = 0; l < o->layers; l++) {
        uint64_t out = (uint64_t)layer_out(o, l);
        uint64_t params = floats(out, h) + floats(out, 1);
        f->weights     += params;
        f->gradients   += params;
        f->optimizer   += params;
        f->activations += floats(out, b);
    }
    f->input     = floats(h, b) + b * sizeof(int) + floats(c, h);
    f->workspace = floats(b, 1) + floats(BIAS_CHUNKS, h > c ? h : c);
    f->transient = transient_peak(o);
    f->total = f->weights + f->gradients + f->optimizer + f->activations + f->input +
               f->workspace + f->transient;
    /* six tensors a layer, its output, the input and four more */
    f->blocks = 7u * (unsigned)o->layers + 5u;
}

static void footprint_print(const mlp_opts_t *o, const mlp_footprint_t *f)
{
    char s[32];

    printf("footprint weights %" PRIu64 " (%s)\n", f->weights, size_str(f->weights, s, 32));
    printf("footprint gradients %" PRIu64 " (%s)\n", f->gradients, size_str(f->gradients, s, 32));
    printf("footprint optimizer %" PRIu64 " (%s)\n", f->optimizer, size_str(f->optimizer, s, 32));
    printf("footprint activations %" PRIu64 " (%s, %d layer outputs kept for backward)\n",
           f->activations, size_str(f->activations, s, 32), o->layers);
    printf("footprint input %" PRIu64 " (%s)\n", f->input, size_str(f->input, s, 32));
    printf("footprint workspace %" PRIu64 " (%s)\n", f->workspace, size_str(f->workspace, s, 32));
    printf("footprint transient %" PRIu64 " (%s, activation gradients at their peak)\n",
           f->transient, size_str(f->transient, s, 32));
    printf("footprint total %" PRIu64 " (%s)\n", f->total, size_str(f->total, s, 32));
}

/* ---- device and context ---------------------------------------------- */

static uint64_t env_size(const char *name, uint64_t dflt)
{
    const char *text = getenv(name);
    uint64_t v;

    /* A bad value is umadv's to report, when the context is created. */
    if (text == NULL || umadv_size_parse(text, &v) != UMADV_OK || v == 0)
        return dflt;
    return v;
}

/* Exit 77 without a device, so that test harnesses count a skip.
 * Returns the device. */
static int device_open(mlp_t *m)
{
    int device = example_cuda_device();

    CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    BLAS_CHECK(cublasCreate(&m->blas));
    BLAS_CHECK(cublasSetStream(m->blas, m->stream));
    /* Reproducible FP32: no TF32 or reduced precision, no atomics. */
    BLAS_CHECK(cublasSetMathMode(m->blas, CUBLAS_DEFAULT_MATH));
    BLAS_CHECK(cublasSetAtomicsMode(m->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    BLAS_CHECK(cublasSetPointerMode(m->blas, CUBLAS_POINTER_MODE_HOST));
    return device;
}

/* Refuse a run whose managed memory could exceed FREE_SHARE of the free
 * GPU memory: the footprint plus what the pool rounds and holds back
 * (a section per block, one partly used arena). Returns the cap. */
static uint64_t memory_check(const mlp_footprint_t *f, int device, uint64_t *used_p)
{
    uint64_t section = env_size("UMADV_SECTION_SIZE", DEFAULT_SECTION);
    uint64_t arena = env_size("UMADV_ARENA_SIZE", DEFAULT_ARENA);
    uint64_t need = f->total + (uint64_t)(f->blocks + 2) * section + arena;
    size_t free_b = 0, total_b = 0;
    uint64_t cap;
    char s1[32], s2[32], s3[32];

    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    cap = (uint64_t)(FREE_SHARE * (double)free_b);
    if (need > cap)
        example_die("this run needs up to %s of managed memory (footprint %s with the pool's "
            "rounding), more than %.0f%% of the %s free on device %d: use a smaller "
            "--batch, --hidden or --layers", size_str(need, s1, 32), size_str(f->total, s2, 32),
            FREE_SHARE * 100.0, size_str(free_b, s3, 32), device);
    *used_p = total_b - free_b;
    return cap;
}

/* The guard UMADV_MAX_MANAGED, set to the cap unless the user chose one. */
static void context_open(mlp_t *m, uint64_t cap)
{
    umadv_context_params_t params = {0};
    umadv_status_t status;

    if (getenv("UMADV_MAX_MANAGED") == NULL) {
        params.field_mask  = UMADV_CONTEXT_FIELD_MAX_MANAGED;
        params.max_managed = cap;
    }
    status = umadv_context_create(&params, &m->ctx);
    if (status == UMADV_ERR_NO_DEVICE) {
        fprintf(stderr, PROG ": umadv finds no usable CUDA device\n");
        exit(EXAMPLE_EXIT_SKIP);
    }
    if (status != UMADV_OK)
        example_die("umadv_context_create: %s", umadv_status_string(status));
}

/* ---- model ----------------------------------------------------------- */

/* Whether a buffer may be staged (umadv_set_stageable(3)): those the
 * CPU's code touches outside the steps may not. */
enum { KEEP = 0, STAGE = 1 };

static void *alloc(mlp_t *m, uint64_t bytes, const char *fmt, int index, int stage)
{
    char tag[64];
    void *p;
    umadv_status_t status;

    snprintf(tag, sizeof(tag), fmt, index);
    status = umadv_malloc(m->ctx, bytes, tag, &p);
    if (status != UMADV_OK)
        example_die("umadv_malloc(%" PRIu64 " bytes, %s): %s", bytes, tag, umadv_status_string(status));
    if (stage)
        UMADV_CHECK(umadv_set_stageable(m->ctx, p, 1));
    return p;
}

static void layer_alloc(mlp_t *m, int l)
{
    mlp_layer_t *ly = &m->layer[l];
    uint64_t nw = floats((uint64_t)ly->out, (uint64_t)ly->in), nb = floats((uint64_t)ly->out, 1);

    ly->w  = alloc(m, nw, "fc%d.weight", l, STAGE);
    ly->b  = alloc(m, nb, "fc%d.bias", l, STAGE);
    ly->dw = alloc(m, nw, "fc%d.weight.grad", l, STAGE);
    ly->db = alloc(m, nb, "fc%d.bias.grad", l, STAGE);
    ly->vw = alloc(m, nw, "fc%d.weight.momentum", l, STAGE);
    ly->vb = alloc(m, nb, "fc%d.bias.momentum", l, STAGE);
}

static void model_alloc(mlp_t *m)
{
    const mlp_opts_t *o = &m->opt;
    uint64_t b = (uint64_t)o->batch;
    int wide = o->hidden > o->classes ? o->hidden : o->classes;

    m->layer = calloc((size_t)o->layers, sizeof(*m->layer));
    m->act = calloc((size_t)o->layers + 1, sizeof(*m->act));
    m->iter_ms = calloc((size_t)o->iters, sizeof(*m->iter_ms));
    if (m->layer == NULL || m->act == NULL || m->iter_ms == NULL)
        example_die("out of host memory");
    for (int l = 0; l < o->layers; l++) {
        m->layer[l].in  = o->hidden;
        m->layer[l].out = layer_out(o, l);
        layer_alloc(m, l);
    }
    m->act[0] = alloc(m, floats((uint64_t)o->hidden, b), "input", 0, STAGE);
    for (int l = 0; l < o->layers; l++)
        m->act[l + 1] = alloc(m, floats((uint64_t)layer_out(o, l), b), "fc%d.out", l, STAGE);
    m->labels    = alloc(m, b * sizeof(int), "labels", 0, STAGE);
    m->protos    = alloc(m, floats((uint64_t)o->classes, (uint64_t)o->hidden), "prototypes", 0,
                       KEEP);
    m->loss_rows = alloc(m, floats(b, 1), "loss", 0, STAGE);
    m->partial   = alloc(m, floats(BIAS_CHUNKS, (uint64_t)wide), "bias-grad.partial", 0, STAGE);
    CUDA_CHECK(cudaHostAlloc((void **)&m->loss, (size_t)o->iters * sizeof(double),
                             cudaHostAllocMapped));
}

/* The weights, biases and momenta stageable or not: off, umadv restores
 * what it staged of them, so that work outside the steps may touch them. */
static void params_stageable(mlp_t *m, int on)
{
    for (int l = 0; l < m->opt.layers; l++) {
        mlp_layer_t *ly = &m->layer[l];
        float *p[] = {ly->w, ly->b, ly->vw, ly->vb};
        for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
            UMADV_CHECK(umadv_set_stageable(m->ctx, p[i], on));
    }
}

/* He-uniform hidden layers; the classifier starts at zero, so the first
 * loss is exactly log(classes). Seeds: one per tensor, from the run's. */
static void model_init(mlp_t *m)
{
    const mlp_opts_t *o = &m->opt;
    cudaStream_t s = m->stream;

    for (int l = 0; l < o->layers; l++) {
        mlp_layer_t *ly = &m->layer[l];
        size_t nw = (size_t)ly->out * (size_t)ly->in;
        float scale = l == o->layers - 1 ? 0.0f : (float)sqrt(6.0 / ly->in);

        CUDA_CHECK(mlp_fill_uniform(ly->w, nw, scale, o->seed * 1000003u + 17u + (uint64_t)l, s));
        CUDA_CHECK(cudaMemsetAsync(ly->b, 0, (size_t)ly->out * sizeof(float), s));
        CUDA_CHECK(cudaMemsetAsync(ly->vw, 0, nw * sizeof(float), s));
        CUDA_CHECK(cudaMemsetAsync(ly->vb, 0, (size_t)ly->out * sizeof(float), s));
    }
    /* Prototypes of length separation across the features, whatever the width. */
    CUDA_CHECK(mlp_fill_uniform(m->protos, (size_t)o->classes * (size_t)o->hidden,
                                (float)(1.7320508 * o->separation / sqrt((double)o->hidden)),
                                o->seed * 1000003u + 7u, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
}

static void model_free(mlp_t *m)
{
    for (int l = 0; l < m->opt.layers; l++) {
        mlp_layer_t *ly = &m->layer[l];
        float *p[] = {ly->w, ly->b, ly->dw, ly->db, ly->vw, ly->vb};
        for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
            UMADV_CHECK(umadv_free(m->ctx, p[i]));
    }
    for (int l = 0; l <= m->opt.layers; l++)
        UMADV_CHECK(umadv_free(m->ctx, m->act[l]));
    UMADV_CHECK(umadv_free(m->ctx, m->labels));
    UMADV_CHECK(umadv_free(m->ctx, m->protos));
    UMADV_CHECK(umadv_free(m->ctx, m->loss_rows));
    UMADV_CHECK(umadv_free(m->ctx, m->partial));
    CUDA_CHECK(cudaFreeHost(m->loss));
    free(m->layer);
    free(m->act);
    free(m->iter_ms);
}

/* ---- steps ----------------------------------------------------------- */

static void step_begin(mlp_t *m, const char *fmt, int layer)
{
    char name[64];

    snprintf(name, sizeof(name), fmt, layer);
    UMADV_CHECK(umadv_step_begin(m->ctx, name, m->stream));
    /* every step declares all it touches: the profile takes it at its word */
    UMADV_CHECK(umadv_step_access_complete(m->ctx));
}

static void uses(mlp_t *m, const void *p, uint64_t bytes, umadv_access_mode_t mode)
{
    UMADV_CHECK(umadv_step_access(m->ctx, p, bytes, mode));
}

static void step_end(mlp_t *m)
{
    UMADV_CHECK(umadv_step_end(m->ctx, 0));
}

/* C (rows x cols) = op(A) op(B), FP32 in and out, FP32 compute. */
static void gemm(mlp_t *m, cublasOperation_t ta, cublasOperation_t tb, int rows, int cols,
                 int inner, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
    const float one = 1.0f, zero = 0.0f;

    BLAS_CHECK(cublasGemmEx(m->blas, ta, tb, rows, cols, inner, &one, a, CUDA_R_32F, lda, b,
                            CUDA_R_32F, ldb, &zero, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

static void step_data(mlp_t *m, int it)
{
    const mlp_opts_t *o = &m->opt;
    uint64_t b = (uint64_t)o->batch;

    step_begin(m, "data", 0);
    uses(m, m->protos, floats((uint64_t)o->classes, (uint64_t)o->hidden), UMADV_ACCESS_READ);
    uses(m, m->act[0], floats((uint64_t)o->hidden, b), UMADV_ACCESS_WRITE);
    uses(m, m->labels, b * sizeof(int), UMADV_ACCESS_WRITE);
    CUDA_CHECK(mlp_gen_batch(m->act[0], m->labels, m->protos, o->hidden, o->classes, o->batch,
                             (uint64_t)it * b, o->seed, m->stream));
    step_end(m);
}

/* act[l + 1] = act(W act[l] + b) */
static void step_forward(mlp_t *m, int l)
{
    mlp_layer_t *ly = &m->layer[l];
    int batch = m->opt.batch, relu = l < m->opt.layers - 1;

    step_begin(m, "fc%d.forward", l);
    uses(m, ly->w, floats((uint64_t)ly->out, (uint64_t)ly->in), UMADV_ACCESS_READ);
    uses(m, ly->b, floats((uint64_t)ly->out, 1), UMADV_ACCESS_READ);
    uses(m, m->act[l], floats((uint64_t)ly->in, (uint64_t)batch), UMADV_ACCESS_READ);
    uses(m, m->act[l + 1], floats((uint64_t)ly->out, (uint64_t)batch), UMADV_ACCESS_WRITE);
    gemm(m, CUBLAS_OP_N, CUBLAS_OP_N, ly->out, batch, ly->in, ly->w, ly->out, m->act[l],
         ly->in, m->act[l + 1], ly->out);
    CUDA_CHECK(mlp_bias_act(m->act[l + 1], ly->b, ly->out, batch, relu, m->stream));
    step_end(m);
}

/* The loss into m->loss[it]; returns the gradient of the logits (transient). */
static float *step_loss(mlp_t *m, int it)
{
    const mlp_opts_t *o = &m->opt;
    uint64_t b = (uint64_t)o->batch, logits = floats((uint64_t)o->classes, b);
    float *dlogits;

    step_begin(m, "loss", 0);
    dlogits = alloc(m, logits, "fc%d.out.grad", o->layers - 1, STAGE);
    uses(m, m->act[o->layers], logits, UMADV_ACCESS_READ);
    uses(m, m->labels, b * sizeof(int), UMADV_ACCESS_READ);
    uses(m, m->loss_rows, floats(b, 1), UMADV_ACCESS_WRITE);
    uses(m, dlogits, logits, UMADV_ACCESS_WRITE);
    CUDA_CHECK(mlp_softmax_xent(m->act[o->layers], m->labels, o->classes, o->batch,
                                m->loss_rows, dlogits, m->stream));
    CUDA_CHECK(mlp_mean(m->loss_rows, o->batch, &m->loss[it], m->stream));
    step_end(m);
    return dlogits;
}

/* Gradients of layer l from @dy, the gradient of its output; returns the
 * gradient of its input (NULL for the first layer) and frees @dy. */
static float *step_backward(mlp_t *m, int l, float *dy)
{
    mlp_layer_t *ly = &m->layer[l];
    int batch = m->opt.batch, relu = l < m->opt.layers - 1;
    uint64_t out_bytes = floats((uint64_t)ly->out, (uint64_t)batch);
    uint64_t in_bytes = floats((uint64_t)ly->in, (uint64_t)batch);
    float *dx = NULL;

    step_begin(m, "fc%d.backward", l);
    if (l > 0)
        dx = alloc(m, in_bytes, "fc%d.out.grad", l - 1, STAGE);
    uses(m, ly->w, floats((uint64_t)ly->out, (uint64_t)ly->in), UMADV_ACCESS_READ);
    uses(m, m->act[l], in_bytes, UMADV_ACCESS_READ);
    if (relu)
        uses(m, m->act[l + 1], out_bytes, UMADV_ACCESS_READ);
    uses(m, dy, out_bytes, relu ? UMADV_ACCESS_RW : UMADV_ACCESS_READ);
    uses(m, ly->dw, floats((uint64_t)ly->out, (uint64_t)ly->in), UMADV_ACCESS_WRITE);
    uses(m, ly->db, floats((uint64_t)ly->out, 1), UMADV_ACCESS_WRITE);
    uses(m, m->partial, floats(BIAS_CHUNKS, (uint64_t)ly->out), UMADV_ACCESS_RW);
    if (dx != NULL)
        uses(m, dx, in_bytes, UMADV_ACCESS_WRITE);
    if (relu)
        CUDA_CHECK(mlp_relu_backward(dy, m->act[l + 1], (size_t)ly->out * (size_t)batch,
                                     m->stream));
    gemm(m, CUBLAS_OP_N, CUBLAS_OP_T, ly->out, ly->in, batch, dy, ly->out, m->act[l], ly->in,
         ly->dw, ly->out);
    CUDA_CHECK(mlp_bias_grad(dy, ly->out, batch, m->partial, BIAS_CHUNKS, ly->db, m->stream));
    if (dx != NULL)
        gemm(m, CUBLAS_OP_T, CUBLAS_OP_N, ly->in, batch, ly->out, ly->w, ly->out, dy, ly->out,
             dx, ly->in);
    /* Stream order keeps the block alive for the kernels queued above. */
    UMADV_CHECK(umadv_free(m->ctx, dy));
    step_end(m);
    return dx;
}

static void step_update(mlp_t *m, int l)
{
    mlp_layer_t *ly = &m->layer[l];
    uint64_t nw = (uint64_t)ly->out * (uint64_t)ly->in, nb = (uint64_t)ly->out;
    float lr = (float)m->opt.lr, mu = (float)m->opt.momentum;

    step_begin(m, "fc%d.update", l);
    uses(m, ly->w, nw * sizeof(float), UMADV_ACCESS_RW);
    uses(m, ly->b, nb * sizeof(float), UMADV_ACCESS_RW);
    uses(m, ly->vw, nw * sizeof(float), UMADV_ACCESS_RW);
    uses(m, ly->vb, nb * sizeof(float), UMADV_ACCESS_RW);
    uses(m, ly->dw, nw * sizeof(float), UMADV_ACCESS_READ);
    uses(m, ly->db, nb * sizeof(float), UMADV_ACCESS_READ);
    CUDA_CHECK(mlp_sgd(ly->w, ly->vw, ly->dw, nw, lr, mu, m->stream));
    CUDA_CHECK(mlp_sgd(ly->b, ly->vb, ly->db, nb, lr, mu, m->stream));
    step_end(m);
}

static void iteration(mlp_t *m, int it)
{
    int layers = m->opt.layers;
    float *grad;

    UMADV_CHECK(umadv_iteration_begin(m->ctx));
    step_data(m, it);
    for (int l = 0; l < layers; l++)
        step_forward(m, l);
    grad = step_loss(m, it);
    for (int l = layers - 1; l >= 0; l--)
        grad = step_backward(m, l, grad);
    for (int l = 0; l < layers; l++)
        step_update(m, l);
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
static void plan_after_profile(mlp_t *m)
{
    umadv_status_t status = umadv_plan(m->ctx);

    if (status != UMADV_OK)
        fprintf(stderr, PROG ": umadv_plan: %s: training goes on without a plan\n",
                umadv_status_string(status));
}

/* After the first run: by then the timing pass has replaced the profiled
 * durations (fault stalls included) with measured ones. */
static void save_trace(mlp_t *m)
{
    umadv_status_t status;

    if (m->opt.trace_path == NULL || m->run != 0)
        return;
    status = umadv_trace_save(m->ctx, m->opt.trace_path);
    if (status != UMADV_OK)
        example_die("umadv_trace_save(%s): %s", m->opt.trace_path, umadv_status_string(status));
}

/* GPU memory in use (all processes) at the end of the iteration. */
static uint64_t gpu_used(void)
{
    size_t free_b = 0, total_b = 0;

    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return total_b - free_b;
}

/* Steady state starts one iteration after the first replayed one: that
 * first replay still moves the data from where profiling (or the previous
 * policy) left it. A run after the first replays from its iteration 0. */
static int steady_first(const mlp_t *m)
{
    const mlp_opts_t *o = &m->opt;
    int first = m->run == 0 ? o->profile_iter + 2 : 1;

    if (first < o->iters)
        return first;
    return m->run == 0 ? o->profile_iter + 1 : 0;
}

/* ---- budget changes ---------------------------------------------------- */

/* splitmix64: a fixed, portable sequence (examples/torch_train.py draws the
 * same way; tests/test_bench_scripts.sh compares the two). */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The budget of block @k: a fraction of the footprint drawn uniformly
 * from the range, whole MiB. Depends on the seed and @k only. */
static uint64_t block_budget(const mlp_t *m, int k)
{
    const mlp_opts_t *o = &m->opt;
    double u = (double)(mix64(o->budget_seed * 1000003u + (uint64_t)k) >> 11) * 0x1p-53;
    double frac = o->budget_lo + u * (o->budget_hi - o->budget_lo);
    uint64_t mib = (uint64_t)(frac * (double)m->footprint) >> 20;

    return (mib > 0 ? mib : 1) << 20;
}

/* The executor's resident peak against the budget of the block that ends
 * (its executor began with the block; oracle keeps no budget). */
static void block_report(mlp_t *m, int k)
{
    umadv_stats_t st = {.size = sizeof(st)};
    int within;

    UMADV_CHECK(umadv_get_stats(m->ctx, &st));
    within = st.resident_peak <= m->budget_now;
    if (!within && m->policy != UMADV_POLICY_ORACLE)
        m->blocks_over++;
    printf("budget_block %d budget %" PRIu64 " resident_peak %" PRIu64 " %s\n", k,
           m->budget_now, st.resident_peak,
           m->policy == UMADV_POLICY_ORACLE ? "oracle" : within ? "within" : "OVER");
}

/* At the start of iteration @it: a new block, a new budget. A refused one
 * (a step needs more) leaves the old budget in force. */
static void budget_step(mlp_t *m, int it)
{
    int n = m->opt.budget_change, k;
    uint64_t want;
    umadv_status_t status;

    if (n == 0 || it % n != 0)
        return;
    k = it / n;
    if (it > 0)
        block_report(m, k - 1);
    want = block_budget(m, k);
    if (want == m->budget_now)
        return;
    status = umadv_set_budget(m->ctx, want);
    if (status == UMADV_ERR_BUDGET_TOO_SMALL) {
        m->budgets_refused++;
        printf("budget_refused %d %" PRIu64 " (budget stays %" PRIu64 ")\n", k, want,
               m->budget_now);
        return;
    }
    if (status != UMADV_OK)
        example_die("umadv_set_budget(%" PRIu64 "): %s", want, umadv_status_string(status));
    m->budget_now = want;
    m->budgets_set++;
    printf("budget_set %d %" PRIu64 " at iter %d\n", k, want, it);
}

/* --footprint with --budget-change: the budgets a run would draw. */
static void budget_draws(const mlp_t *m)
{
    int n = m->opt.budget_change;

    for (int k = 0; n > 0 && k <= (m->opt.iters - 1) / n; k++)
        printf("budget_draw %d %" PRIu64 "\n", k, block_budget(m, k));
}

static void train(mlp_t *m, uint64_t *used_peak_p)
{
    uint64_t used_peak = 0, used;
    int profile_iter = m->run == 0 ? m->opt.profile_iter : -1;

    m->steady_from = steady_first(m);
    m->steady_start.size = sizeof(m->steady_start);
    for (int it = 0; it < m->opt.iters; it++) {
        double start;

        if (it == profile_iter)
            UMADV_CHECK(umadv_profile_next_iteration(m->ctx));
        if (it == m->steady_from)
            UMADV_CHECK(umadv_get_stats(m->ctx, &m->steady_start));
        budget_step(m, it);
        start = now_ms();
        iteration(m, it);
        CUDA_CHECK(cudaStreamSynchronize(m->stream));
        m->iter_ms[it] = now_ms() - start;
        used = gpu_used();
        used_peak = used > used_peak ? used : used_peak;
        printf("iter %d loss %.9f\n", it, m->loss[it]);
        fflush(stdout);
        if (it == profile_iter)
            plan_after_profile(m);
    }
    if (m->opt.budget_change > 0)
        block_report(m, (m->opt.iters - 1) / m->opt.budget_change);
    *used_peak_p = used_peak;
}

/* ---- results --------------------------------------------------------- */

static void hash_tensor(mlp_t *m, const float *p, size_t n, uint64_t *dev, uint64_t *host,
                        uint64_t *h)
{
    size_t chunks = (n + MLP_HASH_CHUNK - 1) / MLP_HASH_CHUNK;

    CUDA_CHECK(mlp_hash(p, n, dev, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(host, dev, chunks * sizeof(*dev), cudaMemcpyDeviceToHost,
                               m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    for (size_t c = 0; c < chunks; c++)
        *h = (*h ^ host[c]) * 0x100000001b3ull;
}

/* A hash of the bits of every weight and bias, in layer order: equal
 * checksums mean bitwise equal models. */
static uint64_t checksum(mlp_t *m)
{
    size_t wide = (size_t)(m->opt.hidden > m->opt.classes ? m->opt.hidden : m->opt.classes);
    size_t chunks = wide * (size_t)m->opt.hidden / MLP_HASH_CHUNK + 1;
    uint64_t h = 0xcbf29ce484222325ull, *dev, *host = malloc(chunks * sizeof(*host));

    if (host == NULL)
        example_die("out of host memory");
    CUDA_CHECK(cudaMalloc((void **)&dev, chunks * sizeof(*dev)));
    for (int l = 0; l < m->opt.layers; l++) {
        mlp_layer_t *ly = &m->layer[l];
        hash_tensor(m, ly->w, (size_t)ly->out * (size_t)ly->in, dev, host, &h);
        hash_tensor(m, ly->b, (size_t)ly->out, dev, host, &h);
    }
    CUDA_CHECK(cudaFree(dev));
    free(host);
    return h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median time of the steady-state iterations (replay). */
static void print_times(const mlp_t *m)
{
    int first = m->steady_from, n = m->opt.iters - first;
    double *sorted;

    int profiled = m->run == 0 ? m->opt.profile_iter : -1;

    printf("iter_ms");
    for (int it = 0; it < m->opt.iters; it++)
        printf(" %.3f%s", m->iter_ms[it], it == profiled ? "*" : "");
    printf("%s\n", profiled >= 0 ? " (* profiled)" : "");
    if (n <= 0) {
        printf("ms_per_iter n/a (no iteration after the profiled one)\n");
        return;
    }
    sorted = malloc((size_t)n * sizeof(*sorted));
    if (sorted == NULL)
        example_die("out of host memory");
    memcpy(sorted, m->iter_ms + first, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), cmp_double);
    printf("ms_per_iter %.3f (median of %d steady-state iteration%s)\n",
           n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0, n,
           n == 1 ? "" : "s");
    {
        double sum = 0.0;
        for (int i = 0; i < n; i++)
            sum += sorted[i];
        printf("ms_mean %.3f (mean of the same)\n", sum / n);
    }
    free(sorted);
}

static void print_bytes(const char *key, uint64_t bytes, const char *note)
{
    char s[32];

    printf("%s %" PRIu64 " (%s%s)\n", key, bytes, size_str(bytes, s, sizeof(s)), note);
}

/* Counters are the context's, since it began; print_steady has the run's. */
static void print_stats(const mlp_t *m, uint64_t used_base, uint64_t used_peak)
{
    umadv_stats_t st = {.size = sizeof(st)};

    UMADV_CHECK(umadv_get_stats(m->ctx, &st));
    print_bytes("budget", env_size("UMADV_BUDGET", 0), ", UMADV_BUDGET; 0: none");
    print_bytes("managed_peak", st.managed_peak, ", allocated through umadv");
    print_bytes("fetched_bytes", st.fetched_bytes, ", prefetched to the GPU");
    print_bytes("evicted_bytes", st.evicted_bytes, ", prefetched to the host");
    print_bytes("staged_bytes", st.staged_bytes, ", copied to pinned host staging");
    print_bytes("restored_bytes", st.restored_bytes, ", copied back from the staging");
    printf("gpu_faults %" PRIu64 "\n", st.gpu_faults);
    print_bytes("gpu_peak_used", st.gpu_peak_used, ", umadv's monitor; 0: not measured");
    print_bytes("gpu_used_at_iter_end", used_peak > used_base ? used_peak - used_base : 0,
                ", peak of cudaMemGetInfo at iteration ends, above the start");
}

/* What one steady-state iteration moved and faulted, on average: the
 * benchmark's per-iteration columns. */
static void print_steady(const mlp_t *m)
{
    umadv_stats_t end = {.size = sizeof(end)};
    const umadv_stats_t *b = &m->steady_start;
    int n = m->opt.iters - m->steady_from;

    if (n <= 0 || m->steady_from <= 0)
        return;
    UMADV_CHECK(umadv_get_stats(m->ctx, &end));
    printf("steady_iters %d\n", n);
    printf("steady_fetched_per_iter %" PRIu64 "\n", (end.fetched_bytes - b->fetched_bytes) / n);
    printf("steady_evicted_per_iter %" PRIu64 "\n", (end.evicted_bytes - b->evicted_bytes) / n);
    /* through the staging, apart from UVM's migrations above */
    printf("steady_staged_per_iter %" PRIu64 "\n", (end.staged_bytes - b->staged_bytes) / n);
    printf("steady_restored_per_iter %" PRIu64 "\n", (end.restored_bytes - b->restored_bytes) / n);
    printf("steady_faults_per_iter %.1f\n", (double)(end.gpu_faults - b->gpu_faults) / n);
    printf("steady_wait_ms_per_iter %.3f\n", (double)(end.wait_ns - b->wait_ns) / 1e6 / n);
    printf("resident_peak %" PRIu64 "\n", end.resident_peak);
}

static void print_header(const mlp_opts_t *o)
{
    printf(PROG ": %d layers (%d -> %d ... -> %d), batch %d, %d classes, lr %g, "
           "momentum %g, seed %" PRIu64 "\n", o->layers, o->hidden, o->hidden, o->classes,
           o->batch, o->classes, o->lr, o->momentum, o->seed);
}

static void print_device(uint64_t cap)
{
    struct cudaDeviceProp prop;
    size_t free_b = 0, total_b = 0;
    int device = 0;
    char s1[32], s2[32], s3[32];

    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    printf("device %d: %s, %s free of %s, managed memory capped at %s\n", device, prop.name,
           size_str(free_b, s1, 32), size_str(total_b, s2, 32), size_str(cap, s3, 32));
}

/* Run @m->run under the policy --policies gives it: the first sets it
 * before the profile; later ones switch, which plans again. Returns 0 when
 * umadv refuses the policy (the budget too small for it): no run. */
static int run_policy(mlp_t *m)
{
    umadv_policy_t policy;
    umadv_status_t status;
    const char *env = getenv("UMADV_POLICY");

    if (m->opt.npolicies == 0) {
        printf("run %s\n", env != NULL ? env : "default");
        if (env == NULL || umadv_policy_parse(env, &m->policy) != UMADV_OK)
            m->policy = UMADV_POLICY_PLAN; /* umadv's default (umadv(7)) */
        return 1;
    }
    policy = m->opt.policies[m->run];
    m->policy = policy;
    printf("run %s\n", umadv_policy_name(policy));
    /* The first block's budget before the switch, which plans with it. */
    if (m->run > 0)
        budget_step(m, 0);
    status = umadv_set_policy(m->ctx, policy);
    if (status == UMADV_ERR_BUDGET_TOO_SMALL) {
        printf("run_skipped %s\n", umadv_status_string(status));
        return 0;
    }
    if (status != UMADV_OK)
        example_die("umadv_set_policy(%s): %s", umadv_policy_name(policy), umadv_status_string(status));
    return 1;
}

/* One training from the initial weights, and its results. */
static void run(mlp_t *m, uint64_t used_base)
{
    uint64_t used_peak = 0;

    m->budgets_set = m->budgets_refused = m->blocks_over = 0;
    if (run_policy(m)) {
        if (m->run > 0) {
            params_stageable(m, 0);
            model_init(m);
            params_stageable(m, 1);
        }
        train(m, &used_peak);
        save_trace(m);
        print_times(m);
        print_stats(m, used_base, used_peak);
        print_steady(m);
        /* last: restoring the parameters may pass the budget */
        params_stageable(m, 0);
        printf("checksum 0x%016" PRIx64 "\n", checksum(m));
        params_stageable(m, 1);
        if (m->opt.budget_change > 0)
            printf("budgets set %d refused %d blocks_over %d\n", m->budgets_set,
                   m->budgets_refused, m->blocks_over);
    }
    fflush(stdout);
    m->run++;
}

/* What umadv still holds once every block is freed (its counters), then
 * the GPU memory in use above the start once the context is destroyed
 * (cudaMemGetInfo; cuBLAS's workspace, made at the first product, stays). */
static void exit_report(mlp_t *m, uint64_t used_base)
{
    umadv_stats_t st = {.size = sizeof(st)};
    uint64_t used;

    UMADV_CHECK(umadv_get_stats(m->ctx, &st));
    printf("managed_left %" PRIu64 " bytes in %" PRIu64 " blocks (after freeing the model)\n",
           st.managed_bytes, st.allocations);
    umadv_context_destroy(m->ctx);
    CUDA_CHECK(cudaDeviceSynchronize());
    used = gpu_used();
    printf("gpu_used_after_destroy %" PRId64 " bytes above the start\n",
           (int64_t)(used - used_base));
}

int main(int argc, char **argv)
{
    mlp_t m = {0};
    mlp_footprint_t fp;
    uint64_t cap, used_base;
    int runs;

    example_cli_name(PROG);
    opts_parse(argc, argv, &m.opt);
    footprint_compute(&m.opt, &fp);
    print_header(&m.opt);
    footprint_print(&m.opt, &fp);
    m.footprint = fp.total;
    if (m.opt.footprint_only) {
        budget_draws(&m);
        return EXIT_SUCCESS;
    }
    cap = memory_check(&fp, device_open(&m), &used_base);
    print_device(cap);
    fflush(stdout);
    context_open(&m, cap);
    model_alloc(&m);
    model_init(&m);
    runs = m.opt.npolicies > 0 ? m.opt.npolicies : 1;
    while (m.run < runs)
        run(&m, used_base);
    model_free(&m);
    exit_report(&m, used_base);
    BLAS_CHECK(cublasDestroy(m.blas));
    CUDA_CHECK(cudaStreamDestroy(m.stream));
    return EXIT_SUCCESS;
}
