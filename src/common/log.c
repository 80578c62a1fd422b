#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Warnings and errors by default: a library must stay quiet in a healthy
 * application, yet say why it degraded. */
umadv_log_level_t umadv__log_level = UMADV_LOG_WARN;

static FILE *log_stream;          /* NULL means stderr */
static char *log_path;            /* UMADV_LOG_FILE, when log_stream is set */
static struct stat log_st;        /* what it is: outputs and inputs must differ */
static const char *log_prefix = "umadv";
static char job_rank[16];         /* RANK (else LOCAL_RANK) of a distributed job, else "" */
static char log_rank[32];         /* "[rank N]" in a distributed job's process, else "" */
static pthread_once_t log_rank_once = PTHREAD_ONCE_INIT;
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

/* Replace the log stream (NULL: stderr); call with log_lock held. */
static void set_stream(FILE *stream, char *path)
{
    if (log_stream != NULL)
        fclose(log_stream);
    free(log_path);
    log_stream = stream;
    log_path   = path;
    if (stream == NULL || fstat(fileno(stream), &log_st) != 0)
        memset(&log_st, 0, sizeof(log_st));
}

int umadv__log_set_file(const char *path)
{
    FILE *stream = NULL;
    char *copy = NULL;

    if (path != NULL && path[0] != '\0' && strcmp(path, "stderr") != 0) {
        copy = strdup(path);
        if (copy == NULL)
            return -1;
        stream = fopen(path, "a");
        if (stream == NULL) {
            free(copy);
            return -1;
        }
        setvbuf(stream, NULL, _IOLBF, 0);
    }
    pthread_mutex_lock(&log_lock);
    set_stream(stream, copy);
    pthread_mutex_unlock(&log_lock);
    return 0;
}

int umadv__log_file(struct stat *st_p, char *path, size_t len)
{
    int is_file;

    pthread_mutex_lock(&log_lock);
    is_file = log_stream != NULL;
    if (is_file) {
        *st_p = log_st;
        snprintf(path, len, "%s", log_path);
    }
    pthread_mutex_unlock(&log_lock);
    return is_file;
}

void umadv__log_set_prefix(const char *prefix)
{
    log_prefix = prefix;
}

static int is_rank(const char *value)
{
    size_t digits = value != NULL ? strspn(value, "0123456789") : 0;

    return digits > 0 && digits <= 9 && value[digits] == '\0';
}

/* RANK, as torchrun and MPI-style launchers set it (else LOCAL_RANK):
 * when one rank of many fails, its messages say which. Read once: the
 * environment is not safe to read while another thread may set it. */
static void rank_load(void)
{
    const char *rank = getenv("RANK");

    if (!is_rank(rank))
        rank = getenv("LOCAL_RANK");
    snprintf(job_rank, sizeof(job_rank), "%s", is_rank(rank) ? rank : "");
    if (job_rank[0] != '\0')
        snprintf(log_rank, sizeof(log_rank), "[rank %s]", job_rank);
    else
        log_rank[0] = '\0';
}

const char *umadv__log_job_rank(void)
{
    pthread_once(&log_rank_once, rank_load);
    return job_rank;
}

void umadv__log_rank_reload(void)
{
    pthread_once(&log_rank_once, rank_load); /* so that a later once does not redo it */
    pthread_mutex_lock(&log_lock);
    rank_load();
    pthread_mutex_unlock(&log_lock);
}

/* One message on @out; returns 0, or the errno of the write that failed. */
static int write_message(FILE *out, umadv_log_level_t level, const char *file, int line,
                         int saved_errno, const char *fmt, va_list ap)
{
    int err = 0;

    if (umadv__log_level >= UMADV_LOG_DEBUG) {
        if (fprintf(out, "%s%s: %s: %s:%d: ", log_prefix, log_rank, level_names[level], file,
                    line) < 0)
            err = errno;
    } else if (fprintf(out, "%s%s: %s: ", log_prefix, log_rank, level_names[level]) < 0) {
        err = errno;
    }
    errno = saved_errno; /* keep %m meaningful for the caller's format */
    if (vfprintf(out, fmt, ap) < 0 && err == 0)
        err = errno;
    if (fputc('\n', out) == EOF && err == 0)
        err = errno;
    if (fflush(out) == EOF && err == 0)
        err = errno;
    if (err == 0 && ferror(out))
        err = EIO;
    return err;
}

/* The log file failed (/dev/full, a full disk): say so once, naming the
 * file and the reason, and log to stderr from now on, so that neither
 * this message nor the next is lost without a word. Lock held. */
static void log_file_failed(int err)
{
    fprintf(stderr, "%s%s: error: cannot write the log file UMADV_LOG_FILE=%s: %s; logging to "
            "stderr from now on\n", log_prefix, log_rank, log_path, strerror(err));
    set_stream(NULL, NULL);
}

void umadv__log_emit(umadv_log_level_t level, const char *file, int line,
                     const char *fmt, ...)
{
    int saved_errno = errno;
    va_list ap, again;
    int err;

    pthread_once(&log_rank_once, rank_load);
    va_start(ap, fmt);
    va_copy(again, ap);
    pthread_mutex_lock(&log_lock);
    err = write_message(log_stream != NULL ? log_stream : stderr, level, file, line,
                        saved_errno, fmt, ap);
    if (err != 0 && log_stream != NULL) {
        log_file_failed(err);
        write_message(stderr, level, file, line, saved_errno, fmt, again);
    }
    pthread_mutex_unlock(&log_lock);
    va_end(again);
    va_end(ap);
    errno = saved_errno;
}
