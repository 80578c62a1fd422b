/*
 * libFuzzer target: the umadv command line, from the top-level dispatch
 * through each command's option parser (tools/umadv/options.c) to the
 * value parsers: sizes (umadv_size_parse), budget lists and percentages
 * (`plan --budget`), policy lists, counts. An input is the argument list,
 * one argument per line.
 *
 * `plan`, `report` and `help` run in full; the default trace they read is
 * a small one in a private folder (so a run plans in microseconds).
 * Arguments that could reach beyond the current folder or write are
 * skipped: a '/', or --timeline (it writes a file). `synth`, `info` and
 * `topo` write files, load the machine's topology or the CUDA runtime: for
 * them only the option parser and the value parsers run. The current
 * folder stays the caller's, so libFuzzer's relative corpus and artifact
 * paths mean what they say.
 */
static char fuzz_datadir[] = "/tmp/umadv-fuzz-cli.XXXXXX";
#define main umadv__fuzz_cli_main
#define UMADV_DATADIR     fuzz_datadir
#define UMADV_SRC_DATADIR fuzz_datadir
int main(int argc, char **argv);
#include "../tools/umadv/main.c"
#undef main

#include <stdlib.h>

#include "fuzz.h"
#include "trace/trace_io.h"

#define FUZZ_MAX_ARGS 32

/* A trace of two iterations of two steps over three allocations: planning
 * it under any budget takes microseconds. */
static const char fuzz_trace[] =
    "umadv-trace 1\n"
    "trace section_size=2097152 allocs=3 steps=4 accesses=6 source=\"fuzz\"\n"
    "device name=\"X\" pci_bus_id=\"\" memory=151397597184 cc=9.0 driver=13000\n"
    "link fetch_bw=52000000000 fetch_latency=6.2e-05 evict_bw=11000000000 "
    "evict_latency=0.000445 fault_bw=3800000000 fault_latency=2e-05 remote_bw=42000000000\n"
    "alloc id=0 base=0x0 size=8388608 kind=weight alloc_step=- free_step=-\n"
    "alloc id=1 base=0x0 size=4194304 kind=activation alloc_step=- free_step=-\n"
    "alloc id=2 base=0x0 size=6291456 kind=gradient alloc_step=- free_step=-\n"
    "step id=0 iter=0 kind=kernel dur_ns=100000\n"
    "  a alloc=0 first=0 count=4 mode=r faults=0\n"
    "  a alloc=1 first=0 count=2 mode=w faults=0\n"
    "step id=1 iter=0 kind=kernel dur_ns=200000\n"
    "  a alloc=2 first=0 count=3 mode=rw faults=0\n"
    "step id=2 iter=1 kind=kernel dur_ns=100000\n"
    "  a alloc=0 first=0 count=4 mode=r faults=0\n"
    "  a alloc=1 first=0 count=2 mode=w faults=0\n"
    "step id=3 iter=1 kind=kernel dur_ns=200000\n"
    "  a alloc=2 first=0 count=3 mode=rw faults=0\n";

static char fuzz_fixture[sizeof(fuzz_datadir) + 64];

static void remove_fixture(void)
{
    remove(fuzz_fixture);
    remove(fuzz_datadir);
}

static void write_fixture(const char *path)
{
    umadv_trace_t trace;
    char *sealed, why[512];
    size_t len;
    FILE *f;

    UMADV_FUZZ_CHECK(umadv__trace_reseal_buffer(fuzz_trace, sizeof(fuzz_trace) - 1, &sealed,
                                                &len) == UMADV_OK);
    UMADV_FUZZ_CHECK(umadv__trace_read_buffer(path, sealed, len, &trace, why, sizeof(why)) ==
                     UMADV_OK);
    umadv__trace_cleanup(&trace);
    f = fopen(path, "w");
    UMADV_FUZZ_CHECK(f != NULL && fwrite(sealed, 1, len, f) == len && fclose(f) == 0);
    free(sealed);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    UMADV_FUZZ_CHECK(mkdtemp(fuzz_datadir) != NULL);
    snprintf(fuzz_fixture, sizeof(fuzz_fixture), "%s/%s", fuzz_datadir, UMADV_DEFAULT_TRACE);
    atexit(remove_fixture);
    write_fixture(fuzz_fixture);
    umadv_fuzz_quiet();
    return 0;
}

/* The value parsers on every option value, with the properties each
 * promises. */
static void parse_value(const char *value)
{
    uint64_t bytes;
    uint32_t u;
    umadv_policy_t policy;
    char again[32];

    if (umadv_size_parse(value, &bytes) == UMADV_OK)
        umadv__size_format(bytes, again, sizeof(again));
    if (umadv__cli_parse_u32(value, 1, 10000, &u) == 0) {
        UMADV_FUZZ_CHECK(u >= 1 && u <= 10000);
        snprintf(again, sizeof(again), "%u", u);
        UMADV_FUZZ_CHECK(umadv__cli_parse_u32(again, 1, 10000, &u) == 0);
    }
    if (umadv_policy_parse(value, &policy) == UMADV_OK)
        UMADV_FUZZ_CHECK(strcmp(umadv_policy_name(policy), value) == 0 ||
                         umadv_policy_parse(umadv_policy_name(policy), &policy) == UMADV_OK);
}

/* A command whose run does more than parse: its options only. */
static void parse_only(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    umadv_cli_next_t next;

    umadv__cli_parser_init(&parser, cmd, argc, argv);
    while ((next = umadv__cli_next(&parser, &opt, &value)) != UMADV_CLI_END &&
           next != UMADV_CLI_ERROR && next != UMADV_CLI_HELP) {
        if (next == UMADV_CLI_OPTION)
            UMADV_FUZZ_CHECK(opt != NULL && (opt->metavar == NULL) == (value == NULL));
        if (value != NULL)
            parse_value(value);
    }
}

static int safe_argument(const char *arg)
{
    return strchr(arg, '/') == NULL && strstr(arg, "timeline") == NULL;
}

/* Split @data at newlines into @argv after "umadv"; 0 when an argument is
 * one the target must not run. */
static int split(const uint8_t *data, size_t size, char *copy, char **argv, int *argc_p)
{
    int argc = 0;

    argv[argc++] = (char *)"umadv";
    memcpy(copy, data, size);
    copy[size] = '\0';
    for (char *p = copy; argc < FUZZ_MAX_ARGS;) {
        char *nl = memchr(p, '\n', (size_t)(copy + size - p));
        if (nl != NULL)
            *nl = '\0';
        if (!safe_argument(p))
            return 0;
        argv[argc++] = p;
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    argv[argc] = NULL;
    *argc_p = argc;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy, *argv[FUZZ_MAX_ARGS + 1];
    const umadv_cli_command_t *cmd;
    int argc;

    if (size > 4096 || (copy = malloc(size + 1)) == NULL)
        return 0;
    if (split(data, size, copy, argv, &argc)) {
        cmd = argc > 1 ? umadv__cli_find_command(argv[1]) : NULL;
        if (cmd != NULL && cmd->run != umadv__cmd_plan && cmd->run != umadv__cmd_report)
            parse_only(cmd, argc - 1, argv + 1);
        else
            (void)umadv__fuzz_cli_main(argc, argv);
    }
    free(copy);
    return 0;
}
