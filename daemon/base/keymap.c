// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"
#include "daemon/base/hash.h"
#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"

#define KEYMAP_MIN_SLOTS 16

/* 24 bytes: a 32-bit length and the hash folded to 32 bits are enough for any table here. */
struct keymap_slot {
	const char *key; /* the arena's copy; NULL marks an empty slot */
	void *val;
	uint32_t len;
	uint32_t hash;
};

struct keymap {
	struct keymap_slot *slots;
	size_t nr_slots; /* power of two */
	size_t count;
	struct arena *keys;
};

struct keymap *keymap__new(void)
{
	struct keymap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->slots = calloc(KEYMAP_MIN_SLOTS, sizeof(*m->slots));
	m->keys = arena__new();
	if (!m->slots || !m->keys) {
		keymap__free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->nr_slots = KEYMAP_MIN_SLOTS;
	return m;
}

void keymap__free(struct keymap *m)
{
	if (!m)
		return;
	arena__free(m->keys);
	free(m->slots);
	free(m);
}

/* The slot holding the key, or the empty slot where it belongs. */
static struct keymap_slot *slot_of(const struct keymap *m, const void *key, size_t len,
				   uint32_t hash)
{
	size_t mask = m->nr_slots - 1, i;

	for (i = hash & mask; m->slots[i].key; i = (i + 1) & mask) {
		const struct keymap_slot *s = &m->slots[i];

		if (s->hash == hash && s->len == len && (!len || !memcmp(s->key, key, len)))
			break;
	}
	return &m->slots[i];
}

static uint32_t key_hash(const void *key, size_t len)
{
	uint64_t h = hash_bytes(HASH_INIT, key, len);

	return (uint32_t)(h ^ (h >> 32));
}

void *keymap__get(const struct keymap *m, const void *key, size_t len)
{
	if (len > KEYMAP_MAX_KEY)
		return NULL;
	return slot_of(m, key, len, key_hash(key, len))->val;
}

/* Doubles the slots; linear probing stays short at most half full. */
static int grow(struct keymap *m)
{
	struct keymap_slot *old = m->slots;
	size_t old_nr = m->nr_slots;

	m->slots = vec__new_doubled(old_nr, sizeof(*old), &m->nr_slots);
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	for (struct keymap_slot *o = old; o < old + old_nr; o++) {
		if (o->key)
			*slot_of(m, o->key, o->len, o->hash) = *o;
	}
	free(old);
	return 0;
}

int keymap__put(struct keymap *m, const void *key, size_t len, void *val, const void **ret_key)
{
	uint32_t hash;
	struct keymap_slot *s;
	const char *copy;
	int err;

	if (!val)
		return -EINVAL;
	if (len > KEYMAP_MAX_KEY)
		return -E2BIG;
	hash = key_hash(key, len);
	s = slot_of(m, key, len, hash);
	if (!s->key) {
		if ((m->count + 1) * 2 > m->nr_slots) {
			err = grow(m);
			if (err)
				return err;
			s = slot_of(m, key, len, hash);
		}
		copy = arena__strndup(m->keys, len ? key : "", len);
		if (!copy)
			return -ENOMEM;
		*s = (struct keymap_slot){.key = copy, .len = (uint32_t)len, .hash = hash};
		m->count++;
	}
	s->val = val;
	if (ret_key)
		*ret_key = s->key;
	return 0;
}

size_t keymap__count(const struct keymap *m)
{
	return m->count;
}

void keymap__for_each(const struct keymap *m,
		      void (*fn)(const void *key, size_t len, void *val, void *ctx), void *ctx)
{
	size_t i;

	for (i = 0; i < m->nr_slots; i++) {
		if (m->slots[i].key)
			fn(m->slots[i].key, m->slots[i].len, m->slots[i].val, ctx);
	}
}
