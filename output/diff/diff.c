// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/diff/diff.h"
#include "output/model/calltree.h"

#define MAX_FRAMES 4096 /* deeper stacks are malformed input, not a profile */

int diff__read_folded(FILE *f, struct calltree *t, size_t *ret_bad_line)
{
	const char **frames = malloc(MAX_FRAMES * sizeof(*frames));
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int err = 0;

	if (!f || !t)
		err = -EINVAL;
	else if (!frames)
		err = -ENOMEM;
	errno = 0;
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		char *sp, *end = NULL, *p;
		unsigned long long count;
		size_t n = 0;

		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len || line[0] == '#')
			continue;
		sp = strrchr(line, ' ');
		errno = 0;
		count = sp && sp[1] >= '0' && sp[1] <= '9' ? strtoull(sp + 1, &end, 10) : 0;
		if (!sp || sp == line || sp[1] < '0' || sp[1] > '9' || *end || errno) {
			err = -EINVAL;
			break;
		}
		*sp = 0;
		/* Empty frames are kept (as "[unknown]"), not skipped: stacks keep their depth. */
		for (p = line; p && n < MAX_FRAMES;) {
			char *semi = strchr(p, ';');

			if (semi)
				*semi = 0;
			frames[n++] = *p ? p : "[unknown]";
			p = semi ? semi + 1 : NULL;
		}
		if (p) {
			err = -EINVAL;
			break;
		}
		err = calltree__add(t, frames, n, count);
	}
	if (!err && ferror(f))
		err = errno ? -errno : -EIO;
	if (err == -EINVAL && ret_bad_line)
		*ret_bad_line = lineno;
	free(line);
	free(frames);
	return err;
}

/* ---- per-stack totals of `before`, by a hash of the path from the root */

struct pathmap {
	struct hashmap *index; /* path hash -> index in val + 1 */
	uint64_t *val;
	size_t n, cap;
};

static uint64_t path_step(uint64_t parent, const char *name)
{
	return hash_combine(parent, hash_str(name));
}

static int pathmap_put(struct pathmap *m, uint64_t key, uint64_t val)
{
	uintptr_t at;
	int err;

	if (!m->index && !(m->index = hashmap__new()))
		return -ENOMEM;
	at = (uintptr_t)hashmap__get(m->index, key, 0);
	if (!at) {
		err = vec_reserve(&m->val, &m->cap, m->n + 1);
		if (!err)
			err = hashmap__put(m->index, key, 0, (void *)(uintptr_t)(m->n + 1));
		if (err)
			return err;
		m->val[m->n] = 0;
		at = ++m->n;
	}
	m->val[at - 1] += val;
	return 0;
}

static uint64_t pathmap_get(const struct pathmap *m, uint64_t key)
{
	uintptr_t at = m->index ? (uintptr_t)hashmap__get(m->index, key, 0) : 0;

	return at ? m->val[at - 1] : 0;
}

/* ---- per-function shares */

/* Raw weights of one function; seen: the last stack counted in its total. */
struct fn_weights {
	uint64_t self[2], total[2], seen;
};

struct fnmap {
	struct diff_row *rows;
	struct fn_weights *w; /* by row, until the rows are sorted */
	size_t n, rows_cap, w_cap;
	struct keymap *index; /* name -> row + 1 */
};

static int fn_index(struct fnmap *m, const char *name, size_t *ret)
{
	size_t len = strlen(name);
	uintptr_t at;
	int err;

	if (!m->index && !(m->index = keymap__new()))
		return -ENOMEM;
	at = (uintptr_t)keymap__get(m->index, name, len);
	if (!at) {
		err = vec_reserve(&m->rows, &m->rows_cap, m->n + 1);
		if (!err)
			err = vec_reserve(&m->w, &m->w_cap, m->n + 1);
		if (!err)
			err = keymap__put(m->index, name, len, (void *)(uintptr_t)(m->n + 1), NULL);
		if (err)
			return err;
		m->rows[m->n] = (struct diff_row){.name = name};
		m->w[m->n] = (struct fn_weights){0};
		at = ++m->n;
	}
	*ret = at - 1;
	return 0;
}

struct diff {
	const struct calltree *before, *after;
	uint64_t tot[2];
	struct pathmap before_paths;
	struct fnmap fns;
	double max_abs; /* largest |change| of a stack's share, for the colour scale */
};

struct scan {
	struct diff *d;
	int side;
	const char **path;
	uint64_t *hash; /* per depth */
	uint64_t node;	/* serial of the node visited */
	int err;
};

