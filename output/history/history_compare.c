// SPDX-License-Identifier: Apache-2.0
/*
 * xsprof-history compare and ci: the runs of a head commit against those of its base, figure
 * by figure, with a rank test whose level holds over all the figures compared (Holm's step
 * down), so a table of a hundred functions does not cry wolf on one of them by chance.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/atomic_file.h"
#include "output/history/history_cli.h"
#include "output/history/history_git.h"
#include "output/history/history_store.h"

/* A figure on both sides: its runs' values and what the test said. */
struct fig {
	enum hist_kind kind;
	char *name;
	double *base, *head;
	size_t nb, nh;
	double mb, mh; /* medians (0 without runs) */
	struct hist_compare cmp;
	int compared;
};

struct figs {
	struct fig *v;
	size_t n, alloc;
	char err[512];
	struct hist_cli *cli;
	const char *const *base, *const *head;
	size_t nbase, nhead;
};

static double *plain(const struct hist_values *v)
{
	double *d = malloc((v->n ? v->n : 1) * sizeof(*d));

	for (size_t i = 0; d && i < v->n; i++)
		d[i] = v->v[i].value;
	return d;
}

static int add_fig(void *ctx, enum hist_kind kind, const char *name)
{
	struct figs *f = ctx;
	struct hist_values vb = {0}, vh = {0};
	struct fig *g;
	int r;

	if (f->n == f->alloc) {
		size_t want = f->alloc ? f->alloc * 2 : 64;
		struct fig *p = realloc(f->v, want * sizeof(*p));

		if (!p)
			return -ENOMEM;
		f->v = p;
		f->alloc = want;
	}
	r = hist_cli__values(f->cli, kind, name, f->base, f->nbase, &vb, f->err, sizeof(f->err));
	if (!r)
		r = hist_cli__values(f->cli, kind, name, f->head, f->nhead, &vh, f->err,
				     sizeof(f->err));
	if (r) {
		hist_values__free(&vb);
		hist_values__free(&vh);
		return r;
	}
	if (!vb.n && !vh.n) /* a figure of other commits only */
		return 0;
	g = &f->v[f->n];
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->name = strdup(name);
	g->base = plain(&vb);
	g->head = plain(&vh);
	g->nb = vb.n;
	g->nh = vh.n;
	hist_values__free(&vb);
	hist_values__free(&vh);
	if (!g->name || !g->base || !g->head) {
		free(g->name), free(g->base), free(g->head);
		return -ENOMEM;
	}
	g->mb = g->nb ? hist_median(g->base, g->nb) : 0;
	g->mh = g->nh ? hist_median(g->head, g->nh) : 0;
	f->n++;
	return 0;
}

static void figs_free(struct figs *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].base);
		free(f->v[i].head);
	}
	free(f->v);
}

/* The whole a figure's share is taken of: the samples for functions, the kernels' time for
 * GPU figures; 0 where every figure of the kind is compared (wall, samples). */
static double whole(const struct figs *f, enum hist_kind kind)
{
	double w = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct fig *g = &f->v[i];
		double m = g->mb > g->mh ? g->mb : g->mh;

		if ((kind == HIST_FN_SELF || kind == HIST_FN_TOTAL) && g->kind == HIST_SAMPLES)
			w = m > w ? m : w;
		else if ((kind == HIST_KERNEL || kind == HIST_KERNEL_STACK || kind == HIST_RANGE ||
			  kind == HIST_GPU_IDLE) &&
			 g->kind == HIST_KERNEL)
			w += m;
	}
	return w;
}

static int by_p(const void *a, const void *b)
{
	const struct fig *x = *(const struct fig *const *)a, *y = *(const struct fig *const *)b;

	return x->cmp.p < y->cmp.p ? -1 : x->cmp.p > y->cmp.p;
}

/* Holm's step down over the m figures compared: cmp.p becomes the adjusted p, and a DIFFERENT
 * whose adjusted p is not under alpha becomes UNKNOWN. */
