/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The join every session makes at its end (one-shot run, service recording, window slice,
 * attachment slice): its CUDA launches (a launch store) and the GPU records received (a GPU
 * store), converted to the correlator's records, fed in time order to the chosen strategy,
 * and handed to the writers as a profile_data's launches, gpu and joins.
 */
#ifndef XSPROF_DAEMON_SESSION_GPU_JOIN_H
#define XSPROF_DAEMON_SESSION_GPU_JOIN_H

#include <stdbool.h>
#include <stdint.h>

#include "correlate/correlate.h"

/* The NVTX domain xsprof scopes (xsprof/scope.h) show under: --range-domain xsprof. */
#define GPU_JOIN_SCOPE_DOMAIN "xsprof"

struct gpu_store;
struct launch_store;
struct profile_data;
struct gpu_join;
struct correlator;

/* Which GPU records belong to the session: of the processes accept_pid takes (NULL: all),
 * ending at or after since_ns, or with by_arrival those that arrived after the record numbered
 * after_seq (gpu_store__last_seq: a lasting profile's slices take each record once, in the
 * slice it arrived in, however late). With until_ns (the session's end), the NVTX ranges still
 * open that started before it are ranges ending there (CORR_GPU_F_OPEN); without, they are
 * left out. */
struct pid_uids;

struct gpu_join_scope {
	bool (*accept_pid)(void *ctx, uint32_t pid);
	void *ctx;
	uint64_t since_ns;
	uint64_t until_ns;
	bool by_arrival;
	uint64_t after_seq;
	/* Each record's pid and sender's uid are noted here (NULL: not): a process that exited
	 * without samples is still its owner's. */
	struct pid_uids *uids;
};

struct gpu_join *gpu_join__new(void);
/* Frees what gpu_join__run pointed a profile_data at. */
void gpu_join__free(struct gpu_join *j);

/*
 * Convert the launches of ls (may be NULL; stack ids are STACK_NAMES_LAUNCH | stack index) and
 * gs's records in scope (gs and scope may be NULL), join them with the named strategy, and
 * point pd's launches, gpu and joins at the result (owned by j, valid until it is freed; GPU
 * names while gs keeps the records). Adds the strategy's counters to *ret_stats. 0 or -errno.
 */
int gpu_join__run(struct gpu_join *j, const struct launch_store *ls, const struct gpu_store *gs,
		  const struct gpu_join_scope *scope, const char *strategy, struct profile_data *pd,
		  struct correlate_stats *ret_stats);

/* Feeds cpu and gpu (each sorted by time: launch time, start) to c in time order, then flushes
 * it whole. Malformed records are skipped. 0 or -errno. */
int gpu_join__feed(struct correlator *c, const struct corr_cpu_rec *cpu, size_t nr_cpu,
		   const struct corr_gpu_rec *gpu, size_t nr_gpu);

/* a += b, counter by counter (the "held now" ones too). */
void correlate_stats__add(struct correlate_stats *a, const struct correlate_stats *b);

#endif
