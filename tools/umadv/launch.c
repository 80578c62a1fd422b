/*
 * The launcher umadv run and umadv profile share (launch.h): the program
 * found, the injection library put in place, the child run with the
 * signals forwarded, its exit status given back as a shell gives it.
 */
#define _GNU_SOURCE /* asprintf, pipe2 */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_summary.h"

#if !defined(UMADV_PKGLIBDIR) || !defined(UMADV_PYDIR) || !defined(UMADV_BUILDDIR) || \
    !defined(UMADV_SRC_PYDIR)
#  error "UMADV_PKGLIBDIR, UMADV_PYDIR, UMADV_BUILDDIR and UMADV_SRC_PYDIR must be defined"
#endif

#define INJECT_NAME "libumadv_inject.so"

static const char *launch_who = "run";

void umadv__launch_init(const char *command_name)
{
    launch_who = command_name;
}

/* ---- knobs ---- */

const umadv_config_field_t *umadv__launch_knob_field(const char *name)
{
    size_t n;
    const umadv_config_field_t *fields = umadv__config_fields(&n);

    for (size_t i = 0; i < n; i++) {
        if (strcmp(fields[i].name, name) == 0)
            return &fields[i];
    }
    return NULL;
}

/* Check @value by the knob's rules and export it; a usage error otherwise. */
int umadv__launch_set_knob(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                           const umadv_launch_knob_t *ko, const char *value)
{
    const umadv_config_field_t *field = umadv__launch_knob_field(ko->knob);
    char why[160];

    if (ko->fixed != NULL)
        value = ko->fixed;
    if (field == NULL || umadv__config_check(field, value, why, sizeof(why)) != UMADV_OK)
        return umadv__cli_bad_value(cmd, opt, value, field != NULL ? why : "unknown knob");
    if (setenv(ko->knob, value, 1) != 0)
        return umadv__cli_fail("cannot set %s: %s", ko->knob, strerror(errno));
    return 0;
}

/* The knobs of UMADV_LAUNCH_KNOB_OPTIONS. */
static const umadv_launch_knob_t shared_knobs[] = {
    {"device", "UMADV_DEVICE", NULL},
    {"managed-malloc", "UMADV_ROUTE_MALLOC", "1"},
    {"iteration-range", "UMADV_ITERATION_RANGE", NULL},
    {"iteration-source", "UMADV_ITERATION_SOURCE", NULL},
};

/* ---- outputs ---- */

int umadv__launch_absolute(const char *path, char *out, size_t len)
{
    char cwd[PATH_MAX];

    if (path[0] == '/') {
        snprintf(out, len, "%s", path);
        return 0;
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return umadv__cli_fail("cannot name the current directory: %s", strerror(errno));
    if ((size_t)snprintf(out, len, "%s/%s", cwd, path) >= len)
        return umadv__cli_fail("%s: the path is too long", path);
    return 0;
}

/* Whether the folder that would hold a new @path exists. */
static int folder_exists(const char *path)
{
    char folder[PATH_MAX];
    const char *slash = strrchr(path, '/');
    struct stat st;

    if (slash == NULL)
        return 1;
    snprintf(folder, sizeof(folder), "%.*s", (int)(slash - path) + 1, path);
    return stat(folder, &st) == 0 && S_ISDIR(st.st_mode);
}

int umadv__launch_check_output(const char *option, const char *path, int force)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return folder_exists(path) ? 0 : umadv__cli_fail("%s: no such folder", path);
    if (S_ISDIR(st.st_mode))
        return umadv__cli_fail("%s is a folder: --%s needs a file", path, option);
    if (!S_ISREG(st.st_mode) || force)
        return 0;
    return umadv__cli_fail("%s exists: name another with --%s, or replace it with --force",
                           path, option);
}

/* ---- where umadv's parts are ---- */

/* The build tree's parts for a umadv that runs from it, else the
 * installed ones: a build never runs an older installation's library. */
static int running_from_build_tree(void)
{
    char exe[PATH_MAX], tree[PATH_MAX];
    size_t len;

    if (realpath("/proc/self/exe", exe) == NULL || realpath(UMADV_BUILDDIR, tree) == NULL)
        return 0;
    len = strlen(tree);
    return strncmp(exe, tree, len) == 0 && exe[len] == '/';
}

