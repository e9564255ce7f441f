// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/sort.h"
#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_fold.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/stacks/fold.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"

/* comm, the frames, two placeholders, the leaf. */
#define MAX_FRAMES (XSPROF_MAX_STACK_DEPTH + 4)

struct fold_ctx {
	struct symbolizer *sym;
	struct calltree *tree;
	uint32_t *usdt_tgids; /* sorted: processes that have xsprof:launch records */
	size_t nr_tgids;
	fold_accept_fn accept; /* the processes kept (NULL: all) */
	void *accept_ctx;
	struct launch_fold_stats stats;
};

static int collect_tgid(void *arg, const struct launch_stack *s)
{
	struct fold_ctx *c = arg;
	uint32_t *n;

	if (s->kind != LAUNCH_USDT || (c->nr_tgids && c->usdt_tgids[c->nr_tgids - 1] == s->tgid))
		return 0;
	n = realloc(c->usdt_tgids, (c->nr_tgids + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->usdt_tgids = n;
	c->usdt_tgids[c->nr_tgids++] = s->tgid;
	return 0;
}

static bool unnamed(const char *name)
{
	return name[0] == '[' || strstr(name, "+0x");
}

size_t launch_fold__name_stack(struct symbolizer *sym, const struct launch_stack *s,
			       const char **frames, struct launch_fold_stats *stats)
{
	const char *mark;
	size_t n = 0;
	int nu;

	if (s->flags & LAUNCH_STACK_F_OVERFLOW)
		frames[n++] = "[launch stack table full: raise --max-stacks]";
	if (s->user_err) {
		frames[n++] = "[user stack unreadable]";
		if (stats)
			stats->missing_ustacks += s->count;
	}
	/* Innermost first. Return addresses point after their call: step back into it. An
	 * untrimmed USDT stack starts at the probe site itself, which is not one. */
	nu = (int)symbolizer__user_depth(sym, s->tgid, 0, s->ips, s->nr_user);
	/* A walk that stopped before the root says so where the root would be (fold.c). */
	mark = fold__end_mark(fold__user_end(nu, s->nr_user, LAUNCH_STACK_END_OF(s->flags)));
	if (mark)
		frames[n++] = mark;
	for (int i = nu - 1; i >= 0; i--) {
		bool is_pc = (s->flags & LAUNCH_STACK_F_PC_FIRST) && i == 0;
		uint64_t addr = s->ips[i] - (is_pc ? 0 : 1);
		const char *name = symbolizer__user(sym, s->tgid, addr);

		if (stats) {
			stats->frames++;
			stats->unnamed_frames += unnamed(name);
		}
		frames[n++] = name;
		fold__note_user(sym, s->tgid, 0, addr, name, NULL);
	}
	return n;
}

static int fold_one(void *arg, const struct launch_stack *s)
{
	struct fold_ctx *c = arg;
	const char *frames[MAX_FRAMES], *api;
	char comm[XSPROF_COMM_LEN + 1], leaf[96];
	size_t n = 0;

	if (c->accept && !c->accept(c->accept_ctx, s->tgid))
		return 0;
	/* A process whose injection library fired xsprof:launch reported each launch there; an
	 * entry uprobe on the same call (before the probes were trimmed) is the same launch. */
	if (s->kind == LAUNCH_UPROBE && cuda_api__usdt_covers(s->api) &&
	    bsearch(&s->tgid, c->usdt_tgids, c->nr_tgids, sizeof(uint32_t), cmp_u32)) {
		c->stats.uprobe_left_out += s->count;
		return 0;
	}
	memcpy(comm, s->comm, XSPROF_COMM_LEN);
	comm[XSPROF_COMM_LEN] = '\0';
	frames[n++] = comm[0] ? comm : "[unknown comm]";
	n += launch_fold__name_stack(c->sym, s, frames + n, &c->stats);
	if (s->kind == LAUNCH_UPROBE) {
		api = cuda_api__name(s->api);
		if (api)
			snprintf(leaf, sizeof(leaf), "[cuda] %s", api);
		else
			snprintf(leaf, sizeof(leaf), "[cuda] api %u", s->api);
	} else {
		api = cupti_api__name(s->api);
		if (api)
			snprintf(leaf, sizeof(leaf), "[cuda] %s", api);
		else
			snprintf(leaf, sizeof(leaf), "[cuda] cupti %s cbid %u",
				 s->api >> 16 == 1 ? "driver" : "runtime", s->api & 0xffff);
	}
	frames[n++] = leaf;
	c->stats.launches += s->count;
	return calltree__add(c->tree, frames, n, s->count);
}

int launch_fold(const struct launch_store *ls, struct symbolizer *sym, struct calltree *tree,
		fold_accept_fn accept, void *accept_ctx, struct launch_fold_stats *ret_stats)
{
	struct fold_ctx c = {.sym = sym, .tree = tree, .accept = accept, .accept_ctx = accept_ctx};
	int err;

	err = launch_store__for_each(ls, collect_tgid, &c);
	if (!err) {
		qsort(c.usdt_tgids, c.nr_tgids, sizeof(uint32_t), cmp_u32);
		err = launch_store__for_each(ls, fold_one, &c);
	}
	if (!err && ret_stats)
		*ret_stats = c.stats;
	free(c.usdt_tgids);
	return err;
}
