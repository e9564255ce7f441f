// SPDX-License-Identifier: Apache-2.0
/*
 * A run's figures (output/history/history_figures.h) from folded stacks written here and from
 * GPU reports xsprofd wrote: tests/gpu/fixtures/sites/profile.gpu.json (a real H100 run) and
 * fixtures/two_devices_ranges.gpu.json (that report with a second device and three NVTX
 * ranges added, since the real run had none).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/history/history_figures.h"

#define SITES  XSPROF_TEST_SOURCE_DIR "/gpu/fixtures/sites/profile.gpu.json"
#define RANGES XSPROF_TEST_SOURCE_DIR "/output/history/fixtures/two_devices_ranges.gpu.json"

static char tmp_dir[64];

static void setup(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/xsprof-figures-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp_dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp_dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp_dir);
}

TestSuite(figures, .init = setup, .fini = teardown);

/* A file of len bytes in the test's folder; its path in a static buffer. */
static const char *file_of(const char *name, const char *text, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static const char *text_file(const char *name, const char *text)
{
	return file_of(name, text, strlen(text));
}

static const char *folded(const char *text)
{
	return text_file("p.folded", text);
}

/* The value of (kind, name); -1 when the set has no such figure. */
static double value(const struct hist_figures *f, enum hist_kind kind, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].kind == kind && !strcmp(f->v[i].name, name))
			return f->v[i].value;
	return -1;
}

static size_t count(const struct hist_figures *f, enum hist_kind kind)
{
	size_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += f->v[i].kind == kind;
	return n;
}

#define SPACED "std::vector<int, std::allocator<int> >::push_back(int const&)"

Test(figures, self_total_and_recursion)
{
	struct hist_figures f = {0};
	char err[256] = "";
	const char *p = folded("# xsprofd folded stacks\n"
			       "\n"
			       "app;main;parse;lex 10\n"
			       "app;main;walk;walk;walk 5\r\n"
			       "app;main;walk;lex 3\n"
			       "app;main;" SPACED " 4\n"
			       "swapper;do_idle_[k];cpu_idle_[k] 7\n"
			       "app;main;;lex 1\n");

	cr_assert_eq(hist_figures__read(&f, p, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(value(&f, HIST_FN_SELF, "lex"), 14);
	cr_expect_eq(value(&f, HIST_FN_SELF, "walk"), 5);
	cr_expect_eq(value(&f, HIST_FN_SELF, "main"), -1, "main is never a leaf");
	/* walk is on two stacks (5 + 3), counted once in the recursive one. */
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "walk"), 8);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "main"), 23);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "app"), 23, "the process name is a frame too");
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "lex"), 14);
	cr_expect_eq(value(&f, HIST_FN_SELF, SPACED), 4, "frames keep their spaces");
	cr_expect_eq(value(&f, HIST_FN_SELF, "cpu_idle_[k]"), 7, "kernel frames are kept");
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "do_idle_[k]"), 7);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "[unknown]"), 1, "an empty frame keeps its place");
	cr_expect_eq(value(&f, HIST_SAMPLES, "all"), 30);
	cr_expect_eq(count(&f, HIST_SAMPLES), 1);
	cr_expect_eq(count(&f, HIST_KERNEL), 0);
	hist_figures__free(&f);
}

