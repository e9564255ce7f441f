// SPDX-License-Identifier: Apache-2.0
/*
 * The keyed map (daemon/base/keymap.c): byte-string keys, copied and NUL-terminated, compared by
 * their bytes and length (NULs and all); insert or replace; a NULL value refused; growth keeps
 * every entry; a failed allocation leaves the map as it was.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "tests/lib/alloc_fail.h"

#define N 20000

static void *val_of(size_t i)
{
	return (void *)(uintptr_t)(i + 1);
}

Test(keymap, put_get_and_the_copy_of_the_key)
{
	struct keymap *m = keymap__new();
	char buf[32] = "main";
	const void *copy = NULL;

	cr_assert(m);
	cr_assert_null(keymap__get(m, "main", 4), "an empty map has nothing");
	cr_assert_eq(keymap__put(m, buf, strlen(buf), val_of(0), &copy), 0);
	cr_assert(copy && copy != buf);
	strcpy(buf, "xxxx");
	cr_assert_str_eq(copy, "main", "the map's copy, NUL-terminated, not the caller's buffer");
	cr_assert_eq(keymap__get(m, "main", 4), val_of(0));
	cr_assert_null(keymap__get(m, "mai", 3));
	cr_assert_null(keymap__get(m, "main", 5), "the length is part of the key");
	cr_assert_eq(keymap__count(m), 1);
	keymap__free(m);
	keymap__free(NULL);
}

Test(keymap, put_replaces_and_keeps_the_first_copy)
{
	struct keymap *m = keymap__new();
	const void *a = NULL, *b = NULL;

	cr_assert_eq(keymap__put(m, "k", 1, val_of(1), &a), 0);
	cr_assert_eq(keymap__put(m, "k", 1, val_of(2), &b), 0);
	cr_assert_eq(a, b);
	cr_assert_eq(keymap__get(m, "k", 1), val_of(2));
	cr_assert_eq(keymap__count(m), 1);
	keymap__free(m);
}

Test(keymap, binary_keys_with_nuls_and_the_empty_key)
{
	struct keymap *m = keymap__new();
	const uint64_t k1[2] = {0, 1}, k2[2] = {0, 2};

	cr_assert_eq(keymap__put(m, k1, sizeof(k1), val_of(1), NULL), 0);
	cr_assert_eq(keymap__put(m, k2, sizeof(k2), val_of(2), NULL), 0);
	cr_assert_eq(keymap__put(m, "a\0b", 3, val_of(3), NULL), 0);
	cr_assert_eq(keymap__put(m, "a\0c", 3, val_of(4), NULL), 0);
	cr_assert_eq(keymap__put(m, NULL, 0, val_of(5), NULL), 0);
	cr_assert_eq(keymap__get(m, k1, sizeof(k1)), val_of(1));
	cr_assert_eq(keymap__get(m, k2, sizeof(k2)), val_of(2));
	cr_assert_eq(keymap__get(m, "a\0b", 3), val_of(3));
	cr_assert_eq(keymap__get(m, "a\0c", 3), val_of(4));
	cr_assert_eq(keymap__get(m, "", 0), val_of(5));
	cr_assert_null(keymap__get(m, "a", 1));
	cr_assert_eq(keymap__count(m), 5);
	keymap__free(m);
}

Test(keymap, a_null_value_is_refused)
{
	struct keymap *m = keymap__new();
	const void *copy = (const void *)1;

	cr_assert_eq(keymap__put(m, "k", 1, NULL, &copy), -EINVAL);
	cr_assert_eq(copy, (const void *)1, "ret_key untouched on failure");
	cr_assert_eq(keymap__count(m), 0);
	cr_assert_null(keymap__get(m, "k", 1));
	keymap__free(m);
}

Test(keymap, a_key_past_the_longest_is_refused_unread)
{
	struct keymap *m = keymap__new();
	char k = 'k';

	/* Refused on its length alone: the 4 GiB behind &k are never read. */
	cr_assert_eq(keymap__put(m, &k, (size_t)KEYMAP_MAX_KEY + 1, val_of(1), NULL), -E2BIG);
	cr_assert_null(keymap__get(m, &k, (size_t)KEYMAP_MAX_KEY + 1));
	cr_assert_eq(keymap__count(m), 0);
	keymap__free(m);
}

static void count_entry(const void *key, size_t len, void *val, void *ctx)
{
	size_t *seen = ctx, i = (uintptr_t)val - 1;
	char buf[32];

	snprintf(buf, sizeof(buf), "key %zu", i);
	cr_assert_eq(len, strlen(buf));
	cr_assert_eq(memcmp(key, buf, len), 0);
	seen[i]++;
}

Test(keymap, growth_keeps_every_entry)
{
	struct keymap *m = keymap__new();
	static const void *copies[N];
	static size_t seen[N];
	char buf[32];

	for (size_t i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "key %zu", i);
		cr_assert_eq(keymap__put(m, buf, strlen(buf), val_of(i), &copies[i]), 0);
	}
	cr_assert_eq(keymap__count(m), N);
	for (size_t i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "key %zu", i);
		cr_assert_eq(keymap__get(m, buf, strlen(buf)), val_of(i));
		cr_assert_str_eq(copies[i], buf, "copies stay where they are");
	}
	keymap__for_each(m, count_entry, seen);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(seen[i], 1, "for_each visits each entry once");
	keymap__free(m);
}

/* 8 keys fill the first 16 slots to half: the 9th doubles them. */
static struct keymap *half_full(void)
{
	struct keymap *m = keymap__new();
	char buf[32];

	for (size_t i = 0; i < 8; i++) {
		snprintf(buf, sizeof(buf), "key %zu", i);
		cr_assert_eq(keymap__put(m, buf, strlen(buf), val_of(i), NULL), 0);
	}
	return m;
}

static void assert_unchanged(struct keymap *m, const void *key, size_t len)
{
	char buf[32];

	cr_assert_eq(keymap__count(m), 8);
	cr_assert_null(keymap__get(m, key, len));
	for (size_t i = 0; i < 8; i++) {
		snprintf(buf, sizeof(buf), "key %zu", i);
		cr_assert_eq(keymap__get(m, buf, strlen(buf)), val_of(i));
	}
}

Test(keymap, a_failed_slot_growth_leaves_the_map_as_it_was)
{
	struct keymap *m = half_full();
	const void *copy = NULL;

	alloc_fail__nth(1);
	cr_assert_eq(keymap__put(m, "key 8", 5, val_of(8), &copy), -ENOMEM);
	cr_assert(alloc_fail__fired());
	cr_assert_null(copy, "ret_key untouched on failure");
	assert_unchanged(m, "key 8", 5);
	cr_assert_eq(keymap__put(m, "key 8", 5, val_of(8), NULL), 0, "the next try succeeds");
	cr_assert_eq(keymap__get(m, "key 8", 5), val_of(8));
	keymap__free(m);
}

Test(keymap, a_failed_key_copy_leaves_the_map_as_it_was)
{
	struct keymap *m = half_full();
	static char big[8192];

	/* The slots grow (1st allocation), then the key needs a block of its own (2nd). */
	alloc_fail__nth(2);
	cr_assert_eq(keymap__put(m, big, sizeof(big), val_of(8), NULL), -ENOMEM);
	cr_assert(alloc_fail__fired());
	assert_unchanged(m, big, sizeof(big));
	cr_assert_eq(keymap__put(m, big, sizeof(big), val_of(8), NULL), 0);
	cr_assert_eq(keymap__get(m, big, sizeof(big)), val_of(8));
	keymap__free(m);
}
