// SPDX-License-Identifier: Apache-2.0
/*
 * Growable arrays (daemon/base/vec.c): doubling from nothing, jumping to a larger need, the
 * contents kept; a size past a size_t and a failed realloc give -ENOMEM with the old array and
 * its capacity untouched.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/base/vec.h"
#include "tests/lib/alloc_fail.h"

/* Under ASan an allocation larger than memory must return NULL as glibc's does, not abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

struct rec {
	uint64_t a, b;
};

Test(vec, grows_by_doubling_and_keeps_the_contents)
{
	struct rec *v = NULL;
	size_t cap = 0, n, prev = 0, reallocs = 0;

	for (n = 0; n < 10000; n++) {
		cr_assert_eq(vec_reserve(&v, &cap, n + 1), 0);
		cr_assert_geq(cap, n + 1);
		if (cap != prev) {
			cr_assert(!prev || cap == prev * 2, "from %zu to %zu", prev, cap);
			prev = cap;
			reallocs++;
		}
		v[n] = (struct rec){n, ~n};
	}
	cr_assert_leq(reallocs, 12, "10000 appends took %zu reallocs", reallocs);
	for (n = 0; n < 10000; n++)
		cr_assert(v[n].a == n && v[n].b == ~n);
	free(v);
}

Test(vec, starts_at_eight_and_jumps_to_a_larger_need)
{
	int *v = NULL;
	size_t cap = 0;

	cr_assert_eq(vec_reserve(&v, &cap, 1), 0);
	cr_assert_eq(cap, 8);
	cr_assert_eq(vec_reserve(&v, &cap, 1000), 0);
	cr_assert_eq(cap, 1000, "a need beyond twice the capacity is met exactly");
	cr_assert_eq(vec_reserve(&v, &cap, 1001), 0);
	cr_assert_eq(cap, 2000);
	free(v);
}

Test(vec, a_need_within_the_capacity_changes_nothing)
{
	char *v = malloc(16), *before = v;
	size_t cap = 16;

	cr_assert_eq(vec_reserve(&v, &cap, 16), 0);
	cr_assert_eq(vec_reserve(&v, &cap, 0), 0);
	cr_assert(v == before && cap == 16);
	free(v);
}

Test(vec, a_size_past_size_max_is_refused_before_any_allocation)
{
	struct rec *v = calloc(4, sizeof(*v)), *before = v;
	size_t cap = 4;

	v[3].a = 42;
	cr_assert_eq(vec_reserve(&v, &cap, SIZE_MAX / sizeof(*v) + 1), -ENOMEM);
	cr_assert_eq(vec_reserve(&v, &cap, SIZE_MAX), -ENOMEM);
	cr_assert(v == before && cap == 4 && v[3].a == 42);
	cr_assert_eq(vec__reserve((void **)&v, &cap, 5, 0), -EINVAL);
	free(v);
}

Test(vec, doubling_past_half_of_size_max_stops_at_the_limit)
{
	char *v = malloc(8), *before = v;
	/* A capacity whose double does not fit: the new one is SIZE_MAX, which no realloc gives. */
	size_t cap = SIZE_MAX / 2 + 1;

	v[0] = 'x';
	cr_assert_eq(vec__reserve((void **)&v, &cap, cap + 1, 1), -ENOMEM);
	cr_assert(v == before && cap == SIZE_MAX / 2 + 1 && v[0] == 'x');
	free(v);
}

Test(vec, a_failed_realloc_keeps_the_old_array)
{
	struct rec *v = NULL;
	size_t cap = 0;

	cr_assert_eq(vec_reserve(&v, &cap, 8), 0);
	for (size_t i = 0; i < 8; i++)
		v[i] = (struct rec){i, i};
	alloc_fail__nth(1);
	cr_assert_eq(vec_reserve(&v, &cap, 9), -ENOMEM);
	cr_assert(alloc_fail__fired());
	cr_assert_eq(cap, 8);
	/* Still ours, still whole: ASan would report a read of a freed array. */
	for (size_t i = 0; i < 8; i++)
		cr_assert(v[i].a == i && v[i].b == i);
	cr_assert_eq(vec_reserve(&v, &cap, 9), 0, "the next try succeeds");
	cr_assert(cap == 16 && v[7].a == 7);
	free(v);
}

Test(vec, a_size_no_allocator_can_give_is_enomem)
{
	struct rec *v = NULL;
	size_t cap = 0;

	/* 2^62 bytes: fits a size_t, not any machine. */
	cr_assert_eq(vec_reserve(&v, &cap, (SIZE_MAX / sizeof(*v)) / 4), -ENOMEM);
	cr_assert(!v && !cap);
}

Test(vec, new_doubled_is_zeroed_and_checked)
{
	size_t nr = 0;
	uint64_t *v = vec__new_doubled(16, sizeof(*v), &nr);

	cr_assert(v);
	cr_assert_eq(nr, 32);
	for (size_t i = 0; i < nr; i++)
		cr_assert_eq(v[i], 0);
	free(v);
	nr = 7;
	errno = 0;
	cr_assert_null(vec__new_doubled(SIZE_MAX / 2 / sizeof(*v) + 1, sizeof(*v), &nr));
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(nr, 7, "untouched on failure");
	alloc_fail__nth(1);
	cr_assert_null(vec__new_doubled(16, sizeof(*v), &nr));
	cr_assert(alloc_fail__fired());
	cr_assert_eq(nr, 7);
}
