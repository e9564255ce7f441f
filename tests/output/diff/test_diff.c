// SPDX-License-Identifier: Apache-2.0
/* The differential profile: shares, the table, the SVG, and xsprof-diff's exit statuses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "output/diff/diff.h"
#include "tests/lib/test_files.h"

TEST_SCRATCH_SUITE(diff, "/tmp/xsprof-diff-XXXXXX");

static const char before_txt[] = "app;main;a 50\napp;main;b 50\n";
/* Ten times the samples (a longer run): only shares count. */
static const char after_txt[] =
	"# a comment\r\n\napp;main;a 800\r\napp;main;b 100\napp;main;c 100\n";

static struct calltree *tree_of(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct calltree *t = calltree__new();
	size_t bad = 0;

	cr_assert(f && t);
	cr_assert_eq(diff__read_folded(f, t, &bad), 0, "line %zu", bad);
	fclose(f);
	return t;
}

static const char *file_of(const char *name, const char *text)
{
	static char paths[4][128];
	static int next;
	char *p = paths[next++ % 4];
	FILE *f;

	snprintf(p, 128, "%s/%s", dir, name);
	f = fopen(p, "we");
	cr_assert(f);
	cr_assert_geq(fputs(text, f), 0);
	cr_assert_eq(fclose(f), 0);
	return p;
}

static const struct diff_row *row(const struct diff *d, const char *name)
{
	size_t n, i;
	const struct diff_row *r = diff__rows(d, &n);

	for (i = 0; i < n; i++) {
		if (!strcmp(r[i].name, name))
			return &r[i];
	}
	cr_assert_fail("no row for %s", name);
	return NULL;
}

Test(diff, shares_and_order)
{
	struct calltree *b = tree_of(before_txt), *a = tree_of(after_txt);
	struct diff *d = diff__new(b, a);
	const struct diff_row *r;
	const char *grew;
	size_t n;

	cr_assert(d);
	r = diff__rows(d, &n);
	cr_assert_eq(n, 5);
	/* The largest change first, ties by name. */
	cr_expect_str_eq(r[0].name, "b");
	cr_expect_str_eq(r[1].name, "a");
	cr_expect_str_eq(r[2].name, "c");
	cr_expect_str_eq(r[3].name, "app");
	cr_expect_str_eq(r[4].name, "main");
	r = row(d, "a");
	cr_expect_float_eq(r->self_before, 50.0, 1e-9);
	cr_expect_float_eq(r->self_after, 80.0, 1e-9);
	cr_expect_float_eq(r->total_after, 80.0, 1e-9);
	r = row(d, "main");
	cr_expect_float_eq(r->self_after, 0.0, 1e-9);
	cr_expect_float_eq(r->total_before, 100.0, 1e-9);
	cr_expect_float_eq(r->total_after, 100.0, 1e-9);
	cr_expect_float_eq(diff__max_growth(d, &grew), 30.0, 1e-9);
	cr_expect_str_eq(grew, "a");
	diff__free(d);
	calltree__free(a);
	calltree__free(b);
}

Test(diff, recursion_counts_once_in_total)
{
	struct calltree *b = tree_of("app;f;g 10\n"), *a = tree_of("app;f;f;f 10\napp;g 10\n");
	struct diff *d = diff__new(b, a);

	cr_assert(d);
	cr_expect_float_eq(row(d, "f")->total_before, 100.0, 1e-9);
	cr_expect_float_eq(row(d, "f")->total_after, 50.0, 1e-9);
	cr_expect_float_eq(row(d, "f")->self_after, 50.0, 1e-9);
	cr_expect_float_eq(row(d, "g")->self_before, 100.0, 1e-9);
	cr_expect_float_eq(diff__max_growth(d, NULL), 50.0, 1e-9, "f's self share");
	diff__free(d);
	calltree__free(a);
	calltree__free(b);
}

Test(diff, malformed_input_names_the_line)
{
	static const struct {
		const char *text;
		size_t line;
	} bad[] = {
		{"a;b 1\nno count here\n", 2},
		{"a;b 1\n\n# ok\na;b -3\n", 4},
		{"a;b 1x\n", 1},
		{" 5\n", 1},
		{"a;b 99999999999999999999999\n", 1},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fmemopen((void *)bad[i].text, strlen(bad[i].text), "r");
		struct calltree *t = calltree__new();
		size_t line = 0;

		cr_expect_eq(diff__read_folded(f, t, &line), -EINVAL, "case %zu", i);
		cr_expect_eq(line, bad[i].line, "case %zu", i);
		fclose(f);
		calltree__free(t);
	}
	{
		/* Empty frames keep their place. */
		struct calltree *t = tree_of("a;;b 2\n");

		cr_expect_eq(calltree__max_depth(t), 3);
		calltree__free(t);
	}
}

