/*
 * What the injection library does when the process exits: a profile
 * window still open is saved, the measured timeline written
 * (UMADV_TIMELINE), and the record appended to UMADV_RUN_SUMMARY: what
 * umadv run prints (umadv-run(1), SUMMARY FILE). One write(2) with
 * O_APPEND per process, so the processes of one run (a launcher script,
 * one process per GPU) never interleave their records.
 */
#include "inject/inject.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

typedef struct record {
    char   text[2048];
    size_t len;
} record_t;

static void put(record_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(record_t *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (r->len >= sizeof(r->text))
        return;
    va_start(ap, fmt);
    n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->len += (size_t)n;
}

/* Mean milliseconds from boundary @from_ns to the last boundary over
 * @n iterations; 0 with none complete. */
static double mean_ms(uint64_t from_ns, uint64_t last_ns, uint64_t n)
{
    if (n == 0 || last_ns <= from_ns)
        return 0.0;
    return (double)(last_ns - from_ns) / 1e6 / (double)n;
}

static void put_iterations(record_t *r, const umadv_inject_counts_t *c)
{
    /* Complete iterations only: the one running at exit has no end. */
    uint64_t complete = c->iterations > 0 ? c->iterations - 1 : 0;
    uint64_t replayed = c->replay_first != 0 && c->iterations > c->replay_first + 1
                            ? c->iterations - 1 - c->replay_first : 0;

    put(r, "iterations %llu\n", (unsigned long long)c->iterations);
    put(r, "ms_per_iteration %.3f\n", mean_ms(c->first_ns, c->last_ns, complete));
    put(r, "replayed_iterations %llu\n", (unsigned long long)replayed);
    put(r, "ms_per_replayed_iteration %.3f\n", mean_ms(c->replay_ns, c->last_ns, replayed));
    put(r, "iterations_by %s\n", c->program_marks ? "program" : "umadv");
    put(r, "iterations_from %s\n", c->iterations > 0 && c->source < UMADV_ITERATION_SOURCE_COUNT
                                        ? umadv__config_iteration_source_name((unsigned)c->source)
                                        : "none");
    if (c->launches > 0) /* the launch sequence was followed */
        put(r, "launches %llu\nlaunch_period %u\n", (unsigned long long)c->launches, c->period);
    put(r, "plan %s\n", !c->planned ? "none"
                        : c->plan_status == UMADV_OK ? "ok"
                                                     : umadv_status_string(c->plan_status));
    if (c->window == UMADV_INJECT_WINDOW_ENDED) /* UMADV_PROFILE_SECONDS: the window */
        put(r, "profile_window_ms %.3f\n",
            (double)(c->window_end_ns - c->window_begin_ns) / 1e6);
    if (c->profile_mode) /* profile mode only: umadv profile's record */
        put(r, "profile %s\n", c->profile_saved > 0 ? "saved" : c->profile_saved < 0 ? "failed"
                                                                                   : "none");
}

static void put_stats(record_t *r, const umadv_stats_t *s)
{
    put(r, "gpu_peak_used %llu\n", (unsigned long long)s->gpu_peak_used);
    put(r, "resident_peak %llu\n", (unsigned long long)s->resident_peak);
    put(r, "managed_peak %llu\n", (unsigned long long)s->managed_peak);
    put(r, "gpu_faults %llu\n", (unsigned long long)s->gpu_faults);
    put(r, "bytes_to_gpu %llu\n", (unsigned long long)(s->fetched_bytes + s->restored_bytes));
    put(r, "bytes_to_host %llu\n", (unsigned long long)(s->evicted_bytes + s->staged_bytes));
    put(r, "plans %llu\n", (unsigned long long)s->plans);
    put(r, "profiles %llu\n", (unsigned long long)s->profiles);
    put(r, "profile_end_ms %.3f\n", (double)s->profile_end_ns / 1e6);
    put(r, "plan_ms %.3f\n", (double)s->plan_ns / 1e6);
    put(r, "replay_start_ms %.3f\n", (double)s->replay_start_ns / 1e6);
}

/* A distributed job's process: which rank this record is, as its log
 * lines say. */
static void put_rank(record_t *r)
{
    const char *rank = umadv__log_job_rank();

    if (rank[0] != '\0')
        put(r, "rank %s\n", rank);
}

static void record_build(record_t *r, const umadv_config_t *config, const umadv_stats_t *s,
                         const umadv_inject_counts_t *c)
{
    r->len = 0;
    put(r, "umadv-run-summary 1\n");
    put(r, "pid %ld\n", (long)getpid());
    put_rank(r);
    put(r, "policy %s\n", umadv_policy_name(config->policy));
    put(r, "budget %llu\n", (unsigned long long)config->budget);
    put_iterations(r, c);
    put_stats(r, s);
    put(r, "routed_mallocs %llu\n", (unsigned long long)c->routed_mallocs);
    put(r, "routed_managed %llu\n", (unsigned long long)c->routed_managed);
    put(r, "unrouted %llu\n", (unsigned long long)c->unrouted);
    put(r, "end\n");
}

static void record_append(const char *path, const record_t *r)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ssize_t n;

    if (fd < 0) {
        umadv_error("UMADV_RUN_SUMMARY=%s: cannot open: %m", path);
        return;
    }
    n = write(fd, r->text, r->len);
    if (n != (ssize_t)r->len)
        umadv_error("UMADV_RUN_SUMMARY=%s: cannot write the record: %m", path);
    close(fd);
}

void umadv__inject_summary_write(void)
{
    static atomic_int written;
    const umadv_config_t *config = umadv__inject_config();
    umadv_stats_t stats = {.size = sizeof(stats)};
    umadv_inject_counts_t counts;
    umadv_context_t ctx;
    record_t r;

    if (config == NULL || config->run_summary[0] == '\0' || atomic_exchange(&written, 1))
        return;
    ctx = umadv__inject_context();
    if (ctx == NULL || umadv_get_stats(ctx, &stats) != UMADV_OK)
        return;
    umadv__inject_counts(&counts);
    record_build(&r, config, &stats, &counts);
    record_append(config->run_summary, &r);
}

/* UMADV_TIMELINE: the process's context is never destroyed, which is
 * where a context writes its timeline otherwise. A failure is logged
 * where it is found. */
static void timeline_write(void)
{
    const umadv_config_t *config = umadv__inject_config();
    umadv_context_t ctx;

    if (config == NULL || config->timeline[0] == '\0')
        return;
    ctx = umadv__inject_context();
    if (ctx != NULL && umadv_timeline_save(ctx, NULL) == UMADV_OK)
        umadv_info("UMADV_TIMELINE: the measured timeline is in %s", config->timeline);
}

void umadv__inject_exit(void)
{
    static atomic_int done;

    if (atomic_exchange(&done, 1))
        return;
    umadv__inject_window_close(); /* first: the record says whether it was saved */
    timeline_write();
    umadv__inject_summary_write();
}
