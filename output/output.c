// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/calltree.h"
#include "output/flamegraph.h"
#include "output/folded.h"
#include "output/output.h"

static const struct {
	const char *name;
	enum output_format fmt;
} formats[] = {
	{"folded", OUTPUT_FOLDED},
	{"svg", OUTPUT_SVG},
};

static const struct {
	const char *ext;
	enum output_format fmt;
} extensions[] = {
	{".folded", OUTPUT_FOLDED},
	{".txt", OUTPUT_FOLDED},
	{".svg", OUTPUT_SVG},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int output__format_from_path(const char *path, enum output_format *ret_fmt)
{
	const char *base, *dot;
	size_t i;

	if (!path || !ret_fmt)
		return -EINVAL;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	/* "dir/.svg" is a hidden file without an extension, not an SVG. */
	if (!dot || dot == base)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(extensions); i++) {
		if (!strcasecmp(dot, extensions[i].ext)) {
			*ret_fmt = extensions[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

int output__format_from_name(const char *name, enum output_format *ret_fmt)
{
	size_t i;

	if (!name || !ret_fmt)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(formats); i++) {
		if (!strcmp(name, formats[i].name)) {
			*ret_fmt = formats[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

/* NULL for a value that is not an enum output_format. */
const char *output__format_name(enum output_format fmt)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(formats); i++) {
		if (formats[i].fmt == fmt)
			return formats[i].name;
	}
	return NULL;
}

int output__write(const struct calltree *t, enum output_format fmt, FILE *f,
		  const struct output_meta *meta)
{
	switch (fmt) {
	case OUTPUT_FOLDED:
		return folded__write(t, f);
	case OUTPUT_SVG:
		return flamegraph__write_svg(t, f, meta);
	}
	return -EINVAL;
}

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

static void sync_dir_of(const char *path)
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

int output__write_file(const struct calltree *t, enum output_format fmt, const char *path,
		       const struct output_meta *meta)
{
	char *tmp;
	FILE *f;
	int fd, err;

	if (!t || !path || !*path || !output__format_name(fmt))
		return -EINVAL;
	tmp = temp_path_for(path);
	if (!tmp)
		return -errno;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(tmp);
		return err;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto fail;
	}

	/* mkostemp makes it 0600; a profile is not secret from the user who asked for it. */
	err = fchmod(fd, 0644) ? -errno : 0;
	if (!err)
		err = output__write(t, fmt, f, meta);
	if (!err && fflush(f))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	/* Always close; on a network or FUSE file system close can be where ENOSPC shows up. */
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		goto fail;
	/* Durability of the rename only: the new file is already in place, so do not fail here. */
	sync_dir_of(path);
	free(tmp);
	return 0;

fail:
	unlink(tmp);
	free(tmp);
	return err;
}
