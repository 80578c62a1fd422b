/*
 * umadv plan: plan a schedule for each budget and simulate every policy
 * under the same budget, side by side (umadv-plan(1)). Everything is
 * computed first and printed after, so a failure never leaves half a table
 * or half a JSON document behind.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_plan.h"
#include "common/config.h"
#include "common/util.h"
#include "schedule/window.h"
#include "trace/trace_io.h"

enum {
    OPT_BUDGET, OPT_POLICY, OPT_ITERATION, OPT_LOOKAHEAD, OPT_JSON, OPT_OPS,
    OPT_NO_READ_MOSTLY, OPT_HOST_PLACEMENT, OPT_NO_STAGE, OPT_TIMELINE
};

const umadv_cli_option_t umadv__cli_plan_options[] = {
    [OPT_BUDGET]    = {"budget", 'b', "SIZE[,SIZE...]",
                       "budgets: sizes (8G) or % of footprint (50%)"},
    [OPT_POLICY]    = {"policy", 'p', "P[,P...]",
                       "policies to compare (default: all four)"},
    [OPT_ITERATION] = {"iteration", 'i', "N", "plan iteration N of the trace (default: last)"},
    [OPT_LOOKAHEAD] = {"lookahead", 0, "N",
                       "fetch at most N steps ahead (0: no limit)"},
    [OPT_JSON]      = {"json", 0, NULL, "print JSON instead of text"},
    [OPT_OPS]       = {"ops", 0, NULL, "also print the schedule's operations"},
    [OPT_NO_READ_MOSTLY] = {"no-read-mostly", 0, NULL,
                            "never advise read-mostly"},
    [OPT_HOST_PLACEMENT] = {"host-placement", 0, NULL,
                            "let the plan place data on the host for remote access"},
    [OPT_NO_STAGE]  = {"no-stage", 0, NULL,
                       "never stage evictions of stageable allocations (UMADV_STAGE=0)"},
    [OPT_TIMELINE]  = {"timeline", 0, "FILE",
                       "write every simulated iteration to FILE as a Chrome trace "
                       "(Perfetto)"},
    {NULL, 0, NULL, NULL}
};

/* ------------------------------------------------------------ arguments */

static int parse_budget(const char *text, umadv_plan_budget_t *spec)
{
    size_t len = strlen(text);
    char *end;

    spec->text = text;
    spec->percent = 0;
    spec->bytes = 0;
    if (len > 1 && text[len - 1] == '%') {
        if (strchr("0123456789.", text[0]) == NULL)
            return -1;
        /* 100% already needs no eviction: a larger share plans the same
         * and, past 2^64 bytes, would not fit the budget's integer */
        spec->percent = strtod(text, &end);
        return (end == text + len - 1 && spec->percent > 0 && spec->percent <= 100) ? 0 : -1;
    }
    if (umadv_size_parse(text, &spec->bytes) != UMADV_OK || spec->bytes == 0)
        return -1;
    return 0;
}

