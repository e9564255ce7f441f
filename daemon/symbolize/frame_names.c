// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/symbolize/frame_names.h"
#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"

struct frame_names {
	char **names; /* id -> name */
	size_t nr, cap;
	size_t max_names, max_bytes;
	struct hashmap *index; /* (hash, length) -> id + 1 */
	struct frame_names_stats st;
};

struct frame_names *frame_names__new(size_t max_names, size_t max_bytes)
{
	struct frame_names *fn = calloc(1, sizeof(*fn));

	if (!fn)
		return NULL;
	fn->max_names = max_names ? max_names : FRAME_NAMES_DEFAULT_MAX_NAMES;
	fn->max_bytes = max_bytes ? max_bytes : FRAME_NAMES_DEFAULT_MAX_BYTES;
	/* Ids must fit the token's 44 bits between the tag and the ignored low bits. */
	if (fn->max_names > (1ull << 40))
		fn->max_names = 1ull << 40;
	fn->index = hashmap__new();
	if (!fn->index) {
		free(fn);
		errno = ENOMEM;
		return NULL;
	}
	return fn;
}

void frame_names__free(struct frame_names *fn)
{
	if (!fn)
		return;
	for (size_t i = 0; i < fn->nr; i++)
		free(fn->names[i]);
	free(fn->names);
	hashmap__free(fn->index);
	free(fn);
}

static uint64_t token_of(size_t id)
{
	return FRAME_TOKEN_TAG | (uint64_t)id << 4 | 8;
}

uint64_t frame_names__intern(struct frame_names *fn, const char *name)
{
	size_t len = strlen(name);
	uint64_t h = hash_bytes(HASH_INIT, name, len);
	uintptr_t v = (uintptr_t)hashmap__get(fn->index, h, len);
	size_t need = len + 1 + sizeof(char *);
	char *copy;

	if (v && !strcmp(fn->names[v - 1], name))
		return token_of(v - 1);
	if (fn->nr >= fn->max_names || fn->st.bytes + need > fn->max_bytes) {
		fn->st.full++;
		return 0;
	}
	if (fn->nr == fn->cap) {
		size_t ncap = fn->cap ? fn->cap * 2 : 1024;
		char **nn = realloc(fn->names, ncap * sizeof(*nn));

		if (!nn)
			return 0;
		fn->names = nn;
		fn->cap = ncap;
	}
	copy = strdup(name);
	if (!copy)
		return 0;
	/* A (hash, length) taken by another name: the new one is kept, just not indexed. */
	if (!v && hashmap__put(fn->index, h, len, (void *)(uintptr_t)(fn->nr + 1))) {
		free(copy);
		return 0;
	}
	fn->names[fn->nr] = copy;
	fn->st.bytes += need;
	fn->st.names = ++fn->nr;
	return token_of(fn->nr - 1);
}

const char *frame_names__name(const struct frame_names *fn, uint64_t token)
{
	uint64_t id;

	if (!fn || !frame_token__is(token))
		return NULL;
	id = (token & ~FRAME_TOKEN_MASK) >> 4;
	return id < fn->nr ? fn->names[id] : NULL;
}

void frame_names__stats(const struct frame_names *fn, struct frame_names_stats *ret)
{
	if (!fn) {
		memset(ret, 0, sizeof(*ret));
		return;
	}
	*ret = fn->st;
}
