// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output/history/history_store.h"
#include "output/history/history_store_db.h"

#define BATCH	    100 /* figures per INSERT: a round trip to PostgreSQL for a hundred */
#define COMMIT_MIN  7
#define COMMIT_MAX  64 /* SHA-256 object names */
#define META_SCHEMA "schema"

/*
 * The schema, one migration per version: migrations[i] takes a store from version i to i + 1.
 * Never edit one that has shipped; add the next. "{id}" is the backend's auto-numbered key.
 */
static const char *const migration_1[] = {
	"CREATE TABLE IF NOT EXISTS xsprof_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
	"CREATE TABLE runs (id {id}, project TEXT NOT NULL, bench TEXT NOT NULL, "
	"commit_hash TEXT NOT NULL, branch TEXT, host TEXT NOT NULL, labels TEXT, "
	"run_time BIGINT NOT NULL, created_at BIGINT NOT NULL)",
	"CREATE INDEX runs_bench ON runs (project, bench, run_time)",
	"CREATE INDEX runs_commit ON runs (project, bench, commit_hash)",
	"CREATE TABLE figures (run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "
	"kind TEXT NOT NULL, name TEXT NOT NULL, value DOUBLE PRECISION NOT NULL, "
	"PRIMARY KEY (run_id, kind, name))",
	"CREATE INDEX figures_name ON figures (kind, name)",
	NULL,
};

/* 2: a run's folded stacks, for the differential flamegraph between two commits' runs. */
static const char *const migration_2[] = {
	"CREATE TABLE profiles (run_id BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE, "
	"folded TEXT NOT NULL)",
	NULL,
};

static const char *const *const migrations[] = {migration_1, migration_2};

#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

#define RUN_COLS "r.id, r.project, r.bench, r.commit_hash, r.branch, r.host, r.labels, r.run_time"

struct hist_store {
	struct hist_db *db;
	int version;
	char err[512]; /* the last failure of a call without an err of its own */
};

/* ---- the schema's version and its migrations */

static int int_row(void *ctx, const char *const *cols, size_t n)
{
	char *end = NULL;
	long long v;

	errno = 0;
	v = n && cols[0] ? strtoll(cols[0], &end, 10) : 0;
	if (!end || *end || errno || v < 0 || v > INT32_MAX)
		return -EUCLEAN;
	*(int *)ctx = (int)v;
	return 0;
}

/* The store's schema version: 0 when it has none yet. */
static int read_version(struct hist_db *db, int *ret)
{
	int has = 0, v = 0, r = hist_db__query(db, db->ops->has_meta_sql, NULL, 0, int_row, &has);

	if (!r && has)
		r = hist_db__query(db,
				   "SELECT value FROM xsprof_meta WHERE key = '" META_SCHEMA "'",
				   NULL, 0, int_row, &v);
	if (r == -EUCLEAN && !db->err[0])
		snprintf(db->err, sizeof(db->err),
			 "%s: its xsprof_meta table holds no schema version that this xsprof "
			 "reads: is it a store of xsprof-history?",
			 db->where);
	if (!r)
		*ret = v;
	return r;
}

static int refuse_newer(struct hist_db *db, int v, char *err, size_t errlen)
{
	return hist_db__fail(err, errlen, -EPROTO,
			     "%s holds history of schema %d, newer than this xsprof's %d: use a "
			     "newer xsprof-history with it (nothing was written)",
			     db->where, v, SCHEMA_VERSION);
}

/* One step, "{id}" made the backend's key. */
static int run_step(struct hist_db *db, const char *sql)
{
	const char *at = strstr(sql, "{id}");
	char *text;
	int r;

	if (!at)
		return hist_db__exec(db, sql);
	if (asprintf(&text, "%.*s%s%s", (int)(at - sql), sql, db->ops->id_column, at + 4) < 0)
		return -ENOMEM;
	r = hist_db__exec(db, text);
	free(text);
	return r;
}

