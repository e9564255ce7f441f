// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int proc_stat__read(const char *proc_root, pid_t pid, struct proc_stat *ret)
{
	char path[PATH_MAX], buf[1024], *p;
	unsigned long long start = 0;
	struct stat st;
	int fd, field, ppid = 0;
	char state = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/stat", proc_root ? proc_root : "/proc", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fstat(fd, &st) ? -1 : read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": the name may hold anything, so from its last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
		return -EIO;
	for (field = 2; *p && field < 22; p++)
		field += *p == ' ';
	if (sscanf(p, "%llu", &start) != 1)
		return -EIO;
	ret->state = state;
	ret->ppid = (pid_t)ppid;
	ret->start_ticks = start;
	ret->uid = st.st_uid;
	return 0;
}
