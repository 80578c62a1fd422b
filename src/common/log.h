/*
 * Levelled logging. The level is tested before any formatting, so a
 * disabled trace message costs one comparison.
 */
#ifndef UMADV_COMMON_LOG_H
#define UMADV_COMMON_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

typedef enum umadv_log_level {
    UMADV_LOG_ERROR = 0,
    UMADV_LOG_WARN  = 1,
    UMADV_LOG_INFO  = 2,
    UMADV_LOG_DEBUG = 3,
    UMADV_LOG_TRACE = 4
} umadv_log_level_t;

extern umadv_log_level_t umadv__log_level;

/* Messages are lowercase, without a trailing newline or period. */
#define umadv_log(_level, ...) \
    do { \
        if ((_level) <= umadv__log_level) \
            umadv__log_emit((_level), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define umadv_error(...) umadv_log(UMADV_LOG_ERROR, __VA_ARGS__)
#define umadv_warn(...)  umadv_log(UMADV_LOG_WARN, __VA_ARGS__)
#define umadv_info(...)  umadv_log(UMADV_LOG_INFO, __VA_ARGS__)
#define umadv_debug(...) umadv_log(UMADV_LOG_DEBUG, __VA_ARGS__)
#define umadv_trace(...) umadv_log(UMADV_LOG_TRACE, __VA_ARGS__)

void umadv__log_emit(umadv_log_level_t level, const char *file, int line,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Parse "error|warn|info|debug|trace"; returns -1 on an unknown name. */
int umadv__log_level_parse(const char *name, umadv_log_level_t *level_p);
const char *umadv__log_level_name(umadv_log_level_t level);

/* Send messages to @path (appended) instead of stderr; NULL or "" or
 * "stderr" means stderr. Returns 0, or -1 with errno set. A write error
 * on the file is reported once on stderr, naming the file and the
 * reason, and the log goes on on stderr. */
int umadv__log_set_file(const char *path);

/* Whether messages go to a file (UMADV_LOG_FILE): then what it is in
 * *@st_p (fstat of the open stream) and its name in @path. */
int umadv__log_file(struct stat *st_p, char *path, size_t len);

/* The program name printed before each message ("umadv" by default).
 * In a process of a distributed job (RANK, else LOCAL_RANK, set to a
 * number) the rank follows it: "umadv[rank 1]: error: ...". */
void umadv__log_set_prefix(const char *prefix);

/* This process's rank in a distributed job, the one the prefix shows
 * ("" when none): the digits of RANK, else of LOCAL_RANK. */
const char *umadv__log_job_rank(void);

/* Read RANK and LOCAL_RANK again (they are read once, at the first
 * message); for tests. */
void umadv__log_rank_reload(void);

#endif
