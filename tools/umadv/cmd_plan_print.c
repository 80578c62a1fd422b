/*
 * umadv plan's output: the text report and the JSON document
 * (umadv-plan(1) documents both; change them together).
 */
#include "cmd_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/util.h"
#include "json.h"

/* Increment when a key of the JSON output changes meaning or goes away. */
#define PLAN_JSON_VERSION 1

/* ------------------------------------------------------------ text output */

static int tagged(const umadv_trace_t *trace, uint32_t alloc)
{
    const char *tag = trace->allocs[alloc].tag;

    return tag != NULL && tag[0] != '\0';
}

/* The allocation's tag; with its ID where other allocations carry the same
 * tag (PyTorch's tensors all carry "torch"), its ID alone where it has
 * none. @shared: per allocation, whether its tag is another's too, or
 * NULL when that is not known. */
static const char *alloc_label(const umadv_trace_t *trace, const uint8_t *shared,
                               uint32_t alloc, char *buf, size_t len)
{
    if (!tagged(trace, alloc))
        snprintf(buf, len, "#%u", alloc);
    else if (shared == NULL || shared[alloc])
        snprintf(buf, len, "%.200s #%u", trace->allocs[alloc].tag, alloc); /* the ID kept */
    else
        return trace->allocs[alloc].tag;
    return buf;
}

typedef struct tag_ref {
    const char *tag;
    uint32_t    alloc;
} tag_ref_t;

static int tag_order(const void *a, const void *b)
{
    return strcmp(((const tag_ref_t *)a)->tag, ((const tag_ref_t *)b)->tag);
}

/* Per allocation, whether another carries its tag; NULL without memory
 * (every label then carries its ID). */
static uint8_t *shared_tags(const umadv_trace_t *trace)
{
    tag_ref_t *order = malloc((trace->nallocs + 1) * sizeof(*order));
    uint8_t *shared = calloc(trace->nallocs + 1, 1);
    uint32_t n = 0;

    if (order == NULL || shared == NULL) {
        free(order);
        free(shared);
        return NULL;
    }
    for (uint32_t a = 0; a < trace->nallocs; a++) {
        if (tagged(trace, a))
            order[n++] = (tag_ref_t){trace->allocs[a].tag, a};
    }
    qsort(order, n, sizeof(*order), tag_order);
    for (uint32_t i = 1; i < n; i++) {
        if (tag_order(&order[i - 1], &order[i]) == 0)
            shared[order[i - 1].alloc] = shared[order[i].alloc] = 1;
    }
    free(order);
    return shared;
}

static void print_header(const umadv_plan_run_t *run)
{
    const umadv_trace_t *trace = &run->trace;
    char s1[32], s2[32];

    printf("trace:        %s\n", run->args->trace_path);
    printf("source:       %s\n", trace->source != NULL ? trace->source : "unknown");
    printf("device:       %s, %s, compute capability %d.%d\n",
           trace->device.name[0] ? trace->device.name : "unknown",
           umadv__size_format(trace->device.memory, s1, sizeof(s1)), trace->device.cc_major,
           trace->device.cc_minor);
    printf("iteration:    %u of %u, %u steps\n", run->iteration, trace->niterations,
           run->nsteps);
    printf("allocations:  %u in %u sections of %s\n", trace->nallocs, trace->nsections,
           umadv__size_format(trace->section_size, s2, sizeof(s2)));
    printf("footprint:    %s (oracle peak residency)\n",
           umadv__size_format(run->oracle.peak_resident, s1, sizeof(s1)));
    printf("compute:      %.2f ms per iteration\n", run->oracle.compute_s * 1e3);
    if (umadv__sim_host_bound(&run->oracle))
        printf("host-bound:   %.2f ms per iteration with every section resident: the "
               "application launches its steps no sooner\n", run->oracle.resident_s * 1e3);
}

