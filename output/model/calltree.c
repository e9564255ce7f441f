// SPDX-License-Identifier: Apache-2.0
/*
 * The call tree is a trie stored in flat arrays indexed by uint32_t:
 *  - nodes[]: one per frame; index 0 is the implicit root above every frames[0].
 *  - one open-addressing hash table for all edges, keyed by (parent, name id), holding the child
 *    index, so finding a child is O(1) whatever the fan-out (a comm node can have 1e4 children).
 *  - names are interned in their own hash table; their bytes live in an arena.
 * Both tables stay hand-written, not base/keymap: 4-byte slots keyed through nodes[] and names[]
 * (a keymap slot is 32 bytes plus a copy of the key), reserved before a stack goes in.
 * Children are also chained per parent, unordered; the walk sorts each sibling set by name, which
 * keeps insertion cheap and the output deterministic.
 *
 * calltree__add is all-or-nothing: it first finds how much of the stack already exists, reserves
 * everything the missing suffix can need (nodes, edge and name slots, arena bytes), and only then
 * changes the tree, so -ENOMEM never leaves a half-inserted stack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/base/utf8.h"
#include "daemon/base/vec.h"
#include "output/model/calltree.h"

#define NONE	    0 /* no node: the root is never anyone's child or sibling */
#define ARENA_CHUNK (64 * 1024)
#define MAX_NODES   (UINT32_MAX - 1)

struct node {
	uint32_t name; /* index into names[] */
	uint32_t parent;
	uint32_t first_child;
	uint32_t next_sibling;
	uint64_t self;
	uint64_t total;
};

struct name {
	const char *str;
	uint32_t hash;
};

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct calltree {
	struct node *nodes;
	size_t nr_nodes, cap_nodes;

	/* Edge table: child node index per slot, NONE when empty; key read from the child. */
	uint32_t *edges;
	size_t nr_edges, cap_edges; /* cap is a power of two */

	struct name *names;
	size_t nr_names, cap_names;
	uint32_t *name_slots; /* name index + 1 per slot, 0 when empty */
	size_t cap_name_slots;

	struct chunk *arena;
	size_t max_depth;
};

static uint32_t str_hash(const char *s, size_t *ret_len)
{
	size_t len = strlen(s);
	uint64_t h = hash_bytes(HASH_INIT, s, len);

	*ret_len = len;
	return (uint32_t)(h ^ (h >> 32));
}

static size_t edge_hash(uint32_t parent, uint32_t name)
{
	return (size_t)hash_u64((uint64_t)parent << 32 | name);
}

static size_t round_pow2(size_t n)
{
	size_t p = 16;

	while (p < n)
		p <<= 1;
	return p;
}

struct calltree *calltree__new(void)
{
	struct calltree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap_nodes = 64;
	t->nodes = calloc(t->cap_nodes, sizeof(*t->nodes));
	if (!t->nodes) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->nr_nodes = 1; /* the root, name unused */
	return t;
}

void calltree__free(struct calltree *t)
{
	struct chunk *c, *next;

	if (!t)
		return;
	for (c = t->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->nodes);
	free(t->edges);
	free(t->names);
	free(t->name_slots);
	free(t);
}

static int find_name(const struct calltree *t, const char *s, uint32_t hash, uint32_t *ret_id)
{
	size_t mask = t->cap_name_slots - 1, i;

	if (!t->cap_name_slots)
		return -ENOENT;
	for (i = hash & mask;; i = (i + 1) & mask) {
		uint32_t slot = t->name_slots[i];

		if (!slot)
			return -ENOENT;
		if (t->names[slot - 1].hash == hash && !strcmp(t->names[slot - 1].str, s)) {
			*ret_id = slot - 1;
			return 0;
		}
	}
}

static uint32_t find_child(const struct calltree *t, uint32_t parent, uint32_t name)
{
	size_t mask = t->cap_edges - 1, i;

	if (!t->cap_edges)
		return NONE;
	for (i = edge_hash(parent, name) & mask;; i = (i + 1) & mask) {
		uint32_t c = t->edges[i];

		if (c == NONE || (t->nodes[c].parent == parent && t->nodes[c].name == name))
			return c;
	}
}

static int reserve_nodes(struct calltree *t, size_t want)
{
	return vec_reserve(&t->nodes, &t->cap_nodes, want);
}

