// SPDX-License-Identifier: Apache-2.0
/*
 * xsprof-history steps and trend: a figure's runs over history, grouped by commit, the steps
 * in them (at a level that holds over every figure looked at), the commits behind each step
 * named, and the plot.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/atomic_file.h"
#include "output/history/history_cli.h"
#include "output/history/history_store.h"

#define MAX_STEPS 16 /* per figure */

/* A figure's history: values by commit, oldest first. */
struct series {
	enum hist_kind kind;
	char *name;
	struct hist_values vals;
	size_t ncommits;
	size_t *n;
	const double **runs;
	double *flat;
	const char **labels; /* 12 hex digits: pointers into shortc */
	char (*commit)[41];
	char (*shortc)[13];
	double median; /* over every run */
};

static void series_free(struct series *s)
{
	hist_values__free(&s->vals);
	free(s->name);
	free(s->n);
	free(s->runs);
	free(s->flat);
	free(s->labels);
	free(s->commit);
	free(s->shortc);
	memset(s, 0, sizeof(*s));
}

static int series_load(struct hist_cli *cli, enum hist_kind kind, const char *name,
		       struct series *s, char *err, size_t errlen)
{
	size_t c = 0;
	int r;

	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->name = strdup(name);
	if (!s->name)
		return -ENOMEM;
	r = hist_cli__values(cli, kind, name, NULL, 0, &s->vals, err, errlen);
	if (r)
		return r;
	if (!s->vals.n)
		return 0;
	s->n = calloc(s->vals.n, sizeof(*s->n));
	s->runs = calloc(s->vals.n, sizeof(*s->runs));
	s->flat = malloc(s->vals.n * sizeof(*s->flat));
	s->labels = calloc(s->vals.n, sizeof(*s->labels));
	s->commit = calloc(s->vals.n, sizeof(*s->commit));
	s->shortc = calloc(s->vals.n, sizeof(*s->shortc));
	if (!s->n || !s->runs || !s->flat || !s->labels || !s->commit || !s->shortc)
		return -ENOMEM;
	for (size_t i = 0; i < s->vals.n; i++) {
		s->flat[i] = s->vals.v[i].value;
		if (!i || strcmp(s->vals.v[i].commit, s->commit[c - 1])) {
			snprintf(s->commit[c], 41, "%s", s->vals.v[i].commit);
			s->runs[c] = &s->flat[i];
			c++;
		}
		s->n[c - 1]++;
	}
	s->ncommits = c;
	for (size_t i = 0; i < c; i++) {
		snprintf(s->shortc[i], sizeof(s->shortc[i]), "%.12s", s->commit[i]);
		s->labels[i] = s->shortc[i];
	}
	s->median = hist_median(s->flat, s->vals.n);
	return 0;
}

static int write_trend(FILE *f, void *ctx)
{
	const void *const *a = ctx;
	const struct series *s = a[0];
	const struct hist_step *steps = a[1];
	const size_t *nsteps = a[2];
	struct hist_series hs = {.ncommits = s->ncommits, .n = s->n, .runs = s->runs};
	char title[512];

	snprintf(title, sizeof(title), "%s %s", hist_kind__name(s->kind), s->name);
	return hist_render__trend_svg(title, s->kind, s->labels, &hs, steps, *nsteps, f);
}

static int trend_file(const struct series *s, const struct hist_step *steps, size_t nsteps,
		      const char *path)
{
	const void *ctx[3] = {s, steps, &nsteps};
	int r = atomic_file__write(path, write_trend, ctx);

	if (r)
		fprintf(stderr, "xsprof-history: writing %s: %s\n", path, strerror(-r));
	return r;
}

