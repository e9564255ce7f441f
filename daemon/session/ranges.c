// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/correlate.h"
#include "daemon/session/ranges.h"

struct range {
	uint32_t pid, tid;
	uint64_t start, end;
	const char *name;
	size_t parent; /* the range it is inside (NONE: none), for climbing out of ended ones */
};

#define NONE SIZE_MAX

struct ranges {
	struct range *v;
	size_t n;
	bool outermost;
};

/* Thread, then start, the longer first: an enclosing range before what it encloses. */
static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static bool same_thread(const struct range *a, const struct range *b)
{
	return a->pid == b->pid && a->tid == b->tid;
}

/* Each range's parent: the innermost open one on its thread when it started. */
static void link_parents(struct ranges *r)
{
	size_t *stack = malloc((r->n ? r->n : 1) * sizeof(*stack)), depth = 0;

	for (size_t i = 0; i < r->n; i++) {
		struct range *c = &r->v[i];

		if (i && !same_thread(c, &r->v[i - 1]))
			depth = 0;
		if (!stack) {
			c->parent = NONE;
			continue;
		}
		while (depth && r->v[stack[depth - 1]].end <= c->start)
			depth--;
		c->parent = depth ? stack[depth - 1] : NONE;
		stack[depth++] = i;
	}
	free(stack);
}

static bool in_domain(const struct corr_gpu_rec *g, const char *domain)
{
	if (!domain)
		return true;
	if (!g->domain || !g->domain[0])
		return !strcmp(domain, RANGES_DEFAULT_DOMAIN);
	return !strcmp(domain, g->domain);
}

struct ranges *ranges__new(const struct corr_gpu_rec *gpu, size_t n, bool outermost,
			   const char *domain)
{
	struct ranges *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->outermost = outermost;
	r->v = malloc((n ? n : 1) * sizeof(*r->v));
	if (!r->v) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct corr_gpu_rec *g = &gpu[i];

		if (g->kind != CORR_GPU_NVTX || g->end_ns <= g->start_ns || !g->tid ||
		    !in_domain(g, domain))
			continue;
		r->v[r->n++] = (struct range){g->pid,
					      g->tid,
					      g->start_ns,
					      g->end_ns,
					      g->name && g->name[0] ? g->name : "[unnamed range]",
					      NONE};
	}
	qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	link_parents(r);
	return r;
}

void ranges__free(struct ranges *r)
{
	if (!r)
		return;
	free(r->v);
	free(r);
}

size_t ranges__count(const struct ranges *r)
{
	return r ? r->n : 0;
}

/* The last range of (pid, tid) that starts at or before t; NONE when there is none. */
static size_t last_started(const struct ranges *r, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = r->n;

	/* First index past every range of (pid, tid) starting at or before t. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct range *m = &r->v[mid];
		bool before = m->pid != pid   ? m->pid < pid
			      : m->tid != tid ? m->tid < tid
					      : m->start <= t;

		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || r->v[lo - 1].pid != pid || r->v[lo - 1].tid != tid)
		return NONE;
	return lo - 1;
}

const char *ranges__at(const struct ranges *r, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t k = r ? last_started(r, pid, tid, t) : NONE;

	/* Out of the ranges that ended by t, to the innermost one still open. */
	while (k != NONE && r->v[k].end <= t)
		k = r->v[k].parent;
	if (k == NONE)
		return RANGES_NONE;
	/* The first-started one still open: past ended ones, which start/end ranges leave between. */
	for (size_t p = r->outermost ? r->v[k].parent : NONE; p != NONE; p = r->v[p].parent)
		if (r->v[p].end > t)
			k = p;
	return r->v[k].name;
}

const char *ranges__root_at(void *ctx, uint32_t pid, uint32_t tid, uint64_t t)
{
	return ranges__at(ctx, pid, tid, t);
}