static int parse_budgets(const umadv_cli_command_t *cmd, const char *value,
                         umadv_plan_args_t *args)
{
    const umadv_cli_option_t *opt = &umadv__cli_plan_options[OPT_BUDGET];
    char *save = NULL;

    free(args->budget_list);
    args->budget_list = strdup(value);
    args->nbudgets = 0;
    if (args->budget_list == NULL)
        return umadv__cli_fail("out of memory");
    for (char *item = strtok_r(args->budget_list, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (args->nbudgets == PLAN_MAX_BUDGETS)
            return umadv__cli_bad_value(cmd, opt, value, "at most 16 budgets");
        if (parse_budget(item, &args->budgets[args->nbudgets++]) != 0)
            return umadv__cli_bad_value(cmd, opt, item,
                                        "expected a size above 0 (8G, 512M, 1.5GiB) "
                                        "or a percentage of the footprint above 0 and at "
                                        "most 100 (50%)");
    }
    if (args->nbudgets == 0)
        return umadv__cli_bad_value(cmd, opt, value, "expected at least one budget");
    return 0;
}

static int bad_policy(const umadv_cli_command_t *cmd, const char *value, const char *name)
{
    static const char *const names[] = {"oracle", "demand", "prefetch-all", "plan", NULL};
    const char *hint = umadv__suggest(name, names, sizeof(names[0]));
    char expected[160];

    snprintf(expected, sizeof(expected), "unknown policy '%s'%s%s%s (oracle, demand, "
             "prefetch-all, plan)", name, hint ? "; did you mean '" : "", hint ? hint : "",
             hint ? "'?" : "");
    return umadv__cli_bad_value(cmd, &umadv__cli_plan_options[OPT_POLICY], value, expected);
}

static int parse_policies(const umadv_cli_command_t *cmd, const char *value,
                          umadv_plan_args_t *args)
{
    char list[128], *save = NULL;
    umadv_policy_t policy;

    snprintf(list, sizeof(list), "%s", value);
    args->npolicies = 0;
    for (char *item = strtok_r(list, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        if (umadv_policy_parse(item, &policy) != UMADV_OK)
            return bad_policy(cmd, value, item);
        for (unsigned i = 0; i < args->npolicies; i++) {
            if (args->policies[i] == policy)
                return umadv__cli_bad_value(cmd, &umadv__cli_plan_options[OPT_POLICY], value,
                                            "a policy is listed twice");
        }
        args->policies[args->npolicies++] = policy;
    }
    if (args->npolicies == 0)
        return umadv__cli_bad_value(cmd, &umadv__cli_plan_options[OPT_POLICY], value,
                                    "expected at least one policy");
    return 0;
}

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, umadv_plan_args_t *args)
{
    switch (opt - umadv__cli_plan_options) {
    case OPT_BUDGET:
        return parse_budgets(cmd, value, args);
    case OPT_POLICY:
        return parse_policies(cmd, value, args);
    case OPT_ITERATION:
        args->iteration_set = 1;
        if (umadv__cli_parse_u32(value, 0, UINT32_MAX - 1, &args->iteration) != 0)
            return umadv__cli_bad_value(cmd, opt, value, "expected an iteration number");
        return 0;
    case OPT_LOOKAHEAD:
        args->lookahead_set = 1;
        if (umadv__cli_parse_u32(value, 0, UINT32_MAX - 1, &args->lookahead) != 0)
            return umadv__cli_bad_value(cmd, opt, value, "expected a number of steps");
        return 0;
    case OPT_JSON:
        args->json = 1;
        return 0;
    case OPT_OPS:
        args->ops = 1;
        return 0;
    case OPT_HOST_PLACEMENT:
        args->host_placement = 1;
        return 0;
    case OPT_NO_STAGE:
        args->stage = 0;
        return 0;
    case OPT_TIMELINE:
        args->timeline = value;
        return 0;
    default:
        args->read_mostly = 0;
        return 0;
    }
}

/* Returns -1 after --help (exit 0), an exit status on error, 0 to go on. */
static int parse_args(const umadv_cli_command_t *cmd, int argc, char **argv,
                      umadv_plan_args_t *args)
{
    static const umadv_policy_t all[] = {UMADV_POLICY_ORACLE, UMADV_POLICY_DEMAND,
                                         UMADV_POLICY_PREFETCH_ALL, UMADV_POLICY_PLAN};
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    int rc;

    memset(args, 0, sizeof(*args));
    memcpy(args->policies, all, sizeof(all));
    args->npolicies = UMADV_ARRAY_SIZE(all);
    args->read_mostly = 1;
    args->host_placement = 0; /* as UMADV_HOST_PLACEMENT's default */
    args->stage = 1;          /* as UMADV_STAGE's: where the trace marks stageable data */
    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            if (args->nbudgets == 0)
                return umadv__cli_usage_error(cmd, "'plan' needs --budget SIZE");
            if (args->trace_path == NULL)
                args->trace_path = umadv__cli_default_trace();
            return 0;
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return -1;
        case UMADV_CLI_ERROR:
            return UMADV_EXIT_USAGE;
        case UMADV_CLI_ARG:
            if (args->trace_path != NULL)
                return umadv__cli_usage_error(cmd, "'plan' takes one trace, got '%s' too",
                                              value);
            args->trace_path = value;
            break;
        case UMADV_CLI_OPTION:
            if ((rc = take_option(cmd, opt, value, args)) != 0)
                return rc;
            break;
        }
    }
}

/* ------------------------------------------------------------- planning */

/* Bytes the largest step of the planned iteration touches: the least
 * budget the planner can accept. */
static uint64_t largest_step_bytes(const umadv_plan_run_t *run)
{
    const umadv_trace_t *trace = &run->trace;
    uint64_t largest = 0;

    for (uint32_t s = run->first_step; s < run->first_step + run->nsteps; s++) {
        const umadv_trace_step_t *step = &trace->steps[s];
        uint64_t bytes = 0;
        for (uint32_t a = step->first_access; a < step->first_access + step->naccesses; a++) {
            const umadv_trace_access_t *access = &trace->accesses[a];
            bytes += umadv__trace_run_bytes(trace, access->alloc, access->first, access->count);
        }
        largest = UMADV_MAX(largest, bytes);
    }
    return largest;
}

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

