/*
 * The advice of advice.c as text and as JSON (report.h): each item with
 * its evidence, in the order a reader acts on them.
 */
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "common/util.h"
#include "report.h"

/* "umadv run --budget B --policy plan -- PROGRAM": the program's name
 * is a path at most. */
#define ADVICE_COMMAND_MAX 4200

/* ---- text ---- */

/* @bytes rounded up to a size umadv_size_parse reads back: "3.21G". */
static char *size_argument(uint64_t bytes, char *buf, size_t len)
{
    if (bytes >= UMADV_GIB)
        snprintf(buf, len, "%.2fG", ceil((double)bytes * 100.0 / (double)UMADV_GIB) / 100.0);
    else if (bytes >= UMADV_MIB)
        snprintf(buf, len, "%.0fM", ceil((double)bytes / (double)UMADV_MIB));
    else
        snprintf(buf, len, "%.0fK", ceil((double)bytes / (double)UMADV_KIB));
    return buf;
}

static const char *step_name(const umadv_trace_t *trace, uint32_t step)
{
    const char *name = trace->steps[step].name;

    return name != NULL && name[0] != '\0' ? name : "-";
}

static void print_tried(const umadv_report_advice_t *advice)
{
    char size[32], need[32];

    printf("  %-12s %12s %9s %9s %10s %13s\n", "budget", "", "plan ms", "x oracle", "demand ms",
           "demand faults");
    for (unsigned i = 0; i < advice->ntried; i++) {
        const umadv_advice_budget_t *t = &advice->tried[i];
        char label[16];
        if (t->percent != 0)
            snprintf(label, sizeof(label), "%u%%", t->percent);
        else
            snprintf(label, sizeof(label), "--budget");
        if (!t->fits) {
            printf("  %-12s %12s  too small: a step needs %s\n", label,
                   umadv__size_format(t->bytes, size, sizeof(size)),
                   umadv__size_format(advice->largest_step, need, sizeof(need)));
            continue;
        }
        printf("  %-12s %12s %9.2f %9.3f %10.2f %13llu\n", label,
               umadv__size_format(t->bytes, size, sizeof(size)), t->plan_s * 1e3,
               t->plan_s / advice->oracle_s, t->demand_s * 1e3,
               (unsigned long long)t->demand_faults);
    }
}

static void print_fault_steps(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                              const umadv_advice_budget_t *at)
{
    char size[32];

    printf("\nsteps by demand's fault cost at %s (top %u, simulated):\n",
           umadv__size_format(at->bytes, size, sizeof(size)), advice->nsteps);
    printf("  %6s %-7s %8s %9s  %s\n", "step", "kind", "faults", "stall ms", "name");
    for (uint32_t i = 0; i < advice->nsteps; i++) {
        const umadv_advice_step_t *s = &advice->steps[i];
        printf("  %6u %-7s %8llu %9.3f  %s\n", s->step,
               umadv__step_kind_name(trace->steps[s->step].kind),
               (unsigned long long)s->faults, s->stall_s * 1e3, step_name(trace, s->step));
    }
}

static void print_budget_advice(const umadv_report_advice_t *advice, const umadv_advice_budget_t *at)
{
    char size[32], foot[32];

    umadv__size_format(at->bytes, size, sizeof(size));
    umadv__size_format(advice->footprint, foot, sizeof(foot));
    if (advice->given)
        printf("  1. budget %s (--budget; the footprint is %s): plan %.2f ms/iteration, %.3fx "
               "oracle (%.2f ms); demand %.2f ms\n", size, foot, at->plan_s * 1e3,
               at->plan_s / advice->oracle_s, advice->oracle_s * 1e3, at->demand_s * 1e3);
    else
        printf("  1. budget %s (%u%% of the footprint %s) is %s: %.2f ms/iteration vs %.2f ms; "
               "demand %.2f ms\n", size, at->percent, foot,
               advice->keeps_up ? "the smallest tried where the plan keeps within " UMADV_ADVICE_SLOWDOWN_TEXT " oracle"
                                : "the footprint: no budget tried keeps the plan within "
                                  UMADV_ADVICE_SLOWDOWN_TEXT " oracle",
               at->plan_s * 1e3, advice->oracle_s * 1e3, at->demand_s * 1e3);
    if (advice->no_fault_budget != 0)
        printf("     demand stops faulting at %s\n",
               umadv__size_format(advice->no_fault_budget, size, sizeof(size)));
    else if (advice->no_copy_budget != 0)
        printf("     demand's faults copy nothing from %s on (first touches of fresh memory "
               "only)\n", umadv__size_format(advice->no_copy_budget, size, sizeof(size)));
    else
        printf("     demand's faults copy data at every budget tried\n");
}

