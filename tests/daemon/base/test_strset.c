// SPDX-License-Identifier: Apache-2.0
/*
 * The string-intern set (daemon/base/strset.c): one copy per distinct string, at an address
 * that holds while the set grows; the byte cap refuses new strings with E2BIG and still finds
 * the old ones; a failed allocation leaves the set as it was.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/strset.h"
#include "tests/lib/alloc_fail.h"

#define N 20000

Test(strset, one_copy_per_string_at_a_stable_address)
{
	struct strset *s = strset__new(0);
	static const char *p[N];
	char buf[32];
	size_t bytes = 0;

	cr_assert(s);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "frame_%d", i);
		p[i] = strset__intern(s, buf);
		cr_assert(p[i] && p[i] != buf);
		cr_assert_str_eq(p[i], buf);
		bytes += strlen(buf) + 1;
	}
	cr_assert_eq(strset__count(s), N);
	cr_assert_eq(strset__bytes(s), bytes);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "frame_%d", i);
		cr_assert_eq(strset__intern(s, buf), p[i], "the same copy after the set grew");
		cr_assert_str_eq(p[i], buf);
	}
	cr_assert_eq(strset__count(s), N, "interning again adds nothing");
	cr_assert_eq(strset__bytes(s), bytes);
	strset__free(s);
	strset__free(NULL);
}

Test(strset, the_empty_string_and_near_misses)
{
	struct strset *s = strset__new(0);
	const char *e = strset__intern(s, ""), *a = strset__intern(s, "ab"),
		   *b = strset__intern(s, "abc"), *c = strset__intern(s, "ba");

	cr_assert(e && a && b && c);
	cr_assert_str_eq(e, "");
	cr_assert(a != b && a != c && b != c);
	cr_assert_eq(strset__intern(s, ""), e);
	cr_assert_eq(strset__count(s), 4);
	cr_assert_eq(strset__bytes(s), 1 + 3 + 4 + 3);
	strset__free(s);
}

Test(strset, the_byte_cap_refuses_new_strings_only)
{
	/* "abc" and "de" take 4 + 3 bytes: exactly the cap. */
	struct strset *s = strset__new(7);
	const char *abc = strset__intern(s, "abc"), *de = strset__intern(s, "de");

	cr_assert(abc && de, "a string that fits exactly is kept");
	errno = 0;
	cr_assert_null(strset__intern(s, "f"));
	cr_assert_eq(errno, E2BIG);
	cr_assert_eq(strset__intern(s, "abc"), abc, "an interned string is still found");
	cr_assert_eq(strset__intern(s, "de"), de);
	cr_assert_eq(strset__count(s), 2);
	cr_assert_eq(strset__bytes(s), 7);
	strset__free(s);
}

/* 32 strings fill the first 64 slots to half. */
static struct strset *half_full(const char *kept[32])
{
	struct strset *s = strset__new(0);
	char buf[32];

	for (int i = 0; i < 32; i++) {
		snprintf(buf, sizeof(buf), "kept_%d", i);
		kept[i] = strset__intern(s, buf);
		cr_assert(kept[i]);
	}
	return s;
}

static void assert_kept(struct strset *s, const char *kept[32])
{
	char buf[32];

	cr_assert_eq(strset__count(s), 32);
	for (int i = 0; i < 32; i++) {
		snprintf(buf, sizeof(buf), "kept_%d", i);
		cr_assert_eq(strset__intern(s, buf), kept[i]);
	}
}

Test(strset, a_failed_slot_growth_leaves_the_set_as_it_was)
{
	const char *kept[32];
	struct strset *s = half_full(kept);
	size_t bytes = strset__bytes(s);

	alloc_fail__nth(1);
	errno = 0;
	cr_assert_null(strset__intern(s, "one more"));
	cr_assert(alloc_fail__fired());
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(strset__bytes(s), bytes);
	assert_kept(s, kept);
	cr_assert(strset__intern(s, "one more"), "the next try succeeds");
	strset__free(s);
}

Test(strset, a_failed_copy_leaves_the_set_as_it_was)
{
	const char *kept[32];
	struct strset *s = half_full(kept);
	size_t bytes = strset__bytes(s);
	static char big[8192];

	/* Half full: this intern grows the slots (1st allocation), then needs a block (2nd). */
	memset(big, 'x', sizeof(big) - 1);
	alloc_fail__nth(2);
	errno = 0;
	cr_assert_null(strset__intern(s, big));
	cr_assert(alloc_fail__fired());
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(strset__bytes(s), bytes);
	assert_kept(s, kept);
	cr_assert(strset__intern(s, big), "the next try succeeds");
	cr_assert_eq(strset__count(s), 33);
	strset__free(s);
}
