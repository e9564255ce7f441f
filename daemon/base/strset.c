// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"
#include "daemon/base/hash.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"

#define STRSET_MIN_SLOTS 64

struct strset {
	/* The copies themselves, NULL when empty: 8 bytes a slot, as a set of names should cost. */
	const char **slots;
	size_t nr_slots; /* power of two */
	size_t count;
	size_t bytes, max_bytes;
	struct arena *strings;
};

struct strset *strset__new(size_t max_bytes)
{
	struct strset *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->slots = calloc(STRSET_MIN_SLOTS, sizeof(*s->slots));
	s->strings = arena__new();
	if (!s->slots || !s->strings) {
		strset__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->nr_slots = STRSET_MIN_SLOTS;
	s->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
	return s;
}

void strset__free(struct strset *s)
{
	if (!s)
		return;
	arena__free(s->strings);
	free(s->slots);
	free(s);
}

/* The slot holding str, or the empty slot where it belongs. */
static const char **find(const char **slots, size_t nr_slots, const char *str)
{
	size_t mask = nr_slots - 1, i;

	for (i = hash_str(str) & mask; slots[i] && strcmp(slots[i], str); i = (i + 1) & mask)
		;
	return &slots[i];
}

/* Doubles the slots; linear probing stays short at most half full. */
static int grow(struct strset *s)
{
	size_t nr;
	const char **slots = vec__new_doubled(s->nr_slots, sizeof(*slots), &nr);

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_slots; i++) {
		if (s->slots[i])
			*find(slots, nr, s->slots[i]) = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->nr_slots = nr;
	return 0;
}

const char *strset__intern(struct strset *s, const char *str)
{
	const char **slot = find(s->slots, s->nr_slots, str);
	size_t len;
	int err;

	if (*slot)
		return *slot;
	len = strlen(str);
	if (len >= s->max_bytes - s->bytes) {
		errno = E2BIG;
		return NULL;
	}
	if ((s->count + 1) * 2 > s->nr_slots) {
		err = grow(s);
		if (err) {
			errno = -err;
			return NULL;
		}
		slot = find(s->slots, s->nr_slots, str);
	}
	*slot = arena__strndup(s->strings, str, len);
	if (!*slot)
		return NULL;
	s->count++;
	s->bytes += len + 1;
	return *slot;
}

size_t strset__count(const struct strset *s)
{
	return s->count;
}

size_t strset__bytes(const struct strset *s)
{
	return s->bytes;
}
