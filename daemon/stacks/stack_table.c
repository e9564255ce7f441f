// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/stacks/stack_table.h"

#define ARENA_CHUNK (1u << 20)

static const uint64_t no_ips[1];

/*
 * Stacks are kept as chains of interned frames: a frame is (its caller's frame, address), made
 * once, so stacks that share their outer frames (all of a process's, nearly) share their memory
 * and a new stack costs the frames that differ (a leaf address, mostly), not its whole depth:
 * a PyTorch process at 499 Hz made a new 1 KiB stack with nearly every sample (its leaves
 * differ), 5 MiB in 10 s, where its chains take a tenth of that. Chain 0 is the empty one.
 * Both tables stay hand-written, not base/keymap or hashmap: probed per sample, in 4- and 8-byte
 * slots over keys already in the frames and nodes (a keymap slot is 24 bytes plus a key copy).
 */
struct frame {
	uint64_t ip;
	uint32_t parent;
	uint32_t pad;
};

struct frames {
	struct frame *v; /* v[0] is the root (no frame) */
	uint32_t n, cap;
	uint32_t *slots; /* open addressing over (parent, ip): 1 + index into v, 0 empty */
	uint32_t nslots; /* power of two */
};

/* A distinct stack: its key and count, its chains. */
struct node {
	uint64_t hash;
	struct stack_entry e; /* kernel_ips/user_ips are set while visited only */
	uint32_t kchain, uchain;
};

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct stack_table {
	struct node **slots; /* open addressing, linear probing */
	size_t cap;	     /* power of two */
	size_t len;
	size_t max_distinct;
	size_t kept; /* distinct stacks other than overflow buckets */
	struct arena_chunk *arena;
	struct frames fr;
	uint64_t ips[2 * XSPROF_MAX_STACK_DEPTH]; /* a stack rebuilt for a visit */
	struct stack_table_stats stats;
};

static void *arena_alloc(struct stack_table *t, size_t size)
{
	struct arena_chunk *c = t->arena;
	void *p;

	size = (size + 7) & ~(size_t)7;
	if (!c || c->size - c->used < size) {
		size_t csize = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->size = csize;
		c->used = 0;
		c->next = t->arena;
		t->arena = c;
		t->stats.bytes += sizeof(*c) + csize;
	}
	p = c->data + c->used;
	c->used += size;
	return p;
}

/* ---- interned frames ---- */

static uint64_t frame_hash(uint32_t parent, uint64_t ip)
{
	return hash_combine(hash_combine(0x9e3779b97f4a7c15ull, parent), ip);
}

static int frames__grow_slots(struct stack_table *t)
{
	struct frames *f = &t->fr;
	uint32_t ns = f->nslots ? f->nslots * 2 : 4096, mask = ns - 1;
	uint32_t *slots;

	if (ns < f->nslots)
		return -ENOMEM;
	slots = calloc(ns, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 1; i < f->n; i++) {
		uint32_t j = (uint32_t)frame_hash(f->v[i].parent, f->v[i].ip) & mask;

		while (slots[j])
			j = (j + 1) & mask;
		slots[j] = i + 1;
	}
	t->stats.bytes += (size_t)(ns - f->nslots) * sizeof(*slots);
	free(f->slots);
	f->slots = slots;
	f->nslots = ns;
	return 0;
}

/* The frame (parent, ip), made if new and make: its index, or 0 when out of memory or (!make)
 * not there. */
static uint32_t frames__intern(struct stack_table *t, uint32_t parent, uint64_t ip, bool make)
{
	struct frames *f = &t->fr;
	uint32_t mask, i;

	if (!f->nslots && !make)
		return 0;
	if (make && (uint64_t)(f->n + 1) * 2 > f->nslots && frames__grow_slots(t))
		return 0;
	mask = f->nslots - 1;
	for (i = (uint32_t)frame_hash(parent, ip) & mask; f->slots[i]; i = (i + 1) & mask) {
		const struct frame *x = &f->v[f->slots[i] - 1];

		if (x->ip == ip && x->parent == parent)
			return f->slots[i] - 1;
	}
	if (!make)
		return 0;
	if (f->n == f->cap) {
		uint32_t ncap = f->cap * 2;
		struct frame *nv = ncap > f->cap ? reallocarray(f->v, ncap, sizeof(*nv)) : NULL;

		if (!nv)
			return 0;
		t->stats.bytes += (size_t)(ncap - f->cap) * sizeof(*nv);
		f->v = nv;
		f->cap = ncap;
	}
	f->v[f->n] = (struct frame){.ip = ip, .parent = parent};
	f->slots[i] = f->n + 1;
	return f->n++;
}

