/*
 * The report's kernels by fault stall (report.h): from the trace's
 * measured activity, each kernel (by name, every launch summed) with the
 * fault groups serviced while it ran and the time of its runs that fault
 * groups covered (trace/activity.h, umadv__activity_fault_costs). Shown
 * only for a trace that has activity, so older reports read as before.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"

static int row_compare(const void *a, const void *b)
{
    const umadv_report_kernel_t *x = a, *y = b;

    if (x->stall_ns != y->stall_ns)
        return x->stall_ns > y->stall_ns ? -1 : 1;
    if (x->faults != y->faults)
        return x->faults > y->faults ? -1 : 1;
    if (x->run_ns != y->run_ns)
        return x->run_ns > y->run_ns ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

/* Every kernel event into its name's row; unnamed ones share the last. */
static void rows_fill(const umadv_trace_activity_t *act, const uint64_t *faults,
                      const uint64_t *stall_ns, umadv_report_kernel_t *rows)
{
    for (uint32_t n = 0; n <= act->nnames; n++)
        rows[n] = (umadv_report_kernel_t){.name = n < act->nnames ? n : UMADV_EVENT_NO_NAME};
    for (uint32_t i = 0; i < act->nevents; i++) {
        const umadv_trace_event_t *e = &act->events[i];
        umadv_report_kernel_t *row;
        if (e->kind != UMADV_EVENT_KERNEL)
            continue;
        row = &rows[e->name < act->nnames ? e->name : act->nnames];
        row->launches++;
        row->run_ns += e->dur_ns;
        row->faults += faults[i];
        row->stall_ns += stall_ns[i];
    }
}

int umadv__report_kernels(const umadv_trace_t *trace, umadv_report_kernels_t *kernels)
{
    const umadv_trace_activity_t *act = &trace->activity;
    size_t n = act->nevents ? act->nevents : 1;
    uint64_t *faults = malloc(n * sizeof(*faults)), *stall = malloc(n * sizeof(*stall));
    umadv_report_kernel_t *rows = malloc(((size_t)act->nnames + 1) * sizeof(*rows));
    int rc = 0;

    memset(kernels, 0, sizeof(*kernels));
    if (faults == NULL || stall == NULL || rows == NULL ||
        umadv__activity_fault_costs(act, faults, stall) != UMADV_OK) {
        rc = umadv__cli_fail("out of memory");
        free(rows);
        goto out;
    }
    rows_fill(act, faults, stall, rows);
    for (uint32_t r = 0; r <= act->nnames; r++) {
        kernels->launches += rows[r].launches;
        kernels->faulted += rows[r].faults > 0 || rows[r].stall_ns > 0;
        kernels->stall_ns += rows[r].stall_ns;
    }
    qsort(rows, (size_t)act->nnames + 1, sizeof(*rows), row_compare);
    kernels->rows = rows;
    kernels->nrows = kernels->faulted; /* the faulted ones sort first */
out:
    free(faults);
    free(stall);
    return rc;
}

static const char *row_name(const umadv_trace_t *trace, const umadv_report_kernel_t *row)
{
    return row->name != UMADV_EVENT_NO_NAME ? trace->activity.names[row->name] : "(unnamed)";
}

void umadv__report_kernels_print_text(const umadv_trace_t *trace,
                                      const umadv_report_kernels_t *kernels, uint32_t top)
{
    uint32_t n = UMADV_MIN(kernels->nrows, top);

    if (trace->activity.nevents == 0)
        return;
    if (kernels->nrows == 0) {
        printf("\nkernel fault stalls: none (%llu kernel runs measured, no fault group during "
               "any)\n", (unsigned long long)kernels->launches);
        return;
    }
    printf("\nkernels by fault stall (top %u of %u that faulted; %.3f ms stalled in all):\n",
           n, kernels->nrows, (double)kernels->stall_ns / 1e6);
    if (trace->activity.dropped > 0)
        printf("  (%llu records past the profiler's bound were not kept: stalls may be "
               "short)\n", (unsigned long long)trace->activity.dropped);
    printf("  %8s %11s %12s %9s %6s  %s\n", "launches", "run ms", "fault groups", "stall ms",
           "stall%", "name");
    for (uint32_t i = 0; i < n; i++) {
        const umadv_report_kernel_t *row = &kernels->rows[i];
        printf("  %8llu %11.3f %12llu %9.3f %5.1f%%  %s\n", (unsigned long long)row->launches,
               (double)row->run_ns / 1e6, (unsigned long long)row->faults,
               (double)row->stall_ns / 1e6,
               row->run_ns ? 100.0 * (double)row->stall_ns / (double)row->run_ns : 0.0,
               row_name(trace, row));
    }
}

void umadv__report_kernels_print_json(const umadv_trace_t *trace,
                                      const umadv_report_kernels_t *kernels, uint32_t top,
                                      umadv_json_t *json)
{
    uint32_t n = UMADV_MIN(kernels->nrows, top);

    if (trace->activity.nevents == 0)
        return;
    umadv__json_double(json, "kernel_fault_stall_ms", (double)kernels->stall_ns / 1e6, 6);
    umadv__json_u64(json, "events_dropped", trace->activity.dropped);
    umadv__json_begin_array(json, "kernels_by_fault_stall");
    for (uint32_t i = 0; i < n; i++) {
        const umadv_report_kernel_t *row = &kernels->rows[i];
        umadv__json_begin_object_inline(json, NULL);
        umadv__json_string(json, "name", row->name != UMADV_EVENT_NO_NAME
                                             ? trace->activity.names[row->name] : NULL);
        umadv__json_u64(json, "launches", row->launches);
        umadv__json_double(json, "run_ms", (double)row->run_ns / 1e6, 6);
        umadv__json_u64(json, "fault_groups", row->faults);
        umadv__json_double(json, "stall_ms", (double)row->stall_ns / 1e6, 6);
        umadv__json_end_object(json);
    }
    umadv__json_end_array(json);
}
