// SPDX-License-Identifier: Apache-2.0
/*
 * Per function: self is the sum of the nodes of that name; total is the sum of the totals of
 * the outermost nodes of that name on each path (a node whose ancestors include the same name
 * is already inside an ancestor's total). Names are counted in a small open-addressing table.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "output/calltree.h"
#include "output/report.h"

struct fn {
	const char *name; /* the tree's interned copy */
	uint64_t self, total;
};

struct fns {
	struct fn *v;
	size_t cap, len;
};

/* The path from the root to the node being visited: names by depth. */
struct walk {
	struct fns fns;
	const char **path;
	size_t path_cap;
};

static struct fn *fns__get(struct fns *t, const char *name)
{
	size_t i;

	if ((t->len + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct fn *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->v[j].name)
				continue;
			for (i = hash_str(t->v[j].name) & (ncap - 1); nv[i].name;
			     i = (i + 1) & (ncap - 1))
				;
			nv[i] = t->v[j];
		}
		free(t->v);
		t->v = nv;
		t->cap = ncap;
	}
	for (i = hash_str(name) & (t->cap - 1); t->v[i].name; i = (i + 1) & (t->cap - 1))
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	t->v[i].name = name;
	t->len++;
	return &t->v[i];
}

static int visit(const struct calltree_frame *fr, void *ctx)
{
	struct walk *w = ctx;
	bool outermost = true;
	struct fn *f;

	if (fr->depth >= w->path_cap) {
		size_t ncap = w->path_cap ? w->path_cap * 2 : 256;
		const char **np;

		while (ncap <= fr->depth)
			ncap *= 2;
		np = realloc(w->path, ncap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		w->path = np;
		w->path_cap = ncap;
	}
	w->path[fr->depth] = fr->name;
	for (size_t d = 0; d < fr->depth && outermost; d++)
		outermost = strcmp(w->path[d], fr->name) != 0;
	f = fns__get(&w->fns, fr->name);
	if (!f)
		return -ENOMEM;
	f->self += fr->self;
	if (outermost)
		f->total += fr->total;
	return 0;
}

static int by_self(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_total(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void print_top(const struct fn *v, size_t len, size_t n, uint64_t all, bool self,
		      const char *unit, FILE *f)
{
	fprintf(f, "%8s %8s %14s  %s\n", self ? "self" : "total", self ? "total" : "self", unit,
		"function");
	for (size_t i = 0; i < len && i < n; i++) {
		uint64_t key = self ? v[i].self : v[i].total, other = self ? v[i].total : v[i].self;

		if (!key)
			break;
		fprintf(f, "%7.2f%% %7.2f%% %14llu  %s\n", 100.0 * key / all, 100.0 * other / all,
			(unsigned long long)key, v[i].name);
	}
}

int report__write(const struct calltree *t, size_t n, const char *unit, FILE *f)
{
	struct walk w = {0};
	uint64_t all = calltree__total(t);
	struct fn *flat = NULL;
	size_t len = 0;
	int err;

	err = calltree__walk(t, visit, &w);
	if (!err && w.fns.len && !(flat = malloc(w.fns.len * sizeof(*flat))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < w.fns.cap; i++)
		if (w.fns.v[i].name)
			flat[len++] = w.fns.v[i];
	if (!err) {
		fprintf(f, "%llu %s in all\n\nTop %zu by self (where the time was spent):\n",
			(unsigned long long)all, unit ? unit : "samples", n);
		if (all) {
			qsort(flat, len, sizeof(*flat), by_self);
			print_top(flat, len, n, all, true, unit ? unit : "samples", f);
			fprintf(f, "\nTop %zu by total (what it was spent under):\n", n);
			qsort(flat, len, sizeof(*flat), by_total);
			print_top(flat, len, n, all, false, unit ? unit : "samples", f);
		}
		if (fflush(f) || ferror(f))
			err = -EIO;
	}
	free(flat);
	free(w.fns.v);
	free(w.path);
	return err;
}