static int migrate(struct hist_db *db, int *version, char *err, size_t errlen)
{
	char v[16];
	const char *params[] = {META_SCHEMA, v};
	int r = db->ops->begin_write(db, 1), from = 0;

	/* Again, under the lock: another process may have migrated meanwhile. */
	if (!r)
		r = read_version(db, &from);
	if (!r && from > SCHEMA_VERSION) {
		hist_db__exec(db, "ROLLBACK");
		return refuse_newer(db, from, err, errlen);
	}
	for (int m = from; m < SCHEMA_VERSION && !r; m++)
		for (const char *const *step = migrations[m]; *step && !r; step++)
			r = run_step(db, *step);
	snprintf(v, sizeof(v), "%d", SCHEMA_VERSION);
	if (!r)
		r = hist_db__query(db,
				   "INSERT INTO xsprof_meta (key, value) VALUES (?, ?) "
				   "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
				   params, 2, NULL, NULL);
	if (!r)
		r = hist_db__exec(db, "COMMIT");
	if (r) {
		hist_db__exec(db, "ROLLBACK");
		return hist_db__fail(err, errlen, r,
				     "making the history schema %d in %s: %s (nothing was changed)",
				     SCHEMA_VERSION, db->where, db->err);
	}
	*version = SCHEMA_VERSION;
	return 0;
}

int hist_store__schema(void)
{
	return SCHEMA_VERSION;
}

int hist_store__version(const struct hist_store *s)
{
	return s ? s->version : 0;
}

const char *hist_store__last_error(const struct hist_store *s)
{
	return s ? s->err : "";
}

int hist_store__open(const char *url, struct hist_store **ret, char *err, size_t errlen)
{
	struct hist_store *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return hist_db__fail(err, errlen, -ENOMEM, "opening the store: out of memory");
	r = hist_db__open(url, &s->db, err, errlen);
	if (r) {
		free(s);
		return r;
	}
	r = read_version(s->db, &s->version);
	if (r)
		hist_db__fail(err, errlen, r, "%s", s->db->err);
	else if (s->version > SCHEMA_VERSION)
		r = refuse_newer(s->db, s->version, err, errlen);
	else if (s->version < SCHEMA_VERSION)
		r = migrate(s->db, &s->version, err, errlen);
	if (r) {
		hist_store__close(s);
		return r;
	}
	*ret = s;
	return 0;
}

void hist_store__close(struct hist_store *s)
{
	if (!s)
		return;
	hist_db__close(s->db);
	free(s);
}

/* ---- storing a run */

/* A commit as stored: 7 to 64 hex digits, lower case, in out (COMMIT_MAX + 1 bytes). */
static bool commit_ok(const char *c, char *out)
{
	size_t len = c ? strlen(c) : 0;

	if (len < COMMIT_MIN || len > COMMIT_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && !isxdigit((unsigned char)c[i]))
			return false;
		out[i] = (char)tolower((unsigned char)c[i]);
	}
	return true;
}

static int check_run(const struct hist_run *run, const struct hist_figure *f, size_t n,
		     char *commit, char *err, size_t errlen)
{
	if (!run || !run->project || !*run->project || !run->bench || !*run->bench)
		return hist_db__fail(err, errlen, -EINVAL,
				     "a run needs its project and its benchmark's name");
	if (!run->commit || !*run->commit)
		return hist_db__fail(err, errlen, -EINVAL,
				     "a run needs the commit it measured (its full hash); none "
				     "was given, so nothing was stored");
	if (!commit_ok(run->commit, commit))
		return hist_db__fail(
			err, errlen, -EINVAL,
			"the commit \"%.80s\" is not a hash of %d to %d hex digits: give "
			"git rev-parse HEAD's",
			run->commit, COMMIT_MIN, COMMIT_MAX);
	if (n && !f)
		return hist_db__fail(err, errlen, -EINVAL, "%zu figures given, but no array", n);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)f[i].kind >= HIST_KIND_COUNT || !f[i].name)
			return hist_db__fail(err, errlen, -EINVAL,
					     "figure %zu has %s; nothing was stored", i,
					     f[i].name ? "no kind this xsprof knows" : "no name");
		if (!isfinite(f[i].value))
			return hist_db__fail(err, errlen, -EINVAL,
					     "figure %zu (%s \"%.80s\") is %g, not a finite value; "
					     "nothing was stored",
					     i, hist_kind__name(f[i].kind), f[i].name, f[i].value);
	}
	return 0;
}

