// SPDX-License-Identifier: Apache-2.0
/* The service's windows: length, memory cap, per-uid queries, counted drops. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/session/window.h"
#include "output/model/calltree.h"

#define S(n) ((uint64_t)(n)*1000000000ull)

/* A slice with `count` samples of uid:UID;comm;fn. */
static struct calltree *slice(unsigned int uid, const char *fn, uint64_t count)
{
	struct calltree *t = calltree__new();
	char u[24];
	const char *frames[3] = {u, "app", fn};

	snprintf(u, sizeof(u), "uid:%u", uid);
	cr_assert(t);
	cr_assert_eq(calltree__add(t, frames, 3, count), 0);
	return t;
}

struct find {
	const char *name;
	size_t depth;
	uint64_t total;
};

static int find_visit(const struct calltree_frame *f, void *ctx)
{
	struct find *fd = ctx;

	if (!strcmp(f->name, fd->name)) {
		fd->depth = f->depth;
		fd->total += f->total;
	}
	return 0;
}

static uint64_t total_of(struct calltree *t, const char *name, size_t *ret_depth)
{
	struct find fd = {.name = name};

	calltree__walk(t, find_visit, &fd);
	if (ret_depth)
		*ret_depth = fd.depth;
	return fd.total;
}

Test(store, window_expires_old_slices_and_counts_them)
{
	struct window_opts o = {.window_s = 30, .cap_bytes = 1 << 20};
	struct window *s = window__new(&o);
	struct window_stats st;

	for (int i = 0; i < 10; i++)
		cr_assert_eq(window__add(s, S(10 * i), S(10 * i + 10), slice(0, "f", 5)), 0);
	window__expire(s, S(100));
	window__stats(s, &st);
	/* Slices ending before 100 - 30 = 70 are gone: those ending at 10..60. */
	cr_expect_eq(st.slices, 4);
	cr_expect_eq(st.expired_slices, 6);
	cr_expect_eq(st.samples, 20);
	cr_expect_eq(st.dropped_slices, 0);
	cr_expect_eq(st.oldest_ns, S(60));
	cr_expect_eq(st.newest_ns, S(100));
	window__free(s);
}

Test(store, cap_evicts_oldest_first_and_counts_samples)
{
	struct calltree *probe = slice(0, "f", 1);
	struct window_opts o = {.window_s = 3600};
	struct window *s;
	struct window_stats st;
	struct calltree *out;

	/* Room for exactly three slices of this shape. */
	o.cap_bytes = 3 * (calltree__node_count(probe) * 128 + 256);
	calltree__free(probe);
	s = window__new(&o);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(window__add(s, S(10 * i), S(10 * i + 10),
					 slice(0, i < 2 ? "old" : "new", 7)),
			     0);
	window__stats(s, &st);
	cr_expect_eq(st.slices, 3);
	cr_expect_eq(st.dropped_slices, 2);
	cr_expect_eq(st.dropped_samples, 14);
	cr_expect(st.bytes <= st.cap_bytes, "%zu > %zu", st.bytes, st.cap_bytes);
	out = calltree__new();
	cr_assert_eq(window__query(s, 0, UINT64_MAX, true, 0, out, NULL), 0);
	cr_expect_eq(total_of(out, "old", NULL), 0, "evicted data still served");
	cr_expect_eq(total_of(out, "new", NULL), 21);
	calltree__free(out);
	window__free(s);
}

Test(store, slice_larger_than_the_cap_is_refused_and_counted)
{
	struct window_opts o = {.window_s = 60, .cap_bytes = 64};
	struct window *s = window__new(&o);
	struct window_stats st;

	cr_expect_eq(window__add(s, 0, S(1), slice(0, "f", 9)), -E2BIG);
	window__stats(s, &st);
	cr_expect_eq(st.slices, 0);
	cr_expect_eq(st.dropped_samples, 9);
	window__free(s);
}

Test(store, query_keeps_one_uid_and_strips_the_uid_frame)
{
	struct window_opts o = {.window_s = 600, .cap_bytes = 1 << 20};
	struct window *s = window__new(&o);
	struct calltree *mine = calltree__new(), *all = calltree__new();
	uint64_t from = 0;
	size_t depth = 99;

	cr_assert_eq(window__add(s, S(0), S(10), slice(1000, "mine", 3)), 0);
	cr_assert_eq(window__add(s, S(10), S(20), slice(0, "roots", 4)), 0);
	cr_assert_eq(window__add(s, S(20), S(30), slice(1000, "mine", 2)), 0);
	cr_assert_eq(window__add(s, S(20), S(30), slice(1001, "theirs", 6)), 0);

	cr_assert_eq(window__query(s, 0, UINT64_MAX, false, 1000, mine, &from), 0);
	cr_expect_eq(calltree__total(mine), 5);
	cr_expect_eq(total_of(mine, "roots", NULL) + total_of(mine, "theirs", NULL), 0);
	cr_expect_eq(total_of(mine, "app", &depth), 5);
	cr_expect_eq(depth, 0, "the uid frame was kept: app at depth %zu", depth);
	cr_expect_eq(total_of(mine, "uid:1000", NULL), 0);
	cr_expect_eq(from, S(0));

	/* Since 15 s: the slices ending after it, so [10, 20) too. */
	cr_assert_eq(window__query(s, S(15), UINT64_MAX, true, 0, all, &from), 0);
	cr_expect_eq(calltree__total(all), 12);
	cr_expect_eq(from, S(10));
	calltree__free(mine);
	calltree__free(all);
	window__free(s);
}

