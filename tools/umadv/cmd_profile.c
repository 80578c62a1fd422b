/*
 * umadv profile: run a program under the injection library as umadv run
 * does (launch.c), in profile mode (UMADV_PROFILE_OUTPUT): the library
 * profiles one iteration (--iteration) or a window of seconds from the
 * program's first CUDA allocation (--seconds, UMADV_PROFILE_SECONDS) and
 * saves its trace, the program runs on under oracle with no budget, and
 * the trace's report with its advice is printed (umadv-profile(1)).
 *
 * The library saves into a temporary file beside the output, which is
 * put in place once the program has ended: an existing output is never
 * replaced without --force, and a run that saved nothing leaves it as it
 * was instead of reporting an older trace as this run's.
 */
#define _GNU_SOURCE /* O_CLOEXEC in mkostemp */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"
#include "report.h"

#define PROFILE_DEFAULT_OUTPUT "umadv-profile.umt"

/* Set here, not by the launcher: the two are exclusive. */
static const umadv_launch_knob_t iteration_knob = {"iteration", "UMADV_PROFILE_ITERATION", NULL};
static const umadv_launch_knob_t seconds_knob = {"seconds", "UMADV_PROFILE_SECONDS", NULL};

const umadv_cli_option_t umadv__cli_profile_options[] = {
    {"output", 'o', "TRACE", "save the trace to TRACE (default " PROFILE_DEFAULT_OUTPUT ")"},
    {"force", 'f', NULL, "replace TRACE (and the --timeline FILE) if it exists"},
    {"iteration", 0, "N", "the iteration profiled, from 0 (UMADV_PROFILE_ITERATION)"},
    {"seconds", 0, "S", "profile the first S seconds (1 to 3600) instead of an iteration "
     "(UMADV_PROFILE_SECONDS)"},
    {"json", 0, "FILE", "also write the report as JSON to FILE"},
    {"timeline", 0, "FILE", "write the measured window as a Chrome trace (Perfetto) to FILE"},
    {"top", 0, "N", "rows in each top list of the report (default 10)"},
    {"budget", 'b', "SIZE", "advise for this budget: 8G, or 50% of the footprint"},
    UMADV_LAUNCH_KNOB_OPTIONS,
    {"no-preload", 0, NULL, "do not LD_PRELOAD the injection library"},
    {"quiet", 'q', NULL, "print no run summary at exit"},
    {NULL, 0, NULL, NULL}
};

typedef struct profile_args {
    umadv_launch_args_t launch;
    int                 force;
    const char         *output;    /* -o, or the default */
    const char         *json;      /* --json FILE, or NULL */
    const char         *iteration; /* --iteration N, or NULL */
    const char         *seconds;   /* --seconds S, or NULL */
    umadv_report_opts_t report;
} profile_args_t;

/* ---- options ---- */

static int take_report_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                              const char *value, profile_args_t *args)
{
    if (strcmp(opt->name, "top") == 0) {
        if (umadv__cli_parse_u32(value, 1, 1000000, &args->report.top) != 0)
            return umadv__cli_bad_value(cmd, opt, value, "an integer between 1 and 1000000");
    } else if (strcmp(opt->name, "budget") == 0) {
        if (umadv__report_parse_budget(value, &args->report) != 0)
            return umadv__cli_bad_value(cmd, opt, value, UMADV_REPORT_BUDGET_RULE);
    }
    return 0;
}

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, void *own)
{
    profile_args_t *args = own;

    if (strcmp(opt->name, "iteration") == 0) {
        args->iteration = value;
        return umadv__launch_set_knob(cmd, opt, &iteration_knob, value);
    }
    if (strcmp(opt->name, "seconds") == 0) {
        args->seconds = value;
        return umadv__launch_set_knob(cmd, opt, &seconds_knob, value);
    }
    if (strcmp(opt->name, "force") == 0)
        args->force = 1;
    else if (strcmp(opt->name, "output") == 0)
        args->output = value;
    else if (strcmp(opt->name, "json") == 0)
        args->json = value;
    else if (strcmp(opt->name, "timeline") == 0 && strcmp(value, "-") == 0)
        return umadv__cli_usage_error(cmd, UMADV_REPORT_TIMELINE_DASH);
    else if (strcmp(opt->name, "timeline") == 0)
        args->report.timeline = value;
    return take_report_option(cmd, opt, value, args);
}

