// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/stacks/fold.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/model/frame_sites.h"

/* uid + comm + the stack's own frames. */
#define MAX_FRAMES (2 + FOLD_MAX_FRAMES)
#define KSUFFIX	   "_[k]"

struct fold_ctx {
	struct symbolizer *sym;
	struct calltree *tree;
	struct fold_stats stats;
	bool uid_root;		 /* first frame "uid:N": the service filters by it */
	uint64_t scale;		 /* weight of one count (wall mode: a sample's period in us) */
	struct fold_procs procs; /* a frame above the process, the processes kept */
	struct fold_names names;
};

static bool unnamed(const char *name)
{
	/* "[bpf] prog" is a name: the frame is in a BPF program. */
	return (name[0] == '[' && strncmp(name, "[bpf] ", 6)) || strstr(name, "+0x");
}

void fold__note_user(struct symbolizer *sym, uint32_t tgid, uint32_t gen, uint64_t addr,
		     const char *frame, const struct symbolizer_frame *fr)
{
	struct frame_sites *fs = symbolizer__sites(sym);
	struct symbolizer_site where;
	struct frame_site site = {0};
	struct frame_map map = {0};
	char bid[2 * 64 + 1] = "";

	if (!fs || frame_sites__has(fs, frame) ||
	    symbolizer__user_site(sym, (pid_t)tgid, gen, addr, &where))
		return;
	for (size_t i = 0; i < where.build_id_len && i < 64; i++)
		snprintf(bid + 2 * i, 3, "%02x", where.build_id[i]);
	map = (struct frame_map){.path = where.path,
				 .build_id = bid,
				 .start = where.seg_start,
				 .limit = where.seg_end,
				 .offset = where.seg_off};
	site.addr = where.vaddr;
	if (fr && fr->name != frame) {
		site.function = fr->name;
		site.file = fr->file;
		site.line = fr->line;
		site.inlined = fr->inlined;
	}
	frame_sites__add(fs, frame, &site, &map);
}

/* A kernel frame: addresses of the [kernel.kallsyms] mapping. */
static void note_kernel(struct symbolizer *sym, uint64_t addr, const char *frame, const char *name)
{
	struct frame_sites *fs = symbolizer__sites(sym);
	struct frame_map map = {.path = FRAME_SITES_KERNEL, .start = addr, .limit = addr + 1};
	struct frame_site site = {.addr = addr, .system_name = name};

	if (fs && !unnamed(name) && !frame_sites__has(fs, frame))
		frame_sites__add(fs, frame, &site, &map);
}

/*
 * --debug-info: the frames at addr (inlined functions, then the one holding them), outermost
 * first, each "name (file:line)" where DWARF knows the line. Returns the new frame count.
 */
static size_t name_with_lines(struct symbolizer *sym, const struct stack_entry *e, uint64_t addr,
			      struct fold_names *buf, size_t n, struct fold_stats *st)
{
	struct symbolizer_frame fr[8];
	size_t used = n;
	int k = symbolizer__user_frames(sym, e->tgid, e->gen, addr, fr, 8);

	/* Slots in ubuf follow the user frames already placed (n counts them). */
	for (int j = k - 1; j >= 0; j--) {
		const char *file = fr[j].file ? strrchr(fr[j].file, '/') : NULL;
		size_t slot = used;

		if (slot >= FOLD_MAX_USER_FRAMES)
			break;
		st->frames++;
		st->unnamed_frames += unnamed(fr[j].name);
		if (!fr[j].file || !fr[j].line) {
			buf->frames[used++] = fr[j].name;
			fold__note_user(sym, e->tgid, e->gen, addr, fr[j].name, &fr[j]);
			continue;
		}
		snprintf(buf->ubuf[slot], sizeof(buf->ubuf[slot]), "%s (%s:%u)", fr[j].name,
			 file ? file + 1 : fr[j].file, fr[j].line);
		buf->frames[used++] = buf->ubuf[slot];
		fold__note_user(sym, e->tgid, e->gen, addr, buf->ubuf[slot], &fr[j]);
	}
	return used;
}

