// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/vec.h"
#include "daemon/session/window.h"
#include "output/model/calltree.h"

/*
 * Per node: the trie node, its slot in the parent's child index and its share of interned
 * names, measured at about this on 64-bit builds. An estimate, kept deliberately high.
 */
#define BYTES_PER_NODE 128
#define MAX_DEPTH      (4 + 2 * XSPROF_MAX_STACK_DEPTH)

struct slice {
	uint64_t start_ns, end_ns;
	struct calltree *tree;
	size_t bytes;
};

struct window {
	struct window_opts opts;
	/* The live slices, oldest first: slices[0..n) within base[0..cap). Dropping the oldest
	 * moves slices on (a day's window drops one a slice: no memmove of all the others). */
	struct slice *base, *slices;
	size_t n, cap;
	struct window_stats st;
};

static size_t tree_bytes(const struct calltree *t)
{
	return calltree__node_count(t) * BYTES_PER_NODE + 256;
}

struct window *window__new(const struct window_opts *opts)
{
	struct window *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->opts = *opts;
	return s;
}

static void drop_oldest(struct window *s, bool evicted)
{
	struct slice *o = &s->slices[0];
	uint64_t samples = calltree__total(o->tree);

	if (evicted) {
		s->st.dropped_slices++;
		s->st.dropped_samples += samples;
	} else {
		s->st.expired_slices++;
	}
	s->st.bytes -= o->bytes;
	s->st.samples -= samples;
	calltree__free(o->tree);
	s->slices++;
	s->n--;
}

void window__free(struct window *s)
{
	if (!s)
		return;
	while (s->n)
		drop_oldest(s, false);
	free(s->base);
	free(s);
}

void window__configure(struct window *s, const struct window_opts *opts)
{
	s->opts = *opts;
	while (s->n && s->st.bytes > s->opts.cap_bytes)
		drop_oldest(s, true);
}

/* Room for one slice more at the end: the dropped ones' room first once they are at least half
 * (so each move is paid for by as many drops), else a bigger array. 0 or -ENOMEM. */
static int make_room(struct window *s)
{
	size_t head = s->base ? (size_t)(s->slices - s->base) : 0;

	if (head + s->n < s->cap)
		return 0;
	if (head && head >= s->n) {
		memmove(s->base, s->slices, s->n * sizeof(*s->slices));
		s->slices = s->base;
		return 0;
	}
	if (vec_reserve(&s->base, &s->cap, head + s->n + 1))
		return -ENOMEM;
	s->slices = s->base + head;
	return 0;
}

int window__add(struct window *s, uint64_t start_ns, uint64_t end_ns, struct calltree *tree)
{
	size_t bytes = tree_bytes(tree);
	uint64_t samples = calltree__total(tree);

	if (bytes > s->opts.cap_bytes) {
		s->st.dropped_slices++;
		s->st.dropped_samples += samples;
		calltree__free(tree);
		return -E2BIG;
	}
	/* A slice cut short (a query closes the open one) joins the one before while both fit
	 * in one slice's time: a client asking every second does not multiply the slices. */
	if (s->n && end_ns - s->slices[s->n - 1].start_ns <= WINDOW_MERGE_NS) {
		struct slice *last = &s->slices[s->n - 1];

		if (!calltree__add_scaled(last->tree, tree, 1, 1)) {
			size_t nb = tree_bytes(last->tree);

			s->st.bytes = s->st.bytes - last->bytes + nb;
			last->bytes = nb;
			last->end_ns = end_ns;
			s->st.samples += samples;
			s->st.merged_slices++;
			calltree__free(tree);
			while (s->n > 1 && s->st.bytes > s->opts.cap_bytes)
				drop_oldest(s, true);
			return 0;
		}
	}
	while (s->n && s->st.bytes + bytes > s->opts.cap_bytes)
		drop_oldest(s, true);
	if (make_room(s)) {
		s->st.dropped_slices++;
		s->st.dropped_samples += samples;
		calltree__free(tree);
		return -ENOMEM;
	}
	s->slices[s->n++] = (struct slice){start_ns, end_ns, tree, bytes};
	s->st.bytes += bytes;
	s->st.samples += samples;
	return 0;
}

void window__expire(struct window *s, uint64_t now_ns)
{
	uint64_t window = (uint64_t)s->opts.window_s * 1000000000ull;

	while (s->n && s->slices[0].end_ns + window < now_ns)
		drop_oldest(s, false);
}

struct merge_ctx {
	struct calltree *out;
	const char *path[MAX_DEPTH];
	char want[24];
	bool all, keep;
	int err;
};

static int merge_visit(const struct calltree_frame *f, void *arg)
{
	struct merge_ctx *m = arg;

	if (f->depth == 0) {
		m->keep = m->all || !strcmp(f->name, m->want);
		return 0;
	}
	if (!m->keep || f->depth > MAX_DEPTH)
		return 0;
	m->path[f->depth - 1] = f->name;
	if (f->self) {
		m->err = calltree__add(m->out, m->path, f->depth, f->self);
		if (m->err)
			return m->err;
	}
	return 0;
}

int window__query(const struct window *s, uint64_t since_ns, uint64_t until_ns, bool all_uids,
		  uid_t uid, struct calltree *out, uint64_t *ret_from_ns)
{
	struct merge_ctx *m = calloc(1, sizeof(*m));
	uint64_t from = 0;
	bool any = false;
	int err = 0;

	if (!m)
		return -ENOMEM;
	m->out = out;
	m->all = all_uids;
	snprintf(m->want, sizeof(m->want), "uid:%u", (unsigned int)uid);
	for (size_t i = 0; i < s->n && !err; i++) {
		if (s->slices[i].end_ns <= since_ns || s->slices[i].start_ns >= until_ns)
			continue;
		if (!any)
			from = s->slices[i].start_ns;
		any = true;
		err = calltree__walk(s->slices[i].tree, merge_visit, m);
	}
	free(m);
	if (!err && ret_from_ns)
		*ret_from_ns = from;
	return err;
}

struct weigh_ctx {
	char want[24];
	bool keep;
	uint64_t weight;
};

static int weigh_visit(const struct calltree_frame *f, void *arg)
{
	struct weigh_ctx *w = arg;

	if (f->depth == 0)
		w->keep = !strcmp(f->name, w->want);
	else if (w->keep)
		w->weight += f->self;
	return 0;
}

int window__for_each_slice(const struct window *s, uint64_t since_ns, bool all_uids, uid_t uid,
			   window_slice_fn fn, void *ctx)
{
	struct weigh_ctx w;
	int err = 0;

	snprintf(w.want, sizeof(w.want), "uid:%u", (unsigned int)uid);
	for (size_t i = 0; i < s->n && !err; i++) {
		const struct slice *sl = &s->slices[i];

		if (sl->end_ns <= since_ns)
			continue;
		w.keep = false;
		w.weight = 0;
		if (all_uids)
			w.weight = calltree__total(sl->tree);
		else
			calltree__walk(sl->tree, weigh_visit, &w);
		err = fn(ctx, sl->start_ns, sl->end_ns, w.weight);
	}
	return err;
}

void window__stats(const struct window *s, struct window_stats *ret)
{
	*ret = s->st;
	ret->slices = s->n;
	ret->cap_bytes = s->opts.cap_bytes;
	ret->oldest_ns = s->n ? s->slices[0].start_ns : 0;
	ret->newest_ns = s->n ? s->slices[s->n - 1].end_ns : 0;
}
