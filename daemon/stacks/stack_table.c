// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/stacks/stack_table.h"

#define ARENA_CHUNK (1u << 20)

static const uint64_t no_ips[1];

/* Entry header followed by nr_kernel + nr_user ips, allocated from the arena. */
struct node {
	uint64_t hash;
	struct stack_entry e;
	uint64_t ips[];
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

static uint64_t hash_key(uint32_t tgid, uint32_t uid, uint32_t gen, uint32_t flags,
			 const char *comm, uint16_t nk, uint16_t nu, int16_t kerr, int16_t uerr,
			 const uint64_t *ips)
{
	uint64_t h = hash_combine(hash_combine(0, ((uint64_t)tgid << 32) | flags),
				  ((uint64_t)gen << 32) | uid);
	uint64_t c[2];

	memcpy(c, comm, sizeof(c));
	h = hash_combine(h, c[0]);
	h = hash_combine(h, c[1]);
	h = hash_combine(h, ((uint64_t)nk << 48) | ((uint64_t)nu << 32) |
				    ((uint64_t)(uint16_t)kerr << 16) | (uint16_t)uerr);
	for (unsigned int i = 0; i < (unsigned int)nk + nu; i++)
		h = hash_combine(h, ips[i]);
	return h;
}

static bool node_matches(const struct node *n, uint64_t hash, uint32_t tgid, uint32_t uid,
			 uint32_t gen, uint32_t flags, const char *comm, uint16_t nk, uint16_t nu,
			 int16_t kerr, int16_t uerr, const uint64_t *ips)
{
	return n->hash == hash && n->e.tgid == tgid && n->e.uid == uid && n->e.gen == gen &&
	       n->e.flags == flags && n->e.nr_kernel == nk && n->e.nr_user == nu &&
	       n->e.kernel_err == kerr && n->e.user_err == uerr &&
	       !memcmp(n->e.comm, comm, XSPROF_COMM_LEN) &&
	       !memcmp(n->ips, ips, 8 * ((size_t)nk + nu));
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
	if (grow(t)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
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
	free(t->slots);
	free(t);
}

static int add_key(struct stack_table *t, uint32_t tgid, uint32_t uid, uint32_t gen, uint32_t flags,
		   const char *comm, uint16_t nk, uint16_t nu, int16_t kerr, int16_t uerr,
		   const uint64_t *ips, uint64_t weight, uint32_t *ret_id)
{
	uint64_t h = hash_key(tgid, uid, gen, flags, comm, nk, nu, kerr, uerr, ips);
	size_t mask = t->cap - 1, i;
	struct node *n;

	for (i = h & mask; (n = t->slots[i]); i = (i + 1) & mask) {
		if (node_matches(n, h, tgid, uid, gen, flags, comm, nk, nu, kerr, uerr, ips)) {
			n->e.count += weight;
			*ret_id = n->e.id;
			return 0;
		}
	}
	if (!(flags & STACK_F_OVERFLOW) && t->kept >= t->max_distinct)
		return -ENOSPC;
	/* Keep the load factor under 1/2 so probe chains stay short. */
	if ((t->len + 1) * 2 > t->cap) {
		if (grow(t))
			return -ENOMEM;
		mask = t->cap - 1;
		for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	n = arena_alloc(t, sizeof(*n) + 8 * ((size_t)nk + nu));
	if (!n)
		return -ENOMEM;
	n->hash = h;
	memcpy(n->ips, ips, 8 * ((size_t)nk + nu));
	n->e = (struct stack_entry){
		.count = weight,
		.tgid = tgid,
		.uid = uid,
		.gen = gen,
		.flags = flags,
		.id = (uint32_t)t->len,
		.nr_kernel = nk,
		.nr_user = nu,
		.kernel_err = kerr,
		.user_err = uerr,
		.kernel_ips = n->ips,
		.user_ips = n->ips + nk,
	};
	memcpy(n->e.comm, comm, XSPROF_COMM_LEN);
	t->slots[i] = n;
	*ret_id = (uint32_t)t->len;
	t->len++;
	if (!(flags & STACK_F_OVERFLOW))
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
	char comm[XSPROF_COMM_LEN];
	int err;

	/* The kernel NUL-terminates comm but leaves bytes after it unspecified: normalise. */
	memset(comm, 0, sizeof(comm));
	memcpy(comm, s->comm, strnlen(s->comm, sizeof(comm) - 1));

	t->stats.samples++;
	err = add_key(t, s->tgid, s->uid, gen, s->flags, comm, s->nr_kernel, s->nr_user,
		      s->kernel_err, s->user_err, (const uint64_t *)s->ips, weight, ret_id);
	if (err != -ENOSPC && err != -ENOMEM)
		return err;
	/* Past the cap (or out of memory): keep the count, drop the frames. */
	t->stats.overflowed++;
	err = add_key(t, s->tgid, s->uid, gen,
		      (s->flags & XSPROF_SAMPLE_F_KTHREAD) | STACK_F_OVERFLOW, comm, 0, 0, 0, 0,
		      no_ips, weight, ret_id);
	if (err)
		t->stats.samples--;
	return err;
}

int stack_table__add_id(struct stack_table *t, const struct xsprof_sample *s, uint32_t gen,
			uint32_t *ret_id)
{
	return add_weighted(t, s, gen, 1, ret_id);
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
	for (size_t i = 0; i < t->cap; i++) {
		int ret;

		if (!t->slots[i])
			continue;
		ret = fn(ctx, &t->slots[i]->e);
		if (ret)
			return ret;
	}
	return 0;
}

void stack_table__stats(const struct stack_table *t, struct stack_table_stats *ret)
{
	*ret = t->stats;
}