/* Keeps the edge table at most half full for short probe runs. */
static int reserve_edges(struct calltree *t, size_t want)
{
	size_t cap, i, mask;
	uint32_t *e;

	if (want * 2 <= t->cap_edges)
		return 0;
	cap = round_pow2(want * 2);
	e = calloc(cap, sizeof(*e));
	if (!e)
		return -ENOMEM;
	mask = cap - 1;
	for (i = 0; i < t->cap_edges; i++) {
		uint32_t c = t->edges[i];
		size_t j;

		if (c == NONE)
			continue;
		for (j = edge_hash(t->nodes[c].parent, t->nodes[c].name) & mask; e[j];
		     j = (j + 1) & mask)
			;
		e[j] = c;
	}
	free(t->edges);
	t->edges = e;
	t->cap_edges = cap;
	return 0;
}

static int reserve_names(struct calltree *t, size_t want)
{
	size_t cap, i, mask;
	uint32_t *slots;

	if (vec_reserve(&t->names, &t->cap_names, want))
		return -ENOMEM;
	if (want * 2 <= t->cap_name_slots)
		return 0;
	cap = round_pow2(want * 2);
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	mask = cap - 1;
	for (i = 0; i < t->nr_names; i++) {
		size_t j;

		for (j = t->names[i].hash & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = i + 1;
	}
	free(t->name_slots);
	t->name_slots = slots;
	t->cap_name_slots = cap;
	return 0;
}

/* Makes sure the newest chunk has bytes free; older chunks' tails are given up. */
static int reserve_arena(struct calltree *t, size_t bytes)
{
	struct chunk *c;
	size_t cap;

	if (t->arena && t->arena->cap - t->arena->used >= bytes)
		return 0;
	cap = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
	c = malloc(sizeof(*c) + cap);
	if (!c)
		return -ENOMEM;
	c->used = 0;
	c->cap = cap;
	c->next = t->arena;
	t->arena = c;
	return 0;
}

/* Cannot fail once reserve_names and reserve_arena succeeded for this string. */
static uint32_t intern(struct calltree *t, const char *s, size_t len, uint32_t hash)
{
	size_t mask = t->cap_name_slots - 1, i;
	uint32_t id;
	char *copy;

	if (!find_name(t, s, hash, &id))
		return id;
	copy = t->arena->data + t->arena->used;
	memcpy(copy, s, len + 1);
	t->arena->used += len + 1;

	id = t->nr_names++;
	t->names[id].str = copy;
	t->names[id].hash = hash;
	for (i = hash & mask; t->name_slots[i]; i = (i + 1) & mask)
		;
	t->name_slots[i] = id + 1;
	return id;
}

static uint32_t new_child(struct calltree *t, uint32_t parent, uint32_t name)
{
	size_t mask = t->cap_edges - 1, i;
	uint32_t c = t->nr_nodes++;
	struct node *n = &t->nodes[c];

	n->name = name;
	n->parent = parent;
	n->first_child = NONE;
	n->next_sibling = t->nodes[parent].first_child;
	n->self = 0;
	n->total = 0;
	t->nodes[parent].first_child = c;

	for (i = edge_hash(parent, name) & mask; t->edges[i]; i = (i + 1) & mask)
		;
	t->edges[i] = c;
	t->nr_edges++;
	return c;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	/* Saturate rather than wrap: a wrapped total would make every percentage nonsense. */
	return a + b < a ? UINT64_MAX : a + b;
}

static int add_frames(struct calltree *t, const char *const *frames, size_t n, uint64_t weight);

/*
 * Frames that are not UTF-8 (a profiled process's bytes) go in repaired, so every writer's
 * strings are: a copy of the stack with each bad byte made '?'.
 */
static int add_repaired(struct calltree *t, const char *const *frames, size_t n, uint64_t weight)
{
	const char **fixed = calloc(n, sizeof(*fixed));
	int err = fixed ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		char *f;

		if (utf8_valid(frames[i])) {
			fixed[i] = frames[i];
			continue;
		}
		f = malloc(strlen(frames[i]) + 1);
		if (!f) {
			err = -ENOMEM;
			break;
		}
		utf8_repair(f, frames[i]);
		fixed[i] = f;
	}
	if (!err)
		err = add_frames(t, fixed, n, weight);
	for (size_t i = 0; fixed && i < n; i++)
		if (fixed[i] != frames[i])
			free((char *)fixed[i]);
	free(fixed);
	return err;
}

int calltree__add(struct calltree *t, const char *const *frames, size_t n, uint64_t weight)
{
	bool repair = false;

	if (!t || !frames || n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!frames[i] || !frames[i][0])
			return -EINVAL;
		repair |= !utf8_valid(frames[i]);
	}
	return repair ? add_repaired(t, frames, n, weight) : add_frames(t, frames, n, weight);
}

