/*
 * umadv info: what this umadv is and what it finds here. A machine without
 * a GPU (or without a driver) is a normal answer, not an error: planning
 * and reports work there.
 */
#include "cli.h"

#include <hwloc.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"
#include "config.h"
#include "cuda_ops/cuda_ops.h"

enum { OPT_CONFIG };

const umadv_cli_option_t umadv__cli_info_options[] = {
    [OPT_CONFIG] = {"config", 'c', NULL,
                    "print every UMADV_* knob with its documentation"},
    {NULL, 0, NULL, NULL}
};

/* CUDA encodes versions as 1000 * major + 10 * minor. */
static char *cuda_version(int version, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", version / 1000, (version % 1000) / 10);
    return buf;
}

static const char *yes_no(int yes)
{
    return yes ? "yes" : "no";
}

/* "+ 0" keeps this compiling if configure could not read CUDART_VERSION
 * and left the macro empty. */
#define BUILD_CUDART_VERSION (UMADV_BUILD_CUDART_VERSION + 0)

static void print_build(void)
{
    char v[16];

    printf("build:\n");
    if (BUILD_CUDART_VERSION > 0)
        printf("  cuda toolkit:   %s (CUDART_VERSION %d, CUDA %s)\n", UMADV_CUDA_DIR,
               BUILD_CUDART_VERSION, cuda_version(BUILD_CUDART_VERSION, v, sizeof(v)));
    else
        printf("  cuda toolkit:   %s (CUDART_VERSION unknown)\n", UMADV_CUDA_DIR);
    printf("  hwloc:          %s\n", UMADV_BUILD_HWLOC_VERSION);
#ifdef UMADV_HAVE_CUDNN
    printf("  cudnn:          yes\n");
#else
    printf("  cudnn:          no\n");
#endif
#ifdef UMADV_HAVE_NVTX
    printf("  nvtx:           yes\n");
#else
    printf("  nvtx:           no\n");
#endif
    printf("  nvcc:           %s\n", UMADV_NVCC[0] != '\0' && strcmp(UMADV_NVCC, "no") != 0 ?
                                     UMADV_NVCC : "no");
    printf("  default trace:  %s\n", umadv__cli_default_trace());
}

static void print_device(const umadv_cuda_ops_t *ops, int device)
{
    umadv_device_props_t props;
    char mem[32];
    umadv_status_t status = ops->get_device_props(device, &props);

    if (status != UMADV_OK) {
        printf("  %d: unknown (%s)\n", device, umadv_status_string(status));
        return;
    }
    printf("  %d: %s, %s, compute capability %d.%d, pci %s\n", device, props.name,
           umadv__size_format(props.total_memory, mem, sizeof(mem)), props.cc_major,
           props.cc_minor, props.pci_bus_id);
    printf("     managed memory %s, concurrent managed access %s\n",
           yes_no(props.managed_memory), yes_no(props.concurrent_managed_access));
}

/* The driver is asked first: with none installed it answers 0 without
 * failing, which gives a clearer reason than a failed device count. */
static void print_cuda(void)
{
    const umadv_cuda_ops_t *ops = &umadv__cuda_ops_cudart;
    int driver = 0, count = 0;
    umadv_status_t status;
    char v[16];

    status = ops->driver_version(&driver);
    if (status != UMADV_OK || driver == 0) {
        printf("  cuda driver:    none\n");
        printf("devices: none (%s)\n", status != UMADV_OK ? umadv_status_string(status) :
                                       "no cuda driver is installed");
        return;
    }
    printf("  cuda driver:    %s (%d)\n", cuda_version(driver, v, sizeof(v)), driver);
    status = ops->device_count(&count);
    if (status != UMADV_OK) {
        printf("devices: none (%s)\n", umadv_status_string(status));
        return;
    }
    printf("devices: %d\n", count);
    for (int d = 0; d < count; d++)
        print_device(ops, d);
}

static void print_info(void)
{
    unsigned api = umadv_get_api_version();
    unsigned hwloc = hwloc_get_api_version();

    printf("umadv %s (API %u.%u)\n", umadv_get_version_string(), api >> 16, api & 0xffffu);
    print_build();
    printf("run time:\n");
    printf("  hwloc:          %u.%u.%u\n", hwloc >> 16, (hwloc >> 8) & 0xffu, hwloc & 0xffu);
    print_cuda();
}

int umadv__cmd_info(const umadv_cli_command_t *cmd, int argc, char **argv)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    int knobs = 0;

    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            if (knobs)
                umadv__config_print(stdout);
            else
                print_info();
            return UMADV_EXIT_OK;
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return UMADV_EXIT_OK;
        case UMADV_CLI_OPTION:
            knobs = 1;
            break;
        case UMADV_CLI_ARG:
            return umadv__cli_usage_error(cmd, "'info' takes no arguments, got '%s'", value);
        case UMADV_CLI_ERROR:
            return UMADV_EXIT_USAGE;
        }
    }
}
