/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiles over time (issue 55): what one run of a benchmark or job leaves in the history, and
 * what two sets of runs, or a figure's runs over commits, say about each other. The shared
 * shapes of the room output/history/:
 *   history_figures.c  a profile's figures (folded stacks, GPU report)      <- model, json-c
 *   history_store.c    the store: SQLite (default) or PostgreSQL, one schema and its migrations
 *   history_stats.c    rank statistics: a change against its base, change points over history
 *   history_render.c   what people and CI read: Markdown, JSON, a badge, a trend SVG
 *   history_main.c     xsprof-history, the command that drives them
 * Nothing here includes a writer of output/ or anything of daemon/ but daemon/base.
 */
#ifndef XSPROF_OUTPUT_HISTORY_H
#define XSPROF_OUTPUT_HISTORY_H

#include <stddef.h>
#include <stdint.h>

/* What a figure measures; its name in the store and in the outputs is hist_kind__name(). */
enum hist_kind {
	HIST_FN_SELF,	   /* "self": samples whose leaf is the function (name: the function) */
	HIST_FN_TOTAL,	   /* "total": samples with the function anywhere on the stack */
	HIST_KERNEL,	   /* "kernel": GPU time of a kernel (name: the kernel), ns */
	HIST_KERNEL_STACK, /* "kernel_stack": GPU time launched from a stack (name: its frames) */
	HIST_RANGE,	   /* "range": GPU time of an NVTX range (name: the range), ns */
	HIST_GPU_IDLE,	   /* "gpu_idle": GPU idle time by cause (name: the cause), ns */
	HIST_WALL,	   /* "wall": the run's wall time the user gives (name: "wall"), ns */
	HIST_SAMPLES,	   /* "samples": the profile's total (name: "all") */
	HIST_KIND_COUNT
};

const char *hist_kind__name(enum hist_kind k);
/* The kind of a name, or -1. */
int hist_kind__of(const char *name);
/* "samples" or "ns": the unit of a kind's values. */
const char *hist_kind__unit(enum hist_kind k);

/* One figure of one run. name is owned by whoever made the figure. */
struct hist_figure {
	enum hist_kind kind;
	const char *name;
	double value;
};

/* Where a run came from. Strings are the caller's; labels: "k=v,k=v" or NULL. */
struct hist_run {
	const char *project; /* required */
	const char *bench;   /* required: the benchmark or job */
	const char *commit;  /* required: the full hash */
	const char *branch;  /* NULL: unknown */
	const char *host;    /* NULL: this machine's name */
	const char *labels;
	int64_t time;	     /* seconds since the epoch (the commit's or the run's) */
	int64_t id;	     /* the store's, once stored */
};

/* A rank test's answer about a change (Pinpoint's three). */
enum hist_verdict { HIST_SAME, HIST_DIFFERENT, HIST_UNKNOWN };
const char *hist_verdict__name(enum hist_verdict v); /* "SAME", "DIFFERENT", "UNKNOWN" */

/* Settings of the statistics; hist_stats_opts__default() fills the defaults named here. */
struct hist_stats_opts {
	double min_effect; /* 0.05: the least relative change a user cares about */
	double alpha;	   /* 0.05: the rank test's two-sided level */
	double confidence; /* 0.95: of the effect's interval */
	unsigned min_runs; /* 3: fewer runs a side is UNKNOWN, asking for more */
};
void hist_stats_opts__default(struct hist_stats_opts *o);

/*
 * Two sets of runs of one figure compared (base before, head after). effect, ci_lo and ci_hi
 * are relative to the base's median: +0.15 is 15% higher in head. Higher is worse for every
 * kind (time, samples), so effect > 0 is a regression.
 *   DIFFERENT: the Mann-Whitney p < alpha, |effect| >= min_effect, and the interval wholly
 *              past min_effect / 2 on the effect's side;
 *   SAME: the effect's interval lies inside (-min_effect, +min_effect);
 *   UNKNOWN: neither (more runs would tell), or fewer than min_runs a side.
 */
struct hist_compare {
	size_t n_base, n_head;
	double base_median, head_median;
	double effect, ci_lo, ci_hi; /* Hodges-Lehmann shift and its interval, over base_median */
	double p;		     /* two-sided Mann-Whitney (exact where small, ties corrected) */
	enum hist_verdict verdict;
};

#endif
