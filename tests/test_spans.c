/*
 * The measured timeline (exec/spans.h, UMADV_TIMELINE): the recorder's
 * bound and the document it writes, and a planned, staged application on
 * the host backend whose timeline holds its steps, its lanes' calls with
 * their bytes, and nothing more than it ran. The documents are read back
 * with Python's json module where python3 is installed (skipped if not).
 */
#include <umadv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "exec/spans.h"
#include "tap.h"
#include "testutil.h"

#define SECTION (64 * UMADV_KIB)
#define NBLOCKS 6
#define BLOCK   (4 * SECTION)
#define ITERS   5 /* profiled, timed, then three replayed */

static char dir[] = "/tmp/umadv-spans-XXXXXX";

static int have_python(void)
{
    return system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

/* Run a Python check of the JSON document at @path: exit status 0 when it
 * holds. */
static int python_check(const char *path, const char *expr)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd),
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "ev=[e for e in d[\"traceEvents\"] if e[\"ph\"]==\"X\"]; "
             "sys.exit(0 if (%s) else 1)' '%s'",
             expr, path);
    return system(cmd) == 0;
}

static void test_recorder(void)
{
    umadv_spans_t s;
    char path[512];
    FILE *f;

    umadv__spans_add(NULL, UMADV_SPAN_STEPS, "step", 1, 2, 0, 0, 0); /* off: nothing */
    umadv__spans_init(&s, 3);
    umadv__spans_add(&s, UMADV_SPAN_STEPS, "step", 1000, 3000, 0, 0, 0);
    umadv__spans_add(&s, UMADV_SPAN_FETCH, "prefetch to the GPU", 2000, 4000, 1 << 20, 0, 1);
    umadv__spans_add(&s, UMADV_SPAN_WAITS, "wait: fetch in flight", 2500, 4000, 0, 0, 1);
    umadv__spans_add(&s, UMADV_SPAN_EVICT, "stage out", 5000, 6000, 4096, 1, 0);
    ok(s.n == 3 && s.dropped == 1, "bounded: 3 kept, 1 dropped");
    snprintf(path, sizeof(path), "%s/unit.json", dir);
    f = fopen(path, "w");
    is(umadv__spans_write(&s, f), 0, "written");
    fclose(f);
    if (!have_python()) {
        skip("no python3", "the document read back");
    } else {
        ok(python_check(path, "len(ev)==3 and ev[0][\"ts\"]==0 and ev[0][\"dur\"]==2.0 and "
                              "ev[1][\"args\"][\"bytes\"]==1048576 and ev[1][\"tid\"]==3 and "
                              "ev[1][\"ts\"]==1.0 and d[\"otherData\"][\"dropped_spans\"]==1 and "
                              "len([e for e in d[\"traceEvents\"] if e[\"ph\"]==\"M\"])==5"),
           "valid JSON: times in microseconds from the first span, bytes, tracks, the drop count");
    }
    umadv__spans_cleanup(&s);
}

typedef struct app {
    umadv_context_t ctx;
    unsigned char  *block[NBLOCKS];
} app_t;

static void iteration(app_t *a)
{
    umadv_iteration_begin(a->ctx);
    for (int j = 0; j < NBLOCKS; j++) {
        umadv_step_begin(a->ctx, NULL, NULL);
        umadv_step_access(a->ctx, a->block[j], BLOCK, UMADV_ACCESS_RW);
        a->block[j][j] ^= 1;
        umadv_step_end(a->ctx, 1000000);
    }
}

/* A planned run of ITERS iterations over blocks twice the budget, with
 * UMADV_TIMELINE=@path; 0 when it ran. */
static int app_run(const char *path)
{
    app_t a;

    setenv("UMADV_TIMELINE", path, 1);
    setenv("UMADV_POLICY", "plan", 1);
    memset(&a, 0, sizeof(a));
    a.ctx = test_host_context(SECTION, NBLOCKS / 2 * BLOCK);
    unsetenv("UMADV_TIMELINE");
    unsetenv("UMADV_POLICY");
    if (a.ctx == NULL)
        return -1;
    for (int b = 0; b < NBLOCKS; b++) {
        if (umadv_malloc(a.ctx, BLOCK, "block", (void **)&a.block[b]) != UMADV_OK)
            return -1;
        memset(a.block[b], b, BLOCK);
        umadv_set_stageable(a.ctx, a.block[b], 1);
    }
    umadv_profile_next_iteration(a.ctx);
    for (int it = 0; it < ITERS; it++) {
        iteration(&a);
        if (it == 1 && umadv_plan(a.ctx) != UMADV_OK)
            return -1;
    }
    for (int b = 0; b < NBLOCKS; b++)
        umadv_free(a.ctx, a.block[b]);
    umadv_context_destroy(a.ctx);
    return 0;
}

