/*
 * The injection library's driver (src/inject) on the host backend,
 * without a GPU: NVTX's loader handing it the core calls, the ranges it
 * counts (the configured name only, in every message form) and the
 * values it answers; the iterations it profiles, plans and replays on
 * the process's context, unless the program marks its own; the summary
 * record it appends once at exit; in profile mode (UMADV_PROFILE_OUTPUT,
 * in a child process: the knobs are read once) the trace it saves and
 * the plan it does not make.
 * cudaMalloc routing needs the real runtime: tests/test_run_gpu.sh.
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "common/util.h"
#include "inject/inject.h"
#include "interpose/torch.h"
#include "tap.h"
#include "testutil.h"
#include "trace/trace_io.h"

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

#define SECTION (64 * UMADV_KIB)
#define PATH_MAX_SUMMARY 256

/* ---- a stand-in for NVTX's loader ---- */

static NvtxFunctionPointer core_slots[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer *core_table[NVTX_CBID_CORE_SIZE];

static int NVTX_API get_module(NvtxCallbackModule module, NvtxFunctionTable *table_p,
                               unsigned int *size_p)
{
    if (module != NVTX_CB_MODULE_CORE)
        return 0;
    for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; i++)
        core_table[i] = &core_slots[i];
    *table_p = core_table;
    *size_p = NVTX_CBID_CORE_SIZE;
    return 1;
}

static const void *NVTX_API get_export_table(uint32_t id)
{
    static const NvtxExportTableCallbacks callbacks = {sizeof(callbacks), get_module};

    return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL;
}

typedef int (*push_a_t)(const char *);
typedef int (*push_w_t)(const wchar_t *);
typedef nvtxRangeId_t (*start_ex_t)(const nvtxEventAttributes_t *);

static uint64_t boundaries(void)
{
    umadv_inject_counts_t c;

    umadv__inject_counts(&c);
    return c.iterations;
}

static void test_nvtx(void)
{
    push_a_t push_a;
    push_w_t push_w;
    start_ex_t start_ex;
    nvtxEventAttributes_t attr;
    uint64_t before;

    is(InitializeInjectionNvtx2(get_export_table), 1, "NVTX's loader: the tool is in place");
    ok(core_slots[NVTX_CBID_CORE_RangePushA] != NULL &&
       core_slots[NVTX_CBID_CORE_RangeStartEx] != NULL &&
       core_slots[NVTX_CBID_CORE_RangePop] == NULL,
       "range starts taken, pops left to NVTX");
    push_a = (push_a_t)core_slots[NVTX_CBID_CORE_RangePushA];
    push_w = (push_w_t)core_slots[NVTX_CBID_CORE_RangePushW];
    start_ex = (start_ex_t)core_slots[NVTX_CBID_CORE_RangeStartEx];
    before = boundaries();
    is(push_a("iterations"), NVTX_NO_PUSH_POP_TRACKING, "a push answers as NVTX without a tool");
    push_a("layer");
    push_a(NULL);
    is_u64(boundaries(), before, "ranges of other names begin no iteration");
    push_w(L"iteration");
    memset(&attr, 0, sizeof(attr));
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "iteration";
    is(start_ex(&attr), 0, "a range start answers id 0, as NVTX without a tool");
    is_u64(boundaries(), before + 2, "a wide push and an Ex start of the name each begin one");
}

/* Iterations of two steps over @x, each begun by an NVTX push. */
static void iterate(umadv_context_t ctx, void *x, int n)
{
    push_a_t push_a = (push_a_t)core_slots[NVTX_CBID_CORE_RangePushA];

    for (int it = 0; it < n; it++) {
        push_a("iteration");
        for (int s = 0; s < 2; s++) {
            umadv_step_begin(ctx, s ? "b" : "a", NULL);
            umadv_step_access(ctx, (char *)x + s * SECTION, SECTION, UMADV_ACCESS_RW);
            umadv_step_end(ctx, 1000);
        }
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 8192);

    if (f != NULL && text != NULL)
        text[fread(text, 1, 8191, f)] = '\0';
    if (f != NULL)
        fclose(f);
    return text;
}

