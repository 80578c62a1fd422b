/*
 * Test helper for tests/test_cli.sh: write a copy of a trace as a
 * PyTorch run would have recorded it, every allocation but the weights
 * stageable (umadv-trace(5), stageable), and with "figures" the staged
 * channel's link figures a probe might have measured. Not a test itself.
 *
 *     stage_trace IN OUT [figures]
 */
#include <stdio.h>
#include <string.h>

#include "trace/trace.h"
#include "trace/trace_io.h"

int main(int argc, char **argv)
{
    umadv_trace_t t;
    char why[512];

    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "figures") != 0)) {
        fprintf(stderr, "usage: stage_trace IN OUT [figures]\n");
        return 2;
    }
    if (umadv__trace_read_file(argv[1], &t, why, sizeof(why)) != UMADV_OK) {
        fprintf(stderr, "stage_trace: %s\n", why);
        return 1;
    }
    for (uint32_t a = 0; a < t.nallocs; a++)
        t.allocs[a].stageable = t.allocs[a].kind != UMADV_ALLOC_WEIGHT;
    if (argc == 4) {
        t.link.stage_evict_bw = 45e9;
        t.link.stage_evict_latency = 30e-6;
        t.link.stage_restore_bw = 45e9;
        t.link.stage_restore_latency = 50e-6;
    }
    if (umadv__trace_write_file(&t, argv[2], why, sizeof(why)) != UMADV_OK) {
        fprintf(stderr, "stage_trace: %s\n", why);
        umadv__trace_cleanup(&t);
        return 1;
    }
    umadv__trace_cleanup(&t);
    return 0;
}