static uint32_t count_ops(const umadv_schedule_t *schedule, umadv_op_kind_t kind)
{
    uint32_t n = 0;

    for (size_t i = 0; i < schedule->nops; i++)
        n += schedule->ops[i].kind == kind;
    return n;
}

/* The figures a plan priced at the staged channel used: staged ones where
 * measured, UVM's otherwise (plan_int.h, umadv__plan_channel). */
static void print_stage_priced(const umadv_link_model_t *l)
{
    int out = umadv__link_stage_evict_known(l), back = umadv__link_stage_restore_known(l);

    printf("                 priced at the measured staged channel: out %.1f GB/s + %.0f "
           "us/call, back %.1f GB/s + %.0f us/call; UVM evicts at %.1f GB/s\n",
           (out ? l->stage_evict_bw : l->evict_bw) / 1e9,
           (out ? l->stage_evict_latency : l->evict_latency) * 1e6,
           (back ? l->stage_restore_bw : l->fetch_bw) / 1e9,
           (back ? l->stage_restore_latency : l->fetch_latency) * 1e6, l->evict_bw / 1e9);
}

/* Which channel the evictions take and why (plan.c, CHANNELS); nothing
 * for a trace without stageable allocations, where UVM is the only one. */
static void print_channel(const umadv_plan_run_t *run, const umadv_schedule_t *sch)
{
    const umadv_link_model_t *l = &run->link;
    uint64_t stageable = umadv__trace_stageable_bytes(&run->trace);
    char s1[32], s2[32], s3[64];

    if (stageable == 0)
        return;
    umadv__size_format(stageable, s1, 32);
    if (!run->args->stage) {
        printf("  evict channel: UVM migration for all (--no-stage; %s of the trace is "
               "stageable)\n", s1);
        return;
    }
    s3[0] = '\0';
    if (sch->dead_bytes > 0)
        snprintf(s3, sizeof(s3), "%s released dead, ",
                 umadv__size_format(sch->dead_bytes, s2, sizeof(s2)));
    printf("  evict channel: %s of %s evicted through pinned staging (stageable allocations, "
           "not placed on the host, where the pool has room), %sthe rest by UVM migration\n",
           umadv__size_format(sch->staged_bytes, s2, 32),
           umadv__size_format(sch->evict_bytes, s1, 32), s3);
    if (!umadv__link_stage_evict_known(l) && !umadv__link_stage_restore_known(l))
        printf("                 the trace has no staged figures: the plan prices them as "
               "UVM evictions; simulated at the built-in rate\n");
    else if (sch->stage_priced)
        print_stage_priced(l);
    else
        printf("                 priced as UVM evictions: that plan simulated faster than "
               "the one priced at the measured staged channel\n");
}