static int add_frames(struct calltree *t, const char *const *frames, size_t n, uint64_t weight)
{
	uint32_t cur = 0, id;
	size_t i, missing, bytes = 0;
	int err;

	/* Follow the part of the stack that already exists. */
	for (i = 0; i < n; i++) {
		size_t len;
		uint32_t hash = str_hash(frames[i], &len), c;

		if (find_name(t, frames[i], hash, &id))
			break;
		c = find_child(t, cur, id);
		if (c == NONE)
			break;
		cur = c;
	}

	missing = n - i;
	if (missing) {
		size_t j;

		if (missing > MAX_NODES - t->nr_nodes)
			return -ENOMEM;
		for (j = i; j < n; j++)
			bytes += strlen(frames[j]) + 1;
		err = reserve_nodes(t, t->nr_nodes + missing);
		if (!err)
			err = reserve_edges(t, t->nr_edges + missing);
		if (!err)
			err = reserve_names(t, t->nr_names + missing);
		if (!err)
			err = reserve_arena(t, bytes);
		if (err)
			return err;
		for (; i < n; i++) {
			size_t len;
			uint32_t hash = str_hash(frames[i], &len);

			cur = new_child(t, cur, intern(t, frames[i], len, hash));
		}
	}

	t->nodes[cur].self = sat_add(t->nodes[cur].self, weight);
	for (;;) {
		t->nodes[cur].total = sat_add(t->nodes[cur].total, weight);
		if (cur == 0)
			break;
		cur = t->nodes[cur].parent;
	}
	if (n > t->max_depth)
		t->max_depth = n;
	return 0;
}

uint64_t calltree__total(const struct calltree *t)
{
	return t ? t->nodes[0].total : 0;
}

size_t calltree__max_depth(const struct calltree *t)
{
	return t ? t->max_depth : 0;
}

size_t calltree__node_count(const struct calltree *t)
{
	return t ? t->nr_nodes - 1 : 0;
}

struct walk_item {
	const char *name;
	uint32_t node;
	uint32_t depth;
};

/* Descending, because the walk pops siblings off the end of its stack. */
static int cmp_item_desc(const void *a, const void *b)
{
	return strcmp(((const struct walk_item *)b)->name, ((const struct walk_item *)a)->name);
}

static int push_children(const struct calltree *t, uint32_t node, uint32_t depth,
			 struct walk_item **stack, size_t *len, size_t *cap)
{
	size_t start = *len;
	uint32_t c;

	for (c = t->nodes[node].first_child; c != NONE; c = t->nodes[c].next_sibling) {
		if (vec_reserve(stack, cap, *len + 1))
			return -ENOMEM;
		(*stack)[(*len)++] = (struct walk_item){
			.name = t->names[t->nodes[c].name].str,
			.node = c,
			.depth = depth,
		};
	}
	/* A leaf has no children, and an empty tree no array to sort. */
	if (*len - start > 1)
		qsort(*stack + start, *len - start, sizeof(**stack), cmp_item_desc);
	return 0;
}

int calltree__walk(const struct calltree *t, calltree_visit_fn fn, void *ctx)
{
	struct walk_item *stack = NULL;
	size_t len = 0, cap = 0;
	int err;

	if (!t || !fn)
		return -EINVAL;
	err = push_children(t, 0, 0, &stack, &len, &cap);
	while (!err && len) {
		struct walk_item it = stack[--len];
		const struct node *n = &t->nodes[it.node];
		struct calltree_frame f = {
			.name = it.name,
			.self = n->self,
			.total = n->total,
			.depth = it.depth,
		};

		err = fn(&f, ctx);
		if (!err)
			err = push_children(t, it.node, it.depth + 1, &stack, &len, &cap);
	}
	free(stack);
	return err;
}

struct scaled {
	struct calltree *out;
	const char *path[512];
	uint64_t num, den;
};

static int scale_visit(const struct calltree_frame *f, void *ctx)
{
	struct scaled *sc = ctx;
	uint64_t w;

	if (f->depth >= 512)
		return 0;
	sc->path[f->depth] = f->name;
	w = (f->self * sc->num + sc->den / 2) / sc->den;
	return w ? calltree__add(sc->out, sc->path, f->depth + 1, w) : 0;
}

int calltree__add_scaled(struct calltree *dst, const struct calltree *src, uint64_t num,
			 uint64_t den)
{
	struct scaled *sc = malloc(sizeof(*sc));
	int err;

	if (!sc)
		return -ENOMEM;
	*sc = (struct scaled){.out = dst, .num = num, .den = den ? den : 1};
	err = calltree__walk(src, scale_visit, sc);
	free(sc);
	return err;
}
