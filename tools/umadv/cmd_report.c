/*
 * umadv report: a summary of a trace for people, the first thing to read
 * before planning: what is big, what is slow, what faulted, and what to
 * do about it (advice.c). umadv profile prints the same report.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/outfile.h"
#include "common/util.h"
#include "report.h"
#include "sim/sim.h"
#include "timeline.h"
#include "trace/trace_io.h"

const umadv_cli_option_t umadv__cli_report_options[] = {
    {"top", 0, "N", "rows in each top list (default 10)"},
    {"budget", 'b', "SIZE", "advise for this budget: 8G, or 50% of the footprint"},
    {"json", 0, NULL, "print JSON instead of text"},
    {"timeline", 0, "FILE", "write the measured window as a Chrome trace (Perfetto) to FILE"},
    {NULL, 0, NULL, NULL}
};

/* A sort key and the index it belongs to; ties keep index order so the
 * output never depends on the sort's stability. */
typedef struct ranked {
    uint64_t key;
    uint32_t index;
} ranked_t;

typedef struct report {
    const char    *path;
    const umadv_report_opts_t *opts;
    umadv_trace_t  trace;
    uint64_t      *step_bytes; /* working set of each step */
    uint64_t      *step_faults;
    uint64_t      *step_ns;    /* duration of each step */
    umadv_report_kernels_t kernels; /* by fault stall, from the activity */
    umadv_json_t  *json;       /* while JSON is written */
} report_t;

static int ranked_compare(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;

    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The (at most) @max largest of @keys with a key above 0, into @top;
 * returns how many. */
static size_t rank_top(const uint64_t *keys, uint32_t n, size_t max, ranked_t *top)
{
    ranked_t *all = malloc(sizeof(*all) * (n ? n : 1));
    size_t count = 0;

    if (all == NULL)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        if (keys[i] > 0)
            all[count++] = (ranked_t){keys[i], i};
    }
    qsort(all, count, sizeof(*all), ranked_compare);
    count = UMADV_MIN(count, max);
    memcpy(top, all, count * sizeof(*all));
    free(all);
    return count;
}

static int compute_steps(report_t *rep)
{
    const umadv_trace_t *trace = &rep->trace;

    rep->step_bytes = calloc(trace->nsteps ? trace->nsteps : 1, sizeof(uint64_t));
    rep->step_faults = calloc(trace->nsteps ? trace->nsteps : 1, sizeof(uint64_t));
    rep->step_ns = calloc(trace->nsteps ? trace->nsteps : 1, sizeof(uint64_t));
    if (rep->step_bytes == NULL || rep->step_faults == NULL || rep->step_ns == NULL)
        return umadv__cli_fail("out of memory");
    for (uint32_t s = 0; s < trace->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        rep->step_ns[s] = step->duration_ns;
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
            const umadv_trace_access_t *ac = &trace->accesses[a];
            rep->step_bytes[s] += umadv__trace_run_bytes(trace, ac->alloc, ac->first, ac->count);
            rep->step_faults[s] += ac->faults;
        }
    }
    return 0;
}

static const char *name_or_dash(const char *name)
{
    return name != NULL && name[0] != '\0' ? name : "-";
}

