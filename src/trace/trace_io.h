/*
 * The on-disk trace format (umadv-trace(5)): versioned, line-oriented text
 * with a CRC-32 over the body. Readers report "file:line: reason" and never
 * read out of bounds, whatever the input.
 */
#ifndef UMADV_TRACE_TRACE_IO_H
#define UMADV_TRACE_TRACE_IO_H

#include <stddef.h>
#include <stdio.h>

#include "trace/trace.h"

#define UMADV_TRACE_FORMAT_VERSION 1

/* Parse @len bytes of @buf (not NUL-terminated) named @name in messages.
 * On success *@trace is initialised and finalized; on failure it is left
 * untouched and @why holds "name:line: reason". */
umadv_status_t umadv__trace_read_buffer(const char *name, const char *buf, size_t len,
                                        umadv_trace_t *trace, char *why, size_t why_len);

/* Read a file ("-" is standard input). UMADV_ERR_IO when it cannot be
 * read (why names the path and errno), UMADV_ERR_CORRUPT when malformed. */
umadv_status_t umadv__trace_read_file(const char *path, umadv_trace_t *trace,
                                      char *why, size_t why_len);

/* Write a finalized trace. The output is deterministic: the same trace
 * always gives the same bytes. */
umadv_status_t umadv__trace_write_stream(const umadv_trace_t *trace, FILE *stream);

/* Write to @path atomically (temporary file, then rename): a failed write
 * never destroys an existing trace. */
umadv_status_t umadv__trace_write_file(const umadv_trace_t *trace, const char *path,
                                       char *why, size_t why_len);

#endif