static void print_prefetch_advice(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                                  const umadv_advice_budget_t *at)
{
    char size[32];

    if (advice->nallocs == 0) {
        printf("  2. prefetch: nothing; demand faults nothing at this budget\n");
        return;
    }
    printf("  2. prefetch (the plan does, saving %.2f ms/iteration over demand at this budget):\n",
           (at->demand_s - at->plan_s) * 1e3);
    for (uint32_t i = 0; i < advice->nallocs; i++) {
        const umadv_advice_alloc_t *a = &advice->allocs[i];
        const umadv_trace_alloc_t *alloc = &trace->allocs[a->alloc];
        printf("     allocation %u (%s, %s) before step %u (%s): demand faults %llu sections "
               "of it", a->alloc, alloc->tag != NULL && alloc->tag[0] ? alloc->tag : "-",
               umadv__size_format(alloc->size, size, sizeof(size)), a->first_step,
               step_name(trace, a->first_step), (unsigned long long)a->faults);
        if (a->trace_faults > 0)
            printf("; the profile saw %llu fault groups", (unsigned long long)a->trace_faults);
        if (alloc->site != NULL)
            printf("; allocated at %s", alloc->site);
        printf("\n");
    }
}

static void print_read_mostly_advice(const umadv_trace_t *trace, const umadv_report_advice_t *advice)
{
    char size[32];

    if (advice->nread_only_all == 0) {
        printf("  3. read-mostly: none; every allocation the iteration touches is written\n");
        return;
    }
    printf("  3. read-mostly: %u allocations (%s) are read and never written in the "
           "iteration; the plan's read-mostly advice saves %.2f ms/iteration here:\n",
           advice->nread_only_all, umadv__size_format(advice->read_only_bytes, size, 32),
           advice->read_mostly_saving_s * 1e3);
    for (uint32_t i = 0; i < advice->nread_only; i++) {
        const umadv_trace_alloc_t *alloc = &trace->allocs[advice->read_only[i]];
        printf("     allocation %u (%s, %s)\n", advice->read_only[i],
               alloc->tag != NULL && alloc->tag[0] ? alloc->tag : "-",
               umadv__size_format(alloc->size, size, sizeof(size)));
    }
}

void umadv__advice_print_text(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                              const umadv_report_opts_t *opts)
{
    const umadv_advice_budget_t *at;
    char arg[32];

    if (advice->unavailable) {
        printf("\nadvice:       none: the simulator failed on this trace\n");
        return;
    }
    printf("\nbudgets (iteration %u simulated; oracle %.2f ms):\n", advice->iteration,
           advice->oracle_s * 1e3);
    print_tried(advice);
    if (advice->chosen < 0) {
        printf("\nadvice:       none: %s\n", advice->given ? "the --budget is too small"
                                                          : "no budget tried fits a step");
        return;
    }
    at = &advice->tried[advice->chosen];
    print_fault_steps(trace, advice, at);
    printf("\nadvice (simulated):\n");
    print_budget_advice(advice, at);
    print_prefetch_advice(trace, advice, at);
    print_read_mostly_advice(trace, advice);
    printf("  4. apply it: umadv run --budget %s --policy plan -- %s\n",
           size_argument(at->bytes, arg, sizeof(arg)),
           opts->program != NULL ? opts->program : "PROGRAM");
}

/* ---- JSON ---- */

