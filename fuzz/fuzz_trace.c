/*
 * libFuzzer target: the trace reader (umadv-trace(5)) on any bytes, through
 * umadv__trace_read_buffer, the parse path umadv__trace_read_file takes
 * once the file is in memory. Each input is read twice: as it is (the
 * checksum guards the parser) and re-sealed with a fresh checksum (the
 * parser meets the damage). Properties: a rejection is UMADV_ERR_CORRUPT
 * with a message that names the input; an accepted trace writes, reads
 * back and writes the same bytes again.
 */
#include <string.h>

#include "fuzz.h"
#include "trace/trace_io.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    umadv_fuzz_quiet();
    return 0;
}

/* An accepted trace is one the writer can write, and its bytes read back
 * to a trace that writes the same bytes. */
static void check_round_trip(const umadv_trace_t *trace)
{
    umadv_trace_t again;
    char *first, *second, why[512];
    size_t first_len, second_len;

    UMADV_FUZZ_CHECK(umadv__trace_write_buffer(trace, &first, &first_len) == UMADV_OK);
    UMADV_FUZZ_CHECK(umadv__trace_read_buffer("written", first, first_len, &again, why,
                                              sizeof(why)) == UMADV_OK);
    UMADV_FUZZ_CHECK(umadv__trace_write_buffer(&again, &second, &second_len) == UMADV_OK);
    UMADV_FUZZ_CHECK(first_len == second_len && memcmp(first, second, first_len) == 0);
    umadv__trace_cleanup(&again);
    free(first);
    free(second);
}

static void read_one(const char *buf, size_t len)
{
    umadv_trace_t trace;
    char why[512] = "";
    umadv_status_t status = umadv__trace_read_buffer("fuzz", buf, len, &trace, why,
                                                     sizeof(why));

    if (status != UMADV_OK) {
        UMADV_FUZZ_CHECK(status == UMADV_ERR_CORRUPT || status == UMADV_ERR_NO_MEMORY);
        UMADV_FUZZ_CHECK(status != UMADV_ERR_CORRUPT || strncmp(why, "fuzz:", 5) == 0);
        return;
    }
    check_round_trip(&trace);
    umadv__trace_cleanup(&trace);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *sealed;
    size_t sealed_len;

    read_one((const char *)data, size);
    if (umadv__trace_reseal_buffer((const char *)data, size, &sealed, &sealed_len) != UMADV_OK)
        return 0;
    read_one(sealed, sealed_len);
    free(sealed);
    return 0;
}