static void print_device(const umadv_trace_t *trace)
{
    const umadv_device_desc_t *dev = &trace->device;
    const umadv_link_model_t *link = &trace->link;
    char mem[32];

    printf("device:       %s, %s, compute capability %d.%d, driver %d, pci %s\n",
           name_or_dash(dev->name), umadv__size_format(dev->memory, mem, sizeof(mem)),
           dev->cc_major, dev->cc_minor, dev->driver_version, name_or_dash(dev->pci_bus_id));
    printf("link model:   fetch %.1f GB/s + %.0f us/call, evict %.1f GB/s + %.0f us/call\n",
           link->fetch_bw / 1e9, link->fetch_latency * 1e6, link->evict_bw / 1e9,
           link->evict_latency * 1e6);
    printf("              fault %.1f GB/s + %.0f us/section, remote access %.1f GB/s\n",
           link->fault_bw / 1e9, link->fault_latency * 1e6, link->remote_bw / 1e9);
    if (link->duplex_fetch_bw != 0 || link->duplex_evict_bw != 0)
        printf("              both ways at once: fetch %.1f GB/s, evict %.1f GB/s\n",
               link->duplex_fetch_bw / 1e9, link->duplex_evict_bw / 1e9);
    if (umadv__link_stage_evict_known(link))
        printf("              staged eviction %.1f GB/s + %.0f us/call\n",
               link->stage_evict_bw / 1e9, link->stage_evict_latency * 1e6);
    if (umadv__link_stage_restore_known(link))
        printf("              staged restore %.1f GB/s + %.0f us/call\n",
               link->stage_restore_bw / 1e9, link->stage_restore_latency * 1e6);
    if (link->stage_duplex_evict_bw != 0 || link->stage_duplex_restore_bw != 0)
        printf("              staged both ways at once: out %.1f GB/s, back %.1f GB/s\n",
               link->stage_duplex_evict_bw / 1e9, link->stage_duplex_restore_bw / 1e9);
}

/* Only for a trace that marks any (umadv-trace(5), stageable). */
static void print_stageable(const umadv_trace_t *trace)
{
    uint64_t bytes = umadv__trace_stageable_bytes(trace);
    uint32_t count = 0;
    char size[32];

    if (bytes == 0)
        return;
    for (uint32_t a = 0; a < trace->nallocs; a++)
        count += umadv__trace_alloc_stageable(trace, (uint32_t)a);
    printf("stageable:    %u allocations, %s: evicted through pinned staging\n", count,
           umadv__size_format(bytes, size, sizeof(size)));
}

static void print_steps_line(const umadv_trace_t *trace)
{
    uint32_t kinds[UMADV_STEP_KIND_COUNT] = {0};

    for (uint32_t s = 0; s < trace->nsteps; s++) {
        if ((unsigned)trace->steps[s].kind < UMADV_STEP_KIND_COUNT)
            kinds[trace->steps[s].kind]++;
    }
    printf("steps:        %u (", trace->nsteps);
    for (unsigned k = 0; k < UMADV_STEP_KIND_COUNT; k++)
        printf("%s%s %u", k ? ", " : "", umadv__step_kind_name((umadv_step_kind_t)k), kinds[k]);
    printf(")\n");
}

/* Footprint and compute time of the iteration the planner would use. */
static void print_iteration(const umadv_trace_t *trace)
{
    umadv_sim_params_t params;
    umadv_sim_result_t oracle;
    char size[32];
    double total = 0;

    for (uint32_t s = 0; s < trace->nsteps; s++)
        total += (double)trace->steps[s].duration_ns * 1e-6;
    umadv__sim_params_default(trace, UMADV_POLICY_ORACLE, 0, &params);
    if (umadv__sim_run(trace, &params, &oracle) != UMADV_OK) {
        printf("footprint:    unknown (the simulator failed)\n");
        return;
    }
    printf("footprint:    %s (oracle peak residency, iteration %u)\n",
           umadv__size_format(oracle.peak_resident, size, sizeof(size)), params.iteration);
    printf("compute time: %.2f ms in iteration %u, %.2f ms in all %u\n",
           oracle.compute_s * 1e3, params.iteration, total, trace->niterations);
    if (umadv__sim_host_bound(&oracle))
        printf("host-bound:   %.2f ms in iteration %u with every section resident: the "
               "application launches its steps no sooner\n", oracle.resident_s * 1e3,
               params.iteration);
}

static void print_summary(const report_t *rep)
{
    const umadv_trace_t *trace = &rep->trace;
    char s1[32], s2[32];
    uint64_t total = 0;

    for (uint32_t a = 0; a < trace->nallocs; a++)
        total += trace->allocs[a].size;
    printf("trace:        %s\n", rep->path);
    printf("source:       %s\n", name_or_dash(trace->source));
    print_device(trace);
    printf("section size: %s\n", umadv__size_format(trace->section_size, s1, sizeof(s1)));
    printf("iterations:   %u\n", trace->niterations);
    print_steps_line(trace);
    printf("allocations:  %u, %s in %u sections\n", trace->nallocs,
           umadv__size_format(total, s2, sizeof(s2)), trace->nsections);
    print_stageable(trace);
    print_iteration(trace);
}

