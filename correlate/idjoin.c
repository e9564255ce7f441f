// SPDX-License-Identifier: Apache-2.0
/*
 * The exact join on (pid, correlation id). Whichever side arrives first waits for the other.
 * A CPU record is dropped once joined, except a graph launch, which stays until it ages out
 * because every kernel the graph ran carries the launch's correlation id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/strategy.h"

#define MIN_BLOCKS 64

static uint64_t block_key(uint32_t pid, uint32_t corr)
{
	return ((uint64_t)pid << 32 | corr / IDJ_BLOCK) + 1;
}

static struct idj_block *block_find(const struct idjoin *j, uint32_t pid, uint32_t corr)
{
	uint64_t key = block_key(pid, corr);
	uint32_t i;

	for (i = kq_hash(key) & j->block_mask;; i = (i + 1) & j->block_mask) {
		struct idj_block *b = &j->blocks[i];

		if (!b->key)
			return NULL;
		if (b->key == key)
			return b;
	}
}

static uint32_t cpu_find(const struct idjoin *j, uint32_t pid, uint32_t corr)
{
	const struct idj_block *b = block_find(j, pid, corr);

	return b ? b->idx[corr % IDJ_BLOCK] : KQ_NONE;
}

static int blocks_resize(struct idjoin *j, uint32_t n)
{
	struct idj_block *nb = calloc(n, sizeof(*nb));
	uint32_t i, mask = n - 1;

	if (!nb)
		return -ENOMEM;
	for (i = 0; j->blocks && i <= j->block_mask; i++) {
		uint32_t k;

		if (!j->blocks[i].key)
			continue;
		for (k = kq_hash(j->blocks[i].key) & mask; nb[k].key; k = (k + 1) & mask)
			;
		nb[k] = j->blocks[i];
	}
	free(j->blocks);
	j->blocks = nb;
	j->block_mask = mask;
	return 0;
}

/* Room for one more block, so cpu_put() cannot fail. */
static int blocks_reserve(struct idjoin *j)
{
	if ((uint64_t)(j->nblocks + 1) * 2 <= (uint64_t)j->block_mask + 1)
		return 0;
	return blocks_resize(j, (j->block_mask + 1) * 2);
}

static void cpu_put(struct idjoin *j, uint32_t pid, uint32_t corr, uint32_t idx)
{
	uint64_t key = block_key(pid, corr);
	struct idj_block *b = block_find(j, pid, corr);

	if (!b) {
		uint32_t i;

		for (i = kq_hash(key) & j->block_mask; j->blocks[i].key;
		     i = (i + 1) & j->block_mask)
			;
		b = &j->blocks[i];
		b->key = key;
		b->used = 0;
		memset(b->idx, 0xff, sizeof(b->idx)); /* KQ_NONE */
		j->nblocks++;
	}
	b->idx[corr % IDJ_BLOCK] = idx;
	b->used++;
}

/* Backward-shift deletion, as in kq. */
static void cpu_del(struct idjoin *j, uint32_t pid, uint32_t corr)
{
	struct idj_block *b = block_find(j, pid, corr);
	uint32_t i, k, mask = j->block_mask;

	b->idx[corr % IDJ_BLOCK] = KQ_NONE;
	if (--b->used)
		return;
	i = k = b - j->blocks;
	for (;;) {
		uint32_t h;

		k = (k + 1) & mask;
		if (!j->blocks[k].key)
			break;
		h = kq_hash(j->blocks[k].key) & mask;
		if (i <= k ? (i < h && h <= k) : (i < h || h <= k))
			continue;
		j->blocks[i] = j->blocks[k];
		i = k;
	}
	j->blocks[i].key = 0;
	j->nblocks--;
}

static void cpu_remove(struct idjoin *j, uint32_t idx)
{
	uint64_t key = kq_hdr(&j->cpu, idx)->key;

	cpu_del(j, key >> 32, (uint32_t)key);
	kq_remove(&j->cpu, idx);
}

void idjoin_prefetch_block(const struct idjoin *j, uint32_t pid, uint32_t corr)
{
	__builtin_prefetch(&j->blocks[kq_hash(block_key(pid, corr)) & j->block_mask]);
}

void idjoin_prefetch_entry(const struct idjoin *j, uint32_t pid, uint32_t corr)
{
	const struct idj_block *b = &j->blocks[kq_hash(block_key(pid, corr)) & j->block_mask];
	uint32_t idx = b->key == block_key(pid, corr) ? b->idx[corr % IDJ_BLOCK] : KQ_NONE;

	if (idx != KQ_NONE)
		__builtin_prefetch(kq_hdr(&j->cpu, idx));
}

static void evict(void *ctx, struct kq *q, uint32_t idx, enum corr_why why)
{
	struct idjoin *j = ctx;

	if (q == &j->cpu) {
		struct idjoin_cpu *c = kq_data(q, idx);

		/* A graph launch that was joined is done, not unmatched. */
		if (!c->joins)
			corr_drop_cpu(j->b, &c->rec, why);
		cpu_remove(j, idx);
		return;
	}
	corr_drop_gpu(j->b, kq_data(q, idx), why);
	kq_remove(q, idx);
}