Test(figures, a_second_profile_adds_to_the_set)
{
	struct hist_figures f = {0};
	char err[256] = "";
	const char *p = folded("app;main;lex 10\n");

	cr_assert_eq(hist_figures__add(&f, HIST_WALL, "wall", 1e9), 0);
	cr_assert_eq(hist_figures__read(&f, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hist_figures__read(&f, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hist_figures__read(&f, SITES, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(value(&f, HIST_FN_SELF, "lex"), 20);
	cr_expect_eq(value(&f, HIST_SAMPLES, "all"), 20);
	cr_expect_eq(value(&f, HIST_WALL, "wall"), 1e9);
	cr_expect_eq(value(&f, HIST_KERNEL, "_Z12xs_k_runtimePfi"), 535400);
	cr_expect_eq(count(&f, HIST_FN_TOTAL), 3);
	cr_assert_eq(hist_figures__add(&f, HIST_WALL, "wall", 1e9), 0);
	cr_expect_eq(value(&f, HIST_WALL, "wall"), 2e9);
	cr_expect_eq(count(&f, HIST_WALL), 1);
	cr_expect_eq(hist_figures__add(&f, HIST_WALL, NULL, 1), -EINVAL);
	cr_expect_eq(hist_figures__add(&f, HIST_KIND_COUNT, "x", 1), -EINVAL);
	hist_figures__free(&f);
}

Test(figures, cap_keeps_the_largest)
{
	struct hist_figures f = {.cap = 10};
	char text[4096], err[256] = "";
	size_t len = 0;

	for (int i = 1; i <= 50; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "app;fn%02d %d\n", i, i);
	cr_assert_eq(hist_figures__read(&f, folded(text), err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(count(&f, HIST_FN_SELF), 10);
	cr_expect_eq(f.dropped[HIST_FN_SELF], 40);
	cr_expect_eq(value(&f, HIST_FN_SELF, "fn50"), 50);
	cr_expect_eq(value(&f, HIST_FN_SELF, "fn41"), 41);
	cr_expect_eq(value(&f, HIST_FN_SELF, "fn40"), -1);
	/* 51 totals (app and each fn): app, the largest, and fn50 down to fn42. */
	cr_expect_eq(count(&f, HIST_FN_TOTAL), 10);
	cr_expect_eq(f.dropped[HIST_FN_TOTAL], 41);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "app"), 1275);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "fn42"), 42);
	cr_expect_eq(value(&f, HIST_FN_TOTAL, "fn41"), -1);
	cr_expect_eq(value(&f, HIST_SAMPLES, "all"), 1275, "the total counts what was dropped");
	cr_expect_eq(f.dropped[HIST_SAMPLES], 0);
	hist_figures__free(&f);
}

Test(figures, default_cap)
{
	struct hist_figures f = {0};
	size_t cap = 64 * 2100, len = 0;
	char *text = malloc(cap), err[256] = "";

	cr_assert_not_null(text);
	for (int i = 0; i < 2100; i++)
		len += (size_t)snprintf(text + len, cap - len, "app;f%d %d\n", i, i + 1);
	cr_assert_eq(hist_figures__read(&f, folded(text), err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(count(&f, HIST_FN_SELF), HIST_FIGURES_CAP_DEFAULT);
	cr_expect_eq(f.dropped[HIST_FN_SELF], 2100 - HIST_FIGURES_CAP_DEFAULT);
	cr_expect_eq(value(&f, HIST_FN_SELF, "f2099"), 2100);
	cr_expect_eq(value(&f, HIST_FN_SELF, "f99"), -1);
	free(text);
	hist_figures__free(&f);
}

Test(figures, real_gpu_report)
{
	struct hist_figures f = {0};
	char err[256] = "";
	const char *stack = "_start;__libc_start_main;libc.so.6+0x2a1c9;main;site_runtime("
			    "CUstream_st*, float*, int) [clone .constprop.0];__device_stub__Z12xs_"
			    "k_runtimePfi(float*, int)";

	cr_assert_eq(hist_figures__read(&f, SITES, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(count(&f, HIST_KERNEL), 6);
	cr_expect_eq(value(&f, HIST_KERNEL, "_Z12xs_k_runtimePfi"), 535400);
	cr_expect_eq(value(&f, HIST_KERNEL, "_Z11xs_k_driverPfi"), 147009);
	cr_expect_eq(count(&f, HIST_KERNEL_STACK), 6);
	cr_expect_eq(value(&f, HIST_KERNEL_STACK, stack), 535400,
		     "the launching stack, frames "
		     "root first");
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "launch"), 6895053);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "sync"), 6090765);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "host"), 158626);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "dependency"), 0);
	cr_expect_eq(count(&f, HIST_GPU_IDLE), 5);
	cr_expect_eq(count(&f, HIST_RANGE), 0);
	cr_expect_eq(count(&f, HIST_FN_SELF) + count(&f, HIST_SAMPLES), 0);
	/* Largest first, kind by kind. */
	for (size_t i = 1; i < f.n; i++)
		if (f.v[i].kind == f.v[i - 1].kind)
			cr_expect_geq(f.v[i - 1].value, f.v[i].value);
	hist_figures__free(&f);
}

