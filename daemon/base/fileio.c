// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/base/fileio.h"

#define FILEIO_FIRST_CHUNK (64 * 1024)

int file__read_all(const char *path, size_t max_size, char **ret_buf, size_t *ret_len)
{
	size_t cap = FILEIO_FIRST_CHUNK, len = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (cap - len < 2) {
			if (cap > max_size) {
				err = -EFBIG;
				goto out;
			}
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				goto out;
			}
			buf = nbuf;
			cap *= 2;
		}
		/* Leave a byte for the terminating NUL. */
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += n;
		if (len > max_size) {
			err = -EFBIG;
			goto out;
		}
	}
	buf[len] = '\0';
	close(fd);
	*ret_buf = buf;
	*ret_len = len;
	return 0;
out:
	free(buf);
	close(fd);
	return err;
}
