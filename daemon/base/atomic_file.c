// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/base/atomic_file.h"

/* "dir/.name.XXXXXX": same directory so rename() stays atomic, hidden so nobody picks it up. */
static char *temp_path_for(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dirlen = base - path;
	char *tmp;

	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		errno = EISDIR;
		return NULL;
	}
	tmp = malloc(dirlen + strlen(base) + sizeof(".") + sizeof(".XXXXXX"));
	if (!tmp)
		return NULL;
	sprintf(tmp, "%.*s.%s.XXXXXX", (int)dirlen, path, base);
	return tmp;
}

/*
 * Create tmp (its last six characters "XXXXXX" made unique) with mode 0666 less the umask, as
 * any new file: the user's umask decides who may read the profile. The fd, or -errno.
 */
static int open_temp(char *tmp)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char *x = tmp + strlen(tmp) - 6;
	unsigned char rnd[6];

	for (int tries = 0; tries < 100; tries++) {
		int fd;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -EIO;
		for (int i = 0; i < 6; i++)
			x[i] = chars[rnd[i] % (sizeof(chars) - 1)];
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

void atomic_file__sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;
	int fd;

	if (slash && !dir)
		return;
	fd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return;
	fsync(fd);
	close(fd);
}

/* A stream onto fd that takes at most cap bytes (fopencookie): past it, EFBIG. */
struct capped {
	int fd;
	uint64_t cap, written;
	bool over;
};

static ssize_t capped_write(void *c, const char *buf, size_t size)
{
	struct capped *k = c;
	size_t done = 0;

	if (k->cap && k->written + size > k->cap) {
		k->over = true;
		errno = EFBIG;
		return -1;
	}
	while (done < size) {
		ssize_t n = write(k->fd, buf + done, size - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)n;
	}
	k->written += done;
	return (ssize_t)done;
}

static int capped_close(void *c)
{
	return close(((struct capped *)c)->fd);
}

int atomic_file__write(const char *path, int (*write)(FILE *f, void *ctx), void *ctx)
{
	return atomic_file__write_capped(path, write, ctx, 0);
}

int atomic_file__write_capped(const char *path, int (*write)(FILE *f, void *ctx), void *ctx,
			      uint64_t max_bytes)
{
	struct capped k = {.cap = max_bytes};
	char *tmp;
	FILE *f;
	int fd, err;

	if (!path || !*path || !write)
		return -EINVAL;
	tmp = temp_path_for(path);
	if (!tmp)
		return -errno;
	fd = open_temp(tmp);
	if (fd < 0) {
		err = fd;
		free(tmp);
		return err;
	}
	k.fd = fd;
	f = max_bytes ? fopencookie(&k, "w",
				    (cookie_io_functions_t){.write = capped_write,
							    .close = capped_close})
		      : fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto fail;
	}

	err = write(f, ctx);
	if (!err && fflush(f))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	/* Always close; on a network or FUSE file system close can be where ENOSPC shows up. */
	if (fclose(f) && !err)
		err = -errno;
	/* Past the cap, whatever the writer made of the failed writes. */
	if (k.over)
		err = -EFBIG;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		goto fail;
	/* Durability of the rename only: the new file is already in place, so do not fail here. */
	atomic_file__sync_dir_of(path);
	free(tmp);
	return 0;

fail:
	unlink(tmp);
	free(tmp);
	return err;
}
