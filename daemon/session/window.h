/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service's rolling window: named call trees, one per time slice, whose stacks all start
 * with a "uid:N" frame so a query can keep one user's processes. Bounded by a window length
 * and a memory cap; whatever falls out is counted.
 */
#ifndef XSPROF_DAEMON_SESSION_WINDOW_H
#define XSPROF_DAEMON_SESSION_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct calltree;
struct window;

/* Slices whose span together is at most this are kept as one (the service's slice time). */
#define WINDOW_MERGE_NS (10ull * 1000000000ull)

struct window_opts {
	unsigned int window_s;
	size_t cap_bytes;
};

struct window_stats {
	size_t slices;
	size_t bytes; /* estimate: nodes x bytes per node, see store.c */
	size_t cap_bytes;
	uint64_t samples;	       /* samples held now */
	uint64_t expired_slices;       /* fell out of the window */
	uint64_t merged_slices;	       /* cut short by a query and joined to the one before */
	uint64_t dropped_slices;       /* evicted early to stay under the cap */
	uint64_t dropped_samples;      /* samples in those */
	uint64_t oldest_ns, newest_ns; /* CLOCK_MONOTONIC span held (0 when empty) */
};

struct window *window__new(const struct window_opts *opts);
void window__free(struct window *s);
/* New bounds (reload); applied at once. */
void window__configure(struct window *s, const struct window_opts *opts);

/*
 * Take tree (now owned by the store) as the slice [start_ns, end_ns). Evicts the oldest slices
 * while over the cap; a slice bigger than the whole cap is dropped and counted.
 */
int window__add(struct window *s, uint64_t start_ns, uint64_t end_ns, struct calltree *tree);
/* Drop slices that ended before now_ns - window. */
void window__expire(struct window *s, uint64_t now_ns);

/*
 * Merge the slices that end after since_ns and start before until_ns (UINT64_MAX: no bound)
 * into out, without their "uid:N" frame; only uid's stacks unless all_uids. *ret_from_ns:
 * start of the oldest slice merged (0 if none).
 */
int window__query(const struct window *s, uint64_t since_ns, uint64_t until_ns, bool all_uids,
		  uid_t uid, struct calltree *out, uint64_t *ret_from_ns);

/* One slice as the timeline shows it: its span and the weight uid's stacks hold in it. */
typedef int (*window_slice_fn)(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t weight);

/*
 * For each slice that ends after since_ns, oldest first, fn with the weight of uid's stacks
 * (all of them when all_uids). Stops at fn's first non-zero return, which it returns.
 */
int window__for_each_slice(const struct window *s, uint64_t since_ns, bool all_uids, uid_t uid,
			   window_slice_fn fn, void *ctx);

void window__stats(const struct window *s, struct window_stats *ret);

#endif
