/*
 * Between the writer (outfile.c) and its guards (outfile_guard.c): the
 * same-file check against inputs and the log, and the table of pending
 * temporary files that a signal handler removes.
 */
#ifndef UMADV_COMMON_OUTFILE_INT_H
#define UMADV_COMMON_OUTFILE_INT_H

#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>

#include <umadv.h>

/* UMADV_ERR_INVALID_PARAM with a reason naming @path and the other file
 * when the regular file @st is a registered input or the log file. */
umadv_status_t umadv__outfile_check_same(const struct stat *st, const char *path,
                                         const char *what, char *why, size_t why_len);

/* Block the guarded signals (the previous mask in @old) around creating
 * or renaming a temporary file, so that it is never unknown to the guard
 * while it exists. */
void umadv__outfile_block(sigset_t *old);
void umadv__outfile_unblock(const sigset_t *old);

/* Remember @tmp for the signal handler; returns the slot, or -1 when the
 * table is full or the path too long (the file is then not guarded). */
int umadv__outfile_arm(const char *tmp);
void umadv__outfile_disarm(int slot);

#endif