/* ---- the trace file ---- */

/* Where the trace goes: a regular file (the report reads it back), not
 * replaced without --force. A symbolic link to one is followed, as every
 * umadv output does. 0, or an exit status after the error. */
static int output_target(const umadv_cli_command_t *cmd, const profile_args_t *args,
                         char *target, size_t len)
{
    struct stat st;

    if (strcmp(args->output, "-") == 0)
        return umadv__cli_usage_error(cmd, "-o needs a file: the report reads the trace back");
    if (lstat(args->output, &st) != 0) {
        if (errno != ENOENT)
            return umadv__cli_fail("%s: %s", args->output, strerror(errno));
        return umadv__launch_absolute(args->output, target, len);
    }
    if (stat(args->output, &st) != 0)
        return umadv__cli_fail("%s: a symbolic link to nothing", args->output);
    if (!S_ISREG(st.st_mode))
        return umadv__cli_fail("%s is not a regular file: the trace needs one", args->output);
    if (!args->force)
        return umadv__cli_fail("%s exists: name another with -o, or replace it with --force",
                               args->output);
    if (realpath(args->output, target) == NULL)
        return umadv__cli_fail("%s: %s", args->output, strerror(errno));
    return 0;
}

/* The timeline, when asked, checked before the program runs as every
 * output of a launched program is (launch.h). */
static int timeline_target(const profile_args_t *args)
{
    if (args->report.timeline == NULL)
        return 0;
    return umadv__launch_check_output("timeline", args->report.timeline, args->force);
}

/* --iteration and --seconds: one of the two is profiled. The option
 * beats the environment: --iteration profiles an iteration whatever
 * UMADV_PROFILE_SECONDS says. 0, or an exit status after the error. */
static int profiled_what(const umadv_cli_command_t *cmd, const profile_args_t *args)
{
    if (args->iteration != NULL && args->seconds != NULL)
        return umadv__cli_usage_error(cmd, "--seconds and --iteration exclude each other: "
                                      "umadv profile records a window of time or an "
                                      "iteration, not both");
    if (args->iteration != NULL && unsetenv("UMADV_PROFILE_SECONDS") != 0)
        return umadv__cli_fail("cannot unset UMADV_PROFILE_SECONDS: %s", strerror(errno));
    return 0;
}

/* The file the library saves into, beside @target so that a rename puts
 * it in place; empty until a profile is saved. */
static int make_temp(const char *target, char *temp, size_t len)
{
    mode_t mask = umask(0);
    int fd;

    umask(mask);
    snprintf(temp, len, "%s.profile.XXXXXX", target);
    fd = mkostemp(temp, O_CLOEXEC);
    if (fd < 0)
        return umadv__cli_fail("cannot create a file beside %s: %s", target, strerror(errno));
    /* the trace gets a new file's mode, not mkstemp's 0600 */
    if (fchmod(fd, 0666 & ~mask) != 0 || close(fd) != 0) {
        unlink(temp);
        return umadv__cli_fail("%s: %s", temp, strerror(errno));
    }
    return 0;
}

/* Put the saved trace in place: replaced only with --force, never over a
 * file that appeared while the program ran. */
static int publish(const profile_args_t *args, const char *temp, const char *target)
{
    if (args->force ? rename(temp, target) == 0 : link(temp, target) == 0) {
        if (!args->force)
            unlink(temp);
        return 0;
    }
    if (errno == EEXIST)
        return umadv__cli_fail("%s appeared while the program ran: the trace is kept in %s",
                               target, temp);
    return umadv__cli_fail("cannot put the trace in %s (%s): it is kept in %s", target,
                           strerror(errno), temp);
}

/* Whether the library saved a profile into @temp. */
static int saved(const char *temp)
{
    struct stat st;

    return stat(temp, &st) == 0 && st.st_size > 0;
}

