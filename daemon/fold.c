// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/fold.h"
#include "daemon/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/calltree.h"

/* comm + user + kernel frames, plus one placeholder. */
#define MAX_FRAMES (2 + 2 * XSPROF_MAX_STACK_DEPTH)
#define KSUFFIX	   "_[k]"

struct fold_ctx {
	struct symbolizer *sym;
	struct calltree *tree;
	struct fold_stats stats;
	bool uid_root; /* first frame "uid:N": the service filters by it */
	/* Kernel names with the suffix, built per frame; one buffer per frame slot. */
	char kbuf[XSPROF_MAX_STACK_DEPTH][160];
};

static bool unnamed(const char *name)
{
	/* "[bpf] prog" is a name: the frame is in a BPF program. */
	return (name[0] == '[' && strncmp(name, "[bpf] ", 6)) || strstr(name, "+0x");
}

static int fold_one(void *arg, const struct stack_entry *e)
{
	struct fold_ctx *c = arg;
	const char *frames[MAX_FRAMES];
	char comm[XSPROF_COMM_LEN + 1], uid[24];
	size_t n = 0;
	int err;

	if (c->uid_root) {
		snprintf(uid, sizeof(uid), "uid:%u", e->uid);
		frames[n++] = uid;
	}
	memcpy(comm, e->comm, XSPROF_COMM_LEN);
	comm[XSPROF_COMM_LEN] = '\0';
	frames[n++] = comm[0] ? comm : "[unknown comm]";

	if (e->flags & STACK_F_OVERFLOW) {
		frames[n++] = "[stack table full: raise --max-stacks]";
		return calltree__add(c->tree, frames, n, e->count);
	}

	if (e->user_err) {
		frames[n++] = "[user stack unreadable]";
		c->stats.missing_ustacks += e->count;
	}
	/* User frames arrive innermost first; the first is the interrupted pc, the rest return
	 * addresses, which point after their call: step back into it. */
	for (int i = e->nr_user - 1; i >= 0; i--) {
		uint64_t addr = e->user_ips[i] - (i > 0 ? 1 : 0);
		const char *name = symbolizer__user_gen(c->sym, e->tgid, e->gen, addr);

		c->stats.frames++;
		c->stats.unnamed_frames += unnamed(name);
		frames[n++] = name;
	}
	for (int i = e->nr_kernel - 1; i >= 0; i--) {
		uint64_t addr = e->kernel_ips[i] - (i > 0 ? 1 : 0);
		const char *name = symbolizer__kernel(c->sym, addr);

		c->stats.frames++;
		c->stats.unnamed_frames += unnamed(name);
		snprintf(c->kbuf[i], sizeof(c->kbuf[i]), "%s" KSUFFIX, name);
		frames[n++] = c->kbuf[i];
	}
	if (n == 1 + (size_t)c->uid_root)
		frames[n++] = e->kernel_err ? "[kernel stack unreadable]" : "[no frames]";
	err = calltree__add(c->tree, frames, n, e->count);
	/* The tree copied the names: the symbolizer may evict down to its cap now. */
	symbolizer__trim(c->sym);
	return err;
}

static int fold(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		bool uid_root, struct fold_stats *ret_stats)
{
	struct fold_ctx *c = calloc(1, sizeof(*c)); /* ~20 KiB of name buffers */
	int err;

	if (!c)
		return -ENOMEM;
	c->uid_root = uid_root;
	c->sym = sym;
	c->tree = tree;
	err = stack_table__for_each(st, fold_one, c);
	if (!err && ret_stats)
		*ret_stats = c->stats;
	free(c);
	return err;
}

int fold_stacks(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		struct fold_stats *ret_stats)
{
	return fold(st, sym, tree, false, ret_stats);
}

int fold_stacks_by_uid(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		       struct fold_stats *ret_stats)
{
	return fold(st, sym, tree, true, ret_stats);
}
