// SPDX-License-Identifier: Apache-2.0
/*
 * The callgrind writer (output/callgrind.h) read back by valgrind's callgrind_annotate (Debian:
 * valgrind): inclusive costs through recursion, self costs by source line, the GPU event, and
 * stacks past the depth cut.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/callgrind.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "tests/lib/tree_add.h"

struct written {
	char path[64];
	char *text;
};

static void write_tree(const struct calltree *t, const struct output_meta *meta, struct written *w)
{
	size_t len = 0;
	FILE *f = open_memstream(&w->text, &len), *out;

	cr_assert(f);
	cr_assert_eq(callgrind__write(t, f, meta), 0);
	cr_assert_eq(fclose(f), 0);
	snprintf(w->path, sizeof(w->path), "/tmp/xsprof-cg-XXXXXX");
	out = fdopen(mkstemp(w->path), "w");
	cr_assert(out);
	cr_assert_eq(fputs(w->text, out) < 0, 0);
	cr_assert_eq(fclose(out), 0);
}

/* callgrind_annotate's figure for "file:function" (inclusive or self), or -1 when not listed. */
static long long annotate(const struct written *w, bool inclusive, const char *fn)
{
	char cmd[256], line[1024];
	long long found = -1;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=%s --threshold=100 %s 2>&1",
		 inclusive ? "yes" : "no", w->path);
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		char num[64], name[512];

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, " %63[0-9,] (%*[ 0-9.]%%) %511[^\n]", num, name) != 2 ||
		    strcmp(name, fn))
			continue;
		found = 0;
		for (const char *c = num; *c; c++)
			if (*c != ',')
				found = found * 10 + (*c - '0');
	}
	st = pclose(p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 127, "callgrind_annotate missing (valgrind)");
	cr_assert_eq(WEXITSTATUS(st), 0, "callgrind_annotate refused %s:\n%s", w->path, w->text);
	return found;
}

static void done(struct written *w)
{
	unlink(w->path);
	free(w->text);
}

Test(callgrind, recursion_counts_each_stack_once_per_function)
{
	struct calltree *t = calltree__new();
	struct written w;

	cr_assert(t);
	tree_add(t, "prog;a;b;a;b", 10);
	tree_add(t, "prog;a;c", 5);
	tree_add(t, "prog;d", 3);
	write_tree(t, NULL, &w);
	cr_expect_eq(annotate(&w, true, "PROGRAM TOTALS"), 18, "%s", w.text);
	cr_expect_eq(annotate(&w, true, "???:a"), 15, "%s", w.text);
	cr_expect_eq(annotate(&w, true, "???:b"), 10, "%s", w.text);
	cr_expect_eq(annotate(&w, true, "???:c"), 5);
	cr_expect_eq(annotate(&w, false, "???:b"), 10);
	cr_expect_eq(annotate(&w, false, "???:a"), -1, "a has no self cost:\n%s", w.text);
	done(&w);
	calltree__free(t);
}

Test(callgrind, self_costs_go_to_their_lines)
{
	struct calltree *t = calltree__new();
	struct written w;

	cr_assert(t);
	tree_add(t, "prog;main (m.c:3);f (m.c:10)", 4);
	tree_add(t, "prog;main (m.c:3);f (m.c:11)", 6);
	tree_add(t, "prog;main (m.c:4);g (lib.c:20)", 2);
	write_tree(t, NULL, &w);
	cr_expect_eq(annotate(&w, true, "m.c:f"), 10, "%s", w.text);
	cr_expect_eq(annotate(&w, true, "m.c:main"), 12);
	cr_expect_eq(annotate(&w, true, "lib.c:g"), 2);
	/* f's costs on its two lines, in m.c. */
	cr_expect(strstr(w.text, "\n10 4\n") && strstr(w.text, "\n11 6\n"), "%s", w.text);
	cr_expect(strstr(w.text, "fl=(") && strstr(w.text, " m.c\n"), "%s", w.text);
	done(&w);
	calltree__free(t);
}

Test(callgrind, gpu_time_is_a_second_event)
{
	struct calltree *t = calltree__new();
	struct output_meta meta = {.unit = "us"};
	struct written w;

	cr_assert(t);
	tree_add(t, "prog;site;[gpu] kern", 7000);
	tree_add(t, "prog;site;spin", 3000);
	write_tree(t, &meta, &w);
	cr_expect(strstr(w.text, "\nevents: CPU_us GPU_us\n"), "%s", w.text);
	cr_expect(strstr(w.text, "\ntotals: 3000 7000\n"), "%s", w.text);
	done(&w);
	calltree__free(t);
}

Test(callgrind, stacks_past_the_cut_keep_their_weight)
{
	static const char *names[] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6"};
	struct calltree *t = calltree__new();
	size_t n = CALLGRIND_MAX_DEPTH + 100;
	const char **frames = calloc(n, sizeof(*frames));
	struct written w;

	cr_assert(t && frames);
	for (size_t i = 0; i < n; i++)
		frames[i] = names[i % 7];
	cr_assert_eq(calltree__add(t, frames, n, 9), 0);
	tree_add(t, "f0;x", 1);
	write_tree(t, NULL, &w);
	cr_expect_eq(annotate(&w, true, "PROGRAM TOTALS"), 10, "%s", w.text);
	cr_expect_eq(annotate(&w, true, "???:f0"), 10);
	cr_expect(strstr(w.text, "# 1 stacks deeper than 512 frames"), "no note of the cut");
	done(&w);
	free(frames);
	calltree__free(t);
}