static void print_schedule(const umadv_plan_run_t *run, const umadv_plan_block_t *block)
{
    const umadv_schedule_t *sch = &block->schedule;
    double fetch_s = (double)sch->fetch_bytes / run->link.fetch_bw;
    /* the bound's eviction term: staged evictions take another channel */
    double evict_s = (double)umadv__schedule_migrated_bytes(sch) / run->link.evict_bw;
    double staged_s = umadv__sim_staged_evict_s(sch->staged_bytes, &run->link);
    /* with every section resident: the compute, or the host's launches */
    const char *bound_first = umadv__sim_host_bound(&run->oracle) ? "host-bound" : "compute";
    uint64_t unread = 0;
    char s1[32], s2[32];

    printf("  fetch:         %s in %u ops\n", umadv__size_format(sch->fetch_bytes, s1, 32),
           sch->fetch_ops);
    printf("  evict:         %s in %u ops\n", umadv__size_format(sch->evict_bytes, s1, 32),
           sch->evict_ops);
    if (umadv__schedule_evicted_unread(sch, &unread) == UMADV_OK && unread > 0)
        printf("                 %s of it never read back: repopulated fresh or freed "
               "before its next use\n", umadv__size_format(unread, s1, 32));
    if (sch->dead_bytes > 0)
        printf("                 %s of it dead (the next use writes it fresh): released "
               "without a copy\n", umadv__size_format(sch->dead_bytes, s1, 32));
    printf("  drop:          %s in %u ops\n", umadv__size_format(sch->drop_bytes, s1, 32),
           count_ops(sch, UMADV_OP_DROP));
    print_channel(run, sch);
    printf("  fresh:         %s populated without a copy\n",
           umadv__size_format(sch->fresh_bytes, s1, 32));
    printf("  setup advice:  %zu runs\n", sch->nsetup);
    printf("  host-placed:   %s in %u advice ops; %s accessed remotely, stall %.2f ms\n",
           umadv__size_format(sch->host_bytes, s1, 32), sch->advise_ops,
           umadv__size_format(sch->remote_bytes, s2, 32), sch->remote_s * 1e3);
    printf("  peak planned:  %s; largest step %s\n", umadv__size_format(sch->peak_planned, s1, 32),
           umadv__size_format(sch->max_step_bytes, s2, 32));
    if (sch->remote_s > 0)
        printf("  lower bound:   %.2f ms = max(%s %.2f + remote %.2f, fetch %.2f, "
               "evict %.2f, staged %.2f)\n", block->bound_s * 1e3, bound_first,
               run->oracle.resident_s * 1e3,
               sch->remote_s * 1e3, fetch_s * 1e3, evict_s * 1e3, staged_s * 1e3);
    else
        printf("  lower bound:   %.2f ms = max(%s %.2f, fetch %.2f, evict %.2f, "
               "staged %.2f)\n", block->bound_s * 1e3, bound_first, run->oracle.resident_s * 1e3,
               fetch_s * 1e3, evict_s * 1e3, staged_s * 1e3);
    if (sch->converged)
        printf("  steady state:  found in %u passes\n", sch->passes);
    else
        printf("  steady state:  not found in %u passes; the last was closed by extra ops\n",
               sch->passes);
    printf("  victim rule:   %s\n", umadv__plan_victims_name(sch->victims));
    printf("  planning time: %.3f ms\n", sch->plan_seconds * 1e3);
}

static void print_table_header(void)
{
    printf("  %-13s %9s %9s %8s %9s %8s %10s %12s %12s %9s %11s\n", "policy", "ms/iter",
           "x oracle", "x bound", "stall ms", "faults", "fault GiB", "fetched GiB",
           "evicted GiB", "peak GiB", "budget GiB");
}

static void print_result(const umadv_plan_run_t *run, const umadv_plan_block_t *block,
                         const umadv_sim_result_t *r)
{
    int oracle = r->policy == UMADV_POLICY_ORACLE;
    char bound[16] = "-", budget[16] = "-", g1[16], g2[16], g3[16], g4[16];

    if (!oracle) {
        snprintf(bound, sizeof(bound), "%.3f", r->iteration_s / block->bound_s);
        umadv__cli_gib(block->budget, budget, sizeof(budget));
    }
    printf("  %-13s %9.2f %9.3f %8s %9.2f %8llu %10s %12s %12s %9s %11s\n",
           umadv_policy_name(r->policy), r->iteration_s * 1e3,
           r->iteration_s / run->oracle.iteration_s, bound, r->stall_s * 1e3,
           (unsigned long long)r->faults, umadv__cli_gib(r->fault_bytes, g1, 16),
           umadv__cli_gib(r->fetched_bytes, g2, 16), umadv__cli_gib(r->evicted_bytes, g3, 16),
           umadv__cli_gib(r->peak_resident, g4, 16), budget);
}

/* Staged bytes are in neither fetched nor evicted: a line of their own,
 * only for a policy that staged (none in a trace without stageable
 * allocations). */