static void parts_paths(char *inject, size_t inject_len, char *pydir, size_t pydir_len)
{
    if (running_from_build_tree()) {
        snprintf(inject, inject_len, "%s/.libs/%s", UMADV_BUILDDIR, INJECT_NAME);
        snprintf(pydir, pydir_len, "%s", UMADV_SRC_PYDIR);
    } else {
        snprintf(inject, inject_len, "%s/%s", UMADV_PKGLIBDIR, INJECT_NAME);
        snprintf(pydir, pydir_len, "%s", UMADV_PYDIR);
    }
}

/* ---- the program ---- */

/* Find @name as execvp would: a name with a slash is a path; otherwise
 * the first executable file of that name in PATH, else the first of
 * that name at all (so that the error is "not executable"). */
static int find_program(const char *name, char *path, size_t len)
{
    const char *dirs = getenv("PATH");
    int found = 0;

    if (strchr(name, '/') != NULL) {
        snprintf(path, len, "%s", name);
        return access(path, F_OK) == 0 ? 0 : -1;
    }
    if (dirs == NULL || *dirs == '\0')
        dirs = "/usr/local/bin:/usr/bin:/bin";
    while (name[0] != '\0') {
        size_t n = strcspn(dirs, ":");
        char candidate[PATH_MAX];
        struct stat st;

        snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)n, n > 0 ? dirs : ".", name);
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(candidate, X_OK) == 0) {
                snprintf(path, len, "%s", candidate);
                return 0;
            }
            if (!found)
                snprintf(path, len, "%s", candidate);
            found = 1;
        }
        if (dirs[n] == '\0')
            break;
        dirs += n + 1;
    }
    return found ? 0 : -1;
}

/* A Python interpreter, or a script whose #! line names one: the
 * start-up hook brings umadv in; preloading would put a second CUDA
 * runtime under PyTorch's. */
static int is_python(const char *path)
{
    const char *base = strrchr(path, '/');
    char line[256] = "";
    FILE *file;

    base = base != NULL ? base + 1 : path;
    if (strncmp(base, "python", 6) == 0)
        return 1;
    file = fopen(path, "r");
    if (file == NULL)
        return 0;
    if (fgets(line, sizeof(line), file) == NULL)
        line[0] = '\0';
    fclose(file);
    return strncmp(line, "#!", 2) == 0 && strstr(line, "python") != NULL;
}

/* Whether umadv can run @path: 0, or the shell's status after an error
 * that names the program. */
int umadv__launch_check_program(const char *name, char *path, size_t len)
{
    struct stat st;

    if (find_program(name, path, len) != 0) {
        fprintf(stderr, "umadv %s: %s: %s\n", launch_who, name,
                strchr(name, '/') != NULL ? "no such file" : "command not found in PATH");
        return UMADV_LAUNCH_NOT_FOUND;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "umadv %s: %s: is a directory\n", launch_who, name);
        return UMADV_LAUNCH_NOT_EXECUTABLE;
    }
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "umadv %s: %s: not executable: %s\n", launch_who, name, strerror(errno));
        return UMADV_LAUNCH_NOT_EXECUTABLE;
    }
    return 0;
}

/* ---- the environment ---- */

/* Export a knob umadv run chooses (a path), checked by the knob's rules:
 * a value the library would refuse is said here, naming it. */
int umadv__launch_export_knob(const char *name, const char *value, int overwrite)
{
    const umadv_config_field_t *field = umadv__launch_knob_field(name);
    char why[160];

    if (!overwrite && getenv(name) != NULL)
        return 0;
    if (field != NULL && umadv__config_check(field, value, why, sizeof(why)) != UMADV_OK) {
        umadv__cli_fail("%s=%s: %s", name, value, why);
        errno = EINVAL;
        return -1;
    }
    return setenv(name, value, 1);
}

static int prepend_env(const char *name, const char *value)
{
    const char *old = getenv(name);
    char *joined;
    int rc;

    if (old == NULL || old[0] == '\0')
        return setenv(name, value, 1);
    if (asprintf(&joined, "%s:%s", value, old) < 0)
        return -1;
    rc = setenv(name, joined, 1);
    free(joined);
    return rc;
}

/* NVTX takes one tool: a user's (a profiler's) stays. */
static int set_nvtx(const char *inject)
{
    const char *old = getenv("NVTX_INJECTION64_PATH");

    if (old == NULL || old[0] == '\0')
        return setenv("NVTX_INJECTION64_PATH", inject, 1);
    if (strcmp(old, inject) != 0)
        fprintf(stderr, "umadv %s: NVTX_INJECTION64_PATH names another tool (%s): umadv will "
                "not see NVTX iteration ranges\n", launch_who, old);
    return 0;
}

