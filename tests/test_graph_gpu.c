/*
 * CUDA graphs under a staged replay on a real GPU (umadv(7), STREAM
 * CAPTURE; skipped without one). Six blocks of 16 MiB from umadv_malloc,
 * marked stageable, under a budget of three: each iteration a chain of
 * six kernels on a stream of the test's own, buffer j + 1 = 0.5 *
 * buffer j + 1 + buffer j around the ring, its steps the launches
 * (automatic steps). Iteration 1 is profiled and planned, and the replay
 * stages. At iteration CAPTURE_AT, while the replay runs, the chain is
 * captured into a graph in global mode, and from then on the graph is
 * launched: the capture must not be refused or invalidated by umadv's
 * calls, the captured launches are no steps, and the graph's launch must
 * find every staged byte restored. The host computes the same chain
 * (halving is exact: the same bits) and every buffer must end with them.
 * (tests/test_run_graph_gpu.sh runs a plain CUDA program so under umadv
 * run, whose routed memory is never staged.)
 */
#include <umadv.h>

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "api/context.h"
#include "common/util.h"
#include "exec_gpu_kernels.h"
#include "tap.h"
#include "testutil.h"

#define NBUF       6
#define BUF_FLOATS (UINT64_C(4) << 20) /* 16 MiB */
#define ITERS      24
#define PROFILE_AT 1
#define CAPTURE_AT 12

typedef struct chain {
    umadv_context_t ctx;
    cudaStream_t    stream;
    float          *buf[NBUF], *ref[NBUF];
    cudaGraphExec_t graph;
    int             launch_errors;
    cudaError_t     capture_status; /* the first failure of the capture, or success */
} chain_t;

static void chain_launch(chain_t *c)
{
    for (int j = 0; j < NBUF; j++)
        c->launch_errors += exec_gpu_scale_add(c->buf[(j + 1) % NBUF], c->buf[j], BUF_FLOATS,
                                               0.5f, c->stream) != 0;
}

static void host_chain(chain_t *c)
{
    for (int j = 0; j < NBUF; j++)
        exec_host_scale_add(c->ref[(j + 1) % NBUF], c->ref[j], BUF_FLOATS, 0.5f);
}

/* The chain captured in global mode and instantiated; the first failure
 * kept in capture_status. */
static void capture(chain_t *c)
{
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeGlobal);

    if (err == cudaSuccess) {
        chain_launch(c);
        err = cudaStreamEndCapture(c->stream, &graph);
    }
    if (err == cudaSuccess)
        err = cudaGraphInstantiate(&c->graph, graph, 0);
    if (graph != NULL)
        cudaGraphDestroy(graph);
    c->capture_status = err;
}

static int setup(chain_t *c)
{
    memset(c, 0, sizeof(*c));
    setenv("UMADV_BUDGET", "48M", 1);
    setenv("UMADV_POLICY", "plan", 1);
    if (umadv_context_create(NULL, &c->ctx) != UMADV_OK || c->ctx->profiler == NULL ||
        cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) != cudaSuccess)
        return 0;
    for (int b = 0; b < NBUF; b++) {
        c->ref[b] = malloc(BUF_FLOATS * sizeof(float));
        if (c->ref[b] == NULL ||
            umadv_malloc(c->ctx, BUF_FLOATS * sizeof(float), "chain", (void **)&c->buf[b]) !=
                UMADV_OK ||
            umadv_set_stageable(c->ctx, c->buf[b], 1) != UMADV_OK)
            return 0;
        for (size_t i = 0; i < BUF_FLOATS; i++)
            c->ref[b][i] = (float)((i * 7 + (size_t)b * 13) % 97);
        if (cudaMemcpy(c->buf[b], c->ref[b], BUF_FLOATS * sizeof(float),
                       cudaMemcpyHostToDevice) != cudaSuccess)
            return 0;
    }
    return 1;
}

static void iterate(chain_t *c, uint64_t *staged_before_p)
{
    umadv_stats_t st = {.size = sizeof(st)};

    for (int it = 0; it < ITERS; it++) {
        if (it == PROFILE_AT)
            umadv_profile_next_iteration(c->ctx);
        umadv_iteration_begin(c->ctx);
        if (it == CAPTURE_AT) {
            umadv_get_stats(c->ctx, &st);
            *staged_before_p = st.staged_bytes;
            capture(c);
        }
        if (it < CAPTURE_AT)
            chain_launch(c);
        else if (c->capture_status == cudaSuccess)
            c->launch_errors += cudaGraphLaunch(c->graph, c->stream) != cudaSuccess;
        host_chain(c);
        if (it == PROFILE_AT) {
            cudaStreamSynchronize(c->stream);
            umadv_plan(c->ctx); /* with two passes: when the second is recorded */
        }
    }
    c->launch_errors += cudaStreamSynchronize(c->stream) != cudaSuccess;
}

/* Whether every buffer holds the host's bits, read back by cudaMemcpy
 * (which restores what is staged first); the first that does not told. */
static int buffers_match(chain_t *c)
{
    float *got = malloc(BUF_FLOATS * sizeof(float));
    int same = got != NULL;

    for (int b = 0; b < NBUF && same; b++) {
        same = cudaMemcpy(got, c->buf[b], BUF_FLOATS * sizeof(float),
                          cudaMemcpyDeviceToHost) == cudaSuccess;
        for (size_t i = 0; i < BUF_FLOATS && same; i++) {
            same = memcmp(&got[i], &c->ref[b][i], sizeof(float)) == 0;
            if (!same)
                diag("buffer %d float %zu: %.9g, the host's %.9g", b, i, (double)got[i],
                     (double)c->ref[b][i]);
        }
    }
    free(got);
    return same;
}

static void teardown(chain_t *c)
{
    if (c->graph != NULL)
        cudaGraphExecDestroy(c->graph);
    for (int b = 0; b < NBUF; b++) {
        if (c->buf[b] != NULL)
            umadv_free(c->ctx, c->buf[b]);
        free(c->ref[b]);
    }
    if (c->stream != NULL)
        cudaStreamDestroy(c->stream);
    umadv_context_destroy(c->ctx);
}

int main(void)
{
    uint64_t staged_before = 0;
    const char *said;
    int count = 0;
    chain_t c;

    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        skip_all("no CUDA device");
    env_clear();
    log_capture_start();
    plan(5);
    if (!ok(setup(&c), "a context with a profiler, six stageable blocks under a 48 MiB budget")) {
        for (int i = 0; i < 4; i++)
            skip("no context", "the replay");
        log_capture_stop();
        return exit_status();
    }
    iterate(&c, &staged_before);
    said = log_take();
    ok(staged_before > 0, "the replay staged before the capture (%llu MiB)",
       (unsigned long long)(staged_before >> 20));
    ok(c.capture_status == cudaSuccess, "captured in global mode while the replay ran: %s",
       cudaGetErrorString(c.capture_status));
    if (!ok(c.launch_errors == 0 && strstr(said, "failed") == NULL,
            "every launch and graph launch accepted, no call of umadv's failed"))
        diag("%s", said);
    ok(buffers_match(&c), "every buffer holds the host's bits after %d graph launches",
       ITERS - CAPTURE_AT);
    teardown(&c);
    log_capture_stop();
    return exit_status();
}
