// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/job_filter.h"
#include "daemon/base/sort.h"

int job_filter__set_job(struct job_filter *f, const char *id)
{
	size_t len = strlen(id);

	if (!len)
		return -EINVAL;
	if (len >= sizeof(f->job))
		return -ENAMETOOLONG;
	/* A label value holds no separator ('\x1f'); ids are printable. */
	for (const unsigned char *c = (const unsigned char *)id; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return -EINVAL;
	memcpy(f->job, id, len + 1);
	return 0;
}

/* A whole number of at most 9 digits at *p, p moved past it. */
static bool number(const char **p, int64_t *ret)
{
	size_t n = strspn(*p, "0123456789");

	if (!n || n > 9)
		return false;
	*ret = strtoll(*p, NULL, 10);
	*p += n;
	return true;
}

/* r into v (n of them) unless it is there already. False when v is full. */
static bool add_rank(uint32_t *v, size_t *n, uint32_t r)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i] == r)
			return true;
	if (*n == JOB_FILTER_MAX_RANKS)
		return false;
	v[(*n)++] = r;
	return true;
}

int job_filter__set_ranks(struct job_filter *f, const char *list)
{
	uint32_t v[JOB_FILTER_MAX_RANKS];
	const char *p = list;
	int64_t lo, hi;
	size_t n = 0;

	for (;;) {
		if (!number(&p, &lo))
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (!number(&p, &hi) || hi < lo)
				return -EINVAL;
		}
		if (*p && *p != ',')
			return -EINVAL;
		/* 0-999999999 is refused without a billion steps. */
		if (hi - lo >= JOB_FILTER_MAX_RANKS)
			return -E2BIG;
		for (int64_t r = lo; r <= hi; r++)
			if (!add_rank(v, &n, (uint32_t)r))
				return -E2BIG;
		if (!*p++)
			break;
	}
	qsort(v, n, sizeof(*v), cmp_u32);
	memcpy(f->ranks, v, n * sizeof(*v));
	f->nr_ranks = n;
	return 0;
}

bool job_filter__on(const struct job_filter *f)
{
	return f->job[0] || f->nr_ranks;
}

/* The value of key in a label set, and its length; NULL when it has none. */
const char *job_filter__label(const char *set, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);

	for (const char *p = set; p && *p;) {
		size_t n = strcspn(p, "\x1f");

		if (n > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			*ret_len = n - klen - 1;
			return p + klen + 1;
		}
		p += n;
		if (*p)
			p++;
	}
	return NULL;
}

bool job_filter__matches(const struct job_filter *f, const char *labels)
{
	const char *v;
	size_t len;
	int64_t rank;
	uint32_t r;

	if (f->job[0]) {
		v = job_filter__label(labels, "job.id", &len);
		if (!v || len != strlen(f->job) || strncmp(v, f->job, len))
			return false;
	}
	if (!f->nr_ranks)
		return true;
	v = job_filter__label(labels, "job.rank", &len);
	if (!v || !number(&v, &rank) || (*v && *v != '\x1f'))
		return false;
	r = (uint32_t)rank;
	return bsearch(&r, f->ranks, f->nr_ranks, sizeof(r), cmp_u32) != NULL;
}

void job_filter__describe(const struct job_filter *f, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (f->job[0])
		n += (size_t)snprintf(buf, size, "job %s", f->job);
	if (f->nr_ranks && n < size)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
				      f->nr_ranks > 1 ? "ranks " : "rank ");
	for (size_t i = 0; i < f->nr_ranks && n < size; i++) {
		size_t j = i;

		/* Runs of consecutive ranks as LO-HI. */
		while (j + 1 < f->nr_ranks && f->ranks[j + 1] == f->ranks[j] + 1)
			j++;
		n += (size_t)snprintf(buf + n, size - n, "%s%u", i ? "," : "", f->ranks[i]);
		if (j > i && n < size)
			n += (size_t)snprintf(buf + n, size - n, "-%u", f->ranks[j]);
		i = j;
	}
}
