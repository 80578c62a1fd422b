/*
 * umadv run: run an unmodified program under umadv (umadv-run(1)).
 *
 * The launcher sets the UMADV_* knobs from its options (an option beats
 * the environment), puts the injection library in place (LD_PRELOAD for
 * cudaMalloc & co., NVTX_INJECTION64_PATH for iteration ranges) and the
 * Python start-up hook on PYTHONPATH, runs the program with its arguments
 * as given, forwards the signals a job control or a batch system sends,
 * and exits as the program did. At the end it prints the summary records
 * the processes it started wrote (run_summary.c).
 */
#include "cli.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

static const umadv_launch_knob_t knob_options[] = {
    {"budget", "UMADV_BUDGET", NULL},
    {"policy", "UMADV_POLICY", NULL},
    {"max-managed", "UMADV_MAX_MANAGED", NULL},
    {"profile-iteration", "UMADV_PROFILE_ITERATION", NULL},
};

const umadv_cli_option_t umadv__cli_run_options[] = {
    {"budget", 'b', "SIZE", "GPU memory budget (UMADV_BUDGET): 8G, 512M, 1.5GiB; per rank: 8G,4G"},
    {"policy", 'p', "P", "oracle, demand, prefetch-all or plan (UMADV_POLICY)"},
    {"max-managed", 0, "SIZE", "refuse managed memory beyond SIZE (UMADV_MAX_MANAGED)"},
    UMADV_LAUNCH_KNOB_OPTIONS,
    {"profile-iteration", 0, "N", "the iteration profiled, from 0 (UMADV_PROFILE_ITERATION)"},
    {"timeline", 0, "FILE", "write the measured timeline of the replays to FILE at exit "
     "(UMADV_TIMELINE)"},
    {"force", 'f', NULL, "replace the --timeline FILE if it exists"},
    {"summary", 0, "FILE", "also keep the summary records in FILE"},
    {"no-preload", 0, NULL, "do not LD_PRELOAD the injection library"},
    {"quiet", 'q', NULL, "print no summary at exit"},
    {NULL, 0, NULL, NULL}
};

typedef struct run_args {
    umadv_launch_args_t launch;
    const char         *summary;  /* --summary FILE, or NULL */
    const char         *timeline; /* --timeline FILE, or NULL */
    int                 force;
} run_args_t;

/* ---- options ---- */

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, void *own)
{
    run_args_t *args = own;

    if (strcmp(opt->name, "summary") == 0)
        args->summary = value;
    else if (strcmp(opt->name, "timeline") == 0 && strcmp(value, "-") == 0)
        return umadv__cli_usage_error(cmd, "--timeline needs a file: standard output is the "
                                      "program's");
    else if (strcmp(opt->name, "timeline") == 0)
        args->timeline = value;
    else if (strcmp(opt->name, "force") == 0)
        args->force = 1;
    return 0;
}

/* --timeline: checked as umadv profile checks its outputs, before the
 * program runs, and given to the library as an absolute path. 0, or an
 * exit status after the error. */
static int set_timeline(const run_args_t *args)
{
    char path[PATH_MAX];
    int rc;

    if (args->timeline == NULL)
        return 0;
    if ((rc = umadv__launch_check_output("timeline", args->timeline, args->force)) != 0 ||
        (rc = umadv__launch_absolute(args->timeline, path, sizeof(path))) != 0)
        return rc;
    return umadv__launch_export_knob("UMADV_TIMELINE", path, 1) != 0 ? UMADV_EXIT_FAILURE : 0;
}

int umadv__cmd_run(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    char program[PATH_MAX], summary[PATH_MAX];
    run_args_t args;
    int rc, temp, status;
    pid_t pid;

    umadv__launch_init("run");
    memset(&args, 0, sizeof(args));
    rc = umadv__launch_parse(cmd, argc, argv, knob_options,
                             sizeof(knob_options) / sizeof(knob_options[0]), take_option, &args,
                             &args.launch);
    if (rc != 0)
        return rc < 0 ? UMADV_EXIT_OK : rc;
    if ((rc = set_timeline(&args)) != 0)
        return rc;
    rc = umadv__launch_check_program(args.launch.command[0], program, sizeof(program));
    if (rc != 0)
        return rc;
    if (umadv__launch_set_parts(args.launch.no_preload, program) != 0 ||
        umadv__launch_set_summary(args.summary, args.launch.quiet, summary, sizeof(summary),
                                  &temp) != 0)
        return UMADV_EXIT_FAILURE;
    pid = umadv__launch_spawn(program, args.launch.command, &status);
    if (pid < 0) {
        if (temp)
            unlink(summary);
        return status;
    }
    status = umadv__launch_wait(pid);
    umadv__launch_print_summary(summary, temp, args.launch.quiet, args.launch.command[0]);
    return status;
}
