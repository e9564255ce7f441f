// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/perf_map.h"

#define READ_CHUNK (64u << 10)

struct entry {
	struct perf_map_sym sym;
	uint64_t seq; /* line order: the newest entry at one start wins */
};

struct perf_map {
	struct entry *v;
	size_t n, cap;
	size_t sorted; /* v[0..sorted) is sorted and deduplicated */
	size_t skipped;
	uint64_t seq;
	uint64_t offset; /* file bytes consumed so far */
	struct arena *names;
};

struct perf_map *perf_map__new(void)
{
	struct perf_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->names = arena__new();
	if (!m->names) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void perf_map__free(struct perf_map *m)
{
	if (!m)
		return;
	arena__free(m->names);
	free(m->v);
	free(m);
}

static bool parse_hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
			d = (*s | 0x20) - 'a' + 10;
		else
			break;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static int add_line(struct perf_map *m, const char *p, const char *end)
{
	uint64_t start, size;
	const char *name;
	struct entry *e;
	size_t len;

	if (!parse_hex(&p, end, &start) || p >= end || *p != ' ')
		return -EINVAL;
	p++;
	if (!parse_hex(&p, end, &size) || p >= end || *p != ' ' || !size || start + size < start)
		return -EINVAL;
	name = p + 1;
	len = (size_t)(end - name);
	if (len && name[len - 1] == '\r')
		len--;
	if (!len)
		return -EINVAL;
	if (len > PERF_MAP_MAX_NAME)
		len = PERF_MAP_MAX_NAME;
	if (m->n >= PERF_MAP_MAX_ENTRIES)
		return -E2BIG;
	if (vec_reserve(&m->v, &m->cap, m->n + 1))
		return -ENOMEM;
	/* A NUL inside the name ends it: the name is text for a flamegraph. */
	len = strnlen(name, len);
	e = &m->v[m->n];
	e->sym.start = start;
	e->sym.size = size;
	e->sym.name = arena__strndup(m->names, name, len);
	if (!e->sym.name)
		return -ENOMEM;
	e->seq = m->seq++;
	m->n++;
	return 0;
}

size_t perf_map__parse(struct perf_map *m, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (nl > p && add_line(m, p, nl))
			m->skipped++;
		p = nl + 1;
	}
	return (size_t)(p - buf);
}

int perf_map__update_fd(struct perf_map *m, int fd)
{
	char *buf;
	size_t have = 0, used;
	struct stat st;
	ssize_t n;
	int err = 0;

	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size <= m->offset)
		return 0;
	if (m->offset >= PERF_MAP_MAX_BYTES)
		return -EFBIG;
	buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (m->offset + have >= PERF_MAP_MAX_BYTES) {
			err = -EFBIG;
			break;
		}
		n = pread(fd, buf + have, READ_CHUNK - have, (off_t)(m->offset + have));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		have += (size_t)n;
		used = perf_map__parse(m, buf, have);
		/* A line longer than the buffer is not a perf map line: skip it whole. */
		if (!used && have == READ_CHUNK) {
			m->skipped++;
			used = have;
		}
		m->offset += used;
		have -= used;
		memmove(buf, buf + used, have);
	}
	free(buf);
	return err;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->sym.start != y->sym.start)
		return x->sym.start < y->sym.start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void perf_map__sort(struct perf_map *m)
{
	size_t i, out = 0;

	qsort(m->v, m->n, sizeof(*m->v), cmp_entry);
	for (i = 0; i < m->n; i++) {
		if (out && m->v[out - 1].sym.start == m->v[i].sym.start)
			m->v[out - 1] = m->v[i]; /* newer */
		else
			m->v[out++] = m->v[i];
	}
	m->n = out;
	m->sorted = out;
}

const struct perf_map_sym *perf_map__lookup(struct perf_map *m, uint64_t addr)
{
	size_t lo = 0, hi;
	const struct perf_map_sym *s;

	if (m->sorted != m->n)
		perf_map__sort(m);
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].sym.start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &m->v[lo - 1].sym;
	return addr - s->start < s->size ? s : NULL;
}

size_t perf_map__count(const struct perf_map *m)
{
	return m->n;
}

size_t perf_map__skipped(const struct perf_map *m)
{
	return m->skipped;
}

size_t perf_map__bytes(const struct perf_map *m)
{
	return sizeof(*m) + m->cap * sizeof(*m->v) + arena__bytes(m->names);
}