static void json_tried(const umadv_report_advice_t *advice, umadv_json_t *json)
{
    umadv__json_begin_array(json, "budgets");
    for (unsigned i = 0; i < advice->ntried; i++) {
        const umadv_advice_budget_t *t = &advice->tried[i];
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_u64(json, "percent", t->percent);
        umadv__json_u64(json, "bytes", t->bytes);
        umadv__json_bool(json, "fits", t->fits);
        if (t->fits) {
            umadv__json_double(json, "plan_ms", t->plan_s * 1e3, 3);
            umadv__json_double(json, "demand_ms", t->demand_s * 1e3, 3);
            umadv__json_u64(json, "demand_faults", t->demand_faults);
            umadv__json_u64(json, "demand_fault_bytes", t->demand_fault_bytes);
        }
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
}

static void json_lists(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                       umadv_json_t *json)
{
    umadv__json_begin_array(json, "prefetch");
    for (uint32_t i = 0; i < advice->nallocs; i++) {
        const umadv_advice_alloc_t *a = &advice->allocs[i];
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_u64(json, "allocation", a->alloc);
        umadv__json_string(json, "tag", trace->allocs[a->alloc].tag);
        umadv__json_u64(json, "size_bytes", trace->allocs[a->alloc].size);
        umadv__json_u64(json, "before_step", a->first_step);
        umadv__json_u64(json, "demand_faults", a->faults);
        umadv__json_u64(json, "trace_fault_groups", a->trace_faults);
        if (trace->allocs[a->alloc].site != NULL)
            umadv__json_string(json, "site", trace->allocs[a->alloc].site);
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
    umadv__json_begin_array(json, "steps_by_fault_cost");
    for (uint32_t i = 0; i < advice->nsteps; i++) {
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_u64(json, "step", advice->steps[i].step);
        umadv__json_string(json, "name", trace->steps[advice->steps[i].step].name);
        umadv__json_u64(json, "demand_faults", advice->steps[i].faults);
        umadv__json_double(json, "stall_ms", advice->steps[i].stall_s * 1e3, 3);
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
    umadv__json_begin_array(json, "read_mostly");
    for (uint32_t i = 0; i < advice->nread_only; i++) {
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_u64(json, "allocation", advice->read_only[i]);
        umadv__json_string(json, "tag", trace->allocs[advice->read_only[i]].tag);
        umadv__json_u64(json, "size_bytes", trace->allocs[advice->read_only[i]].size);
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
}

void umadv__advice_print_json(const umadv_trace_t *trace, const umadv_report_advice_t *advice,
                              const umadv_report_opts_t *opts, umadv_json_t *json)
{
    char arg[32], command[ADVICE_COMMAND_MAX];

    umadv__json_begin_object(json, "advice");
    umadv__json_bool(json, "available", !advice->unavailable);
    umadv__json_u64(json, "iteration", advice->iteration);
    umadv__json_double(json, "oracle_ms", advice->oracle_s * 1e3, 3);
    umadv__json_u64(json, "largest_step_bytes", advice->largest_step);
    json_tried(advice, json);
    if (advice->chosen >= 0) {
        const umadv_advice_budget_t *at = &advice->tried[advice->chosen];
        umadv__json_u64(json, "budget_bytes", at->bytes);
        umadv__json_bool(json, "keeps_up", advice->keeps_up);
        umadv__json_u64(json, "no_fault_budget_bytes", advice->no_fault_budget);
        umadv__json_u64(json, "no_copy_budget_bytes", advice->no_copy_budget);
        umadv__json_double(json, "plan_saving_ms", (at->demand_s - at->plan_s) * 1e3, 3);
        umadv__json_u64(json, "read_only_allocations", advice->nread_only_all);
        umadv__json_u64(json, "read_only_bytes", advice->read_only_bytes);
        umadv__json_double(json, "read_mostly_saving_ms", advice->read_mostly_saving_s * 1e3, 3);
        json_lists(trace, advice, json);
        snprintf(command, sizeof(command), "umadv run --budget %s --policy plan -- %s",
                 size_argument(at->bytes, arg, sizeof(arg)),
                 opts->program != NULL ? opts->program : "PROGRAM");
        umadv__json_string(json, "command", command);
    }
    umadv__json_end_object(json);
}
