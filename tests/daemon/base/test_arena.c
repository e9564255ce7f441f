// SPDX-License-Identifier: Apache-2.0
/*
 * The arena (daemon/base/arena.c): copies that never move however many follow, NUL-terminated,
 * one larger than a block; a size past a size_t and a failed block allocation give NULL with
 * ENOMEM and leave what was copied.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"
#include "tests/lib/alloc_fail.h"

Test(arena, copies_stay_where_they_are)
{
	struct arena *a = arena__new();
	const char *p[5000];
	char buf[32];

	cr_assert(a);
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof(buf), "name-%d", i);
		p[i] = arena__strndup(a, buf, strlen(buf));
		cr_assert(p[i]);
	}
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof(buf), "name-%d", i);
		cr_assert_str_eq(p[i], buf);
	}
	cr_assert_geq(arena__bytes(a), 5000 * 7, "every copy counted");
	arena__free(a);
	arena__free(NULL);
}

Test(arena, a_copy_is_nul_terminated_and_may_hold_nuls)
{
	struct arena *a = arena__new();
	const char *p = arena__strndup(a, "ab\0cd-not-copied", 5);

	cr_assert(p);
	cr_assert_eq(memcmp(p, "ab\0cd", 5), 0);
	cr_assert_eq(p[5], 0);
	arena__free(a);
}

Test(arena, a_copy_larger_than_a_block)
{
	struct arena *a = arena__new();
	size_t n = 3 << 20;
	char *big = malloc(n);
	const char *small = arena__strndup(a, "before", 6), *p;

	memset(big, 'x', n);
	p = arena__strndup(a, big, n);
	cr_assert(p && small);
	cr_assert_eq(memcmp(p, big, n), 0);
	cr_assert_str_eq(small, "before");
	cr_assert_str_eq(arena__strndup(a, "after", 5), "after");
	free(big);
	arena__free(a);
}

Test(arena, a_size_past_size_max_is_enomem)
{
	struct arena *a = arena__new();

	errno = 0;
	cr_assert_null(arena__strndup(a, "x", SIZE_MAX));
	cr_assert_eq(errno, ENOMEM);
	errno = 0;
	cr_assert_null(arena__alloc(a, SIZE_MAX / 2 + 1));
	cr_assert_eq(errno, ENOMEM);
	arena__free(a);
}

Test(arena, a_failed_block_keeps_what_was_copied)
{
	struct arena *a = arena__new();
	const char *first = arena__strndup(a, "first", 5);
	char *big = calloc(1, 8192);

	cr_assert(first && big);
	alloc_fail__nth(1);
	errno = 0;
	cr_assert_null(arena__strndup(a, big, 8191), "needs a new block");
	cr_assert(alloc_fail__fired());
	cr_assert_eq(errno, ENOMEM);
	cr_assert_str_eq(first, "first");
	cr_assert(arena__strndup(a, big, 8191), "the next try succeeds");
	free(big);
	arena__free(a);
}
