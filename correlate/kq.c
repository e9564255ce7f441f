// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/kq.h"

#define MIN_ALLOC 256
#define MIN_SLOTS 64
#define MIN_RING  256

static size_t stride_of(size_t payload)
{
	return (sizeof(struct kq_hdr) + payload + 7) & ~(size_t)7;
}

static uint64_t pow2_at_least(uint64_t n, uint64_t min)
{
	uint64_t p = min;

	while (p < n)
		p <<= 1;
	return p;
}

static uint32_t slots_for(uint32_t keys)
{
	/* At most half full, so probe runs stay short. */
	uint64_t n = pow2_at_least((uint64_t)keys * 2, MIN_SLOTS);

	return n > (1u << 31) ? 1u << 31 : (uint32_t)n;
}

int kq_init(struct kq *q, size_t payload, uint32_t cap, unsigned int flags)
{
	bool cursors = flags & KQ_CURSORS;
	uint32_t i;

	memset(q, 0, sizeof(*q));
	if (!cap || cap > (1u << 30))
		return -EINVAL;
	q->stride = stride_of(payload);
	q->cap = cap;
	q->indexed = !(flags & KQ_UNINDEXED);
	q->free_head = KQ_NONE;
	q->slot_mask = MIN_SLOTS - 1;
	q->slots = malloc(MIN_SLOTS * sizeof(*q->slots));
	q->cursors = cursors ? malloc(MIN_SLOTS * sizeof(*q->cursors)) : NULL;
	q->ring = malloc(MIN_RING * sizeof(*q->ring));
	if (!q->slots || (cursors && !q->cursors) || !q->ring) {
		kq_fini(q);
		return -ENOMEM;
	}
	q->ring_mask = MIN_RING - 1;
	for (i = 0; i < MIN_SLOTS; i++)
		q->slots[i].head = KQ_NONE;
	return 0;
}

void kq_fini(struct kq *q)
{
	free(q->ents);
	free(q->gens);
	free(q->slots);
	free(q->cursors);
	free(q->ring);
	memset(q, 0, sizeof(*q));
}

static int grow_slots(struct kq *q, uint32_t nslots)
{
	struct kq_slot *ns = malloc((size_t)nslots * sizeof(*ns));
	uint32_t *nc = q->cursors ? malloc((size_t)nslots * sizeof(*nc)) : NULL;
	uint32_t i, mask = nslots - 1;

	if (!ns || (q->cursors && !nc)) {
		free(ns);
		free(nc);
		return -ENOMEM;
	}
	for (i = 0; i < nslots; i++)
		ns[i].head = KQ_NONE;
	for (i = 0; i <= q->slot_mask; i++) {
		uint32_t j;

		if (q->slots[i].head == KQ_NONE)
			continue;
		for (j = kq_hash(q->slots[i].key) & mask; ns[j].head != KQ_NONE; j = (j + 1) & mask)
			;
		ns[j] = q->slots[i];
		if (nc)
			nc[j] = q->cursors[i];
	}
	free(q->slots);
	free(q->cursors);
	q->slots = ns;
	q->cursors = nc;
	q->slot_mask = mask;
	return 0;
}

static bool ref_live(const struct kq *q, const struct kq_ref *r)
{
	return q->gens[r->idx] == r->gen;
}

/*
 * Room for one more reference: drop the stale ones (amortised: a full ring holds at least
 * half stale ones once it has reached its largest size), else grow.
 */
