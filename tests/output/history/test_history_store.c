// SPDX-License-Identifier: Apache-2.0
/*
 * The history store (output/history/history_store.h) on SQLite, or, with XSPROF_TEST_PG_URL
 * set (tests/output/history/with_postgres.sh starts a PostgreSQL server and sets it), the same
 * tests on PostgreSQL. Asked for PostgreSQL, a URL that does not work fails every test: it
 * never falls back to SQLite.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/fileio.h"
#include "output/history/history_store.h"
#include "output/history/history_store_db.h"

#define P "xsprof"
#define B "train-step"

#define C1 "1111111aaaa0000000000000000000000000000a"
#define C2 "2222222bbbb0000000000000000000000000000b"
#define C3 "3333333cccc0000000000000000000000000000c"

static char tmp_dir[64];
static char url[512];

static const char *pg_url(void)
{
	const char *u = getenv("XSPROF_TEST_PG_URL");

	return u && *u ? u : NULL;
}

/* A raw connection to the test's store, below the store's own calls. */
static struct hist_db *raw(void)
{
	struct hist_db *db = NULL;
	char err[512] = "";

	cr_assert_eq(hist_db__open(url, &db, err, sizeof(err)), 0, "%s", err);
	return db;
}

static void raw_exec(const char *sql)
{
	struct hist_db *db = raw();

	cr_assert_eq(hist_db__exec(db, sql), 0, "%s: %s", sql, db->err);
	hist_db__close(db);
}

static int text_row(void *ctx, const char *const *cols, size_t n)
{
	snprintf(ctx, 64, "%s", n && cols[0] ? cols[0] : "NULL");
	return 0;
}

/* The one value sql selects, as text. */
static const char *raw_value(const char *sql)
{
	static char out[64];
	struct hist_db *db = raw();

	strcpy(out, "(no row)");
	cr_assert_eq(hist_db__query(db, sql, NULL, 0, text_row, out), 0, "%s: %s", sql, db->err);
	hist_db__close(db);
	return out;
}

/* An empty store for each test: a new file, or the PostgreSQL database emptied. */
static void setup(void)
{
	if (pg_url()) {
		snprintf(url, sizeof(url), "%s", pg_url());
		raw_exec("DROP TABLE IF EXISTS profiles, figures, runs, xsprof_meta CASCADE");
	}
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/xsprof-store-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp_dir));
	if (!pg_url())
		snprintf(url, sizeof(url), "%s/history.db", tmp_dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp_dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp_dir);
}

TestSuite(store, .init = setup, .fini = teardown);

static struct hist_store *open_store(void)
{
	struct hist_store *s = NULL;
	char err[512] = "";

	cr_assert_eq(hist_store__open(url, &s, err, sizeof(err)), 0, "%s", err);
	return s;
}