/* A file name for a figure: KIND-NAME with what a path cannot hold as '_', cut at 100. */
static void svg_name(const struct hist_cli *cli, const struct series *s, char *buf, size_t len)
{
	char safe[101];
	size_t i = 0;

	for (const char *p = s->name; *p && i < sizeof(safe) - 1; p++)
		safe[i++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					    (*p >= '0' && *p <= '9') || *p == '.' || *p == '-'
				    ? *p
				    : '_';
	safe[i] = '\0';
	snprintf(buf, len, "%s/%s-%s.svg", cli->svg_dir, hist_kind__name(s->kind), safe);
}

static void print_step(struct hist_cli *cli, const struct series *s, const struct hist_step *st)
{
	struct hist_row row = {.kind = s->kind, .name = s->name, .cmp = st->cmp};
	struct hist_keep keep = {0};
	char before[64], after[64];

	hist_cli__value(s->kind, st->cmp.base_median, before, sizeof(before));
	hist_cli__value(s->kind, st->cmp.head_median, after, sizeof(after));
	printf("step: %s %s at %.12s (commit %zu of %zu): %+.1f%% [%+.1f%%, %+.1f%%], %s -> %s, "
	       "p %.2g, %zu runs before, %zu after\n",
	       hist_kind__name(s->kind), s->name, s->commit[st->at], st->at + 1, s->ncommits,
	       100 * st->cmp.effect, 100 * st->cmp.ci_lo, 100 * st->cmp.ci_hi, before, after,
	       st->cmp.p, st->cmp.n_base, st->cmp.n_head);
	if (!cli->repo || !st->at)
		return;
	hist_cli__name_commits(cli, s->commit[st->at - 1], s->commit[st->at], &row, &keep);
	printf("  commits after the last good run (%.12s) to the first bad (%.12s):\n",
	       s->commit[st->at - 1], s->commit[st->at]);
	if (row.source)
		printf("  source: %s (%s)\n", row.source,
		       !strcmp(row.source_how, "name") ? "by name: no line information"
						       : "line tables");
	else if (s->kind == HIST_FN_SELF || s->kind == HIST_FN_TOTAL || s->kind == HIST_KERNEL)
		printf("  source: not found (no --binary line tables for it, and no definition by "
		       "its name)\n");
	for (size_t i = 0; i < row.ncommits; i++)
		printf("    %.12s %s%s\n", row.commits[i].hash, row.commits[i].subject,
		       row.commits[i].touched ? "   <- touched it" : "");
	hist_keep__free(&keep);
}

struct names {
	enum hist_kind *kind;
	char **name;
	size_t n, alloc;
};

static int note_name(void *ctx, enum hist_kind kind, const char *name)
{
	struct names *n = ctx;

	if (n->n == n->alloc) {
		size_t want = n->alloc ? n->alloc * 2 : 64;
		enum hist_kind *k = realloc(n->kind, want * sizeof(*k));
		char **s;

		if (!k)
			return -ENOMEM;
		n->kind = k;
		s = realloc(n->name, want * sizeof(*s));
		if (!s)
			return -ENOMEM;
		n->name = s;
		n->alloc = want;
	}
	n->name[n->n] = strdup(name);
	if (!n->name[n->n])
		return -ENOMEM;
	n->kind[n->n++] = kind;
	return 0;
}

static void names_free(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->name[i]);
	free(n->name);
	free(n->kind);
}

/* The whole a series' share is of: the samples' median for functions, the kernels' medians
 * summed for GPU figures; 0 for the rest (always looked at). */
static double whole_of(enum hist_kind kind, double samples, double kernels)
{
	if (kind == HIST_FN_SELF || kind == HIST_FN_TOTAL)
		return samples;
	if (kind == HIST_KERNEL || kind == HIST_KERNEL_STACK || kind == HIST_RANGE ||
	    kind == HIST_GPU_IDLE)
		return kernels;
	return 0;
}

/* What steps_walk hands over for each figure looked at that has two commits or more. */
typedef int (*steps_fn)(void *ctx, struct series *s, const struct hist_step *steps, size_t nsteps);

/*
 * The steps of every figure of cli's project and bench (--figure's, else every one above
 * --min-share), each held to the level over all the figures looked at: on_figure per figure,
 * in the store's order. 0, or -errno with err said; what on_figure returned when not 0.
 */
