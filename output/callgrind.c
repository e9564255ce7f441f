// SPDX-License-Identifier: Apache-2.0
/*
 * The callgrind format (output/callgrind.h) from a call tree. A frame "name (file:line)" is
 * function name of file at line; any other frame is a function of file "???" at line 0.
 * Costs: a stack's weight is the self cost of its leaf, at the leaf's line, and the inclusive
 * cost of each call on its way (caller at its line, to the callee at its line). Readers take a
 * called function's inclusive cost as the sum of the calls into it (callgrind_annotate
 * --inclusive=yes, KCachegrind), so with recursion a stack's calls into a function are counted
 * at its outermost place only: each function gets each stack's weight once. GPU leaves
 * ("[gpu] ...") are costs of a second event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/callgrind.h"
#include "output/model/calltree.h"
#include "output/output_meta.h"

#define NO_FILE "???"
#define EVENTS	2 /* the CPU side (samples or us), GPU time under its launching stacks */

/* A frame name, parsed once (keyed by its interned pointer). */
struct cg_name {
	uint32_t fn;   /* index into fns */
	uint32_t line; /* 0: none */
	bool gpu;
};

struct cg_fn {
	const char *name; /* owned */
	size_t name_len;
	uint32_t file;			 /* index into files */
	uint32_t on_path;		 /* times it is on the current stack (recursion) */
	uint32_t first_self, first_call; /* chains into selfs, calls (index + 1; 0: none) */
};

struct cg_self {
	uint32_t line;
	uint32_t next;
	uint64_t cost[EVENTS];
};

struct cg_call {
	uint32_t line, callee, callee_line;
	uint32_t next;
	uint64_t calls;
	uint64_t cost[EVENTS];
};

struct cg_frame {
	const struct cg_name *n;
	bool first; /* its function's outermost place on the stack */
};

struct cg {
	struct keymap *names; /* frame name pointer -> struct cg_name * */
	struct keymap *fn_of; /* "file\0name" -> fn index + 1 */
	struct keymap *file_of;
	char **files;
	size_t nr_files, cap_files;
	struct cg_fn *fns;
	size_t nr_fns, cap_fns;
	struct cg_self *selfs;
	size_t nr_selfs, cap_selfs;
	struct cg_call *calls;
	size_t nr_calls, cap_calls;
	struct keymap *self_of; /* (fn, line) -> index + 1 */
	struct keymap *call_of; /* (fn, line, callee, callee line) -> index + 1 */
	struct cg_frame path[CALLGRIND_MAX_DEPTH];
	size_t depth; /* frames on path */
	uint64_t total[EVENTS];
	uint64_t deep; /* stack ends past CALLGRIND_MAX_DEPTH: counted at their cut */
	int err;
};

/* "name (file:line)": the name's length, the file and its length, the line; false if not so. */
static bool split_site(const char *s, size_t *name_len, const char **file, size_t *file_len,
		       uint32_t *line)
{
	size_t n = strlen(s);
	const char *open, *colon;
	uint64_t v = 0;

	if (n < 6 || s[n - 1] != ')')
		return false;
	colon = s + n - 2;
	while (colon > s && *colon >= '0' && *colon <= '9')
		colon--;
	if (*colon != ':' || colon == s + n - 2)
		return false;
	for (const char *p = colon + 1; p < s + n - 1; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return false;
	}
	open = colon;
	while (open > s && !(open[0] == '(' && open[-1] == ' '))
		open--;
	if (open == s || open + 1 == colon)
		return false;
	*name_len = (size_t)(open - 1 - s);
	*file = open + 1;
	*file_len = (size_t)(colon - open - 1);
	*line = (uint32_t)v;
	return *name_len > 0;
}

