// SPDX-License-Identifier: Apache-2.0
/*
 * Per function: self is the sum of the nodes of that name; total is the sum of the totals of
 * the outermost nodes of that name on each path (a node whose ancestors include the same name
 * is already inside an ancestor's total). Names are counted in the order first met.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"
#include "output/report.h"

struct fn {
	const char *name; /* the tree's interned copy */
	uint64_t self, total;
};

/* Functions in the order first met, found by name: the tree's interned copy, so its address. */
struct fns {
	struct fn *v;
	size_t len, cap;
	struct hashmap *index; /* name's address -> index in v + 1 */
};

/* The path from the root to the node being visited: names by depth. */
struct walk {
	struct fns fns;
	const char **path;
	size_t path_cap;
};

static struct fn *fns__get(struct fns *t, const char *name)
{
	uintptr_t at = (uintptr_t)hashmap__get(t->index, (uintptr_t)name, 0);

	if (at)
		return &t->v[at - 1];
	if (vec_reserve(&t->v, &t->cap, t->len + 1) ||
	    hashmap__put(t->index, (uintptr_t)name, 0, (void *)(uintptr_t)(t->len + 1)))
		return NULL;
	t->v[t->len] = (struct fn){.name = name};
	return &t->v[t->len++];
}

static int visit(const struct calltree_frame *fr, void *ctx)
{
	struct walk *w = ctx;
	bool outermost = true;
	struct fn *f;

	if (fr->depth == SIZE_MAX || vec_reserve(&w->path, &w->path_cap, fr->depth + 1))
		return -ENOMEM;
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
	struct walk w = {.fns.index = hashmap__new()};
	uint64_t all = calltree__total(t);
	const char *u = unit ? unit : "samples";
	int err = w.fns.index ? calltree__walk(t, visit, &w) : -ENOMEM;

	if (!err) {
		fprintf(f, "%llu %s in all\n\nTop %zu by self (where the time was spent):\n",
			(unsigned long long)all, u, n);
		if (all) {
			qsort(w.fns.v, w.fns.len, sizeof(*w.fns.v), by_self);
			print_top(w.fns.v, w.fns.len, n, all, true, u, f);
			fprintf(f, "\nTop %zu by total (what it was spent under):\n", n);
			qsort(w.fns.v, w.fns.len, sizeof(*w.fns.v), by_total);
			print_top(w.fns.v, w.fns.len, n, all, false, u, f);
		}
		if (fflush(f) || ferror(f))
			err = -EIO;
	}
	hashmap__free(w.fns.index);
	free(w.fns.v);
	free(w.path);
	return err;
}

int report__write_profile(const struct profile_data *pd, size_t n, FILE *f)
{
	struct calltree *t = NULL;
	int err = profile__build_tree(pd, &t);

	if (!err)
		err = report__write(t, n, profile__unit_name(pd->unit), f);
	calltree__free(t);
	return err;
}