static int id_row(void *ctx, const char *const *cols, size_t n)
{
	char *end = NULL;

	errno = 0;
	*(int64_t *)ctx = n && cols[0] ? strtoll(cols[0], &end, 10) : 0;
	return !end || *end || errno ? -EIO : 0;
}

/* The INSERT of k figures. */
static char *figures_sql(size_t k)
{
	static const char head[] = "INSERT INTO figures (run_id, kind, name, value) VALUES ",
			  row[] = "(?, ?, ?, ?), ";
	size_t len = sizeof(head) + k * (sizeof(row) - 1);
	char *sql = malloc(len), *p;

	if (!sql)
		return NULL;
	p = stpcpy(sql, head);
	for (size_t i = 0; i < k; i++)
		p = stpcpy(p, row);
	p[-2] = 0; /* the last ", " */
	return sql;
}

static int insert_figures(struct hist_db *db, const char *run_id, const struct hist_figure *f,
			  size_t n)
{
	char vals[BATCH][32], *full = figures_sql(BATCH), *part = NULL;
	int r = full ? 0 : -ENOMEM;

	for (size_t at = 0; at < n && !r; at += BATCH) {
		size_t k = n - at < BATCH ? n - at : BATCH;
		const char *p[BATCH * 4];

		for (size_t i = 0; i < k; i++) {
			snprintf(vals[i], sizeof(vals[i]), "%.17g", f[at + i].value);
			p[4 * i] = run_id;
			p[4 * i + 1] = hist_kind__name(f[at + i].kind);
			p[4 * i + 2] = f[at + i].name;
			p[4 * i + 3] = vals[i];
		}
		if (k < BATCH && !(part = figures_sql(k)))
			r = -ENOMEM;
		if (!r)
			r = hist_db__query(db, k < BATCH ? part : full, p, 4 * k, NULL, NULL);
	}
	if (r == -ENOMEM && !db->err[0])
		snprintf(db->err, sizeof(db->err), "%s: out of memory", db->where);
	free(full);
	free(part);
	return r;
}

int hist_store__add_run(struct hist_store *s, struct hist_run *run, const struct hist_figure *f,
			size_t n, char *err, size_t errlen)
{
	char commit[COMMIT_MAX + 1], host[256], when[24], made[24], id_text[24];
	const char *params[8];
	int64_t id = 0;
	int r;

	if (!s)
		return hist_db__fail(err, errlen, -EINVAL, "no store");
	r = check_run(run, f, n, commit, err, errlen);
	if (r)
		return r;
	if (run->host)
		snprintf(host, sizeof(host), "%s", run->host);
	else if (gethostname(host, sizeof(host)) || !host[0])
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;
	snprintf(when, sizeof(when), "%" PRId64, run->time);
	snprintf(made, sizeof(made), "%lld", (long long)time(NULL));
	params[0] = run->project;
	params[1] = run->bench;
	params[2] = commit;
	params[3] = run->branch;
	params[4] = host;
	params[5] = run->labels;
	params[6] = when;
	params[7] = made;
	s->db->err[0] = 0;
	r = s->db->ops->begin_write(s->db, 0);
	if (!r)
		r = hist_db__query(s->db,
				   "INSERT INTO runs (project, bench, commit_hash, branch, host, "
				   "labels, run_time, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
				   "RETURNING id",
				   params, 8, id_row, &id);
	snprintf(id_text, sizeof(id_text), "%" PRId64, id);
	if (!r)
		r = insert_figures(s->db, id_text, f, n);
	if (!r)
		r = hist_db__exec(s->db, "COMMIT");
	if (r) {
		char why[sizeof(s->db->err)];

		snprintf(why, sizeof(why), "%s", s->db->err);
		hist_db__exec(s->db, "ROLLBACK");
		return hist_db__fail(err, errlen, r,
				     "storing the run of %.80s (%.80s, %.12s): %s; nothing of the "
				     "run was stored",
				     run->project, run->bench, commit, why);
	}
	run->id = id;
	return 0;
}

/* ---- reading */

