/*
 * Running a program under the injection library: what umadv run and
 * umadv profile share (umadv-run(1)). The knobs the options set, the
 * program found as execvp would find it, the environment that brings the
 * library in (LD_PRELOAD, NVTX_INJECTION64_PATH, the Python start-up
 * hook), the summary file, and the child started with the signals a job
 * control or a batch system sends forwarded to it.
 */
#ifndef UMADV_TOOLS_LAUNCH_H
#define UMADV_TOOLS_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#include "cli.h"
#include "common/config.h"

/* Exit statuses of a program that could not be run, as shells give them. */
#define UMADV_LAUNCH_NOT_EXECUTABLE 126
#define UMADV_LAUNCH_NOT_FOUND      127

/* An option that sets a knob: its value is checked by the knob's rules. */
typedef struct umadv_launch_knob {
    const char *option;
    const char *knob;
    const char *fixed; /* a flag's value; NULL: the option's */
} umadv_launch_knob_t;

/* The options that set a knob and that every launching command has,
 * for its option table (cli.h), where its --help lists them; the
 * launcher sets their knobs (umadv__launch_parse). */
#define UMADV_LAUNCH_KNOB_OPTIONS \
    {"device", 0, "N", "the CUDA device umadv manages (UMADV_DEVICE)"}, \
    {"managed-malloc", 0, NULL, "route cudaMalloc into umadv's managed pool " \
     "(UMADV_ROUTE_MALLOC)"}, \
    {"iteration-range", 0, "NAME", "NVTX range that marks an iteration " \
     "(UMADV_ITERATION_RANGE)"}, \
    {"iteration-source", 0, "S", "auto, nvtx, optimizer or launches: what begins an " \
     "iteration (UMADV_ITERATION_SOURCE)"}

/* What every launching command's line holds beside its own options. */
typedef struct umadv_launch_args {
    int    quiet, no_preload;
    char **command; /* PROGRAM and its arguments, NULL-terminated */
} umadv_launch_args_t;

/* A command's own option: 0, or the exit status that ends the parse. */
typedef int (*umadv_launch_option_fn)(const umadv_cli_command_t *cmd,
                                      const umadv_cli_option_t *opt, const char *value,
                                      void *own);

/* Options up to PROGRAM (or "--"): an option of @knobs or of
 * UMADV_LAUNCH_KNOB_OPTIONS sets its knob,
 * --quiet and --no-preload set @args, any other goes to @own_option with
 * @own; what follows is the program's, as given, in args->command.
 * Returns 0, -1 after --help, or an exit status. */
int umadv__launch_parse(const umadv_cli_command_t *cmd, int argc, char **argv,
                        const umadv_launch_knob_t *knobs, size_t nknobs,
                        umadv_launch_option_fn own_option, void *own,
                        umadv_launch_args_t *args);

/* The command named in messages: "umadv run: prog: command not found". */
void umadv__launch_init(const char *command_name);

const umadv_config_field_t *umadv__launch_knob_field(const char *name);

/* Check @value by the knob's rules and export it; 0, or a usage error's
 * exit status after the message. */
int umadv__launch_set_knob(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                           const umadv_launch_knob_t *ko, const char *value);

/* Export a knob the launcher chooses, checked by the knob's rules (said,
 * naming it); with !@overwrite a value set already stays. 0 or -1. */
int umadv__launch_export_knob(const char *name, const char *value, int overwrite);

/* An output file that the program or the command writes once the
 * program has run, named by --@option, checked before it runs: an
 * existing regular file is refused unless @force; a folder, or a path in
 * no folder, is an error; a device or a FIFO is a stream
 * (common/outfile.h). 0, or an exit status after the error. */
int umadv__launch_check_output(const char *option, const char *path, int force);

/* @path made absolute in @out: the program may change its directory
 * before it writes there. 0, or an exit status after the error. */
int umadv__launch_absolute(const char *path, char *out, size_t len);

/* Whether @name can be run: 0 with its path in @path, or the shell's
 * status (126, 127) after an error that names it. */
int umadv__launch_check_program(const char *name, char *path, size_t len);

/* The injection library and the Python hook into the environment; 0, or
 * -1 after an error. */
int umadv__launch_set_parts(int no_preload, const char *program);

/* The summary file: @named_option, else UMADV_RUN_SUMMARY, else a
 * temporary one (*temp_p set); started empty. With @quiet and none named,
 * @path is "": none. 0, or -1 after an error. */
int umadv__launch_set_summary(const char *named_option, int quiet, char *path, size_t len,
                              int *temp_p);

/* Start the program; its pid, or -1 after an error naming it (*status_p:
 * the exit status to give). */
pid_t umadv__launch_spawn(const char *path, char **command, int *status_p);

/* Wait for it: its exit status as a shell gives it, 128 + N for signal N. */
int umadv__launch_wait(pid_t pid);

/* Print the summary records of @path (unless @quiet) and remove it if
 * it was a temporary file. */
void umadv__launch_print_summary(const char *path, int temp, int quiet, const char *program);

#endif
