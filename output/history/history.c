// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "output/history/history.h"

/* The names the store keeps: changing one orphans every figure stored under it. */
static const char *const kind_names[HIST_KIND_COUNT] = {
	[HIST_FN_SELF] = "self",  [HIST_FN_TOTAL] = "total",
	[HIST_KERNEL] = "kernel", [HIST_KERNEL_STACK] = "kernel_stack",
	[HIST_RANGE] = "range",	  [HIST_GPU_IDLE] = "gpu_idle",
	[HIST_WALL] = "wall",	  [HIST_SAMPLES] = "samples",
};

const char *hist_kind__name(enum hist_kind k)
{
	return (unsigned)k < HIST_KIND_COUNT ? kind_names[k] : "?";
}

int hist_kind__of(const char *name)
{
	for (int k = 0; name && k < HIST_KIND_COUNT; k++)
		if (!strcmp(name, kind_names[k]))
			return k;
	return -1;
}

const char *hist_kind__unit(enum hist_kind k)
{
	return k == HIST_FN_SELF || k == HIST_FN_TOTAL || k == HIST_SAMPLES ? "samples" : "ns";
}

const char *hist_verdict__name(enum hist_verdict v)
{
	switch (v) {
	case HIST_SAME:
		return "SAME";
	case HIST_DIFFERENT:
		return "DIFFERENT";
	default:
		return "UNKNOWN";
	}
}

void hist_stats_opts__default(struct hist_stats_opts *o)
{
	*o = (struct hist_stats_opts){
		.min_effect = 0.05, .alpha = 0.05, .confidence = 0.95, .min_runs = 3};
}
