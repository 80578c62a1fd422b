/*
 * run_graph: a plain CUDA program (no umadv code) for
 * tests/test_run_graph_gpu.sh, where `umadv run` replays it: six buffers
 * of 16 MiB (cudaMalloc, or cudaMallocManaged with --alloc managed) and,
 * each iteration inside an NVTX range "iteration", a chain of six
 * kernels on a stream of its own, buffer j + 1 = 0.5 * buffer j + 1 +
 * buffer j (around the ring). From iteration --graph-from on, the
 * iteration is a CUDA graph of the same chain: captured there
 * (cudaStreamBeginCapture in global mode), then launched each
 * iteration; with --recapture, captured anew every iteration. The host
 * computes the same chain (halving is exact: the same bits) and
 * compares every buffer at the end.
 *
 * Prints the buffers' checksum and "buffers match", or the first float
 * that differs. Exit status: 0 done and matching, 1 a mismatch or a CUDA
 * error (a capture refused or invalidated among them), 2 usage error,
 * 77 no CUDA device.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "exec_gpu_kernels.h"

#define NBUF       6
#define BUF_FLOATS (4u << 20) /* 16 MiB */
#define EXIT_USAGE 2
#define EXIT_SKIP  77

typedef struct options {
    unsigned iters, graph_from;
    int      recapture, managed;
} options_t;

#define CHECK(_call) \
    do { \
        cudaError_t err_ = (_call); \
        if (err_ != cudaSuccess) { \
            fprintf(stderr, "run_graph: %s: %s\n", #_call, cudaGetErrorString(err_)); \
            exit(EXIT_FAILURE); \
        } \
    } while (0)

static void usage(const char *why)
{
    fprintf(stderr, "run_graph: %s\nusage: run_graph [--iters N] [--graph-from N] [--recapture] "
            "[--alloc managed|device]\n", why);
    exit(EXIT_USAGE);
}

static unsigned parse_count(const char *flag, const char *text)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v > 100000) {
        fprintf(stderr, "run_graph: %s: '%s' is not a number from 0 to 100000\n", flag, text);
        exit(EXIT_USAGE);
    }
    return (unsigned)v;
}

static void parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){.iters = 40, .graph_from = 20};
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--recapture") == 0) {
            o->recapture = 1;
            continue;
        }
        if (value == NULL)
            usage(argv[i][0] == '-' ? "an option lacks its value" : "unexpected argument");
        if (strcmp(argv[i], "--iters") == 0)
            o->iters = parse_count("--iters", value);
        else if (strcmp(argv[i], "--graph-from") == 0)
            o->graph_from = parse_count("--graph-from", value);
        else if (strcmp(argv[i], "--alloc") == 0 && strcmp(value, "managed") == 0)
            o->managed = 1;
        else if (strcmp(argv[i], "--alloc") == 0 && strcmp(value, "device") == 0)
            o->managed = 0;
        else
            usage("unknown option or value");
        i++;
    }
}

/* One iteration's chain on @stream (captured, when it captures). */
static void chain(float *const buf[NBUF], cudaStream_t stream)
{
    for (int j = 0; j < NBUF; j++) {
        if (exec_gpu_scale_add(buf[(j + 1) % NBUF], buf[j], BUF_FLOATS, 0.5f, stream) != 0)
            CHECK(cudaGetLastError());
    }
}

static void host_chain(float *const ref[NBUF])
{
    for (int j = 0; j < NBUF; j++)
        exec_host_scale_add(ref[(j + 1) % NBUF], ref[j], BUF_FLOATS, 0.5f);
}

static cudaGraphExec_t capture(float *const buf[NBUF], cudaStream_t stream)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;

    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    chain(buf, stream);
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    return exec;
}

/* The buffers: small integers, each buffer its own, on both sides. */
static void allocate(const options_t *o, float *buf[NBUF], float *ref[NBUF])
{
    for (int b = 0; b < NBUF; b++) {
        ref[b] = malloc(BUF_FLOATS * sizeof(float));
        if (ref[b] == NULL) {
            fprintf(stderr, "run_graph: out of host memory\n");
            exit(EXIT_FAILURE);
        }
        for (size_t i = 0; i < BUF_FLOATS; i++)
            ref[b][i] = (float)((i * 7 + (size_t)b * 13) % 97);
        if (o->managed)
            CHECK(cudaMallocManaged((void **)&buf[b], BUF_FLOATS * sizeof(float),
                                    cudaMemAttachGlobal));
        else
            CHECK(cudaMalloc((void **)&buf[b], BUF_FLOATS * sizeof(float)));
        CHECK(cudaMemcpy(buf[b], ref[b], BUF_FLOATS * sizeof(float), cudaMemcpyHostToDevice));
    }
}

/* FNV-1a over the host's buffers, and whether the GPU's hold the same
 * bits (the first that differs told). */
static int compare(float *const buf[NBUF], float *const ref[NBUF], uint64_t *sum_p)
{
    float *got = malloc(BUF_FLOATS * sizeof(float));
    uint64_t h = 0xcbf29ce484222325ull;
    int same = got != NULL;

    for (int b = 0; b < NBUF && same; b++) {
        const unsigned char *p = (const unsigned char *)ref[b];

        CHECK(cudaMemcpy(got, buf[b], BUF_FLOATS * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < BUF_FLOATS * sizeof(float); i++)
            h = (h ^ p[i]) * 0x100000001b3ull;
        for (size_t i = 0; i < BUF_FLOATS && same; i++) {
            same = memcmp(&got[i], &ref[b][i], sizeof(float)) == 0;
            if (!same)
                printf("buffer %d float %zu: %.9g, the host's %.9g\n", b, i, (double)got[i],
                       (double)ref[b][i]);
        }
    }
    free(got);
    *sum_p = h;
    return same;
}

int main(int argc, char **argv)
{
    options_t o;
    float *buf[NBUF], *ref[NBUF];
    cudaGraphExec_t exec = NULL;
    cudaStream_t stream;
    uint64_t sum;
    int count = 0, same;

    parse(argc, argv, &o);
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "run_graph: no CUDA device\n");
        return EXIT_SKIP;
    }
    allocate(&o, buf, ref);
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (unsigned it = 0; it < o.iters; it++) {
        nvtxRangePushA("iteration");
        if (it < o.graph_from) {
            chain(buf, stream);
        } else {
            if (exec == NULL || o.recapture) {
                if (exec != NULL)
                    CHECK(cudaGraphExecDestroy(exec));
                exec = capture(buf, stream);
            }
            CHECK(cudaGraphLaunch(exec, stream));
        }
        nvtxRangePop();
        host_chain(ref);
    }
    CHECK(cudaStreamSynchronize(stream));
    same = compare(buf, ref, &sum);
    printf("iterations %u, graphs from %u%s\n", o.iters, o.graph_from,
           o.recapture ? ", captured each" : "");
    printf("checksum 0x%016" PRIx64 "\n", sum);
    printf("%s\n", same ? "buffers match" : "buffers differ");
    if (exec != NULL)
        CHECK(cudaGraphExecDestroy(exec));
    for (int b = 0; b < NBUF; b++) {
        CHECK(cudaFree(buf[b]));
        free(ref[b]);
    }
    CHECK(cudaStreamDestroy(stream));
    return same ? EXIT_SUCCESS : EXIT_FAILURE;
}