static void test_driver(umadv_context_t ctx, const char *summary)
{
    umadv_inject_counts_t c, before_after;
    umadv_stats_t s = {.size = sizeof(s)};
    void *x = NULL;
    char *first, *again;

    ok(umadv_malloc(ctx, 2 * SECTION, "x", &x) == UMADV_OK, "a block on the host backend");
    iterate(ctx, x, 5);
    umadv__inject_counts(&c);
    ok(c.planned && c.plan_status == UMADV_OK && c.replay_first == 4,
       "profiled the iteration after warm-up, planned when it ended (plan %s, replay from "
       "boundary %llu)", umadv_status_string(c.plan_status), (unsigned long long)c.replay_first);
    umadv_get_stats(ctx, &s);
    ok(s.iterations >= 5 && s.plans >= 1, "the context saw the iterations (%llu) and a plan (%llu)",
       (unsigned long long)s.iterations, (unsigned long long)s.plans);

    umadv__inject_summary_write();
    first = slurp(summary);
    ok(first != NULL && strncmp(first, "umadv-run-summary 1\n", 20) == 0 &&
       strstr(first, "\npolicy plan\n") && strstr(first, "\niterations 7\n") &&
       strstr(first, "\nreplayed_iterations 2\n") && strstr(first, "\nplan ok\n") &&
       strstr(first, "\nbudget 0\n") && strstr(first, "\nrank 2\npolicy") &&
       strlen(first) > 4 &&
       strcmp(first + strlen(first) - 4, "end\n") == 0,
       "the summary record: rank, policy, budget, 7 iterations, 2 replayed, the plan, ended");
    if (first != NULL && !strstr(first, "\niterations 7\n"))
        diag("%s", first);
    ok(first != NULL && strstr(first, "\nprofile_end_ms ") && strstr(first, "\nplan_ms ") &&
       strstr(first, "\nreplay_start_ms ") && !strstr(first, "\nplan_ms 0.000\n"),
       "the summary record: the time umadv's own calls took ending the profile, planning "
       "(not nothing) and starting the replay");
    umadv__inject_summary_write();
    again = slurp(summary);
    ok(first != NULL && again != NULL && strcmp(first, again) == 0, "the record is written once");
    free(first);
    free(again);

    umadv__inject_counts(&c);
    umadv_iteration_begin(ctx); /* the program marks one itself */
    iterate(ctx, x, 1);
    umadv__inject_counts(&before_after);
    ok(before_after.program_marks && before_after.iterations == c.iterations,
       "an iteration the program began itself: the driver leaves the marking to it");
    umadv_free(ctx, x);
}

/* In the child: profile mode on a host context. 0 when iteration 1's
 * trace was saved and nothing planned; 1 after a message. */
static int profile_child(const char *trace_path)
{
    umadv_stats_t s = {.size = sizeof(s)};
    umadv_inject_counts_t c;
    umadv_trace_t trace;
    umadv_context_t ctx;
    char why[256];
    void *x = NULL;

    char summary[PATH_MAX_SUMMARY], *record;

    snprintf(summary, sizeof(summary), "%s.summary", trace_path);
    setenv("UMADV_PROFILE_OUTPUT", trace_path, 1);
    setenv("UMADV_PROFILE_ITERATION", "1", 1);
    setenv("UMADV_RUN_SUMMARY", summary, 1);
    ctx = test_host_context(SECTION, 0);
    if (ctx == NULL || umadv__torch_reset(ctx) != NULL ||
        umadv_malloc(ctx, 2 * SECTION, "x", &x) != UMADV_OK)
        return fprintf(stderr, "# no host context\n"), 1;
    for (int it = 0; it < 4; it++) {
        umadv__inject_iteration();
        for (int step = 0; step < 2; step++) {
            umadv_step_begin(ctx, step ? "b" : "a", NULL);
            umadv_step_access(ctx, (char *)x + step * SECTION, SECTION, UMADV_ACCESS_RW);
            umadv_step_end(ctx, 1000);
        }
    }
    umadv__inject_counts(&c);
    umadv_get_stats(ctx, &s);
    if (c.planned || s.plans != 0 || c.profile_saved != 1)
        return fprintf(stderr, "# planned %d, plans %llu, saved %d\n", c.planned,
                       (unsigned long long)s.plans, c.profile_saved), 1;
    umadv__inject_summary_write();
    record = slurp(summary);
    unlink(summary);
    if (record == NULL || !strstr(record, "\nplan none\n") || !strstr(record, "\nprofile saved\n"))
        return fprintf(stderr, "# the record: %s\n", record != NULL ? record : "none"), 1;
    free(record);
    if (umadv__trace_read_file(trace_path, &trace, why, sizeof(why)) != UMADV_OK)
        return fprintf(stderr, "# %s\n", why), 1;
    if (trace.nsteps != 2 || trace.niterations != 1 || trace.nallocs != 1)
        return fprintf(stderr, "# %u steps, %u iterations, %u allocations\n", trace.nsteps,
                       trace.niterations, trace.nallocs), 1;
    umadv__trace_cleanup(&trace);
    return 0;
}

static void test_profile_mode(void)
{
    char path[] = "/tmp/umadv-test-profile.XXXXXX";
    int fd = mkstemp(path), status = -1;
    pid_t pid;

    if (fd >= 0)
        close(fd);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(profile_child(path));
    if (pid > 0)
        waitpid(pid, &status, 0);
    ok(fd >= 0 && pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "profile mode: iteration 1's trace (2 steps, 1 allocation) saved where it ended, "
       "nothing planned, the record says so");
    unlink(path);
}

int main(void)
{
    char summary[] = "/tmp/umadv-test-inject.XXXXXX";
    int fd = mkstemp(summary);
    umadv_context_t ctx;

    plan(15);
    env_clear();
    test_profile_mode();
    setenv("UMADV_RUN_SUMMARY", summary, 1);
    setenv("UMADV_PROFILE_ITERATION", "3", 1);
    ctx = test_host_context(SECTION, 0);
    ok(fd >= 0 && ctx != NULL && umadv__torch_reset(ctx) == NULL,
       "a host context as the process's");
    test_nvtx();
    setenv("RANK", "2", 1); /* a rank of a distributed job: its record says which */
    umadv__log_rank_reload();
    test_driver(ctx, summary);
    unsetenv("RANK");
    umadv__log_rank_reload();
    unlink(summary);
    umadv_context_destroy(umadv__torch_reset(NULL));
    return exit_status();
}
