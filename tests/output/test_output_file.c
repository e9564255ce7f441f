// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/model/calltree.h"
#include "output/output.h"
#include "tests/lib/test_files.h"

static void add(struct calltree *t, const char *stack, uint64_t weight)
{
	char *copy = strdup(stack), *save = NULL, *tok;
	const char *frames[256];
	size_t n = 0;

	cr_assert(copy);
	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		frames[n++] = tok;
	cr_assert_eq(calltree__add(t, frames, n, weight), 0, "adding %s", stack);
	free(copy);
}

static struct calltree *small_tree(void)
{
	struct calltree *t = calltree__new();

	add(t, "main;foo;bar", 3);
	add(t, "idle", 4);
	return t;
}

/*
 * Wider than a 64 KiB tmpfs in both formats: about 90 KB folded, and every leaf is just over
 * the 0.1% drawing threshold, so the SVG draws them all (over 200 KB).
 */
static struct calltree *big_tree(void)
{
	struct calltree *t = calltree__new();
	char frame[128];
	const char *frames[] = {"comm", "a_rather_long_function_name_to_fill_the_disk", frame};
	int i;

	for (i = 0; i < 900; i++) {
		snprintf(frame, sizeof(frame), "leaf_function_number_%d_with_some_padding_text", i);
		cr_assert_eq(calltree__add(t, frames, 3, 1), 0);
	}
	return t;
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	cr_assert(f);
	cr_assert_geq(fputs(text, f), 0);
	cr_assert_eq(fclose(f), 0);
}

