// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"

#define HASHMAP_MIN_CAP 16

struct hashmap_slot {
	uint64_t k1;
	uint64_t k2;
	void *val; /* NULL marks an empty slot */
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t cap; /* power of two */
	size_t count;
};

static inline size_t hashmap__slot_of(const struct hashmap *h, uint64_t k1, uint64_t k2)
{
	return hash_combine(hash_u64(k1), k2) & (h->cap - 1);
}

struct hashmap *hashmap__new(void)
{
	struct hashmap *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->slots = calloc(HASHMAP_MIN_CAP, sizeof(*h->slots));
	if (!h->slots) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	h->cap = HASHMAP_MIN_CAP;
	return h;
}

void hashmap__free(struct hashmap *h)
{
	if (!h)
		return;
	free(h->slots);
	free(h);
}

void *hashmap__get(const struct hashmap *h, uint64_t k1, uint64_t k2)
{
	size_t i = hashmap__slot_of(h, k1, k2);

	for (;;) {
		const struct hashmap_slot *s = &h->slots[i];

		if (!s->val)
			return NULL;
		if (s->k1 == k1 && s->k2 == k2)
			return s->val;
		i = (i + 1) & (h->cap - 1);
	}
}

static void hashmap__insert_new(struct hashmap *h, uint64_t k1, uint64_t k2, void *val)
{
	size_t i = hashmap__slot_of(h, k1, k2);

	while (h->slots[i].val)
		i = (i + 1) & (h->cap - 1);
	h->slots[i].k1 = k1;
	h->slots[i].k2 = k2;
	h->slots[i].val = val;
	h->count++;
}

static int hashmap__grow(struct hashmap *h)
{
	struct hashmap_slot *old = h->slots;
	size_t old_cap = h->cap, i;

	h->slots = vec__new_doubled(old_cap, sizeof(*old), &h->cap);
	if (!h->slots) {
		h->slots = old;
		return -ENOMEM;
	}
	h->count = 0;
	for (i = 0; i < old_cap; i++) {
		if (old[i].val)
			hashmap__insert_new(h, old[i].k1, old[i].k2, old[i].val);
	}
	free(old);
	return 0;
}

int hashmap__put(struct hashmap *h, uint64_t k1, uint64_t k2, void *val)
{
	size_t i;
	int err;

	if (!val)
		return -EINVAL;
	i = hashmap__slot_of(h, k1, k2);
	while (h->slots[i].val) {
		if (h->slots[i].k1 == k1 && h->slots[i].k2 == k2) {
			h->slots[i].val = val;
			return 0;
		}
		i = (i + 1) & (h->cap - 1);
	}
	/* Linear probing stays short below a 5/8 load. */
	if ((h->count + 1) * 8 > h->cap * 5) {
		err = hashmap__grow(h);
		if (err)
			return err;
	}
	hashmap__insert_new(h, k1, k2, val);
	return 0;
}

void *hashmap__remove(struct hashmap *h, uint64_t k1, uint64_t k2)
{
	size_t mask = h->cap - 1, i = hashmap__slot_of(h, k1, k2), j, home;
	void *val;

	for (;;) {
		if (!h->slots[i].val)
			return NULL;
		if (h->slots[i].k1 == k1 && h->slots[i].k2 == k2)
			break;
		i = (i + 1) & mask;
	}
	val = h->slots[i].val;
	h->slots[i].val = NULL;
	h->count--;
	/* Backward-shift deletion: no tombstones, so lookups never slow down with churn. */
	j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!h->slots[j].val)
			break;
		home = hashmap__slot_of(h, h->slots[j].k1, h->slots[j].k2);
		/* Move j into the hole at i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		h->slots[i] = h->slots[j];
		h->slots[j].val = NULL;
		i = j;
	}
	return val;
}

size_t hashmap__count(const struct hashmap *h)
{
	return h->count;
}

void hashmap__for_each(const struct hashmap *h, void (*fn)(void *val, void *ctx), void *ctx)
{
	size_t i;

	for (i = 0; i < h->cap; i++) {
		if (h->slots[i].val)
			fn(h->slots[i].val, ctx);
	}
}
