/*
 * umadv run's summary: the records the injection library appends to
 * UMADV_RUN_SUMMARY (umadv-run(1), SUMMARY FILE), read back and printed.
 */
#ifndef UMADV_TOOLS_RUN_SUMMARY_H
#define UMADV_TOOLS_RUN_SUMMARY_H

#include <stdio.h>

/* Print every record of @path for @program on @stream, naming the
 * umadv @command ("run") that ran it; a process that wrote none is said
 * too. Returns the number of records, or -1 when the
 * file cannot be read or holds a malformed record (said on @stream). */
int umadv__run_summary_print(const char *path, const char *command, const char *program,
                             FILE *stream);

#endif