static int budget_too_small(const umadv_plan_run_t *run, uint64_t budget)
{
    char need[32], arg[32], have[32];
    uint64_t largest = largest_step_bytes(run);

    umadv__size_format(largest, need, sizeof(need));
    umadv__size_format(budget, have, sizeof(have));
    return umadv__cli_fail("budget %s is too small: the largest step needs %s; try --budget "
                           "%s or more", have, need, size_argument(largest, arg, sizeof(arg)));
}

static int read_trace(const char *path, umadv_trace_t *trace)
{
    char why[512];

    if (umadv__cli_input(path) != 0)
        return UMADV_EXIT_FAILURE;
    if (umadv__trace_read_file(path, trace, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    return 0;
}

/* Refused before the first simulation, with the planner's own rule and
 * message (window.h, COST), rather than after minutes of work. */
static int check_cost(umadv_plan_run_t *run)
{
    umadv_config_t config;

    umadv__config_defaults(&config);
    if (umadv__config_load(&config) != UMADV_OK) /* main() reported it already */
        return umadv__cli_fail("bad UMADV_* setting");
    run->max_touches = config.plan_max_touches;
    if (umadv__window_check_cost(&run->trace, run->first_step, run->nsteps,
                                 run->max_touches) != UMADV_OK)
        return umadv__cli_fail("%s: iteration %u is too large to plan (UMADV_PLAN_MAX_TOUCHES=%llu)",
                               run->args->trace_path, run->iteration,
                               (unsigned long long)run->max_touches);
    return 0;
}

static int select_iteration(umadv_plan_run_t *run)
{
    const umadv_trace_t *trace = &run->trace;
    umadv_plan_params_t params;

    umadv__plan_params_default(trace, 0, &params);
    run->link = params.link;
    run->iteration = run->args->iteration_set ? run->args->iteration : params.iteration;
    if (umadv__trace_iteration_steps(trace, run->iteration, &run->first_step,
                                     &run->nsteps) != UMADV_OK)
        return umadv__cli_fail("%s has no iteration %u (it has %u, numbered from 0)",
                               run->args->trace_path, run->iteration, trace->niterations);
    return check_cost(run);
}

/* The simulation's track in --timeline, "plan, budget 2.71 GiB": the
 * simulator's steps, or oracle's back to back (it is not simulated). */
static void timeline_track(const umadv_plan_run_t *run, umadv_policy_t policy, uint64_t budget,
                           umadv_sim_params_t *params)
{
    char name[96], size[32];

    if (policy == UMADV_POLICY_ORACLE) {
        umadv__timeline_steps(run->timeline, "oracle, no budget", run->first_step,
                              run->nsteps);
        return;
    }
    snprintf(name, sizeof(name), "%s, budget %s", umadv_policy_name(policy),
             umadv__size_format(budget, size, sizeof(size)));
    umadv__timeline_track(run->timeline, name, params);
}

/* @tracked: the run has a track in --timeline (the reference oracle run
 * that gives the footprint has none). */
static int simulate(const umadv_plan_run_t *run, umadv_policy_t policy, uint64_t budget,
                    const umadv_schedule_t *schedule, int tracked, umadv_sim_result_t *result)
{
    umadv_sim_params_t params;
    umadv_status_t status;

    umadv__sim_params_default(&run->trace, policy, budget, &params);
    params.iteration = run->iteration;
    params.link = run->link;
    params.schedule = schedule;
    params.max_touches = run->max_touches;
    params.stage = params.stage && run->args->stage;
    if (tracked && run->timeline != NULL)
        timeline_track(run, policy, budget, &params);
    status = umadv__sim_run(&run->trace, &params, result);
    if (status == UMADV_ERR_BUDGET_TOO_SMALL)
        return budget_too_small(run, budget);
    if (status != UMADV_OK)
        return umadv__cli_fail("simulating policy %s: %s", umadv_policy_name(policy),
                               umadv_status_string(status));
    return 0;
}

static uint64_t resolve_budget(const umadv_plan_run_t *run, const umadv_plan_budget_t *spec)
{
    if (spec->percent > 0)
        return (uint64_t)floor((double)run->oracle.peak_resident * spec->percent / 100.0);
    return spec->bytes;
}

static int build_schedule(const umadv_plan_run_t *run, umadv_plan_block_t *block)
{
    umadv_plan_params_t params;
    umadv_status_t status;

    if (block->budget == 0)
        return umadv__cli_fail("budget %s is 0 bytes for this trace", block->spec->text);
    umadv__plan_params_default(&run->trace, block->budget, &params);
    params.iteration = run->iteration;
    params.max_touches = run->max_touches;
    params.read_mostly = run->args->read_mostly;
    params.host_placement = run->args->host_placement;
    params.stage = params.stage && run->args->stage;
    if (run->args->lookahead_set)
        params.lookahead = run->args->lookahead;
    status = umadv__plan_build(&run->trace, &params, &block->schedule);
    if (status == UMADV_ERR_BUDGET_TOO_SMALL)
        return budget_too_small(run, block->budget);
    if (status != UMADV_OK)
        return umadv__cli_fail("planning for budget %s: %s", block->spec->text,
                               umadv_status_string(status));
    return 0;
}

static int run_block(umadv_plan_run_t *run, const umadv_plan_budget_t *spec,
                     umadv_plan_block_t *block)
{
    int rc;

    memset(block, 0, sizeof(*block));
    block->spec = spec;
    block->budget = resolve_budget(run, spec);
    if ((rc = build_schedule(run, block)) != 0)
        return rc;
    run->nblocks++; /* from here the schedule is ours to clean up */
    /* staged evictions take another channel, at its own rate (sim.c) */
    block->bound_s = umadv__sim_lower_bound(run->oracle.resident_s + block->schedule.remote_s,
                                            block->schedule.fetch_bytes,
                                            umadv__schedule_migrated_bytes(&block->schedule),
                                            block->schedule.staged_bytes, &run->link);
    for (unsigned i = 0; i < run->args->npolicies; i++) {
        rc = simulate(run, run->args->policies[i], block->budget, &block->schedule, 1,
                      &block->results[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int compute(umadv_plan_run_t *run)
{
    int rc;

    if ((rc = select_iteration(run)) != 0)
        return rc;
    if ((rc = simulate(run, UMADV_POLICY_ORACLE, 0, NULL, 0, &run->oracle)) != 0)
        return rc;
    for (unsigned i = 0; i < run->args->nbudgets; i++) {
        if ((rc = run_block(run, &run->args->budgets[i], &run->blocks[run->nblocks])) != 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------ the command */

static int timeline_open(umadv_plan_run_t *run, umadv_timeline_t *timeline)
{
    int rc;

    if (run->args->timeline == NULL)
        return 0;
    rc = umadv__timeline_open(timeline, run->args->timeline, &run->trace);
    if (rc == 0)
        run->timeline = timeline;
    return rc;
}

/* The timeline of a run that failed is given up: half a document helps
 * no one, and an older timeline stays as it was. Returns @rc, or the
 * closing's error. */
static int timeline_close(umadv_plan_run_t *run, int rc)
{
    if (rc != 0) {
        umadv__timeline_discard(run->timeline);
        return rc;
    }
    return umadv__timeline_close(run->timeline);
}

int umadv__cmd_plan(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    umadv_plan_args_t args;
    umadv_timeline_t timeline;
    umadv_plan_run_t *run;
    int rc = parse_args(cmd, argc, argv, &args);

    if (rc != 0)
        goto out_free_args;
    run = calloc(1, sizeof(*run));
    if (run == NULL) {
        rc = umadv__cli_fail("out of memory");
        goto out_free_args;
    }
    run->args = &args;
    if ((rc = read_trace(args.trace_path, &run->trace)) != 0)
        goto out_free_run;
    if ((rc = timeline_open(run, &timeline)) != 0)
        goto out_free_trace;
    rc = compute(run);
    if (run->timeline != NULL)
        rc = timeline_close(run, rc);
    if (rc == 0) {
        if (args.json)
            umadv__plan_print_json(run);
        else
            umadv__plan_print_text(run);
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = umadv__cli_fail("writing the output: %m");
    }
    for (unsigned b = 0; b < run->nblocks; b++)
        umadv__schedule_cleanup(&run->blocks[b].schedule);
out_free_trace:
    umadv__trace_cleanup(&run->trace);
out_free_run:
    free(run);
out_free_args:
    free(args.budget_list);
    return rc < 0 ? UMADV_EXIT_OK : rc;
}
