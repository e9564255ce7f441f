// SPDX-License-Identifier: Apache-2.0
/*
 * The pair-keyed map (daemon/base/hashmap.c): two u64s to a non-NULL pointer; insert or
 * replace; a NULL value refused; growth keeps every entry; removal (backward shift, no
 * tombstones) leaves every other entry findable however the probe runs overlapped; for_each
 * visits each value once; a failed allocation leaves the map as it was.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/base/hashmap.h"
#include "tests/lib/alloc_fail.h"

#define N 20000

static void *val_of(size_t i)
{
	return (void *)(uintptr_t)(i + 1);
}

Test(hashmap, put_get_replace_and_both_halves_of_the_key)
{
	struct hashmap *h = hashmap__new();

	cr_assert(h);
	cr_assert_null(hashmap__get(h, 1, 2), "an empty map has nothing");
	cr_assert_eq(hashmap__put(h, 1, 2, val_of(0)), 0);
	cr_assert_eq(hashmap__get(h, 1, 2), val_of(0));
	cr_assert_null(hashmap__get(h, 2, 1), "the halves are not interchangeable");
	cr_assert_null(hashmap__get(h, 1, 3));
	cr_assert_eq(hashmap__put(h, 1, 2, val_of(1)), 0);
	cr_assert_eq(hashmap__get(h, 1, 2), val_of(1), "a second put replaces");
	cr_assert_eq(hashmap__count(h), 1);
	cr_assert_eq(hashmap__put(h, 0, 0, val_of(2)), 0, "the zero key is a key like any");
	cr_assert_eq(hashmap__get(h, 0, 0), val_of(2));
	cr_assert_eq(hashmap__count(h), 2);
	hashmap__free(h);
	hashmap__free(NULL);
}

Test(hashmap, a_null_value_is_refused_and_nothing_changes)
{
	struct hashmap *h = hashmap__new();

	cr_assert_eq(hashmap__put(h, 7, 7, val_of(7)), 0);
	cr_assert_eq(hashmap__put(h, 7, 7, NULL), -EINVAL);
	cr_assert_eq(hashmap__put(h, 8, 8, NULL), -EINVAL);
	cr_assert_eq(hashmap__get(h, 7, 7), val_of(7));
	cr_assert_null(hashmap__get(h, 8, 8));
	cr_assert_eq(hashmap__count(h), 1);
	hashmap__free(h);
}

/* Keys that share their first half, as (pid, address) keys of one process do. */
static uint64_t k2_of(size_t i)
{
	return (uint64_t)i * 4096;
}

Test(hashmap, growth_keeps_every_entry)
{
	struct hashmap *h = hashmap__new();

	for (size_t i = 0; i < N; i++)
		cr_assert_eq(hashmap__put(h, 42, k2_of(i), val_of(i)), 0);
	cr_assert_eq(hashmap__count(h), N);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(hashmap__get(h, 42, k2_of(i)), val_of(i), "entry %zu lost", i);
	cr_assert_null(hashmap__get(h, 43, k2_of(0)));
	hashmap__free(h);
}

Test(hashmap, removal_leaves_the_rest_findable)
{
	struct hashmap *h = hashmap__new();

	for (size_t i = 0; i < N; i++)
		cr_assert_eq(hashmap__put(h, i % 7, k2_of(i), val_of(i)), 0);
	for (size_t i = 0; i < N; i += 2)
		cr_assert_eq(hashmap__remove(h, i % 7, k2_of(i)), val_of(i));
	cr_assert_null(hashmap__remove(h, 0, k2_of(0)), "removed already");
	cr_assert_null(hashmap__remove(h, 99, 99), "never there");
	cr_assert_eq(hashmap__count(h), N / 2);
	for (size_t i = 0; i < N; i++) {
		if (i % 2)
			cr_assert_eq(hashmap__get(h, i % 7, k2_of(i)), val_of(i), "entry %zu lost",
				     i);
		else
			cr_assert_null(hashmap__get(h, i % 7, k2_of(i)), "entry %zu back", i);
	}
	/* Churn: the same keys in and out again, as a cache's are. */
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < N; i += 2)
			cr_assert_eq(hashmap__put(h, i % 7, k2_of(i), val_of(i)), 0);
		for (size_t i = 0; i < N; i += 2)
			cr_assert_eq(hashmap__remove(h, i % 7, k2_of(i)), val_of(i));
	}
	cr_assert_eq(hashmap__count(h), N / 2);
	for (size_t i = 1; i < N; i += 2)
		cr_assert_eq(hashmap__get(h, i % 7, k2_of(i)), val_of(i), "entry %zu lost", i);
	hashmap__free(h);
}

static void visit(void *val, void *ctx)
{
	unsigned char *seen = ctx;
	size_t i = (uintptr_t)val - 1;

	cr_assert_lt(i, 1000);
	seen[i]++;
}

Test(hashmap, for_each_visits_each_value_once)
{
	struct hashmap *h = hashmap__new();
	unsigned char seen[1000] = {0};

	for (size_t i = 0; i < 1000; i++)
		cr_assert_eq(hashmap__put(h, i, ~i, val_of(i)), 0);
	for (size_t i = 0; i < 1000; i += 3)
		hashmap__remove(h, i, ~i);
	hashmap__for_each(h, visit, seen);
	for (size_t i = 0; i < 1000; i++)
		cr_assert_eq(seen[i], i % 3 ? 1 : 0, "value %zu seen %d times", i, seen[i]);
	hashmap__free(h);
}

Test(hashmap, a_failed_growth_leaves_the_map_as_it_was)
{
	struct hashmap *h = hashmap__new();
	size_t failures = 0;

	for (size_t i = 0; i < 2000; i++) {
		int err;

		alloc_fail__nth(1);
		err = hashmap__put(h, 5, k2_of(i), val_of(i));
		alloc_fail__nth(0);
		if (err) {
			cr_assert_eq(err, -ENOMEM);
			failures++;
			cr_assert_eq(hashmap__count(h), i, "the count moved");
			cr_assert_null(hashmap__get(h, 5, k2_of(i)), "the refused entry went in");
			for (size_t j = 0; j < i; j++)
				cr_assert_eq(hashmap__get(h, 5, k2_of(j)), val_of(j),
					     "entry %zu lost", j);
			cr_assert_eq(hashmap__put(h, 5, k2_of(i), val_of(i)), 0, "no retry after");
		}
	}
	cr_assert_gt(failures, 3, "growth was failed %zu times", failures);
	cr_assert_eq(hashmap__count(h), 2000);
	hashmap__free(h);
}
