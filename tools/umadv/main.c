/*
 * umadv: plan, simulate and inspect Unified Memory schedules.
 * This file dispatches to the commands; each lives in its own cmd_*.c.
 */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/util.h"

#ifndef UMADV_DATADIR
#  error "UMADV_DATADIR must name the installed traces folder"
#endif
#ifndef UMADV_SRC_DATADIR
#  error "UMADV_SRC_DATADIR must name the source tree's data/traces"
#endif

/* A real trace recorded on an H200 (PyTorch ResNet-50 training). */
#define UMADV_DEFAULT_TRACE "h200-resnet50-bs64.umt"

const umadv_cli_command_t umadv__cli_commands[] = {
    {"run", "run a program under umadv, unmodified: PyTorch or CUDA C",
     "[--budget SIZE] [--policy P] [OPTIONS] [--] PROGRAM [ARGS]",
     "Run PROGRAM with ARGS (passed as given) under umadv: PyTorch scripts get\n"
     "umadv's allocator and find their iterations at the optimizer's step; CUDA\n"
     "programs have cudaMallocManaged (and with --managed-malloc cudaMalloc)\n"
     "served from umadv's pool and mark iterations with an NVTX range; with\n"
     "neither, iterations come from the repeating kernel launches. The\n"
     "options set the UMADV_* knobs (umadv(7)) and beat the environment. Exits\n"
     "as PROGRAM did (128+N when signal N ended it; 127 not found, 126 not\n"
     "executable; 2 for a bad option or UMADV_* value, with nothing run) and\n"
     "prints a summary on standard error unless --quiet. See umadv-run(1).",
     umadv__cli_run_options, umadv__cmd_run},
    {"profile", "profile a program's iteration and advise: budget, prefetches, read-mostly",
     "[-o TRACE] [--iteration N | --seconds S] [--budget SIZE] [OPTIONS] [--] PROGRAM [ARGS]",
     "Run PROGRAM with ARGS (passed as given) under umadv as 'umadv run' does,\n"
     "profile iteration N (default 1), or its first S seconds, and save the trace\n"
     "to TRACE (default umadv-profile.umt; an existing file only with --force);\n"
     "nothing is planned and the program runs on unmanaged. Then print the\n"
     "trace's report with its advice: the budget to run with, what to prefetch,\n"
     "what is read-mostly, and the umadv run command that applies it. Exits as\n"
     "PROGRAM did, or 1 when no profile was saved. See umadv-profile(1).",
     umadv__cli_profile_options, umadv__cmd_profile},
    {"plan", "plan a schedule under GPU memory budgets and compare policies",
     "[TRACE] --budget SIZE[,SIZE...] [OPTIONS]",
     "Read TRACE (a umadv-trace(5) file; default: the shipped " UMADV_DEFAULT_TRACE "),\n"
     "plan a prefetch/eviction schedule for each budget and simulate it side by\n"
     "side with the oracle, demand and prefetch-all policies under the same budget.\n"
     "SIZE is a byte size (8G, 512M, 1.5GiB) or a percentage of the trace's\n"
     "footprint (50%).",
     umadv__cli_plan_options, umadv__cmd_plan},
    {"report", "summarise a trace: allocations, steps, working sets, faults",
     "TRACE [--top N] [--budget SIZE] [--json]",
     "Print a readable summary of TRACE (a umadv-trace(5) file, \"-\" for standard\n"
     "input): device, link model, allocations by kind, the largest steps and\n"
     "allocations, the faults the profiling pass saw, and advice from the\n"
     "simulator: the budget to run with, what to prefetch, what is read-mostly.",
     umadv__cli_report_options, umadv__cmd_report},
    {"synth", "write a synthetic trace of a DNN training iteration",
     "MODEL -o FILE [OPTIONS]",
     "Build a synthetic trace of MODEL (vgg16, resnet50, gpt2, resnet-deep) from\n"
     "its layer shapes and a FLOP model, and write it to FILE (\"-\" for standard\n"
     "output). The same arguments always give the same bytes.",
     umadv__cli_synth_options, umadv__cmd_synth},
    {"info", "show the version, build configuration, devices and knobs",
     "[-c]",
     "Print the version, how umadv was built, the hwloc and CUDA versions found at\n"
     "run time and the CUDA devices. A machine without a GPU is not an error.",
     umadv__cli_info_options, umadv__cmd_info},
    {"topo", "show each gpu's nearest numa nodes and cores, and umadv's host placement",
     "[--xml FILE] [--json]",
     "For each GPU (the CUDA devices here; with --xml, the NVIDIA display and 3D\n"
     "controllers of an hwloc XML topology), print its PCI id, the NUMA nodes and\n"
     "cores nearest it, and where umadv will put evicted pages and its threads\n"
     "under the current UMADV_HOST_NUMA. Without a GPU, the NUMA nodes alone.",
     umadv__cli_topo_options, umadv__cmd_topo},
    {NULL, NULL, NULL, NULL, NULL, NULL}
};

static const char *const top_options[] = {"help", "version", NULL};

