// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"
#include "output/model/frame_sites.h"
#include "output/pprof_locations.h"
#include "output/protobuf.h"

#define GPU_PREFIX  "[gpu] "
#define GPU_MAPPING "[gpu]"
#define MAX_INLINED 64 /* lines in one location */

/* Profile fields */
#define P_MAPPING  3
#define P_LOCATION 4
#define P_FUNCTION 5

/* What is known of one interned frame name (by string index). */
struct frame_info {
	const struct frame_site *site;
	uint64_t loc; /* its location when not inlined into another; 0 until made */
	bool looked_up;
};

struct line {
	uint32_t fn;
	uint32_t str; /* the frame's string index: tells runs with the same hash apart */
	uint32_t line;
};

struct loc {
	uint64_t addr;
	uint32_t map; /* pprof mapping id, 0 none */
	uint32_t line0, nlines;
};

struct fn {
	int64_t name, system_name, file;
};

/* Per mapping: referenced, and what its locations carry. */
struct map_use {
	bool used, files, lines, inlines;
};

struct pprof_locs {
	struct strtab *strs;
	const struct frame_sites *sites;
	struct frame_info *info; /* by string index */
	size_t info_cap;
	struct hashmap *runs; /* (hash of the run's string indexes, length) -> location id */
	struct hashmap *fns;  /* (name << 32 | system name, file) string indexes -> function id */
	struct loc *locs;     /* by id - 1 */
	size_t nr_locs, locs_cap;
	struct line *lines;
	size_t nr_lines, lines_cap;
	struct fn *fn_v; /* by id - 1 */
	size_t nr_fns, fns_cap;
	struct map_use *maps; /* by pprof mapping id - 1: the sites' mappings, then [gpu] */
	size_t nr_maps;	      /* frame_sites__nr_maps + 1 */
	uint64_t gpu_addrs;   /* [gpu] locations made: their addresses are 1, 2, ... */
	uint64_t *ids;	      /* one stack's location ids (pprof_locs__stack) */
	size_t ids_cap;
};

struct pprof_locs *pprof_locs__new(struct strtab *strs, const struct frame_sites *sites)
{
	struct pprof_locs *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->strs = strs;
	l->sites = sites;
	l->nr_maps = frame_sites__nr_maps(sites) + 1;
	l->maps = calloc(l->nr_maps, sizeof(*l->maps));
	l->runs = hashmap__new();
	l->fns = hashmap__new();
	if (!l->maps || !l->runs || !l->fns) {
		pprof_locs__free(l);
		return NULL;
	}
	return l;
}

void pprof_locs__free(struct pprof_locs *l)
{
	if (!l)
		return;
	hashmap__free(l->runs);
	hashmap__free(l->fns);
	free(l->info);
	free(l->locs);
	free(l->lines);
	free(l->fn_v);
	free(l->maps);
	free(l->ids);
	free(l);
}

/* Grows *v (of *cap elements of size) to hold one more than n, the new elements zeroed. */
static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t old = *cap;
	int err = n < SIZE_MAX ? vec__reserve(v, cap, n + 1, size) : -ENOMEM;

	if (!err)
		memset((char *)*v + old * size, 0, (*cap - old) * size);
	return err;
}

/* The string index of frame and what is known of it; NULL on failure. */
static struct frame_info *info_of(struct pprof_locs *l, const char *frame, uint32_t *ret_str)
{
	int64_t s = pb_intern(l->strs, frame && frame[0] ? frame : "[unknown]");
	struct frame_info *fi;

	if (s < 0 || grow((void **)&l->info, &l->info_cap, (size_t)s, sizeof(*l->info)))
		return NULL;
	fi = &l->info[s];
	if (!fi->looked_up) {
		fi->looked_up = true;
		fi->site = frame_sites__get(l->sites, l->strs->s[s]);
	}
	*ret_str = (uint32_t)s;
	return fi;
}

/* A string's index; -ENOMEM. */
static int64_t str(struct pprof_locs *l, const char *s)
{
	return pb_intern(l->strs, s);
}

