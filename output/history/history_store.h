/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The history store: runs and their figures, in SQLite (a file: the default, nothing to start)
 * or PostgreSQL (a team's CI runners sharing history, through libpq). One schema, one list of
 * migrations, the same queries on both. A store from a newer schema is refused, not written;
 * a failed write leaves what was stored as it was (one transaction per run).
 */
#ifndef XSPROF_OUTPUT_HISTORY_STORE_H
#define XSPROF_OUTPUT_HISTORY_STORE_H

#include "output/history/history.h"

struct hist_store;

/*
 * Opens (creating and migrating as needed) the store at url: "postgresql://..." or
 * "postgres://..." (libpq's URI; also a "host=... dbname=..." string), "sqlite:PATH", or a
 * plain PATH (SQLite). 0, or -errno with a sentence for the user in err (corrupt file, newer
 * schema, server unreachable, ...).
 */
int hist_store__open(const char *url, struct hist_store **ret, char *err, size_t errlen);
void hist_store__close(struct hist_store *s);

/* The schema version this build writes, and the store's. */
int hist_store__schema(void);
int hist_store__version(const struct hist_store *s);

/* Stores a run and its n figures in one transaction; run->id is set. 0 or -errno (err says). */
int hist_store__add_run(struct hist_store *s, struct hist_run *run, const struct hist_figure *f,
			size_t n, char *err, size_t errlen);

/*
 * The values of one figure (kind, name) of (project, bench), per commit: calls each(ctx) once
 * per run, commits in the order of their runs' time (oldest first), runs of a commit together.
 * branch NULL: every branch. 0, -errno, or what each returned when not 0 (it stops there).
 */
typedef int (*hist_value_fn)(void *ctx, const struct hist_run *run, double value);
int hist_store__values(struct hist_store *s, const char *project, const char *bench,
		       const char *branch, enum hist_kind kind, const char *name,
		       hist_value_fn each, void *ctx);

/*
 * The values of one figure on one commit (a prefix of 7 or more hex digits is enough), runs by
 * time. -EINVAL: not 7 to 64 hex digits; -ENOENT: no run of such a commit; -ENOTUNIQ: the
 * prefix starts more than one commit (hist_store__last_error names two).
 */
int hist_store__commit_values(struct hist_store *s, const char *project, const char *bench,
			      const char *commit, enum hist_kind kind, const char *name,
			      hist_value_fn each, void *ctx);

/* The sentence about the last failure of values, commit_values, names or runs (calls with no
 * err of their own), or "". */
const char *hist_store__last_error(const struct hist_store *s);

/* Every (kind, name) stored for (project, bench), each once. */
typedef int (*hist_name_fn)(void *ctx, enum hist_kind kind, const char *name);
int hist_store__names(struct hist_store *s, const char *project, const char *bench,
		      hist_name_fn each, void *ctx);

/* Every run of (project, bench), oldest first (runs with no figures too). */
typedef int (*hist_run_fn)(void *ctx, const struct hist_run *run);
int hist_store__runs(struct hist_store *s, const char *project, const char *bench, hist_run_fn each,
		     void *ctx);

/* The most of a run's folded stacks the store keeps (hist_store__add_profile). */
#define HIST_PROFILE_MAX (16 << 20)

/* Keeps run_id's folded stacks (len bytes, no NUL in them), for differential flamegraphs
 * between commits. -E2BIG past HIST_PROFILE_MAX. 0 or -errno (err says). */
int hist_store__add_profile(struct hist_store *s, int64_t run_id, const char *folded, size_t len,
			    char *err, size_t errlen);

/* The kept folded stacks of every run of one commit (a prefix of 7 or more hex digits), by
 * time; errors as hist_store__commit_values'. */
typedef int (*hist_profile_fn)(void *ctx, const struct hist_run *run, const char *folded);
int hist_store__profiles(struct hist_store *s, const char *project, const char *bench,
			 const char *commit, hist_profile_fn each, void *ctx);

/* Every (project, bench) in the store with its number of runs and their first and last time. */
typedef int (*hist_bench_fn)(void *ctx, const char *project, const char *bench, size_t runs,
			     int64_t first, int64_t last);
int hist_store__benches(struct hist_store *s, hist_bench_fn each, void *ctx);

#endif
