/*
 * The call census (UMADV_CALL_CENSUS, profiler/census.c) through a
 * context, with CUPTI mocked: off by default; on, both callback domains
 * enabled, and at each iteration's beginning one line for the calls since
 * the last: how many, their time, runtime and driver apart, the
 * functions by time under their names (less CUPTI's version suffix). A
 * runtime call's own driver calls count once, an exit whose entry came
 * before the census not at all, umadv's own threads' calls not at all.
 * The census keeps the launch callbacks on past a recording's stop. A
 * CUPTI that cannot enable a domain leaves the context working, said.
 */
#include <umadv.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "profiler/cupti_ops.h"
#include "profiler/profiler_int.h"
#include "tap.h"
#include "testutil.h"

#include "cupti_mock.h"

#define SECTION (64 * UMADV_KIB)

#define RT_CAPTURING CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000
#define RT_LAUNCH    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define RT_UNNAMED   CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020
#define DRV_LAUNCH   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel

/* A callback of @cbid, with parameters where the profiler reads them
 * (the launches: a kernel without parameters). */
static void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site)
{
    static void *no_args[1];
    cudaLaunchKernel_v7000_params rt = {.func = FUNC_DRV, .args = no_args};
    cuLaunchKernel_params drv = {.f = (CUfunction)(uintptr_t)0x9999, .kernelParams = no_args};
    const void *params = domain == CUPTI_CB_DOMAIN_DRIVER_API ? (const void *)&drv
                         : cbid == RT_LAUNCH                  ? (const void *)&rt
                                                              : NULL;

    mock_call(domain, cbid, site, params, "k", 1);
}

/* A runtime call of @cbid taking about @sleep_us, made whole. */
static void runtime_call(CUpti_CallbackId cbid, unsigned sleep_us)
{
    call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER);
    if (sleep_us > 0)
        usleep(sleep_us);
    call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_EXIT);
}

static void driver_launch(void)
{
    call(CUPTI_CB_DOMAIN_DRIVER_API, DRV_LAUNCH, CUPTI_API_ENTER);
    call(CUPTI_CB_DOMAIN_DRIVER_API, DRV_LAUNCH, CUPTI_API_EXIT);
}

/* A launch through the runtime, whose driver launch is the same call. */
static void runtime_launch(void)
{
    call(CUPTI_CB_DOMAIN_RUNTIME_API, RT_LAUNCH, CUPTI_API_ENTER);
    driver_launch();
    call(CUPTI_CB_DOMAIN_RUNTIME_API, RT_LAUNCH, CUPTI_API_EXIT);
}

/* One of umadv's own threads: its calls are the lanes'. */
static void *own_thread(void *arg)
{
    (void)arg;
    umadv__thread_mark_own();
    runtime_call(RT_CAPTURING, 0);
    driver_launch();
    return NULL;
}

static umadv_context_t census_context(const char *census)
{
    mock_reset();
    if (census != NULL)
        setenv("UMADV_CALL_CENSUS", census, 1);
    else
        unsetenv("UMADV_CALL_CENSUS");
    return test_host_context(SECTION, 0);
}

static const char *census_line(const char *log)
{
    return strstr(log, "call census, ");
}

static void test_off_by_default(void)
{
    umadv_context_t ctx = census_context(NULL);

    log_take();
    umadv_iteration_begin(ctx);
    runtime_call(RT_CAPTURING, 0);
    umadv_iteration_begin(ctx);
    ok(ctx != NULL && mock.domains == 0 && census_line(log_take()) == NULL,
       "off by default: no domain enabled, no census line");
    umadv_context_destroy(ctx);
}

/* The census's line for the calls of one iteration. */
static void test_counts(void)
{
    umadv_context_t ctx = census_context("1");
    unsigned long long calls = 0, rt = 0, drv = 0;
    double ms = 0;
    const char *line = NULL, *by_time;
    pthread_t t;

    ok(ctx != NULL && mock.domains == 2, "on: both callback domains enabled (%d)", mock.domains);
    umadv_iteration_begin(ctx); /* what came before: its own line */
    log_take();
    call(CUPTI_CB_DOMAIN_RUNTIME_API, RT_LAUNCH, CUPTI_API_EXIT); /* entered before */
    for (int i = 0; i < 3; i++)
        runtime_call(RT_CAPTURING, i == 0 ? 20000 : 0);
    runtime_launch();
    driver_launch();
    driver_launch();
    runtime_call(RT_UNNAMED, 0);
    if (pthread_create(&t, NULL, own_thread, NULL) == 0)
        pthread_join(t, NULL);
    umadv_iteration_begin(ctx);
    line = census_line(log_take());
    ok(line != NULL && sscanf(line, "call census, iteration 0: the application's threads made "
                                    "%llu CUDA calls, %lf ms in all (runtime %llu",
                              &calls, &ms, &rt) == 3 &&
           strstr(line, "driver calls outside them 2,") != NULL,
       "iteration 0's calls: %llu (want 7), %llu of them the runtime's (want 5), the driver's "
       "outside them 2: %s", calls, rt, line != NULL ? line : "(no line)");
    ok(calls == 7 && rt == 5 && ms >= 20, "each counted once; a 20 ms call makes %.1f ms", ms);
    by_time = line != NULL ? strstr(line, "by time: ") : NULL;
    ok(by_time != NULL && strncmp(by_time, "by time: cudaStreamIsCapturing 3, ", 34) == 0,
       "the longest first, named without its version suffix");
    ok(by_time != NULL && strstr(by_time, "cudaLaunchKernel 1,") != NULL &&
           strstr(by_time, "cuLaunchKernel 2,") != NULL &&
           sscanf(strstr(by_time, "runtime call ") ? strstr(by_time, "runtime call ") : "",
                  "runtime call %llu", &drv) == 1 && drv == RT_UNNAMED,
       "each function by name, one CUPTI does not name by its number");
    umadv_iteration_begin(ctx);
    ok(census_line(log_take()) == NULL, "an iteration without calls: no line");
    umadv_context_destroy(ctx);
}