int idjoin_init(struct idjoin *j, struct corr_base *b)
{
	int err;

	j->b = b;
	j->blocks = NULL;
	err = kq_init(&j->cpu, sizeof(struct idjoin_cpu), b->cfg.max_pending_cpu, KQ_UNINDEXED);
	if (err)
		return err;
	err = kq_init(&j->gpu, sizeof(struct corr_gpu_rec), b->cfg.max_pending_gpu, 0);
	if (!err)
		err = blocks_resize(j, MIN_BLOCKS);
	if (err)
		idjoin_fini(j);
	return err;
}

void idjoin_fini(struct idjoin *j)
{
	kq_fini(&j->cpu);
	kq_fini(&j->gpu);
	free(j->blocks);
	j->blocks = NULL;
}

void idjoin_cpu(struct idjoin *j, const struct corr_cpu_rec *rec, uint32_t corr, uint32_t joins,
		bool fresh)
{
	uint64_t key = corr_idkey(rec->pid, corr);
	struct idjoin_cpu *c;
	uint32_t g, idx;

	/*
	 * One launch, two records: a runtime call and the driver call it makes share the id, and
	 * both may be probed. The earlier (outer) one stands for the launch.
	 */
	idx = cpu_find(j, rec->pid, corr);
	if (idx != KQ_NONE) {
		c = kq_data(&j->cpu, idx);
		if (c->joins || joins || c->rec.time_ns <= rec->time_ns) {
			corr_drop_cpu(j->b, rec, CORR_WHY_DUPLICATE);
			return;
		}
		/* The outer call arrived second (its API record came later): it takes over. */
		corr_drop_cpu(j->b, &c->rec, CORR_WHY_DUPLICATE);
		c->rec = *rec;
		c->rec.corr_id = corr;
		return;
	}
	while ((g = kq_first(&j->gpu, key)) != KQ_NONE) {
		corr_join(j->b, rec, kq_data(&j->gpu, g));
		kq_remove(&j->gpu, g);
		joins++;
	}
	if (joins && !corr_keeps(rec))
		return;
	if (!joins && fresh && rec->time_ns < corr_horizon(j->b)) {
		corr_drop_cpu(j->b, rec, CORR_WHY_LATE);
		return;
	}
	if (blocks_reserve(j) || kq_alloc_evict(&j->cpu, &idx, evict, j)) {
		if (!joins)
			corr_drop_cpu(j->b, rec, CORR_WHY_CAP);
		return;
	}
	c = kq_data(&j->cpu, idx);
	c->rec = *rec;
	c->rec.corr_id = corr;
	c->joins = joins;
	kq_link(&j->cpu, idx, key, j->b->now, KQ_NONE);
	cpu_put(j, rec->pid, corr, idx);
}

int idjoin_gpu_try(struct idjoin *j, const struct corr_gpu_rec *rec)
{
	uint32_t c = cpu_find(j, rec->pid, rec->corr_id);
	struct idjoin_cpu *ent;

	if (c == KQ_NONE)
		return 0;
	ent = kq_data(&j->cpu, c);
	corr_join(j->b, &ent->rec, rec);
	ent->joins++;
	if (!corr_keeps(&ent->rec))
		cpu_remove(j, c);
	return 1;
}

void idjoin_gpu_park(struct idjoin *j, const struct corr_gpu_rec *rec)
{
	uint32_t idx;

	if (rec->start_ns < corr_horizon(j->b)) {
		corr_drop_gpu(j->b, rec, CORR_WHY_LATE);
		return;
	}
	if (kq_alloc_evict(&j->gpu, &idx, evict, j)) {
		corr_drop_gpu(j->b, rec, CORR_WHY_CAP);
		return;
	}
	*(struct corr_gpu_rec *)kq_data(&j->gpu, idx) = *rec;
	kq_link(&j->gpu, idx, corr_idkey(rec->pid, rec->corr_id), j->b->now, KQ_NONE);
}

void idjoin_age(struct idjoin *j, uint64_t horizon, enum corr_why why)
{
	kq_age(&j->cpu, horizon, why, evict, j);
	kq_age(&j->gpu, horizon, why, evict, j);
}

size_t idjoin_mem(const struct idjoin *j)
{
	return kq_mem(&j->cpu) + kq_mem(&j->gpu) +
	       ((size_t)j->block_mask + 1) * sizeof(struct idj_block);
}

size_t idjoin_mem_limit(const struct correlate_config *cfg)
{
	uint64_t blocks = MIN_BLOCKS;

	/* Worst case, ids so sparse that each record has a block to itself. */
	while (blocks < (uint64_t)cfg->max_pending_cpu * 2)
		blocks <<= 1;
	return kq_mem_limit(sizeof(struct idjoin_cpu), cfg->max_pending_cpu, KQ_UNINDEXED) +
	       kq_mem_limit(sizeof(struct corr_gpu_rec), cfg->max_pending_gpu, 0) +
	       blocks * sizeof(struct idj_block);
}
