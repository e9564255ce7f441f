// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/base/cupti_lib_path.h"
#include "daemon/base/command.h"

#ifndef XSPROF_CUPTI_LIB_PATH
#define XSPROF_CUPTI_LIB_PATH "/usr/local/lib/xsprof/libxsprof_cupti.so"
#endif

extern char **environ;

struct command {
	pid_t pid;
	int pidfd;
	int go_fd;  /* write end: closing it lets the child exec */
	int err_fd; /* read end: the child writes its exec errno here, EOF on success */
	bool released, reaped;
	int status;
	char path[PATH_MAX];
};

const char *command__cupti_lib(void)
{
	return xsprof_cupti_lib_path();
}

/* argv[0] as execvp would find it; -ENOENT or -EACCES like a shell reports them. */
static int resolve(const char *cmd, char *ret_path, size_t size)
{
	const char *path = getenv("PATH"), *p, *end;
	int err = -ENOENT;

	if (!*cmd)
		return -ENOENT;
	if (strchr(cmd, '/')) {
		if ((size_t)snprintf(ret_path, size, "%s", cmd) >= size)
			return -ENAMETOOLONG;
		return access(cmd, X_OK) ? -errno : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; p; p = *end ? end + 1 : NULL) {
		struct stat st;

		end = strchrnul(p, ':');
		if ((size_t)snprintf(ret_path, size, "%.*s%s%s", (int)(end - p), p,
				     end == p ? "" : "/", cmd) >= size)
			continue;
		if (stat(ret_path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (!access(ret_path, X_OK))
			return 0;
		err = -EACCES;
	}
	return err;
}

/* environ with NAME=value for each of the n names and values, in place of any NAME= entry
 * already there; the strings are environ's but the new ones, returned in ret_entries. All the
 * caller's to free. */
static char **env_with(const char *const *names, const char *const *values, size_t nr_names,
		       char **ret_entries)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + nr_names + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t k = 0; k < nr_names; k++) {
		ret_entries[k] = malloc(strlen(names[k]) + strlen(values[k]) + 2);
		if (!ret_entries[k]) {
			while (k-- > 0)
				free(ret_entries[k]);
			free(env);
			return NULL;
		}
		sprintf(ret_entries[k], "%s=%s", names[k], values[k]);
	}
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		for (size_t k = 0; k < nr_names && !replaced; k++) {
			size_t len = strlen(names[k]);

			replaced = !strncmp(environ[i], names[k], len) && environ[i][len] == '=';
		}
		if (!replaced)
			env[j++] = environ[i];
	}
	for (size_t k = 0; k < nr_names; k++)
		env[j++] = ret_entries[k];
	env[j] = NULL;
	return env;
}

struct command *command__new(char *const argv[], const char *inject_lib, const char *itt_lib)
{
	const char *names[3], *values[3];
	int go[2] = {-1, -1}, er[2] = {-1, -1}, err;
	char **env = environ, *entries[3] = {NULL, NULL, NULL};
	const char *itt_user = getenv(COMMAND_ITT_ENV);
	size_t nr = 0;
	struct command *l;

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->pid = -1;
	l->pidfd = l->go_fd = l->err_fd = -1;
	err = resolve(argv[0], l->path, sizeof(l->path));
	if (err)
		goto fail;
	if (inject_lib) {
		names[nr] = COMMAND_INJECTION_ENV;
		values[nr++] = inject_lib;
		names[nr] = COMMAND_NVTX_INJECTION_ENV;
		values[nr++] = inject_lib;
	}
	/* A collector the user named (VTune's) stays. */
	if (itt_lib && !(itt_user && *itt_user)) {
		names[nr] = COMMAND_ITT_ENV;
		values[nr++] = itt_lib;
	}
	if (nr) {
		env = env_with(names, values, nr, entries);
		if (!env) {
			env = environ;
			err = -ENOMEM;
			goto fail;
		}
	}
	/* A socket for the go byte: sent with MSG_NOSIGNAL, a child killed meanwhile does not
	 * take xsprofd down with SIGPIPE. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) || pipe2(er, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		goto fail;
	}
	if (l->pid == 0) {
		/* Only async-signal-safe calls from here to exec. */
		sigset_t none;
		char c;
		int e;

		close(go[1]);
		close(er[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		while ((e = read(go[0], &c, 1)) < 0 && errno == EINTR)
			;
		/* EOF without the go byte: xsprofd died before it was ready; do not run. */
		if (e != 1)
			_exit(125);
		execve(l->path, argv, env);
		e = errno;
		(void)!write(er[1], &e, sizeof(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	close(go[0]);
	close(er[1]);
	l->go_fd = go[1];
	l->err_fd = er[0];
	go[0] = go[1] = er[0] = er[1] = -1; /* l's now */
	l->pidfd = syscall(SYS_pidfd_open, l->pid, 0);
	if (l->pidfd < 0) {
		err = -errno;
		goto fail;
	}
	/* The child has its own copy. */
	if (env != environ) {
		for (size_t k = 0; k < nr; k++)
			free(entries[k]);
		free(env);
	}
	return l;
fail:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	if (env != environ) {
		for (size_t k = 0; k < nr; k++)
			free(entries[k]);
		free(env);
	}
	command__free(l);
	errno = -err;
	return NULL;
}

pid_t command__pid(const struct command *l)
{
	return l->pid;
}

const char *command__path(const struct command *l)
{
	return l->path;
}

int command__fd(const struct command *l)
{
	return l->pidfd;
}

int command__release(struct command *l)
{
	ssize_t n;
	int e;

	if (l->released)
		return 0;
	l->released = true;
	if (send(l->go_fd, "g", 1, MSG_NOSIGNAL) != 1) {
		e = errno;
		close(l->go_fd);
		l->go_fd = -1;
		return -e;
	}
	close(l->go_fd);
	l->go_fd = -1;
	/* EOF: the exec went through (the pipe closed on exec). */
	while ((n = read(l->err_fd, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(l->err_fd);
	l->err_fd = -1;
	return n == sizeof(e) ? -e : 0;
}

int command__reap(struct command *l, bool block, int *ret_status)
{
	int st;
	pid_t r;

	if (l->reaped) {
		*ret_status = l->status;
		return 1;
	}
	while ((r = waitpid(l->pid, &st, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	l->reaped = true;
	l->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	*ret_status = l->status;
	return 1;
}

bool command__exited(const struct command *l)
{
	return l->reaped;
}

int command__kill(struct command *l, int sig)
{
	if (l->reaped || l->pid <= 0)
		return 0;
	return kill(l->pid, sig) ? -errno : 0;
}

void command__free(struct command *l)
{
	int st;

	if (!l)
		return;
	if (l->pid > 0 && !l->released && !l->reaped) {
		kill(l->pid, SIGKILL);
		command__reap(l, true, &st);
	}
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	if (l->pidfd >= 0)
		close(l->pidfd);
	free(l);
}