static int steps_walk(struct hist_cli *cli, steps_fn on_figure, void *ctx, size_t *ret_looked,
		      double *ret_alpha, char *err, size_t errlen)
{
	struct names names = {0};
	struct series *all = NULL;
	struct hist_stats_opts o = cli->stats;
	double samples = 0, kernels = 0;
	size_t looked = 0;
	int r = 0;

	if (cli->nfigures) {
		for (size_t i = 0; !r && i < cli->nfigures; i++) {
			enum hist_kind k;
			const char *name;

			hist_cli__figure(cli->figures[i], &k, &name);
			r = note_name(&names, k, name);
		}
	} else {
		r = hist_store__names(cli->store, cli->project, cli->bench, note_name, &names);
		if (r && !err[0])
			snprintf(err, errlen, "%s", hist_store__last_error(cli->store));
	}
	all = r ? NULL : calloc(names.n ? names.n : 1, sizeof(*all));
	if (!r && !all)
		r = -ENOMEM;
	for (size_t i = 0; all && !r && i < names.n; i++) {
		r = series_load(cli, names.kind[i], names.name[i], &all[i], err, errlen);
		if (names.kind[i] == HIST_SAMPLES)
			samples = all[i].median > samples ? all[i].median : samples;
		else if (names.kind[i] == HIST_KERNEL)
			kernels += all[i].median;
	}
	if (!r) {
		/* The figures looked at, and the level each is held to: the level over all. */
		for (size_t i = 0; i < names.n; i++) {
			double w = whole_of(all[i].kind, samples, kernels);

			if (!cli->nfigures && w > 0 && all[i].median < cli->min_share * w)
				all[i].ncommits = 0;
			looked += all[i].ncommits >= 2;
		}
		o.alpha = cli->stats.alpha / (double)(looked ? looked : 1);
	}
	for (size_t i = 0; !r && i < names.n; i++) {
		struct hist_step steps[MAX_STEPS];
		struct hist_series hs = {
			.ncommits = all[i].ncommits, .n = all[i].n, .runs = all[i].runs};
		size_t nsteps = 0;

		if (all[i].ncommits < 2)
			continue;
		r = hist_steps(&hs, &o, steps, MAX_STEPS, &nsteps);
		if (r)
			snprintf(err, errlen, "steps of %s %s: %s", hist_kind__name(all[i].kind),
				 all[i].name, strerror(-r));
		else
			r = on_figure(ctx, &all[i], steps, nsteps);
	}
	for (size_t i = 0; all && i < names.n; i++)
		series_free(&all[i]);
	free(all);
	names_free(&names);
	if (r && !err[0])
		snprintf(err, errlen, "%s", strerror(r < 0 ? -r : EIO));
	*ret_looked = looked;
	*ret_alpha = o.alpha;
	return r;
}

struct steps_cmd {
	struct hist_cli *cli;
	size_t found;
	bool write_failed; /* a trend file: said already */
};

static int steps_print(void *ctx, struct series *s, const struct hist_step *steps, size_t n)
{
	struct steps_cmd *c = ctx;
	char path[4096];

	for (size_t j = 0; j < n && !c->cli->quiet; j++)
		print_step(c->cli, s, &steps[j]);
	c->found += n;
	if (n && c->cli->svg_dir) {
		svg_name(c->cli, s, path, sizeof(path));
		if (trend_file(s, steps, n, path)) {
			c->write_failed = true;
			return -EIO;
		}
	}
	return 0;
}

int hist_cmd__steps(struct hist_cli *cli)
{
	struct steps_cmd c = {.cli = cli};
	char err[512] = "";
	size_t looked = 0;
	double alpha = 0;
	int r = steps_walk(cli, steps_print, &c, &looked, &alpha, err, sizeof(err));

	if (r && !c.write_failed)
		fprintf(stderr, "xsprof-history: %s\n", err);
	else if (!cli->quiet)
		printf("%zu steps in %zu figures of %s/%s (each held to p < %.2g)\n", c.found,
		       looked, cli->project, cli->bench, alpha);
	return r ? HIST_EXIT_ERROR : 0;
}

struct steps_json {
	FILE *f;
	size_t figures;
};

