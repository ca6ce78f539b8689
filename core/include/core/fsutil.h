/* core/fsutil.h - file-system checks and atomic output files, one owner for every command
 * that writes a file next to files it reads (release, calibrate, ledger, learner).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Thread-safety: reentrant; a struct core_outfile is used by one thread.
 */
#ifndef CORE_FSUTIL_H
#define CORE_FSUTIL_H

#include <stdbool.h>
#include <stdio.h>

#include "core/err.h"

/* Would paths a and b name the same file? Existing paths are compared by device and inode
 * (symlinks and hard links included); a path that does not exist yet is compared by the
 * canonical path of its directory plus its last component. "-" (stdin/stdout) never
 * aliases anything. Errors resolving a path count as "same" (fail closed). */
bool core_path_same(const char *a, const char *b);

/* mkdir -p: create dir and every missing parent (mode 0777 before umask). Returns 0 when
 * dir exists as a directory afterwards, -1 with errno set otherwise. parent_only: create
 * only the directory part of a path (everything before its last '/'), e.g. for an output
 * prefix or a file path. */
int core_mkdir_p(const char *dir, int parent_only);

/* An output file written under a temporary name in the target's directory and renamed over
 * the target only by core_outfile_commit, so a failed or interrupted run never leaves a
 * truncated target (and never truncates a file before everything was checked). */
struct core_outfile {
    FILE *f;    /* write here; stdout when the path is "-" */
    char *path; /* target (owned) */
    char *tmp;  /* temporary path (owned), NULL for stdout */
};

/* Open a temporary file next to path (mode 0644), or stdout for "-".
 * Returns CORE_OK or CORE_EIO (errbuf: the path and the reason). */
CORE_MUST_CHECK core_err core_outfile_open(struct core_outfile *o, const char *path, char *errbuf,
                                           size_t errbuf_size);

/* Flush, fsync and rename the temporary file over the target (then fsync the directory).
 * After an error the target is untouched and the temporary file removed.
 * Returns CORE_OK or CORE_EIO. Always releases o's resources. */
CORE_MUST_CHECK core_err core_outfile_commit(struct core_outfile *o);

/* Drop the temporary file; the target is untouched. NULL-safe fields; idempotent. */
void core_outfile_abort(struct core_outfile *o);

#endif /* CORE_FSUTIL_H */
