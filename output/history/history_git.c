// SPDX-License-Identifier: Apache-2.0
/*
 * git as a child process: argv built here (no shell), stdout and stderr read through pipes
 * under one deadline, the child killed and reaped when it passes it.
 */
#include "output/history/history_git.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 32

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Appends what fd has to *buf (grown up to cap). 1 at its end, 0 for more, -errno. */
static int drain(int fd, char **buf, size_t *len, size_t *alloc, size_t cap)
{
	char chunk[8192];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n == 0)
		return 1;
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (*len + (size_t)n + 1 > cap)
		return -EFBIG;
	if (*len + (size_t)n + 1 > *alloc) {
		size_t want = (*alloc ? *alloc * 2 : 16384);
		char *p;

		while (want < *len + (size_t)n + 1)
			want *= 2;
		p = realloc(*buf, want);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*alloc = want;
	}
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
	return 0;
}

/* Reads the child's two pipes until both end or the deadline passes. 0 or -errno. */
static int collect(int out, int errfd, char **obuf, size_t *olen, char **ebuf, size_t *elen)
{
	size_t oalloc = 0, ealloc = 0;
	long long deadline = now_ms() + HIST_GIT_DEADLINE_MS;
	int open_out = 1, open_err = 1;

	while (open_out || open_err) {
		struct pollfd p[2] = {{.fd = open_out ? out : -1, .events = POLLIN},
				      {.fd = open_err ? errfd : -1, .events = POLLIN}};
		long long left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(p, 2, (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		if (open_out && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			r = drain(out, obuf, olen, &oalloc, HIST_GIT_MAX_OUT);
			if (r < 0)
				return r;
			open_out = !r;
		}
		if (open_err && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			/* stderr: only its start is kept, the rest read and let go */
			r = drain(errfd, ebuf, elen, &ealloc, 65536);
			if (r == -EFBIG)
				r = 0, *elen = 0;
			if (r < 0)
				return r;
			open_err = !r;
		}
	}
	return 0;
}

/* Waits for pid until the deadline, then kills it. Its status, or -1. */
static int reap(pid_t pid, int killed)
{
	int status = 0;
	long long deadline = now_ms() + 5000;

	if (killed)
		kill(pid, SIGKILL);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			deadline = now_ms() + 5000;
		}
		usleep(2000);
	}
}

char *hist_git__run(const char *repo, const char *const *argv, char *err, size_t errlen)
{
	const char *args[MAX_ARGS + 4];
	int po[2], pe[2], status, r;
	size_t n = 0, olen = 0, elen = 0;
	char *obuf = NULL, *ebuf = NULL;
	pid_t pid;

	args[n++] = "git";
	args[n++] = "-C";
	args[n++] = repo;
	for (size_t i = 0; argv[i]; i++) {
		if (n >= MAX_ARGS + 3) {
			errno = E2BIG;
			return NULL;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	if (pipe2(po, O_CLOEXEC))
		return NULL;
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]), close(po[1]);
		return NULL;
	}
	pid = fork();
	if (pid < 0) {
		r = errno;
		close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
		errno = r;
		return NULL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null >= 0)
			dup2(null, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		/* no pager, no prompt for credentials, the same output in any locale */
		setenv("GIT_PAGER", "cat", 1);
		setenv("GIT_TERMINAL_PROMPT", "0", 1);
		setenv("LC_ALL", "C", 1);
		execvp("git", (char *const *)args);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	r = collect(po[0], pe[0], &obuf, &olen, &ebuf, &elen);
	close(po[0]);
	close(pe[0]);
	status = reap(pid, r < 0);
	if (r == 0 && (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status))) {
		char *nl = ebuf ? strchr(ebuf, '\n') : NULL;

		if (nl)
			*nl = '\0';
		if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
			say(err, errlen, "git could not be run (is it installed?)");
		else
			say(err, errlen, "git %s: %s", argv[0], ebuf && *ebuf ? ebuf : "failed");
		r = -ECHILD;
	} else if (r == -ETIMEDOUT) {
		say(err, errlen, "git %s took over %d s: stopped", argv[0],
		    HIST_GIT_DEADLINE_MS / 1000);
	} else if (r == -EFBIG) {
		say(err, errlen, "git %s printed over %u MiB: stopped", argv[0],
		    HIST_GIT_MAX_OUT >> 20);
	} else if (r < 0) {
		say(err, errlen, "git %s: %s", argv[0], strerror(-r));
	}
	free(ebuf);
	if (r < 0) {
		free(obuf);
		errno = -r;
		return NULL;
	}
	if (!obuf)
		obuf = calloc(1, 1);
	return obuf;
}

int hist_git__resolve(const char *repo, const char *ref, char out[41], char *err, size_t errlen)
{
	char spec[512];
	const char *argv[] = {"rev-parse", "--verify", "--quiet", spec, NULL};
	char *o;

	if (snprintf(spec, sizeof(spec), "%s^{commit}", ref) >= (int)sizeof(spec) || ref[0] == '-')
		return say(err, errlen, "'%s' is not a commit name", ref), -EINVAL;
	o = hist_git__run(repo, argv, err, errlen);
	if (!o) {
		if (errno == ECHILD)
			say(err, errlen, "'%s' names no commit of %s", ref, repo);
		return -errno;
	}
	if (strlen(o) < 40) {
		free(o);
		say(err, errlen, "'%s' names no commit of %s", ref, repo);
		return -ENOENT;
	}
	memcpy(out, o, 40);
	out[40] = '\0';
	free(o);
	return 0;
}