static int holm(struct figs *f, double alpha)
{
	struct fig **order;
	size_t m = 0;
	double run = 0;

	for (size_t i = 0; i < f->n; i++)
		m += f->v[i].compared;
	order = malloc((m ? m : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	m = 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].compared)
			order[m++] = &f->v[i];
	qsort(order, m, sizeof(*order), by_p);
	for (size_t i = 0; i < m; i++) {
		double adj = fmin(1.0, (double)(m - i) * order[i]->cmp.p);

		run = adj > run ? adj : run;
		order[i]->cmp.p = run;
		if (order[i]->cmp.verdict == HIST_DIFFERENT && run >= alpha)
			order[i]->cmp.verdict = HIST_UNKNOWN;
	}
	free(order);
	return 0;
}

static int verdict_rank(enum hist_verdict v)
{
	return v == HIST_DIFFERENT ? 0 : v == HIST_UNKNOWN ? 1 : 2;
}

/* DIFFERENT first (regressions, then improvements), then UNKNOWN, then SAME; larger effect
 * first within. */
static int by_row(const void *a, const void *b)
{
	const struct hist_row *x = a, *y = b;
	int vx = verdict_rank(x->cmp.verdict), vy = verdict_rank(y->cmp.verdict);

	if (vx != vy)
		return vx - vy;
	if (vx == 0 && (x->cmp.effect > 0) != (y->cmp.effect > 0))
		return x->cmp.effect > 0 ? -1 : 1;
	return fabs(x->cmp.effect) > fabs(y->cmp.effect)
		       ? -1
		       : fabs(x->cmp.effect) < fabs(y->cmp.effect);
}

static int write_md(FILE *f, void *ctx)
{
	return hist_render__markdown(ctx, f);
}

static int write_json(FILE *f, void *ctx)
{
	return hist_render__json(ctx, f);
}

static int write_badge(FILE *f, void *ctx)
{
	return hist_render__badge(ctx, f);
}

static int write_outputs(struct hist_cli *cli, const struct hist_report *rep)
{
	struct {
		const char *path;
		int (*write)(FILE *, void *);
	} outs[] = {{cli->markdown, write_md}, {cli->json, write_json}, {cli->badge, write_badge}};
	int bad = 0;

	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		int r;

		if (!outs[i].path)
			continue;
		r = atomic_file__write(outs[i].path, outs[i].write, (void *)rep);
		if (r) {
			fprintf(stderr, "xsprof-history: writing %s: %s\n", outs[i].path,
				strerror(-r));
			bad = 1;
		}
	}
	return bad;
}

static void print_table(const struct hist_cli *cli, const struct hist_report *rep)
{
	size_t shown = 0;

	printf("%s/%s: %s (base) .. %s (head): %zu figures compared, %zu regressions\n",
	       rep->project, rep->bench, rep->base, rep->head, rep->n,
	       hist_report__regressions(rep));
	if (!rep->n)
		return;
	printf("%-10s %8s %18s %10s  %-12s %s\n", "verdict", "effect", "interval", "p", "kind",
	       "name");
	for (size_t i = 0; i < rep->n && (!cli->top || shown < cli->top); i++, shown++) {
		const struct hist_row *r = &rep->rows[i];

		if (r->cmp.base_median == 0) /* nothing in the base: no relative change */
			printf("%-10s %8s %18s %10.2g  %-12s %s\n",
			       hist_verdict__name(r->cmp.verdict), "new", "", r->cmp.p,
			       hist_kind__name(r->kind), r->name);
		else
			printf("%-10s %+7.1f%% [%+6.1f%%, %+6.1f%%] %10.2g  %-12s %s\n",
			       hist_verdict__name(r->cmp.verdict), 100 * r->cmp.effect,
			       100 * r->cmp.ci_lo, 100 * r->cmp.ci_hi, r->cmp.p,
			       hist_kind__name(r->kind), r->name);
		if (r->source)
			printf("           source: %s (%s)\n", r->source,
			       r->source_how && !strcmp(r->source_how, "name")
				       ? "by name: no line information"
				       : "line tables");
		for (size_t j = 0; j < r->ncommits; j++)
			if (r->commits[j].touched)
				printf("           touched by %.12s %s\n", r->commits[j].hash,
				       r->commits[j].subject);
	}
	if (shown < rep->n)
		printf("(%zu more: --top 0 shows all)\n", rep->n - shown);
}

