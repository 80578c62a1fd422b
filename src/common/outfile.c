/*
 * Output files that never destroy what they replace (outfile.h): which
 * kind of output a path is, the temporary file beside a regular one, and
 * the commit that renames it over the target only after everything
 * succeeded.
 */
#include "common/outfile.h"
#include "common/outfile_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/util.h"

#ifndef PROC_SUPER_MAGIC
#  define PROC_SUPER_MAGIC 0x9fa0
#endif

#define TMP_SUFFIX   ".tmp.XXXXXX"
#define TMP_TRIES    100
#define MAX_SYMLINKS 40

/* --- what the path is ----------------------------------------------------------- */

typedef enum out_kind {
    OUT_STDOUT,  /* "-" */
    OUT_STREAM,  /* written in place: a device, FIFO, /proc descriptor */
    OUT_REPLACE  /* a regular file (or none yet), replaced atomically */
} out_kind_t;

typedef struct out_place {
    out_kind_t  kind;
    int         exists; /* OUT_REPLACE: the target exists (in @st) */
    struct stat st;     /* symbolic links followed; valid when it exists */
    char       *target; /* OUT_REPLACE: the file to replace, links resolved */
} out_place_t;

/* Whether @path's directory is on procfs: /proc/self/fd/N and the like
 * name an open file description, not a place in a directory. */
static int in_procfs(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    struct statfs fs;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
    return statfs(dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

/* Whether @path, through its chain of symbolic links, names a descriptor
 * through /proc (/dev/stdout -> /proc/self/fd/1). Such a path is a
 * stream even when the descriptor is a regular file: the shell opened it
 * for us (with > or >>), and we append to what it opened. */
static int names_descriptor(const char *path)
{
    char hop[PATH_MAX], link[PATH_MAX];

    snprintf(hop, sizeof(hop), "%s", path);
    for (int i = 0; i < MAX_SYMLINKS; i++) {
        ssize_t n;

        if (in_procfs(hop))
            return 1;
        n = readlink(hop, link, sizeof(link) - 1);
        if (n < 0)
            return 0;
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(hop, sizeof(hop), "%s", link);
        } else {
            char *slash = strrchr(hop, '/');
            size_t keep = slash == NULL ? 0 : (size_t)(slash - hop) + 1;

            if (keep + strlen(link) >= sizeof(hop))
                return 0;
            strcpy(hop + keep, link);
        }
    }
    return 0;
}

static umadv_status_t place_fail(const char *path, const char *what, int err, char *why,
                                 size_t why_len)
{
    if (path[0] == '\0')
        err = ENOENT; /* what open("") says */
    snprintf(why, why_len, "cannot create %s %s: %s", what, path, strerror(err));
    return err == ENOMEM ? UMADV_ERR_NO_MEMORY : UMADV_ERR_IO;
}

/* A symbolic link: a stream, or the regular file it points to. */
static umadv_status_t place_of_link(const char *path, const char *what, out_place_t *place,
                                    char *why, size_t why_len)
{
    if (names_descriptor(path)) {
        place->kind   = OUT_STREAM;
        place->exists = stat(path, &place->st) == 0;
        return UMADV_OK;
    }
    if (stat(path, &place->st) != 0) {
        if (errno != ENOENT)
            return place_fail(path, what, errno, why, why_len);
        snprintf(why, why_len, "refusing to write %s %s: it is a symbolic link to a missing "
                 "file", what, path);
        return UMADV_ERR_INVALID_PARAM;
    }
    place->exists = 1;
    if (!S_ISREG(place->st.st_mode)) {
        place->kind = OUT_STREAM;
        return UMADV_OK;
    }
    place->kind   = OUT_REPLACE;
    place->target = realpath(path, NULL);
    if (place->target == NULL)
        return place_fail(path, what, errno, why, why_len);
    return UMADV_OK;
}

static umadv_status_t place_of(const char *path, const char *what, out_place_t *place,
                               char *why, size_t why_len)
{
    struct stat lst;

    memset(place, 0, sizeof(*place));
    if (strcmp(path, "-") == 0) {
        place->kind   = OUT_STDOUT;
        place->exists = fstat(STDOUT_FILENO, &place->st) == 0;
        return UMADV_OK;
    }
    if (path[0] == '\0' || lstat(path, &lst) != 0) {
        if (path[0] == '\0' || errno != ENOENT)
            return place_fail(path, what, errno, why, why_len);
        place->kind = OUT_REPLACE; /* a new file; a missing folder fails at creation */
    } else if (S_ISLNK(lst.st_mode)) {
        return place_of_link(path, what, place, why, why_len);
    } else {
        place->kind   = S_ISREG(lst.st_mode) ? OUT_REPLACE : OUT_STREAM;
        place->exists = 1;
        place->st     = lst;
    }
    if (place->kind == OUT_REPLACE && (place->target = strdup(path)) == NULL)
        return place_fail(path, what, ENOMEM, why, why_len);
    return UMADV_OK;
}

/* --- the temporary file ------------------------------------------------------------ */

/* Fill the X's at the end of @tmp. Not secret, only unlikely to collide;
 * O_EXCL makes a collision a retry, never a clobber. */
static void fill_suffix(char *tmp)
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static atomic_uint counter;
    uint64_t r = umadv__now_ns() ^ ((uint64_t)getpid() << 32) ^
                 ((uint64_t)atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15u);
    char *x = tmp + strlen(tmp) - 6;

    for (int i = 0; i < 6; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        x[i] = chars[(r >> 33) % (sizeof(chars) - 1)];
    }
}