static void print_staged(const umadv_sim_result_t *r)
{
    char g1[16], g2[16];

    if (r->staged_bytes == 0 && r->restored_bytes == 0)
        return;
    printf("  %-13s staged %s GiB out, restored %s GiB (pinned staging, not in fetched or "
           "evicted)\n", umadv_policy_name(r->policy), umadv__cli_gib(r->staged_bytes, g1, 16),
           umadv__cli_gib(r->restored_bytes, g2, 16));
}

static const char *op_kind_label(const umadv_op_t *op, char *buf, size_t len)
{
    if (op->kind == UMADV_OP_ADVISE)
        snprintf(buf, len, "advise:%s", umadv__advice_name(op->advice));
    else
        snprintf(buf, len, "%s%s%s%s", umadv__op_kind_name(op->kind),
                 (op->flags & UMADV_OP_FLAG_FRESH) ? " fresh" : "",
                 (op->flags & UMADV_OP_FLAG_NEXT_ITERATION) ? " next" : "",
                 (op->flags & UMADV_OP_FLAG_DEAD) ? " dead" : "");
    return buf;
}

static void print_op(const umadv_trace_t *trace, const uint8_t *shared, const umadv_op_t *op,
                     const char *issue)
{
    char label[224], kind[48], sections[32], bytes[32];

    snprintf(sections, sizeof(sections), "%u..%u", op->first, op->first + op->count - 1);
    printf("  %6s  %-20s %-32s %12s %11s %6u\n", issue, op_kind_label(op, kind, sizeof(kind)),
           alloc_label(trace, shared, op->alloc, label, sizeof(label)), sections,
           umadv__size_format(op->bytes, bytes, sizeof(bytes)), op->need_step);
}

static void print_ops(const umadv_plan_run_t *run, const uint8_t *shared,
                      const umadv_schedule_t *sch)
{
    char issue[16];

    printf("\n  %6s  %-20s %-32s %12s %11s %6s\n", "step", "op", "allocation", "sections",
           "bytes", "need");
    for (size_t i = 0; i < sch->nsetup; i++)
        print_op(&run->trace, shared, &sch->setup[i], "setup");
    for (uint32_t s = 0; s < sch->nsteps; s++) {
        snprintf(issue, sizeof(issue), "%u", s);
        for (uint32_t i = sch->step_ops[s]; i < sch->step_ops[s + 1]; i++)
            print_op(&run->trace, shared, &sch->ops[i], issue);
    }
}

void umadv__plan_print_text(const umadv_plan_run_t *run)
{
    uint8_t *shared = run->args->ops ? shared_tags(&run->trace) : NULL;
    char size[32];

    print_header(run);
    for (unsigned b = 0; b < run->nblocks; b++) {
        const umadv_plan_block_t *block = &run->blocks[b];
        /* A trace whose steps touch nothing has no footprint to compare with. */
        double share = (double)block->budget / (double)UMADV_MAX(run->oracle.peak_resident, 1);
        printf("\nbudget %s (%.1f%% of the footprint)\n",
               umadv__size_format(block->budget, size, sizeof(size)), 100.0 * share);
        print_schedule(run, block);
        putchar('\n');
        print_table_header();
        for (unsigned i = 0; i < run->args->npolicies; i++)
            print_result(run, block, &block->results[i]);
        for (unsigned i = 0; i < run->args->npolicies; i++)
            print_staged(&block->results[i]);
        if (run->args->ops)
            print_ops(run, shared, &block->schedule);
    }
    free(shared);
}

/* ------------------------------------------------------------ JSON output */

