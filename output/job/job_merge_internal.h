/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The merge's own state, shared by its two files: job_merge_read.c reads each host's parts
 * into a host and the merged record arrays; job_merge.c aligns the hosts' clocks, keeps their
 * common span and builds the merged profile and report. Not for other callers (job_merge.h).
 */
#ifndef XSPROF_OUTPUT_JOB_MERGE_INTERNAL_H
#define XSPROF_OUTPUT_JOB_MERGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "correlate/correlate.h"
#include "daemon/base/job_filter.h"
#include "output/job/job_parts.h"
#include "output/job/job_report_internal.h"
#include "output/model/profile.h"

struct jm_stack {
	const char **frames;
	size_t n;
};

struct jm_host {
	char *name;
	char **strs; /* the parts' string table, owned */
	size_t nr_strs;
	struct keymap *threads; /* pid << 32 | tid -> index + 1 into tnames */
	char **tnames;
	size_t nr_tnames, cap_tnames;
	struct keymap *stacks; /* pid << 32 | id -> index + 1 into stacks */
	struct jm_stack *stack;
	size_t nr_stack;
	struct keymap *labels; /* pid -> its label set, owned (host.name added) */
	int64_t start, end, rt_offset;
	bool probed;
	struct job_clock_probe probe;
	int64_t offset; /* its time + offset = the job's clock */
	struct job_report_clock clock;
};

struct job_merge {
	struct job_filter job; /* the processes kept (job_merge__new's job; off: all) */
	struct jm_host *hosts;
	size_t nr_hosts, cap_hosts;
	size_t processes;
	struct corr_gpu_rec *gpu;
	size_t nr_gpu, cap_gpu;
	struct corr_cpu_rec *launches;
	size_t nr_launches, cap_launches;
	struct profile_join *joins;
	size_t nr_joins, cap_joins;
	struct profile_sample *samples;
	size_t nr_samples, cap_samples;
	struct profile_data pd;
	struct job_report *report;
	struct job_report_clock *clocks;
	size_t *flow_gpu; /* the collectives' GPU work, a meet's in rank order */
	struct profile_flow *flows;
	size_t nr_flows;
	uint64_t rows_dropped;	  /* past the row budgets (job_merge__rows_dropped) */
	int64_t span_lo, span_hi; /* the hosts' common span (INT64_MIN/MAX: all) */
	int64_t epoch;		  /* the wall time (first estimates) of the job clock's 0 */
};

static inline uint32_t merged_id(size_t host, uint32_t id)
{
	return (uint32_t)host << JOB_REPORT_PID_BITS | (id & JOB_REPORT_PID_MASK);
}

/* A host's strings, threads, stacks and labels let go (the host itself is the caller's). */
void jm_host__free(struct jm_host *h);

#endif
