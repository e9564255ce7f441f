/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What git says about a repository, for naming the commits behind a step: refs resolved, the
 * commits between two, those that touched a file's lines or a function by name. git runs as a
 * child with a deadline and a cap on what it prints; nothing here writes to the repository.
 */
#ifndef XSPROF_OUTPUT_HISTORY_GIT_H
#define XSPROF_OUTPUT_HISTORY_GIT_H

#include <stddef.h>

#define HIST_GIT_DEADLINE_MS 30000	 /* per git command */
#define HIST_GIT_MAX_OUT     (16u << 20) /* bytes of its output read at most */
#define HIST_GIT_MAX_COMMITS 200	 /* commits named between two */

/* git -C repo argv...: its stdout (malloc'd, NUL-terminated), or NULL with errno (ETIMEDOUT,
 * EFBIG, ECHILD when git failed: err holds the first line it printed on stderr). */
char *hist_git__run(const char *repo, const char *const *argv, char *err, size_t errlen);

/* ref (a name, a commit or a prefix) as a full hash in out[41]. 0 or -errno. */
int hist_git__resolve(const char *repo, const char *ref, char out[41], char *err, size_t errlen);

struct hist_git_commit {
	char hash[41];
	char *subject;
	int touched;
};

/* The commits in (good, bad], oldest first, at most HIST_GIT_MAX_COMMITS (the newest kept;
 * *ret_more counts those left out). 0 or -errno. */
int hist_git__between(const char *repo, const char *good, const char *bad,
		      struct hist_git_commit **ret, size_t *ret_n, size_t *ret_more, char *err,
		      size_t errlen);
void hist_git__free_commits(struct hist_git_commit *c, size_t n);

/*
 * Marks the commits of c that touched the source: lines first..last of file (first 0: the
 * whole file), or, with func, the function of that name in file (git log -L :func:file). 0 or
 * -errno.
 */
int hist_git__mark_touched(const char *repo, const char *good, const char *bad, const char *file,
			   unsigned first, unsigned last, const char *func,
			   struct hist_git_commit *c, size_t n, char *err, size_t errlen);

/* The file of the repository (as of commit) that defines func, found by its name (C, C++,
 * Python, Go, Rust definitions): malloc'd path, or NULL (errno ENOENT when none). */
char *hist_git__file_of(const char *repo, const char *commit, const char *func, char *err,
			size_t errlen);

/* The repository's top folder (malloc'd), or NULL. */
char *hist_git__toplevel(const char *repo, char *err, size_t errlen);

#endif
