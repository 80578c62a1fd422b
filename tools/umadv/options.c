/*
 * The option parser every command shares. Our own rather than getopt_long:
 * the messages must name the command, suggest the closest option, and the
 * same table must print --help.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void umadv__cli_parser_init(umadv_cli_parser_t *parser, const umadv_cli_command_t *cmd,
                            int argc, char **argv)
{
    parser->cmd        = cmd;
    parser->argc       = argc;
    parser->argv       = argv;
    parser->next       = 1;
    parser->cluster    = NULL;
    parser->positional = 0;
}

static const umadv_cli_option_t *find_long(const umadv_cli_option_t *options,
                                           const char *name, size_t len)
{
    for (const umadv_cli_option_t *opt = options; opt->name != NULL; opt++) {
        if (strlen(opt->name) == len && strncmp(opt->name, name, len) == 0)
            return opt;
    }
    return NULL;
}

static const umadv_cli_option_t *find_short(const umadv_cli_option_t *options, int c)
{
    for (const umadv_cli_option_t *opt = options; opt->name != NULL; opt++) {
        if (opt->short_name == c)
            return opt;
    }
    return NULL;
}

static umadv_cli_next_t unknown_long(umadv_cli_parser_t *parser, const char *name, size_t len)
{
    char word[64];
    const char *hint;

    snprintf(word, sizeof(word), "%.*s", (int)len, name);
    hint = umadv__suggest(word, parser->cmd->options, sizeof(umadv_cli_option_t));
    if (hint == NULL && umadv__edit_distance(word, "help") <= 1)
        hint = "help";
    if (hint != NULL)
        umadv__cli_usage_error(parser->cmd, "unknown option '--%s' for '%s'; did you mean '--%s'?",
                               word, parser->cmd->name, hint);
    else
        umadv__cli_usage_error(parser->cmd, "unknown option '--%s' for '%s'", word,
                               parser->cmd->name);
    return UMADV_CLI_ERROR;
}

/* The value of @opt: @inline_value when given as --name=value or -xVALUE,
 * else the next argument. */
static umadv_cli_next_t take_value(umadv_cli_parser_t *parser, const umadv_cli_option_t *opt,
                                   const char *inline_value, const char **value_p)
{
    if (inline_value != NULL) {
        *value_p = inline_value;
        return UMADV_CLI_OPTION;
    }
    if (parser->next >= parser->argc) {
        umadv__cli_usage_error(parser->cmd, "option '--%s' of '%s' needs a value (%s)",
                               opt->name, parser->cmd->name, opt->metavar);
        return UMADV_CLI_ERROR;
    }
    *value_p = parser->argv[parser->next++];
    return UMADV_CLI_OPTION;
}

static umadv_cli_next_t next_long(umadv_cli_parser_t *parser, const char *arg,
                                  const umadv_cli_option_t **opt_p, const char **value_p)
{
    const char *eq = strchr(arg, '=');
    size_t len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    const umadv_cli_option_t *opt = find_long(parser->cmd->options, arg, len);

    if (opt == NULL) {
        if (len == 4 && strncmp(arg, "help", 4) == 0)
            return UMADV_CLI_HELP;
        return unknown_long(parser, arg, len);
    }
    *opt_p = opt;
    *value_p = NULL;
    if (opt->metavar != NULL)
        return take_value(parser, opt, eq != NULL ? eq + 1 : NULL, value_p);
    if (eq != NULL) {
        umadv__cli_usage_error(parser->cmd, "option '--%s' of '%s' takes no value",
                               opt->name, parser->cmd->name);
        return UMADV_CLI_ERROR;
    }
    return UMADV_CLI_OPTION;
}

static umadv_cli_next_t next_short(umadv_cli_parser_t *parser,
                                   const umadv_cli_option_t **opt_p, const char **value_p)
{
    int c = (unsigned char)*parser->cluster++;
    const umadv_cli_option_t *opt = find_short(parser->cmd->options, c);

    if (opt == NULL) {
        parser->cluster = NULL;
        if (c == 'h')
            return UMADV_CLI_HELP;
        umadv__cli_usage_error(parser->cmd, "unknown option '-%c' for '%s'", c,
                               parser->cmd->name);
        return UMADV_CLI_ERROR;
    }
    *opt_p = opt;
    *value_p = NULL;
    if (opt->metavar == NULL)
        return UMADV_CLI_OPTION;
    const char *rest = *parser->cluster != '\0' ? parser->cluster : NULL;
    parser->cluster = NULL;
    return take_value(parser, opt, rest, value_p);
}

