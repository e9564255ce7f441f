/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to correlate/: a keyed queue. Fixed-size entries in one pool (capped), each on the
 * doubly linked chain of its key (order chosen by the caller, e.g. by time); keys index chains
 * through an open-addressing table. Arrival order, for aging, is a ring of (stamp, entry,
 * generation) references: removing an entry only bumps its generation and leaves a stale
 * reference behind, so a removal touches no other entry (the join path is cache-miss bound).
 * Indexes, not pointers, so the pool can grow by realloc.
 */
#ifndef XSPROF_CORRELATE_KQ_H
#define XSPROF_CORRELATE_KQ_H

#include "daemon/base/hash.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KQ_NONE UINT32_MAX

struct kq_hdr {
	uint64_t key;
	uint32_t kprev, knext;
};

struct kq_slot {
	uint64_t key;
	uint32_t head, tail; /* head == KQ_NONE: the slot is empty */
};

struct kq_ref {
	uint64_t stamp; /* arrival clock */
	uint32_t idx, gen;
};

struct kq {
	unsigned char *ents;
	size_t stride;
	/* Per entry, bumped on removal: ring references to older generations are stale. Apart
	   from the entries, so checking a reference reads 4 bytes, not a cold entry. */
	uint32_t *gens;
	uint32_t nr, alloc, cap, fresh; /* in use, allocated, allowed, never used yet from here */
	uint32_t free_head;
	/* Key -> chain by hand, not base/hashmap: probed per record, the chain inline. */
	struct kq_slot *slots;
	uint32_t *cursors;  /* per slot, if asked for: the caller's bookmark in the chain, kept
			      valid on removal (apart, so queues without them pay no cache miss) */
	uint32_t slot_mask; /* slots - 1; slots a power of two */
	uint32_t nkeys;
	bool indexed; /* false: the caller finds entries by its own index; no chains */
	struct kq_ref *ring;
	uint32_t ring_mask, ring_head, ring_len;
};

/* KQ_CURSORS: keep a bookmark per chain; KQ_UNINDEXED: no key index or chains at all. */
#define KQ_CURSORS   0x1
#define KQ_UNINDEXED 0x2

int kq_init(struct kq *q, size_t payload, uint32_t cap, unsigned int flags);
void kq_fini(struct kq *q);

static inline struct kq_hdr *kq_hdr(const struct kq *q, uint32_t i)
{
	return (struct kq_hdr *)(q->ents + (size_t)i * q->stride);
}

static inline void *kq_data(const struct kq *q, uint32_t i)
{
	return kq_hdr(q, i) + 1;
}

static inline uint64_t kq_hash(uint64_t k)
{
	/* Keys are (pid << 32 | small number) and the mask keeps low bits: hash_u64 spreads them. */
	return hash_u64(k);
}

/* The slot of key, or NULL. Valid until the next kq_alloc() or kq_remove(). */
static inline struct kq_slot *kq_find(const struct kq *q, uint64_t key)
{
	uint32_t i;

	for (i = kq_hash(key) & q->slot_mask;; i = (i + 1) & q->slot_mask) {
		struct kq_slot *s = &q->slots[i];

		if (s->head == KQ_NONE)
			return NULL;
		if (s->key == key)
			return s;
	}
}

static inline uint32_t *kq_cursor(const struct kq *q, const struct kq_slot *s)
{
	return &q->cursors[s - q->slots];
}

static inline uint32_t kq_first(const struct kq *q, uint64_t key)
{
	struct kq_slot *s = q->nkeys ? kq_find(q, key) : NULL;

	return s ? s->head : KQ_NONE;
}

static inline uint32_t kq_last(const struct kq *q, uint64_t key)
{
	struct kq_slot *s = q->nkeys ? kq_find(q, key) : NULL;

	return s ? s->tail : KQ_NONE;
}

/* An unlinked entry: 0, -ENOSPC (at cap) or -ENOMEM. Link it or kq_release() it. */
int kq_alloc(struct kq *q, uint32_t *ret_idx);
void kq_release(struct kq *q, uint32_t idx);
/*
 * Link a kq_alloc()ed entry under key, before `before` in its chain (KQ_NONE: at the tail).
 * Unindexed: only records key and arrival (before is ignored).
 */
void kq_link(struct kq *q, uint32_t idx, uint64_t key, uint64_t stamp, uint32_t before);
/* Unlink and free. */
void kq_remove(struct kq *q, uint32_t idx);
/* The entry that arrived first of those held, and its arrival stamp; false when empty. */
bool kq_oldest(struct kq *q, uint32_t *ret_idx, uint64_t *ret_stamp);
/* The oldest entry if it arrived before horizon (cheap when none did); false otherwise. */
bool kq_older_than(struct kq *q, uint64_t horizon, uint32_t *ret_idx);

/* Bytes held now, and at most with cap entries of this payload. */
size_t kq_mem(const struct kq *q);
size_t kq_mem_limit(size_t payload, uint32_t cap, unsigned int flags);

#endif