static int reserve_ring(struct kq *q)
{
	uint32_t size = q->ring_mask + 1, i, n = 0;
	struct kq_ref *r;

	if (q->ring_len < size)
		return 0;
	for (i = 0; i < q->ring_len; i++) {
		struct kq_ref ref = q->ring[(q->ring_head + i) & q->ring_mask];

		if (ref_live(q, &ref))
			q->ring[(q->ring_head + n++) & q->ring_mask] = ref;
	}
	q->ring_len = n;
	if (n <= size / 2)
		return 0;
	r = malloc((size_t)size * 2 * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		r[i] = q->ring[(q->ring_head + i) & q->ring_mask];
	free(q->ring);
	q->ring = r;
	q->ring_head = 0;
	q->ring_mask = size * 2 - 1;
	return 0;
}

int kq_alloc(struct kq *q, uint32_t *ret_idx)
{
	uint32_t idx;
	int err;

	if (q->nr >= q->cap)
		return -ENOSPC;
	/* Room for one more key and one more reference now, so kq_link() cannot fail. */
	if (q->indexed && (uint64_t)(q->nkeys + 1) * 2 > (uint64_t)q->slot_mask + 1) {
		err = grow_slots(q, slots_for(q->nkeys + 1));
		if (err)
			return err;
	}
	err = reserve_ring(q);
	if (err)
		return err;
	if (q->free_head != KQ_NONE) {
		idx = q->free_head;
		q->free_head = kq_hdr(q, idx)->knext;
	} else {
		if (q->fresh == q->alloc) {
			uint64_t n = q->alloc ? (uint64_t)q->alloc * 2 : MIN_ALLOC;
			unsigned char *e;

			if (n > q->cap)
				n = q->cap;
			uint32_t *g;

			e = realloc(q->ents, n * q->stride);
			if (!e)
				return -ENOMEM;
			q->ents = e;
			g = realloc(q->gens, n * sizeof(*g));
			if (!g)
				return -ENOMEM;
			q->gens = g;
			q->alloc = n;
		}
		idx = q->fresh++;
		q->gens[idx] = 0;
	}
	q->nr++;
	*ret_idx = idx;
	return 0;
}

void kq_release(struct kq *q, uint32_t idx)
{
	kq_hdr(q, idx)->knext = q->free_head;
	q->free_head = idx;
	q->nr--;
}

void kq_link(struct kq *q, uint32_t idx, uint64_t key, uint64_t stamp, uint32_t before)
{
	struct kq_hdr *h = kq_hdr(q, idx);
	struct kq_slot *s = q->indexed ? kq_find(q, key) : NULL;

	h->key = key;
	if (!q->indexed) {
		h->kprev = h->knext = KQ_NONE;
	} else if (!s) {
		uint32_t i;

		for (i = kq_hash(key) & q->slot_mask; q->slots[i].head != KQ_NONE;
		     i = (i + 1) & q->slot_mask)
			;
		s = &q->slots[i];
		s->key = key;
		s->head = s->tail = idx;
		if (q->cursors)
			q->cursors[i] = KQ_NONE;
		h->kprev = h->knext = KQ_NONE;
		q->nkeys++;
	} else if (before == KQ_NONE) {
		h->kprev = s->tail;
		h->knext = KQ_NONE;
		kq_hdr(q, s->tail)->knext = idx;
		s->tail = idx;
	} else {
		struct kq_hdr *b = kq_hdr(q, before);

		h->knext = before;
		h->kprev = b->kprev;
		if (b->kprev != KQ_NONE)
			kq_hdr(q, b->kprev)->knext = idx;
		else
			s->head = idx;
		b->kprev = idx;
	}
	q->ring[(q->ring_head + q->ring_len++) & q->ring_mask] =
		(struct kq_ref){.stamp = stamp, .idx = idx, .gen = q->gens[idx]};
}

/* Backward-shift deletion keeps linear probing free of tombstones. */
static void delete_slot(struct kq *q, struct kq_slot *s)
{
	uint32_t i = s - q->slots, j = i, mask = q->slot_mask;

	for (;;) {
		uint32_t k;

		j = (j + 1) & mask;
		if (q->slots[j].head == KQ_NONE)
			break;
		k = kq_hash(q->slots[j].key) & mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		q->slots[i] = q->slots[j];
		if (q->cursors)
			q->cursors[i] = q->cursors[j];
		i = j;
	}
	q->slots[i].head = KQ_NONE;
	q->nkeys--;
}

void kq_remove(struct kq *q, uint32_t idx)
{
	struct kq_hdr *h = kq_hdr(q, idx);
	struct kq_slot *s;

	if (!q->indexed) {
		q->gens[idx]++;
		kq_release(q, idx);
		return;
	}
	s = kq_find(q, h->key);
	if (q->cursors && *kq_cursor(q, s) == idx)
		*kq_cursor(q, s) = h->knext != KQ_NONE ? h->knext : h->kprev;
	if (h->kprev != KQ_NONE)
		kq_hdr(q, h->kprev)->knext = h->knext;
	else
		s->head = h->knext;
	if (h->knext != KQ_NONE)
		kq_hdr(q, h->knext)->kprev = h->kprev;
	else
		s->tail = h->kprev;
	if (s->head == KQ_NONE)
		delete_slot(q, s);
	q->gens[idx]++;
	kq_release(q, idx);
}

bool kq_oldest(struct kq *q, uint32_t *ret_idx, uint64_t *ret_stamp)
{
	while (q->ring_len) {
		struct kq_ref *r = &q->ring[q->ring_head];

		if (ref_live(q, r)) {
			*ret_idx = r->idx;
			*ret_stamp = r->stamp;
			return true;
		}
		q->ring_head = (q->ring_head + 1) & q->ring_mask;
		q->ring_len--;
	}
	return false;
}

bool kq_older_than(struct kq *q, uint64_t horizon, uint32_t *ret_idx)
{
	/* The stamp first: stale references are only looked at once they are old. */
	while (q->ring_len && q->ring[q->ring_head].stamp < horizon) {
		struct kq_ref *r = &q->ring[q->ring_head];

		if (ref_live(q, r)) {
			*ret_idx = r->idx;
			return true;
		}
		q->ring_head = (q->ring_head + 1) & q->ring_mask;
		q->ring_len--;
	}
	return false;
}

size_t kq_mem(const struct kq *q)
{
	return (size_t)q->alloc * (q->stride + sizeof(uint32_t)) +
	       ((size_t)q->slot_mask + 1) *
		       (sizeof(struct kq_slot) + (q->cursors ? sizeof(uint32_t) : 0)) +
	       ((size_t)q->ring_mask + 1) * sizeof(struct kq_ref);
}

size_t kq_mem_limit(size_t payload, uint32_t cap, unsigned int flags)
{
	bool cursors = flags & KQ_CURSORS;
	uint32_t slots = flags & KQ_UNINDEXED ? MIN_SLOTS : slots_for(cap);

	return (size_t)cap * (stride_of(payload) + sizeof(uint32_t)) +
	       (size_t)slots * (sizeof(struct kq_slot) + (cursors ? sizeof(uint32_t) : 0)) +
	       (size_t)pow2_at_least((uint64_t)cap * 2, MIN_RING) * sizeof(struct kq_ref);
}