int umadv__launch_set_parts(int no_preload, const char *program)
{
    char inject[PATH_MAX], pydir[PATH_MAX];

    parts_paths(inject, sizeof(inject), pydir, sizeof(pydir));
    if (access(inject, R_OK) != 0) {
        umadv__cli_fail("the injection library %s is missing (%s): build or install umadv",
                        inject, strerror(errno));
        return -1;
    }
    if (umadv__launch_export_knob("UMADV_INJECT_LIBRARY", inject, 0) != 0 ||
        prepend_env("PYTHONPATH", pydir) != 0 ||
        set_nvtx(inject) != 0)
        goto fail;
    if (!no_preload && !is_python(program) && prepend_env("LD_PRELOAD", inject) != 0)
        goto fail;
    return 0;
fail:
    umadv__cli_fail("cannot set the program's environment: %s", strerror(errno));
    return -1;
}

/* The summary file: --summary, else UMADV_RUN_SUMMARY, else a temporary
 * one (*temp_p set); started empty. NULL path: none (--quiet). */
int umadv__launch_set_summary(const char *named_option, int quiet, char *path, size_t len,
                              int *temp_p)
{
    const char *named = named_option != NULL ? named_option : getenv("UMADV_RUN_SUMMARY");
    const char *dir = getenv("TMPDIR");
    int fd;

    *temp_p = 0;
    path[0] = '\0';
    if (named != NULL && named[0] != '\0')
        snprintf(path, len, "%s", named);
    else if (quiet)
        return 0;
    else
        snprintf(path, len, "%s/umadv-run.XXXXXX", dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    if (umadv__launch_export_knob("UMADV_RUN_SUMMARY", path, 1) != 0) /* the library's rules first */
        return -1;
    if (named != NULL && named[0] != '\0') {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
        fd = mkstemp(path);
        *temp_p = fd >= 0;
    }
    if (fd < 0 || close(fd) != 0) {
        umadv__cli_fail("cannot create the summary file %s: %s", path, strerror(errno));
        return -1;
    }
    return setenv("UMADV_RUN_SUMMARY", path, 1); /* mkstemp's name */
}

/* ---- running it ---- */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
static volatile sig_atomic_t child_pid;

/* A signal the kernel sent (a terminal's ^C, ^\) reached the child's
 * process group already; one a process sent to umadv is passed on. */
static void forward(int sig, siginfo_t *info, void *unused)
{
    int saved = errno;

    if (child_pid > 0 && (info == NULL || info->si_code != SI_KERNEL))
        kill((pid_t)child_pid, sig);
    errno = saved;
}

static void forwarding_mask(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(set, forwarded[i]);
}

static void forward_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaction(forwarded[i], &sa, NULL);
}

/* Whether @path is text (no NUL in its first bytes): a file the kernel
 * cannot run is a shell script then, a binary of another kind otherwise. */
static int is_text(const char *path)
{
    char head[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof(head)) : -1;

    if (fd >= 0)
        close(fd);
    return n >= 0 && memchr(head, '\0', (size_t)n) == NULL;
}

/* In the child: exec @path, as a shell script if the kernel cannot
 * (ENOEXEC, a text file without #! line); on failure, errno goes up
 * @report. */
static void exec_child(const char *path, char **command, int report, const sigset_t *mask)
{
    int err;

    sigprocmask(SIG_SETMASK, mask, NULL);
    execv(path, command);
    if (errno == ENOEXEC && is_text(path)) {
        size_t n = 0;
        while (command[n] != NULL)
            n++;
        char **sh = calloc(n + 2, sizeof(*sh));
        if (sh != NULL) {
            sh[0] = (char *)"sh";
            sh[1] = (char *)path;
            memcpy(sh + 2, command + 1, n * sizeof(*sh)); /* and its NULL */
            execv("/bin/sh", sh);
        }
        errno = ENOEXEC;
    }
    err = errno;
    /* a report lost leaves the parent the exit status below */
    if (write(report, &err, sizeof(err)) < 0)
        err = 0;
    _exit(UMADV_LAUNCH_NOT_EXECUTABLE);
}

