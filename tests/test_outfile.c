/*
 * common/outfile.h: regular files replaced atomically and only after
 * success, with the mode a create or the old file gives; streams
 * (devices, FIFOs, /proc descriptors) written in place and never removed;
 * inputs and the log file refused as outputs; pending temporary files
 * removed when a guarded signal kills the program; a failing log file
 * reported once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <umadv.h>

#include "common/log.h"
#include "common/outfile.h"
#include "tap.h"

static char dir[] = "/tmp/umadv-test-outfile-XXXXXX";
static char why[1024];

static const char *in_dir(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];

    snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fputs(text, f) == EOF || fclose(f) != 0) {
        diag("cannot write %s: %s", path, strerror(errno));
        abort();
    }
}

/* The whole file as a string (static; "" when it cannot be read). */
static const char *get(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = 0;

    if (f != NULL) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}

/* PATH.tmp.XXXXXX files left in the test folder. */
static int temps(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d != NULL && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d != NULL)
        closedir(d);
    return n;
}

static void remove_all(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(in_dir(e->d_name));
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* A character device 1:@minor (3 null, 7 full) at @path, made here, never
 * the system's: a bug must not remove /dev/full. Root only, and only on
 * a file system that allows devices (not mounted nodev). */
static int make_node(const char *path, unsigned minor)
{
    int fd;

    if (geteuid() != 0 || mknod(path, S_IFCHR | 0666, makedev(1, minor)) != 0)
        return 0;
    fd = open(path, O_WRONLY);
    if (fd < 0) {
        unlink(path);
        return 0;
    }
    close(fd);
    return 1;
}

static mode_t mode_of(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0 ? st.st_mode : 0;
}

static ino_t inode_of(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? st.st_ino : 0;
}

static umadv_status_t write_text(const char *path, const char *text)
{
    return umadv__outfile_write(path, "the file", text, strlen(text), why, sizeof(why));
}

static void test_regular(void)
{
    const char *path = in_dir("new.txt");
    umadv_outfile_t of;
    ino_t before;

    umask(027);
    ok(write_text(path, "first\n") == UMADV_OK && strcmp(get(path), "first\n") == 0,
       "a new file is written");
    is((int)(mode_of(path) & 07777), 0640, "a new file has 0666 less the umask (027)");
    umask(022);
    chmod(path, 0600);
    before = inode_of(path);
    ok(write_text(path, "second\n") == UMADV_OK && strcmp(get(path), "second\n") == 0,
       "an existing file is replaced");
    ok(inode_of(path) != before, "by a rename of a new inode over it");
    is((int)(mode_of(path) & 07777), 0600, "a replaced file keeps its mode (0600)");
    is(temps(), 0, "no temporary file is left");
    ok(write_text("", "x") == UMADV_ERR_IO && strstr(why, strerror(ENOENT)) != NULL,
       "an empty path is an error");

    ok(umadv__outfile_open(&of, path, "the file", why, sizeof(why)) == UMADV_OK &&
       of.tmp != NULL && strncmp(of.tmp, path, strlen(path)) == 0,
       "the temporary file is beside the target");
    fputs("half a docu", of.stream);
    fflush(of.stream);
    is(temps(), 1, "while writing, one temporary file exists");
    umadv__outfile_discard(&of);
    is_str(get(path), "second\n", "a discarded output leaves the old file as it was");
    is(temps(), 0, "and removes its temporary file");
}

/* A write error that only the final flush sees (the data sat in the
 * stream's buffer): EFBIG from a file size limit, SIGXFSZ ignored. */
static void test_flush_error(void)
{
    const char *path = in_dir("limited.txt");
    struct rlimit saved, small;
    char big[2000];
    umadv_status_t status;

    put(path, "old\n");
    memset(big, 'x', sizeof(big));
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 1000;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    status = umadv__outfile_write(path, "the file", big, sizeof(big), why, sizeof(why));
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, SIG_DFL);
    ok(status == UMADV_ERR_IO && strstr(why, path) != NULL &&
       strstr(why, strerror(EFBIG)) != NULL, "a flush error (EFBIG) fails the commit, named");
    if (status != UMADV_ERR_IO)
        diag("%s", why);
    is_str(get(path), "old\n", "the old file stays as it was");
    is(temps(), 0, "no temporary file is left");
}

