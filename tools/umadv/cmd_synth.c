/*
 * umadv synth: write a synthetic trace. The traces shipped in data/traces
 * are made with it (tools/make-traces.sh), so its output must depend on its
 * arguments alone.
 */
#include "cli.h"

#include <string.h>

#include "common/util.h"
#include "trace/synth.h"
#include "trace/trace_io.h"

enum { OPT_OUTPUT, OPT_BATCH, OPT_DEPTH, OPT_ITERATIONS, OPT_SECTION_SIZE };

const umadv_cli_option_t umadv__cli_synth_options[] = {
    [OPT_OUTPUT]       = {"output", 'o', "FILE", "write the trace to FILE (-: standard output)"},
    [OPT_BATCH]        = {"batch", 'b', "N", "samples per iteration (default 256; gpt2: 8)"},
    [OPT_DEPTH]        = {"depth", 'd', "N",
                          "layers (resnet-deep) or blocks (gpt2)"},
    [OPT_ITERATIONS]   = {"iterations", 'n', "N", "iterations to emit (default 1)"},
    [OPT_SECTION_SIZE] = {"section-size", 's', "SIZE",
                          "a power of two, 64K to 1G (default 2M)"},
    {NULL, 0, NULL, NULL}
};

typedef struct synth_args {
    const char *model, *output;
    uint32_t    batch, depth, iterations;
    uint64_t    section_size;
} synth_args_t;

static int check_model(const umadv_cli_command_t *cmd, const char *model)
{
    const char *const *models = umadv__synth_models();
    const char *hint;

    for (const char *const *m = models; *m != NULL; m++) {
        if (strcmp(*m, model) == 0)
            return 0;
    }
    hint = umadv__suggest(model, models, sizeof(models[0]));
    if (hint != NULL)
        return umadv__cli_usage_error(cmd, "unknown model '%s'; did you mean '%s'?", model,
                                      hint);
    return umadv__cli_usage_error(cmd, "unknown model '%s' (see 'umadv synth --help')", model);
}

static int parse_section_size(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                              const char *value, uint64_t *size_p)
{
    uint64_t size;

    if (umadv_size_parse(value, &size) != UMADV_OK || size < UMADV_SECTION_SIZE_MIN ||
        size > UMADV_SECTION_SIZE_MAX || (size & (size - 1)) != 0)
        return umadv__cli_bad_value(cmd, opt, value,
                                    "expected a power of two from 64K to 1G (2M, 64M)");
    *size_p = size;
    return 0;
}

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, synth_args_t *args)
{
    uint32_t *number = NULL, max = 1000000; /* depth: the model checks its own range */
    char expected[64];

    switch (opt - umadv__cli_synth_options) {
    case OPT_OUTPUT:
        args->output = value;
        return 0;
    case OPT_SECTION_SIZE:
        return parse_section_size(cmd, opt, value, &args->section_size);
    case OPT_BATCH:
        number = &args->batch;
        max = UMADV_SYNTH_BATCH_MAX;
        break;
    case OPT_DEPTH:
        number = &args->depth;
        break;
    default:
        number = &args->iterations;
        max = UMADV_SYNTH_ITER_MAX; /* the model's limit, stated once (synth.h) */
        break;
    }
    if (umadv__cli_parse_u32(value, 1, max, number) != 0) {
        snprintf(expected, sizeof(expected), "expected a whole number from 1 to %u", max);
        return umadv__cli_bad_value(cmd, opt, value, expected);
    }
    return 0;
}

static int finish_args(const umadv_cli_command_t *cmd, const synth_args_t *args)
{
    if (args->model == NULL)
        return umadv__cli_usage_error(cmd, "'synth' needs a MODEL");
    if (args->output == NULL)
        return umadv__cli_usage_error(cmd, "'synth' needs -o FILE");
    return check_model(cmd, args->model);
}

/* Returns -1 after --help (exit 0), an exit status on error, 0 to go on. */
static int parse_args(const umadv_cli_command_t *cmd, int argc, char **argv, synth_args_t *args)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    int rc;

    memset(args, 0, sizeof(*args));
    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            return finish_args(cmd, args);
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            printf("\nModels:");
            for (const char *const *m = umadv__synth_models(); *m != NULL; m++)
                printf(" %s", *m);
            printf("\n");
            return -1;
        case UMADV_CLI_ERROR:
            return UMADV_EXIT_USAGE;
        case UMADV_CLI_ARG:
            if (args->model != NULL)
                return umadv__cli_usage_error(cmd, "'synth' takes one model, got '%s' too",
                                              value);
            args->model = value;
            break;
        case UMADV_CLI_OPTION:
            if ((rc = take_option(cmd, opt, value, args)) != 0)
                return rc;
            break;
        }
    }
}

int umadv__cmd_synth(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    umadv_synth_params_t params;
    umadv_trace_t trace;
    synth_args_t args;
    umadv_status_t status;
    char why[512];
    int rc = parse_args(cmd, argc, argv, &args);

    if (rc != 0)
        return rc < 0 ? UMADV_EXIT_OK : rc;
    umadv__synth_params_default(args.model, &params);
    if (args.batch != 0)
        params.batch = args.batch;
    if (args.depth != 0)
        params.depth = args.depth;
    if (args.iterations != 0)
        params.iterations = args.iterations;
    if (args.section_size != 0)
        params.section_size = args.section_size;
    status = umadv__synth_build(&params, &trace);
    if (status != UMADV_OK)
        return umadv__cli_fail("cannot build a %s trace: %s", args.model,
                               umadv_status_string(status));
    status = umadv__trace_write_file(&trace, args.output, why, sizeof(why));
    umadv__trace_cleanup(&trace);
    if (status != UMADV_OK)
        return umadv__cli_fail("%s", why);
    return UMADV_EXIT_OK;
}
