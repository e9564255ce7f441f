// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "tests/lib/alloc_fail.h"
#include "tests/lib/tree_add.h"

/* A walk's frames, a row each in walk order, to compare trees and check the order. */
struct walk_row {
	char name[64];
	const char *name_ptr;
	uint64_t self, total;
	size_t depth;
};

struct walk {
	struct walk_row *v;
	size_t n, cap;
};

static int add_row(const struct calltree_frame *f, void *data)
{
	struct walk *r = data;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		cr_assert(r->v);
	}
	/* Zeroed so that whole snapshots compare with memcmp. */
	memset(&r->v[r->n], 0, sizeof(r->v[r->n]));
	snprintf(r->v[r->n].name, sizeof(r->v[r->n].name), "%s", f->name);
	r->v[r->n].name_ptr = f->name;
	r->v[r->n].self = f->self;
	r->v[r->n].total = f->total;
	r->v[r->n].depth = f->depth;
	r->n++;
	return 0;
}

static struct walk snapshot(const struct calltree *t)
{
	struct walk r = {0};

	cr_assert_eq(calltree__walk(t, add_row, &r), 0);
	return r;
}

static void expect(const struct walk *r, size_t i, const char *name, size_t depth, uint64_t self,
		   uint64_t total)
{
	cr_assert_lt(i, r->n);
	cr_expect_str_eq(r->v[i].name, name, "frame %zu", i);
	cr_expect_eq(r->v[i].depth, depth, "%s depth", name);
	cr_expect_eq(r->v[i].self, self, "%s self", name);
	cr_expect_eq(r->v[i].total, total, "%s total", name);
}

Test(calltree, empty_tree)
{
	struct calltree *t = calltree__new();
	struct walk r;

	cr_assert(t);
	cr_expect_eq(calltree__total(t), 0);
	cr_expect_eq(calltree__max_depth(t), 0);
	cr_expect_eq(calltree__node_count(t), 0);
	r = snapshot(t);
	cr_expect_eq(r.n, 0);
	free(r.v);
	calltree__free(t);
	calltree__free(NULL);
}

Test(calltree, self_and_total_weights)
{
	struct calltree *t = calltree__new();
	struct walk r;

	tree_add(t, "main;foo;bar", 3);
	tree_add(t, "main;foo", 2);
	tree_add(t, "main;baz", 1);
	tree_add(t, "idle", 4);
	cr_expect_eq(calltree__total(t), 10);
	cr_expect_eq(calltree__max_depth(t), 3);
	cr_expect_eq(calltree__node_count(t), 5);

	r = snapshot(t);
	cr_assert_eq(r.n, 5);
	expect(&r, 0, "idle", 0, 4, 4);
	expect(&r, 1, "main", 0, 0, 6);
	expect(&r, 2, "baz", 1, 1, 1);
	expect(&r, 3, "foo", 1, 2, 5);
	expect(&r, 4, "bar", 2, 3, 3);
	free(r.v);
	calltree__free(t);
}

Test(calltree, shared_prefixes_merge)
{
	struct calltree *t = calltree__new();
	struct walk r;

	tree_add(t, "a;b;c", 1);
	tree_add(t, "a;b;c", 5);
	tree_add(t, "a;b;d", 2);
	tree_add(t, "a;b", 0); /* creates nothing new, weighs nothing */
	cr_expect_eq(calltree__node_count(t), 4);
	cr_expect_eq(calltree__total(t), 8);

	r = snapshot(t);
	cr_assert_eq(r.n, 4);
	expect(&r, 0, "a", 0, 0, 8);
	expect(&r, 1, "b", 1, 0, 8);
	expect(&r, 2, "c", 2, 6, 6);
	expect(&r, 3, "d", 2, 2, 2);
	free(r.v);
	calltree__free(t);
}

/* A profiled process's bytes that are not UTF-8 come out repaired, one node however often. */
Test(calltree, names_that_are_not_utf8_are_repaired)
{
	struct calltree *t = calltree__new();
	struct walk r;

	tree_add(t, "py;f\xf0\x28x;caf\xc3\xa9", 1); /* a lead byte without its continuation */
	tree_add(t, "py;f\xf0\x28x;caf\xc3\xa9", 2);
	tree_add(t, "py;\xed\xa0\x80;\xc0\xaf", 4); /* a surrogate and an overlong '/' */
	cr_expect_eq(calltree__node_count(t), 5);
	r = snapshot(t);
	cr_assert_eq(r.n, 5);
	expect(&r, 0, "py", 0, 0, 7);
	expect(&r, 1, "???", 1, 0, 4);
	expect(&r, 2, "??", 2, 4, 4);
	expect(&r, 3, "f?(x", 1, 0, 3);
	expect(&r, 4, "caf\xc3\xa9", 2, 3, 3);
	free(r.v);
	calltree__free(t);
}