/* How many functions @line names after "by time: ". */
static int functions_named(const char *line)
{
    const char *at = line != NULL ? strstr(line, "by time: ") : NULL;
    int n = at != NULL && at[9] != '\0';

    for (; at != NULL && (at = strstr(at, "; ")) != NULL; at += 2)
        n++;
    return n;
}

/* Eight functions named at info level; every one under the debug log
 * (bench/census_diff.py compares them all). */
static void test_all_under_debug(void)
{
    umadv_context_t ctx = census_context("1");
    const char *line;

    umadv_iteration_begin(ctx);
    for (int level = 0; level < 2; level++) {
        umadv__log_level = level ? UMADV_LOG_DEBUG : UMADV_LOG_INFO;
        log_take();
        for (CUpti_CallbackId cbid = 1; cbid <= 10; cbid++)
            runtime_call(cbid, 0);
        umadv_iteration_begin(ctx);
        line = census_line(log_take());
        ok(line != NULL && strstr(line, " to 10 functions; ") != NULL &&
               functions_named(line) == (level ? 10 : 8),
           "ten functions called: %d named at %s level", functions_named(line),
           level ? "debug" : "info");
    }
    umadv__log_level = UMADV_LOG_INFO;
    umadv_context_destroy(ctx);
}

/* The census keeps every callback on: a recording's stop, which turns
 * the launch callbacks off, leaves them. */
static void test_callbacks_kept(void)
{
    umadv_context_t ctx = census_context("1");
    int during;

    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    during = mock.callbacks;
    umadv_iteration_begin(ctx);
    umadv_iteration_begin(ctx);
    ok(during > 0 && mock.callbacks == during,
       "the launch callbacks on through the profile and after (%d, then %d)", during,
       mock.callbacks);
    umadv_context_destroy(ctx);
}

/* A CUPTI that refuses a domain: no census (the runtime's), or the
 * runtime's calls alone (the driver's); the context works either way. */
static void test_refused(void)
{
    umadv_context_t ctx;
    const char *log;
    void *p = NULL;

    mock_reset();
    mock.domain_result[0] = CUPTI_ERROR_NOT_SUPPORTED;
    setenv("UMADV_CALL_CENSUS", "1", 1);
    log_take();
    ctx = test_host_context(SECTION, 0);
    log = log_take();
    ok(ctx != NULL && mock.domains == 0 && strstr(log, "enable_domain") != NULL &&
           umadv_malloc(ctx, SECTION, "p", &p) == UMADV_OK,
       "the runtime's domain refused: no census, said, the context works");
    runtime_call(RT_CAPTURING, 0);
    umadv_iteration_begin(ctx);
    umadv_iteration_begin(ctx);
    ok(census_line(log_take()) == NULL, "nor a census line");
    umadv_free(ctx, p);
    umadv_context_destroy(ctx);

    mock_reset();
    mock.domain_result[1] = CUPTI_ERROR_NOT_SUPPORTED;
    ctx = test_host_context(SECTION, 0);
    ok(ctx != NULL && mock.domains == 1 && strstr(log_take(), "the runtime's calls only") != NULL,
       "the driver's refused: the runtime's calls counted alone, said");
    umadv_iteration_begin(ctx);
    runtime_call(RT_CAPTURING, 0);
    umadv_iteration_begin(ctx);
    ok(census_line(log_take()) != NULL, "and their line given");
    umadv_context_destroy(ctx);
}

int main(void)
{
    log_capture_start();
    env_clear();
    setenv("UMADV_LOG", "info", 1);
    plan(14);
    umadv__cupti_ops_install(&mock_ops);
    test_off_by_default();
    test_counts();
    test_callbacks_kept();
    test_all_under_debug();
    test_refused();
    umadv__cupti_ops_install(NULL);
    log_capture_stop();
    return exit_status();
}