static void json_trace(umadv_json_t *js, const umadv_plan_run_t *run)
{
    const umadv_trace_t *trace = &run->trace;
    char cc[16];

    umadv__json_begin_object(js, "trace");
    umadv__json_string(js, "path", run->args->trace_path);
    umadv__json_string(js, "source", trace->source);
    umadv__json_begin_object(js, "device");
    umadv__json_string(js, "name", trace->device.name);
    umadv__json_u64(js, "memory", trace->device.memory);
    snprintf(cc, sizeof(cc), "%d.%d", trace->device.cc_major, trace->device.cc_minor);
    umadv__json_string(js, "compute_capability", cc);
    umadv__json_end_object(js);
    umadv__json_u64(js, "section_size", trace->section_size);
    umadv__json_u64(js, "iterations", trace->niterations);
    umadv__json_u64(js, "iteration", run->iteration);
    umadv__json_u64(js, "steps", run->nsteps);
    umadv__json_u64(js, "allocations", trace->nallocs);
    umadv__json_u64(js, "sections", trace->nsections);
    umadv__json_u64(js, "footprint", run->oracle.peak_resident);
    umadv__json_double(js, "compute_ms", run->oracle.compute_s * 1e3, 3);
    umadv__json_double(js, "resident_ms", run->oracle.resident_s * 1e3, 3);
    umadv__json_end_object(js);
}

static void json_schedule(umadv_json_t *js, const umadv_plan_block_t *block)
{
    const umadv_schedule_t *sch = &block->schedule;
    uint64_t unread = 0;

    umadv__json_begin_object(js, "schedule");
    umadv__json_u64(js, "fetch_bytes", sch->fetch_bytes);
    umadv__json_u64(js, "fetch_ops", sch->fetch_ops);
    umadv__json_u64(js, "evict_bytes", sch->evict_bytes);
    if (umadv__schedule_evicted_unread(sch, &unread) == UMADV_OK)
        umadv__json_u64(js, "evict_unread_bytes", unread);
    umadv__json_u64(js, "evict_ops", sch->evict_ops);
    umadv__json_u64(js, "staged_bytes", sch->staged_bytes);
    umadv__json_u64(js, "dead_bytes", sch->dead_bytes);
    umadv__json_bool(js, "stage_priced", sch->stage_priced);
    umadv__json_u64(js, "drop_bytes", sch->drop_bytes);
    umadv__json_u64(js, "drop_ops", count_ops(sch, UMADV_OP_DROP));
    umadv__json_u64(js, "fresh_bytes", sch->fresh_bytes);
    umadv__json_u64(js, "setup_ops", sch->nsetup);
    umadv__json_u64(js, "host_bytes", sch->host_bytes);
    umadv__json_u64(js, "remote_bytes", sch->remote_bytes);
    umadv__json_double(js, "remote_ms", sch->remote_s * 1e3, 3);
    umadv__json_u64(js, "advise_ops", sch->advise_ops);
    umadv__json_u64(js, "peak_planned", sch->peak_planned);
    umadv__json_u64(js, "max_step_bytes", sch->max_step_bytes);
    umadv__json_u64(js, "passes", sch->passes);
    umadv__json_bool(js, "converged", sch->converged);
    umadv__json_string(js, "victim_rule", umadv__plan_victims_name(sch->victims));
    umadv__json_double(js, "lower_bound_ms", block->bound_s * 1e3, 3);
    umadv__json_double(js, "planning_ms", sch->plan_seconds * 1e3, 3);
    umadv__json_end_object(js);
}

static void json_result(umadv_json_t *js, const umadv_plan_run_t *run,
                        const umadv_plan_block_t *block, const umadv_sim_result_t *r)
{
    int oracle = r->policy == UMADV_POLICY_ORACLE;

    umadv__json_begin_object(js, NULL);
    umadv__json_string(js, "policy", umadv_policy_name(r->policy));
    umadv__json_double(js, "ms_per_iter", r->iteration_s * 1e3, 3);
    umadv__json_double(js, "x_oracle", r->iteration_s / run->oracle.iteration_s, 4);
    umadv__json_double(js, "x_bound", oracle ? NAN : r->iteration_s / block->bound_s, 4);
    umadv__json_double(js, "stall_ms", r->stall_s * 1e3, 3);
    umadv__json_u64(js, "faults", r->faults);
    umadv__json_u64(js, "fault_bytes", r->fault_bytes);
    umadv__json_u64(js, "remote_bytes", r->remote_bytes);
    umadv__json_u64(js, "fetched_bytes", r->fetched_bytes);
    umadv__json_u64(js, "evicted_bytes", r->evicted_bytes);
    umadv__json_u64(js, "staged_bytes", r->staged_bytes);
    umadv__json_u64(js, "restored_bytes", r->restored_bytes);
    umadv__json_u64(js, "dropped_bytes", r->dropped_bytes);
    umadv__json_u64(js, "peak_bytes", r->peak_resident);
    if (oracle)
        umadv__json_string(js, "budget", NULL);
    else
        umadv__json_u64(js, "budget", block->budget);
    umadv__json_end_object(js);
}

