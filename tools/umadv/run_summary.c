/*
 * Reading and printing umadv run's summary records. A record is
 * "umadv-run-summary 1", lines of "KEY VALUE" and "end"; keys this
 * version does not know are skipped, so a newer library's records still
 * print.
 */
#include "run_summary.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SUMMARY_MAGIC "umadv-run-summary 1"

typedef struct summary {
    char     policy[32], plan[64], iterations_by[16], profile[16]; /* profile: "" unless
                                                                 * profile mode */
    char     rank[16];  /* "" unless a rank of a distributed job */
    long     pid;
    uint64_t budget, iterations, replayed, gpu_peak, resident_peak, managed_peak;
    uint64_t faults, to_gpu, to_host, plans, profiles, routed_mallocs, routed_managed, unrouted;
    double   ms, replayed_ms;
    double   window_ms; /* UMADV_PROFILE_SECONDS's window as recorded; 0: none */
    double   profile_end_ms, plan_ms, replay_start_ms; /* umadv's own calls */
} summary_t;

typedef enum { KEY_U64, KEY_DOUBLE, KEY_LONG, KEY_WORD } key_type_t;

typedef struct key {
    const char *name;
    key_type_t  type;
    size_t      offset, width;
} key_t_;

#define K(_name, _type, _member) \
    {_name, _type, offsetof(summary_t, _member), sizeof(((summary_t *)NULL)->_member)}

static const key_t_ keys[] = {
    K("pid", KEY_LONG, pid),
    K("rank", KEY_WORD, rank),
    K("policy", KEY_WORD, policy),
    K("budget", KEY_U64, budget),
    K("iterations", KEY_U64, iterations),
    K("ms_per_iteration", KEY_DOUBLE, ms),
    K("replayed_iterations", KEY_U64, replayed),
    K("ms_per_replayed_iteration", KEY_DOUBLE, replayed_ms),
    K("profile_window_ms", KEY_DOUBLE, window_ms),
    K("iterations_by", KEY_WORD, iterations_by),
    K("plan", KEY_WORD, plan),
    K("profile", KEY_WORD, profile),
    K("gpu_peak_used", KEY_U64, gpu_peak),
    K("resident_peak", KEY_U64, resident_peak),
    K("managed_peak", KEY_U64, managed_peak),
    K("gpu_faults", KEY_U64, faults),
    K("bytes_to_gpu", KEY_U64, to_gpu),
    K("bytes_to_host", KEY_U64, to_host),
    K("plans", KEY_U64, plans),
    K("profiles", KEY_U64, profiles),
    K("profile_end_ms", KEY_DOUBLE, profile_end_ms),
    K("plan_ms", KEY_DOUBLE, plan_ms),
    K("replay_start_ms", KEY_DOUBLE, replay_start_ms),
    K("routed_mallocs", KEY_U64, routed_mallocs),
    K("routed_managed", KEY_U64, routed_managed),
    K("unrouted", KEY_U64, unrouted),
};

/* Store @value for @key in @s; -1 when it is not of the key's type. */
static int key_store(const key_t_ *key, const char *value, summary_t *s)
{
    char *dst = (char *)s + key->offset, *end;

    errno = 0;
    switch (key->type) {
    case KEY_U64: {
        uint64_t v = strtoull(value, &end, 10);
        if (value[0] < '0' || value[0] > '9')
            return -1;
        memcpy(dst, &v, sizeof(v));
        break;
    }
    case KEY_DOUBLE: {
        double v = strtod(value, &end);
        memcpy(dst, &v, sizeof(v));
        break;
    }
    case KEY_LONG: {
        long v = strtol(value, &end, 10);
        memcpy(dst, &v, sizeof(v));
        break;
    }
    case KEY_WORD:
        if (strlen(value) >= key->width)
            return -1;
        memcpy(dst, value, strlen(value) + 1);
        return 0;
    }
    return errno != 0 || end == value || *end != '\0' ? -1 : 0;
}

/* One "KEY VALUE" line (newline removed); -1 when malformed. */
static int summary_line(char *line, summary_t *s)
{
    char *space = strchr(line, ' ');

    if (space == NULL)
        return -1;
    *space = '\0';
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strcmp(keys[i].name, line) == 0)
            return key_store(&keys[i], space + 1, s);
    }
    return 0; /* a key of a newer library */
}

static const char *gib(uint64_t bytes, char *buf, size_t len)
{
    return umadv__cli_gib(bytes, buf, len);
}