/*
 * Whether the sample came in through int3 (a uprobe's breakpoint being handled): the user pc is
 * then the breakpoint's address or the one after it (until the handler rewinds it), which names
 * the next function when the probed one is a single instruction (the loader's _dl_debug_state).
 */
static bool after_trap(struct symbolizer *sym, const struct stack_entry *e)
{
	int i = e->nr_kernel - 1;
	const char *entry = symbolizer__kernel(sym, e->kernel_ips[i] - (i > 0 ? 1 : 0));

	return !strcmp(entry, "asm_exc_int3");
}

const char *fold__end_mark(unsigned int end)
{
	static const char *const marks[XSPROF_END_REASONS] = {
		[XSPROF_END_FP_BROKEN] = "[truncated: frame pointer chain broken]",
		[XSPROF_END_NO_TABLE] = "[truncated: no unwind table]",
		[XSPROF_END_NO_RULE] = "[truncated: no unwind rule]",
		[XSPROF_END_UNREADABLE] = "[truncated: stack unreadable]",
		[XSPROF_END_BAD_CFA] = "[truncated: bad frame address]",
		[XSPROF_END_DEPTH] = "[truncated: depth cap]",
		[XSPROF_END_COPY] = "[truncated: end of stack copy]",
		[XSPROF_END_JIT] = "[truncated: JIT code without frame pointers]",
		[XSPROF_END_EXITING] = "[truncated: process exiting]",
	};

	return end < XSPROF_END_REASONS ? marks[end] : NULL;
}

unsigned int fold__user_end(int nu, int nr_user, unsigned int end)
{
	if (nu <= 0)
		return XSPROF_END_NONE;
	return nu < nr_user ? XSPROF_END_FP_BROKEN : end;
}

void fold__name_stack(struct symbolizer *sym, const struct stack_entry *e, struct fold_names *buf,
		      struct fold_stats *stats)
{
	unsigned int end = STACK_END_OF(e->flags);
	struct fold_stats st = {};
	size_t n = 0;
	bool trap;
	int nu;

	if (e->flags & STACK_F_OVERFLOW) {
		buf->frames[n++] = "[stack table full: raise --max-stacks]";
		goto out;
	}
	if (e->user_err) {
		buf->frames[n++] = "[user stack unreadable]";
		st.missing_ustacks += e->count;
	}
	/* A process outside our pid namespace: its pid means another process (or none) in our
	 * /proc, so its user frames cannot be named; keep them counted under one marker. */
	if ((e->flags & XSPROF_SAMPLE_F_FOREIGN) && e->nr_user) {
		buf->frames[n++] = "[other pid namespace]";
		st.frames += e->nr_user;
		st.unnamed_frames += e->nr_user;
	}
	/* User frames arrive innermost first; the first is the interrupted pc, the rest return
	 * addresses, which point after their call: step back into it. */
	nu = (e->flags & XSPROF_SAMPLE_F_FOREIGN)
		     ? 0
		     : (int)symbolizer__user_depth(sym, e->tgid, e->gen, e->user_ips, e->nr_user);
	trap = e->nr_kernel && nu && after_trap(sym, e);
	/* A walk that stopped before the root says so, in one frame where the root would be
	 * (frames the symbolizer cut past a broken frame-pointer chain too). */
	end = fold__user_end(nu, e->nr_user, end);
	if (fold__end_mark(end)) {
		buf->frames[n++] = fold__end_mark(end);
		st.truncated[end] += e->count;
	}
	for (int i = nu - 1; i >= 0; i--) {
		uint64_t addr = e->user_ips[i] - (i > 0 ? 1 : 0);

		if (i == 0 && trap && unnamed(symbolizer__user_gen(sym, e->tgid, e->gen, addr)))
			addr--;
		const char *name;

		if (symbolizer__debug_info(sym)) {
			n = name_with_lines(sym, e, addr, buf, n, &st);
			continue;
		}
		name = symbolizer__user_gen(sym, e->tgid, e->gen, addr);
		st.frames++;
		st.unnamed_frames += unnamed(name);
		buf->frames[n++] = name;
		fold__note_user(sym, e->tgid, e->gen, addr, name, NULL);
	}
	for (int i = e->nr_kernel - 1; i >= 0; i--) {
		uint64_t addr = e->kernel_ips[i] - (i > 0 ? 1 : 0);
		const char *name = symbolizer__kernel(sym, addr);

		st.frames++;
		st.unnamed_frames += unnamed(name);
		snprintf(buf->kbuf[i], sizeof(buf->kbuf[i]), "%s" KSUFFIX, name);
		buf->frames[n++] = buf->kbuf[i];
		note_kernel(sym, addr, buf->kbuf[i], name);
	}
	if (!n)
		buf->frames[n++] = e->kernel_err ? "[kernel stack unreadable]" : "[no frames]";
out:
	buf->n = n;
	if (stats) {
		stats->weight += e->count;
		for (unsigned int i = 0; i < XSPROF_END_REASONS; i++)
			stats->truncated[i] += st.truncated[i];
		stats->frames += st.frames;
		stats->unnamed_frames += st.unnamed_frames;
		stats->missing_ustacks += st.missing_ustacks;
	}
}

