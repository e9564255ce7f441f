// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "output/flamegraph.h"
#include "output/output.h"
#include "tests/lib/tree_add.h"

static char *svg(const struct calltree *t, const struct output_meta *meta)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cr_assert_eq(flamegraph__write_svg(t, f, meta), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

/* Well-formedness is checked by libxml2's xmllint (Debian: libxml2-utils), not by us. */
static void assert_well_formed(const char *doc)
{
	char path[] = "/tmp/xsprof-fg-XXXXXX.svg", cmd[128];
	int fd = mkstemps(path, 4), status;
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert(f);
	cr_assert_eq(fputs(doc, f) < 0, 0);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	status = system(cmd);
	cr_assert(WIFEXITED(status), "xmllint did not run");
	cr_assert_neq(WEXITSTATUS(status), 127, "xmllint missing: apt-get install libxml2-utils");
	cr_assert_eq(WEXITSTATUS(status), 0, "xmllint rejected the SVG (kept at %s)", path);
	unlink(path);
}

/* The <g> of the frame whose tooltip starts with escaped_name, or NULL. */
static const char *find_frame(const char *doc, const char *escaped_name)
{
	char needle[512];
	const char *p;

	snprintf(needle, sizeof(needle), "<title>%s (", escaped_name);
	p = strstr(doc, needle);
	if (!p)
		return NULL;
	while (p > doc && strncmp(p, "<g ", 3))
		p--;
	return p;
}

static void frame_fill(const char *doc, const char *escaped_name, unsigned int rgb[3])
{
	const char *g = find_frame(doc, escaped_name), *fill;

	cr_assert(g, "no frame %s", escaped_name);
	fill = strstr(g, "fill=\"rgb(");
	cr_assert(fill);
	cr_assert_eq(sscanf(fill, "fill=\"rgb(%u,%u,%u)\"", &rgb[0], &rgb[1], &rgb[2]), 3);
}

static double frame_width(const char *doc, const char *escaped_name)
{
	const char *g = find_frame(doc, escaped_name), *w;
	double width;

	cr_assert(g, "no frame %s", escaped_name);
	w = strstr(g, " width=\"");
	cr_assert(w);
	cr_assert_eq(sscanf(w, " width=\"%lf\"", &width), 1);
	return width;
}

static int svg_height(const char *doc)
{
	const char *h = strstr(doc, "<svg ");
	int height;

	cr_assert(h);
	h = strstr(h, " height=\"");
	cr_assert(h);
	cr_assert_eq(sscanf(h, " height=\"%d\"", &height), 1);
	return height;
}

static struct calltree *realistic_tree(void)
{
	struct calltree *t = calltree__new();

	tree_add(t, "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;PyEval_EvalCode",
		 120);
	tree_add(t,
		 "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;PyEval_EvalCode;"
		 "_PyEval_EvalFrameDefault;cudaLaunchKernel;[cuda] cuLaunchKernel",
		 80);
	tree_add(t,
		 "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;PyEval_EvalCode;"
		 "_PyEval_EvalFrameDefault;cudaLaunchKernel;[gpu] ampere_sgemm_128x64_tn",
		 300);
	tree_add(t,
		 "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;PyEval_EvalCode;"
		 "_PyEval_EvalFrameDefault;std::vector<float, std::allocator<float> >::resize",
		 60);
	tree_add(t,
		 "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;read;"
		 "entry_SYSCALL_64_[k];do_syscall_64_[k];ksys_read_[k];vfs_read_[k]",
		 90);
	tree_add(t, "python3;_start;__libc_start_main;main;Py_RunMain;run_mod;memcpy", 45);
	tree_add(t, "python3;[unknown];__GI___clone3;start_thread;worker&co;pthread_cond_wait", 70);
	tree_add(t,
		 "swapper;secondary_startup_64_[k];cpu_startup_entry_[k];do_idle_[k];"
		 "default_idle_call_[k]",
		 200);
	tree_add(t, "sshd;__poll;entry_SYSCALL_64_[k]", 3);
	return t;
}

Test(flamegraph, realistic_tree_is_well_formed_and_self_contained)
{
	struct calltree *t = realistic_tree();
	struct output_meta meta = {.title = "xsprof: 2 CPUs, 10 s at 99 Hz",
				   .subtitle = "host \"gpu-1\" & friends"};
	char *doc = svg(t, &meta);
	const char *p;

	assert_well_formed(doc);
	cr_expect(strstr(doc, ">xsprof: 2 CPUs, 10 s at 99 Hz</text>"));
	cr_expect(strstr(doc, ">host &quot;gpu-1&quot; &amp; friends</text>"));
	cr_expect(strstr(doc, "<script><![CDATA["));
	cr_expect(strstr(doc, ">Reset zoom</text>"));
	cr_expect(strstr(doc, ">Search</text>"));
	cr_expect(strstr(doc, "id=\"details\""));
	/* Nothing fetched from elsewhere: the only URL is the SVG namespace. */
	cr_expect_null(strstr(doc, "href"));
	cr_expect_null(strstr(doc, "src="));
	for (p = strstr(doc, "http"); p; p = strstr(p + 1, "http"))
		cr_expect_eq(strncmp(p, "http://www.w3.org/2000/svg\"", 27), 0, "URL at %.40s", p);
	free(doc);
	calltree__free(t);
}

Test(flamegraph, defaults_without_meta)
{
	struct calltree *t = calltree__new();
	char *doc;

	tree_add(t, "a;b", 1);
	doc = svg(t, NULL);
	assert_well_formed(doc);
	cr_expect(strstr(doc, ">Flame Graph</text>"));
	cr_expect(strstr(doc, "<title>b (1 samples, 100.00%)</title>"));
	cr_expect_null(strstr(doc, "id=\"subtitle\""));
	free(doc);
	calltree__free(t);
}

Test(flamegraph, names_are_escaped)
{
	struct calltree *t = calltree__new();
	const char *frames[] = {
		"app",
		"std::map<std::string, int>::operator[](const std::string&)",
		"quote\"s and 'apostrophes'",
		"bad utf-8 \xff\xfe and ctl \x01\x1b end",
		"ok utf-8: caf\xc3\xa9 \xe2\x86\x92",
	};
	char *doc;

	cr_assert_eq(calltree__add(t, frames, 5, 10), 0);
	doc = svg(t, NULL);
	assert_well_formed(doc);
	cr_expect(strstr(doc, "<title>std::map&lt;std::string, int&gt;::operator[](const "
			      "std::string&amp;) (10 samples, 100.00%)</title>"));
	cr_expect(strstr(doc, "quote&quot;s and &apos;apostrophes&apos;"));
	cr_expect(strstr(doc, "caf\xc3\xa9 \xe2\x86\x92"));
	cr_expect_null(strstr(doc, "std::map<"));
	cr_expect_null(strstr(doc, "\xff"));
	cr_expect_null(strstr(doc, "\x1b"));
	free(doc);
	calltree__free(t);
}

Test(flamegraph, tooltips_and_widths_follow_the_weights)
{
	struct calltree *t = calltree__new();
	struct output_meta meta = {.unit = "us"};
	char *doc;

	tree_add(t, "a;b", 3);
	tree_add(t, "a;c", 1);
	doc = svg(t, &meta);
	assert_well_formed(doc);
	cr_expect(strstr(doc, "<title>all (4 us, 100.00%)</title>"));
	cr_expect(strstr(doc, "<title>a (4 us, 100.00%)</title>"));
	cr_expect(strstr(doc, "<title>b (3 us, 75.00%)</title>"));
	cr_expect(strstr(doc, "<title>c (1 us, 25.00%)</title>"));
	/* 1180 px of usable width. */
	cr_expect_float_eq(frame_width(doc, "all"), 1180.0, 0.01);
	cr_expect_float_eq(frame_width(doc, "b"), 885.0, 0.01);
	cr_expect_float_eq(frame_width(doc, "c"), 295.0, 0.01);
	free(doc);
	calltree__free(t);
}

Test(flamegraph, palette_by_kind_of_frame)
{
	struct calltree *t = realistic_tree();
	const char *kernel[] = {"do_syscall_64_[k]", "vfs_read_[k]", "do_idle_[k]"};
	const char *user[] = {"main", "memcpy", "PyEval_EvalCode", "python3", "run_mod"};
	unsigned int rgb[3];
	char *doc = svg(t, NULL);
	size_t i;

	for (i = 0; i < 3; i++) {
		frame_fill(doc, kernel[i], rgb);
		cr_expect(rgb[0] >= 230 && rgb[1] >= 140 && rgb[1] <= 165 && rgb[2] >= 80 &&
				  rgb[2] <= 100,
			  "%s is rgb(%u,%u,%u), not kernel orange", kernel[i], rgb[0], rgb[1],
			  rgb[2]);
	}
	for (i = 0; i < 5; i++) {
		frame_fill(doc, user[i], rgb);
		cr_expect(rgb[0] >= 200 && rgb[2] <= 50, "%s is rgb(%u,%u,%u), not warm", user[i],
			  rgb[0], rgb[1], rgb[2]);
	}
	frame_fill(doc, "[gpu] ampere_sgemm_128x64_tn", rgb);
	cr_expect(rgb[1] > rgb[0] + 50 && rgb[1] > rgb[2] + 50, "gpu: rgb(%u,%u,%u)", rgb[0],
		  rgb[1], rgb[2]);
	frame_fill(doc, "[cuda] cuLaunchKernel", rgb);
	cr_expect(rgb[2] > rgb[0] + 50 && rgb[2] > rgb[1] + 30, "cuda: rgb(%u,%u,%u)", rgb[0],
		  rgb[1], rgb[2]);
	free(doc);
	calltree__free(t);
}

Test(flamegraph, narrow_frames_are_left_out_and_counted)
{
	struct calltree *t = calltree__new();
	char *doc;

	tree_add(t, "main;hot", 100000);
	tree_add(t, "main;cold;colder;coldest", 1);
	doc = svg(t, NULL);
	assert_well_formed(doc);
	cr_expect(strstr(doc, "<title>hot (100000 samples, "));
	cr_expect_null(strstr(doc, "<title>cold"));
	cr_expect(strstr(doc, ">3 frames narrower than 0.1% of the total not drawn"));
	cr_expect(strstr(doc, "<title>main (100001 samples, 100.00%)</title>"));
	/* Height covers the drawn levels only: all, main, hot. */
	cr_expect_eq(svg_height(doc), 56 + 3 * 16 + 44);
	free(doc);

	tree_add(t, "main;cold;colder;coldest", 200);
	doc = svg(t, NULL);
	cr_expect(strstr(doc, "<title>coldest (201 samples, 0.20%)</title>"));
	cr_expect_null(strstr(doc, "id=\"note\""));
	free(doc);
	calltree__free(t);
}

Test(flamegraph, height_grows_with_depth)
{
	struct calltree *shallow = calltree__new(), *deep = calltree__new();
	const char *frames[60];
	char names[60][8];
	char *a, *b;
	size_t i;

	for (i = 0; i < 60; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu", i);
		frames[i] = names[i];
	}
	cr_assert_eq(calltree__add(shallow, frames, 5, 1), 0);
	cr_assert_eq(calltree__add(deep, frames, 60, 1), 0);
	a = svg(shallow, NULL);
	b = svg(deep, NULL);
	assert_well_formed(b);
	cr_expect_eq(svg_height(b) - svg_height(a), 55 * 16);
	free(a);
	free(b);
	calltree__free(shallow);
	calltree__free(deep);
}

Test(flamegraph, empty_tree_says_no_samples)
{
	struct calltree *t = calltree__new();
	struct output_meta meta = {.title = "nothing <here>"};
	char *doc = svg(t, &meta);

	assert_well_formed(doc);
	cr_expect(strstr(doc, ">No samples</text>"));
	cr_expect(strstr(doc, ">nothing &lt;here&gt;</text>"));
	free(doc);

	/* Stacks that weigh nothing are no samples either. */
	tree_add(t, "a;b", 0);
	doc = svg(t, NULL);
	assert_well_formed(doc);
	cr_expect(strstr(doc, ">No samples</text>"));
	free(doc);
	calltree__free(t);
}

Test(flamegraph, big_random_tree_is_well_formed)
{
	struct calltree *t = calltree__new();
	static const char *vocab[] = {
		"a<b>",	 "c&d",	  "e\"f",	    "g'h",	    "]]>",
		"plain", "x_[k]", "[gpu] k<float>", "\xe2\x82\xac",
	};
	size_t i, j;
	char *doc;

	srandom(3);
	for (i = 0; i < 20000; i++) {
		const char *frames[30];
		size_t n = 1 + random() % 30;

		for (j = 0; j < n; j++)
			frames[j] = vocab[random() % 9];
		cr_assert_eq(calltree__add(t, frames, n, 1 + random() % 50), 0);
	}
	doc = svg(t, NULL);
	assert_well_formed(doc);
	free(doc);
	calltree__free(t);
}

Test(flamegraph, write_errors_are_returned)
{
	struct calltree *t = realistic_tree();
	FILE *f = fopen("/dev/full", "we");

	cr_assert(f);
	cr_expect_eq(flamegraph__write_svg(t, f, NULL), -ENOSPC);
	fclose(f);
	cr_expect_eq(flamegraph__write_svg(NULL, stdout, NULL), -EINVAL);
	calltree__free(t);
}