void hist_git__free_commits(struct hist_git_commit *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(c[i].subject);
	free(c);
}

int hist_git__between(const char *repo, const char *good, const char *bad,
		      struct hist_git_commit **ret, size_t *ret_n, size_t *ret_more, char *err,
		      size_t errlen)
{
	char range[100];
	const char *argv[] = {"log", "--reverse", "--format=%H%x09%s", range, NULL};
	struct hist_git_commit *c = NULL;
	size_t n = 0, all = 0;
	char *o, *line, *save = NULL;

	*ret = NULL;
	*ret_n = *ret_more = 0;
	snprintf(range, sizeof(range), "%s..%s", good, bad);
	o = hist_git__run(repo, argv, err, errlen);
	if (!o)
		return -errno;
	for (const char *p = o; *p; p++)
		all += *p == '\n';
	c = calloc(all ? all : 1, sizeof(*c));
	if (!c) {
		free(o);
		return -ENOMEM;
	}
	save = NULL;
	for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab || tab - line != 40)
			continue;
		memcpy(c[n].hash, line, 40);
		c[n].subject = strdup(tab + 1);
		if (!c[n].subject) {
			hist_git__free_commits(c, n);
			free(o);
			return -ENOMEM;
		}
		n++;
	}
	free(o);
	if (n > HIST_GIT_MAX_COMMITS) {
		size_t drop = n - HIST_GIT_MAX_COMMITS;

		for (size_t i = 0; i < drop; i++)
			free(c[i].subject);
		memmove(c, c + drop, HIST_GIT_MAX_COMMITS * sizeof(*c));
		*ret_more = drop;
		n = HIST_GIT_MAX_COMMITS;
	}
	*ret = c;
	*ret_n = n;
	return 0;
}

int hist_git__mark_touched(const char *repo, const char *good, const char *bad, const char *file,
			   unsigned first, unsigned last, const char *func,
			   struct hist_git_commit *c, size_t n, char *err, size_t errlen)
{
	char range[100], spec[1024];
	const char *argv[8];
	size_t k = 0;
	char *o, *line, *save = NULL;

	snprintf(range, sizeof(range), "%s..%s", good, bad);
	argv[k++] = "log";
	argv[k++] = "--format=%H";
	if (func) {
		/* git's own idea of where the function is, at each commit */
		snprintf(spec, sizeof(spec), "-L:%s:%s", func, file);
		argv[k++] = "--no-patch";
		argv[k++] = spec;
		argv[k++] = range;
	} else if (first) {
		snprintf(spec, sizeof(spec), "-L%u,%u:%s", first, last ? last : first, file);
		argv[k++] = "--no-patch";
		argv[k++] = spec;
		argv[k++] = range;
	} else {
		argv[k++] = range;
		argv[k++] = "--";
		argv[k++] = file;
	}
	argv[k] = NULL;
	o = hist_git__run(repo, argv, err, errlen);
	if (!o)
		return -errno;
	for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strlen(line) != 40)
			continue;
		for (size_t i = 0; i < n; i++)
			if (!memcmp(c[i].hash, line, 40))
				c[i].touched = 1;
	}
	free(o);
	return 0;
}

/* func as a word a definition could hold: a C identifier, or C++/Python dotted/colon names
 * (their last part is what the definition spells). */
static const char *last_part(const char *func)
{
	const char *p = func, *q;

	while ((q = strpbrk(p, ":.")) != NULL)
		p = q + 1;
	return p;
}

char *hist_git__file_of(const char *repo, const char *commit, const char *func, char *err,
			size_t errlen)
{
	char pat[512];
	const char *name = last_part(func);
	const char *argv[] = {"grep", "-l", "-E", pat, commit, "--", NULL};
	char *o, *line, *save = NULL, *found = NULL;

	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_')) {
			errno = ENOENT;
			return NULL;
		}
	if (!*name) {
		errno = ENOENT;
		return NULL;
	}
	/* a definition: the name at a line's start after a type (C, C++), or after def/func/fn */
	snprintf(
		pat, sizeof(pat),
		"^([A-Za-z_][^;=(]*[ *&:])?%s[[:space:]]*\\([^;]*$|^[[:space:]]*(def|func|fn)[[:space:]]+(\\([^)]*\\)[[:space:]]*)?%s[[:space:]]*[(<]",
		name, name);
	o = hist_git__run(repo, argv, err, errlen);
	if (!o) {
		if (errno == ECHILD) /* git grep: 1 when nothing matched */
			errno = ENOENT;
		return NULL;
	}
	line = strtok_r(o, "\n", &save);
	if (line) {
		/* "COMMIT:path" */
		char *colon = strchr(line, ':');

		found = strdup(colon ? colon + 1 : line);
	} else {
		errno = ENOENT;
	}
	free(o);
	return found;
}

char *hist_git__toplevel(const char *repo, char *err, size_t errlen)
{
	const char *argv[] = {"rev-parse", "--show-toplevel", NULL};
	char *o = hist_git__run(repo, argv, err, errlen), *nl;

	if (!o)
		return NULL;
	nl = strchr(o, '\n');
	if (nl)
		*nl = '\0';
	return o;
}