static void test_streams(void)
{
    const char *fifo = in_dir("fifo"), *node = in_dir("full"), *file = in_dir("fd.txt");
    char proc[64], buf[64] = {0};
    umadv_outfile_t of;
    ino_t before;
    int rd, fd;

    mkfifo(fifo, 0644);
    rd = open(fifo, O_RDONLY | O_NONBLOCK); /* so that the writer's open does not wait */
    ok(write_text(fifo, "through\n") == UMADV_OK && read(rd, buf, sizeof(buf) - 1) == 8 &&
       strcmp(buf, "through\n") == 0, "a FIFO is written through");
    ok(S_ISFIFO(mode_of(fifo)), "and stays a FIFO");
    ok(umadv__outfile_open(&of, fifo, NULL, why, sizeof(why)) == UMADV_OK && of.tmp == NULL,
       "a FIFO has no temporary file");
    umadv__outfile_discard(&of);
    ok(S_ISFIFO(mode_of(fifo)), "a discarded FIFO output keeps the FIFO");
    close(rd);

    if (make_node(node, 7)) {
        ok(write_text(node, "lost\n") == UMADV_ERR_IO && strstr(why, node) != NULL &&
           strstr(why, strerror(ENOSPC)) != NULL, "a full device: ENOSPC, named");
        ok(S_ISCHR(mode_of(node)), "the device node stays");
    } else {
        skip("no device node (root, no nodev)", "a full device: ENOSPC, named");
        skip("no device node (root, no nodev)", "the device node stays");
    }

    /* /proc/self/fd/N on a regular file opened for appending (the shell's
     * >>): appended to, never replaced. */
    put(file, "kept\n");
    before = inode_of(file);
    fd = open(file, O_WRONLY | O_APPEND);
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    ok(write_text(proc, "added\n") == UMADV_OK && strcmp(get(file), "kept\nadded\n") == 0 &&
       inode_of(file) == before, "/proc/self/fd/N is a stream: appended, not replaced");
    close(fd);
}

static void test_links(void)
{
    const char *target = in_dir("target.txt"), *link = in_dir("link.txt");
    const char *dangling = in_dir("dangling.txt");

    put(target, "old\n");
    symlink("target.txt", link);
    ok(write_text(link, "new\n") == UMADV_OK && strcmp(get(target), "new\n") == 0,
       "a symbolic link: the file it points to is replaced");
    ok(S_ISLNK(mode_of(link)), "and the link stays a link");
    is(temps(), 0, "no temporary file is left");

    symlink("missing.txt", dangling);
    ok(write_text(dangling, "x\n") == UMADV_ERR_INVALID_PARAM &&
       strstr(why, "symbolic link to a missing file") != NULL, "a link to nothing is refused");
    ok(S_ISLNK(mode_of(dangling)) && mode_of(in_dir("missing.txt")) == 0,
       "and nothing is created");
}

static void test_inputs(void)
{
    const char *input = in_dir("input.umt"), *link = in_dir("input-link");

    put(input, "trace\n");
    symlink(input, link);
    ok(umadv__outfile_add_input(in_dir("no-such-input"), why, sizeof(why)) == UMADV_OK,
       "a missing input is no error here");
    ok(umadv__outfile_add_input(input, why, sizeof(why)) == UMADV_OK, "an input is registered");
    ok(write_text(input, "json\n") == UMADV_ERR_INVALID_PARAM &&
       strstr(why, "it is the input") != NULL, "an output that is an input is refused");
    ok(write_text(link, "json\n") == UMADV_ERR_INVALID_PARAM && strstr(why, input) != NULL,
       "also through a symbolic link, naming the input");
    is_str(get(input), "trace\n", "the input is untouched");
    umadv__outfile_clear_inputs();
    ok(write_text(input, "json\n") == UMADV_OK, "once forgotten, it is an output like any");
}

