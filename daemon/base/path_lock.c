// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/path_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static pid_t read_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;
	char *end;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return pid > 0 && pid <= INT_MAX && (*end == '\n' || !*end) ? (pid_t)pid : 0;
}

int path_lock__take(const char *path, int *ret_fd, pid_t *ret_holder)
{
	char lock[PATH_MAX], pid[32];
	int fd, n, err;

	n = snprintf(lock, sizeof(lock), "%s.lock", path);
	if (n < 0 || (size_t)n >= sizeof(lock))
		return -ENAMETOOLONG;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		if (ret_holder)
			*ret_holder = err == -EADDRINUSE ? read_holder(fd) : 0;
		close(fd);
		return err;
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	/* Who holds it, for the next one's error message; the lock works without it. */
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) != n)
		(void)0;
	*ret_fd = fd;
	return 0;
}

int sock_file__note(struct sock_file *f, const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->known = true;
	return 0;
}

void sock_file__remove_if_ours(const struct sock_file *f, const char *path)
{
	struct stat st;

	if (f->known && !lstat(path, &st) && st.st_dev == f->dev && st.st_ino == f->ino)
		unlink(path);
}

int sock_file__remove_stale(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r, err;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	/* Someone who does not take the lock may still listen there: never take theirs. */
	if (strlen(path) < sizeof(sa.sun_path)) {
		strcpy(sa.sun_path, path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		err = r ? errno : 0;
		close(fd);
		if (!r || err == EAGAIN || err == EINPROGRESS)
			return -EADDRINUSE;
	}
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

int sock_file__bind(int fd, const char *path, mode_t mode, gid_t gid, struct sock_file *ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[sizeof(sa.sun_path)];
	const char *slash = strrchr(path, '/');
	int n, err = 0;

	/* A directory of our own beside path (0700: nobody else can touch what is in it). */
	n = slash ? snprintf(dir, sizeof(dir), "%.*s/.xsprof-XXXXXX", (int)(slash - path), path)
		  : snprintf(dir, sizeof(dir), ".xsprof-XXXXXX");
	if (n < 0 || (size_t)n + 2 >= sizeof(dir) || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	memcpy(sa.sun_path, dir, (size_t)n);
	memcpy(sa.sun_path + n, "/s", 3); /* fits: checked above */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, mode) ||
	    (gid != (gid_t)-1 && chown(sa.sun_path, geteuid(), gid)) || rename(sa.sun_path, path))
		err = -errno;
	if (err)
		unlink(sa.sun_path);
	rmdir(dir);
	return err ? err : sock_file__note(ret, path);
}