static void test_replay(void)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/replay.json", dir);
    if (!ok(app_run(path) == 0, "a planned, staged application ran with UMADV_TIMELINE"))
        return;
    ok(access(path, R_OK) == 0, "its timeline was written when the context ended");
    if (!have_python()) {
        for (int i = 0; i < 4; i++)
            skip("no python3", "the timeline read back");
        return;
    }
    /* steps: every replayed one, and none of the profiled or timed ones */
    ok(python_check(path, "len([e for e in ev if e[\"name\"]==\"step\"])==3*6 and "
                          "all(e[\"tid\"]==1 for e in ev if e[\"name\"]==\"step\")"),
       "the replayed iterations' 18 steps, on the application's track");
    ok(python_check(path, "sum(e[\"args\"][\"bytes\"] for e in ev if e[\"name\"]==\"stage out\" "
                          "and e[\"tid\"]==4)>0 and "
                          "sum(e[\"args\"][\"bytes\"] for e in ev if e[\"name\"]=="
                          "\"restore from staging\" and e[\"tid\"]==3)>0"),
       "staged evictions on the eviction lane, restores on the fetch lane, with bytes");
    ok(python_check(path, "all(e[\"dur\"]>=0 and e[\"ts\"]>=0 for e in ev) and "
                          "all(e[\"name\"].startswith(\"wait: \") or e[\"name\"].startswith("
                          "\"restore on\") for e in ev if e[\"tid\"]==2)"),
       "no negative times; every wait is named by its cause");
    ok(python_check(path, "all(b[\"ts\"] >= a[\"ts\"] + a[\"dur\"] - 0.002 for t in (1, 2, 3, 4) "
                          "for a, b in (lambda l: zip(l, l[1:]))(sorted([e for e in ev "
                          "if e[\"tid\"] == t], key=lambda e: e[\"ts\"])))"),
       "each track's spans follow one another (a lane's stall ends where its call begins)");
}

/* The file is replaced only whole: an output that cannot be written says
 * so, naming the knob, and leaves nothing behind. */
static void test_bad_path(void)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/no/such/dir/t.json", dir);
    log_take();
    ok(app_run(path) == 0, "an unwritable UMADV_TIMELINE does not stop the run");
    ok(strstr(log_take(), "UMADV_TIMELINE") != NULL, "and the log names the knob");
    ok(access(path, F_OK) != 0, "nothing was created");
}

/* umadv_timeline_save: what was recorded so far, before the context ends;
 * an error when nothing is recorded. */
static void test_save_now(void)
{
    char path[512], early[512];
    umadv_context_t ctx;

    ctx = test_host_context(SECTION, 0);
    log_take();
    is(umadv_timeline_save(ctx, NULL), UMADV_ERR_INVALID_PARAM,
       "umadv_timeline_save without UMADV_TIMELINE: an error");
    ok(strstr(log_take(), "UMADV_TIMELINE") != NULL, "saying what to set");
    umadv_context_destroy(ctx);
    is(umadv_timeline_save(NULL, NULL), UMADV_ERR_INVALID_PARAM, "a NULL context");

    snprintf(path, sizeof(path), "%s/at-end.json", dir);
    snprintf(early, sizeof(early), "%s/early.json", dir);
    setenv("UMADV_TIMELINE", path, 1);
    ctx = test_host_context(SECTION, 0);
    unsetenv("UMADV_TIMELINE");
    is(umadv_timeline_save(ctx, early), UMADV_OK, "saved to another file while the context lives");
    ok(access(early, R_OK) == 0 && access(path, F_OK) != 0, "there, and not yet to UMADV_TIMELINE's");
    umadv_context_destroy(ctx);
    ok(access(path, R_OK) == 0, "which the context's end writes");
}

int main(void)
{
    plan(18);
    log_capture_start();
    if (mkdtemp(dir) == NULL) {
        diag("mkdtemp: cannot make a directory under /tmp");
        return 1;
    }
    test_recorder();
    test_replay();
    test_bad_path();
    test_save_now();
    log_capture_stop();
    {
        char cmd[600];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
    }
    return exit_status();
}