/* stderr into @path while fn runs. */
static void with_stderr(const char *path, void (*fn)(void))
{
    int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    close(fd);
    fn();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static void log_one(void)
{
    umadv_error("one message");
}

static void test_log(void)
{
    const char *log = in_dir("run.log"), *input = in_dir("in.umt");
    struct stat st;
    char name[512];

    put(input, "trace\n");
    umadv__log_set_file(log);
    ok(write_text(log, "x\n") == UMADV_ERR_INVALID_PARAM && strstr(why, "log file") != NULL,
       "an output that is the log file is refused");
    umadv__log_set_file(input);
    ok(umadv__outfile_add_input(input, why, sizeof(why)) == UMADV_ERR_INVALID_PARAM &&
       strstr(why, "UMADV_LOG_FILE") != NULL && strstr(why, input) != NULL,
       "an input that is the log file is refused, naming both");
    ok(!umadv__log_file(&st, name, sizeof(name)), "and the log is back on stderr");
    with_stderr(in_dir("stderr-back.txt"), log_one);
    ok(strcmp(get(input), "trace\n") == 0 &&
       strstr(get(in_dir("stderr-back.txt")), "one message") != NULL,
       "the input got no log line; stderr got it");
}

static void log_twice(void)
{
    umadv_error("first message");
    umadv_error("second message");
}

static void test_log_full(void)
{
    const char *node = in_dir("log-full"), *err = in_dir("stderr.txt");
    const char *text;

    if (!make_node(node, 7)) {
        skip("no device node (root, no nodev)", "a full log file is reported with its name and reason");
        skip("no device node (root, no nodev)", "once, and no message is lost");
        return;
    }
    umadv__log_set_file(node);
    with_stderr(err, log_twice);
    text = get(err);
    ok(strstr(text, node) != NULL && strstr(text, strerror(ENOSPC)) != NULL,
       "a full log file is reported with its name and reason");
    ok(strstr(strstr(text, "cannot write the log") + 1, "cannot write the log") == NULL &&
       strstr(text, "first message") != NULL && strstr(text, "second message") != NULL,
       "once, and no message is lost");
    umadv__log_set_file(NULL);
}

/* umadv_trace_save() (the library's writer, used by the MLP example and
 * the PyTorch path) under the same rules: a device node is written
 * through, never replaced (test_cuda_gpu saves to /dev/null); a failed
 * save keeps the old file; the log file is refused. */
static void test_trace_save(void)
{
    umadv_context_params_t p = {
        .field_mask   = UMADV_CONTEXT_FIELD_FLAGS,
        .flags        = UMADV_CONTEXT_FLAG_HOST_ONLY,
    };
    const char *node = in_dir("save-null"), *old = in_dir("saved.umt");
    struct rlimit saved, small;
    umadv_context_t ctx;
    umadv_status_t status;
    void *buf;

    if (umadv_context_create(&p, &ctx) != UMADV_OK) {
        diag("no host context");
        abort();
    }
    umadv_malloc(ctx, 4096, "buf", &buf);
    umadv_profile_next_iteration(ctx);
    umadv_iteration_begin(ctx);
    umadv_step_begin(ctx, "step", NULL);
    umadv_step_access(ctx, buf, 4096, UMADV_ACCESS_RW);
    umadv_step_end(ctx, 1000);
    if (make_node(node, 3))
        ok(umadv_trace_save(ctx, node) == UMADV_OK && S_ISCHR(mode_of(node)),
           "umadv_trace_save onto a device node keeps the node");
    else
        skip("no device node (root, no nodev)", "umadv_trace_save onto a device node keeps the node");

    put(old, "old trace\n");
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 100;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    status = umadv_trace_save(ctx, old);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, SIG_DFL);
    ok(status == UMADV_ERR_IO && strcmp(get(old), "old trace\n") == 0 && temps() == 0,
       "a failed umadv_trace_save keeps the old file, no temporary file");

    umadv__log_set_file(in_dir("lib.log"));
    is(umadv_trace_save(ctx, in_dir("lib.log")), UMADV_ERR_INVALID_PARAM,
       "umadv_trace_save onto the log file is refused");
    umadv__log_set_file(NULL);
    ok(umadv_trace_save(ctx, old) == UMADV_OK && strncmp(get(old), "umadv-trace", 11) == 0,
       "and a good save replaces the file");
    umadv_free(ctx, buf);
    umadv_context_destroy(ctx);
}

