/*
 * The guards of outfile.c: outputs that are inputs (or the log) are
 * refused, and temporary files do not outlive a signal.
 */
#include "common/outfile.h"
#include "common/outfile_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

/* --- inputs ------------------------------------------------------------------ */

typedef struct input {
    dev_t dev;
    ino_t ino;
    char *path;
} input_t;

static pthread_mutex_t inputs_lock = PTHREAD_MUTEX_INITIALIZER;
static input_t *inputs;
static size_t ninputs, inputs_cap;

static int same_file(const struct stat *a, dev_t dev, ino_t ino)
{
    return a->st_dev == dev && a->st_ino == ino;
}

/* The log file, when it is the regular file @st. */
static int is_log_file(const struct stat *st, char *log_path, size_t len)
{
    struct stat log_st;

    return umadv__log_file(&log_st, log_path, len) && S_ISREG(log_st.st_mode) &&
           same_file(st, log_st.st_dev, log_st.st_ino);
}

static umadv_status_t remember_input(const struct stat *st, const char *path)
{
    umadv_status_t status = UMADV_OK;
    char *copy = strdup(path);

    pthread_mutex_lock(&inputs_lock);
    if (copy == NULL)
        status = UMADV_ERR_NO_MEMORY;
    else
        status = umadv__array_reserve((void **)&inputs, &inputs_cap, ninputs + 1,
                                      sizeof(*inputs));
    if (status == UMADV_OK)
        inputs[ninputs++] = (input_t){st->st_dev, st->st_ino, copy};
    else
        free(copy);
    pthread_mutex_unlock(&inputs_lock);
    return status;
}

umadv_status_t umadv__outfile_add_input(const char *path, char *why, size_t why_len)
{
    int is_stdin = strcmp(path, "-") == 0;
    char log_path[PATH_MAX];
    struct stat st, out;

    if ((is_stdin ? fstat(STDIN_FILENO, &st) : stat(path, &st)) != 0 || !S_ISREG(st.st_mode))
        return UMADV_OK; /* missing: the reader says so; a stream cannot be destroyed */
    if (is_log_file(&st, log_path, sizeof(log_path))) {
        /* Not one more line into the input; the log is not lost either. */
        umadv__log_set_file(NULL);
        snprintf(why, why_len, "the log file UMADV_LOG_FILE=%s is the input %s: refusing to "
                 "append the log to it", log_path, is_stdin ? "(standard input)" : path);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (fstat(STDOUT_FILENO, &out) == 0 && S_ISREG(out.st_mode) &&
        same_file(&st, out.st_dev, out.st_ino)) {
        /* `umadv report t.umt >> t.umt`: the shell opened it, we refuse it */
        snprintf(why, why_len, "standard output is the input %s: refusing to write into it",
                 is_stdin ? "(standard input)" : path);
        return UMADV_ERR_INVALID_PARAM;
    }
    if (remember_input(&st, is_stdin ? "(standard input)" : path) != UMADV_OK) {
        snprintf(why, why_len, "cannot remember the input %s: out of memory", path);
        return UMADV_ERR_NO_MEMORY;
    }
    return UMADV_OK;
}

void umadv__outfile_clear_inputs(void)
{
    pthread_mutex_lock(&inputs_lock);
    for (size_t i = 0; i < ninputs; i++)
        free(inputs[i].path);
    free(inputs);
    inputs = NULL;
    ninputs = inputs_cap = 0;
    pthread_mutex_unlock(&inputs_lock);
}

umadv_status_t umadv__outfile_check_same(const struct stat *st, const char *path,
                                         const char *what, char *why, size_t why_len)
{
    umadv_status_t status = UMADV_OK;
    char log_path[PATH_MAX];

    if (!S_ISREG(st->st_mode))
        return UMADV_OK;
    if (is_log_file(st, log_path, sizeof(log_path))) {
        snprintf(why, why_len, "refusing to write %s %s: it is the log file UMADV_LOG_FILE=%s",
                 what, path, log_path);
        return UMADV_ERR_INVALID_PARAM;
    }
    pthread_mutex_lock(&inputs_lock);
    for (size_t i = 0; i < ninputs && status == UMADV_OK; i++) {
        if (same_file(st, inputs[i].dev, inputs[i].ino)) {
            snprintf(why, why_len, "refusing to write %s %s: it is the input %s", what, path,
                     inputs[i].path);
            status = UMADV_ERR_INVALID_PARAM;
        }
    }
    pthread_mutex_unlock(&inputs_lock);
    return status;
}

/* --- pending temporary files ---------------------------------------------------- */

/* A handler may run in any thread at any time: it reads only these
 * lock-free flags and the paths written before a flag was raised. */
#define GUARD_SLOTS 8

static struct {
    atomic_int used;  /* claimed by a writer */
    atomic_int armed; /* path holds a file to remove */
    char       path[PATH_MAX];
} guard[GUARD_SLOTS];

/* Kills, limits, and crashes too: a crash (the plan of a bad trace) must
 * not leave a temporary file behind either. */
static const int guarded_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE, SIGXCPU,
                                      SIGXFSZ, SIGABRT, SIGBUS,  SIGFPE,  SIGILL,  SIGSEGV};

int umadv__outfile_arm(const char *tmp)
{
    if (strlen(tmp) >= sizeof(guard[0].path))
        return -1;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        int expected = 0;

        if (atomic_compare_exchange_strong(&guard[i].used, &expected, 1)) {
            strcpy(guard[i].path, tmp);
            atomic_store(&guard[i].armed, 1);
            return i;
        }
    }
    return -1;
}

void umadv__outfile_disarm(int slot)
{
    if (slot < 0)
        return;
    atomic_store(&guard[slot].armed, 0);
    atomic_store(&guard[slot].used, 0);
}

void umadv__outfile_block(sigset_t *old)
{
    sigset_t set;

    sigemptyset(&set);
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(guarded_signals); i++)
        sigaddset(&set, guarded_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

void umadv__outfile_unblock(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Async-signal-safe: unlink, then the signal again under its default
 * action (SA_RESETHAND restored it; it is delivered when we return, and
 * a fault would recur anyway), so the exit status and any core dump are
 * what they would have been. */
static void remove_pending(int sig)
{
    int saved_errno = errno;

    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (atomic_load(&guard[i].armed))
            unlink(guard[i].path);
    }
    errno = saved_errno;
    raise(sig);
}

void umadv__outfile_guard_signals(void)
{
    struct sigaction sa, old;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = remove_pending;
    sa.sa_flags   = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(guarded_signals); i++)
        sigaddset(&sa.sa_mask, guarded_signals[i]);
    for (size_t i = 0; i < UMADV_ARRAY_SIZE(guarded_signals); i++) {
        int sig = guarded_signals[i];

        /* nohup's SIGHUP, a shell's ignored SIGINT: stay ignored. */
        if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            sigaction(sig, &sa, NULL);
    }
}
