// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/frame_names.h"

struct frame_names {
	const char **names; /* id -> name: the index's copy */
	size_t nr, cap;
	size_t max_names, max_bytes;
	struct keymap *index; /* name -> id + 1 */
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
	fn->index = keymap__new();
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
	free(fn->names);
	keymap__free(fn->index);
	free(fn);
}

static uint64_t token_of(size_t id)
{
	return FRAME_TOKEN_TAG | (uint64_t)id << 4 | 8;
}

uint64_t frame_names__intern(struct frame_names *fn, const char *name)
{
	size_t len = strlen(name), need = len + 1 + sizeof(char *);
	uintptr_t v = (uintptr_t)keymap__get(fn->index, name, len);
	const void *copy;

	if (v)
		return token_of(v - 1);
	if (fn->nr >= fn->max_names || fn->st.bytes + need > fn->max_bytes) {
		fn->st.full++;
		return 0;
	}
	if (vec_reserve(&fn->names, &fn->cap, fn->nr + 1) ||
	    keymap__put(fn->index, name, len, (void *)(uintptr_t)(fn->nr + 1), &copy))
		return 0;
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