static void print_kinds(const umadv_trace_t *trace)
{
    uint32_t count[UMADV_ALLOC_KIND_COUNT] = {0};
    uint64_t bytes[UMADV_ALLOC_KIND_COUNT] = {0};
    char size[32];

    for (uint32_t a = 0; a < trace->nallocs; a++) {
        unsigned k = (unsigned)trace->allocs[a].kind < UMADV_ALLOC_KIND_COUNT ?
                     trace->allocs[a].kind : UMADV_ALLOC_OTHER;
        count[k]++;
        bytes[k] += trace->allocs[a].size;
    }
    printf("\nallocations by kind:\n  %-12s %7s %12s\n", "kind", "count", "bytes");
    for (unsigned k = 0; k < UMADV_ALLOC_KIND_COUNT; k++) {
        if (count[k] > 0)
            printf("  %-12s %7u %12s\n", umadv__alloc_kind_name((umadv_alloc_kind_t)k),
                   count[k], umadv__size_format(bytes[k], size, sizeof(size)));
    }
}

static void print_step_table(const report_t *rep, const char *title, const uint64_t *keys)
{
    const umadv_trace_t *trace = &rep->trace;
    ranked_t *top = malloc(sizeof(*top) * rep->opts->top);
    size_t n = top != NULL ? rank_top(keys, trace->nsteps, rep->opts->top, top) : 0;
    char size[32];

    printf("\n%s (top %zu of %u):\n", title, n, trace->nsteps);
    printf("  %6s %5s %-7s %12s %11s %8s %7s  %s\n", "step", "iter", "kind", "working set",
           "duration ms", "accesses", "faults", "name");
    for (size_t i = 0; i < n; i++) {
        const umadv_trace_step_t *step = &trace->steps[top[i].index];
        printf("  %6u %5u %-7s %12s %11.3f %8u %7llu  %s\n", top[i].index, step->iteration,
               umadv__step_kind_name(step->kind),
               umadv__size_format(rep->step_bytes[top[i].index], size, sizeof(size)),
               (double)step->duration_ns * 1e-6, step->naccesses,
               (unsigned long long)rep->step_faults[top[i].index], name_or_dash(step->name));
    }
    free(top);
}

static void format_step(uint32_t step, char *buf, size_t len)
{
    if (step == UMADV_STEP_NONE)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%u", step);
}

/* Whether any allocation of @trace says where it was made (profiles of
 * umadv profile): only then has the table a site column, so the reports
 * of other traces read as before. */
static int has_sites(const umadv_trace_t *trace)
{
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        if (trace->allocs[a].site != NULL)
            return 1;
    }
    return 0;
}

static int print_alloc_table(const umadv_trace_t *trace, size_t max)
{
    uint64_t *sizes = malloc(sizeof(*sizes) * (trace->nallocs ? trace->nallocs : 1));
    ranked_t *top = malloc(sizeof(*top) * max);
    char size[32], from[16], to[16];
    int sites;
    size_t n;

    if (sizes == NULL || top == NULL) {
        free(sizes);
        free(top);
        return umadv__cli_fail("out of memory");
    }
    for (uint32_t a = 0; a < trace->nallocs; a++)
        sizes[a] = trace->allocs[a].size;
    n = rank_top(sizes, trace->nallocs, max, top);
    free(sizes);
    sites = has_sites(trace);
    printf("\nlargest allocations (top %zu of %u):\n", n, trace->nallocs);
    printf("  %6s %-11s %12s %8s %13s  %s\n", "id", "kind", "size", "sections", "lifetime",
           sites ? "tag, allocated at" : "tag");
    for (size_t i = 0; i < n; i++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[top[i].index];
        format_step(alloc->alloc_step, from, sizeof(from));
        format_step(alloc->free_step, to, sizeof(to));
        printf("  %6u %-11s %12s %8u %6s..%-5s  %s%s%s\n", top[i].index,
               umadv__alloc_kind_name(alloc->kind), umadv__size_format(alloc->size, size, 32),
               alloc->nsections, from, to, name_or_dash(alloc->tag), sites ? ", " : "",
               sites ? name_or_dash(alloc->site) : "");
    }
    free(top);
    return 0;
}

