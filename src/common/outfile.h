/*
 * Output files that never destroy what they replace. Every file umadv
 * writes (a trace, a timeline) goes through here, so the rules live in
 * one place:
 *
 * - "-" is standard output; a path that is not a regular file (a device,
 *   a FIFO, a socket, a descriptor named through /proc such as
 *   /dev/stdout or /proc/self/fd/1) is opened and written as a stream,
 *   never truncated, unlinked or replaced;
 * - a regular file, or a path that does not exist yet, is written to a
 *   temporary file PATH.tmp.XXXXXX in the same directory, which is
 *   fsync'ed and renamed over PATH only once the whole content was
 *   written, flushed and closed without error; on any failure the
 *   temporary file is removed and the old file stays exactly as it was.
 *   A new file gets 0666 less the umask, like any created file; a
 *   replaced file keeps its mode (and, where allowed, its owner);
 * - a symbolic link to a regular file replaces the file it points to and
 *   the link stays (as editors do); a link to nothing is refused;
 * - an output that is the same file (device and inode, symbolic links
 *   followed) as a registered input or as the log file is refused before
 *   anything is written.
 *
 * The CLI also removes a pending temporary file when it is killed by a
 * signal it can catch (umadv__outfile_guard_signals).
 */
#ifndef UMADV_COMMON_OUTFILE_H
#define UMADV_COMMON_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#include <umadv.h>

typedef struct umadv_outfile {
    FILE       *stream; /* write the content here */
    const char *path;   /* as the caller named it */
    const char *what;   /* "the timeline": names the file in messages */
    char       *target; /* the regular file a commit replaces; NULL: a stream */
    char       *tmp;    /* the temporary file beside @target */
    int         guard;  /* slot in the signal guard; -1: none */
} umadv_outfile_t;

/* Open @path for a new content. @what names it in messages ("the
 * timeline"; NULL: "the file"). Returns UMADV_OK; UMADV_ERR_INVALID_PARAM
 * when @path is an input or the log file, or a symbolic link to nothing;
 * UMADV_ERR_IO when it cannot be created; UMADV_ERR_NO_MEMORY. Errors have
 * their reason, naming @path, in @why; on error nothing was touched. */
umadv_status_t umadv__outfile_open(umadv_outfile_t *of, const char *path, const char *what,
                                   char *why, size_t why_len);

/* Finish the output: flush and check the stream (a short write, ENOSPC,
 * EFBIG are errors), fsync, close, and for a regular file rename the
 * temporary over the target. On error the temporary file is removed and
 * the target untouched; UMADV_ERR_IO with the reason in @why. @of is
 * closed either way. */
umadv_status_t umadv__outfile_commit(umadv_outfile_t *of, char *why, size_t why_len);

/* Give the output up: close it and remove the temporary file, leaving a
 * replaced file as it was (what a stream got is gone already). */
void umadv__outfile_discard(umadv_outfile_t *of);

/* Open, write @len bytes of @buf and commit, as above. */
umadv_status_t umadv__outfile_write(const char *path, const char *what, const void *buf,
                                    size_t len, char *why, size_t why_len);

/* Register @path ("-": standard input) as an input of this process:
 * later outputs naming the same regular file are refused. When it is the
 * log file, the log goes back to stderr and UMADV_ERR_INVALID_PARAM is
 * returned with both names in @why; so it is when it is standard output
 * (the shell's >>). Call this before reading or writing anything.
 * A path that does not exist is no error here (the reader reports it). */
umadv_status_t umadv__outfile_add_input(const char *path, char *why, size_t why_len);

/* Forget the registered inputs (tests). */
void umadv__outfile_clear_inputs(void);

/* Remove pending temporary files on SIGHUP, SIGINT, SIGQUIT, SIGTERM,
 * SIGPIPE, SIGXCPU, SIGXFSZ (a file size limit) and on crashes (SIGABRT,
 * SIGBUS, SIGFPE, SIGILL, SIGSEGV), then die of the same signal. A
 * signal the caller ignores or handles (a sanitizer's) is left alone.
 * For programs, not the library: it takes over process-wide signal
 * dispositions. */
void umadv__outfile_guard_signals(void);

#endif
