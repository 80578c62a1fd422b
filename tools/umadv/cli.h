/*
 * The umadv command: a table of subcommands, each in its own cmd_*.c, and
 * the option parser they share. Every command describes its options in a
 * table, so parsing, "did you mean" hints and --help all come from one
 * place and cannot drift apart.
 */
#ifndef UMADV_TOOLS_CLI_H
#define UMADV_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <umadv.h>

/* Exit statuses, as umadv(1) documents them. */
#define UMADV_EXIT_OK      0
#define UMADV_EXIT_FAILURE 1 /* the work failed: bad trace, budget too small */
#define UMADV_EXIT_USAGE   2 /* the command line is wrong */

typedef struct umadv_cli_option {
    const char *name;       /* long name without "--"; NULL ends a table */
    int         short_name; /* 0: none */
    const char *metavar;    /* NULL: a flag that takes no value */
    const char *help;       /* one line */
} umadv_cli_option_t;

typedef struct umadv_cli_command umadv_cli_command_t;

struct umadv_cli_command {
    const char               *name;
    const char               *summary;     /* one line for "umadv --help" */
    const char               *usage;       /* arguments after "umadv NAME" */
    const char               *description; /* paragraph for "umadv NAME --help" */
    const umadv_cli_option_t *options;
    int (*run)(const umadv_cli_command_t *cmd, int argc, char **argv);
};

/* The commands, NULL-name terminated, in the order help lists them. */
extern const umadv_cli_command_t umadv__cli_commands[];

int umadv__cmd_plan(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_report(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_synth(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_info(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_topo(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_run(const umadv_cli_command_t *cmd, int argc, char **argv);
int umadv__cmd_profile(const umadv_cli_command_t *cmd, int argc, char **argv);

extern const umadv_cli_option_t umadv__cli_plan_options[];
extern const umadv_cli_option_t umadv__cli_report_options[];
extern const umadv_cli_option_t umadv__cli_synth_options[];
extern const umadv_cli_option_t umadv__cli_info_options[];
extern const umadv_cli_option_t umadv__cli_topo_options[];
extern const umadv_cli_option_t umadv__cli_run_options[];
extern const umadv_cli_option_t umadv__cli_profile_options[];

/* ---- option parsing (options.c) ---- */

typedef enum umadv_cli_next {
    UMADV_CLI_END,      /* no more arguments */
    UMADV_CLI_OPTION,   /* *opt_p is set, *value_p when it takes one */
    UMADV_CLI_ARG,      /* a positional argument in *value_p */
    UMADV_CLI_HELP,     /* --help or -h: the caller prints help, exits 0 */
    UMADV_CLI_ERROR     /* usage error, already reported */
} umadv_cli_next_t;

typedef struct umadv_cli_parser {
    const umadv_cli_command_t *cmd;
    int                        argc;
    char                     **argv;
    int                        next;       /* next argv index */
    const char                *cluster;    /* rest of "-abc" still to read */
    int                        positional; /* after "--" */
} umadv_cli_parser_t;

/* @argv[0] is the command name; parsing starts after it. */
void umadv__cli_parser_init(umadv_cli_parser_t *parser, const umadv_cli_command_t *cmd,
                            int argc, char **argv);

umadv_cli_next_t umadv__cli_next(umadv_cli_parser_t *parser,
                                 const umadv_cli_option_t **opt_p, const char **value_p);

/* Usage error in @cmd (NULL: the top level): prints "umadv: <message>" and a
 * pointer to --help on stderr; returns UMADV_EXIT_USAGE. */
int umadv__cli_usage_error(const umadv_cli_command_t *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "invalid value 'V' for '--NAME': EXPECTED"; returns UMADV_EXIT_USAGE. */
int umadv__cli_bad_value(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                         const char *value, const char *expected);

/* Failure of the work itself: "umadv: <message>"; returns UMADV_EXIT_FAILURE. */
int umadv__cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));


int umadv__cli_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *value_p);

/* The command's --help text on @stream. */
void umadv__cli_print_help(const umadv_cli_command_t *cmd, FILE *stream);

const umadv_cli_command_t *umadv__cli_find_command(const char *name);

/* Format @bytes as GiB with two decimals, without the unit: "19.56". */
char *umadv__cli_gib(uint64_t bytes, char *buf, size_t len);

/* Register @path ("-": standard input) as an input before reading it:
 * an output (--timeline, -o) or the log file (UMADV_LOG_FILE) that is the
 * same file is then refused, before anything is written. Returns 0, or an
 * exit status after an error that names both files. */
int umadv__cli_input(const char *path);

/* The trace plan and report read when none is named: the shipped VGG-16.
 * Returns a static path. */
const char *umadv__cli_default_trace(void);

#endif