/* In a child: guard the signals (@ignore: @sig ignored before), open an
 * output over @path, write, then be killed by @sig. Returns the signal
 * that ended the child, or minus its exit status. */
static int child_killed(const char *path, int sig, int ignore)
{
    umadv_outfile_t of;
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        struct rlimit no_core = {0, 0};
        struct sigaction before;

        setrlimit(RLIMIT_CORE, &no_core); /* SIGSEGV, SIGABRT, SIGXFSZ: no core file */
        /* A sanitizer's SIGSEGV handler is left alone by the guard. An
         * ignored signal inherited from whatever started the tests (a
         * runner's nohup) is not the case under test: back to default. */
        sigaction(sig, NULL, &before);
        if (!ignore && before.sa_handler == SIG_IGN)
            signal(sig, SIG_DFL);
        else if (!ignore && before.sa_handler != SIG_DFL)
            _exit(77);
        if (ignore)
            signal(sig, SIG_IGN);
        umadv__outfile_guard_signals();
        if (umadv__outfile_open(&of, path, NULL, why, sizeof(why)) != UMADV_OK)
            _exit(3);
        fputs("half", of.stream);
        fflush(of.stream);
        if (sig == SIGXFSZ) {
            struct rlimit small;
            char big[100] = {0};

            getrlimit(RLIMIT_FSIZE, &small);
            small.rlim_cur = 10;
            setrlimit(RLIMIT_FSIZE, &small);
            fwrite(big, 1, sizeof(big), of.stream);
            fflush(of.stream);
        } else {
            raise(sig);
        }
        umadv__outfile_discard(&of); /* still alive: the signal was ignored */
        _exit(0);
    }
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        return WTERMSIG(status);
    return -WEXITSTATUS(status);
}

static void test_signals(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGXFSZ, SIGSEGV, SIGABRT};
    const char *path = in_dir("killed.txt");

    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        int got;

        put(path, "old\n");
        got = child_killed(path, sigs[i], 0);
        if (got == -77) {
            skip("a handler of another runtime owns it (a sanitizer's)", strsignal(sigs[i]));
            skip("a handler of another runtime owns it (a sanitizer's)", strsignal(sigs[i]));
            continue;
        }
        is(got, sigs[i], "killed by %s", strsignal(sigs[i]));
        ok(strcmp(get(path), "old\n") == 0 && temps() == 0,
           "%s: the old file stays, no temporary file", strsignal(sigs[i]));
    }
    is(child_killed(path, SIGHUP, 1), 0, "an ignored SIGHUP stays ignored");
}

int main(void)
{
    plan(55);
    if (mkdtemp(dir) == NULL) {
        diag("mkdtemp: %s", strerror(errno));
        return 1;
    }
    /* First, in a process that has loaded nothing yet: on a GPU machine a
     * context (hwloc's plugins, the driver) can leave handlers of its own
     * on these signals, which the children would inherit. */
    test_signals();
    test_regular();
    test_flush_error();
    test_streams();
    test_links();
    test_inputs();
    test_log();
    test_log_full();
    test_trace_save();
    remove_all();
    return exit_status();
}