static uint32_t file_id(struct cg *g, const char *file, size_t len)
{
	uintptr_t v = (uintptr_t)keymap__get(g->file_of, file, len);
	char *copy;

	if (v)
		return (uint32_t)(v - 1);
	if (vec_reserve(&g->files, &g->cap_files, g->nr_files + 1) ||
	    !(copy = strndup(file, len))) {
		g->err = -ENOMEM;
		return 0;
	}
	g->files[g->nr_files] = copy;
	if (keymap__put(g->file_of, file, len, (void *)(uintptr_t)(g->nr_files + 1), NULL)) {
		free(copy);
		g->err = -ENOMEM;
		return 0;
	}
	return (uint32_t)g->nr_files++;
}

static const struct cg_name *name_of(struct cg *g, const char *frame)
{
	struct cg_name *n = keymap__get(g->names, &frame, sizeof(frame));
	const char *file = NO_FILE;
	size_t name_len, file_len = strlen(NO_FILE);
	uint32_t line = 0, file_idx;
	char key[1024];
	uintptr_t v;

	if (n)
		return n;
	if (!split_site(frame, &name_len, &file, &file_len, &line)) {
		name_len = strlen(frame);
		file = NO_FILE;
		file_len = strlen(NO_FILE);
		line = 0;
	}
	file_idx = file_id(g, file, file_len);
	if (g->err)
		return NULL;
	/* A function is its name in its file. */
	if (name_len + file_len + 1 > sizeof(key))
		name_len = sizeof(key) - file_len - 1;
	memcpy(key, file, file_len);
	key[file_len] = '\0';
	memcpy(key + file_len + 1, frame, name_len);
	v = (uintptr_t)keymap__get(g->fn_of, key, file_len + 1 + name_len);
	if (!v) {
		char *copy;

		if (vec_reserve(&g->fns, &g->cap_fns, g->nr_fns + 1) ||
		    !(copy = strndup(frame, name_len)))
			goto nomem;
		g->fns[g->nr_fns] =
			(struct cg_fn){.name = copy, .name_len = name_len, .file = file_idx};
		if (keymap__put(g->fn_of, key, file_len + 1 + name_len,
				(void *)(uintptr_t)(g->nr_fns + 1), NULL)) {
			free(copy);
			goto nomem;
		}
		v = ++g->nr_fns;
	}
	n = malloc(sizeof(*n));
	if (!n)
		goto nomem;
	*n = (struct cg_name){
		.fn = (uint32_t)(v - 1), .line = line, .gpu = !strncmp(frame, "[gpu] ", 6)};
	if (keymap__put(g->names, &frame, sizeof(frame), n, NULL)) {
		free(n);
		goto nomem;
	}
	return n;
nomem:
	g->err = -ENOMEM;
	return NULL;
}

static void add_self(struct cg *g, const struct cg_name *n, int ev, uint64_t w)
{
	uint32_t key[2] = {n->fn, n->line};
	uintptr_t v = (uintptr_t)keymap__get(g->self_of, key, sizeof(key));

	if (!v) {
		if (vec_reserve(&g->selfs, &g->cap_selfs, g->nr_selfs + 1)) {
			g->err = -ENOMEM;
			return;
		}
		g->selfs[g->nr_selfs] =
			(struct cg_self){.line = n->line, .next = g->fns[n->fn].first_self};
		v = ++g->nr_selfs;
		if (keymap__put(g->self_of, key, sizeof(key), (void *)v, NULL)) {
			g->err = -ENOMEM;
			return;
		}
		g->fns[n->fn].first_self = (uint32_t)v;
	}
	g->selfs[v - 1].cost[ev] += w;
}

static void add_call(struct cg *g, const struct cg_name *from, const struct cg_name *to, int ev,
		     uint64_t w)
{
	uint32_t key[4] = {from->fn, from->line, to->fn, to->line};
	uintptr_t v = (uintptr_t)keymap__get(g->call_of, key, sizeof(key));

	if (!v) {
		if (vec_reserve(&g->calls, &g->cap_calls, g->nr_calls + 1)) {
			g->err = -ENOMEM;
			return;
		}
		g->calls[g->nr_calls] = (struct cg_call){.line = from->line,
							 .callee = to->fn,
							 .callee_line = to->line,
							 .next = g->fns[from->fn].first_call};
		v = ++g->nr_calls;
		if (keymap__put(g->call_of, key, sizeof(key), (void *)v, NULL)) {
			g->err = -ENOMEM;
			return;
		}
		g->fns[from->fn].first_call = (uint32_t)v;
	}
	g->calls[v - 1].calls++;
	g->calls[v - 1].cost[ev] += w;
}

