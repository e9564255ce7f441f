// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/vec.h"
#include "daemon/session/report_window.h"
#include "daemon/session/window.h"
#include "output/gpu_report/gpu_report.h"

struct kept_report {
	uint64_t start_ns, end_ns;
	uint32_t uid;
	bool sole;
	struct gpu_report *report;
	size_t bytes;
};

struct report_window {
	struct window_opts opts;
	struct kept_report *v; /* oldest first (by slice start) */
	size_t n, cap;
	struct report_window_stats st;
};

struct report_window *report_window__new(const struct window_opts *opts)
{
	struct report_window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->opts = *opts;
	return w;
}

static void drop_at(struct report_window *w, size_t i, bool evicted)
{
	struct kept_report *o = &w->v[i];

	if (evicted) {
		w->st.dropped++;
		w->st.dropped_bytes += o->bytes;
	} else {
		w->st.expired++;
	}
	w->st.bytes -= o->bytes;
	gpu_report__free(o->report);
	memmove(&w->v[i], &w->v[i + 1], (w->n - i - 1) * sizeof(*w->v));
	w->n--;
}

static void drop_oldest(struct report_window *w, bool evicted)
{
	drop_at(w, 0, evicted);
}

void report_window__free(struct report_window *w)
{
	if (!w)
		return;
	while (w->n)
		drop_oldest(w, false);
	free(w->v);
	free(w);
}

void report_window__configure(struct report_window *w, const struct window_opts *opts)
{
	w->opts = *opts;
	while (w->n && w->st.bytes > w->opts.cap_bytes)
		drop_oldest(w, true);
}

/* A slice cut short (a query closes the open one) joins the user's report before it while
 * both fit in one slice's time: a client asking every second does not multiply them. */
static bool merged_into_last(struct report_window *w, uint64_t end_ns, uint32_t uid, bool sole,
			     struct gpu_report *r)
{
	for (size_t i = w->n; i-- > 0;) {
		struct kept_report *k = &w->v[i];
		size_t nb;

		/* A sole report stands for every user's: only with another sole one. */
		if (k->uid != uid || k->sole != sole)
			continue;
		if (end_ns - k->start_ns > WINDOW_MERGE_NS)
			return false;
		/* Half merged (out of memory): it goes, r is kept on its own. */
		if (gpu_report__merge(k->report, r)) {
			drop_at(w, i, true);
			return false;
		}
		nb = gpu_report__bytes(k->report);
		w->st.bytes = w->st.bytes - k->bytes + nb;
		k->bytes = nb;
		k->end_ns = end_ns;
		w->st.merged++;
		gpu_report__free(r);
		while (w->n > 1 && w->st.bytes > w->opts.cap_bytes)
			drop_oldest(w, true);
		return true;
	}
	return false;
}

int report_window__add(struct report_window *w, uint64_t start_ns, uint64_t end_ns, uint32_t uid,
		       bool sole, struct gpu_report *r)
{
	size_t bytes = gpu_report__bytes(r);

	if (bytes > w->opts.cap_bytes) {
		w->st.dropped++;
		w->st.dropped_bytes += bytes;
		gpu_report__free(r);
		return -E2BIG;
	}
	if (merged_into_last(w, end_ns, uid, sole, r))
		return 0;
	while (w->n && w->st.bytes + bytes > w->opts.cap_bytes)
		drop_oldest(w, true);
	if (vec_reserve(&w->v, &w->cap, w->n + 1)) {
		w->st.dropped++;
		w->st.dropped_bytes += bytes;
		gpu_report__free(r);
		return -ENOMEM;
	}
	w->v[w->n++] = (struct kept_report){start_ns, end_ns, uid, sole, r, bytes};
	w->st.bytes += bytes;
	return 0;
}

void report_window__expire(struct report_window *w, uint64_t now_ns)
{
	uint64_t window = (uint64_t)w->opts.window_s * 1000000000ull;

	while (w->n && w->v[0].end_ns + window < now_ns)
		drop_oldest(w, false);
}

int report_window__query(const struct report_window *w, uint64_t since_ns, uint64_t until_ns,
			 bool all_uids, uid_t uid, struct gpu_report *into, uint64_t *ret_from_ns)
{
	uint64_t from = 0;
	int err = 0;

	for (size_t i = 0; i < w->n && !err; i++) {
		const struct kept_report *k = &w->v[i];

		if (k->end_ns <= since_ns || k->start_ns >= until_ns ||
		    (all_uids ? !k->sole && k->uid != REPORT_WINDOW_ALL : k->uid != (uint32_t)uid))
			continue;
		if (!from)
			from = k->start_ns;
		err = gpu_report__merge(into, k->report);
	}
	if (!err && ret_from_ns)
		*ret_from_ns = from;
	return err;
}

void report_window__stats(const struct report_window *w, struct report_window_stats *ret)
{
	*ret = w->st;
	ret->reports = w->n;
	ret->cap_bytes = w->opts.cap_bytes;
}