Test(figures, devices_summed_and_ranges)
{
	struct hist_figures f = {0};
	char err[256] = "";

	cr_assert_eq(hist_figures__read(&f, RANGES, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "launch"), 6895053 + 2000);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "dependency"), 4000);
	cr_expect_eq(value(&f, HIST_GPU_IDLE, "unknown"), 5);
	cr_expect_eq(value(&f, HIST_RANGE, "step"), 1500, "one range's name, its times summed");
	cr_expect_eq(value(&f, HIST_RANGE, "train: forward"), 2500);
	cr_expect_eq(count(&f, HIST_RANGE), 2);
	hist_figures__free(&f);
}

/* Reading path fails with code and an err holding each of want (NULL-ended); the set is as it
 * was (one figure). */
static void expect_error(const char *path, int code, const char *const *want)
{
	struct hist_figures f = {0};
	char err[512] = "";

	cr_assert_eq(hist_figures__add(&f, HIST_WALL, "wall", 5), 0);
	cr_expect_eq(hist_figures__read(&f, path, err, sizeof(err)), code, "%s: %s", path, err);
	for (; *want; want++)
		cr_expect_not_null(strstr(err, *want), "\"%s\" not in: %s", *want, err);
	cr_expect_eq(f.n, 1, "a failed read adds nothing");
	cr_expect_eq(f.v[0].value, 5);
	hist_figures__free(&f);
}

Test(figures, errors_name_the_file_and_line)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/p.folded:3", tmp_dir);
	expect_error(folded("a;b 1\n# c\na;b 12x\n"), -EINVAL,
		     (const char *[]){path, "count \"12x\"", "frame;", NULL});
	expect_error(folded("a;b 1\na;b -3\n"), -EINVAL, (const char *[]){":2:", "count", NULL});
	expect_error(folded("a;b 1\na;b 99999999999999999999999\n"), -EINVAL,
		     (const char *[]){":2:", "count", NULL});
	expect_error(folded("a;b 1\na;b\n"), -EINVAL, (const char *[]){":2:", "no count", NULL});
	expect_error(file_of("nul.folded", "a;b 1\na\0b 2\n", 12), -EINVAL,
		     (const char *[]){"nul.folded:2:", "NUL", NULL});
	expect_error(folded("a;b 1\n\n\na;\xff\xfe 2\n"), -EINVAL,
		     (const char *[]){"p.folded:4:", "UTF-8", NULL});
	snprintf(path, sizeof(path), "%s/missing.folded", tmp_dir);
	expect_error(path, -ENOENT, (const char *[]){path, "No such file", NULL});
	expect_error(text_file("other.json", "{\"schema\": \"other\", \"version\": 1}"), -EINVAL,
		     (const char *[]){"other.json", "not a GPU report", NULL});
	expect_error(text_file("v9.json", "{\"schema\":\"xsprof.gpu_report\",\"version\":9}"),
		     -EINVAL, (const char *[]){"version 9", NULL});
	expect_error(
		text_file("broken.json", "{\"schema\":\n\"xsprof.gpu_report\",\n\"version\" 1}"),
		-EINVAL, (const char *[]){"broken.json:3:", "not valid JSON", NULL});
	expect_error(text_file("cut.json", "{\"schema\":\n\"xsprof"), -EINVAL,
		     (const char *[]){"cut.json", "ends inside", NULL});
	expect_error(text_file("bad.json", "{\"schema\":\"xsprof.gpu_report\",\"version\":1,"
					   "\"kernels\":[{\"name\":\"k\",\"total_ns\":\"12\"}]}"),
		     -EINVAL, (const char *[]){"bad.json", "kernels[0].total_ns", NULL});
}

Test(figures, kind_names)
{
	for (int k = 0; k < HIST_KIND_COUNT; k++)
		cr_expect_eq(hist_kind__of(hist_kind__name(k)), k);
	cr_expect_eq(hist_kind__of("nope"), -1);
	cr_expect_str_eq(hist_kind__name(HIST_KERNEL_STACK), "kernel_stack");
	cr_expect_str_eq(hist_kind__unit(HIST_FN_SELF), "samples");
	cr_expect_str_eq(hist_kind__unit(HIST_GPU_IDLE), "ns");
	cr_expect_str_eq(hist_verdict__name(HIST_DIFFERENT), "DIFFERENT");
}
