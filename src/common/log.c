#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Warnings and errors by default: a library must stay quiet in a healthy
 * application, yet say why it degraded. */
umadv_log_level_t umadv__log_level = UMADV_LOG_WARN;

static FILE *log_stream;          /* NULL means stderr */
static const char *log_prefix = "umadv";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

const char *umadv__log_level_name(umadv_log_level_t level)
{
    if ((unsigned)level > UMADV_LOG_TRACE)
        return "?";
    return level_names[level];
}

int umadv__log_level_parse(const char *name, umadv_log_level_t *level_p)
{
    for (unsigned i = 0; i <= UMADV_LOG_TRACE; i++) {
        if (strcasecmp(name, level_names[i]) == 0) {
            *level_p = (umadv_log_level_t)i;
            return 0;
        }
    }
    return -1;
}

int umadv__log_set_file(const char *path)
{
    FILE *stream = NULL;

    if (path != NULL && path[0] != '\0' && strcmp(path, "stderr") != 0) {
        stream = fopen(path, "a");
        if (stream == NULL)
            return -1;
        setvbuf(stream, NULL, _IOLBF, 0);
    }
    pthread_mutex_lock(&log_lock);
    if (log_stream != NULL)
        fclose(log_stream);
    log_stream = stream;
    pthread_mutex_unlock(&log_lock);
    return 0;
}

void umadv__log_set_prefix(const char *prefix)
{
    log_prefix = prefix;
}

void umadv__log_emit(umadv_log_level_t level, const char *file, int line,
                     const char *fmt, ...)
{
    int saved_errno = errno; /* keep %m meaningful for the caller's format */
    va_list ap;

    pthread_mutex_lock(&log_lock);
    FILE *out = log_stream != NULL ? log_stream : stderr;
    if (umadv__log_level >= UMADV_LOG_DEBUG)
        fprintf(out, "%s: %s: %s:%d: ", log_prefix, level_names[level], file, line);
    else
        fprintf(out, "%s: %s: ", log_prefix, level_names[level]);
    errno = saved_errno;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    pthread_mutex_unlock(&log_lock);
    errno = saved_errno;
}