struct reader {
	struct hist_store *s;
	hist_value_fn value;
	hist_run_fn run;
	hist_name_fn name;
	hist_profile_fn profile;
	hist_bench_fn bench;
	void *ctx;
	int stopped; /* what the caller's function returned, when not 0 */
};

static int parse_run(const char *const *c, size_t n, struct hist_run *r)
{
	char *end1 = NULL, *end2 = NULL;

	if (n < 8 || !c[0] || !c[1] || !c[2] || !c[3] || !c[5] || !c[7])
		return -EIO;
	*r = (struct hist_run){.project = c[1],
			       .bench = c[2],
			       .commit = c[3],
			       .branch = c[4],
			       .host = c[5],
			       .labels = c[6]};
	r->id = strtoll(c[0], &end1, 10);
	r->time = strtoll(c[7], &end2, 10);
	return *end1 || *end2 ? -EIO : 0;
}

static int value_row(void *ctx, const char *const *c, size_t n)
{
	struct reader *rd = ctx;
	struct hist_run run;
	char *end = NULL;
	double v;

	if (n < 9 || parse_run(c, n, &run) || !c[8])
		return -EIO;
	v = strtod(c[8], &end);
	if (*end)
		return -EIO;
	rd->stopped = rd->value(rd->ctx, &run, v);
	return rd->stopped;
}

static int run_row(void *ctx, const char *const *c, size_t n)
{
	struct reader *rd = ctx;
	struct hist_run run;

	if (parse_run(c, n, &run))
		return -EIO;
	rd->stopped = rd->run(rd->ctx, &run);
	return rd->stopped;
}

static int name_row(void *ctx, const char *const *c, size_t n)
{
	struct reader *rd = ctx;
	int kind = n >= 2 && c[0] && c[1] ? hist_kind__of(c[0]) : -2;

	if (kind == -2)
		return -EIO;
	if (kind < 0) /* a kind of a later xsprof, in a store of the same schema */
		return 0;
	rd->stopped = rd->name(rd->ctx, (enum hist_kind)kind, c[1]);
	return rd->stopped;
}

/* A query whose rows go to the caller: what it returned, or -errno with s->err said. */
static int read_rows(struct reader *rd, const char *sql, const char *const *params, size_t n,
		     hist_db_row_fn row)
{
	struct hist_store *s = rd->s;
	int r;

	s->db->err[0] = 0;
	r = hist_db__query(s->db, sql, params, n, row, rd);
	if (!r || rd->stopped)
		return r;
	if (s->db->err[0])
		snprintf(s->err, sizeof(s->err), "%s", s->db->err);
	else
		snprintf(s->err, sizeof(s->err), "%s: a row that this xsprof cannot read",
			 s->db->where);
	return r;
}

static int need(struct hist_store *s, bool ok)
{
	if (ok)
		return 0;
	if (s)
		snprintf(s->err, sizeof(s->err), "a query needs its project, benchmark and figure");
	return -EINVAL;
}

int hist_store__values(struct hist_store *s, const char *project, const char *bench,
		       const char *branch, enum hist_kind kind, const char *name,
		       hist_value_fn each, void *ctx)
{
	const char *params[] = {project, bench, hist_kind__name(kind), name, branch};
	struct reader rd = {.s = s, .value = each, .ctx = ctx};
	int r = need(s, s && project && bench && name && each && (unsigned)kind < HIST_KIND_COUNT);

	/* Commits by their first run; a commit's runs together, by time. */
	return r ? r
		 : read_rows(&rd,
			     branch ? "SELECT " RUN_COLS ", f.value, MIN(r.run_time) OVER "
				      "(PARTITION BY r.commit_hash) AS commit_first "
				      "FROM runs r JOIN figures f ON f.run_id = r.id "
				      "WHERE r.project = ? AND r.bench = ? AND f.kind = ? AND "
				      "f.name = ? AND r.branch = ? "
				      "ORDER BY commit_first, r.commit_hash, r.run_time, r.id"
				    : "SELECT " RUN_COLS ", f.value, MIN(r.run_time) OVER "
				      "(PARTITION BY r.commit_hash) AS commit_first "
				      "FROM runs r JOIN figures f ON f.run_id = r.id "
				      "WHERE r.project = ? AND r.bench = ? AND f.kind = ? AND "
				      "f.name = ? "
				      "ORDER BY commit_first, r.commit_hash, r.run_time, r.id",
			     params, branch ? 5 : 4, value_row);
}

