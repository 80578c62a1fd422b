/*
 * The PyTorch allocator entry points (interpose/torch.c) on the host
 * backend: lazy creation from a bad environment (one attempt however many
 * threads race, NULL and a log naming the variable, remembered), a context
 * injected for the rest, the device rule, frees of NULL and of pointers
 * umadv never made, the UMADV_MAX_MANAGED guard, and threads allocating
 * and freeing at once with every block's bytes checked for overlap.
 */
#include <umadv.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "common/util.h"
#include "interpose/torch.h"
#include "tap.h"
#include "testutil.h"

#define THREADS     8
#define ROUNDS      1500
#define LIVE        16

static pthread_barrier_t start;

static size_t count_of(const char *haystack, const char *needle)
{
    size_t n = 0;

    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void *race_context(void *arg)
{
    umadv_context_t ctx = NULL;

    pthread_barrier_wait(&start);
    *(umadv_status_t *)arg = umadv_torch_context(&ctx);
    return NULL;
}

static void test_lazy_failure(void)
{
    pthread_t threads[THREADS];
    umadv_status_t status[THREADS];
    umadv_context_t ctx = NULL;
    int all_invalid = 1;
    const char *log;
    int word;

    setenv("UMADV_BUDGET", "12 parsecs", 1);
    setenv("RANK", "1", 1); /* a rank of a distributed job: its messages say which */
    umadv__log_rank_reload();
    log_take();
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, race_context, &status[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        all_invalid &= status[i] == UMADV_ERR_INVALID_PARAM;
    }
    pthread_barrier_destroy(&start);
    ok(all_invalid, "bad UMADV_BUDGET: every racing thread gets INVALID_PARAM");
    log = log_take();
    is(count_of(log, "UMADV_BUDGET=12 parsecs"), 1,
       "one creation was tried, its error names the variable and value");
    ok(strstr(log, "umadv[rank 1]: error: UMADV_BUDGET=12 parsecs: not a size") != NULL &&
       count_of(log, "umadv[rank 1]: error: the process's umadv context cannot be made "
                     "(invalid parameter): every PyTorch allocation through umadv fails") == 1,
       "the failing rank says which it is, why, and what it costs, once");
    unsetenv("RANK");
    umadv__log_rank_reload();

    ok(umadv_torch_malloc(4096, 0, NULL) == NULL, "malloc without a context returns NULL");
    log = log_take();
    ok(strstr(log, "umadv_torch_malloc(4096 bytes, device 0): no umadv context") != NULL,
       "and logs why");
    setenv("UMADV_BUDGET", "1G", 1);
    is(umadv_torch_context(&ctx), UMADV_ERR_INVALID_PARAM,
       "the failure is remembered, not retried on every allocation");
    umadv_torch_free(&word, 4096, 0, NULL);
    ok(strstr(log_take(), "no umadv context made this block") != NULL,
       "free without a context is logged, not a crash");
    env_clear();
}

static umadv_context_t host_context(uint64_t max_managed)
{
    umadv_context_params_t p = {
        .field_mask  = UMADV_CONTEXT_FIELD_FLAGS | UMADV_CONTEXT_FIELD_MAX_MANAGED,
        .flags       = UMADV_CONTEXT_FLAG_HOST_ONLY,
        .max_managed = max_managed,
    };
    umadv_context_t ctx = NULL;

    if (umadv_context_create(&p, &ctx) != UMADV_OK)
        return NULL;
    return ctx;
}

static uint64_t live_blocks(umadv_context_t ctx)
{
    umadv_stats_t s = {.size = sizeof(s)};

    umadv_get_stats(ctx, &s);
    return s.allocations;
}

static uint64_t alloc_calls(umadv_context_t ctx)
{
    umadv_stats_t s = {.size = sizeof(s)};

    umadv_get_stats(ctx, &s);
    return s.alloc_calls;
}

static void test_single(umadv_context_t ctx)
{
    umadv_context_t got = NULL;
    umadv_pool_loc_t loc;
    uint64_t calls;
    char *p;
    int word;

    ok(umadv_torch_context(&got) == UMADV_OK && got == ctx,
       "umadv_torch_context returns the process's context");
    ok(umadv_set_budget(got, 8 * UMADV_MIB) == UMADV_OK && got->config.budget == 8 * UMADV_MIB &&
       umadv_set_budget(got, 0) == UMADV_OK && got->config.budget == 0,
       "its budget changes through umadv_set_budget (what Python calls through ctypes)");
    calls = alloc_calls(ctx);
    p = umadv_torch_malloc(UMADV_MIB, 0, NULL);
    ok(p != NULL && live_blocks(ctx) == 1, "malloc makes one umadv block");
    ok(p != NULL && umadv__pool_lookup(ctx->pool, p, &loc) == UMADV_OK &&
       ((umadv_ctx_alloc_t *)(uintptr_t)loc.user)->stageable && alloc_calls(ctx) == calls + 1,
       "the block is stageable (device memory to PyTorch), marked in the one call");
    if (p != NULL)
        memset(p, 0x5a, UMADV_MIB);
    log_take();
    ok(umadv_torch_malloc(UMADV_MIB, 1, NULL) == NULL &&
       strstr(log_take(), "serves device 0 only (UMADV_DEVICE)") != NULL,
       "another device than the context's: NULL, logged");
    ok(umadv_torch_malloc(0, 0, NULL) == NULL && log_take()[0] == '\0' &&
       live_blocks(ctx) == 1,
       "size 0 (an empty tensor): NULL and no block, silently, as PyTorch's own allocator");
    umadv_torch_free(NULL, 0, 0, NULL);
    ok(log_take()[0] == '\0', "free(NULL) is a silent no-op");
    umadv_torch_free(&word, sizeof(word), 0, NULL);
    umadv_torch_free(p + 256, 256, 0, NULL);
    ok(count_of(log_take(), "not a live umadv allocation") == 2 && live_blocks(ctx) == 1,
       "freeing a foreign pointer or a block's interior is logged and changes nothing");
    umadv_torch_free(p, UMADV_MIB, 0, NULL);
    ok(live_blocks(ctx) == 0 && log_take()[0] == '\0', "free of the block releases it");
}

static void test_limit(void)
{
    umadv_context_t ctx = host_context(64 * UMADV_MIB), old;
    void *p;

    old = umadv__torch_reset(ctx);
    log_take();
    p = umadv_torch_malloc(128 * UMADV_MIB, 0, NULL);
    ok(p == NULL && strstr(log_take(), "umadv_torch_malloc(134217728 bytes, device 0)") != NULL,
       "beyond UMADV_MAX_MANAGED: NULL, logged (PyTorch raises out of memory)");
    p = umadv_torch_malloc(32 * UMADV_MIB, 0, NULL);
    ok(p != NULL, "below the limit still works");
    umadv_torch_free(p, 32 * UMADV_MIB, 0, NULL);
    umadv_context_destroy(umadv__torch_reset(old));
}

typedef struct worker {
    unsigned seed;
    int      index;
    size_t   bad;    /* blocks whose bytes another thread changed */
    size_t   nulls;  /* allocations that failed */
} worker_t;

static void block_check_free(worker_t *w, unsigned char *p, size_t size)
{
    unsigned char want = (unsigned char)(w->index + 1);

    if (p[0] != want || p[size / 2] != want || p[size - 1] != want)
        w->bad++;
    umadv_torch_free(p, size, 0, NULL);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    unsigned char *ptr[LIVE] = {0};
    size_t size[LIVE] = {0};

    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++) {
        int slot = rand_r(&w->seed) % LIVE;

        if (ptr[slot] != NULL)
            block_check_free(w, ptr[slot], size[slot]);
        /* 256 B to 4 MiB: small blocks sharing sections, large ones spanning them */
        size[slot] = (size_t)256 << (rand_r(&w->seed) % 15);
        ptr[slot] = umadv_torch_malloc(size[slot], 0, NULL);
        if (ptr[slot] == NULL)
            w->nulls++;
        else
            memset(ptr[slot], w->index + 1, size[slot]);
    }
    for (int i = 0; i < LIVE; i++)
        if (ptr[i] != NULL)
            block_check_free(w, ptr[i], size[i]);
    return NULL;
}