/* base commits against head commits; labels say them. Exit status. */
static int compare_sets(struct hist_cli *cli, const char *const *base, size_t nbase,
			const char *const *head, size_t nhead, const char *base_label,
			const char *head_label, const char *good, const char *bad)
{
	struct figs f = {.cli = cli, .base = base, .head = head, .nbase = nbase, .nhead = nhead};
	struct hist_row *rows = NULL;
	struct hist_keep keep = {0};
	struct hist_report rep = {0};
	size_t n = 0;
	int r;

	r = hist_store__names(cli->store, cli->project, cli->bench, add_fig, &f);
	if (r) {
		fprintf(stderr, "xsprof-history: %s\n", f.err[0] ? f.err : strerror(-r));
		figs_free(&f);
		return HIST_EXIT_ERROR;
	}
	for (size_t i = 0; i < f.n; i++) {
		struct fig *g = &f.v[i];
		double w = whole(&f, g->kind), m = g->mb > g->mh ? g->mb : g->mh;

		if (w > 0 && m < cli->min_share * w)
			continue;
		if (hist_compare(g->base, g->nb, g->head, g->nh, &cli->stats, &g->cmp))
			continue;
		g->compared = 1;
	}
	if (holm(&f, cli->stats.alpha)) {
		figs_free(&f);
		return HIST_EXIT_ERROR;
	}
	rows = calloc(f.n ? f.n : 1, sizeof(*rows));
	if (!rows) {
		figs_free(&f);
		return HIST_EXIT_ERROR;
	}
	for (size_t i = 0; i < f.n; i++)
		if (f.v[i].compared)
			rows[n++] = (struct hist_row){
				.kind = f.v[i].kind, .name = f.v[i].name, .cmp = f.v[i].cmp};
	qsort(rows, n, sizeof(*rows), by_row);
	for (size_t i = 0; i < n; i++)
		if (rows[i].cmp.verdict == HIST_DIFFERENT && rows[i].cmp.effect > 0)
			hist_cli__name_commits(cli, good, bad, &rows[i], &keep);
	rep = (struct hist_report){.project = cli->project,
				   .bench = cli->bench,
				   .base = base_label,
				   .head = head_label,
				   .rows = rows,
				   .n = n,
				   .flamegraph = cli->flamegraph,
				   .min_runs = cli->stats.min_runs};
	if (!cli->quiet)
		print_table(cli, &rep);
	r = write_outputs(cli, &rep)	     ? HIST_EXIT_ERROR
	    : hist_report__regressions(&rep) ? HIST_EXIT_REGRESSION
					     : 0;
	hist_keep__free(&keep);
	free(rows);
	figs_free(&f);
	return r;
}

/* ref as a commit: resolved by git with --repo, else as given (a hash or its prefix). */
static int commit_of(struct hist_cli *cli, const char *ref, char out[41])
{
	char err[512] = "";

	if (!cli->repo) {
		if (strlen(ref) < 7 || strlen(ref) > 40 ||
		    strspn(ref, "0123456789abcdef") != strlen(ref)) {
			fprintf(stderr,
				"xsprof-history: '%s': a commit hash (7 or more hex digits), or a "
				"name with --repo\n",
				ref);
			return -EINVAL;
		}
		snprintf(out, 41, "%s", ref);
		return 0;
	}
	if (hist_git__resolve(cli->repo, ref, out, err, sizeof(err))) {
		fprintf(stderr, "xsprof-history: %s\n", err);
		return -ENOENT;
	}
	return 0;
}

