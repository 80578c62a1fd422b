/*
 * UMADV_TIMELINE under the injection library (umadv run --timeline),
 * without a GPU: the process's context is never destroyed, so the
 * library writes the measured timeline when the process exits. On a
 * host context as the process's, iterations begun by NVTX ranges are
 * profiled, planned and replayed; at exit the file holds the replayed
 * steps and the summary record is still appended once; without
 * UMADV_TIMELINE nothing is written. Each case in a child (the knobs
 * are read once per process). The command's side: test_run_timeline.sh.
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "inject/inject.h"
#include "interpose/torch.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)
#define ITERS   6

static char dir[] = "/tmp/umadv-run-timeline-XXXXXX";
static char timeline[256], summary[256];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 1 << 20);

    if (f != NULL && text != NULL)
        text[fread(text, 1, (1 << 20) - 1, f)] = '\0';
    if (f != NULL)
        fclose(f);
    return text;
}

/* In the child: ITERS iterations of two steps, begun by NVTX ranges,
 * on a host context; then what the process does at exit. 0, or 1 after
 * a message. */
static int child(int with_timeline)
{
    umadv_inject_counts_t c;
    umadv_context_t ctx;
    void *x = NULL;

    if (with_timeline)
        setenv("UMADV_TIMELINE", timeline, 1);
    setenv("UMADV_RUN_SUMMARY", summary, 1);
    ctx = test_host_context(SECTION, SECTION);
    if (ctx == NULL || umadv__torch_reset(ctx) != NULL ||
        umadv_malloc(ctx, 2 * SECTION, "x", &x) != UMADV_OK)
        return fprintf(stderr, "# no host context\n"), 1;
    for (int it = 0; it < ITERS; it++) {
        umadv__inject_mark(UMADV_ITERATION_SOURCE_NVTX, 0);
        for (int s = 0; s < 2; s++) {
            umadv_step_begin(ctx, s ? "b" : "a", NULL);
            umadv_step_access(ctx, (char *)x + s * SECTION, SECTION, UMADV_ACCESS_RW);
            umadv_step_end(ctx, 1000);
        }
    }
    umadv__inject_counts(&c);
    if (!c.planned || c.plan_status != UMADV_OK)
        return fprintf(stderr, "# no plan (%s)\n", umadv_status_string(c.plan_status)), 1;
    umadv_inject_exit(); /* what Python's exit calls; the C exit handler after it */
    return 0;
}

static int run_child(int with_timeline)
{
    int status = -1;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0)
        _exit(child(with_timeline));
    if (pid > 0)
        waitpid(pid, &status, 0);
    return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    struct stat st;
    char *text, *record;

    plan(4);
    env_clear();
    if (mkdtemp(dir) == NULL)
        return printf("Bail out! no temporary folder\n"), 1;
    snprintf(timeline, sizeof(timeline), "%s/timeline.json", dir);
    snprintf(summary, sizeof(summary), "%s/summary", dir);

    ok(run_child(1), "a program planned and replayed under UMADV_TIMELINE exits");
    text = slurp(timeline);
    ok(text != NULL && strstr(text, "\"traceEvents\"") != NULL &&
       strstr(text, "{\"name\":\"step\",\"ph\":\"X\"") != NULL,
       "at exit the library wrote the measured timeline with the replayed steps");
    if (text != NULL && strstr(text, "{\"name\":\"step\",\"ph\":\"X\"") == NULL)
        diag("%.2000s", text);
    record = slurp(summary);
    ok(record != NULL && strstr(record, "umadv-run-summary 1\n") == record &&
       strstr(record + 1, "umadv-run-summary") == NULL && strstr(record, "\nplan ok\n"),
       "...and appended its summary record, once");
    free(text);
    free(record);

    unlink(timeline);
    unlink(summary);
    ok(run_child(0) && stat(timeline, &st) != 0,
       "without UMADV_TIMELINE no timeline is written at exit");
    unlink(summary);
    rmdir(dir);
    return exit_status();
}