static int scan_visit(const struct calltree_frame *fr, void *data)
{
	struct scan *s = data;
	struct fnmap *m = &s->d->fns;
	size_t i, idx;
	int err;

	s->path[fr->depth] = fr->name;
	s->hash[fr->depth] = path_step(fr->depth ? s->hash[fr->depth - 1] : 0, fr->name);
	s->node++;
	if (s->side == 0) {
		err = pathmap_put(&s->d->before_paths, s->hash[fr->depth], fr->total);
		if (err)
			return err;
	} else {
		double share0 =
			s->d->tot[0]
				? 100.0 * pathmap_get(&s->d->before_paths, s->hash[fr->depth]) /
					  s->d->tot[0]
				: 0;
		double delta = 100.0 * fr->total / s->d->tot[1] - share0;

		if (fabs(delta) > s->d->max_abs)
			s->d->max_abs = fabs(delta);
	}
	if (!fr->self)
		return 0;
	/* Self to the leaf; total once to every function on the stack, recursion or not. */
	for (i = 0; i <= fr->depth; i++) {
		err = fn_index(m, s->path[i], &idx);
		if (err)
			return err;
		if (i == fr->depth)
			m->w[idx].self[s->side] += fr->self;
		if (m->w[idx].seen != s->node) {
			m->w[idx].seen = s->node;
			m->w[idx].total[s->side] += fr->self;
		}
	}
	return 0;
}

static int scan_tree(struct diff *d, int side, uint64_t *serial)
{
	const struct calltree *t = side ? d->after : d->before;
	struct scan s = {.d = d, .side = side, .node = *serial};
	size_t depth = calltree__max_depth(t);
	int err;

	if (!depth)
		return 0;
	s.path = calloc(depth, sizeof(*s.path));
	s.hash = calloc(depth, sizeof(*s.hash));
	err = s.path && s.hash ? calltree__walk(t, scan_visit, &s) : -ENOMEM;
	free(s.path);
	free(s.hash);
	*serial = s.node;
	return err;
}

static double change(const struct diff_row *r)
{
	double ds = fabs(r->self_after - r->self_before),
	       dt = fabs(r->total_after - r->total_before);

	return ds > dt ? ds : dt;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	double cx = change(x), cy = change(y);

	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

void diff__free(struct diff *d)
{
	if (!d)
		return;
	hashmap__free(d->before_paths.index);
	free(d->before_paths.val);
	free(d->fns.rows);
	free(d->fns.w);
	keymap__free(d->fns.index);
	free(d);
}

struct diff *diff__new(const struct calltree *before, const struct calltree *after)
{
	struct diff *d;
	uint64_t serial = 0;
	size_t i;
	int err;

	if (!before || !after) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->before = before;
	d->after = after;
	d->tot[0] = calltree__total(before);
	d->tot[1] = calltree__total(after);
	err = scan_tree(d, 0, &serial);
	if (!err)
		err = scan_tree(d, 1, &serial);
	if (err) {
		diff__free(d);
		errno = -err;
		return NULL;
	}
	for (i = 0; i < d->fns.n; i++) {
		struct diff_row *r = &d->fns.rows[i];
		double t0 = d->tot[0] ? 100.0 / d->tot[0] : 0,
		       t1 = d->tot[1] ? 100.0 / d->tot[1] : 0;

		r->self_before = d->fns.w[i].self[0] * t0;
		r->self_after = d->fns.w[i].self[1] * t1;
		r->total_before = d->fns.w[i].total[0] * t0;
		r->total_after = d->fns.w[i].total[1] * t1;
	}
	/* Rows are sorted once; the index and the weights (by row) are not used after this. */
	qsort(d->fns.rows, d->fns.n, sizeof(*d->fns.rows), cmp_rows);
	return d;
}

const struct diff_row *diff__rows(const struct diff *d, size_t *ret_n)
{
	*ret_n = d ? d->fns.n : 0;
	return d ? d->fns.rows : NULL;
}

double diff__max_growth(const struct diff *d, const char **ret_name)
{
	double best = 0;
	size_t i;

	if (ret_name)
		*ret_name = NULL;
	for (i = 0; d && i < d->fns.n; i++) {
		const struct diff_row *r = &d->fns.rows[i];
		double g = r->self_after - r->self_before, gt = r->total_after - r->total_before;

		if (gt > g)
			g = gt;
		if (g > best) {
			best = g;
			if (ret_name)
				*ret_name = r->name;
		}
	}
	return best;
}

int diff__write_table(const struct diff *d, FILE *f, size_t top)
{
	size_t i, n = d ? d->fns.n : 0;

	if (!d || !f)
		return -EINVAL;
	if (top && top < n)
		n = top;
	errno = 0;
	fprintf(f, "Share of all samples, before -> after (change in percentage points), the "
		   "largest changes first:\n");
	fprintf(f, "%25s   %25s   %s\n", "self", "total", "function");
	for (i = 0; i < n; i++) {
		const struct diff_row *r = &d->fns.rows[i];

		fprintf(f, "%6.2f%% -> %6.2f%% %+7.2f   %6.2f%% -> %6.2f%% %+7.2f   %s\n",
			r->self_before, r->self_after, r->self_after - r->self_before,
			r->total_before, r->total_after, r->total_after - r->total_before, r->name);
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

const struct calltree *diff__after(const struct diff *d)
{
	return d->after;
}

double diff__max_change(const struct diff *d)
{
	return d->max_abs;
}

uint64_t diff__path_step(uint64_t parent, const char *name)
{
	return path_step(parent, name);
}

double diff__before_share(const struct diff *d, uint64_t path)
{
	return d->tot[0] ? 100.0 * pathmap_get(&d->before_paths, path) / d->tot[0] : 0;
}

double diff__after_share(const struct diff *d, uint64_t weight)
{
	return 100.0 * weight / d->tot[1];
}
