/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What people and CI read from a comparison or a history: a Markdown comment body (a table of
 * what regressed and improved, the commits, the differential flamegraph), a JSON result, a
 * badge (SVG), and a trend plot (SVG) per figure. Each renders what it is handed.
 */
#ifndef XSPROF_OUTPUT_HISTORY_RENDER_H
#define XSPROF_OUTPUT_HISTORY_RENDER_H

#include <stdio.h>

#include "output/history/history.h"
#include "output/history/history_stats.h"

/* A commit between the last good run and the first bad one. */
struct hist_commit {
	const char *hash, *subject;
	int touched; /* it changed the figure's source (file and lines, or file by name) */
};

/* One figure compared. */
struct hist_row {
	enum hist_kind kind;
	const char *name;
	struct hist_compare cmp;
	const struct hist_commit *commits; /* NULL: none named */
	size_t ncommits;
	const char *source;	/* "file:first-last" or "file", NULL: not found */
	const char *source_how; /* "line tables", "name" (no line information), NULL */
};

struct hist_report {
	const char *project, *bench;
	const char *base, *head;     /* refs or commits, as the user named them */
	const struct hist_row *rows; /* every figure compared */
	size_t n;
	const char *flamegraph; /* the differential flamegraph's path or URL, or NULL */
	unsigned min_runs;	/* for "UNKNOWN: run more" advice */
};

/* Counts of the rows' verdicts; regressions: DIFFERENT with effect > 0. */
size_t hist_report__regressions(const struct hist_report *r);

/* The Markdown body: a headline, a table of DIFFERENT rows (regressed, then improved), then
 * UNKNOWN ones, their commits, the flamegraph's link. 0 or -errno. */
int hist_render__markdown(const struct hist_report *r, FILE *f);
/* Every row, as JSON. 0 or -errno. */
int hist_render__json(const struct hist_report *r, FILE *f);
/* s as a JSON string, quoted and escaped (NULL as ""). */
void hist_render__json_string(FILE *f, const char *s);
/* A shields-style badge: "perf | N regressions" (red), "no change" (green), "unknown" (grey). */
int hist_render__badge(const struct hist_report *r, FILE *f);

/* A figure's runs over commits as points, their medians as a line, steps marked; labels[i]
 * names commit i (a short hash). 0 or -errno. */
int hist_render__trend_svg(const char *title, enum hist_kind kind, const char *const *labels,
			   const struct hist_series *s, const struct hist_step *steps,
			   size_t nsteps, FILE *f);

#endif