Test(calltree, same_name_at_different_places_is_different_nodes)
{
	struct calltree *t = calltree__new();
	struct walk r;

	tree_add(t, "f;f;f", 1); /* recursion */
	tree_add(t, "g;f", 2);
	cr_expect_eq(calltree__node_count(t), 5);

	r = snapshot(t);
	cr_assert_eq(r.n, 5);
	expect(&r, 0, "f", 0, 0, 1);
	expect(&r, 1, "f", 1, 0, 1);
	expect(&r, 2, "f", 2, 1, 1);
	expect(&r, 3, "g", 0, 0, 2);
	expect(&r, 4, "f", 1, 2, 2);
	/* Interned: every "f" node points at the same bytes. */
	cr_expect_eq(r.v[0].name_ptr, r.v[1].name_ptr);
	cr_expect_eq(r.v[0].name_ptr, r.v[4].name_ptr);
	free(r.v);
	calltree__free(t);
}

Test(calltree, children_walk_in_name_order)
{
	struct calltree *t = calltree__new();
	const char *names[] = {"zeta", "alpha", "Mid", "beta", "alpha2", "_x"};
	const char *sorted[] = {"Mid", "_x", "alpha", "alpha2", "beta", "zeta"};
	struct walk r;
	size_t i;

	for (i = 0; i < 6; i++) {
		const char *frames[] = {"root", names[i]};

		cr_assert_eq(calltree__add(t, frames, 2, i + 1), 0);
	}
	r = snapshot(t);
	cr_assert_eq(r.n, 7);
	for (i = 0; i < 6; i++)
		cr_expect_str_eq(r.v[i + 1].name, sorted[i]);
	free(r.v);
	calltree__free(t);
}

Test(calltree, frames_are_copied)
{
	struct calltree *t = calltree__new();
	char a[] = "outer", b[] = "inner";
	const char *frames[] = {a, b};
	struct walk r;

	cr_assert_eq(calltree__add(t, frames, 2, 1), 0);
	strcpy(a, "XXXXX");
	strcpy(b, "YYYYY");
	r = snapshot(t);
	cr_assert_eq(r.n, 2);
	cr_expect_str_eq(r.v[0].name, "outer");
	cr_expect_str_eq(r.v[1].name, "inner");
	free(r.v);
	calltree__free(t);
}

Test(calltree, bad_input_is_rejected_and_changes_nothing)
{
	struct calltree *t = calltree__new();
	const char *ok[] = {"a", "b"};
	const char *null_mid[] = {"a", "new", NULL, "c"};
	const char *empty_mid[] = {"a", "new", "", "c"};
	const char *empty_first[] = {""};
	struct walk before, after;

	tree_add(t, "a;b", 7);
	before = snapshot(t);

	cr_expect_eq(calltree__add(t, ok, 0, 1), -EINVAL);
	cr_expect_eq(calltree__add(t, NULL, 2, 1), -EINVAL);
	cr_expect_eq(calltree__add(NULL, ok, 2, 1), -EINVAL);
	cr_expect_eq(calltree__add(t, null_mid, 4, 1), -EINVAL);
	cr_expect_eq(calltree__add(t, empty_mid, 4, 1), -EINVAL);
	cr_expect_eq(calltree__add(t, empty_first, 1, 1), -EINVAL);
	cr_expect_eq(calltree__walk(t, NULL, NULL), -EINVAL);

	after = snapshot(t);
	cr_expect_eq(calltree__total(t), 7);
	cr_expect_eq(calltree__node_count(t), 2);
	cr_expect_eq(calltree__max_depth(t), 2);
	cr_assert_eq(after.n, before.n);
	cr_expect_eq(memcmp(after.v, before.v, before.n * sizeof(*before.v)), 0);
	free(before.v);
	free(after.v);
	calltree__free(t);
}

static int stop_at_third(const struct calltree_frame *f, void *data)
{
	int *seen = data;

	return ++*seen == 3 ? -ECANCELED : 0;
}

Test(calltree, visitor_can_stop_the_walk)
{
	struct calltree *t = calltree__new();
	int seen = 0;

	tree_add(t, "a;b;c;d;e", 1);
	cr_expect_eq(calltree__walk(t, stop_at_third, &seen), -ECANCELED);
	cr_expect_eq(seen, 3);
	calltree__free(t);
}

Test(calltree, weights_saturate_instead_of_wrapping)
{
	struct calltree *t = calltree__new();

	tree_add(t, "a;b", UINT64_MAX - 1);
	tree_add(t, "a;c", 5);
	cr_expect_eq(calltree__total(t), UINT64_MAX);
	calltree__free(t);
}