umadv_cli_next_t umadv__cli_next(umadv_cli_parser_t *parser,
                                 const umadv_cli_option_t **opt_p, const char **value_p)
{
    const char *arg;

    *opt_p = NULL;
    if (parser->cluster != NULL && *parser->cluster != '\0')
        return next_short(parser, opt_p, value_p);
    for (;;) {
        if (parser->next >= parser->argc)
            return UMADV_CLI_END;
        arg = parser->argv[parser->next++];
        if (parser->positional || arg[0] != '-' || arg[1] == '\0') {
            *value_p = arg; /* "-" names standard input */
            return UMADV_CLI_ARG;
        }
        if (strcmp(arg, "--") != 0)
            break;
        parser->positional = 1;
    }
    if (arg[1] == '-')
        return next_long(parser, arg + 2, opt_p, value_p);
    parser->cluster = arg + 1;
    return next_short(parser, opt_p, value_p);
}

static void vreport(const char *fmt, va_list ap)
{
    fputs("umadv: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int umadv__cli_usage_error(const umadv_cli_command_t *cmd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    if (cmd != NULL)
        fprintf(stderr, "umadv: try 'umadv %s --help' for the options\n", cmd->name);
    else
        fprintf(stderr, "umadv: try 'umadv --help' for the commands\n");
    return UMADV_EXIT_USAGE;
}

int umadv__cli_bad_value(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                         const char *value, const char *expected)
{
    return umadv__cli_usage_error(cmd, "invalid value '%s' for '--%s': %s", value, opt->name,
                                  expected);
}

int umadv__cli_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return UMADV_EXIT_FAILURE;
}


int umadv__cli_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *value_p)
{
    char *end;
    unsigned long long value;

    if (text[0] < '0' || text[0] > '9')
        return -1; /* strtoull would accept "-1" and " 1" */
    errno = 0;
    value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < min || value > max)
        return -1;
    *value_p = (uint32_t)value;
    return 0;
}

static int option_label(const umadv_cli_option_t *opt, char *buf, size_t len)
{
    char short_part[8] = "    ";

    if (opt->short_name != 0)
        snprintf(short_part, sizeof(short_part), "-%c, ", opt->short_name);
    return snprintf(buf, len, "%s--%s%s%s", short_part, opt->name,
                    opt->metavar != NULL ? " " : "", opt->metavar != NULL ? opt->metavar : "");
}

static void print_option(FILE *stream, const umadv_cli_option_t *opt, int width)
{
    char label[96];
    int n = option_label(opt, label, sizeof(label));

    if (n > width)
        fprintf(stream, "  %s\n  %*s  %s\n", label, width, "", opt->help);
    else
        fprintf(stream, "  %-*s  %s\n", width, label, opt->help);
}

void umadv__cli_print_help(const umadv_cli_command_t *cmd, FILE *stream)
{
    static const umadv_cli_option_t help = {"help", 'h', NULL, "show this help and exit"};
    enum { MAX_WIDTH = 28 };
    char label[96];
    int width = 0;

    fprintf(stream, "Usage: umadv %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->description);
    for (const umadv_cli_option_t *opt = cmd->options; opt->name != NULL; opt++) {
        int n = option_label(opt, label, sizeof(label));
        if (n <= MAX_WIDTH)
            width = UMADV_MAX(width, n);
    }
    width = UMADV_MAX(width, option_label(&help, label, sizeof(label)));
    fputs("\nOptions:\n", stream);
    for (const umadv_cli_option_t *opt = cmd->options; opt->name != NULL; opt++)
        print_option(stream, opt, width);
    print_option(stream, &help, width);
}

const umadv_cli_command_t *umadv__cli_find_command(const char *name)
{
    for (const umadv_cli_command_t *cmd = umadv__cli_commands; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, name) == 0)
            return cmd;
    }
    return NULL;
}

char *umadv__cli_gib(uint64_t bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f", (double)bytes / (double)UMADV_GIB);
    return buf;
}