/* For fields: a string that could not be interned is written as "" (the error is kept). */
static uint64_t str_field(struct pprof_locs *l, const char *s, struct buf *m)
{
	int64_t i = str(l, s);

	if (i < 0 && !m->err)
		m->err = (int)i;
	return i < 0 ? 0 : (uint64_t)i;
}

/* The function of a frame: its name, system name and source file. 0 on failure. */
static uint32_t fn_of(struct pprof_locs *l, uint32_t frame_str, const struct frame_site *site)
{
	int64_t name = frame_str, sys, file = 0;
	uintptr_t id;

	if (site && site->function)
		name = str(l, site->function);
	sys = site && site->system_name ? str(l, site->system_name) : name;
	if (site && site->file)
		file = str(l, site->file);
	if (name < 0 || sys < 0 || file < 0)
		return 0;
	id = (uintptr_t)hashmap__get(l->fns, (uint64_t)name << 32 | (uint64_t)sys, (uint64_t)file);
	if (id)
		return (uint32_t)id;
	if (grow((void **)&l->fn_v, &l->fns_cap, l->nr_fns, sizeof(*l->fn_v)))
		return 0;
	l->fn_v[l->nr_fns] = (struct fn){.name = name, .system_name = sys, .file = file};
	id = ++l->nr_fns;
	if (hashmap__put(l->fns, (uint64_t)name << 32 | (uint64_t)sys, (uint64_t)file, (void *)id))
		return 0;
	return (uint32_t)id;
}

/* Where a run's location lies: a site, or [gpu], or nowhere. */
static void place(struct pprof_locs *l, const struct frame_site *site, const char *frame,
		  struct loc *loc)
{
	if (site) {
		loc->addr = site->addr;
		loc->map = site->map < l->nr_maps ? site->map : 0;
	} else if (!strncmp(frame, GPU_PREFIX, strlen(GPU_PREFIX))) {
		loc->addr = ++l->gpu_addrs;
		loc->map = (uint32_t)l->nr_maps;
	}
	if (loc->map)
		l->maps[loc->map - 1].used = true;
}

/* A new location of the run strs[0..n) (innermost first). 0 on failure. */
static uint64_t new_loc(struct pprof_locs *l, const uint32_t *strs, size_t n)
{
	struct loc *loc;

	if (grow((void **)&l->locs, &l->locs_cap, l->nr_locs, sizeof(*l->locs)) ||
	    grow((void **)&l->lines, &l->lines_cap, l->nr_lines + n, sizeof(*l->lines)))
		return 0;
	loc = &l->locs[l->nr_locs];
	*loc = (struct loc){.line0 = (uint32_t)l->nr_lines, .nlines = (uint32_t)n};
	for (size_t i = 0; i < n; i++) {
		const struct frame_site *site = l->info[strs[i]].site;
		struct line *ln = &l->lines[l->nr_lines + i];

		ln->str = strs[i];
		ln->fn = fn_of(l, strs[i], site);
		ln->line = site ? site->line : 0;
		if (!ln->fn)
			return 0;
	}
	/* The address is where the innermost line was seen (its frame's own), when known. */
	place(l, l->info[strs[0]].site ? l->info[strs[0]].site : l->info[strs[n - 1]].site,
	      l->strs->s[strs[n - 1]], loc);
	if (loc->map) {
		struct map_use *mu = &l->maps[loc->map - 1];

		for (size_t i = 0; i < n; i++) {
			mu->files |= l->info[strs[i]].site && l->info[strs[i]].site->file;
			mu->lines |= l->lines[l->nr_lines + i].line != 0;
		}
		mu->inlines |= n > 1;
	}
	l->nr_lines += n;
	return ++l->nr_locs;
}

static bool same_run(const struct pprof_locs *l, uint64_t id, const uint32_t *strs, size_t n)
{
	const struct loc *loc = &l->locs[id - 1];

	if (loc->nlines != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (l->lines[loc->line0 + i].str != strs[i])
			return false;
	}
	return true;
}