/*
 * The chain of ips[0, n) (innermost first), interned from its outermost frame; -ENOMEM. With
 * !make only a chain already there: -ENOSPC if a frame is new (so a stack past the cap adds no
 * frames: the table's memory stops at the cap).
 */
static int frames__chain(struct stack_table *t, const uint64_t *ips, uint16_t n, bool make,
			 uint32_t *ret)
{
	uint32_t at = 0;

	for (int i = (int)n - 1; i >= 0; i--) {
		at = frames__intern(t, at, ips[i], make);
		if (!at)
			return make ? -ENOMEM : -ENOSPC;
	}
	*ret = at;
	return 0;
}

/* A chain back into ips[0, n), innermost first. */
static void frames__unchain(const struct frames *f, uint32_t at, uint64_t *ips, uint16_t n)
{
	for (uint16_t i = 0; i < n && at; i++, at = f->v[at].parent)
		ips[i] = f->v[at].ip;
}

/* ---- distinct stacks ---- */

static uint64_t hash_key(const struct stack_entry *k, uint32_t kchain, uint32_t uchain)
{
	uint64_t h = hash_combine(hash_combine(0, ((uint64_t)k->tgid << 32) | k->flags),
				  ((uint64_t)k->gen << 32) | k->uid);
	uint64_t c[2];

	memcpy(c, k->comm, sizeof(c));
	h = hash_combine(h, c[0]);
	h = hash_combine(h, c[1]);
	h = hash_combine(h, ((uint64_t)k->nr_kernel << 48) | ((uint64_t)k->nr_user << 32) |
				    ((uint64_t)(uint16_t)k->kernel_err << 16) |
				    (uint16_t)k->user_err);
	return hash_combine(h, ((uint64_t)kchain << 32) | uchain);
}

static bool node_matches(const struct node *n, uint64_t hash, const struct stack_entry *k,
			 uint32_t kchain, uint32_t uchain)
{
	return n->hash == hash && n->kchain == kchain && n->uchain == uchain &&
	       n->e.tgid == k->tgid && n->e.uid == k->uid && n->e.gen == k->gen &&
	       n->e.flags == k->flags && n->e.nr_kernel == k->nr_kernel &&
	       n->e.nr_user == k->nr_user && n->e.kernel_err == k->kernel_err &&
	       n->e.user_err == k->user_err && !memcmp(n->e.comm, k->comm, XSPROF_COMM_LEN);
}

