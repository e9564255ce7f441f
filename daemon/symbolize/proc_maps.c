// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"
#include "daemon/base/fileio.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/proc_maps.h"

#define DELETED_SUFFIX	   " (deleted)"
#define DELETED_SUFFIX_LEN (sizeof(DELETED_SUFFIX) - 1)

struct proc_maps {
	struct proc_map *maps;
	size_t count;
	size_t cap;
	size_t skipped;
	struct arena *paths;
};

/* A cursor over one line; every read checks p < end. */
struct cursor {
	const char *p;
	const char *end;
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool parse_hex(struct cursor *c, uint64_t *ret)
{
	uint64_t v = 0;
	int digits = 0, d;

	while (c->p < c->end && (d = hex_digit(*c->p)) >= 0) {
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
		c->p++;
	}
	if (!digits)
		return false;
	*ret = v;
	return true;
}

static bool parse_dec(struct cursor *c, uint64_t *ret)
{
	uint64_t v = 0;
	int digits = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*c->p - '0');
		digits++;
		c->p++;
	}
	if (!digits)
		return false;
	*ret = v;
	return true;
}

static bool expect(struct cursor *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

static bool parse_perms(struct cursor *c, uint8_t *ret)
{
	static const char want[4][2] = {{'r', '-'}, {'w', '-'}, {'x', '-'}, {'p', 's'}};
	static const uint8_t bit[4] = {PROC_MAP_READ, PROC_MAP_WRITE, PROC_MAP_EXEC,
				       PROC_MAP_PRIVATE};
	uint8_t perms = 0;
	int i;

	if (c->end - c->p < 4)
		return false;
	for (i = 0; i < 4; i++) {
		if (c->p[i] == want[i][0])
			perms |= bit[i];
		else if (c->p[i] != want[i][1])
			return false;
	}
	c->p += 4;
	*ret = perms;
	return true;
}

/* "start-end perms offset major:minor inode [path]" */
static bool parse_line(struct cursor *c, struct proc_map *m, const char **ret_path,
		       size_t *ret_path_len)
{
	uint64_t major, minor;
	const char *path;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(c, &m->start) || !expect(c, '-') || !parse_hex(c, &m->end) ||
	    !expect(c, ' ') || !parse_perms(c, &m->perms) || !expect(c, ' ') ||
	    !parse_hex(c, &m->offset) || !expect(c, ' ') || !parse_hex(c, &major) ||
	    !expect(c, ':') || !parse_hex(c, &minor) || !expect(c, ' ') || !parse_dec(c, &m->inode))
		return false;
	if (m->start >= m->end || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (c->p < c->end && *c->p != ' ')
		return false;
	/* The kernel pads to a column; the path is everything after the padding. */
	while (c->p < c->end && *c->p == ' ')
		c->p++;
	path = c->p;
	len = (size_t)(c->end - c->p);
	if (len >= DELETED_SUFFIX_LEN &&
	    !memcmp(path + len - DELETED_SUFFIX_LEN, DELETED_SUFFIX, DELETED_SUFFIX_LEN)) {
		m->deleted = true;
		len -= DELETED_SUFFIX_LEN;
	}
	*ret_path = len ? path : NULL;
	*ret_path_len = len;
	return true;
}

static int proc_maps__append(struct proc_maps *pm, const struct proc_map *m)
{
	if (vec_reserve(&pm->maps, &pm->cap, pm->count + 1))
		return -ENOMEM;
	pm->maps[pm->count++] = *m;
	return 0;
}

static int cmp_map_start(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct proc_maps *proc_maps__parse(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl, *path;
	struct proc_maps *pm;
	struct proc_map m;
	struct cursor c;
	bool sorted = true;
	size_t path_len;

	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	pm->paths = arena__new();
	if (!pm->paths)
		goto fail;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		c.p = p;
		c.end = nl ? nl : end;
		p = nl ? nl + 1 : end;
		if (c.p == c.end)
			continue;
		if (!parse_line(&c, &m, &path, &path_len)) {
			pm->skipped++;
			continue;
		}
		if (path) {
			m.path = arena__strndup(pm->paths, path, path_len);
			if (!m.path)
				goto fail;
		}
		if (pm->count && pm->maps[pm->count - 1].start > m.start)
			sorted = false;
		if (proc_maps__append(pm, &m))
			goto fail;
	}
	/* The kernel prints in order; only hand-written input needs sorting. */
	if (!sorted)
		qsort(pm->maps, pm->count, sizeof(*pm->maps), cmp_map_start);
	return pm;
fail:
	proc_maps__free(pm);
	errno = ENOMEM;
	return NULL;
}

struct proc_maps *proc_maps__read(const char *proc_root, pid_t pid)
{
	char path[PATH_MAX];
	struct proc_maps *pm;
	size_t len;
	char *buf;
	int err, n;

	if (pid <= 0) {
		errno = pid == 0 ? ESRCH : EINVAL;
		return NULL;
	}
	n = snprintf(path, sizeof(path), "%s/%d/maps", proc_root ? proc_root : "/proc", (int)pid);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	err = file__read_all(path, PROC_MAPS_MAX_SIZE, &buf, &len);
	if (err) {
		errno = err == -ENOENT ? ESRCH : -err;
		return NULL;
	}
	pm = proc_maps__parse(buf, len);
	free(buf);
	return pm;
}

void proc_maps__free(struct proc_maps *m)
{
	if (!m)
		return;
	arena__free(m->paths);
	free(m->maps);
	free(m);
}

size_t proc_maps__count(const struct proc_maps *m)
{
	return m->count;
}

size_t proc_maps__skipped(const struct proc_maps *m)
{
	return m->skipped;
}

const struct proc_map *proc_maps__at(const struct proc_maps *m, size_t idx)
{
	return idx < m->count ? &m->maps[idx] : NULL;
}

ssize_t proc_maps__index(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->count;

	/* Last mapping with start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->maps[lo - 1].end)
		return -ENOENT;
	return (ssize_t)(lo - 1);
}

const struct proc_map *proc_maps__find(const struct proc_maps *m, uint64_t addr)
{
	ssize_t idx = proc_maps__index(m, addr);

	return idx < 0 ? NULL : &m->maps[idx];
}