Test(store, reconfigure_shrinks_to_the_new_cap)
{
	struct window_opts o = {.window_s = 600, .cap_bytes = 1 << 20};
	struct window *s = window__new(&o);
	struct window_stats st;

	for (int i = 0; i < 8; i++)
		cr_assert_eq(window__add(s, S(10 * i), S(10 * i + 10), slice(0, "f", 1)), 0);
	o.cap_bytes = 1;
	window__configure(s, &o);
	window__stats(s, &st);
	cr_expect_eq(st.slices, 0);
	cr_expect_eq(st.dropped_slices, 8);
	window__free(s);
}

/* A client asking every second closes a slice each time: the short ones join while they fit
 * in one slice's time, so the slice count (and memory) stays that of the timer's slices. */
Test(store, slices_cut_short_by_queries_join_the_one_before)
{
	struct window_opts o = {.window_s = 600, .cap_bytes = 1 << 20};
	struct window *s = window__new(&o);
	struct calltree *out = calltree__new();
	struct window_stats st;

	for (int i = 0; i < 10; i++)
		cr_assert_eq(window__add(s, S(i), S(i + 1), slice(0, i % 2 ? "a" : "b", 3)), 0);
	cr_assert_eq(window__add(s, S(10), S(20), slice(0, "c", 5)), 0);
	window__stats(s, &st);
	cr_expect_eq(st.slices, 2);
	cr_expect_eq(st.merged_slices, 9);
	cr_expect_eq(st.samples, 35);
	cr_expect_eq(st.oldest_ns, S(0));
	cr_expect_eq(st.newest_ns, S(20));
	cr_assert_eq(window__query(s, 0, UINT64_MAX, true, 0, out, NULL), 0);
	cr_expect_eq(total_of(out, "a", NULL), 15);
	cr_expect_eq(total_of(out, "b", NULL), 15);
	cr_expect_eq(total_of(out, "c", NULL), 5);
	calltree__free(out);
	window__free(s);
}

struct seen_slices {
	uint64_t start[8], end[8], weight[8];
	size_t n;
};

static int note_slice(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t weight)
{
	struct seen_slices *v = ctx;

	v->start[v->n] = start_ns;
	v->end[v->n] = end_ns;
	v->weight[v->n++] = weight;
	return v->n == 8;
}

/* The web view's strip and brush: each slice's weight for one user, and a query bounded on
 * both sides (slices that overlap [since, until)). */
Test(store, slices_listed_with_their_weight_and_a_range_queried)
{
	struct window_opts o = {.window_s = 600, .cap_bytes = 1 << 20};
	struct window *s = window__new(&o);
	struct calltree *out = calltree__new();
	struct seen_slices v = {0};
	uint64_t from = 0;

	cr_assert_eq(window__add(s, S(0), S(10), slice(1000, "first", 3)), 0);
	cr_assert_eq(window__add(s, S(10), S(20), slice(0, "second", 4)), 0);
	cr_assert_eq(window__add(s, S(20), S(30), slice(1000, "third", 2)), 0);

	cr_assert_eq(window__for_each_slice(s, 0, false, 1000, note_slice, &v), 0);
	cr_assert_eq(v.n, 3);
	cr_expect_eq(v.weight[0], 3);
	cr_expect_eq(v.weight[1], 0, "another uid's samples counted for 1000");
	cr_expect_eq(v.weight[2], 2);
	cr_expect_eq(v.start[1], S(10));
	cr_expect_eq(v.end[1], S(20));
	v.n = 0;
	cr_assert_eq(window__for_each_slice(s, S(15), true, 0, note_slice, &v), 0);
	cr_assert_eq(v.n, 2);
	cr_expect_eq(v.weight[0], 4);
	cr_expect_eq(v.weight[1], 2);

	/* [10 s, 20 s): the middle slice only; its neighbours touch the bounds but are outside. */
	cr_assert_eq(window__query(s, S(10), S(20), true, 0, out, &from), 0);
	cr_expect_eq(calltree__total(out), 4);
	cr_expect_eq(total_of(out, "second", NULL), 4);
	cr_expect_eq(from, S(10));
	calltree__free(out);
	window__free(s);
}