static int visit(const struct calltree_frame *fr, void *ctx)
{
	struct cg *g = ctx;
	const struct cg_name *n;
	size_t d = fr->depth;
	int ev;

	/* Back up to this frame's parent. */
	while (g->depth > d && g->depth > 0) {
		g->depth--;
		if (g->depth < CALLGRIND_MAX_DEPTH)
			g->fns[g->path[g->depth].n->fn].on_path--;
	}
	if (d >= CALLGRIND_MAX_DEPTH) {
		/* Kept at the cut: its weight is its deepest kept frame's. */
		if (fr->self) {
			g->deep++;
			n = g->path[CALLGRIND_MAX_DEPTH - 1].n;
			add_self(g, n, n->gpu, fr->self);
			g->total[n->gpu] += fr->self;
		}
		g->depth = d + 1;
		return g->err;
	}
	n = name_of(g, fr->name);
	if (!n)
		return g->err;
	g->path[d] = (struct cg_frame){.n = n, .first = g->fns[n->fn].on_path == 0};
	g->fns[n->fn].on_path++;
	g->depth = d + 1;
	if (!fr->self)
		return 0;
	ev = n->gpu;
	g->total[ev] += fr->self;
	add_self(g, n, ev, fr->self);
	/* Each function on the stack gets the weight once, by the call into its outermost
	 * place. */
	for (size_t i = 0; i < d && !g->err; i++)
		if (g->path[i + 1].first)
			add_call(g, g->path[i].n, g->path[i + 1].n, ev, fr->self);
	return g->err;
}

/* "name" compressed: "(id) name" the first time, "(id)" after. */
static void put_id(FILE *f, const char *key, uint32_t id, const char *name, size_t len, bool *seen)
{
	if (seen[id]) {
		fprintf(f, "%s=(%" PRIu32 ")\n", key, id + 1);
		return;
	}
	seen[id] = true;
	fprintf(f, "%s=(%" PRIu32 ") ", key, id + 1);
	/* A name is one line: a newline in one would start a record. */
	for (size_t i = 0; i < len; i++)
		fputc(name[i] == '\n' || name[i] == '\r' ? ' ' : name[i], f);
	fputc('\n', f);
}

static void put_costs(FILE *f, uint32_t line, const uint64_t *cost, int events)
{
	fprintf(f, "%" PRIu32, line);
	for (int e = 0; e < events; e++)
		fprintf(f, " %" PRIu64, cost[e]);
	fputc('\n', f);
}

static void free_name(const void *key, size_t len, void *val, void *ctx)
{
	(void)key, (void)len, (void)ctx;
	free(val);
}

static void cg_free(struct cg *g)
{
	if (g->names)
		keymap__for_each(g->names, free_name, NULL);
	keymap__free(g->names);
	keymap__free(g->fn_of);
	keymap__free(g->file_of);
	keymap__free(g->self_of);
	keymap__free(g->call_of);
	for (size_t i = 0; i < g->nr_files; i++)
		free(g->files[i]);
	free(g->files);
	for (size_t i = 0; i < g->nr_fns; i++)
		free((char *)g->fns[i].name);
	free(g->fns);
	free(g->selfs);
	free(g->calls);
}

/* The CPU side's event: its name and what it counts. */
static void cpu_event(const struct output_meta *meta, const char **name, const char **desc)
{
	bool us = meta && meta->unit && !strcmp(meta->unit, "us");
	const char *mode = meta ? meta->cpu_mode : NULL;

	if (mode && !strcmp(mode, "offcpu")) {
		*name = "OffCPU_us";
		*desc = "time off the CPU (microseconds)";
	} else if (mode && !strcmp(mode, "wall")) {
		*name = "Wall_us";
		*desc = "wall time, on and off the CPU (microseconds)";
	} else if (us) {
		*name = "CPU_us";
		*desc = "CPU time (microseconds: samples times the period)";
	} else {
		*name = "Samples";
		*desc = "CPU samples";
	}
}

