/*
 * Allocation call sites (profiler/callsite.h) without a GPU: the first
 * frame outside umadv, CUDA and Python, symbolized; the libraries that
 * are never a site; a Python line declared on the thread; each site kept
 * once; in profile mode (UMADV_PROFILE_OUTPUT) the allocations of a
 * recorded iteration carry theirs into the trace, and the trace file
 * keeps them (umadv-trace(5), alloc site).
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/context.h"
#include "common/util.h"
#include "profiler/callsite.h"
#include "tap.h"
#include "testutil.h"
#include "trace/trace_io.h"

#define SECTION (64 * UMADV_KIB)

/* Not inlined: each is a frame of its own, named by the dynamic symbol
 * table (the test links with -rdynamic), so not static either. */
#define EXPORTED __attribute__((visibility("default"), noinline))
EXPORTED const char *site_here(void);
EXPORTED const char *site_above(void);
EXPORTED const char *site_through(void);
EXPORTED void *alloc_here(umadv_context_t ctx);

EXPORTED const char *site_here(void)
{
    const char *site = umadv__callsite_capture(0);

    __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
    return site;
}

EXPORTED const char *site_above(void)
{
    const char *site = umadv__callsite_capture(1);

    __asm__ volatile("" ::: "memory");
    return site;
}

EXPORTED const char *site_through(void)
{
    const char *site = site_above();

    __asm__ volatile("" ::: "memory");
    return site;
}

EXPORTED void *alloc_here(umadv_context_t ctx)
{
    void *p = NULL;

    umadv_malloc(ctx, 100000, "a", &p);
    __asm__ volatile("" ::: "memory");
    return p;
}

static void test_native(void)
{
    const char *a = site_here(), *b = site_here(), *c = site_through();

    ok(a != NULL && strncmp(a, "site_here+0x", 12) == 0 &&
       strstr(a, "(test_profile_callsite)") != NULL,
       "the caller's frame: its symbol, offset and object (%s)", a ? a : "none");
    ok(a != NULL && a == b, "the same site is kept once");
    ok(c != NULL && strncmp(c, "site_through+0x", 15) == 0,
       "frames skipped on request: the caller's caller (%s)", c ? c : "none");
}

static void test_skipped(void)
{
    ok(umadv__callsite_skipped_object("/usr/local/cuda/lib64/libcudart.so.13") &&
       umadv__callsite_skipped_object("/usr/lib/x86_64-linux-gnu/libcuda.so.1") &&
       umadv__callsite_skipped_object("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13") &&
       umadv__callsite_skipped_object("/opt/umadv/lib/umadv/libumadv_inject.so") &&
       umadv__callsite_skipped_object("libumadv.so.0") &&
       umadv__callsite_skipped_object("/usr/bin/python3.12") &&
       umadv__callsite_skipped_object("/usr/lib/libpython3.12.so.1.0"),
       "umadv, the CUDA runtime and driver, CUPTI and the Python interpreter are skipped");
    ok(!umadv__callsite_skipped_object("/home/me/train") &&
       !umadv__callsite_skipped_object("/usr/lib/libcudnn.so.9") &&
       !umadv__callsite_skipped_object("/site-packages/torch/lib/libc10_cuda.so"),
       "programs and other libraries (cuDNN, PyTorch's) are sites");
}

static void test_python(void)
{
    const char *declared, *after;

    umadv__callsite_set_python("train.py:42");
    declared = site_here();
    umadv__callsite_set_python(NULL);
    after = site_here();
    ok(declared != NULL && strcmp(declared, "train.py:42") == 0 && after != NULL &&
       strncmp(after, "site_here+0x", 12) == 0,
       "a Python line declared on the thread is the site until cleared");
}

/* An allocation of a recorded iteration, with UMADV_PROFILE_OUTPUT set
 * or not: its trace site. */
static char *recorded_site(int profile_mode)
{
    umadv_context_t ctx;
    char *site = NULL;
    void *a;

    if (profile_mode)
        setenv("UMADV_PROFILE_OUTPUT", "/nonexistent/unused.umt", 1);
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_PROFILE_OUTPUT");
    if (ctx == NULL)
        return strdup("no context");
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    a = alloc_here(ctx);
    umadv_step_begin(ctx, "s", NULL);
    umadv_step_access(ctx, a, 100000, UMADV_ACCESS_READ);
    umadv_step_end(ctx, 5);
    umadv_iteration_begin(ctx);
    if (ctx->trace.nallocs == 1 && ctx->trace.allocs[0].site != NULL)
        site = strdup(ctx->trace.allocs[0].site);
    umadv_free(ctx, a);
    umadv_context_destroy(ctx);
    return site;
}

static void test_context(void)
{
    char *with = recorded_site(1), *without = recorded_site(0);

    ok(with != NULL && strncmp(with, "alloc_here+0x", 13) == 0,
       "in profile mode an allocation's site is the program's frame that called umadv_malloc "
       "(%s)", with ? with : "none");
    ok(without == NULL, "outside profile mode no backtrace is taken");
    free(with);
    free(without);
}

static void test_file(void)
{
    umadv_trace_t t, back;
    char *buf = NULL, *again = NULL, why[256];
    size_t len = 0, len2 = 0;
    uint32_t id;
    int good = umadv__trace_init(&t, UMADV_SECTION_SIZE_DEFAULT) == UMADV_OK &&
               umadv__trace_add_alloc(&t, 0x1000, 100, UMADV_ALLOC_OTHER, "x", &id) ==
                   UMADV_OK &&
               umadv__trace_add_alloc(&t, 0x100000, 100, UMADV_ALLOC_OTHER, NULL, &id) ==
                   UMADV_OK &&
               umadv__trace_set_site(&t, 0, "main+0x1f (train)") == UMADV_OK &&
               umadv__trace_finalize(&t, NULL, 0) == UMADV_OK &&
               umadv__trace_write_buffer(&t, &buf, &len) == UMADV_OK;

    ok(good && strstr(buf, "tag=\"x\" site=\"main+0x1f (train)\"\n") != NULL &&
       strstr(buf, "alloc id=1 base=0x100000 size=100 kind=other alloc_step=- free_step=-\n") != NULL,
       "the file has the site where known, nothing where not");
    good = good && umadv__trace_read_buffer("s.umt", buf, len, &back, why, sizeof(why)) ==
                       UMADV_OK;
    ok(good && back.allocs[0].site != NULL && back.allocs[1].site == NULL &&
       umadv__trace_write_buffer(&back, &again, &len2) == UMADV_OK && len2 == len &&
       memcmp(again, buf, len) == 0, "and reads it back: the same bytes");
    if (good)
        umadv__trace_cleanup(&back);
    umadv__trace_cleanup(&t);
    free(buf);
    free(again);
}

int main(void)
{
    env_clear();
    plan(3 + 2 + 1 + 2 + 2);
    test_native();
    test_skipped();
    test_python();
    test_context();
    test_file();
    return exit_status();
}