static int run(const char *args, char **ret_out)
{
	char cmd[1024], out[128];
	int status;

	snprintf(out, sizeof(out), "%s/stdout", dir);
	snprintf(cmd, sizeof(cmd), "%s %s > %s 2>&1", XSPROF_DIFF_BIN, args, out);
	status = system(cmd);
	cr_assert(WIFEXITED(status));
	if (ret_out)
		*ret_out = test_slurp(out);
	return WEXITSTATUS(status);
}

Test(diff, svg_colours_and_notes)
{
	const char *b = file_of("b.folded", before_txt), *a = file_of("a.folded", after_txt);
	char args[512], svg[128], *text, *out;
	int status;

	snprintf(svg, sizeof(svg), "%s/d.svg", dir);
	snprintf(args, sizeof(args), "-o %s %s %s", svg, b, a);
	cr_assert_eq(run(args, &out), 0, "%s", out);
	free(out);
	text = test_slurp(svg);
	/* a grew most: full red; b shrank most: full blue; c is new. */
	cr_expect(strstr(text, "a (800 samples, 80.00%) [+30.00 pp: 50.00% before, 80.00% after]"),
		  "%s", text);
	cr_expect(strstr(text, "fill=\"rgb(255,125,125)\"") || strstr(text, "fill=\"rgb(255,"));
	cr_expect(strstr(text, "b (100 samples, 10.00%) [-40.00 pp: 50.00% before, 10.00% after]"));
	cr_expect(strstr(text, "fill=\"rgb(50,50,255)\""), "the largest change is the strongest");
	cr_expect(strstr(text, "c (100 samples, 10.00%) [+10.00 pp: 0.00% before, 10.00% after]"));
	cr_expect(strstr(text, "id=\"legend\""));
	free(text);
	snprintf(args, sizeof(args), "xmllint --noout %s", svg);
	status = system(args);
	cr_assert_neq(WEXITSTATUS(status), 127, "xmllint missing: apt-get install libxml2-utils");
	cr_expect_eq(WEXITSTATUS(status), 0, "xmllint rejected %s", svg);
}

Test(diff, cli_table_and_exit_statuses)
{
	const char *b = file_of("b.folded", before_txt), *a = file_of("a.folded", after_txt);
	const char *bad = file_of("bad.folded", "x;y 1\nbroken\n");
	const char *empty = file_of("empty.folded", "# nothing\n");
	char args[512], *out;

	snprintf(args, sizeof(args), "%s %s", b, a);
	cr_expect_eq(run(args, &out), 0);
	cr_expect(strstr(out, " 50.00% ->  80.00%  +30.00    50.00% ->  80.00%  +30.00   a\n"),
		  "%s", out);
	cr_expect(strstr(out, " 50.00% ->  10.00%  -40.00    50.00% ->  10.00%  -40.00   b\n"),
		  "%s", out);
	free(out);

	snprintf(args, sizeof(args), "--threshold 20 --top 1 %s %s", b, a);
	cr_expect_eq(run(args, &out), 3, "a grew by 30 pp");
	cr_expect(strstr(out, "a grew by 30.00 percentage points"), "%s", out);
	cr_expect(!strstr(out, "   c\n"), "--top 1: %s", out);
	free(out);
	snprintf(args, sizeof(args), "-t 30.5 -q %s %s", b, a);
	cr_expect_eq(run(args, &out), 0);
	cr_expect_str_eq(out, "", "--quiet");
	free(out);
	/* The other way round nothing grew by more than 10 pp... but b did, by 40. */
	snprintf(args, sizeof(args), "-t 39 -q %s %s", a, b);
	cr_expect_eq(run(args, NULL), 3);

	/* Usage errors: 2, naming the culprit. */
	cr_expect_eq(run("--frobnicate a b", &out), 2);
	cr_expect(strstr(out, "unknown option '--frobnicate'"), "%s", out);
	free(out);
	cr_expect_eq(run("only_one.folded", NULL), 2);
	snprintf(args, sizeof(args), "--threshold lots %s %s", b, a);
	cr_expect_eq(run(args, &out), 2);
	cr_expect(strstr(out, "--threshold 'lots'"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "-o out.png %s %s", b, a);
	cr_expect_eq(run(args, NULL), 2);
	cr_expect_eq(run("--top", NULL), 2);

	/* Errors: 1, with the file and line. */
	snprintf(args, sizeof(args), "%s %s", b, bad);
	cr_expect_eq(run(args, &out), 1);
	cr_expect(strstr(out, "bad.folded:2: not a folded stack line"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "%s/missing.folded %s", dir, a);
	cr_expect_eq(run(args, NULL), 1);
	snprintf(args, sizeof(args), "%s %s", empty, a);
	cr_expect_eq(run(args, &out), 1);
	cr_expect(strstr(out, "has no samples"), "%s", out);
	free(out);
	snprintf(args, sizeof(args), "-o %s/no/such/dir/d.svg %s %s", dir, b, a);
	cr_expect_eq(run(args, NULL), 1);
	cr_expect_eq(run("--help", &out), 0);
	cr_expect(strstr(out, "Exit status"));
	free(out);
}