static int64_t add(struct hist_store *s, const char *commit, const char *host, int64_t t,
		   double self_lex)
{
	struct hist_figure f[] = {
		{HIST_FN_SELF, "lex", self_lex},
		{HIST_FN_TOTAL, "main", 100},
		{HIST_KERNEL, "gemm", 0.1},
		{HIST_WALL, "wall", 123456789.125},
	};
	struct hist_run run = {.project = P,
			       .bench = B,
			       .commit = commit,
			       .branch = "main",
			       .host = host,
			       .labels = "gpu=h100,batch=8",
			       .time = t};
	char err[512] = "";

	cr_assert_eq(hist_store__add_run(s, &run, f, 4, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(run.id, 0);
	return run.id;
}

struct got {
	size_t n;
	int64_t id[16];
	char commit[16][65], host[16][64], branch[16][16];
	double v[16];
	int stop_after; /* 0: never */
};

static int got_value(void *ctx, const struct hist_run *r, double v)
{
	struct got *g = ctx;

	cr_assert_lt(g->n, 16);
	g->id[g->n] = r->id;
	snprintf(g->commit[g->n], sizeof(g->commit[0]), "%s", r->commit);
	snprintf(g->host[g->n], sizeof(g->host[0]), "%s", r->host);
	snprintf(g->branch[g->n], sizeof(g->branch[0]), "%s", r->branch ? r->branch : "NULL");
	cr_expect_str_eq(r->project, P);
	cr_expect_str_eq(r->bench, B);
	g->v[g->n++] = v;
	return g->stop_after && g->n == (size_t)g->stop_after ? 42 : 0;
}

static int got_run(void *ctx, const struct hist_run *r)
{
	return got_value(ctx, r, (double)r->time);
}

static int got_name(void *ctx, enum hist_kind kind, const char *name)
{
	struct got *g = ctx;

	cr_assert_lt(g->n, 16);
	snprintf(g->commit[g->n++], sizeof(g->commit[0]), "%s %s", hist_kind__name(kind), name);
	return 0;
}

Test(store, is_the_backend_asked_for)
{
	struct hist_db *db = raw();

	cr_expect_str_eq(db->ops->what, pg_url() ? "PostgreSQL" : "SQLite");
	hist_db__close(db);
}

Test(store, round_trip)
{
	struct hist_store *s = open_store();
	struct got g = {0}, runs = {0}, names = {0};
	struct hist_run other = {
		.project = P, .bench = B, .commit = C3, .branch = "dev", .host = "h", .time = 150};
	struct hist_figure f = {HIST_FN_SELF, "lex", 7};
	char err[512] = "";
	int64_t a;

	cr_expect_eq(hist_store__version(s), hist_store__schema());
	cr_expect_geq(hist_store__schema(), 1);
	/* C1's runs at 300 and 100 (first: 100), C2's at 200: C1's both, then C2's. */
	a = add(s, C1, "h", 300, 10);
	add(s, C2, "h", 200, 20);
	add(s, C1, "h", 100, 30);
	cr_assert_eq(hist_store__add_run(s, &other, &f, 1, err, sizeof(err)), 0, "%s", err);
	hist_store__close(s);

	s = open_store(); /* what was stored stays */
	cr_assert_eq(hist_store__values(s, P, B, "main", HIST_FN_SELF, "lex", got_value, &g), 0,
		     "%s", hist_store__last_error(s));
	cr_assert_eq(g.n, 3);
	cr_expect_str_eq(g.commit[0], C1);
	cr_expect_eq(g.v[0], 30);
	cr_expect_str_eq(g.commit[1], C1);
	cr_expect_eq(g.v[1], 10);
	cr_expect_eq(g.id[1], a);
	cr_expect_str_eq(g.commit[2], C2);
	cr_expect_eq(g.v[2], 20);
	cr_expect_str_eq(g.branch[0], "main");

	memset(&g, 0, sizeof(g));
	cr_assert_eq(hist_store__values(s, P, B, NULL, HIST_FN_SELF, "lex", got_value, &g), 0);
	cr_assert_eq(g.n, 4, "every branch");
	cr_expect_str_eq(g.commit[2], C3);
	cr_expect_str_eq(g.branch[2], "dev");

	memset(&g, 0, sizeof(g));
	cr_assert_eq(hist_store__values(s, P, B, NULL, HIST_WALL, "wall", got_value, &g), 0);
	cr_assert_eq(g.n, 3);
	cr_expect_eq(g.v[0], 123456789.125);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(hist_store__values(s, P, B, NULL, HIST_KERNEL, "gemm", got_value, &g), 0);
	cr_assert_eq(g.n, 3);
	cr_expect_eq(g.v[0], 0.1, "a double comes back exact: %.17g", g.v[0]);

	memset(&g, 0, sizeof(g));
	cr_assert_eq(hist_store__values(s, P, "other", NULL, HIST_FN_SELF, "lex", got_value, &g),
		     0);
	cr_expect_eq(g.n, 0);

	cr_assert_eq(hist_store__runs(s, P, B, got_run, &runs), 0);
	cr_assert_eq(runs.n, 4);
	cr_expect_eq(runs.v[0], 100);
	cr_expect_eq(runs.v[1], 150);
	cr_expect_eq(runs.v[3], 300);

	cr_assert_eq(hist_store__names(s, P, B, got_name, &names), 0);
	cr_assert_eq(names.n, 4);
	for (size_t i = 0; i < names.n; i++)
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(names.commit[i], names.commit[j], "each name once");
	hist_store__close(s);
}

Test(store, many_figures_in_batches)
{
	struct hist_store *s = open_store();
	struct hist_figure f[250];
	char names[250][16], err[512] = "";
	struct hist_run run = {.project = P, .bench = B, .commit = C1, .time = 1};
	struct got g = {0};
	size_t n = 0;

	for (int i = 0; i < 250; i++) {
		snprintf(names[i], sizeof(names[i]), "fn%d", i);
		f[i] = (struct hist_figure){HIST_FN_SELF, names[i], i};
	}
	cr_assert_eq(hist_store__add_run(s, &run, f, 250, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hist_store__values(s, P, B, NULL, HIST_FN_SELF, "fn249", got_value, &g), 0);
	cr_assert_eq(g.n, 1);
	cr_expect_eq(g.v[0], 249);
	{
		char host[256] = "";

		gethostname(host, sizeof(host));
		cr_expect_str_eq(g.host[0], host, "no host given: this machine's");
	}
	for (int i = 0; i < 250; i++) {
		struct got one = {0};

		cr_assert_eq(
			hist_store__values(s, P, B, NULL, HIST_FN_SELF, names[i], got_value, &one),
			0);
		n += one.n == 1 && one.v[0] == i;
	}
	cr_expect_eq(n, 250);
	hist_store__close(s);
}

Test(store, newer_schema_refused)
{
	struct hist_store *s = open_store();
	char err[512] = "", *before = NULL, *after = NULL, sql[128];
	size_t blen = 0, alen = 0;

	add(s, C1, "h", 1, 1);
	hist_store__close(s);
	raw_exec("UPDATE xsprof_meta SET value = '99' WHERE key = 'schema'");
	if (!pg_url())
		cr_assert_eq(file__read_all(url, 1 << 24, &before, &blen), 0);

	s = NULL;
	cr_expect_eq(hist_store__open(url, &s, err, sizeof(err)), -EPROTO, "%s", err);
	cr_expect_null(s);
	cr_expect_not_null(strstr(err, "schema 99"), "%s", err);
	cr_expect_not_null(strstr(err, "newer"), "%s", err);
	cr_expect_not_null(strstr(err, "nothing was written"), "%s", err);

	cr_expect_str_eq(raw_value("SELECT value FROM xsprof_meta WHERE key = 'schema'"), "99");
	cr_expect_str_eq(raw_value("SELECT count(*) FROM runs"), "1");
	cr_expect_str_eq(raw_value("SELECT count(*) FROM figures"), "4");
	if (!pg_url()) {
		cr_assert_eq(file__read_all(url, 1 << 24, &after, &alen), 0);
		cr_expect(blen == alen && !memcmp(before, after, blen), "the file changed");
		cr_expect_neq(access(strcat(strcpy(sql, url), "-journal"), F_OK), 0);
	}
	free(before);
	free(after);

	/* Its own version back: the store opens, and its run is there. */
	snprintf(sql, sizeof(sql), "UPDATE xsprof_meta SET value = '%d' WHERE key = 'schema'",
		 hist_store__schema());
	raw_exec(sql);
	s = open_store();
	{
		struct got g = {0};

		cr_assert_eq(hist_store__runs(s, P, B, got_run, &g), 0);
		cr_expect_eq(g.n, 1);
	}
	hist_store__close(s);
}

Test(store, corrupt_sqlite_file)
{
	char path[128], err[512] = "", junk[8192], *back = NULL;
	struct hist_store *s = NULL;
	size_t len = 0;
	FILE *f;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7 + 3);
	memcpy(junk, "not a database, just bytes", 26);
	snprintf(path, sizeof(path), "%s/garbage.db", tmp_dir);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	cr_assert_eq(fclose(f), 0);

	cr_expect_eq(hist_store__open(path, &s, err, sizeof(err)), -EUCLEAN, "%s", err);
	cr_expect_null(s);
	cr_expect_not_null(strstr(err, path), "%s", err);
	cr_expect_not_null(strstr(err, "not an SQLite database, or it is corrupt"), "%s", err);
	cr_assert_eq(file__read_all(path, 1 << 20, &back, &len), 0);
	cr_expect(len == sizeof(junk) && !memcmp(back, junk, len), "the file changed");
	free(back);

	snprintf(path, sizeof(path), "sqlite:%s/no-such-dir/h.db", tmp_dir);
	cr_expect_eq(hist_store__open(path, &s, err, sizeof(err)), -ENOENT, "%s", err);
	cr_expect_not_null(strstr(err, "no-such-dir/h.db"), "%s", err);
}

Test(store, unreachable_postgres)
{
	const char *u = "postgresql://xsprof:s3cret@/history?host=/nonexistent-xsprof-dir";
	struct hist_store *s = NULL;
	char err[512] = "";
	int r = hist_store__open(u, &s, err, sizeof(err));

	cr_expect_null(s);
	cr_expect_eq(r, -ECONNREFUSED, "%d: %s", r, err);
	cr_expect_not_null(strstr(err, "cannot connect to the PostgreSQL database \"history\""),
			   "%s", err);
	cr_expect_not_null(strstr(err, "/nonexistent-xsprof-dir"), "%s", err);
	cr_expect_null(strstr(err, "s3cret"), "the password is never shown: %s", err);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
}

Test(store, run_without_commit_refused)
{
	struct hist_store *s = open_store();
	struct hist_figure f = {HIST_FN_SELF, "lex", 1};
	struct hist_run run = {.project = P, .bench = B, .time = 1, .id = -7};
	const char *bad[] = {NULL, "", "abc", "HEAD~1", "zzzzzzzzzz"};
	struct got g = {0};
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run.commit = bad[i];
		err[0] = 0;
		cr_expect_eq(hist_store__add_run(s, &run, &f, 1, err, sizeof(err)), -EINVAL);
		cr_expect_not_null(strstr(err, "commit"), "%s", err);
	}
	cr_expect_eq(run.id, -7);
	run.commit = C1;
	run.project = NULL;
	cr_expect_eq(hist_store__add_run(s, &run, &f, 1, err, sizeof(err)), -EINVAL);
	cr_assert_eq(hist_store__runs(s, P, B, got_run, &g), 0);
	cr_expect_eq(g.n, 0, "nothing stored");
	hist_store__close(s);
}

Test(store, two_hosts_one_commit)
{
	struct hist_store *s = open_store();
	struct got g = {0};

	add(s, C1, "ci-runner-a", 10, 5);
	add(s, C1, "ci-runner-b", 10, 6);
	cr_assert_eq(hist_store__commit_values(s, P, B, C1, HIST_FN_SELF, "lex", got_value, &g), 0,
		     "%s", hist_store__last_error(s));
	cr_assert_eq(g.n, 2, "both runs kept");
	cr_expect_neq(g.id[0], g.id[1]);
	cr_expect(!strcmp(g.host[0], "ci-runner-a") || !strcmp(g.host[1], "ci-runner-a"));
	cr_expect(!strcmp(g.host[0], "ci-runner-b") || !strcmp(g.host[1], "ci-runner-b"));
	cr_expect_eq(g.v[0] + g.v[1], 11);
	hist_store__close(s);
}

Test(store, commit_prefix)
{
	struct hist_store *s = open_store();
	struct got g = {0};

	add(s, "abcdef1aaa000000000000000000000000000001", "h", 1, 1);
	add(s, "ABCDEF1BBB000000000000000000000000000002", "h", 2, 2);
	add(s, C1, "h", 3, 3);
	cr_assert_eq(
		hist_store__commit_values(s, P, B, "1111111", HIST_FN_SELF, "lex", got_value, &g),
		0, "%s", hist_store__last_error(s));
	cr_assert_eq(g.n, 1);
	cr_expect_str_eq(g.commit[0], C1);
	cr_expect_eq(g.v[0], 3);

	memset(&g, 0, sizeof(g));
	cr_assert_eq(
		hist_store__commit_values(s, P, B, "abcdef1B", HIST_FN_SELF, "lex", got_value, &g),
		0, "%s", hist_store__last_error(s));
	cr_assert_eq(g.n, 1);
	cr_expect_str_eq(g.commit[0], "abcdef1bbb000000000000000000000000000002",
			 "stored in lower case");
	cr_expect_eq(g.v[0], 2);

	cr_expect_eq(
		hist_store__commit_values(s, P, B, "abcdef1", HIST_FN_SELF, "lex", got_value, &g),
		-ENOTUNIQ);
	cr_expect_not_null(strstr(hist_store__last_error(s), "abcdef1aaa00"), "%s",
			   hist_store__last_error(s));
	cr_expect_not_null(strstr(hist_store__last_error(s), "abcdef1bbb00"), "%s",
			   hist_store__last_error(s));
	cr_expect_eq(
		hist_store__commit_values(s, P, B, "abcdef", HIST_FN_SELF, "lex", got_value, &g),
		-EINVAL, "six digits are too few");
	cr_expect_eq(
		hist_store__commit_values(s, P, B, "abc%ef1", HIST_FN_SELF, "lex", got_value, &g),
		-EINVAL);
	cr_expect_eq(
		hist_store__commit_values(s, P, B, "9999999", HIST_FN_SELF, "lex", got_value, &g),
		-ENOENT);
	cr_expect_not_null(strstr(hist_store__last_error(s), "9999999"), "%s",
			   hist_store__last_error(s));
	hist_store__close(s);
}

Test(store, failed_run_leaves_nothing)
{
	struct hist_store *s = open_store();
	struct hist_figure f[250];
	char names[250][16], err[512] = "";
	struct hist_run run = {.project = P, .bench = B, .commit = C2, .time = 5, .id = -7};
	struct got g = {0}, n = {0};

	add(s, C1, "h", 1, 1);
	for (int i = 0; i < 250; i++) {
		snprintf(names[i], sizeof(names[i]), "fn%d", i);
		f[i] = (struct hist_figure){HIST_FN_SELF, names[i], i};
	}
	/* The third batch holds a figure the first one stored: the database refuses it, after
	 * the run and two hundred figures were written. */
	f[230].name = names[10];
	cr_expect_eq(hist_store__add_run(s, &run, f, 250, err, sizeof(err)), -EINVAL, "%s", err);
	cr_expect_not_null(strstr(err, "nothing of the run was stored"), "%s", err);
	cr_expect_eq(run.id, -7);

	f[230].name = NULL; /* refused before the database sees it */
	cr_expect_eq(hist_store__add_run(s, &run, f, 250, err, sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "figure 230 has no name"), "%s", err);
	f[230].name = names[230];
	f[3].value = NAN;
	cr_expect_eq(hist_store__add_run(s, &run, f, 250, err, sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "not a finite value"), "%s", err);

	cr_assert_eq(hist_store__runs(s, P, B, got_run, &g), 0);
	cr_expect_eq(g.n, 1, "only the good run");
	cr_assert_eq(hist_store__names(s, P, B, got_name, &n), 0);
	cr_expect_eq(n.n, 4, "only the good run's figures");
	cr_expect_str_eq(raw_value("SELECT count(*) FROM figures"), "4");
	hist_store__close(s);

	/* The store still takes a run. */
	s = open_store();
	f[3].value = 3;
	cr_expect_eq(hist_store__add_run(s, &run, f, 250, err, sizeof(err)), 0, "%s", err);
	cr_expect_gt(run.id, 0);
	hist_store__close(s);
}

Test(store, callback_stops_the_query)
{
	struct hist_store *s = open_store();
	struct got g = {.stop_after = 1};

	add(s, C1, "h", 1, 1);
	add(s, C2, "h", 2, 2);
	cr_expect_eq(hist_store__values(s, P, B, NULL, HIST_FN_SELF, "lex", got_value, &g), 42);
	cr_expect_eq(g.n, 1);
	cr_expect_str_eq(hist_store__last_error(s), "", "a stop is no failure");
	hist_store__close(s);
}

struct kept {
	size_t n;
	char text[4][64];
};

static int note_profile(void *ctx, const struct hist_run *run, const char *folded)
{
	struct kept *k = ctx;

	(void)run;
	if (k->n < 4)
		snprintf(k->text[k->n], sizeof(k->text[0]), "%s", folded);
	k->n++;
	return 0;
}

struct benches {
	size_t n, runs;
	char name[64];
};

static int note_bench(void *ctx, const char *project, const char *bench, size_t runs, int64_t first,
		      int64_t last)
{
	struct benches *b = ctx;

	cr_expect_leq(first, last);
	snprintf(b->name, sizeof(b->name), "%s/%s", project, bench);
	b->runs = runs;
	b->n++;
	return 0;
}

/* A run's folded stacks kept beside its figures, read back by commit; the benches listed; a
 * profile over the cap refused with the run's figures kept. */
Test(store, profiles_kept_by_commit)
{
	static const char a1[] = "main;lex 10\n", a2[] = "main;lex 12\n", b1[] = "main;parse 3\n";
	struct hist_store *s = open_store();
	int64_t r1 = add(s, "aaaaaaa1111111", "h1", 100, 1),
		r2 = add(s, "aaaaaaa1111111", "h1", 101, 2),
		r3 = add(s, "bbbbbbb2222222", "h1", 200, 3);
	struct kept k = {0};
	struct benches b = {0};
	char err[512] = "", *big;

	cr_assert_eq(hist_store__add_profile(s, r1, a1, strlen(a1), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(hist_store__add_profile(s, r2, a2, strlen(a2), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(hist_store__add_profile(s, r3, b1, strlen(b1), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(hist_store__profiles(s, P, B, "aaaaaaa", note_profile, &k), 0, "%s",
		     hist_store__last_error(s));
	cr_expect_eq(k.n, 2);
	cr_expect_str_eq(k.text[0], a1);
	cr_expect_str_eq(k.text[1], a2);
	cr_expect_eq(hist_store__profiles(s, P, B, "ccccccc", note_profile, &k), -ENOENT);
	cr_assert_eq(hist_store__benches(s, note_bench, &b), 0, "%s", hist_store__last_error(s));
	cr_expect_eq(b.n, 1);
	cr_expect_eq(b.runs, 3);
	cr_expect_str_eq(b.name, P "/" B);
	big = malloc(HIST_PROFILE_MAX + 2);
	cr_assert_not_null(big);
	memset(big, 'x', HIST_PROFILE_MAX + 1);
	big[HIST_PROFILE_MAX + 1] = 0;
	cr_expect_eq(hist_store__add_profile(s, r3, big, HIST_PROFILE_MAX + 1, err, sizeof(err)),
		     -E2BIG);
	cr_expect_not_null(strstr(err, "only its figures were stored"), "%s", err);
	free(big);
	hist_store__close(s);
}

/* A store of schema 1 (no profiles) is migrated when opened: its runs stay, stacks can be kept. */
Test(store, schema_1_migrated)
{
	struct hist_store *s = open_store();
	int64_t id = add(s, "ddddddd4444444", "h1", 100, 1);
	char err[512] = "";
	struct kept k = {0};

	hist_store__close(s);
	raw_exec("DROP TABLE profiles");
	raw_exec("UPDATE xsprof_meta SET value = '1' WHERE key = 'schema'");
	s = open_store();
	cr_expect_eq(hist_store__version(s), hist_store__schema());
	cr_assert_eq(hist_store__add_profile(s, id, "main 1\n", 7, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hist_store__profiles(s, P, B, "ddddddd", note_profile, &k), 0);
	cr_expect_eq(k.n, 1);
	hist_store__close(s);
}
