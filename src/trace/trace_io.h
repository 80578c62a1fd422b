/*
 * The on-disk trace format (umadv-trace(5)): versioned, line-oriented text
 * with a CRC-32 over the body. Readers report "file:line: reason" and never
 * read out of bounds, whatever the input.
 */
#ifndef UMADV_TRACE_TRACE_IO_H
#define UMADV_TRACE_TRACE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace/trace.h"

#define UMADV_TRACE_FORMAT_VERSION 1

/* Most sections (over all allocations) a trace file may describe. The
 * reader builds one record per section, so this bounds what a small file
 * can make it allocate (4 Mi sections: 8 TiB at the default 2 MiB; 100 MB of records, read in
 * 0.06 s, where 16 Mi took 0.23 s and 400 MB). The
 * writer refuses traces beyond it, so every file it writes reads back. */
#define UMADV_TRACE_IO_MAX_SECTIONS (UINT32_C(1) << 22)

/* Plausibility bounds of the other numbers a trace file holds (the link
 * figures have theirs in trace.h): a step longer than an hour or a GPU
 * of more than 1 PiB is a broken file, and these keep every sum the
 * planner makes of them inside its integers. */
#define UMADV_TRACE_IO_MAX_STEP_NS (UINT64_C(3600) * 1000000000) /* 1 hour */
#define UMADV_TRACE_IO_MAX_MEMORY  (UINT64_C(1) << 50)           /* 1 PiB */

/* What the reader reads before it gives up, so that a device or a pipe
 * that never ends (/dev/zero, /dev/urandom) is refused quickly: a line
 * longer than UMADV_TRACE_IO_MAX_LINE bytes; more than
 * UMADV_TRACE_IO_MAX_HEADER bytes before the 'trace' record; more than
 * that plus UMADV_TRACE_IO_MAX_LINE per record the 'trace' record
 * declares (allocations, steps and accesses, with the 'device', 'link'
 * and 'end' lines). */
#define UMADV_TRACE_IO_MAX_LINE   (UINT64_C(64) << 10)
#define UMADV_TRACE_IO_MAX_HEADER (UINT64_C(1) << 20)

/* Parse @len bytes of @buf (not NUL-terminated) named @name in messages.
 * On success *@trace is initialised and finalized; on failure it is left
 * untouched and @why holds "name:line: reason". */
umadv_status_t umadv__trace_read_buffer(const char *name, const char *buf, size_t len,
                                        umadv_trace_t *trace, char *why, size_t why_len);

/* Read a file ("-" is standard input). UMADV_ERR_IO when it cannot be
 * read (why names the path and errno), UMADV_ERR_CORRUPT when malformed,
 * or as soon as the input passes a bound above (a line too long, no
 * header, more bytes than its counts allow): a device or a pipe that
 * never ends is refused quickly. */
umadv_status_t umadv__trace_read_file(const char *path, umadv_trace_t *trace,
                                      char *why, size_t why_len);

/* Write a finalized trace. The output is deterministic: the same trace
 * always gives the same bytes. */
umadv_status_t umadv__trace_write_stream(const umadv_trace_t *trace, FILE *stream);

/* Serialise a finalized trace into a malloc'ed buffer (the bytes
 * umadv__trace_write_stream would write). *@buf_p and *@len_p are set only
 * on success; UMADV_ERR_INVALID_PARAM (logged) for a trace the format
 * cannot hold: unfinalized, implausible link figures (trace.h), too
 * many sections, a number past its bound above, a line longer than
 * UMADV_TRACE_IO_MAX_LINE. */
umadv_status_t umadv__trace_write_buffer(const umadv_trace_t *trace, char **buf_p,
                                         size_t *len_p);

/* Recompute the checksum of an edited trace: everything before the last
 * line is kept when that line is an 'end' record (otherwise the whole
 * buffer) and a fresh 'end crc32=...' line is appended. For people who
 * edit traces by hand and for tests that must reach the parser past the
 * checksum. The result is malloc'ed; UMADV_ERR_NO_MEMORY only. */
umadv_status_t umadv__trace_reseal_buffer(const char *buf, size_t len, char **out_p,
                                          size_t *out_len_p);

/* Write to @path through common/outfile.h: a regular file is replaced
 * atomically once the whole trace is written (a failed write never
 * destroys an existing trace and leaves no temporary file); "-",
 * devices and FIFOs are streams, never unlinked; an input or the log
 * file is refused (UMADV_ERR_INVALID_PARAM). UMADV_ERR_IO with the path
 * and the system's reason in @why. A new file has mode 0666 less the
 * umask; a replaced one keeps its mode. */
umadv_status_t umadv__trace_write_file(const umadv_trace_t *trace, const char *path,
                                       char *why, size_t why_len);

#endif
