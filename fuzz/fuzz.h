/*
 * What every libFuzzer target here shares: quiet stdio, so that millions of
 * rejected inputs do not each print a message, while sanitizer reports and
 * libFuzzer's own output (written to file descriptor 2 directly) still
 * reach the terminal; and the abort that turns a broken property into a
 * finding with a reproducer.
 */
#ifndef UMADV_FUZZ_FUZZ_H
#define UMADV_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Point stdout and stderr's FILE streams (not the descriptors) at
 * /dev/null, and standard input at /dev/null too, so nothing waits on it. */
static inline void umadv_fuzz_quiet(void)
{
    FILE *null = fopen("/dev/null", "w");

    if (null == NULL || freopen("/dev/null", "r", stdin) == NULL)
        abort();
    stdout = null;
    stderr = null;
}

/* A property the target checks failed: name it on descriptor 2 and abort,
 * so that libFuzzer saves the input. */
#define UMADV_FUZZ_CHECK(cond)                                                           \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            dprintf(2, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#endif