static int steps_json_figure(void *ctx, struct series *s, const struct hist_step *steps, size_t n)
{
	struct steps_json *j = ctx;

	fprintf(j->f, "%s{\"kind\":\"%s\",\"name\":", j->figures++ ? "," : "",
		hist_kind__name(s->kind));
	hist_render__json_string(j->f, s->name);
	fprintf(j->f, ",\"unit\":\"%s\",\"commits\":%zu,\"runs\":%zu,\"steps\":[",
		hist_kind__unit(s->kind), s->ncommits, s->vals.n);
	for (size_t i = 0; i < n; i++) {
		const struct hist_step *st = &steps[i];

		fprintf(j->f,
			"%s{\"commit\":\"%s\",\"before\":\"%s\",\"index\":%zu,"
			"\"before_median\":%.17g,\"after_median\":%.17g,\"effect\":%.6g,"
			"\"ci\":[%.6g,%.6g],\"p\":%.6g,\"runs_before\":%zu,\"runs_after\":%zu}",
			i ? "," : "", s->commit[st->at], st->at ? s->commit[st->at - 1] : "",
			st->at, st->cmp.base_median, st->cmp.head_median, st->cmp.effect,
			st->cmp.ci_lo, st->cmp.ci_hi, st->cmp.p, st->cmp.n_base, st->cmp.n_head);
	}
	fputs("]}", j->f);
	return ferror(j->f) ? -EIO : 0;
}

int hist_steps__json(struct hist_cli *cli, FILE *f, char *err, size_t errlen)
{
	struct steps_json j = {.f = f};
	size_t looked = 0;
	double alpha = 0;
	int r;

	fputs("{\"project\":", f);
	hist_render__json_string(f, cli->project);
	fputs(",\"bench\":", f);
	hist_render__json_string(f, cli->bench);
	fputs(",\"figures\":[", f);
	r = steps_walk(cli, steps_json_figure, &j, &looked, &alpha, err, errlen);
	fprintf(f, "],\"looked_at\":%zu,\"alpha\":%.6g}\n", looked, alpha);
	return r ? r : ferror(f) ? -EIO : 0;
}

int hist_trend__write(struct hist_cli *cli, enum hist_kind kind, const char *name, FILE *f,
		      char *err, size_t errlen)
{
	struct series s;
	struct hist_step steps[MAX_STEPS];
	size_t nsteps = 0;
	int r = series_load(cli, kind, name, &s, err, errlen);

	if (!r && !s.ncommits) {
		snprintf(err, errlen, "no run of %s/%s holds %s %s", cli->project, cli->bench,
			 hist_kind__name(kind), name);
		r = -ENOENT;
	}
	if (!r && s.ncommits >= 2) {
		struct hist_series hs = {.ncommits = s.ncommits, .n = s.n, .runs = s.runs};

		if (hist_steps(&hs, &cli->stats, steps, MAX_STEPS, &nsteps))
			nsteps = 0;
	}
	if (!r) {
		const void *ctx[3] = {&s, steps, &nsteps};

		r = write_trend(f, ctx);
		if (r)
			snprintf(err, errlen, "writing the plot: %s", strerror(-r));
	}
	series_free(&s);
	return r;
}

int hist_cmd__trend(struct hist_cli *cli)
{
	struct series s;
	struct hist_step steps[MAX_STEPS];
	size_t nsteps = 0;
	enum hist_kind k;
	const char *name;
	char err[512] = "";
	int r;

	if (cli->nfigures != 1 || !cli->output) {
		fprintf(stderr, "xsprof-history: trend wants one --figure KIND:NAME and -o FILE\n");
		return HIST_EXIT_USAGE;
	}
	hist_cli__figure(cli->figures[0], &k, &name);
	r = series_load(cli, k, name, &s, err, sizeof(err));
	if (r || !s.ncommits) {
		fprintf(stderr, "xsprof-history: %s\n",
			r ? (err[0] ? err : strerror(-r)) : "no runs hold that figure");
		series_free(&s);
		return HIST_EXIT_ERROR;
	}
	if (s.ncommits >= 2) {
		struct hist_series hs = {.ncommits = s.ncommits, .n = s.n, .runs = s.runs};

		if (hist_steps(&hs, &cli->stats, steps, MAX_STEPS, &nsteps))
			nsteps = 0;
	}
	r = trend_file(&s, steps, nsteps, cli->output);
	if (!r && !cli->quiet)
		printf("wrote %s: %zu commits, %zu runs, %zu steps\n", cli->output, s.ncommits,
		       s.vals.n, nsteps);
	series_free(&s);
	return r ? HIST_EXIT_ERROR : 0;
}