int hist_cmd__compare(struct hist_cli *cli)
{
	char base[41], head[41];
	const char *b[1] = {base}, *h[1] = {head};

	if (cli->nprofiles != 2) {
		fprintf(stderr, "xsprof-history: compare wants BASE HEAD (two commits)\n");
		return HIST_EXIT_USAGE;
	}
	if (commit_of(cli, cli->profiles[0], base) || commit_of(cli, cli->profiles[1], head))
		return HIST_EXIT_ERROR;
	return compare_sets(cli, b, 1, h, 1, cli->profiles[0], cli->profiles[1], base, head);
}

struct commit_set {
	char (*v)[41];
	size_t n, alloc;
};

static int note_commit(void *ctx, const struct hist_run *run)
{
	struct commit_set *s = ctx;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], run->commit))
			return 0;
	if (s->n == s->alloc) {
		size_t want = s->alloc ? s->alloc * 2 : 64;
		char(*p)[41] = realloc(s->v, want * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->v = p;
		s->alloc = want;
	}
	snprintf(s->v[s->n++], 41, "%s", run->commit);
	return 0;
}

int hist_cmd__ci(struct hist_cli *cli)
{
	char head[41], merge[41], err[512] = "", label[128];
	const char *argv[] = {"merge-base", NULL, NULL, NULL};
	const char *rev[] = {"rev-list", "--first-parent", "-n", "1000", merge, NULL};
	struct commit_set stored = {0};
	const char *base[1000], *h[1] = {head};
	size_t nbase = 0;
	char *o, *line, *save = NULL;
	int r;

	if (!cli->repo || !cli->base) {
		fprintf(stderr, "xsprof-history: ci needs --repo and --base (the base branch)\n");
		return HIST_EXIT_USAGE;
	}
	if (commit_of(cli, cli->head ? cli->head : "HEAD", head))
		return HIST_EXIT_ERROR;
	if (cli->nprofiles) {
		cli->commit = head;
		r = hist_cmd__record(cli);
		if (r)
			return r;
	}
	argv[1] = cli->base;
	argv[2] = head;
	o = hist_git__run(cli->repo, argv, err, sizeof(err));
	if (!o || strlen(o) < 40) {
		fprintf(stderr, "xsprof-history: no merge base of %s and %s: %s\n", cli->base,
			cli->head ? cli->head : "HEAD", err);
		free(o);
		return HIST_EXIT_ERROR;
	}
	snprintf(merge, sizeof(merge), "%.40s", o);
	free(o);
	r = hist_store__runs(cli->store, cli->project, cli->bench, note_commit, &stored);
	o = r ? NULL : hist_git__run(cli->repo, rev, err, sizeof(err));
	if (!o) {
		fprintf(stderr, "xsprof-history: %s\n", r ? strerror(-r) : err);
		free(stored.v);
		return HIST_EXIT_ERROR;
	}
	/* The base: the newest commits with runs on the base's line, from the merge base back
	 * (the head's own commit is not its base). */
	for (line = strtok_r(o, "\n", &save); line && nbase < cli->base_window;
	     line = strtok_r(NULL, "\n", &save))
		for (size_t i = 0; i < stored.n; i++)
			if (!strcmp(stored.v[i], line) && strcmp(line, head)) {
				base[nbase++] = stored.v[i];
				break;
			}
	free(o);
	if (!nbase) {
		fprintf(stderr,
			"xsprof-history: no runs of %s/%s on %s at or before its merge base %.12s: "
			"record runs of the base branch first\n",
			cli->project, cli->bench, cli->base, merge);
		free(stored.v);
		return HIST_EXIT_ERROR;
	}
	snprintf(label, sizeof(label), "%s (%.12s, %zu commit%s with runs)", cli->base, merge,
		 nbase, nbase == 1 ? "" : "s");
	r = compare_sets(cli, base, nbase, h, 1, label, cli->head ? cli->head : "HEAD", base[0],
			 head);
	free(stored.v);
	return r;
}