static void test_threads(umadv_context_t ctx)
{
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    size_t bad = 0, nulls = 0;
    umadv_stats_t s = {.size = sizeof(s)};

    log_take();
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){.seed = 1234u + (unsigned)i, .index = i};
        pthread_create(&threads[i], NULL, worker_main, &workers[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        bad += workers[i].bad;
        nulls += workers[i].nulls;
    }
    pthread_barrier_destroy(&start);
    is(nulls, 0, "%d threads x %d allocations: none failed", THREADS, ROUNDS);
    is(bad, 0, "no block was overwritten by another thread's block");
    umadv_get_stats(ctx, &s);
    ok(s.allocations == 0 && s.managed_bytes == 0 && s.managed_peak >= 4 * UMADV_MIB,
       "every block came back (peak %llu bytes)", (unsigned long long)s.managed_peak);
    ok(log_take()[0] == '\0', "nothing was logged");
}

int main(void)
{
    umadv_context_t ctx;

    log_capture_start();
    env_clear();
    plan(24);
    test_lazy_failure();

    ctx = host_context(0);
    ok(ctx != NULL && umadv__torch_reset(ctx) == NULL,
       "a host-only context injected in place of the lazy one");
    test_single(ctx);
    test_limit();
    test_threads(ctx);
    ok(umadv__torch_reset(NULL) == ctx, "reset hands the context back");
    umadv_context_destroy(ctx);
    log_capture_stop();
    return exit_status();
}