static void print_iterations(const summary_t *s, FILE *stream)
{
    if (strcmp(s->iterations_by, "program") == 0) {
        fputs("  iterations: the program marks its own through umadv's API; umadv run left "
              "them to it\n", stream);
        return;
    }
    if (s->window_ms > 0) { /* one window of time, not iterations */
        fprintf(stream, "  profiled a window of %.3f s (--seconds); profile: %s\n",
                s->window_ms / 1e3, s->profile[0] != '\0' ? s->profile : "none");
        return;
    }
    if (s->iterations == 0) {
        fputs("  iterations: none found (no NVTX range named UMADV_ITERATION_RANGE, no "
              "optimizer step, no repeating launch sequence): nothing was profiled or "
              "planned\n", stream);
        return;
    }
    fprintf(stream, "  iterations %" PRIu64 ", %.3f ms/iteration", s->iterations, s->ms);
    if (s->replayed > 0)
        fprintf(stream, " (%" PRIu64 " replaying the plan: %.3f ms/iteration)", s->replayed,
                s->replayed_ms);
    if (s->profile[0] != '\0')
        fprintf(stream, "; profile: %s\n", s->profile);
    else
        fprintf(stream, "; plan: %s\n", s->plan);
}

/* The command its messages name: "umadv run: ...". */
static const char *summary_who = "run";

static void summary_print(const summary_t *s, const char *program, FILE *stream)
{
    char a[32], b[32], c[32];

    if (s->budget == 0)
        snprintf(a, sizeof(a), "none");
    else
        snprintf(a, sizeof(a), "%s GiB", gib(s->budget, b, sizeof(b)));
    fprintf(stream, "umadv %s: %s (pid %ld%s%s): policy %s, budget %s\n", summary_who, program,
            s->pid, s->rank[0] != '\0' ? ", rank " : "", s->rank, s->policy, a);
    print_iterations(s, stream);
    fprintf(stream, "  peak GPU memory %s GiB (umadv resident peak %s GiB, managed peak %s GiB)\n",
            gib(s->gpu_peak, a, sizeof(a)), gib(s->resident_peak, b, sizeof(b)),
            gib(s->managed_peak, c, sizeof(c)));
    fprintf(stream, "  faults %" PRIu64 "; to GPU %s GiB, to host %s GiB; plans %" PRIu64
            " (re-plans %" PRIu64 "); profiled iterations %" PRIu64 "\n", s->faults,
            gib(s->to_gpu, a, sizeof(a)), gib(s->to_host, b, sizeof(b)), s->plans,
            s->plans > 0 ? s->plans - 1 : 0, s->profiles);
    if (s->profile_end_ms > 0 || s->plan_ms > 0 || s->replay_start_ms > 0)
        fprintf(stream, "  umadv's own calls: ending profiles %.1f ms, planning %.1f ms, "
                "starting replays %.1f ms\n", s->profile_end_ms, s->plan_ms,
                s->replay_start_ms);
    fprintf(stream, "  allocations: %" PRIu64 " cudaMalloc routed, %" PRIu64
            " cudaMallocManaged managed, %" PRIu64 " left to CUDA\n", s->routed_mallocs,
            s->routed_managed, s->unrouted);
}

/* Read one record after its magic line; 0 at its "end", -1 if cut short
 * or malformed (*line_p: the line number of the problem). */
static int summary_read(FILE *file, summary_t *s, int *line_p)
{
    char line[512];

    memset(s, 0, sizeof(*s));
    snprintf(s->policy, sizeof(s->policy), "?");
    snprintf(s->plan, sizeof(s->plan), "?");
    while (fgets(line, sizeof(line), file) != NULL) {
        (*line_p)++;
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "end") == 0)
            return 0;
        if (summary_line(line, s) != 0)
            return -1;
    }
    return -1;
}

static int summary_fail(FILE *stream, const char *path, int line, const char *what)
{
    fprintf(stream, "umadv %s: summary %s, line %d: %s\n", summary_who, path, line, what);
    return -1;
}

int umadv__run_summary_print(const char *path, const char *command, const char *program,
                             FILE *stream)
{
    summary_who = command;
    FILE *file = fopen(path, "r");
    char line[512];
    int records = 0, lineno = 0;
    summary_t s;

    if (file == NULL) {
        fprintf(stream, "umadv %s: cannot read the summary %s: %s\n", summary_who, path,
                strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), file) != NULL) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, SUMMARY_MAGIC) != 0) {
            fclose(file);
            return summary_fail(stream, path, lineno, "not a umadv run summary record");
        }
        if (summary_read(file, &s, &lineno) != 0) {
            fclose(file);
            return summary_fail(stream, path, lineno, "a malformed or unfinished record");
        }
        summary_print(&s, program, stream);
        records++;
    }
    fclose(file);
    if (records == 0)
        fprintf(stream, "umadv %s: %s never used umadv (no CUDA allocation or iteration "
                "reached it): nothing to summarise\n", summary_who, program);
    return records;
}