static void print_top_help(FILE *stream)
{
    fputs("Usage: umadv COMMAND [OPTIONS] [ARGS]\n\n"
          "umadv plans and simulates Unified Memory prefetch schedules for CUDA\n"
          "programs under a GPU memory budget.\n\nCommands:\n", stream);
    for (const umadv_cli_command_t *cmd = umadv__cli_commands; cmd->name != NULL; cmd++)
        fprintf(stream, "  %-8s %s\n", cmd->name, cmd->summary);
    fprintf(stream, "  %-8s %s\n", "help", "show the help of a command");
    fputs("\nOptions:\n"
          "  -h, --help     show this help and exit\n"
          "  -V, --version  show the version and exit\n\n"
          "Run 'umadv help COMMAND' or 'umadv COMMAND --help' for a command's options.\n"
          "See umadv(1); the UMADV_* environment variables are described in umadv(7).\n",
          stream);
}

static void print_version(void)
{
    unsigned api = umadv_get_api_version();

    printf("umadv %s (API %u.%u)\n", umadv_get_version_string(), api >> 16, api & 0xffffu);
}

static int unknown_command(const char *name)
{
    const char *hint = umadv__suggest(name, umadv__cli_commands,
                                          sizeof(umadv_cli_command_t));

    if (hint != NULL)
        return umadv__cli_usage_error(NULL, "unknown command '%s'; did you mean '%s'?", name,
                                      hint);
    return umadv__cli_usage_error(NULL, "unknown command '%s'", name);
}

static int unknown_top_option(const char *arg)
{
    const char *word = arg + strspn(arg, "-");
    const char *hint = umadv__suggest(word, top_options, sizeof(top_options[0]));

    if (hint != NULL && arg[1] == '-')
        return umadv__cli_usage_error(NULL, "unknown option '%s'; did you mean '--%s'?", arg,
                                      hint);
    return umadv__cli_usage_error(NULL, "unknown option '%s'", arg);
}

static int help_command(int argc, char **argv)
{
    const umadv_cli_command_t *cmd;

    if (argc < 2) {
        print_top_help(stdout);
        return UMADV_EXIT_OK;
    }
    if (argc > 2)
        return umadv__cli_usage_error(NULL, "'help' takes one command, got '%s' too", argv[2]);
    if (strcmp(argv[1], "help") == 0) {
        print_top_help(stdout);
        return UMADV_EXIT_OK;
    }
    cmd = umadv__cli_find_command(argv[1]);
    if (cmd == NULL)
        return unknown_command(argv[1]);
    umadv__cli_print_help(cmd, stdout);
    return UMADV_EXIT_OK;
}

/* The UMADV_* knobs govern logging here as in the library; a bad value is
 * an error that names the variable, never a silent default. `info` still
 * runs so that `umadv info -c` can show which value is bad. */
static int load_config(const umadv_cli_command_t *cmd)
{
    umadv_config_t config;

    umadv__config_defaults(&config);
    if (umadv__config_load(&config) != UMADV_OK) {
        if (cmd->run == umadv__cmd_info)
            return 0;
        return -1;
    }
    if (umadv__config_apply_log(&config) != UMADV_OK)
        return -1;
    return 0;
}

int umadv__cli_input(const char *path)
{
    char why[PATH_MAX + 512];

    if (umadv__outfile_add_input(path, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_fail("%s", why);
    return 0;
}

const char *umadv__cli_default_trace(void)
{
    static char installed[4096], source[4096];

    /* The installed copy first; a build that was never installed runs on
     * its source tree's. If neither exists, the error names the installed. */
    snprintf(installed, sizeof(installed), "%s/%s", UMADV_DATADIR, UMADV_DEFAULT_TRACE);
    snprintf(source, sizeof(source), "%s/%s", UMADV_SRC_DATADIR, UMADV_DEFAULT_TRACE);
    if (access(installed, R_OK) != 0 && access(source, R_OK) == 0)
        return source;
    return installed;
}

int main(int argc, char **argv)
{
    const umadv_cli_command_t *cmd;
    const char *arg;

    /* No PATH.tmp.XXXXXX outlives a ^C, a kill or a file size limit. */
    umadv__outfile_guard_signals();
    if (argc < 2) {
        print_top_help(stderr);
        return UMADV_EXIT_USAGE;
    }
    arg = argv[1];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        print_top_help(stdout);
        return UMADV_EXIT_OK;
    }
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
        print_version();
        return UMADV_EXIT_OK;
    }
    if (strcmp(arg, "help") == 0)
        return help_command(argc - 1, argv + 1);
    if (arg[0] == '-')
        return unknown_top_option(arg);
    cmd = umadv__cli_find_command(arg);
    if (cmd == NULL)
        return unknown_command(arg);
    /* run, profile: a bad knob is refused before the program starts, as
     * a bad option */
    if (load_config(cmd) != 0)
        return cmd->run == umadv__cmd_run || cmd->run == umadv__cmd_profile ? UMADV_EXIT_USAGE
                                                                            : UMADV_EXIT_FAILURE;
    return cmd->run(cmd, argc - 1, argv + 1);
}