static int grow(struct stack_table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	struct node **ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct node *n = t->slots[i];
		size_t j;

		if (!n)
			continue;
		for (j = n->hash & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = n;
	}
	t->stats.bytes += (ncap - t->cap) * sizeof(*ns);
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

struct stack_table *stack_table__new(size_t max_distinct)
{
	struct stack_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_distinct = max_distinct ? max_distinct : 1;
	t->fr.cap = 1024;
	t->fr.v = calloc(t->fr.cap, sizeof(*t->fr.v));
	t->fr.n = 1; /* the root */
	if (!t->fr.v || grow(t) || frames__grow_slots(t)) {
		stack_table__free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->stats.bytes += t->fr.cap * sizeof(*t->fr.v);
	return t;
}

void stack_table__free(struct stack_table *t)
{
	if (!t)
		return;
	while (t->arena) {
		struct arena_chunk *next = t->arena->next;

		free(t->arena);
		t->arena = next;
	}
	free(t->fr.v);
	free(t->fr.slots);
	free(t->slots);
	free(t);
}

/* Count weight under key k with these frames (k's nr_* say how many). */
static int add_key(struct stack_table *t, const struct stack_entry *k, const uint64_t *ips,
		   uint64_t weight, uint32_t *ret_id)
{
	bool full = !(k->flags & STACK_F_OVERFLOW) && t->kept >= t->max_distinct;
	uint32_t kchain, uchain;
	size_t mask, i;
	struct node *n;
	uint64_t h;
	int err;

	/* Full: only a stack already kept can count, and it has its frames already. */
	err = frames__chain(t, ips, k->nr_kernel, !full, &kchain);
	if (!err)
		err = frames__chain(t, ips + k->nr_kernel, k->nr_user, !full, &uchain);
	if (err)
		return err;
	h = hash_key(k, kchain, uchain);
	mask = t->cap - 1;
	for (i = h & mask; (n = t->slots[i]); i = (i + 1) & mask) {
		if (node_matches(n, h, k, kchain, uchain)) {
			n->e.count += weight;
			*ret_id = n->e.id;
			return 0;
		}
	}
	if (!(k->flags & STACK_F_OVERFLOW) && t->kept >= t->max_distinct)
		return -ENOSPC;
	/* Keep the load factor under 1/2 so probe chains stay short. */
	if ((t->len + 1) * 2 > t->cap) {
		if (grow(t))
			return -ENOMEM;
		mask = t->cap - 1;
		for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	n = arena_alloc(t, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->hash = h;
	n->kchain = kchain;
	n->uchain = uchain;
	n->e = *k;
	n->e.count = weight;
	n->e.id = (uint32_t)t->len;
	n->e.kernel_ips = n->e.user_ips = NULL;
	t->slots[i] = n;
	*ret_id = (uint32_t)t->len;
	t->len++;
	if (!(k->flags & STACK_F_OVERFLOW))
		t->kept++;
	t->stats.distinct++;
	return 0;
}

int stack_table__add(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen)
{
	uint32_t id;

	return stack_table__add_id(t, s, gen, &id);
}

size_t stack_table__nr_entries(const struct stack_table *t)
{
	return t->len;
}

static int add_weighted(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			uint64_t weight, uint32_t *ret_id)
{
	struct stack_entry k = {
		.tgid = s->tgid,
		.uid = s->uid,
		.gen = gen,
		.flags = (s->flags & ~(0xfu << STACK_F_END_SHIFT)) |
			 ((uint32_t)(s->walk_end & 0xf) << STACK_F_END_SHIFT),
		.nr_kernel = s->nr_kernel,
		.nr_user = s->nr_user,
		.kernel_err = s->kernel_err,
		.user_err = s->user_err,
	};
	int err;

	/* The kernel NUL-terminates comm but leaves bytes after it unspecified: normalise. */
	memcpy(k.comm, s->comm, strnlen(s->comm, sizeof(k.comm) - 1));
	t->stats.samples++;
	err = add_key(t, &k, (const uint64_t *)s->ips, weight, ret_id);
	if (err != -ENOSPC && err != -ENOMEM)
		return err;
	/* Past the cap (or out of memory): keep the count, drop the frames. */
	t->stats.overflowed++;
	k.flags = (s->flags & XSPROF_SAMPLE_F_KTHREAD) | STACK_F_OVERFLOW;
	k.nr_kernel = k.nr_user = 0;
	k.kernel_err = k.user_err = 0;
	err = add_key(t, &k, no_ips, weight, ret_id);
	if (err)
		t->stats.samples--;
	return err;
}

int stack_table__add_id(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			uint32_t *ret_id)
{
	return add_weighted(t, s, gen, 1, ret_id);
}

int stack_table__add_id_weighted(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
				 uint64_t weight, uint32_t *ret_id)
{
	return add_weighted(t, s, gen, weight, ret_id);
}

int stack_table__add_weighted(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			      uint64_t weight)
{
	uint32_t id;

	return add_weighted(t, s, gen, weight, &id);
}

int stack_table__for_each(const struct stack_table *t,
			  int (*fn)(void *ctx, const struct stack_entry *e), void *ctx)
{
	/* Rebuilt into the table's buffer for the visit: const to callers, not to us. */
	struct stack_table *w = (struct stack_table *)t;

	for (size_t i = 0; i < t->cap; i++) {
		struct node *n = t->slots[i];
		struct stack_entry e;
		int ret;

		if (!n)
			continue;
		e = n->e;
		frames__unchain(&t->fr, n->kchain, w->ips, e.nr_kernel);
		frames__unchain(&t->fr, n->uchain, w->ips + e.nr_kernel, e.nr_user);
		e.kernel_ips = w->ips;
		e.user_ips = w->ips + e.nr_kernel;
		ret = fn(ctx, &e);
		if (ret)
			return ret;
	}
	return 0;
}

void stack_table__stats(const struct stack_table *t, struct stack_table_stats *ret)
{
	*ret = t->stats;
}