struct commits {
	char found[2][COMMIT_MAX + 1];
	size_t n;
};

static int commit_row(void *ctx, const char *const *c, size_t n)
{
	struct commits *m = ctx;

	if (!n || !c[0])
		return -EIO;
	if (m->n < 2)
		snprintf(m->found[m->n], sizeof(m->found[0]), "%s", c[0]);
	m->n++;
	return 0;
}

/* The one stored commit of (project, bench) that prefix starts. */
static int resolve_commit(struct hist_store *s, const char *project, const char *bench,
			  const char *prefix, char *full)
{
	char low[COMMIT_MAX + 2];
	const char *params[] = {project, bench, low};
	struct commits m = {0};
	int r;

	if (!commit_ok(prefix, low)) {
		snprintf(s->err, sizeof(s->err),
			 "\"%.80s\" is no commit: give %d to %d of its hash's hex digits", prefix,
			 COMMIT_MIN, COMMIT_MAX);
		return -EINVAL;
	}
	strcat(low, "%"); /* hex digits hold no LIKE wildcard */
	s->db->err[0] = 0;
	r = hist_db__query(s->db,
			   "SELECT DISTINCT commit_hash FROM runs WHERE project = ? AND bench = ? "
			   "AND commit_hash LIKE ? ORDER BY commit_hash LIMIT 2",
			   params, 3, commit_row, &m);
	if (r) {
		snprintf(s->err, sizeof(s->err), "%s", s->db->err);
		return r;
	}
	low[strlen(low) - 1] = 0;
	if (!m.n) {
		snprintf(s->err, sizeof(s->err), "no run of %.80s (%.80s) measured a commit %s",
			 project, bench, low);
		return -ENOENT;
	}
	if (m.n > 1) {
		snprintf(s->err, sizeof(s->err),
			 "%s names more than one commit of %.80s (%.80s): %.12s, %.12s: give more "
			 "of its digits",
			 low, project, bench, m.found[0], m.found[1]);
		return -ENOTUNIQ;
	}
	memcpy(full, m.found[0], sizeof(m.found[0]));
	return 0;
}

int hist_store__commit_values(struct hist_store *s, const char *project, const char *bench,
			      const char *commit, enum hist_kind kind, const char *name,
			      hist_value_fn each, void *ctx)
{
	char full[COMMIT_MAX + 1];
	const char *params[] = {project, bench, full, hist_kind__name(kind), name};
	struct reader rd = {.s = s, .value = each, .ctx = ctx};
	int r = need(s, s && project && bench && commit && name && each &&
				(unsigned)kind < HIST_KIND_COUNT);

	if (!r)
		r = resolve_commit(s, project, bench, commit, full);
	return r ? r
		 : read_rows(&rd,
			     "SELECT " RUN_COLS ", f.value FROM runs r JOIN figures f ON "
			     "f.run_id = r.id WHERE r.project = ? AND r.bench = ? AND "
			     "r.commit_hash = ? AND f.kind = ? AND f.name = ? "
			     "ORDER BY r.run_time, r.id",
			     params, 5, value_row);
}

int hist_store__names(struct hist_store *s, const char *project, const char *bench,
		      hist_name_fn each, void *ctx)
{
	const char *params[] = {project, bench};
	struct reader rd = {.s = s, .name = each, .ctx = ctx};
	int r = need(s, s && project && bench && each);

	return r ? r
		 : read_rows(&rd,
			     "SELECT DISTINCT f.kind, f.name FROM figures f JOIN runs r ON "
			     "r.id = f.run_id WHERE r.project = ? AND r.bench = ? "
			     "ORDER BY f.kind, f.name",
			     params, 2, name_row);
}

