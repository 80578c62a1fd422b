/*
 * umadv report: a summary of a trace for people, the first thing to read
 * before planning: what is big, what is slow, what faulted.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/sim.h"
#include "trace/trace_io.h"

#define REPORT_TOP 10

const umadv_cli_option_t umadv__cli_report_options[] = {
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
    umadv_trace_t  trace;
    uint64_t      *step_bytes; /* working set of each step */
    uint64_t      *step_faults;
    uint64_t      *step_ns;    /* duration of each step */
} report_t;

static int ranked_compare(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;

    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The (at most) REPORT_TOP largest of @keys with a key above 0, into @top;
 * returns how many. */
static size_t rank_top(const uint64_t *keys, uint32_t n, ranked_t *top)
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
    count = UMADV_MIN(count, (size_t)REPORT_TOP);
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
        count += trace->allocs[a].stageable != 0;
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
    ranked_t top[REPORT_TOP];
    size_t n = rank_top(keys, trace->nsteps, top);
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
}

static void format_step(uint32_t step, char *buf, size_t len)
{
    if (step == UMADV_STEP_NONE)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%u", step);
}

static int print_alloc_table(const umadv_trace_t *trace)
{
    uint64_t *sizes = malloc(sizeof(*sizes) * (trace->nallocs ? trace->nallocs : 1));
    ranked_t top[REPORT_TOP];
    char size[32], from[16], to[16];
    size_t n;

    if (sizes == NULL)
        return umadv__cli_fail("out of memory");
    for (uint32_t a = 0; a < trace->nallocs; a++)
        sizes[a] = trace->allocs[a].size;
    n = rank_top(sizes, trace->nallocs, top);
    free(sizes);
    printf("\nlargest allocations (top %zu of %u):\n", n, trace->nallocs);
    printf("  %6s %-11s %12s %8s %13s  %s\n", "id", "kind", "size", "sections", "lifetime",
           "tag");
    for (size_t i = 0; i < n; i++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[top[i].index];
        format_step(alloc->alloc_step, from, sizeof(from));
        format_step(alloc->free_step, to, sizeof(to));
        printf("  %6u %-11s %12s %8u %6s..%-5s  %s\n", top[i].index,
               umadv__alloc_kind_name(alloc->kind), umadv__size_format(alloc->size, size, 32),
               alloc->nsections, from, to, name_or_dash(alloc->tag));
    }
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

static int parse_args(const umadv_cli_command_t *cmd, int argc, char **argv, const char **path_p)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;

    *path_p = NULL;
    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            if (*path_p == NULL)
                return umadv__cli_usage_error(cmd, "'report' needs a TRACE file");
            return 0;
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return -1;
        case UMADV_CLI_ARG:
            if (*path_p != NULL)
                return umadv__cli_usage_error(cmd, "'report' takes one trace, got '%s' too",
                                              value);
            *path_p = value;
            break;
        default: /* no options of its own: the parser reported the error */
            return UMADV_EXIT_USAGE;
        }
    }
}

int umadv__cmd_report(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    report_t rep;
    char why[512];
    int rc;

    memset(&rep, 0, sizeof(rep));
    if ((rc = parse_args(cmd, argc, argv, &rep.path)) != 0)
        return rc < 0 ? UMADV_EXIT_OK : rc;
    if (umadv__cli_input(rep.path) != 0)
        return UMADV_EXIT_FAILURE;
    if (umadv__trace_read_file(rep.path, &rep.trace, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    if ((rc = compute_steps(&rep)) == 0) {
        print_summary(&rep);
        print_kinds(&rep.trace);
        print_step_table(&rep, "largest steps by working set", rep.step_bytes);
        print_step_table(&rep, "longest steps", rep.step_ns);
        rc = print_alloc_table(&rep.trace);
        print_faults(&rep);
        if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
            rc = umadv__cli_fail("writing the output: %m");
    }
    free(rep.step_ns);
    free(rep.step_faults);
    free(rep.step_bytes);
    umadv__trace_cleanup(&rep.trace);
    return rc;
}