/* Create the temporary file beside @target with its final mode: the old
 * file's mode and owner when it exists (chown may fail unprivileged:
 * then the owner is ours, as with any new file), else 0666 less the
 * umask, applied by open itself so that no umask needs to be read. */
static int create_temp(char *tmp, const out_place_t *place)
{
    mode_t mode = place->exists ? 0600 : 0666;
    int fd = -1;

    for (int i = 0; i < TMP_TRIES && fd < 0; i++) {
        fill_suffix(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0 || !place->exists)
        return fd;
    if (fchown(fd, place->st.st_uid, place->st.st_gid) != 0) {
        /* not ours to give away: keep our own */
    }
    if (fchmod(fd, place->st.st_mode & 07777) != 0) {
        int err = errno;

        close(fd);
        unlink(tmp);
        errno = err;
        return -1;
    }
    return fd;
}

static umadv_status_t open_replace(umadv_outfile_t *of, const out_place_t *place,
                                   char *why, size_t why_len)
{
    sigset_t old;
    int fd, err;

    of->tmp = malloc(strlen(of->target) + sizeof(TMP_SUFFIX));
    if (of->tmp == NULL)
        return place_fail(of->path, of->what, ENOMEM, why, why_len);
    strcpy(of->tmp, of->target);
    strcat(of->tmp, TMP_SUFFIX);
    umadv__outfile_block(&old);
    fd = create_temp(of->tmp, place);
    err = errno;
    if (fd >= 0)
        of->guard = umadv__outfile_arm(of->tmp);
    umadv__outfile_unblock(&old);
    if (fd < 0) {
        if (place->exists)
            snprintf(why, why_len, "cannot replace %s %s: cannot create a file beside it: %s",
                     of->what, of->path, strerror(err));
        else
            place_fail(of->path, of->what, err, why, why_len);
        return UMADV_ERR_IO;
    }
    of->stream = fdopen(fd, "w");
    if (of->stream == NULL) {
        close(fd);
        umadv__outfile_discard(of);
        return place_fail(of->path, of->what, ENOMEM, why, why_len);
    }
    return UMADV_OK;
}

/* A stream is appended to: a descriptor path to a regular file (the
 * shell's >>) keeps what is there; devices and FIFOs do not care. */
static umadv_status_t open_stream(umadv_outfile_t *of, char *why, size_t why_len)
{
    int fd = open(of->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);

    if (fd < 0) {
        snprintf(why, why_len, "cannot write %s %s: %s", of->what, of->path, strerror(errno));
        return UMADV_ERR_IO;
    }
    of->stream = fdopen(fd, "w");
    if (of->stream == NULL) {
        close(fd);
        return place_fail(of->path, of->what, ENOMEM, why, why_len);
    }
    return UMADV_OK;
}

/* --- the public side ---------------------------------------------------------------- */

umadv_status_t umadv__outfile_open(umadv_outfile_t *of, const char *path, const char *what,
                                   char *why, size_t why_len)
{
    umadv_status_t status;
    out_place_t place;

    memset(of, 0, sizeof(*of));
    of->path  = path;
    of->what  = what != NULL ? what : "the file";
    of->guard = -1;
    status = place_of(path, of->what, &place, why, why_len);
    if (status == UMADV_OK && place.exists)
        status = umadv__outfile_check_same(&place.st, path, of->what, why, why_len);
    if (status == UMADV_OK) {
        switch (place.kind) {
        case OUT_STDOUT:
            of->stream = stdout;
            break;
        case OUT_STREAM:
            status = open_stream(of, why, why_len);
            break;
        case OUT_REPLACE:
            of->target = place.target;
            place.target = NULL;
            status = open_replace(of, &place, why, why_len);
            break;
        }
    }
    free(place.target);
    if (status != UMADV_OK) {
        free(of->target);
        free(of->tmp);
        memset(of, 0, sizeof(*of));
        of->guard = -1;
    }
    return status;
}

/* Make the rename itself durable. Some file systems refuse to fsync a
 * directory, and the data is already safe by then: errors are ignored. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    int fd;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* "cannot write the timeline t.json: No space left on device". */
static void write_fail(const umadv_outfile_t *of, int err, char *why, size_t why_len)
{
    int is_stdout = strcmp(of->path, "-") == 0;

    snprintf(why, why_len, "cannot write %s %s: %s", of->what,
             is_stdout ? "to standard output" : of->path, strerror(err));
}

/* Free what @of holds; the temporary file is gone (renamed or removed). */
static void release(umadv_outfile_t *of)
{
    free(of->tmp);
    free(of->target);
    of->tmp = of->target = NULL;
}

/* Flush @stream and say whether anything written to it failed; errno is
 * the reason (EIO when the stream lost it). */
static int flush_failed(FILE *stream)
{
    errno = 0;
    if (fflush(stream) == 0 && !ferror(stream))
        return 0;
    if (errno == 0)
        errno = EIO;
    return 1;
}

static umadv_status_t commit_replace(umadv_outfile_t *of, char *why, size_t why_len)
{
    FILE *stream = of->stream;
    sigset_t old;
    int failed, err = 0;

    of->stream = NULL;
    failed = flush_failed(stream) || fsync(fileno(stream)) != 0;
    err = errno;
    if (fclose(stream) != 0 && !failed) {
        failed = 1;
        err = errno;
    }
    if (!failed) {
        umadv__outfile_block(&old);
        failed = rename(of->tmp, of->target) != 0;
        err = errno;
        if (!failed) {
            umadv__outfile_disarm(of->guard);
            of->guard = -1;
        }
        umadv__outfile_unblock(&old);
    }
    if (failed) {
        write_fail(of, err, why, why_len);
        umadv__outfile_discard(of);
        return UMADV_ERR_IO;
    }
    sync_parent_dir(of->target);
    release(of);
    return UMADV_OK;
}

umadv_status_t umadv__outfile_commit(umadv_outfile_t *of, char *why, size_t why_len)
{
    int failed;

    if (of->target != NULL)
        return commit_replace(of, why, why_len);
    failed = flush_failed(of->stream);
    if (of->stream != stdout && fclose(of->stream) != 0 && !failed)
        failed = 1;
    of->stream = NULL;
    if (failed) {
        write_fail(of, errno, why, why_len);
        return UMADV_ERR_IO;
    }
    return UMADV_OK;
}

void umadv__outfile_discard(umadv_outfile_t *of)
{
    sigset_t old;

    if (of->stream == stdout)
        fflush(stdout);
    else if (of->stream != NULL)
        fclose(of->stream);
    of->stream = NULL;
    if (of->tmp != NULL) {
        umadv__outfile_block(&old);
        unlink(of->tmp);
        umadv__outfile_disarm(of->guard);
        of->guard = -1;
        umadv__outfile_unblock(&old);
    }
    release(of);
}

umadv_status_t umadv__outfile_write(const char *path, const char *what, const void *buf,
                                    size_t len, char *why, size_t why_len)
{
    umadv_outfile_t of;
    umadv_status_t status = umadv__outfile_open(&of, path, what, why, why_len);

    if (status != UMADV_OK)
        return status;
    if (len > 0 && fwrite(buf, 1, len, of.stream) != len) {
        write_fail(&of, errno, why, why_len);
        umadv__outfile_discard(&of);
        return UMADV_ERR_IO;
    }
    return umadv__outfile_commit(&of, why, why_len);
}
