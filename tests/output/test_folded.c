// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "output/folded.h"
#include "tests/lib/folded_text.h"
#include "tests/lib/tree_add.h"

Test(folded, exact_text_of_a_small_tree)
{
	struct calltree *t = calltree__new();
	char *text;

	tree_add(t, "main;foo;bar", 3);
	tree_add(t, "main;foo", 2);
	tree_add(t, "main;baz", 1);
	tree_add(t, "idle", 4);
	tree_add(t, "main;zero", 0);
	text = folded_text(t);
	cr_expect_str_eq(text, "idle 4\n"
			       "main;baz 1\n"
			       "main;foo 2\n"
			       "main;foo;bar 3\n");
	free(text);
	calltree__free(t);
}

Test(folded, empty_tree_writes_nothing)
{
	struct calltree *t = calltree__new();
	char *text = folded_text(t);

	cr_expect_str_eq(text, "");
	free(text);
	calltree__free(t);
}

Test(folded, separators_inside_names_are_replaced)
{
	struct calltree *t = calltree__new();
	const char *frames[] = {"comm", "a;b", "two\nlines", "cr\rhere", "has space"};
	char *text;

	cr_assert_eq(calltree__add(t, frames, 5, 12), 0);
	text = folded_text(t);
	cr_expect_str_eq(text, "comm;a:b;two lines;cr here;has space 12\n");
	free(text);
	calltree__free(t);
}

Test(folded, bad_arguments)
{
	struct calltree *t = calltree__new();

	cr_expect_eq(folded__write(NULL, stdout), -EINVAL);
	cr_expect_eq(folded__write(t, NULL), -EINVAL);
	calltree__free(t);
}

Test(folded, write_errors_are_returned)
{
	struct calltree *t = calltree__new();
	FILE *f = fopen("/dev/full", "we");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	tree_add(t, "a;b;c", 1);
	cr_expect_eq(folded__write(t, f), -ENOSPC);
	fclose(f);
	calltree__free(t);
}

/* One aggregated stack: the joined text and its weight. */
struct entry {
	char *stack;
	uint64_t weight;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->stack, ((const struct entry *)b)->stack);
}

/* Sorts and merges equal stacks; returns the new count. */
static size_t aggregate(struct entry *e, size_t n)
{
	size_t i, out = 0;

	qsort(e, n, sizeof(*e), cmp_entry);
	for (i = 0; i < n; i++) {
		if (out && !strcmp(e[out - 1].stack, e[i].stack)) {
			e[out - 1].weight += e[i].weight;
			free(e[i].stack);
			continue;
		}
		e[out++] = e[i];
	}
	return out;
}

/*
 * Random stacks go into a tree; the folded text is parsed back (count after the last space,
 * frames split on ';') and must give exactly the stacks that went in, with their summed weights.
 */
Test(folded, round_trip)
{
	static const char *vocab[] = {
		"main",	      "start_thread",
		"do_work",    "std::vector<int>::push_back",
		"memcpy",     "operator new(unsigned long)",
		"[unknown]",  "__x64_sys_read_[k]",
		"[gpu] gemm", "a b c",
		"x",
	};
	enum { N = 5000, NV = sizeof(vocab) / sizeof(vocab[0]) };
	struct calltree *t = calltree__new();
	struct entry *in = calloc(N, sizeof(*in)), *out = calloc(N, sizeof(*out));
	size_t i, j, n_in, n_out = 0;
	char *text, *line, *save = NULL;

	srandom(7);
	for (i = 0; i < N; i++) {
		const char *frames[20];
		size_t n = 1 + random() % 20, len = 0;

		for (j = 0; j < n; j++) {
			frames[j] = vocab[random() % (j ? NV : 3)];
			len += strlen(frames[j]) + 1;
		}
		in[i].weight = 1 + random() % 1000;
		in[i].stack = calloc(1, len);
		for (j = 0; j < n; j++) {
			if (j)
				strcat(in[i].stack, ";");
			strcat(in[i].stack, frames[j]);
		}
		cr_assert_eq(calltree__add(t, frames, n, in[i].weight), 0);
	}
	n_in = aggregate(in, N);

	text = folded_text(t);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *space = strrchr(line, ' '), *end;

		cr_assert(space, "no count in line '%s'", line);
		*space = '\0';
		cr_assert_lt(n_out, N);
		out[n_out].weight = strtoull(space + 1, &end, 10);
		cr_assert_eq(*end, '\0', "bad count in '%s'", space + 1);
		cr_assert_gt(out[n_out].weight, 0);
		out[n_out].stack = strdup(line);
		n_out++;
	}
	cr_assert_eq(aggregate(out, n_out), n_out, "a stack was written twice");

	cr_assert_eq(n_out, n_in);
	for (i = 0; i < n_in; i++) {
		cr_assert_str_eq(out[i].stack, in[i].stack);
		cr_assert_eq(out[i].weight, in[i].weight, "weight of %s", in[i].stack);
		free(in[i].stack);
		free(out[i].stack);
	}
	free(text);
	free(in);
	free(out);
	calltree__free(t);
}

Test(folded, output_is_deterministic)
{
	struct calltree *a = calltree__new(), *b = calltree__new();
	const char *stacks[] = {"m;z;q", "m;a", "k;b;c", "m;z", "k;a", "m;b;b;b"};
	char *ta, *tb;
	size_t i;

	for (i = 0; i < 6; i++) {
		tree_add(a, stacks[i], i + 1);
		tree_add(b, stacks[5 - i], 6 - i);
	}
	ta = folded_text(a);
	tb = folded_text(b);
	cr_expect_str_eq(ta, tb);
	free(ta);
	free(tb);
	calltree__free(a);
	calltree__free(b);
}