int callgrind__write(const struct calltree *t, FILE *f, const struct output_meta *meta)
{
	struct cg *g = calloc(1, sizeof(*g));
	const char *ev_name, *ev_desc;
	bool *file_seen = NULL, *fn_seen = NULL;
	int events, err;

	if (!g)
		return -ENOMEM;
	g->names = keymap__new();
	g->fn_of = keymap__new();
	g->file_of = keymap__new();
	g->self_of = keymap__new();
	g->call_of = keymap__new();
	err = g->names && g->fn_of && g->file_of && g->self_of && g->call_of ? 0 : -ENOMEM;
	if (!err)
		err = calltree__walk(t, visit, g);
	if (!err && g->err)
		err = g->err;
	if (!err) {
		file_seen = calloc(g->nr_files + 1, sizeof(*file_seen));
		fn_seen = calloc(g->nr_fns + 1, sizeof(*fn_seen));
		if (!file_seen || !fn_seen)
			err = -ENOMEM;
	}
	if (err)
		goto out;
	cpu_event(meta, &ev_name, &ev_desc);
	events = g->total[1] ? 2 : 1;
	fputs("# callgrind format\nversion: 1\ncreator: xsprof " XSPROF_VERSION "\n", f);
	fprintf(f, "cmd: %s\npart: 1\npositions: line\n",
		meta && meta->title ? meta->title : "xsprof profile");
	fprintf(f, "event: %s : %s\n", ev_name, ev_desc);
	if (events == 2)
		fprintf(f, "event: GPU_%s : GPU time under its launching stack (%s)\n",
			meta && meta->unit ? meta->unit : "samples",
			meta && meta->unit && !strcmp(meta->unit, "us")
				? "microseconds"
				: "the CPU samples it is worth");
	fprintf(f, "events: %s%s%s\n", ev_name, events == 2 ? " GPU_" : "",
		events == 2 ? (meta && meta->unit ? meta->unit : "samples") : "");
	fprintf(f, "summary: %" PRIu64, g->total[0]);
	if (events == 2)
		fprintf(f, " %" PRIu64, g->total[1]);
	fputs("\n", f);
	if (g->deep)
		fprintf(f, "# %" PRIu64 " stacks deeper than %d frames: cut there\n", g->deep,
			CALLGRIND_MAX_DEPTH);
	for (size_t i = 0; i < g->nr_fns; i++) {
		const struct cg_fn *fn = &g->fns[i];

		if (!fn->first_self && !fn->first_call)
			continue;
		fputc('\n', f);
		put_id(f, "fl", fn->file, g->files[fn->file], strlen(g->files[fn->file]),
		       file_seen);
		put_id(f, "fn", (uint32_t)i, fn->name, fn->name_len, fn_seen);
		for (uint32_t s = fn->first_self; s; s = g->selfs[s - 1].next)
			put_costs(f, g->selfs[s - 1].line, g->selfs[s - 1].cost, events);
		for (uint32_t c = fn->first_call; c; c = g->calls[c - 1].next) {
			const struct cg_call *cl = &g->calls[c - 1];
			const struct cg_fn *to = &g->fns[cl->callee];

			put_id(f, "cfl", to->file, g->files[to->file], strlen(g->files[to->file]),
			       file_seen);
			put_id(f, "cfn", cl->callee, to->name, to->name_len, fn_seen);
			fprintf(f, "calls=%" PRIu64 " %" PRIu32 "\n", cl->calls, cl->callee_line);
			put_costs(f, cl->line, cl->cost, events);
		}
	}
	fprintf(f, "\ntotals: %" PRIu64, g->total[0]);
	if (events == 2)
		fprintf(f, " %" PRIu64, g->total[1]);
	fputc('\n', f);
	err = ferror(f) ? -EIO : 0;
out:
	free(file_seen);
	free(fn_seen);
	cg_free(g);
	free(g);
	return err;
}
