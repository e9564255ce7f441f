// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/arena.h"

#define ARENA_MIN_BLOCK (4 * 1024) /* small: most tables are small, and the cache counts blocks */
#define ARENA_MAX_BLOCK (1024 * 1024)

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t size;
	char data[];
};

struct arena {
	struct arena_block *head;
	size_t next_size; /* grows so big symbol tables take few blocks */
	size_t bytes;
};

struct arena *arena__new(void)
{
	struct arena *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->next_size = ARENA_MIN_BLOCK;
	return a;
}

void arena__free(struct arena *a)
{
	struct arena_block *b, *next;

	if (!a)
		return;
	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	free(a);
}

static struct arena_block *arena__grow(struct arena *a, size_t need)
{
	size_t size = need > a->next_size ? need : a->next_size;
	struct arena_block *b;

	b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->used = 0;
	b->size = size;
	/* An oversized block goes behind the head so the head's free space is not wasted. */
	if (need > a->next_size && a->head) {
		b->next = a->head->next;
		a->head->next = b;
	} else {
		b->next = a->head;
		a->head = b;
		if (a->next_size < ARENA_MAX_BLOCK)
			a->next_size *= 2;
	}
	a->bytes += sizeof(*b) + size;
	return b;
}

char *arena__alloc(struct arena *a, size_t size)
{
	struct arena_block *b = a->head;
	char *p;

	if (size > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	if (!b || b->size - b->used < size) {
		b = arena__grow(a, size);
		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
	}
	p = b->data + b->used;
	b->used += size;
	return p;
}

const char *arena__strndup(struct arena *a, const char *s, size_t len)
{
	char *p;

	if (len == SIZE_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	p = arena__alloc(a, len + 1);
	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

size_t arena__bytes(const struct arena *a)
{
	return a->bytes;
}