/* Start the program; its pid, or -1 after an error naming it (*status_p:
 * the exit status to give). */
pid_t umadv__launch_spawn(const char *path, char **command, int *status_p)
{
    sigset_t block, old;
    int report[2], err = 0;
    pid_t pid;

    if (pipe2(report, O_CLOEXEC) != 0) {
        *status_p = umadv__cli_fail("cannot start %s: %s", command[0], strerror(errno));
        return -1;
    }
    forwarding_mask(&block);
    sigprocmask(SIG_BLOCK, &block, &old); /* no signal lost before child_pid is known */
    pid = fork();
    if (pid == 0)
        exec_child(path, command, report[1], &old);
    if (pid < 0)
        err = errno;
    if (pid > 0) {
        child_pid = pid;
        forward_signals();
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    /* the pipe closes at a successful exec: nothing to read */
    if (pid > 0 && read(report[0], &err, sizeof(err)) == (ssize_t)sizeof(err)) {
        waitpid(pid, NULL, 0);
        child_pid = 0;
        pid = -1;
    }
    close(report[0]);
    if (pid < 0) {
        fprintf(stderr, "umadv %s: %s: cannot run: %s\n", launch_who, command[0], strerror(err));
        *status_p = err == ENOENT ? UMADV_LAUNCH_NOT_FOUND : UMADV_LAUNCH_NOT_EXECUTABLE;
    }
    return pid;
}

/* The program's exit status as a shell gives it: 128 + N for signal N. */
int umadv__launch_wait(pid_t pid)
{
    int status;

    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return umadv__cli_fail("waiting for the program: %s", strerror(errno));
    }
    child_pid = 0;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

void umadv__launch_print_summary(const char *path, int temp, int quiet, const char *program)
{
    if (path[0] == '\0')
        return;
    /* a reader of our stderr gone must not turn the program's status
     * into SIGPIPE's: the program has ended, nothing inherits this */
    signal(SIGPIPE, SIG_IGN);
    if (!quiet)
        (void)umadv__run_summary_print(path, launch_who, program, stderr);
    if (temp)
        unlink(path);
}


/* ---- the command line ---- */

static int take_option(const umadv_cli_command_t *cmd, const umadv_cli_option_t *opt,
                       const char *value, const umadv_launch_knob_t *knobs, size_t nknobs,
                       umadv_launch_option_fn own_option, void *own, umadv_launch_args_t *args)
{
    for (size_t i = 0; i < nknobs; i++) {
        if (strcmp(opt->name, knobs[i].option) == 0)
            return umadv__launch_set_knob(cmd, opt, &knobs[i], value);
    }
    for (size_t i = 0; i < sizeof(shared_knobs) / sizeof(shared_knobs[0]); i++) {
        if (strcmp(opt->name, shared_knobs[i].option) == 0)
            return umadv__launch_set_knob(cmd, opt, &shared_knobs[i], value);
    }
    if (strcmp(opt->name, "quiet") == 0)
        args->quiet = 1;
    else if (strcmp(opt->name, "no-preload") == 0)
        args->no_preload = 1;
    else
        return own_option(cmd, opt, value, own);
    return 0;
}

int umadv__launch_parse(const umadv_cli_command_t *cmd, int argc, char **argv,
                        const umadv_launch_knob_t *knobs, size_t nknobs,
                        umadv_launch_option_fn own_option, void *own,
                        umadv_launch_args_t *args)
{
    umadv_cli_parser_t parser;
    const umadv_cli_option_t *opt;
    const char *value;
    int rc;

    umadv__cli_parser_init(&parser, cmd, argc, argv);
    for (;;) {
        switch (umadv__cli_next(&parser, &opt, &value)) {
        case UMADV_CLI_END:
            return umadv__cli_usage_error(cmd, "'%s' needs a program: umadv %s [OPTIONS] -- "
                                               "PROGRAM [ARGS]", cmd->name, cmd->name);
        case UMADV_CLI_HELP:
            umadv__cli_print_help(cmd, stdout);
            return -1;
        case UMADV_CLI_ERROR:
            return UMADV_EXIT_USAGE;
        case UMADV_CLI_ARG:
            args->command = &argv[parser.next - 1];
            return 0;
        case UMADV_CLI_OPTION:
            rc = take_option(cmd, opt, value, knobs, nknobs, own_option, own, args);
            if (rc != 0)
                return rc;
            break;
        }
    }
}