/*
 * Fail the k-th allocation of an add, for every k until the add succeeds: each failure must
 * return -ENOMEM and leave the tree exactly as it was, and the tree must stay usable.
 */
Test(calltree, enomem_leaves_tree_untouched)
{
	struct calltree *t = calltree__new();
	char names[400][16];
	const char *frames[400];
	struct walk before, after;
	long k;
	int i, err = -ENOMEM, failures = 0;

	/* Enough existing content that reserving the new stack must grow every table. */
	for (i = 0; i < 200; i++) {
		char s[64];

		snprintf(s, sizeof(s), "root;mid%d;leaf%d", i % 17, i);
		tree_add(t, s, 1);
	}
	for (i = 0; i < 400; i++) {
		snprintf(names[i], sizeof(names[i]), "new%d", i);
		frames[i] = names[i];
	}
	frames[0] = "root";
	frames[1] = "mid3";
	before = snapshot(t);

	for (k = 0; err == -ENOMEM; k++) {
		alloc_fail__nth(k + 1);
		err = calltree__add(t, frames, 400, 9);
		alloc_fail__nth(0);
		if (err != -ENOMEM)
			break;
		failures++;
		after = snapshot(t);
		cr_assert_eq(after.n, before.n, "failure at allocation %ld", k);
		cr_assert_eq(memcmp(after.v, before.v, before.n * sizeof(*before.v)), 0,
			     "failure at allocation %ld changed the tree", k);
		free(after.v);
		cr_assert_eq(calltree__total(t), 200);
		cr_assert_eq(calltree__max_depth(t), 3);
	}
	cr_assert_eq(err, 0);
	cr_expect_gt(failures, 2, "the add should allocate in several places");
	cr_expect_eq(calltree__total(t), 209);
	cr_expect_eq(calltree__max_depth(t), 400);
	cr_expect_eq(calltree__node_count(t), before.n + 398);
	free(before.v);
	calltree__free(t);
}

/* Checks, in one pre-order pass, total == self + sum of the children's totals at every node. */
struct check {
	struct {
		uint64_t self, total, children;
		char name[32];
	} open[64];
	size_t depth; /* open[0 .. depth - 1] are the current path */
	uint64_t roots, selves;
	size_t nodes;
	bool bad_order;
};

static void close_to(struct check *c, size_t depth)
{
	while (c->depth > depth) {
		size_t d = --c->depth;

		cr_assert_eq(c->open[d].total, c->open[d].self + c->open[d].children,
			     "node %s at depth %zu", c->open[d].name, d);
		if (d)
			c->open[d - 1].children += c->open[d].total;
		else
			c->roots += c->open[d].total;
	}
}

static int check_visit(const struct calltree_frame *f, void *data)
{
	struct check *c = data;

	cr_assert_leq(f->depth, c->depth);
	close_to(c, f->depth + 1);
	/* A sibling: it must sort after the one just closed at this depth. */
	if (c->depth == f->depth + 1) {
		if (strcmp(c->open[f->depth].name, f->name) >= 0)
			c->bad_order = true;
		close_to(c, f->depth);
	}
	c->open[f->depth].self = f->self;
	c->open[f->depth].total = f->total;
	c->open[f->depth].children = 0;
	snprintf(c->open[f->depth].name, sizeof(c->open[f->depth].name), "%s", f->name);
	c->depth = f->depth + 1;
	c->selves += f->self;
	c->nodes++;
	return 0;
}

Test(calltree, random_stress_keeps_totals)
{
	struct calltree *t = calltree__new();
	struct check *c = calloc(1, sizeof(*c));
	char names[64][24];
	const char *frames[48];
	uint64_t sum = 0;
	size_t i, j, max_depth = 0;

	srandom(12345);
	for (i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%zu_%lx", i, random());
	for (i = 0; i < 200000; i++) {
		size_t n = 1 + random() % 48;
		uint64_t w = 1 + random() % 100;

		/* Few roots and a skewed vocabulary, so prefixes are shared as in real profiles. */
		frames[0] = names[random() % 4];
		for (j = 1; j < n; j++)
			frames[j] = names[((random() % 64) * (random() % 2) + j % 3) % 64];
		cr_assert_eq(calltree__add(t, frames, n, w), 0);
		sum += w;
		if (n > max_depth)
			max_depth = n;
	}
	cr_expect_eq(calltree__total(t), sum);
	cr_expect_eq(calltree__max_depth(t), max_depth);

	cr_assert_eq(calltree__walk(t, check_visit, c), 0);
	close_to(c, 0);
	cr_expect_eq(c->roots, sum);
	cr_expect_eq(c->selves, sum);
	cr_expect_eq(c->nodes, calltree__node_count(t));
	cr_expect_not(c->bad_order, "siblings out of name order");
	free(c);
	calltree__free(t);
}