/* Number of entries in dir besides "." and ".."; the one name is returned if there is one. */
static int entries(const char *dir, char *ret_name, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ret_name)
			snprintf(ret_name, size, "%s", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static char dir[64];
static char target[128];

static void make_dir(void)
{
	strcpy(dir, "/tmp/xsprof-out-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(target, sizeof(target), "%s/profile.folded", dir);
}

static void remove_dir(void)
{
	char cmd[128];

	/* A failed full-disk test may have left its tmpfs mounted. */
	snprintf(cmd, sizeof(cmd), "%s/mnt", dir);
	umount2(cmd, MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(output_file, .init = make_dir, .fini = remove_dir);

Test(output_file, format_from_path)
{
	static const struct {
		const char *path;
		int err;
		enum output_format fmt;
	} cases[] = {
		{"out.folded", 0, OUTPUT_FOLDED},
		{"/var/tmp/x.txt", 0, OUTPUT_FOLDED},
		{"OUT.SVG", 0, OUTPUT_SVG},
		{"dir.d/flame.Svg", 0, OUTPUT_SVG},
		{"a.svg.FOLDED", 0, OUTPUT_FOLDED},
		{"noext", -EINVAL, 0},
		{"x.png", -EINVAL, 0},
		{"x.svgz", -EINVAL, 0},
		{"x.", -EINVAL, 0},
		{".svg", -EINVAL, 0},
		{"dir/.folded", -EINVAL, 0},
		{"dir.svg/file", -EINVAL, 0},
		{"", -EINVAL, 0},
	};
	enum output_format fmt;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fmt = 77;
		cr_expect_eq(output__format_from_path(cases[i].path, &fmt), cases[i].err, "%s",
			     cases[i].path);
		cr_expect_eq(fmt, cases[i].err ? 77 : cases[i].fmt, "%s", cases[i].path);
	}
	cr_expect_eq(output__format_from_path(NULL, &fmt), -EINVAL);
	cr_expect_eq(output__format_from_path("a.svg", NULL), -EINVAL);
}

Test(output_file, format_names)
{
	enum output_format fmt = 77;

	cr_expect_eq(output__format_from_name("folded", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_FOLDED);
	cr_expect_eq(output__format_from_name("svg", &fmt), 0);
	cr_expect_eq(fmt, OUTPUT_SVG);
	fmt = 77;
	cr_expect_eq(output__format_from_name("png", &fmt), -EINVAL);
	cr_expect_eq(output__format_from_name("", &fmt), -EINVAL);
	cr_expect_eq(output__format_from_name(NULL, &fmt), -EINVAL);
	cr_expect_eq(fmt, 77);
	cr_expect_str_eq(output__format_name(OUTPUT_FOLDED), "folded");
	cr_expect_str_eq(output__format_name(OUTPUT_SVG), "svg");
	cr_expect_null(output__format_name(0));
	cr_expect_null(output__format_name(42));
}

Test(output_file, writes_folded_with_mode_0644_and_no_leftovers)
{
	struct calltree *t = small_tree();
	char name[256], *text;
	struct stat st;

	umask(022);
	cr_assert_eq(output__write_file(t, OUTPUT_FOLDED, target, NULL), 0);
	text = test_slurp(target);
	cr_expect_str_eq(text, "idle 4\nmain;foo;bar 3\n");
	free(text);
	cr_assert_eq(stat(target, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0644);
	cr_expect_eq(entries(dir, name, sizeof(name)), 1);
	cr_expect_str_eq(name, "profile.folded");
	calltree__free(t);
}

/* The file is created like any other: 0666 less the umask, never widened to 0644. */
Test(output_file, mode_follows_the_umask)
{
	static const mode_t masks[][2] = {{077, 0600}, {027, 0640}, {002, 0664}};
	struct calltree *t = small_tree();
	struct stat st;
	mode_t old = umask(0);

	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		umask(masks[i][0]);
		unlink(target);
		cr_assert_eq(output__write_file(t, OUTPUT_FOLDED, target, NULL), 0);
		cr_assert_eq(stat(target, &st), 0);
		cr_expect_eq(st.st_mode & 07777, masks[i][1], "umask %03o gave %03o", masks[i][0],
			     st.st_mode & 07777);
	}
	umask(old);
	calltree__free(t);
}

Test(output_file, replaces_an_existing_file)
{
	struct calltree *t = small_tree();
	char path[160], *text;

	spit(target, "old contents\n");
	cr_assert_eq(output__write_file(t, OUTPUT_FOLDED, target, NULL), 0);
	text = test_slurp(target);
	cr_expect_str_eq(text, "idle 4\nmain;foo;bar 3\n");
	free(text);

	snprintf(path, sizeof(path), "%s/flame.svg", dir);
	cr_assert_eq(output__write_file(t, OUTPUT_SVG, path, NULL), 0);
	text = test_slurp(path);
	cr_expect_eq(strncmp(text, "<?xml", 5), 0);
	cr_expect(strstr(text, "</svg>\n"));
	free(text);
	cr_expect_eq(entries(dir, NULL, 0), 2);
	calltree__free(t);
}

Test(output_file, relative_path)
{
	struct calltree *t = small_tree();
	char *text;

	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(output__write_file(t, OUTPUT_FOLDED, "rel.txt", NULL), 0);
	text = test_slurp("rel.txt");
	cr_expect_str_eq(text, "idle 4\nmain;foo;bar 3\n");
	free(text);
	cr_expect_eq(entries(".", NULL, 0), 1);
	calltree__free(t);
}

Test(output_file, missing_directory)
{
	struct calltree *t = small_tree();
	char path[160];

	snprintf(path, sizeof(path), "%s/no/such/dir/out.svg", dir);
	cr_expect_eq(output__write_file(t, OUTPUT_SVG, path, NULL), -ENOENT);
	cr_expect_eq(entries(dir, NULL, 0), 0);
	calltree__free(t);
}

/* Fails at rename, after everything was written: the temporary file must still go. */
Test(output_file, target_is_a_directory)
{
	struct calltree *t = small_tree();
	char path[160], name[256];

	snprintf(path, sizeof(path), "%s/busy.svg", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_expect_eq(output__write_file(t, OUTPUT_SVG, path, NULL), -EISDIR);
	cr_expect_eq(entries(dir, name, sizeof(name)), 1);
	cr_expect_str_eq(name, "busy.svg");
	cr_expect_eq(output__write_file(t, OUTPUT_SVG, "", NULL), -EINVAL);
	snprintf(path, sizeof(path), "%s/", dir);
	cr_expect_eq(output__write_file(t, OUTPUT_SVG, path, NULL), -EISDIR);
	cr_expect_eq(entries(dir, NULL, 0), 1);
	calltree__free(t);
}

Test(output_file, bad_arguments)
{
	struct calltree *t = small_tree();

	cr_expect_eq(output__write_file(NULL, OUTPUT_SVG, target, NULL), -EINVAL);
	cr_expect_eq(output__write_file(t, 42, target, NULL), -EINVAL);
	cr_expect_eq(output__write_file(t, OUTPUT_SVG, NULL, NULL), -EINVAL);
	cr_expect_eq(output__write(t, 0, stdout, NULL), -EINVAL);
	cr_expect_eq(entries(dir, NULL, 0), 0);
	calltree__free(t);
}

/*
 * A full disk: on a 64 KiB tmpfs the write fails with ENOSPC part way through. The old profile
 * must survive byte for byte and no temporary file may stay behind. Needs root for mount(2);
 * without it the test fails rather than skipping.
 */
static void full_disk(enum output_format fmt, const char *name)
{
	struct calltree *t = big_tree();
	char mnt[128], path[192], left[256], *text;

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	cr_assert_eq(mount("tmpfs", mnt, "tmpfs", 0, "size=64k"), 0,
		     "mount tmpfs: %s (this test needs root)", strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", mnt, name);
	spit(path, "previous profile\n");

	cr_expect_eq(output__write_file(t, fmt, path, NULL), -ENOSPC);
	text = test_slurp(path);
	cr_expect_str_eq(text, "previous profile\n");
	free(text);
	cr_expect_eq(entries(mnt, left, sizeof(left)), 1, "left behind: %s", left);

	/* And the space is given back: a small profile fits afterwards. */
	calltree__free(t);
	t = small_tree();
	cr_expect_eq(output__write_file(t, fmt, path, NULL), 0);
	cr_expect_eq(entries(mnt, NULL, 0), 1);

	cr_expect_eq(umount2(mnt, MNT_DETACH), 0);
	calltree__free(t);
}

Test(output_file, full_disk_folded)
{
	full_disk(OUTPUT_FOLDED, "profile.folded");
}

Test(output_file, full_disk_svg)
{
	full_disk(OUTPUT_SVG, "flame.svg");
}
