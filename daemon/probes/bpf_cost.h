/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each loaded BPF program cost: the kernel's run count and run time, kept while
 * kernel.bpf_stats_enabled is 1 (or a BPF_ENABLE_STATS fd is held). Read for the report.
 */
#ifndef XSPROF_DAEMON_PROBES_BPF_COST_H
#define XSPROF_DAEMON_PROBES_BPF_COST_H

#include <stdint.h>

struct bpf_object;

struct bpf_cost {
	const char *name; /* the program's name in the object */
	uint64_t runs;
	uint64_t run_ns;
};

/* Called for each loaded program of obj that ran; stops at the first non-zero return. */
typedef int (*bpf_cost_fn)(void *ctx, const struct bpf_cost *c);
int bpf_cost__for_each(const struct bpf_object *obj, bpf_cost_fn fn, void *ctx);

#endif
