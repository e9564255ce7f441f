// SPDX-License-Identifier: Apache-2.0
/*
 * What xsprof-history's commands share: a figure's runs from the store (a function missing
 * from a run of the same profile counts 0 there), and the commits behind a change named, with
 * those that touched the figure's source.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/symbolize/dwarf_lines.h"
#include "daemon/symbolize/elf_symtab.h"
#include "output/history/history_cli.h"
#include "output/history/history_git.h"
#include "output/history/history_store.h"

int hist_cli__figure(const char *s, enum hist_kind *kind, const char **name)
{
	const char *colon = strchr(s, ':');
	char k[32];
	int v;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(k) || !colon[1])
		return -EINVAL;
	memcpy(k, s, (size_t)(colon - s));
	k[colon - s] = '\0';
	v = hist_kind__of(k);
	if (v < 0)
		return -EINVAL;
	*kind = (enum hist_kind)v;
	*name = colon + 1;
	return 0;
}

void hist_values__free(struct hist_values *v)
{
	free(v->v);
	v->v = NULL;
	v->n = v->alloc = 0;
}

static int push(struct hist_values *v, int64_t run, const char *commit, double value)
{
	if (v->n == v->alloc) {
		size_t want = v->alloc ? v->alloc * 2 : 64;
		struct hist_value *p = realloc(v->v, want * sizeof(*p));

		if (!p)
			return -ENOMEM;
		v->v = p;
		v->alloc = want;
	}
	v->v[v->n].run = run;
	snprintf(v->v[v->n].commit, sizeof(v->v[v->n].commit), "%s", commit);
	v->v[v->n].value = value;
	v->n++;
	return 0;
}

static int take(void *ctx, const struct hist_run *run, double value)
{
	return push(ctx, run->id, run->commit, value);
}

/* The store's values of (kind, name): every commit, or those listed. */
static int raw(struct hist_cli *cli, enum hist_kind kind, const char *name,
	       const char *const *commits, size_t ncommits, struct hist_values *out)
{
	if (!commits)
		return hist_store__values(cli->store, cli->project, cli->bench, cli->branch, kind,
					  name, take, out);
	for (size_t i = 0; i < ncommits; i++) {
		int r = hist_store__commit_values(cli->store, cli->project, cli->bench, commits[i],
						  kind, name, take, out);
		if (r)
			return r;
	}
	return 0;
}

/* What the store said of its last failure, else r's errno text. */
static const char *store_error(const struct hist_cli *cli, int r)
{
	const char *e = hist_store__last_error(cli->store);

	return e && *e ? e : strerror(-r);
}

/* err: a commit named wrong is about the commit, not the figure being read. */
static void say_store(const struct hist_cli *cli, int r, enum hist_kind kind, const char *name,
		      char *err, size_t errlen)
{
	if (r == -ENOENT || r == -ENOTUNIQ || r == -EINVAL)
		snprintf(err, errlen, "%s", store_error(cli, r));
	else
		say_store(cli, r, kind, name, err, errlen);
}

int hist_cli__values(struct hist_cli *cli, enum hist_kind kind, const char *name,
		     const char *const *commits, size_t ncommits, struct hist_values *out,
		     char *err, size_t errlen)
{
	struct hist_values own = {0}, frame = {0};
	int r;

	out->n = 0;
	r = raw(cli, kind, name, commits, ncommits, &own);
	if (r || (kind != HIST_FN_SELF && kind != HIST_FN_TOTAL)) {
		if (!r) {
			hist_values__free(out);
			*out = own;
		} else {
			hist_values__free(&own);
			say_store(cli, r, kind, name, err, errlen);
		}
		return r;
	}
	/* Every run that has folded stacks holds this function 0 times or more. */
	r = raw(cli, HIST_SAMPLES, "all", commits, ncommits, &frame);
	for (size_t i = 0; !r && i < frame.n; i++) {
		double v = 0;

		for (size_t j = 0; j < own.n; j++)
			if (own.v[j].run == frame.v[i].run) {
				v = own.v[j].value;
				break;
			}
		r = push(out, frame.v[i].run, frame.v[i].commit, v);
	}
	if (r)
		say_store(cli, r, kind, name, err, errlen);
	hist_values__free(&own);
	hist_values__free(&frame);
	return r;
}

void *hist_keep__add(struct hist_keep *k, void *p)
{
	if (!p)
		return NULL;
	if (k->n == k->alloc) {
		size_t want = k->alloc ? k->alloc * 2 : 16;
		void **q = realloc(k->p, want * sizeof(*q));

		if (!q) {
			free(p);
			return NULL;
		}
		k->p = q;
		k->alloc = want;
	}
	k->p[k->n++] = p;
	return p;
}

void hist_keep__free(struct hist_keep *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->p[i]);
	free(k->p);
	k->p = NULL;
	k->n = k->alloc = 0;
}

