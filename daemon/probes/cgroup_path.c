// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "daemon/probes/cgroup_path.h"

#define CGROUP2_MAGIC 0x63677270 /* include/uapi/linux/magic.h */
/* A unit is looked for this many levels under the mount (slices nest: a.slice/a-b.slice/). */
#define UNIT_MAX_DEPTH 6

int cgroup_path__mount(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");

		/* id parent major:minor root mountpoint ... - fstype source options */
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if ((size_t)snprintf(buf, size, "%s", mnt) < size)
			err = 0;
	}
	fclose(f);
	return err;
}

/* Depth-first search for a directory named unit under dir; 0 and the path, or -ENOENT. */
static int find_unit(const char *dir, const char *unit, int depth, char *ret, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int err = -ENOENT;

	if (!d)
		return -ENOENT;
	while (err && (e = readdir(d))) {
		char sub[PATH_MAX];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= sizeof(sub))
			continue;
		if (!strcmp(e->d_name, unit)) {
			if ((size_t)snprintf(ret, size, "%s", sub) < size)
				err = 0;
		} else if (depth < UNIT_MAX_DEPTH && strstr(e->d_name, ".slice")) {
			err = find_unit(sub, unit, depth + 1, ret, size);
		}
	}
	closedir(d);
	return err;
}

int cgroup_path__open(const char *path, const char *unit, char *ret_path, size_t size)
{
	char mnt[PATH_MAX], full[PATH_MAX];
	struct statfs sfs;
	int fd, err;

	err = cgroup_path__mount(mnt, sizeof(mnt));
	if (path && path[0] == '/') {
		if ((size_t)snprintf(full, sizeof(full), "%s", path) >= sizeof(full))
			return -ENAMETOOLONG;
	} else if (err) {
		return err;
	} else if (path) {
		if ((size_t)snprintf(full, sizeof(full), "%s/%s", mnt, path) >= sizeof(full))
			return -ENAMETOOLONG;
	} else if ((err = find_unit(mnt, unit, 0, full, sizeof(full)))) {
		return err;
	}
	fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_MAGIC) {
		close(fd);
		return -EMEDIUMTYPE;
	}
	snprintf(ret_path, size, "%s", full);
	return fd;
}
