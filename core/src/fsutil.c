/* fsutil.c - same-file detection and atomic output files (core/fsutil.h). */
#define _GNU_SOURCE
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/mem.h"

/* Canonical "<realpath(dir)>/<base>" of a path whose last component may not exist; when
 * the directory does not exist either, the lexical absolute path (nothing can alias a file
 * in a directory that does not exist). NULL when it cannot be resolved. New string. */
static char *canonical(const char *path)
{
    char *d = core_xstrdup(path), *b = core_xstrdup(path), *rd, *out = NULL;
    const char *base = basename(b);

    rd = realpath(dirname(d), NULL);
    if (!rd && errno == ENOENT) {
        char cwd[4096];
        size_t n;
        if (path[0] == '/' || getcwd(cwd, sizeof(cwd))) {
            n = (path[0] == '/' ? 0 : strlen(cwd)) + strlen(path) + 2;
            out = core_xmalloc(n);
            snprintf(out, n, "%s%s%s", path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/", path);
        }
        free(d);
        free(b);
        return out;
    }
    if (rd) {
        size_t n = strlen(rd) + strlen(base) + 2;
        out = core_xmalloc(n);
        snprintf(out, n, "%s/%s", rd, base);
        free(rd);
    }
    free(d);
    free(b);
    return out;
}

bool core_path_same(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea, eb2, same;
    char *ca, *cb;

    if (!a || !b || strcmp(a, "-") == 0 || strcmp(b, "-") == 0)
        return false;
    ea = stat(a, &sa) == 0;
    eb2 = stat(b, &sb) == 0;
    if (ea && eb2)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb2 && errno != ENOENT)
        return true; /* cannot tell: fail closed */
    ca = canonical(a);
    cb = canonical(b);
    same = !ca || !cb || strcmp(ca, cb) == 0;
    if (!same && (ea || eb2)) { /* one exists: a dangling symlink could still point at it */
        char *la = realpath(a, NULL), *lb = realpath(b, NULL);
        same = la && lb && strcmp(la, lb) == 0;
        free(la);
        free(lb);
    }
    free(ca);
    free(cb);
    return same;
}

core_err core_outfile_open(struct core_outfile *o, const char *path, char *eb, size_t ebn)
{
    size_t n;
    int fd;

    memset(o, 0, sizeof(*o));
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        o->path = core_xstrdup(path);
        return CORE_OK;
    }
    n = strlen(path) + 16;
    o->path = core_xstrdup(path);
    o->tmp = core_xmalloc(n);
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    fd = mkstemp(o->tmp);
    if (fd < 0 || fchmod(fd, 0644) != 0 || !(o->f = fdopen(fd, "w"))) {
        if (eb)
            snprintf(eb, ebn, "cannot create a temporary file next to %s: %s", path,
                     strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof(*o));
        return CORE_EIO;
    }
    return CORE_OK;
}

static core_err sync_dir(const char *path)
{
    char *d = core_xstrdup(path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    core_err rc = fd >= 0 && fsync(fd) == 0 ? CORE_OK : CORE_EIO;
    if (fd >= 0)
        close(fd);
    free(d);
    return rc;
}

core_err core_outfile_commit(struct core_outfile *o)
{
    core_err rc = CORE_OK;

    if (!o->f)
        return CORE_EIO;
    if (!o->tmp) { /* stdout */
        rc = fflush(o->f) == 0 ? CORE_OK : CORE_EIO;
        free(o->path);
        memset(o, 0, sizeof(*o));
        return rc;
    }
    if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)
        rc = CORE_EIO;
    if (fclose(o->f) != 0)
        rc = CORE_EIO;
    o->f = NULL;
    if (rc == CORE_OK && rename(o->tmp, o->path) != 0)
        rc = CORE_EIO;
    if (rc == CORE_OK)
        rc = sync_dir(o->path);
    else
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof(*o));
    return rc;
}

void core_outfile_abort(struct core_outfile *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof(*o));
}

int core_mkdir_p(const char *dir, int parent_only)
{
    char buf[4096];
    struct stat st;
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(buf)) {
        errno = n == 0 ? ENOENT : ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, dir, n + 1);
    if (parent_only) {
        char *slash = strrchr(buf, '/');
        if (!slash || slash == buf) /* no directory part, or the root */
            return 0;
        *slash = '\0';
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    if (stat(buf, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}
