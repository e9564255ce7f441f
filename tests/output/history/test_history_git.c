// SPDX-License-Identifier: Apache-2.0
/*
 * output/history/history_git.c on a real repository made here: refs resolved (and bad ones
 * refused), the commits between two in order, those that touched a function found by lines,
 * by git's function finder and by file, and a definition found by its name.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/history/history_git.h"

static char repo[] = "/tmp/xs_hgit_XXXXXX";
static char sha[4][41];

static void sh(const char *fmt, const char *arg)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@localhost "
		 "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@localhost && ",
		 repo);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), fmt, arg);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void head(int i)
{
	char err[256];

	cr_assert_eq(hist_git__resolve(repo, "HEAD", sha[i], err, sizeof(err)), 0, "%s", err);
}

/* Four commits: 0 adds work.c (two functions), 1 touches notes only, 2 changes a line of
 * hot()'s body, 3 changes cold(). */
static void make(void)
{
	cr_assert_not_null(mkdtemp(repo));
	sh("git init -q -b main && printf 'int hot(int n)\\n{\\n\\treturn n * 2;\\n}\\n\\n"
	   "int cold(int n)\\n{\\n\\treturn n + 1;\\n}\\n' > work.c && git add -A && "
	   "git commit -q -m '%s'",
	   "work: two functions");
	head(0);
	sh("echo n > NOTES && git add -A && git commit -q -m '%s'", "notes");
	head(1);
	sh("sed -i 's/n \\* 2/n * 3/' work.c && git commit -q -am '%s'", "hot: times three");
	head(2);
	sh("sed -i 's/n + 1/n + 2/' work.c && git commit -q -am '%s'", "cold: plus two");
	head(3);
}

static void drop(void)
{
	sh("rm -rf %s", repo);
}

TestSuite(history_git, .init = make, .fini = drop, .timeout = 60);

Test(history_git, refs_resolve_and_bad_ones_are_refused)
{
	char out[41], err[256] = "";

	cr_assert_eq(hist_git__resolve(repo, "main", out, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(out, sha[3]);
	cr_assert_eq(hist_git__resolve(repo, "HEAD~3", out, err, sizeof(err)), 0);
	cr_assert_str_eq(out, sha[0]);
	cr_assert_lt(hist_git__resolve(repo, "no-such-branch", out, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, "no-such-branch"), "%s", err);
	cr_assert_lt(hist_git__resolve(repo, "--output=/tmp/x", out, err, sizeof(err)), 0);
	cr_assert_lt(hist_git__resolve("/nonexistent/repo", "HEAD", out, err, sizeof(err)), 0);
}

Test(history_git, commits_between_oldest_first)
{
	struct hist_git_commit *c;
	size_t n, more;
	char err[256] = "";

	cr_assert_eq(hist_git__between(repo, sha[0], sha[3], &c, &n, &more, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(n, 3);
	cr_assert_eq(more, 0);
	cr_assert_str_eq(c[0].hash, sha[1]);
	cr_assert_str_eq(c[0].subject, "notes");
	cr_assert_str_eq(c[2].hash, sha[3]);
	cr_assert_str_eq(c[2].subject, "cold: plus two");
	hist_git__free_commits(c, n);
}

Test(history_git, touched_by_lines_by_function_and_by_file)
{
	struct hist_git_commit *c;
	size_t n, more;
	char err[256] = "";

	cr_assert_eq(hist_git__between(repo, sha[0], sha[3], &c, &n, &more, err, sizeof(err)), 0);
	/* hot() is lines 1-4: only commit 2 changed them */
	cr_assert_eq(hist_git__mark_touched(repo, sha[0], sha[3], "work.c", 1, 4, NULL, c, n, err,
					    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(c[0].touched + c[1].touched * 2 + c[2].touched * 4, 2);
	for (size_t i = 0; i < n; i++)
		c[i].touched = 0;
	/* git's function finder, by name: cold() changed in commit 3 only */
	cr_assert_eq(hist_git__mark_touched(repo, sha[0], sha[3], "work.c", 0, 0, "cold", c, n, err,
					    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(c[0].touched + c[1].touched * 2 + c[2].touched * 4, 4);
	for (size_t i = 0; i < n; i++)
		c[i].touched = 0;
	/* the whole file: commits 2 and 3 */
	cr_assert_eq(hist_git__mark_touched(repo, sha[0], sha[3], "work.c", 0, 0, NULL, c, n, err,
					    sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(c[0].touched + c[1].touched * 2 + c[2].touched * 4, 6);
	hist_git__free_commits(c, n);
}

Test(history_git, a_definition_found_by_its_name)
{
	char err[256] = "", *f;

	f = hist_git__file_of(repo, sha[3], "hot", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_str_eq(f, "work.c");
	free(f);
	f = hist_git__file_of(repo, sha[3], "ns::Klass::cold", err, sizeof(err));
	cr_assert_not_null(f);
	cr_assert_str_eq(f, "work.c");
	free(f);
	cr_assert_null(hist_git__file_of(repo, sha[3], "missing_function", err, sizeof(err)));
	/* not a name a definition could spell: nothing is searched */
	cr_assert_null(hist_git__file_of(repo, sha[3], "a(b", err, sizeof(err)));
}
