/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to correlate/: what the strategies share. The record clock, counting and reporting
 * (corr_base), the (pid, correlation id) join that id, timestamp and stream all end in (idjoin),
 * and a small capped map for per-process and per-stream facts (idmap).
 */
#ifndef XSPROF_CORRELATE_STRATEGY_H
#define XSPROF_CORRELATE_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "correlate/kq.h"

extern const struct correlate_ops correlate_id_ops;
extern const struct correlate_ops correlate_timestamp_ops;
extern const struct correlate_ops correlate_stream_ops;
extern const struct correlate_ops correlate_auto_ops;

/*
 * The clock is the records' own: the latest CPU record time seen (BPF timestamps, which the
 * kernel makes and a profiled process cannot forge), moved on by flush(until). GPU timestamps
 * come from the profiled process, so they never move it.
 */
struct corr_base {
	struct correlate_config cfg;
	struct correlate_cb cb;
	struct correlate_stats st;
	uint64_t now;
};

int corr_base_init(struct corr_base *b, const struct correlate_config *cfg,
		   const struct correlate_cb *cb);

static inline uint64_t corr_horizon(const struct corr_base *b)
{
	return b->now > b->cfg.max_age_ns ? b->now - b->cfg.max_age_ns : 0;
}

static inline void corr_tick(struct corr_base *b, uint64_t t)
{
	if (t > b->now)
		b->now = t;
}

void corr_join(struct corr_base *b, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu);
void corr_drop_cpu(struct corr_base *b, const struct corr_cpu_rec *cpu, enum corr_why why);
void corr_drop_gpu(struct corr_base *b, const struct corr_gpu_rec *gpu, enum corr_why why);

int corr_check_cpu(const struct corr_cpu_rec *r);
int corr_check_gpu(const struct corr_gpu_rec *r);

/* May GPU record g be the work that an API call of kind api_kind asked for? */
bool corr_compatible(uint8_t api_kind, const struct corr_gpu_rec *g);

/* A launch that one GPU record does not use up (a graph runs many kernels under one id). */
static inline bool corr_keeps(const struct corr_cpu_rec *r)
{
	return r->api_kind == CORR_API_GRAPH || r->graph_exec;
}

static inline uint64_t corr_idkey(uint32_t pid, uint32_t corr)
{
	return (uint64_t)pid << 32 | corr;
}

/*
 * Held CPU records under (pid, correlation id), and GPU records waiting for one. CUPTI numbers
 * a process's API calls in order, so the CPU records are found through blocks of 16
 * consecutive ids: the records of one batch share a few cache lines of index instead of
 * touching one line each (the join is bound by cache misses).
 */
struct idjoin_cpu {
	struct corr_cpu_rec rec;
	uint32_t joins;
};

#define IDJ_BLOCK 16

struct idj_block {
	uint64_t key; /* (pid << 32 | corr / IDJ_BLOCK) + 1; 0: empty */
	uint32_t used;
	uint32_t idx[IDJ_BLOCK];
};

struct idjoin {
	struct corr_base *b;
	struct kq cpu; /* struct idjoin_cpu, found through blocks */
	/* Open addressing by hand, not base/hashmap: probed per record, entries inline. */
	struct idj_block *blocks;
	uint32_t block_mask, nblocks;
	struct kq gpu; /* struct corr_gpu_rec */
};

int idjoin_init(struct idjoin *j, struct corr_base *b);
void idjoin_fini(struct idjoin *j);
/*
 * rec stands for correlation id corr of rec->pid (joins: already made elsewhere). Joins the GPU
 * records waiting for it; keeps it while more may come. fresh: rec just arrived, so it is late
 * when older than the horizon (a record that waited elsewhere is not).
 */
void idjoin_cpu(struct idjoin *j, const struct corr_cpu_rec *rec, uint32_t corr, uint32_t joins,
		bool fresh);
/* 1 when joined to a held CPU record, else 0. */
int idjoin_gpu_try(struct idjoin *j, const struct corr_gpu_rec *rec);
/* Holds rec for a CPU record to come, or drops it as late. */
void idjoin_gpu_park(struct idjoin *j, const struct corr_gpu_rec *rec);
/* Gives up on what arrived before horizon. */
void idjoin_age(struct idjoin *j, uint64_t horizon, enum corr_why why);
size_t idjoin_mem(const struct idjoin *j);
/* For batches: bring in the index block, then the record, of a record to come. */
void idjoin_prefetch_block(const struct idjoin *j, uint32_t pid, uint32_t corr);
void idjoin_prefetch_entry(const struct idjoin *j, uint32_t pid, uint32_t corr);
size_t idjoin_mem_limit(const struct correlate_config *cfg);

/* Give up on the oldest entry of a full table: how strategies honour their caps. */
typedef void (*kq_evict_fn)(void *ctx, struct kq *q, uint32_t idx, enum corr_why why);
/* kq_alloc(), evicting the oldest entry when the table is full. */
int kq_alloc_evict(struct kq *q, uint32_t *ret_idx, kq_evict_fn evict, void *ctx);
/* Evicts entries whose arrival stamp is before horizon, oldest first; evict must remove. */
void kq_age(struct kq *q, uint64_t horizon, enum corr_why why, kq_evict_fn evict, void *ctx);

/* A capped map from a 128-bit key to a 64-bit value, stamped for purging. By hand, not
   base/hashmap: probed per record, sized once from the cap, purged in place by stamp. */
struct idmap_ent {
	uint64_t a, b;
	uint64_t stamp;
	uint64_t val;
	uint32_t used;
};

struct idmap {
	struct idmap_ent *e;
	uint32_t mask, n, cap;
};

int idmap_init(struct idmap *m, uint32_t cap);
void idmap_fini(struct idmap *m);
struct idmap_ent *idmap_get(const struct idmap *m, uint64_t a, uint64_t b);
/* The entry for (a, b), created with val 0 when new; NULL when the map is full. */
struct idmap_ent *idmap_put(struct idmap *m, uint64_t a, uint64_t b, bool *ret_new);
void idmap_del(struct idmap *m, struct idmap_ent *e);
/* Deletes entries stamped before horizon for which keep() (may be NULL) says false. */
void idmap_purge(struct idmap *m, uint64_t horizon, bool (*keep)(void *ctx, struct idmap_ent *e),
		 void *ctx);
size_t idmap_mem(uint32_t cap);

#endif