/* The location of a run of frames: one frame, or inlined ones and the frame holding them. */
static uint64_t run_loc(struct pprof_locs *l, const uint32_t *strs, size_t n)
{
	uint64_t h = HASH_INIT, id;

	if (n == 1) {
		struct frame_info *fi = &l->info[strs[0]];

		if (!fi->loc)
			fi->loc = new_loc(l, strs, 1);
		return fi->loc;
	}
	for (size_t i = 0; i < n; i++)
		h = hash_combine(h, strs[i]);
	/* Another run with the same hash moves to the next key. */
	for (uint64_t k2 = n;; k2 += MAX_INLINED + 1) {
		id = (uintptr_t)hashmap__get(l->runs, h, k2);
		if (!id) {
			id = new_loc(l, strs, n);
			if (id && hashmap__put(l->runs, h, k2, (void *)(uintptr_t)id))
				return 0;
			return id;
		}
		if (same_run(l, id, strs, n))
			return id;
	}
}

int pprof_locs__stack(struct pprof_locs *l, const char *const *frames, size_t n,
		      const uint64_t **ret)
{
	uint32_t run[MAX_INLINED];
	size_t i = n, k = 0, nr = 0;

	if (n && grow((void **)&l->ids, &l->ids_cap, n - 1, sizeof(*l->ids)))
		return -ENOMEM;
	*ret = l->ids;
	/* Leaf first: inlined frames join the next frame out that is not inlined. */
	while (i-- > 0) {
		struct frame_info *fi = info_of(l, frames[i], &run[nr]);

		if (!fi)
			return -ENOMEM;
		nr++;
		if (fi->site && fi->site->inlined && i > 0 && nr < MAX_INLINED)
			continue;
		l->ids[k] = run_loc(l, run, nr);
		if (!l->ids[k])
			return -ENOMEM;
		k++;
		nr = 0;
	}
	return (int)k;
}

static void write_mapping(struct pprof_locs *l, uint32_t id, struct buf *m)
{
	const struct frame_map *fm = frame_sites__map_at(l->sites, id);
	const struct map_use *mu = &l->maps[id - 1];

	m->len = 0;
	pb_uint(m, 1, id);
	if (fm) {
		pb_uint(m, 2, fm->start);
		pb_uint(m, 3, fm->limit);
		pb_uint(m, 4, fm->offset);
		pb_uint(m, 5, str_field(l, fm->path, m));
		pb_uint(m, 6, str_field(l, fm->build_id, m));
	} else { /* [gpu] */
		pb_uint(m, 3, l->gpu_addrs + 1);
		pb_uint(m, 5, str_field(l, GPU_MAPPING, m));
	}
	pb_uint(m, 7, 1); /* has_functions */
	pb_uint(m, 8, mu->files);
	pb_uint(m, 9, mu->lines);
	pb_uint(m, 10, mu->inlines);
}

int pprof_locs__write(struct pprof_locs *l,
		      void (*emit)(void *ctx, unsigned int field, const struct buf *m), void *ctx)
{
	struct buf m = {0}, ln = {0};
	int err;

	for (uint32_t id = 1; id <= l->nr_maps; id++) {
		if (!l->maps[id - 1].used)
			continue;
		write_mapping(l, id, &m);
		emit(ctx, P_MAPPING, &m);
	}
	for (size_t i = 0; i < l->nr_locs; i++) {
		const struct loc *loc = &l->locs[i];

		m.len = 0;
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, loc->map);
		pb_uint(&m, 3, loc->addr);
		for (uint32_t j = 0; j < loc->nlines; j++) {
			ln.len = 0;
			pb_uint(&ln, 1, l->lines[loc->line0 + j].fn);
			pb_uint(&ln, 2, l->lines[loc->line0 + j].line);
			pb_msg(&m, 4, &ln);
		}
		emit(ctx, P_LOCATION, &m);
	}
	for (size_t i = 0; i < l->nr_fns; i++) {
		m.len = 0;
		pb_uint(&m, 1, i + 1);
		pb_uint(&m, 2, (uint64_t)l->fn_v[i].name);
		pb_uint(&m, 3, (uint64_t)l->fn_v[i].system_name);
		pb_uint(&m, 4, (uint64_t)l->fn_v[i].file);
		emit(ctx, P_FUNCTION, &m);
	}
	err = m.err ? m.err : ln.err;
	free(m.p);
	free(ln.p);
	return err;
}
