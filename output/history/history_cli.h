/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprof-history's commands and what they share: the options, a figure's runs read from the
 * store, the sources of a figure named. history_main.c parses and dispatches;
 * history_compare.c compares sets of runs (compare, ci); history_steps.c finds steps over
 * history (steps, trend).
 */
#ifndef XSPROF_OUTPUT_HISTORY_CLI_H
#define XSPROF_OUTPUT_HISTORY_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/history/history.h"
#include "output/history/history_render.h"
#include "output/history/history_stats.h"

struct hist_store;

#define HIST_EXIT_ERROR	     1
#define HIST_EXIT_USAGE	     2
#define HIST_EXIT_REGRESSION 3

#define HIST_MAX_LIST 64 /* --label, --binary, --figure given at most */

struct hist_cli {
	const char *db, *project, *bench, *branch, *host, *commit, *repo;
	const char *labels[HIST_MAX_LIST];
	size_t nlabels;
	const char *binaries[HIST_MAX_LIST];
	size_t nbinaries;
	const char *figures[HIST_MAX_LIST]; /* KIND:NAME */
	size_t nfigures;
	const char *markdown, *json, *badge, *output, *svg_dir, *flamegraph, *base, *head;
	double wall_s;	  /* < 0: not given */
	int64_t time;	  /* 0: now */
	double min_share; /* a figure compared holds this share of its kind's whole (0.01) */
	unsigned base_window, max_figures, top;
	bool quiet;
	bool no_stacks; /* record: figures only, not the run's folded stacks */
	struct hist_stats_opts stats;
	char **profiles;
	size_t nprofiles;
	struct hist_store *store;
};

/* One run's value of a figure, with the run's commit (the store's order kept). */
struct hist_value {
	int64_t run;
	char commit[41];
	double value;
};

struct hist_values {
	struct hist_value *v;
	size_t n, alloc;
};

/*
 * The runs of a figure on the commits of `commits` (NULL: every commit, in history order, on
 * cli->branch when set): a function's figure is 0 in a run of the same profile that lacks it.
 * 0 or -errno (err says).
 */
int hist_cli__values(struct hist_cli *cli, enum hist_kind kind, const char *name,
		     const char *const *commits, size_t ncommits, struct hist_values *out,
		     char *err, size_t errlen);
void hist_values__free(struct hist_values *v);

/* "KIND:NAME" into kind and name (a pointer into s). 0 or -EINVAL. */
int hist_cli__figure(const char *s, enum hist_kind *kind, const char **name);

/*
 * Names the commits in (good, bad] and those among them that touched the figure's source
 * (by --binary line tables, else by its name), into row (strings owned by *keep, freed with
 * hist_cli__keep_free). Without --repo, nothing. Errors are said on stderr, not fatal.
 */
struct hist_keep {
	void **p;
	size_t n, alloc;
};
void hist_cli__name_commits(struct hist_cli *cli, const char *good, const char *bad,
			    struct hist_row *row, struct hist_keep *keep);
void *hist_keep__add(struct hist_keep *k, void *p);
void hist_keep__free(struct hist_keep *k);

/* A figure's value for people: "12.3 ms", "4521 samples". */
void hist_cli__value(enum hist_kind kind, double v, char *buf, size_t len);

int hist_cmd__record(struct hist_cli *cli);
int hist_cmd__compare(struct hist_cli *cli);
int hist_cmd__ci(struct hist_cli *cli);
int hist_cmd__steps(struct hist_cli *cli);
int hist_cmd__trend(struct hist_cli *cli);

/* The steps of every figure of cli's project and bench, as `steps` finds them, as JSON (the
 * web view's): {project, bench, figures: [{kind, name, unit, commits, runs, steps: [{commit,
 * before, index, before_median, after_median, effect, ci, p, runs_before, runs_after}]}],
 * looked_at, alpha}. 0, or -errno with err said. */
int hist_steps__json(struct hist_cli *cli, FILE *f, char *err, size_t errlen);
/* One figure's trend plot, as `trend` writes it. -ENOENT: no run holds it. */
int hist_trend__write(struct hist_cli *cli, enum hist_kind kind, const char *name, FILE *f,
		      char *err, size_t errlen);

#endif