static int fold_one(void *arg, const struct stack_entry *e)
{
	struct fold_ctx *c = arg;
	const char *frames[MAX_FRAMES];
	char comm[XSPROF_COMM_LEN + 1], uid[24];
	size_t n = 0;
	int err;

	if (c->procs.accept && !c->procs.accept(c->procs.accept_ctx, e->tgid))
		return 0; /* a process the filter leaves out (--job, --rank) */
	if (!e->count)
		return 0; /* kept for the timeline's waits only (recording__woken) */
	if (c->uid_root) {
		snprintf(uid, sizeof(uid), "uid:%u", e->uid);
		frames[n++] = uid;
	}
	if (c->procs.root)
		frames[n++] = c->procs.root(c->procs.root_ctx, e->tgid);
	memcpy(comm, e->comm, XSPROF_COMM_LEN);
	comm[XSPROF_COMM_LEN] = '\0';
	frames[n++] = comm[0] ? comm : "[unknown comm]";

	fold__name_stack(c->sym, e, &c->names, &c->stats);
	memcpy(frames + n, c->names.frames, c->names.n * sizeof(*frames));
	n += c->names.n;
	err = calltree__add(c->tree, frames, n, e->count * c->scale);
	/* The tree copied the names: the symbolizer may evict down to its cap now. */
	symbolizer__trim(c->sym);
	return err;
}

static int fold(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		bool uid_root, uint64_t scale, const struct fold_procs *procs,
		struct fold_stats *ret_stats)
{
	struct fold_ctx *c = calloc(1, sizeof(*c)); /* ~20 KiB of name buffers */
	int err;

	if (!c)
		return -ENOMEM;
	if (procs)
		c->procs = *procs;
	c->uid_root = uid_root;
	c->scale = scale;
	c->sym = sym;
	c->tree = tree;
	symbolizer__batch_begin(sym);
	err = stack_table__for_each(st, fold_one, c);
	symbolizer__batch_end(sym);
	if (!err && ret_stats)
		*ret_stats = c->stats;
	free(c);
	return err;
}

int fold_stacks(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		struct fold_stats *ret_stats)
{
	return fold(st, sym, tree, false, 1, NULL, ret_stats);
}

int fold_stacks_scaled(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		       uint64_t scale, struct fold_stats *ret_stats)
{
	return fold(st, sym, tree, false, scale, NULL, ret_stats);
}

int fold_stacks_under(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		      uint64_t scale, bool uid_root, const struct fold_procs *procs,
		      struct fold_stats *ret_stats)
{
	return fold(st, sym, tree, uid_root, scale, procs, ret_stats);
}