void hist_cli__value(enum hist_kind kind, double v, char *buf, size_t len)
{
	if (strcmp(hist_kind__unit(kind), "ns"))
		snprintf(buf, len, "%.0f samples", v);
	else if (v >= 1e9)
		snprintf(buf, len, "%.3f s", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.3f ms", v / 1e6);
	else
		snprintf(buf, len, "%.1f us", v / 1e3);
}

/* The path of file inside the repository at top, or NULL when it is outside. */
static char *in_repo(const char *top, const char *file)
{
	char real[PATH_MAX];
	size_t n = strlen(top);

	if (file[0] != '/') {
		char *joined;

		if (asprintf(&joined, "%s/%s", top, file) < 0)
			return NULL;
		if (access(joined, R_OK)) {
			free(joined);
			return NULL;
		}
		free(joined);
		return strdup(file);
	}
	if (!realpath(file, real))
		snprintf(real, sizeof(real), "%s", file);
	if (strncmp(real, top, n) || real[n] != '/')
		return NULL;
	return strdup(real + n + 1);
}

/* The source lines of func by a --binary's line tables: 0 with *file (malloc'd) and its lines. */
static int by_lines(struct hist_cli *cli, const char *top, const char *func, char **file,
		    unsigned *first, unsigned *last)
{
	for (size_t b = 0; b < cli->nbinaries; b++) {
		struct elf_symtab *t = elf_symtab__open(cli->binaries[b]);
		const struct elf_sym *sym = t ? elf_symtab__find(t, func) : NULL;
		struct dwarf_frame at[DWARF_LINES_MAX_INLINE], end[DWARF_LINES_MAX_INLINE];
		struct dwarf_lines *d;
		struct arena *strs;
		int na, ne, fd;

		if (!sym) {
			elf_symtab__free(t);
			continue;
		}
		fd = open(cli->binaries[b], O_RDONLY | O_CLOEXEC);
		d = fd >= 0 ? dwarf_lines__open(fd) : NULL;
		strs = arena__new();
		if (!d || !strs) {
			if (d)
				dwarf_lines__free(d);
			arena__free(strs);
			elf_symtab__free(t);
			continue;
		}
		na = dwarf_lines__frames(d, sym->addr, strs, at, DWARF_LINES_MAX_INLINE);
		ne = dwarf_lines__frames(d, sym->addr + sym->size - 1, strs, end,
					 DWARF_LINES_MAX_INLINE);
		/* the outermost frame is the function itself (the rest were inlined into it) */
		if (na > 0 && at[na - 1].file && at[na - 1].line) {
			*file = in_repo(top, at[na - 1].file);
			*first = at[na - 1].line;
			*last = ne > 0 && end[ne - 1].file &&
						!strcmp(end[ne - 1].file, at[na - 1].file) &&
						end[ne - 1].line >= *first
					? end[ne - 1].line
					: *first;
		}
		dwarf_lines__free(d);
		arena__free(strs);
		elf_symtab__free(t);
		if (*file)
			return 0;
	}
	return -ENOENT;
}

/* A function's name as a figure holds it: "func", "func (file.py:12)" or "lib+0x12" -> its
 * name alone, or NULL when it has none. */
static char *bare(const char *name)
{
	size_t n = strcspn(name, " (+[");

	if (!n)
		return NULL;
	return strndup(name, n);
}

void hist_cli__name_commits(struct hist_cli *cli, const char *good, const char *bad,
			    struct hist_row *row, struct hist_keep *keep)
{
	struct hist_git_commit *c = NULL;
	struct hist_commit *out;
	size_t n = 0, more = 0;
	char err[512] = "", *top = NULL, *file = NULL, *func = NULL;
	unsigned first = 0, last = 0;

	if (!cli->repo || !good || !bad)
		return;
	if (hist_git__between(cli->repo, good, bad, &c, &n, &more, err, sizeof(err))) {
		fprintf(stderr, "xsprof-history: naming the commits of %s: %s\n", row->name, err);
		return;
	}
	if (row->kind == HIST_FN_SELF || row->kind == HIST_FN_TOTAL || row->kind == HIST_KERNEL)
		func = bare(row->name);
	top = func ? hist_git__toplevel(cli->repo, err, sizeof(err)) : NULL;
	if (top && cli->nbinaries && !by_lines(cli, top, func, &file, &first, &last)) {
		char *src;

		if (asprintf(&src, "%s:%u-%u", file, first, last) >= 0)
			row->source = hist_keep__add(keep, src);
		row->source_how = "line tables";
		if (hist_git__mark_touched(cli->repo, good, bad, file, first, last, NULL, c, n, err,
					   sizeof(err)))
			fprintf(stderr, "xsprof-history: %s\n", err);
	} else if (top && (file = hist_git__file_of(cli->repo, bad, func, err, sizeof(err)))) {
		row->source = hist_keep__add(keep, strdup(file));
		row->source_how = "name";
		/* git's function finder first; the whole file when it cannot follow the name */
		if (hist_git__mark_touched(cli->repo, good, bad, file, 0, 0, func, c, n, err,
					   sizeof(err)) &&
		    hist_git__mark_touched(cli->repo, good, bad, file, 0, 0, NULL, c, n, err,
					   sizeof(err)))
			fprintf(stderr, "xsprof-history: %s\n", err);
	}
	out = hist_keep__add(keep, calloc(n ? n : 1, sizeof(*out)));
	for (size_t i = 0; out && i < n; i++) {
		out[i].hash = hist_keep__add(keep, strdup(c[i].hash));
		out[i].subject = hist_keep__add(keep, strdup(c[i].subject));
		out[i].touched = c[i].touched;
	}
	if (out) {
		row->commits = out;
		row->ncommits = n;
	}
	if (more)
		fprintf(stderr,
			"xsprof-history: %zu older commits between %.12s and %.12s not named\n",
			more, good, bad);
	hist_git__free_commits(c, n);
	free(top);
	free(file);
	free(func);
}