/* ---- the run ---- */

/* The child runs in profile mode, unmanaged after its profile. */
static int set_profile_env(const char *temp)
{
    if (umadv__launch_export_knob("UMADV_PROFILE_OUTPUT", temp, 1) != 0 ||
        umadv__launch_export_knob("UMADV_POLICY", "oracle", 1) != 0 ||
        umadv__launch_export_knob("UMADV_BUDGET", "0", 1) != 0)
        return -1;
    return 0;
}

static int run_program(const profile_args_t *args, const char *program, const char *temp,
                       int *status_p)
{
    char summary[PATH_MAX];
    int temp_summary;
    pid_t pid;

    if (set_profile_env(temp) != 0 ||
        umadv__launch_set_parts(args->launch.no_preload, program) != 0 ||
        umadv__launch_set_summary(NULL, args->launch.quiet, summary, sizeof(summary),
                                  &temp_summary) != 0)
        return UMADV_EXIT_FAILURE;
    pid = umadv__launch_spawn(program, args->launch.command, status_p);
    if (pid < 0) {
        if (temp_summary)
            unlink(summary);
        return *status_p;
    }
    *status_p = umadv__launch_wait(pid);
    umadv__launch_print_summary(summary, temp_summary, args->launch.quiet, args->launch.command[0]);
    return 0;
}

static int no_profile(const profile_args_t *args, int status)
{
    const char *iteration = getenv("UMADV_PROFILE_ITERATION");
    const char *seconds = getenv("UMADV_PROFILE_SECONDS");

    if (seconds != NULL) {
        fprintf(stderr, "umadv profile: %s saved no profile: its window never began (umadv saw "
                "no CUDA allocation or kernel launch of it), or the save failed (the library's "
                "message above says why); see umadv-profile(1)\n", args->launch.command[0]);
        return status != 0 ? status : UMADV_EXIT_FAILURE;
    }
    fprintf(stderr, "umadv profile: %s saved no profile: iteration %s never ended (umadv finds "
            "iterations at an NVTX range, --iteration-range, at PyTorch's optimizer step, or in "
            "the repeating kernel-launch sequence; --seconds records a window of time instead), "
            "or the save failed (the library's message above says why); see umadv-profile(1)\n",
            args->launch.command[0], iteration != NULL ? iteration : "1");
    return status != 0 ? status : UMADV_EXIT_FAILURE;
}

/* The report, and the exit status: the program's, else the report's. */
static int report(const profile_args_t *args, const char *target, int status)
{
    int rc;

    if (args->json != NULL)
        rc = umadv__report_print_both(target, &args->report, args->json);
    else
        rc = umadv__report_print(target, &args->report, 0);
    return status != 0 ? status : rc;
}

int umadv__cmd_profile(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    char program[PATH_MAX], target[PATH_MAX], temp[PATH_MAX + 32];
    profile_args_t args = {.output = PROFILE_DEFAULT_OUTPUT,
                           .report = {.top = UMADV_REPORT_TOP_DEFAULT}};
    int rc, status;

    umadv__launch_init("profile");
    rc = umadv__launch_parse(cmd, argc, argv, NULL, 0, take_option, &args, &args.launch);
    if (rc != 0)
        return rc < 0 ? UMADV_EXIT_OK : rc;
    if ((rc = profiled_what(cmd, &args)) != 0)
        return rc;
    args.report.program = args.launch.command[0];
    if ((rc = output_target(cmd, &args, target, sizeof(target))) != 0 ||
        (rc = timeline_target(&args)) != 0)
        return rc;
    if ((rc = umadv__launch_check_program(args.launch.command[0], program, sizeof(program))) != 0)
        return rc;
    if ((rc = make_temp(target, temp, sizeof(temp))) != 0)
        return rc;
    rc = run_program(&args, program, temp, &status);
    if (rc != 0 || !saved(temp)) {
        unlink(temp);
        return rc != 0 ? rc : no_profile(&args, status);
    }
    if ((rc = publish(&args, temp, target)) != 0)
        return status != 0 ? status : rc;
    return report(&args, target, status);
}