static void json_op(umadv_json_t *js, const umadv_trace_t *trace, const umadv_op_t *op,
                    int setup)
{
    umadv__json_begin_object_inline(js, NULL);
    if (setup)
        umadv__json_string(js, "issue_step", "setup");
    else
        umadv__json_u64(js, "issue_step", op->issue_step);
    umadv__json_string(js, "kind", umadv__op_kind_name(op->kind));
    if (op->kind == UMADV_OP_ADVISE)
        umadv__json_string(js, "advice", umadv__advice_name(op->advice));
    umadv__json_begin_array(js, "flags");
    if (op->flags & UMADV_OP_FLAG_FRESH)
        umadv__json_string(js, NULL, "fresh");
    if (op->flags & UMADV_OP_FLAG_NEXT_ITERATION)
        umadv__json_string(js, NULL, "next-iteration");
    if (op->flags & UMADV_OP_FLAG_DEAD)
        umadv__json_string(js, NULL, "dead");
    umadv__json_end_array(js);
    umadv__json_u64(js, "alloc", op->alloc);
    umadv__json_string(js, "tag", trace->allocs[op->alloc].tag);
    umadv__json_u64(js, "first", op->first);
    umadv__json_u64(js, "count", op->count);
    umadv__json_u64(js, "bytes", op->bytes);
    umadv__json_u64(js, "need_step", op->need_step);
    umadv__json_end_object(js);
}

static void json_ops(umadv_json_t *js, const umadv_plan_run_t *run, const umadv_schedule_t *sch)
{
    umadv__json_begin_array(js, "ops");
    for (size_t i = 0; i < sch->nsetup; i++)
        json_op(js, &run->trace, &sch->setup[i], 1);
    for (size_t i = 0; i < sch->nops; i++)
        json_op(js, &run->trace, &sch->ops[i], 0);
    umadv__json_end_array(js);
}

static void json_block(umadv_json_t *js, const umadv_plan_run_t *run,
                       const umadv_plan_block_t *block)
{
    umadv__json_begin_object(js, NULL);
    umadv__json_string(js, "spec", block->spec->text);
    umadv__json_u64(js, "budget", block->budget);
    json_schedule(js, block);
    umadv__json_begin_array(js, "policies");
    for (unsigned i = 0; i < run->args->npolicies; i++)
        json_result(js, run, block, &block->results[i]);
    umadv__json_end_array(js);
    if (run->args->ops)
        json_ops(js, run, &block->schedule);
    umadv__json_end_object(js);
}

void umadv__plan_print_json(const umadv_plan_run_t *run)
{
    umadv_json_t js;

    umadv__json_init(&js, stdout);
    umadv__json_begin_object(&js, NULL);
    umadv__json_string(&js, "format", "umadv-plan");
    umadv__json_u64(&js, "version", PLAN_JSON_VERSION);
    json_trace(&js, run);
    umadv__json_begin_array(&js, "budgets");
    for (unsigned b = 0; b < run->nblocks; b++)
        json_block(&js, run, &run->blocks[b]);
    umadv__json_end_array(&js);
    umadv__json_end_object(&js);
}
