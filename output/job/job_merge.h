/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A training job across hosts: each host's job parts (output/job/job_parts.h) read, put on one
 * clock and merged into one profile, from which come the job report (output/job/job_report.h),
 * and the straggler's samples against the median rank's (output/diff/diff.h). Writing is the
 * caller's: the merged Chrome trace (a process per host and rank, each collective linked
 * across ranks) from job_merge__profile(), the differential flamegraph from the straggler's.
 *
 * The clock. Each host's CLOCK_MONOTONIC starts at its own boot. A first estimate puts a host
 * on the fleet client's CLOCK_REALTIME by a round trip (the client asked the host's clock and
 * took the middle of the request: error half the round trip), or else by the host's own wall
 * clock (error not known). Then the collectives refine it: all ranks leave a collective
 * together (the last rank's arrival releases them), so the median difference of a host's
 * ranks' ends from the reference host's (that of the job's lowest rank) over every
 * collective both ran is the host's offset; its error is the 90th percentile of those
 * differences' distance from it, at least JOB_MERGE_EXIT_SKEW_NS (how far apart ranks may
 * leave one collective). A host without 3 collectives in common keeps its first estimate.
 */
#ifndef XSPROF_OUTPUT_JOB_MERGE_H
#define XSPROF_OUTPUT_JOB_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct calltree;
struct diff;
struct job_merge;
struct job_report;
struct profile_data;

/* Hosts merged at most: a pid's high bits say its host (JOB_REPORT_PID_BITS), below the
 * Chrome trace's GPU processes (CHROME_TRACE_GPU_PID_BASE, 0x7F000000 = 508 << 22). */
#define JOB_MERGE_MAX_HOSTS 500
/* How far apart ranks may leave one collective: the floor of a collectives estimate's error. */
#define JOB_MERGE_EXIT_SKEW_NS 5000
/* Collectives in common a host needs for its clock to come from them. */
#define JOB_MERGE_MIN_COLLECTIVES 3

/* Row budgets: rows of one host's parts kept at most (stacks and records), records of every
 * host (GPU work, launches, samples) kept at most; past them rows are counted
 * (job_merge__rows_dropped), not kept. A stack keeps its first JOB_MERGE_MAX_FRAMES frames. */
#define JOB_MERGE_MAX_HOST_ROWS 4000000u
#define JOB_MERGE_MAX_RECORDS	8000000u
#define JOB_MERGE_MAX_FRAMES	512

/* A round trip to a host: its CLOCK_MONOTONIC + offset_ns = the client's CLOCK_REALTIME. */
struct job_clock_probe {
	int64_t offset_ns;
	uint64_t error_ns; /* half the round trip */
};

/* job: keep only this job's processes (NULL: every job's). NULL with errno set (EINVAL: not a
 * job id, base/job_filter.h). */
struct job_merge *job_merge__new(const char *job);
void job_merge__free(struct job_merge *m);

/*
 * One host's parts (JSON text of len bytes, read without a document tree:
 * output/job/job_parts_read.h), under the name the fleet gives it, with its round
 * trip (NULL: none). 0; -EINVAL for parts that do not parse or are not job parts, with why;
 * -E2BIG past JOB_MERGE_MAX_HOSTS; -ENOMEM. A refused host leaves the merge as it was.
 */
int job_merge__add(struct job_merge *m, const char *name, const char *json, size_t len,
		   const struct job_clock_probe *probe, char *why, size_t why_size);

/* Rows left out at the budgets, in all. */
uint64_t job_merge__rows_dropped(const struct job_merge *m);

/* The hosts' clocks aligned and the report made (step: as job_report__build's). 0 or -ENOMEM. */
int job_merge__build(struct job_merge *m, const char *step);

/* After build: the merged profile and its report (the merge's; valid while it lives). */
const struct profile_data *job_merge__profile(const struct job_merge *m);
struct job_report *job_merge__report(const struct job_merge *m);
/* Hosts added, and the ranked processes they gave. */
size_t job_merge__hosts(const struct job_merge *m);
size_t job_merge__processes(const struct job_merge *m);

/*
 * The straggler's CPU samples against the median rank's (the first straggler finding's rank
 * and the rank most often median at its late collectives), compared by share: the median
 * rank's before, the straggler's after. The merged profile itself (job_merge__profile()) is
 * what a trace is written from.
 */
struct job_merge_straggler {
	struct diff *diff;
	int64_t rank, median_rank;
	size_t samples, median_samples;
	/* private: the trees the diff reads */
	struct calltree *trees[2];
};

/* -ENOENT when there is no straggler or either has no samples; 0 or -errno. Release *ret. */
int job_merge__straggler(const struct job_merge *m, struct job_merge_straggler *ret);
/* Accepts a zeroed one. */
void job_merge_straggler__release(struct job_merge_straggler *st);

#endif