static void print_faults(const report_t *rep)
{
    const umadv_trace_t *trace = &rep->trace;
    uint64_t total = 0;
    uint32_t steps = 0;

    for (uint32_t s = 0; s < trace->nsteps; s++) {
        total += rep->step_faults[s];
        steps += rep->step_faults[s] > 0;
    }
    if (total == 0) {
        printf("\nfaults:       none recorded\n");
        return;
    }
    printf("\nfaults:       %llu fault groups in %u steps\n", (unsigned long long)total, steps);
    print_step_table(rep, "steps by faults", rep->step_faults);
}

/* ---- JSON: the same tables ---- */

static void json_step_table(const report_t *rep, const char *key, const uint64_t *keys)
{
    const umadv_trace_t *trace = &rep->trace;
    ranked_t *top = malloc(sizeof(*top) * rep->opts->top);
    size_t n = top != NULL ? rank_top(keys, trace->nsteps, rep->opts->top, top) : 0;
    umadv_json_t *json = rep->json;

    umadv__json_begin_array(json, key);
    for (size_t i = 0; i < n; i++) {
        const umadv_trace_step_t *step = &trace->steps[top[i].index];
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_u64(json, "step", top[i].index);
        umadv__json_u64(json, "iteration", step->iteration);
        umadv__json_string(json, "kind", umadv__step_kind_name(step->kind));
        umadv__json_u64(json, "working_set_bytes", rep->step_bytes[top[i].index]);
        umadv__json_double(json, "duration_ms", (double)step->duration_ns * 1e-6, 3);
        umadv__json_u64(json, "accesses", step->naccesses);
        umadv__json_u64(json, "faults", rep->step_faults[top[i].index]);
        umadv__json_string(json, "name", step->name);
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
    free(top);
}

static void json_alloc_table(const report_t *rep)
{
    const umadv_trace_t *trace = &rep->trace;
    uint64_t *sizes = malloc(sizeof(*sizes) * (trace->nallocs ? trace->nallocs : 1));
    ranked_t *top = malloc(sizeof(*top) * rep->opts->top);
    size_t n = 0;

    if (sizes != NULL && top != NULL) {
        for (uint32_t a = 0; a < trace->nallocs; a++)
            sizes[a] = trace->allocs[a].size;
        n = rank_top(sizes, trace->nallocs, rep->opts->top, top);
    }
    umadv__json_begin_array(rep->json, "largest_allocations");
    for (size_t i = 0; i < n; i++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[top[i].index];
        umadv__json_begin_object_inline(rep->json, NULL);
        umadv__json_u64(rep->json, "id", top[i].index);
        umadv__json_string(rep->json, "kind", umadv__alloc_kind_name(alloc->kind));
        umadv__json_u64(rep->json, "size_bytes", alloc->size);
        umadv__json_u64(rep->json, "sections", alloc->nsections);
        umadv__json_string(rep->json, "tag", alloc->tag);
        if (alloc->site != NULL)
            umadv__json_string(rep->json, "site", alloc->site);
        umadv__json_end_object(rep->json);
    }
    umadv__json_end_array(rep->json);
    free(sizes);
    free(top);
}

static void json_summary(const report_t *rep, const umadv_report_advice_t *advice)
{
    const umadv_trace_t *trace = &rep->trace;
    umadv_json_t *json = rep->json;
    uint64_t total = 0, faults = 0;

    for (uint32_t a = 0; a < trace->nallocs; a++)
        total += trace->allocs[a].size;
    for (uint32_t s = 0; s < trace->nsteps; s++)
        faults += rep->step_faults[s];
    umadv__json_string(json, "trace", rep->path);
    umadv__json_string(json, "source", trace->source);
    umadv__json_string(json, "device", trace->device.name);
    umadv__json_u64(json, "section_size", trace->section_size);
    umadv__json_u64(json, "iterations", trace->niterations);
    umadv__json_u64(json, "steps", trace->nsteps);
    umadv__json_u64(json, "allocations", trace->nallocs);
    umadv__json_u64(json, "allocated_bytes", total);
    umadv__json_u64(json, "footprint_bytes", advice->footprint);
    umadv__json_double(json, "oracle_ms", advice->oracle_s * 1e3, 3);
    umadv__json_u64(json, "trace_fault_groups", faults);
}

static void print_json(report_t *rep, const umadv_report_advice_t *advice, FILE *out)
{
    umadv_json_t json;

    umadv__json_init(&json, out);
    rep->json = &json;
    umadv__json_begin_object(&json, NULL);
    json_summary(rep, advice);
    json_step_table(rep, "largest_steps", rep->step_bytes);
    json_step_table(rep, "longest_steps", rep->step_ns);
    json_alloc_table(rep);
    json_step_table(rep, "steps_by_faults", rep->step_faults);
    umadv__report_kernels_print_json(&rep->trace, &rep->kernels, rep->opts->top, &json);
    umadv__advice_print_json(&rep->trace, advice, rep->opts, &json);
    umadv__json_end_object(&json);
    fputc('\n', out);
    rep->json = NULL;
}

/* ---- the report ---- */

static int print_text(report_t *rep, const umadv_report_advice_t *advice)
{
    int rc;

    print_summary(rep);
    print_kinds(&rep->trace);
    print_step_table(rep, "largest steps by working set", rep->step_bytes);
    print_step_table(rep, "longest steps", rep->step_ns);
    rc = print_alloc_table(&rep->trace, rep->opts->top);
    print_faults(rep);
    umadv__report_kernels_print_text(&rep->trace, &rep->kernels, rep->opts->top);
    umadv__advice_print_text(&rep->trace, advice, rep->opts);
    return rc;
}

/* The measured window of @rep's trace into @path: the trace must have
 * one (profiles of umadv since the activity records). */
static int write_timeline(const report_t *rep, const char *path)
{
    umadv_timeline_t tl;
    char name[128];
    int rc;

    if (rep->trace.activity.nevents == 0)
        return umadv__cli_fail("%s has no measured activity (umadv-trace(5), ev records): no "
                               "timeline; a trace of umadv synth has none, nor one profiled "
                               "with no kernel or unified-memory record", rep->path);
    if ((rc = umadv__timeline_open(&tl, path, &rep->trace)) != 0)
        return rc;
    snprintf(name, sizeof(name), "measured, %s",
             rep->trace.device.name[0] != '\0' ? rep->trace.device.name : "gpu");
    rc = umadv__timeline_measured(&tl, name);
    if (rc != 0) {
        umadv__timeline_discard(&tl);
        return rc;
    }
    return umadv__timeline_close(&tl);
}

/* Read @path, compute what the report shows, call @show, write the
 * timeline if asked; 0 or an exit status. */
static int with_report(const char *path, const umadv_report_opts_t *opts,
                       int (*show)(report_t *, const umadv_report_advice_t *, void *), void *arg)
{
    umadv_report_advice_t advice;
    report_t rep;
    char why[512];
    int rc;

    memset(&rep, 0, sizeof(rep));
    memset(&advice, 0, sizeof(advice));
    rep.path = path;
    rep.opts = opts;
    if (umadv__cli_input(path) != 0)
        return UMADV_EXIT_FAILURE;
    if (umadv__trace_read_file(path, &rep.trace, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    if ((rc = compute_steps(&rep)) == 0 &&
        (rc = umadv__report_kernels(&rep.trace, &rep.kernels)) == 0 &&
        (rc = umadv__advice_compute(&rep.trace, opts, &advice)) == 0)
        rc = show(&rep, &advice, arg);
    if (rc == 0 && opts->timeline != NULL)
        rc = write_timeline(&rep, opts->timeline);
    umadv__advice_cleanup(&advice);
    free(rep.kernels.rows);
    free(rep.step_ns);
    free(rep.step_faults);
    free(rep.step_bytes);
    umadv__trace_cleanup(&rep.trace);
    return rc;
}

static int flush_stdout(int rc)
{
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        rc = umadv__cli_fail("writing the output: %m");
    return rc;
}

static int show_text(report_t *rep, const umadv_report_advice_t *advice, void *arg)
{
    (void)arg;
    return flush_stdout(print_text(rep, advice));
}

static int show_json(report_t *rep, const umadv_report_advice_t *advice, void *arg)
{
    (void)arg;
    print_json(rep, advice, stdout);
    return flush_stdout(0);
}

/* The text on standard output, the JSON into the file @arg names. */
static int show_both(report_t *rep, const umadv_report_advice_t *advice, void *arg)
{
    umadv_outfile_t of;
    char why[512];
    int rc;

    if (umadv__outfile_open(&of, arg, "the JSON report", why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    print_json(rep, advice, of.stream);
    if (umadv__outfile_commit(&of, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    rc = print_text(rep, advice);
    return flush_stdout(rc);
}

int umadv__report_print(const char *path, const umadv_report_opts_t *opts, int json)
{
    return with_report(path, opts, json ? show_json : show_text, NULL);
}

int umadv__report_print_both(const char *path, const umadv_report_opts_t *opts,
                             const char *json_path)
{
    return with_report(path, opts, show_both, (void *)json_path);
}

/* ---- the command ---- */

int umadv__report_parse_budget(const char *text, umadv_report_opts_t *opts)
{
    size_t len = strlen(text);
    char *end;

    opts->budget = 0;
    opts->budget_percent = 0;
    if (len > 1 && text[len - 1] == '%') {
        opts->budget_percent = strtod(text, &end);
        return end == text + len - 1 && opts->budget_percent > 0 &&
               opts->budget_percent <= 100 ? 0 : -1;
    }
    return umadv_size_parse(text, &opts->budget) == UMADV_OK && opts->budget > 0 ? 0 : -1;
}

typedef struct report_args {
    const char         *path;
    int                 json;
    umadv_report_opts_t opts;
} report_args_t;

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, report_args_t *args)
{
    if (strcmp(opt->name, "json") == 0) {
        args->json = 1;
    } else if (strcmp(opt->name, "timeline") == 0) {
        if (strcmp(value, "-") == 0)
            return umadv__cli_usage_error(cmd, UMADV_REPORT_TIMELINE_DASH);
        args->opts.timeline = value;
    } else if (strcmp(opt->name, "top") == 0) {
        if (umadv__cli_parse_u32(value, 1, 1000000, &args->opts.top) != 0)
            return umadv__cli_bad_value(cmd, opt, value, "an integer between 1 and 1000000");
    } else if (strcmp(opt->name, "budget") == 0) {
        if (umadv__report_parse_budget(value, &args->opts) != 0)
            return umadv__cli_bad_value(cmd, opt, value, UMADV_REPORT_BUDGET_RULE);
    }
    return 0;
}

static int parse_args(const umadv_cli_command_t *cmd, int argc, char **argv, report_args_t *args)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    int rc;

    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            if (args->path == NULL)
                return umadv__cli_usage_error(cmd, "'report' needs a TRACE file");
            return 0;
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return -1;
        case UMADV_CLI_ARG:
            if (args->path != NULL)
                return umadv__cli_usage_error(cmd, "'report' takes one trace, got '%s' too",
                                              value);
            args->path = value;
            break;
        case UMADV_CLI_OPTION:
            if ((rc = take_option(cmd, opt, value, args)) != 0)
                return rc;
            break;
        default: /* the parser reported the error */
            return UMADV_EXIT_USAGE;
        }
    }
}

int umadv__cmd_report(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    report_args_t args = {.opts = {.top = UMADV_REPORT_TOP_DEFAULT}};
    int rc;

    if ((rc = parse_args(cmd, argc, argv, &args)) != 0)
        return rc < 0 ? UMADV_EXIT_OK : rc;
    return umadv__report_print(args.path, &args.opts, args.json);
}
