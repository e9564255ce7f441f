// SPDX-License-Identifier: Apache-2.0
/* perf-PID.map parsing: well-formed maps, growth, and what a hostile process could write. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/symbolize/perf_map.h"

static struct perf_map *parse(const char *text)
{
	struct perf_map *m = perf_map__new();

	cr_assert_not_null(m);
	perf_map__parse(m, text, strlen(text));
	return m;
}

static const char *name_at(struct perf_map *m, uint64_t addr)
{
	const struct perf_map_sym *s = perf_map__lookup(m, addr);

	return s ? s->name : NULL;
}

Test(perf_map, lines_hex_with_or_without_0x)
{
	struct perf_map *m = parse("1000 10 first\n0x2000 0x20 second one (spaces kept)\n"
				   "3000 8 third\r\n");

	cr_assert_eq(perf_map__count(m), 3);
	cr_assert_str_eq(name_at(m, 0x1000), "first");
	cr_assert_str_eq(name_at(m, 0x100f), "first");
	cr_assert_null(name_at(m, 0x1010), "size is exclusive");
	cr_assert_str_eq(name_at(m, 0x201f), "second one (spaces kept)");
	cr_assert_str_eq(name_at(m, 0x3000), "third");
	cr_assert_null(name_at(m, 0xfff));
	perf_map__free(m);
}

Test(perf_map, later_entry_at_same_start_wins)
{
	struct perf_map *m = parse("1000 10 old\n2000 10 other\n1000 20 new\n");

	cr_assert_str_eq(name_at(m, 0x1018), "new");
	cr_assert_eq(perf_map__count(m), 2);
	perf_map__free(m);
}

Test(perf_map, malformed_lines_are_skipped)
{
	static const char text[] = "zzzz 10 bad start\n"
				   "1000 zz bad size\n"
				   "1000 0 zero size\n"
				   "1000 10\n"
				   "1000 10 \n"
				   "11112222333344445 10 seventeen digits\n"
				   "ffffffffffffffff 10 wraps\n"
				   "1000\t10 tab\n"
				   "\n"
				   "4000 10 good\n";
	struct perf_map *m = parse(text);

	cr_assert_eq(perf_map__count(m), 1);
	cr_assert_eq(perf_map__skipped(m), 8);
	cr_assert_str_eq(name_at(m, 0x4004), "good");
	perf_map__free(m);
}

Test(perf_map, partial_last_line_waits_for_more)
{
	struct perf_map *m = perf_map__new();
	const char *a = "1000 10 one\n2000 10 tw", *b = "2000 10 two\n";
	size_t used = perf_map__parse(m, a, strlen(a));

	cr_assert_eq(used, strlen("1000 10 one\n"));
	cr_assert_null(name_at(m, 0x2000));
	perf_map__parse(m, b, strlen(b));
	cr_assert_str_eq(name_at(m, 0x2000), "two");
	perf_map__free(m);
}

Test(perf_map, long_names_are_cut_and_nul_ends_them)
{
	size_t n = 3 * PERF_MAP_MAX_NAME;
	char *text = malloc(n + 32);
	struct perf_map *m;

	strcpy(text, "1000 10 ");
	memset(text + 8, 'x', n);
	strcpy(text + 8 + n, "\n");
	m = parse(text);
	cr_assert_eq(strlen(name_at(m, 0x1000)), PERF_MAP_MAX_NAME);
	perf_map__free(m);
	free(text);
	m = perf_map__new();
	perf_map__parse(m, "1000 10 ab\0cd\n", 14);
	cr_assert_str_eq(name_at(m, 0x1000), "ab");
	perf_map__free(m);
}

Test(perf_map, reads_a_growing_file)
{
	int fd = memfd_create("perfmap", MFD_CLOEXEC);
	struct perf_map *m = perf_map__new();
	const char *a = "1000 10 one\n2000 10 tw", *b = "o\n";

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, a, strlen(a)), (ssize_t)strlen(a));
	cr_assert_eq(perf_map__update_fd(m, fd), 0);
	cr_assert_str_eq(name_at(m, 0x1000), "one");
	cr_assert_null(name_at(m, 0x2000), "half a line is not a line");
	cr_assert_eq(write(fd, b, strlen(b)), (ssize_t)strlen(b));
	cr_assert_eq(perf_map__update_fd(m, fd), 0);
	cr_assert_str_eq(name_at(m, 0x2000), "two");
	cr_assert_eq(perf_map__update_fd(m, fd), 0, "nothing new");
	cr_assert_eq(perf_map__count(m), 2);
	perf_map__free(m);
	close(fd);
}

Test(perf_map, a_line_longer_than_the_read_buffer_is_skipped)
{
	int fd = memfd_create("perfmap", MFD_CLOEXEC);
	struct perf_map *m = perf_map__new();
	size_t n = 200 << 10;
	char *junk = malloc(n);

	memset(junk, 'a', n);
	cr_assert_eq(write(fd, junk, n), (ssize_t)n);
	cr_assert_eq(write(fd, "\n5000 10 after\n", 15), 15);
	cr_assert_eq(perf_map__update_fd(m, fd), 0);
	cr_assert_str_eq(name_at(m, 0x5000), "after");
	cr_assert_gt(perf_map__skipped(m), 0);
	perf_map__free(m);
	free(junk);
	close(fd);
}

Test(perf_map, errors)
{
	struct perf_map *m = perf_map__new();

	cr_assert_eq(perf_map__update_fd(m, -1), -EBADF);
	cr_assert_null(perf_map__lookup(m, 0));
	perf_map__free(m);
	perf_map__free(NULL);
}
