// SPDX-License-Identifier: Apache-2.0
/*
 * The text report (output/report.c): per function, self summed over its nodes and total over
 * its outermost nodes (recursion counted once); the top by self, then by total, largest first
 * and ties by name, cut at n.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "output/report.h"
#include "tests/lib/tree_add.h"

struct weighted {
	const char *stack; /* "root;...;leaf" */
	uint64_t w;
};

/* The report of the stacks up to a NULL one, top n, as text. */
static char *report(const struct weighted *stacks, size_t n, const char *unit)
{
	struct calltree *t = calltree__new();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(t && f);
	for (; stacks->stack; stacks++)
		tree_add(t, stacks->stack, stacks->w);
	cr_assert_eq(report__write(t, n, unit, f), 0);
	cr_assert_eq(fclose(f), 0);
	calltree__free(t);
	return buf;
}

#define STACKS(...) ((const struct weighted[]){__VA_ARGS__, {NULL, 0}})

/* lex: 30 + 20 under one parse (the inner parse inside the outer's total), tied with parse. */
Test(report, self_total_and_recursion_counted_once)
{
	char *out = report(STACKS({"app;main;parse;lex", 30}, {"app;main;parse;parse;lex", 20},
				  {"app;main;eval", 40}, {"app;main", 10}),
			   3, NULL);

	cr_assert_str_eq(out, "100 samples in all\n"
			      "\n"
			      "Top 3 by self (where the time was spent):\n"
			      "    self    total        samples  function\n"
			      "  50.00%   50.00%             50  lex\n"
			      "  40.00%   40.00%             40  eval\n"
			      "  10.00%  100.00%             10  main\n"
			      "\n"
			      "Top 3 by total (what it was spent under):\n"
			      "   total     self        samples  function\n"
			      " 100.00%    0.00%            100  app\n"
			      " 100.00%   10.00%            100  main\n"
			      "  50.00%   50.00%             50  lex\n");
	free(out);
}

Test(report, ties_by_name_and_a_unit)
{
	char *out = report(STACKS({"p;b", 5}, {"p;a", 5}, {"p;c", 5}), 2, "us");

	cr_assert_str_eq(out, "15 us in all\n"
			      "\n"
			      "Top 2 by self (where the time was spent):\n"
			      "    self    total             us  function\n"
			      "  33.33%   33.33%              5  a\n"
			      "  33.33%   33.33%              5  b\n"
			      "\n"
			      "Top 2 by total (what it was spent under):\n"
			      "   total     self             us  function\n"
			      " 100.00%    0.00%             15  p\n"
			      "  33.33%   33.33%              5  a\n");
	free(out);
}

Test(report, an_empty_tree)
{
	char *out = report(STACKS({NULL, 0}), 5, NULL);

	cr_assert_str_eq(out, "0 samples in all\n\nTop 5 by self (where the time was spent):\n");
	free(out);
}

/* More names than any first table holds: fn_k has weight k. */
Test(report, many_functions)
{
	static struct weighted stacks[5001];
	static char names[5000][16];
	char *out;

	for (int k = 1; k <= 5000; k++) {
		snprintf(names[k - 1], sizeof(names[0]), "p;fn_%d", k);
		stacks[k - 1].stack = names[k - 1];
		stacks[k - 1].w = k;
	}
	out = report(stacks, 2, NULL);
	cr_assert(strstr(out, "12502500 samples in all\n"), "%s", out);
	cr_assert(strstr(out, "by self (where the time was spent):\n"
			      "    self    total        samples  function\n"
			      "   0.04%    0.04%           5000  fn_5000\n"
			      "   0.04%    0.04%           4999  fn_4999\n"),
		  "%s", out);
	free(out);
}
