/*
 * Helpers shared by the runtime tests (config, cuda_ops, pool, context):
 * the log captured in a temporary file so that tests can check what was
 * said, an environment cleared of every UMADV_* knob, and a host-only
 * context.
 */
#ifndef UMADV_TESTS_TESTUTIL_H
#define UMADV_TESTS_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <umadv.h>

#include "common/config.h"
#include "common/log.h"
#include "tap.h"

static char test_log_path[] = "/tmp/umadv-test-log-XXXXXX";

/* Send the log to a new temporary file; without one the program cannot
 * check its messages, so it skips as a whole. Call before plan(). */
static inline void log_capture_start(void)
{
    int fd = mkstemp(test_log_path);

    if (fd < 0)
        skip_all("cannot create a temporary file");
    close(fd);
    umadv__log_set_file(test_log_path);
}

static inline void log_capture_stop(void)
{
    umadv__log_set_file(NULL);
    unlink(test_log_path);
}

/* The log written since the last call (its first 8 KiB), which it empties. */
static inline char *log_take(void)
{
    static char buf[8192];
    FILE *f = fopen(test_log_path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = '\0';
    if (truncate(test_log_path, 0) != 0)
        diag("truncate %s failed", test_log_path);
    return buf;
}

/* Unset every knob umadv_config_t reads, so that the host's own settings
 * cannot change what a test sees. */
static inline void env_clear(void)
{
    size_t n;
    const umadv_config_field_t *fields = umadv__config_fields(&n);

    for (size_t i = 0; i < n; i++)
        unsetenv(fields[i].name);
}

/* A host-only context (no GPU needed) of @section_size bytes per section
 * under @budget (0: the environment's, as with no budget given); NULL
 * when it cannot be made. */
static inline umadv_context_t test_host_context(uint64_t section_size, uint64_t budget)
{
    umadv_context_params_t p = {
        .field_mask   = UMADV_CONTEXT_FIELD_FLAGS | UMADV_CONTEXT_FIELD_SECTION_SIZE |
                        (budget ? UMADV_CONTEXT_FIELD_BUDGET : 0),
        .flags        = UMADV_CONTEXT_FLAG_HOST_ONLY,
        .section_size = section_size,
        .budget       = budget,
    };
    umadv_context_t ctx = NULL;

    return umadv_context_create(&p, &ctx) == UMADV_OK ? ctx : NULL;
}

#endif