int hist_store__runs(struct hist_store *s, const char *project, const char *bench, hist_run_fn each,
		     void *ctx)
{
	const char *params[] = {project, bench};
	struct reader rd = {.s = s, .run = each, .ctx = ctx};
	int r = need(s, s && project && bench && each);

	return r ? r
		 : read_rows(&rd,
			     "SELECT " RUN_COLS " FROM runs r WHERE r.project = ? AND "
			     "r.bench = ? ORDER BY r.run_time, r.id",
			     params, 2, run_row);
}

/* ---- profiles and benchmarks */

int hist_store__add_profile(struct hist_store *s, int64_t run_id, const char *folded, size_t len,
			    char *err, size_t errlen)
{
	char id[24];
	const char *params[] = {id, folded};
	int r;

	if (!s || !folded)
		return hist_db__fail(err, errlen, -EINVAL, "no store or no profile");
	if (len > HIST_PROFILE_MAX || strlen(folded) != len)
		return hist_db__fail(
			err, errlen, -E2BIG,
			"the folded stacks are %zu KiB%s: over the %d MiB a run keeps, "
			"so only its figures were stored",
			len >> 10, strlen(folded) != len ? " with a NUL in them" : "",
			HIST_PROFILE_MAX >> 20);
	snprintf(id, sizeof(id), "%" PRId64, run_id);
	s->db->err[0] = 0;
	r = s->db->ops->begin_write(s->db, 0);
	if (!r)
		r = hist_db__query(s->db, "INSERT INTO profiles (run_id, folded) VALUES (?, ?)",
				   params, 2, NULL, NULL);
	if (!r)
		r = hist_db__exec(s->db, "COMMIT");
	if (r) {
		char why[sizeof(s->db->err)];

		snprintf(why, sizeof(why), "%s", s->db->err);
		hist_db__exec(s->db, "ROLLBACK");
		return hist_db__fail(err, errlen, r, "keeping run %" PRId64 "'s stacks: %s", run_id,
				     why);
	}
	return 0;
}

static int profile_row(void *ctx, const char *const *c, size_t n)
{
	struct reader *rd = ctx;
	struct hist_run run;

	if (n < 9 || parse_run(c, n, &run) || !c[8])
		return -EIO;
	rd->stopped = rd->profile(rd->ctx, &run, c[8]);
	return rd->stopped;
}

int hist_store__profiles(struct hist_store *s, const char *project, const char *bench,
			 const char *commit, hist_profile_fn each, void *ctx)
{
	char full[COMMIT_MAX + 1];
	const char *params[] = {project, bench, full};
	struct reader rd = {.s = s, .profile = each, .ctx = ctx};
	int r = need(s, s && project && bench && commit && each);

	if (!r)
		r = resolve_commit(s, project, bench, commit, full);
	return r ? r
		 : read_rows(&rd,
			     "SELECT " RUN_COLS ", p.folded FROM runs r JOIN profiles p ON "
			     "p.run_id = r.id WHERE r.project = ? AND r.bench = ? AND "
			     "r.commit_hash = ? ORDER BY r.run_time, r.id",
			     params, 3, profile_row);
}

static int bench_row(void *ctx, const char *const *c, size_t n)
{
	struct reader *rd = ctx;
	char *e1 = NULL, *e2 = NULL, *e3 = NULL;
	long long runs, first, last;

	if (n < 5 || !c[0] || !c[1] || !c[2] || !c[3] || !c[4])
		return -EIO;
	runs = strtoll(c[2], &e1, 10);
	first = strtoll(c[3], &e2, 10);
	last = strtoll(c[4], &e3, 10);
	if (*e1 || *e2 || *e3)
		return -EIO;
	rd->stopped = rd->bench(rd->ctx, c[0], c[1], (size_t)runs, first, last);
	return rd->stopped;
}

int hist_store__benches(struct hist_store *s, hist_bench_fn each, void *ctx)
{
	struct reader rd = {.s = s, .bench = each, .ctx = ctx};
	int r = need(s, s && each);

	return r ? r
		 : read_rows(&rd,
			     "SELECT project, bench, COUNT(*), MIN(run_time), MAX(run_time) "
			     "FROM runs GROUP BY project, bench ORDER BY project, bench",
			     NULL, 0, bench_row);
}
